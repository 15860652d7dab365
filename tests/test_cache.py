"""The render cache keys on the code it runs, found from the imports, and returns typed values."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import pytest

from scripts.series.pages import cache, render
from scripts.tracefacts.facts.analysis import TraceFacts
from scripts.tracefacts.model.trace import load_trace
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
    before = cache.code_digest("scripts.series.pages.render", copy)
    for unrelated, line in (("series/notebooks/write.py", "# unrelated"), ("series/pages/sweeps.py", "# a page helper")):
        (copy / unrelated).write_text((copy / unrelated).read_text() + f"\n{line}\n")
    assert cache.code_digest("scripts.series.pages.render", copy) == before
    # intervals is not imported by render itself, only by what render imports
    (copy / "tracefacts/model/intervals.py").write_text((copy / "tracefacts/model/intervals.py").read_text() + "\n# changed\n")
    assert cache.code_digest("scripts.series.pages.render", copy) != before


def test_what_the_pages_cache_depends_on_includes_the_facts_and_the_sweeps():
    closure = set(cache.module_closure("scripts.series.pages.render"))
    assert {"scripts.tracefacts.facts.analysis", "scripts.tracefacts.facts.blocks", "scripts.tracefacts.model.trace", "scripts.tracefacts.model.intervals", "scripts.tracefacts.pictures.timeline.draw",
            "scripts.series.pages.plots", "scripts.series.runs.samples"} <= closure
    # the timeline's drawing is spread over modules: every one of them keys the pictures
    drawing = {path.stem for path in (ROOT / "scripts" / "tracefacts" / "pictures" / "timeline").glob("*.py")} - {"__init__", "memory_lane"}
    assert len(drawing) >= 6 and {f"scripts.tracefacts.pictures.timeline.{name}" for name in drawing} <= closure


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


def test_a_facts_box_is_the_same_whichever_checkout_filled_the_cache(monkeypatch):
    # Cached facts are keyed by the trace's bytes, not its path: those a build in another checkout
    # stored name that checkout's path. The box's note ids are drawn from the trace's name, so the
    # page must name it by its path in the repository, or two builds of one commit differ.
    from dataclasses import replace

    from scripts.series.pages.helpers import example

    run = example("01_matmul_add/64_bf16_cold_eager")
    here = str(run.facts())
    real = cache.cached

    def from_elsewhere(kind, compute, *inputs):
        value = real(kind, compute, *inputs)
        return replace(value, source="/elsewhere/checkout/" + value.source) if kind == "facts" else value

    monkeypatch.setattr(cache, "cached", from_elsewhere)
    assert run.trace_facts().source == run.example.trace_path.relative_to(ROOT).as_posix()
    assert 'aria-describedby="kt-' in here and str(run.facts()) == here
