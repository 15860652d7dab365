"""Shared fixtures: a clean copy of the repository and a strict build of it, made once per session."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

# mkdocs run in a subprocess that cannot import torch: the docs build must not need it.
BUILD_WITHOUT_TORCH = (
    "import sys; sys.modules['torch'] = None; "
    "from mkdocs.__main__ import cli; sys.argv = ['mkdocs'] + sys.argv[1:]; cli()"
)


def tracked_files(root: Path) -> list[str]:
    """What a clean clone holds: files git tracks, plus new ones not ignored (so work in
    progress is tested the way CI will see it once committed)."""
    out = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
        cwd=root, capture_output=True, check=True,
    ).stdout.decode()
    return [p for p in out.split("\0") if p and (root / p).is_file()]


def clean_copy(dest: Path) -> Path:
    """A copy of the tracked files, plus what `make` fetches into a fresh clone before building:
    the vendored Pyodide (linked, not copied: it is 13 MB and never changes)."""
    for rel in tracked_files(ROOT):
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / rel, target)
    from scripts.series.pages import pyodide as vendor_pyodide

    vendored = vendor_pyodide.vendored_dir(ROOT)
    if vendored.is_dir():
        link = vendor_pyodide.vendored_dir(dest)
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(vendored, target_is_directory=True)
    return dest


def fake_project(tmp_path: Path, monkeypatch, snippet: str) -> Path:
    """A temporary tree the catalog and the freeze read instead of the repository's: one snippet,
    `snippets/fake.py`, its traces under `traces/`, and an environment probe that needs no GPU."""
    from scripts.series.runs import catalog, freeze

    (tmp_path / "snippets").mkdir()
    (tmp_path / "snippets" / "fake.py").write_text(snippet)
    monkeypatch.setattr(catalog, "SNIPPETS", tmp_path / "snippets")
    for module in (catalog, freeze):
        monkeypatch.setattr(module, "ROOT", tmp_path)
        monkeypatch.setattr(module, "TRACES", tmp_path / "traces")
    monkeypatch.setattr(freeze, "probe_environment",
                        lambda python, packages=(), runner=None: {"torch": "test", "gpu": None})
    return tmp_path


def mkdocs_build(project: Path, *args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1")
    return subprocess.run(
        [sys.executable, "-c", BUILD_WITHOUT_TORCH, "build", "--strict", *args],
        cwd=project, capture_output=True, text=True, env=env, timeout=900,
    )


@pytest.fixture(scope="session")
def built_site(tmp_path_factory) -> Path:
    """A strict build of a clean copy of the repository; returns the site directory."""
    project = clean_copy(tmp_path_factory.mktemp("clone"))
    done = mkdocs_build(project)
    assert done.returncode == 0, f"strict build failed:\n{done.stdout[-3000:]}\n{done.stderr[-6000:]}"
    return project / "site"


def all_strings(obj):
    """Every string in a decoded JSON value, keys included (for leak checks)."""
    if isinstance(obj, str):
        yield obj
    elif isinstance(obj, dict):
        for key, value in obj.items():
            yield key
            yield from all_strings(value)
    elif isinstance(obj, list):
        for item in obj:
            yield from all_strings(item)
