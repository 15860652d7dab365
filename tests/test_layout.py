"""The layout is the design: the analyzer (scripts/tracefacts) never imports the series
(scripts/series), and inside the analyzer each stage imports only the stages before it, in the
order data flows: reading < model < facts < pictures < entry."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPTS = ROOT / "scripts"
STAGES = ("reading", "model", "facts", "pictures", "entry")


def module_name(path: Path, top: Path) -> str:
    """`tracefacts.facts.analysis` for top/tracefacts/facts/analysis.py (a package: its own name)."""
    parts = list(path.relative_to(top).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path, top: Path) -> list[tuple[int, str]]:
    """Every module a file imports (top level, inside functions, under TYPE_CHECKING alike), as
    absolute dotted names under `top`'s packages: relative imports resolved, `scripts.x` as `x`."""
    here = module_name(path, top).split(".")
    package = here if path.name == "__init__.py" else here[:-1]
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level > len(package):  # above the top package: `scripts.` in the checkout, nothing once installed
                base = ["<outside>"] + (node.module.split(".") if node.module else [])
            elif node.level:
                base = package[: len(package) - node.level + 1] + (node.module.split(".") if node.module else [])
            else:
                base = (node.module or "").split(".")
                if base[0] == "scripts":
                    base = base[1:]
            found += [(node.lineno, ".".join(base + [a.name])) for a in node.names]
            found.append((node.lineno, ".".join(base)))
        elif isinstance(node, ast.Import):
            for alias in node.names:
                parts = alias.name.split(".")
                found.append((node.lineno, ".".join(parts[1:] if parts[0] == "scripts" else parts)))
    return found


def violations(top: Path) -> list[str]:
    """What breaks the rule under `top` (a folder holding `tracefacts/` and `series/`)."""
    bad: dict[tuple[str, int], str] = {}  # one line per import statement
    for path in sorted((top / "tracefacts").rglob("*.py")):
        name = module_name(path, top).split(".")
        stage = name[1] if len(name) > 1 and name[1] in STAGES else None
        for line, target in imports_of(path, top):
            parts = target.split(".")
            where = f"{path.relative_to(top)}:{line} imports {target}"
            key = (str(path), line)
            if parts[0] == "series":
                bad.setdefault(key, f"{where} (the analyzer never imports the series)")
            elif parts[0] == "<outside>":
                bad.setdefault(key, f"{where} (a relative import above the analyzer's package)")
            elif parts[0] == "tracefacts" and stage and len(parts) > 1 and parts[1] in STAGES:
                if STAGES.index(parts[1]) > STAGES.index(stage):
                    bad.setdefault(key, f"{where} (a {stage} module imports the later stage {parts[1]})")
    return list(bad.values())


def test_the_analyzer_imports_no_series_and_each_stage_only_earlier_ones():
    assert violations(SCRIPTS) == []


def test_every_analyzer_module_sits_in_a_stage():
    loose = [p.name for p in (SCRIPTS / "tracefacts").glob("*.py") if p.name not in ("__init__.py", "__main__.py")]
    assert loose == []
    assert sorted(p.name for p in (SCRIPTS / "tracefacts").iterdir() if p.is_dir() and p.name != "__pycache__") \
        == sorted(STAGES)


@pytest.mark.parametrize("source, says", [
    ("from ...series.runs import catalog\n", "above the analyzer's package"),
    ("from scripts.series.pages.helpers import example\n", "never imports the series"),
    ("def f():\n    from ..entry.console import printable\n", "later stage entry"),
    ("from ..pictures import markup\n", "later stage pictures"),
    ("def f():\n    from ...tracefacts.reading import text\n", "above the analyzer's package"),
])
def test_a_planted_wrong_way_import_is_named(tmp_path, source, says):
    for stage in STAGES:
        (tmp_path / "tracefacts" / stage).mkdir(parents=True)
        (tmp_path / "tracefacts" / stage / "__init__.py").write_text("")
    (tmp_path / "tracefacts" / "__init__.py").write_text("")
    (tmp_path / "tracefacts" / "model" / "ok.py").write_text("from ..reading import text\nfrom . import units\n")
    (tmp_path / "tracefacts" / "model" / "bad.py").write_text(source)
    found = violations(tmp_path)
    assert len(found) == 1 and "model/bad.py" in found[0] and says in found[0], found


def test_every_package_says_what_it_holds():
    """Each package's __init__ opens with a docstring of its own (the README's table points to them)."""
    for init in sorted(SCRIPTS.rglob("__init__.py")):
        doc = ast.get_docstring(ast.parse(init.read_text(encoding="utf-8")))
        assert doc and len(doc.splitlines()[0]) > 20, init.relative_to(ROOT)
