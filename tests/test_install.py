"""Installed, not copied: `pip install` of the project gives the `tracefacts` command and package,
the analyzer alone (scripts/tracefacts/), standard library only, and nothing named `scripts`,
nor any of the series' machinery, in site-packages."""

from __future__ import annotations

import ast
import json
import shutil
import subprocess
import sys
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
TRACE = ROOT / "traces" / "01_matmul_add" / "64_bf16_warm_eager.json.gz"
# Loaded by mkdocs by file path, so they import the package absolutely; they are docs glue, never
# reached from the analyzer. scripts/analyze.py is the checkout's launcher of the analyzer's command.
DOCS_GLUE = ROOT / "scripts" / "series" / "mkdocs_glue"
LAUNCHER = ROOT / "scripts" / "analyze.py"


def test_package_modules_import_each_other_relatively():
    """An absolute `scripts.x` import works in this checkout and breaks once installed as tracefacts."""
    absolute = []
    for path in sorted((ROOT / "scripts").rglob("*.py")):
        if path.parent == DOCS_GLUE or path == LAUNCHER:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = ([node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level
                     else [a.name for a in node.names] if isinstance(node, ast.Import) else [])
            absolute += [f"{path.relative_to(ROOT)}:{node.lineno}" for n in names
                         if n == "scripts" or n.startswith("scripts.")]
    assert not absolute, f"absolute imports of the package: {absolute}"


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """A fresh virtual environment with the project installed from a wheel, and nothing else."""
    tmp = tmp_path_factory.mktemp("install")
    source = tmp / "source"  # setuptools writes build/ beside what it builds: not into the checkout
    shutil.copytree(ROOT / "scripts", source / "scripts",  # all of it: the build picks the analyzer
                    ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, source / name)
    wheels = tmp / "wheels"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps",
                    "--no-build-isolation", "-w", str(wheels), str(source)], check=True,
                   capture_output=True)
    env_dir = tmp / "venv"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    python = env_dir / "bin" / "python"
    subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--no-index",
                    *map(str, wheels.glob("*.whl"))], check=True, capture_output=True)
    return env_dir


def test_installed_command_prints_what_the_checkout_prints(installed, tmp_path):
    command = installed / "bin" / "tracefacts"
    got = subprocess.run([str(command), str(TRACE), "--json"], capture_output=True, text=True,
                         cwd=tmp_path)
    assert got.returncode == 0, got.stderr
    want = subprocess.run([sys.executable, str(ROOT / "scripts" / "analyze.py"), str(TRACE), "--json"],
                          capture_output=True, text=True, cwd=tmp_path, check=True)
    assert json.loads(got.stdout) == json.loads(want.stdout)
    usage = subprocess.run([str(command), "--help"], capture_output=True, text=True).stdout
    assert usage.startswith("usage: tracefacts ")


def test_installed_package_has_its_own_name_and_needs_only_the_standard_library(installed, tmp_path):
    python = installed / "bin" / "python"
    probe = (
        "import importlib.util, sys, json\n"
        "import tracefacts.entry.cli, tracefacts.entry.browser, tracefacts.pictures.timeline.draw\n"
        "import tracefacts.facts.diff, tracefacts.facts.ranks, tracefacts.facts.details\n"
        "third = sorted({m.split('.')[0] for m in sys.modules} - set(sys.stdlib_module_names)"
        " - {'tracefacts', '__main__', '__mp_main__', '_distutils_hack'})\n"  # setuptools' .pth hook in any venv; multiprocessing's alias of __main__
        "spec = {name: importlib.util.find_spec(name) is not None for name in ('scripts', 'series')}\n"
        "print(json.dumps({'third': third, **spec, 'at': tracefacts.__path__[0]}))\n"
    )
    out = subprocess.run([str(python), "-c", probe], capture_output=True, text=True, cwd=tmp_path,
                         check=True)
    found = json.loads(out.stdout)
    assert {k: found[k] for k in ("third", "scripts", "series")} == {"third": [], "scripts": False, "series": False}
    # Exactly the analyzer's modules are installed: no posts, pages, freeze or mkdocs glue.
    analyzer = ROOT / "scripts" / "tracefacts"
    want = sorted(p.relative_to(analyzer).as_posix() for p in analyzer.rglob("*.py"))
    got = sorted(p.relative_to(found["at"]).as_posix() for p in Path(found["at"]).rglob("*.py"))
    assert got == want


def test_installed_package_runs_as_a_module(installed, tmp_path):
    got = subprocess.run([str(installed / "bin" / "python"), "-m", "tracefacts", str(TRACE)],
                         capture_output=True, text=True, cwd=tmp_path)
    assert got.returncode == 0 and got.stdout.startswith("trace: "), got.stderr


def test_a_bad_file_gets_one_line_from_the_installed_command(installed, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"traceEvents": [')
    got = subprocess.run([str(installed / "bin" / "tracefacts"), str(bad)], capture_output=True,
                         text=True)
    assert got.returncode == 2
    assert len(got.stderr.strip().splitlines()) == 1 and "Traceback" not in got.stderr
