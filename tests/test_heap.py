"""scripts/tracefacts/model/columnar/heap.py: glibc's threshold for blocks in their own mappings fixed, unless the user set
glibc's own variable (a subprocess each: the setting lasts for the process)."""

from __future__ import annotations

import json
import platform
import subprocess
import sys

import pytest

from scripts.tracefacts.model.columnar.heap import THRESHOLD_ENV
from scripts.tracefacts.model.trace import load_trace

ASK = "from scripts.tracefacts.model.columnar.heap import map_large_blocks; print(map_large_blocks())"


def run(env: dict) -> str:
    return subprocess.run([sys.executable, "-c", ASK], env=env, capture_output=True, text=True,
                          check=True).stdout.strip()


@pytest.mark.skipif(platform.system() != "Linux" or platform.libc_ver()[0] != "glibc",
                    reason="glibc's malloc only")
def test_set_on_glibc_unless_the_user_set_it():
    from os import environ

    env = {k: v for k, v in environ.items() if k != THRESHOLD_ENV}
    assert run(env) == "True"
    assert run({**env, THRESHOLD_ENV: "65536"}) == "False"


def test_the_analyzer_maps_large_blocks_for_large_traces_only(monkeypatch, tmp_path, capsys):
    """The mapping costs system time (fresh pages) and pays only on traces of many millions of
    events: the CLI asks for it once a trace of LARGE_TRACE_EVENTS or more is read, not before."""
    from scripts.tracefacts.entry import cli as analyze
    from tests.fixtures.handmade import two_steps

    path = tmp_path / "t.json"
    path.write_text(json.dumps(two_steps()))
    asked = []
    monkeypatch.setattr(analyze, "map_large_blocks", lambda: asked.append(True))
    assert analyze.main([str(path), "--json"]) == 0
    assert asked == []
    count = load_trace(path).event_count
    monkeypatch.setattr(analyze, "LARGE_TRACE_EVENTS", count)
    assert analyze.main([str(path), "--json"]) == 0
    assert asked == [True]
    monkeypatch.setattr(analyze, "LARGE_TRACE_EVENTS", count + 1)
    assert analyze.main([str(path), "--json"]) == 0
    assert asked == [True]
    capsys.readouterr()
