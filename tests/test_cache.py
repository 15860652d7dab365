"""The render cache keys on the code it runs, found from the imports, and returns typed values."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import pytest

from scripts import cache, render
from scripts.analysis import TraceFacts
from scripts.trace import load_trace
from tests.conftest import ROOT
from tests.fixtures.handmade import two_steps


def package(tmp_path: Path, files: dict[str, str]) -> Path:
    root = tmp_path / "scripts"
    for name, source in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(source)
    return root


def test_closure_follows_imports_anywhere_in_a_module(tmp_path):
    root = package(tmp_path, {
        "__init__.py": "",
        "a.py": "def f():\n    from scripts.b import g\n    return g()\n",  # a lazy import
        "b.py": "from scripts import c\nimport json\n",
        "c.py": "from .sub import d\n",  # relative
        "sub/__init__.py": "",
        "sub/d.py": "from . import e\n",
        "sub/e.py": "",
        "unrelated.py": "",
    })
    found = cache.module_closure("scripts.a", root)
    assert set(found) == {"scripts", "scripts.a", "scripts.b", "scripts.c", "scripts.sub", "scripts.sub.d",
                          "scripts.sub.e"}


def test_editing_a_dependency_changes_the_key_and_editing_anything_else_does_not(tmp_path):
    copy = tmp_path / "scripts"
    shutil.copytree(ROOT / "scripts", copy, ignore=shutil.ignore_patterns("__pycache__"))
    before = cache.code_digest("scripts.render", copy)
    (copy / "notebooks.py").write_text((copy / "notebooks.py").read_text() + "\n# unrelated\n")
    (copy / "pages_sweeps.py").write_text((copy / "pages_sweeps.py").read_text() + "\n# a page helper\n")
    assert cache.code_digest("scripts.render", copy) == before
    # intervals is not imported by render itself, only by what render imports
    (copy / "intervals.py").write_text((copy / "intervals.py").read_text() + "\n# changed\n")
    assert cache.code_digest("scripts.render", copy) != before


def test_what_the_pages_cache_depends_on_includes_the_facts_and_the_sweeps():
    closure = set(cache.module_closure("scripts.render"))
    assert {"scripts.analysis", "scripts.blocks", "scripts.trace", "scripts.intervals", "scripts.timeline",
            "scripts.plots", "scripts.samples"} <= closure
    # the timeline's drawing is spread over modules: every one of them keys the pictures
    drawing = {path.stem for path in (ROOT / "scripts").glob("timeline_*.py")}
    assert len(drawing) >= 6 and {f"scripts.{name}" for name in drawing} <= closure


def test_only_module_level_functions_can_be_cached():
    def local(trace):
        return trace

    with pytest.raises(ValueError, match="module-level"):
        cache.key_of("x", local, ())


@pytest.fixture
def trace_file(tmp_path, monkeypatch):
    monkeypatch.setattr(cache, "CACHE_DIR", tmp_path / "cache")
    path = tmp_path / "t.json.gz"
    path.write_bytes(gzip.compress(json.dumps(two_steps()).encode()))
    return path


def test_cached_facts_come_back_typed_and_are_computed_once_per_content(trace_file):
    loads = []

    def load():
        loads.append(1)
        return load_trace(trace_file)

    first = cache.cached("facts", render.trace_facts, cache.FileInput(trace_file, load), None)
    again = cache.cached("facts", render.trace_facts, cache.FileInput(trace_file, load), None)
    assert isinstance(again, TraceFacts) and again == first and len(loads) == 1
    data = two_steps()
    data["traceEvents"] = data["traceEvents"][:-2]
    trace_file.write_bytes(gzip.compress(json.dumps(data).encode()))
    changed = cache.cached("facts", render.trace_facts, cache.FileInput(trace_file, load), None)
    assert len(loads) == 2 and changed != first


def test_a_key_covers_the_code_digest_of_the_computing_module(trace_file, monkeypatch):
    source = cache.FileInput(trace_file, lambda: load_trace(trace_file))
    key = cache.key_of("facts", render.trace_facts, (source, None))
    real = cache.code_digest
    monkeypatch.setattr(cache, "code_digest", lambda module: real(module) + "edited")
    assert cache.key_of("facts", render.trace_facts, (source, None)) != key
