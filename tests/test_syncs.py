"""Host syncs that drain the GPU's queue (scripts/tracefacts/facts/syncs.py): worked out by hand on a
tiny trace, checked on the frozen runs against their raw events, and in analyze.py's output."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from scripts.tracefacts.entry import cli as analyze
from scripts.tracefacts.facts.analysis import COLUMN_KINDS
from scripts.tracefacts.facts.syncs import RETURN_SLACK_US, sync_facts
from scripts.tracefacts.model.trace import Window, build_trace, load_trace
from tests.fixtures.handmade import PAGEABLE_COPY, host_syncs, training_steps, two_steps
from tests.fixtures.synth import synth_trace, write_trace

ROOT = Path(__file__).resolve().parents[1]
# Frozen runs with drains: a transformers decode (its .item() copies), the sweep's timing syncs.
FROZEN = [ROOT / "traces" / "05_llm_inference" / "decode_b1_p512_dynamic_eager.json.gz",
          ROOT / "traces" / "01_matmul_add_sweep" / "sweep_bf16_16-8192.json.gz"]


def test_hand_made_syncs():
    found = sync_facts(build_trace(host_syncs()))
    assert (found.calls, found.drains, found.blocked_us, found.waited_us, found.gpu_idle_after_us) == \
        (6, 2, 97.0, 55.0, 50.0)
    assert found.by_name == {"cudaDeviceSynchronize": 3, "cudaStreamSynchronize": 2, "cudaMemcpyAsync": 1}
    copy, device = found.drained
    assert (copy.name, copy.ts_us, copy.waited_us, copy.gpu_idle_after_us, copy.waited_for, copy.step,
            copy.annotation) == ("cudaMemcpyAsync", 6.0, 45.0, 35.0, PAGEABLE_COPY, "ProfilerStep#1", "log loss")
    assert (device.name, device.waited_us, device.gpu_idle_after_us, device.step, device.annotation) == \
        ("cudaDeviceSynchronize", 10.0, 15.0, "ProfilerStep#2", None)


def test_a_window_takes_the_calls_that_start_in_it():
    trace = build_trace(host_syncs())
    step2 = sync_facts(trace, Window(100.0, 200.0, "ProfilerStep#2"))
    assert (step2.label, step2.calls, step2.drains, step2.gpu_idle_after_us) == ("ProfilerStep#2", 3, 1, 15.0)
    assert sync_facts(trace, Window(60.0, 100.0, "quiet")) is None  # a sync, but no drain


def test_no_drain_no_section():
    assert sync_facts(build_trace(two_steps())) is None  # its sync finds the GPU done
    assert sync_facts(build_trace(training_steps())) is None  # no sync at all
    # A sync at the end of every step, but nothing queued behind the one after it: the GPU
    # idles after each, waiting for the host; the last drains nothing anything waits for.
    found = sync_facts(build_trace(synth_trace(steps=3, kernel_us=(40.0, 60.0))))
    assert found is not None and found.drains == 2 and found.calls == 3


def test_a_copy_to_pinned_memory_is_not_a_host_sync():
    data = host_syncs()
    for event in data["traceEvents"]:
        if event["name"] == PAGEABLE_COPY:
            event["name"] = "Memcpy DtoH (Device -> Pinned)"
    found = sync_facts(build_trace(data))
    assert "cudaMemcpyAsync" not in found.by_name and found.calls == 5 and found.drains == 1


@pytest.mark.parametrize("path", [p for p in FROZEN if p.exists()], ids=lambda p: p.name.split(".")[0])
def test_each_drain_is_followed_by_idle_gpu_in_the_raw_events(path):
    found = sync_facts(load_trace(path, skip_kinds=COLUMN_KINDS))
    assert found is not None and found.drains >= 1
    assert found == sync_facts(load_trace(path))  # the one pass and a full load agree
    events = json.loads(gzip.decompress(path.read_bytes()))["traceEvents"]
    base = min(e["ts"] for e in events if e.get("ph") == "X")
    gpu = sorted((e["ts"] - base, e["ts"] - base + e.get("dur", 0)) for e in events
                 if e.get("ph") == "X" and e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset"))
    for drain in found.drained:
        end = drain.ts_us + drain.dur_us
        # Nothing ran on the GPU from the call's return (give or take the slack) for the idle
        # time said, and something started right after it.
        busy_after = [(s, e) for s, e in gpu if e > end + RETURN_SLACK_US + 1e-3 and s < end]
        assert busy_after == []
        next_start = min(s for s, _ in gpu if s >= end - 1e-3)
        assert next_start - end <= drain.gpu_idle_after_us + 1e-3
        assert 0 < drain.waited_us <= drain.dur_us + 1e-6


def cli(capsys, *args) -> str:
    assert analyze.main([str(a) for a in args]) == 0
    return capsys.readouterr().out


def test_cli_names_a_drain(capsys, tmp_path):
    path = write_trace(host_syncs(), tmp_path / "syncs.json")
    text = cli(capsys, path)
    assert "host syncs (calls that wait for the GPU to finish), in whole trace: 6 " in text
    assert "  2 drained the GPU's queue: the GPU then idled 50 us until the host's next work reached it" in text
    assert "cudaMemcpyAsync in ProfilerStep#1; log loss, waiting for Memcpy DtoH (Device -> Pageable)" in text
    out = json.loads(cli(capsys, path, "--json"))
    assert out["host_syncs"]["drains"] == 2 and out["host_syncs"]["drained"][0]["gpu_idle_after_us"] == 35.0
    assert "host_syncs" not in json.loads(cli(capsys, write_trace(two_steps(), tmp_path / "two.json"), "--json"))


def test_annotation_names_are_escaped(capsys, tmp_path):
    data = host_syncs()
    for event in data["traceEvents"]:
        if event["name"] == "log loss":
            event["name"] = "log\x1b]0;owned\x07 loss"
    text = cli(capsys, write_trace(data, tmp_path / "evil.json"))
    assert "log\\x1b]0;owned\\x07 loss" in text and "\x1b" not in text
