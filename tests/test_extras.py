"""Extra artifacts beside a run's trace and table (scripts/catalog.EXTRAS, scripts/series/runs/extras.py): the
memory timeline and the CUDA allocator's snapshot are sanitized like a trace, frozen and sealed like
one, and a change to either is noticed. The snapshot is read without running anything in it, and
turns back into the pickle PyTorch's memory viewer takes."""

from __future__ import annotations

import gzip
import json
import pickle
import sys
import textwrap
from pathlib import Path

import pytest

from scripts.series.runs import catalog, freeze
from scripts.series.runs.extras import ExtraError, plain_unpickle, read_extra, sanitized, viewer_pickle
from scripts.series.runs.sanitize import TRACE_NUMBER_KEYS, Scrubber, sanitize_trace
from tests.conftest import all_strings, fake_project

RUN_DIR = "/tmp/freeze-run42/out"
USER, HOST = "alice", "gpu-node-17"
SITE = "/usr/lib/python3.12/site-packages"


def fake_snapshot(run_dir: str = RUN_DIR) -> dict:
    """The shape of torch.cuda.memory._snapshot(): segments with blocks, a trace per device, every
    allocation with its Python frames; machine details planted where a real one has strings."""
    frames = [
        {"filename": f"{SITE}/torch/nn/modules/module.py", "line": 1751, "name": "_call_impl"},
        {"filename": f"/home/{USER}/project/train.py", "line": 12, "name": "train_step"},
        {"filename": f"{run_dir}/snippets/06_memory.py", "line": 40, "name": "forward"},
        {"filename": "<frozen runpy>", "line": 88, "name": "_run_code"},
    ]
    return {
        "segments": [{"device": 0, "address": 139_637_976_727_552, "total_size": 2_097_152, "stream": 0,
                      "segment_type": "small", "allocated_size": 512, "active_size": 512,
                      "blocks": [{"addr": 139_637_976_727_552, "size": 512, "requested_size": 400,
                                  "state": "active_allocated", "frames": frames}]}],
        "device_traces": [[
            {"action": "alloc", "addr": 139_637_976_727_552, "size": 512, "stream": 0,
             "time_us": 1_790_000_000_000_000, "frames": frames},
            {"action": "free_completed", "addr": 139_637_976_727_552, "size": 512, "stream": 0,
             "time_us": 1_790_000_000_000_100, "frames": frames},
        ]],
        "allocator_settings": {"PYTORCH_CUDA_ALLOC_CONF": f"note=/home/{USER}/alloc.conf", "host": HOST},
    }


def scrubber(run_dir: str = RUN_DIR) -> Scrubber:
    return Scrubber(((run_dir, ""), (SITE, "")), hosts=(HOST,), users=(USER,))


def test_a_snapshot_loses_every_planted_path_and_name_and_keeps_its_addresses_and_frames():
    clean = sanitized("snapshot", "x.snapshot.pickle", pickle.dumps(fake_snapshot()), scrubber())
    text = "\n".join(all_strings(clean))
    for planted in (USER, HOST, "/home", "/tmp", "/usr", "site-packages"):
        assert planted not in text, planted
    frames = clean["device_traces"][0][0]["frames"]
    assert [f["filename"] for f in frames] == ["torch/nn/modules/module.py", "<path>", "snippets/06_memory.py",
                                              "<frozen runpy>"]
    assert [f["line"] for f in frames] == [1751, 12, 40, 88] and frames[0]["name"] == "_call_impl"
    # The viewer pairs allocations and frees by addr and draws segments at their address: kept.
    assert clean["device_traces"][0][0]["addr"] == clean["segments"][0]["address"] == 139_637_976_727_552
    assert "host" not in clean["allocator_settings"]


def test_a_machine_key_holding_a_string_is_dropped_even_among_the_snapshots_number_keys():
    snapshot = fake_snapshot()
    snapshot["device_traces"][0][0]["addr"] = f"{HOST}:0x7f00"
    clean = sanitized("snapshot", "x.snapshot.pickle", pickle.dumps(snapshot), scrubber())
    assert "addr" not in clean["device_traces"][0][0] and clean["device_traces"][0][1]["addr"] == 139_637_976_727_552


def test_a_memory_event_keeps_its_address_and_loses_a_string_one():
    events = [{"ph": "i", "name": "[memory]", "args": {"Addr": 94713735206976, "Bytes": 256}},
              {"ph": "i", "name": "[memory]", "args": {"Addr": f"{HOST}:1", "Bytes": 256}}]
    clean = sanitize_trace({"traceEvents": events}, "t.json", scrubber())
    assert [e["args"] for e in clean["traceEvents"]] == [events[0]["args"], {"Bytes": 256}]
    assert scrubber().leaks(clean, TRACE_NUMBER_KEYS) == [] and scrubber().leaks(clean)  # a key, by default


def test_the_memory_summary_is_sanitized_as_json():
    summary = {"device": "cuda", "timeline": {"device": "cuda:0", "bytes": {"parameter": [1, 2]}},
               "note": f"/home/{USER}/x on {HOST}"}
    clean = sanitized("memory", "x.memory.json", json.dumps(summary).encode(), scrubber())
    assert clean["timeline"] == summary["timeline"] and clean["note"] == "<path> on <host>"


class Exploit:
    def __reduce__(self):
        return (print, ("ran",))


@pytest.mark.parametrize("data, problem", [
    (pickle.dumps(Exploit()), "names builtins.print"),
    (pickle.dumps(Path("/x")), "names pathlib"),
    (b"not a pickle", "is not a pickle of plain data"),
    (pickle.dumps({"frames": [b"\x00"]}), "holds bytes"),
])
def test_a_snapshot_that_is_not_plain_data_is_refused_without_running_it(data, problem, capsys):
    with pytest.raises(ExtraError) as raised:
        sanitized("snapshot", "x.snapshot.pickle", data, scrubber())
    assert str(raised.value).startswith("x.snapshot.pickle ") and problem in str(raised.value)
    assert "\n" not in str(raised.value) and "ran" not in capsys.readouterr().out


def test_the_viewer_pickle_is_the_snapshot_and_shares_its_repeated_frames():
    snapshot = fake_snapshot()
    snapshot["device_traces"][0] *= 200
    snapshot = json.loads(json.dumps(snapshot))  # as read back from traces/: no object shared
    assert plain_unpickle(viewer_pickle(snapshot)) == snapshot
    assert len(viewer_pickle(snapshot)) * 5 < len(pickle.dumps(snapshot, protocol=4))


# --- freezing -------------------------------------------------------------------------------

FAKE_SNIPPET = textwrap.dedent('''
    import argparse, json, pathlib, pickle
    parser = argparse.ArgumentParser()
    parser.add_argument("--tag"); parser.add_argument("--no_snapshot", action="store_true")
    parser.add_argument("--trace_dir", type=pathlib.Path)
    args = parser.parse_args()
    out = args.trace_dir
    out.mkdir(parents=True, exist_ok=True)
    trace = {"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": 1, "dur": 2,
                              "pid": 1, "tid": 1, "args": {}}]}
    (out / (args.tag + ".json")).write_text(json.dumps(trace))
    (out / (args.tag + ".txt")).write_text("table\\n")
    (out / (args.tag + ".memory.json")).write_text(json.dumps({"where": str(out / "timeline.json")}))
    if not args.no_snapshot:
        frames = [{"filename": str(out / "snippets" / "06_memory.py"), "line": 1, "name": "main"}]
        snapshot = {"segments": [], "device_traces": [[{"action": "alloc", "addr": 7, "size": 512,
                                                        "frames": frames}]]}
        (out / (args.tag + ".snapshot.pickle")).write_bytes(pickle.dumps(snapshot))
''')


@pytest.fixture
def sandbox(tmp_path, monkeypatch):
    """A catalog with a fake memory snippet in a temporary tree."""
    fake_project(tmp_path, monkeypatch, FAKE_SNIPPET)
    return tmp_path


def files(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def example(*args: str, extras=("memory", "snapshot")) -> catalog.Example:
    return catalog.Example("fake", "run0", ("--tag", "run0", *args), extras=extras)


def test_extras_are_frozen_sanitized_sealed_and_reproducible(sandbox):
    made = example()
    assert freeze.refresh([made], sys.executable, log=lambda *_: None, isolated=True) == 0
    folder = sandbox / "traces" / "fake"
    first = files(folder)
    assert sorted(first) == ["run0.json.gz", "run0.memory.json.gz", "run0.meta.json", "run0.snapshot.json.gz",
                             "run0.txt"]
    meta = freeze.read_meta(made)
    assert set(meta.outputs) == set(first) - {"run0.meta.json"}
    assert read_extra(made.extra_paths["memory"]) == {"where": "timeline.json"}  # the run's own directory
    frame = read_extra(made.extra_paths["snapshot"])["device_traces"][0][0]["frames"][0]
    assert frame["filename"] == "snippets/06_memory.py"
    assert freeze.status(made).ok
    freeze.refresh([made], sys.executable, log=lambda *_: None, isolated=True)
    assert {k: v for k, v in files(folder).items() if k != "run0.meta.json"} == \
        {k: v for k, v in first.items() if k != "run0.meta.json"}


def test_a_changed_or_missing_extra_makes_the_run_stale(sandbox):
    made = example()
    freeze.refresh([made], sys.executable, log=lambda *_: None, isolated=True)
    snapshot = made.extra_paths["snapshot"]
    data = read_extra(snapshot)
    data["device_traces"][0][0]["size"] = 1024
    snapshot.write_bytes(gzip.compress(json.dumps(data).encode()))
    state = freeze.status(made)
    assert state.state == "stale" and state.reason == "traces/fake/run0.snapshot.json.gz was modified after the run"
    snapshot.unlink()
    assert freeze.status(made).state == "missing"


def test_an_extra_the_catalog_asks_for_after_the_run_makes_it_stale(sandbox):
    freeze.refresh([example(extras=("memory",))], sys.executable, log=lambda *_: None, isolated=True)
    assert freeze.status(example(extras=("memory",))).ok
    state = freeze.status(example())
    assert state.state == "stale" and "run0.snapshot.json.gz" in state.reason


def test_an_extra_the_snippet_did_not_write_fails_the_refresh_and_changes_nothing(sandbox):
    freeze.refresh([example()], sys.executable, log=lambda *_: None, isolated=True)
    before = files(sandbox / "traces" / "fake")
    messages = []
    assert freeze.refresh([example("--no_snapshot")], sys.executable, log=messages.append, isolated=True) == 1
    assert "expected run0.snapshot.pickle beside the trace" in "\n".join(messages)
    assert files(sandbox / "traces" / "fake") == before


def test_an_extra_the_sanitizer_cannot_clear_fails_the_refresh(sandbox, monkeypatch):
    monkeypatch.setattr(freeze, "sanitized", lambda kind, name, data, scrubber: (_ for _ in ()).throw(
        ExtraError(f"the sanitizer left a machine path or name in {name}: '/fsx/{USER}/x'")))
    messages = []
    assert freeze.refresh([example()], sys.executable, log=messages.append, isolated=True) == 1
    assert "left a machine path or name in run0.memory.json" in "\n".join(messages)
    assert not (sandbox / "traces" / "fake").exists()
