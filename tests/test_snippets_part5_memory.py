"""Part 5's memory snippet runs on the CPU at a small size and writes what it promises: a trace with
the profiler's memory events, shapes and stacks, the table, and the memory timeline whose categories
hold the bytes the model's own tensors have. The allocator's record is CUDA-only: on the CPU the
snippet says so and writes no snapshot. On a GPU (`make test-gpu`) the snapshot is checked too,
through the refresh's sanitizer and into the pickle PyTorch's memory viewer takes.

Both variants run in one subprocess (tests/snippet_runs.py): torch's import is paid once.
"""

from __future__ import annotations

import importlib.util
import json
import pickle
import subprocess
import sys

import pytest

from scripts.series.runs import catalog, freeze
from scripts.series.runs.extras import sanitized, viewer_pickle
from scripts.series.runs.sanitize import TRACE_NUMBER_KEYS, Scrubber, sanitize_trace
from scripts.tracefacts.model.trace import load_trace
from tests.conftest import ROOT
from tests.snippet_runs import run_on_cpu

torch = pytest.importorskip("torch")

SNIPPET = "06_memory"
SMALL = ("--layers", "2", "--d_model", "32", "--heads", "4", "--seq", "16", "--batch", "2", "--steps", "2")
STEMS = {variant: f"train_b2_s16_l2_d32_fp32_{variant}" for variant in ("baseline", "checkpoint")}
CASES = {variant: (SNIPPET, ("--variant", variant, *SMALL), stem) for variant, stem in STEMS.items()}
CATEGORIES = {"parameter", "optimizer_state", "input", "temporary", "activation", "gradient", "autograd_detail",
              "unknown"}
needs_gpu = pytest.mark.skipif(not freeze.gpu_available(), reason="needs a CUDA GPU")


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    return run_on_cpu(CASES, tmp_path_factory.mktemp("cpu_runs_part5_memory"), timeout=300)


def load_snippet():
    """The snippet as a module (its file name starts with a digit, so no plain import)."""
    spec = importlib.util.spec_from_file_location("snippet_06_memory", ROOT / "snippets" / f"{SNIPPET}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def memory_of(folder, stem):
    return json.loads((folder / f"{stem}.memory.json").read_text())


def test_every_memory_example_is_named_as_the_catalog_says():
    snippet = load_snippet()
    examples = [e for e in catalog.EXAMPLES if e.snippet == SNIPPET]
    assert {e.args[e.args.index("--variant") + 1] for e in examples} == {"baseline", "checkpoint"}
    for example in examples:
        assert snippet.output_stem(snippet.parse_args(list(example.args))) == example.tag
        assert set(example.extras) == {"memory", "snapshot"} and example.repeats > 1


@pytest.mark.parametrize("variant", sorted(STEMS))
def test_the_snippet_writes_a_trace_with_memory_shapes_and_stacks_and_no_snapshot_on_the_cpu(runs, variant):
    result, stem = runs[variant], STEMS[variant]
    assert not result["error"], result["error"]
    folder = result["dir"]
    assert sorted(p.name for p in folder.iterdir()) == sorted(f"{stem}{suffix}" for suffix in
                                                              (".json", ".txt", ".memory.json"))
    assert "CUDA-only" in result["stdout"]
    assert result["stdout"].rstrip().endswith(f"wrote {folder / stem}.json and .txt")

    events = json.loads((folder / f"{stem}.json").read_text())["traceEvents"]
    assert any(e.get("name") == "[memory]" for e in events)  # profile_memory
    assert any(e.get("cat") == "python_function" for e in events)  # with_stack
    assert any("Input Dims" in e.get("args", {}) for e in events if e.get("cat") == "cpu_op")  # record_shapes
    trace = load_trace(folder / f"{stem}.json")
    assert len(trace.steps) == 2
    assert {"forward", "backward", "optimizer"} <= {e.name for e in trace.events}
    assert "Self CPU Mem" in (folder / f"{stem}.txt").read_text()


@pytest.mark.parametrize("variant", sorted(STEMS))
def test_the_timeline_categories_hold_the_bytes_of_the_model_tensors(runs, variant):
    memory = memory_of(runs[variant]["dir"], STEMS[variant])
    assert memory["device"] == "cpu" and memory["variant"] == variant and not memory["allocator_history"]
    timeline = memory["timeline"]
    assert set(timeline["bytes"]) == CATEGORIES and timeline["device"] == "cpu"
    times = timeline["times_us"]
    assert times == sorted(times) and all(len(series) == len(times) for series in timeline["bytes"].values())
    assert timeline["trace_base_us"] is not None  # the trace's clock, to place the timeline on it
    # Between steps (where the timeline starts) the parameters and AdamW's two moments are live, the
    # gradients not (zero_grad(set_to_none=True)); during a step every parameter gets one gradient.
    # (The profiler's categories are inferred: a few transient tensors of the optimizer's step come
    # out as parameters, so the parameters' series is checked where it starts, not at its maximum.)
    model, series = memory["model"], timeline["bytes"]
    assert series["parameter"][0] == series["parameter"][-1] == model["parameter_bytes"]
    assert series["optimizer_state"][0] == model["optimizer_state_bytes"] >= 2 * model["parameter_bytes"]
    assert series["gradient"][0] == 0 and max(series["gradient"]) == model["gradient_bytes"]
    assert max(series["activation"]) > 0
    assert [s["phase"] for s in memory["steps"]] == ["untimed"] * 2 + ["wait", "warmup", "recorded", "recorded"]


def test_the_refresh_sanitizer_passes_the_cpu_outputs_and_keeps_the_memory_events_addresses(runs):
    folder, stem = runs["baseline"]["dir"], STEMS["baseline"]
    scrubber = Scrubber.for_this_machine(folder)
    trace = sanitize_trace(json.loads((folder / f"{stem}.json").read_text()), f"{stem}.json", scrubber)
    assert scrubber.leaks(trace, TRACE_NUMBER_KEYS) == []
    memory_events = [e for e in trace["traceEvents"] if e.get("name") == "[memory]"]
    assert memory_events and all(isinstance(e["args"]["Addr"], int) for e in memory_events)
    written = folder / f"{stem}.memory.json"
    assert sanitized("memory", written.name, written.read_bytes(), scrubber) == json.loads(written.read_text())


def test_checkpointing_keeps_fewer_activations(runs):
    baseline, checkpointed = (memory_of(runs[v]["dir"], STEMS[v]) for v in ("baseline", "checkpoint"))
    assert baseline["model"] == checkpointed["model"]
    most = {v: max(m["timeline"]["bytes"]["activation"]) for v, m in (("baseline", baseline), ("checkpoint", checkpointed))}
    assert most["checkpoint"] < most["baseline"]


@pytest.mark.gpu
@needs_gpu
def test_on_the_gpu_the_snapshot_is_written_sanitized_and_opens_as_a_viewer_pickle(tmp_path):
    """Activations dominate at this size, so checkpointing lowers the allocator's peak too."""
    peaks = {}
    for variant in ("baseline", "checkpoint"):
        done = subprocess.run(
            [sys.executable, str(ROOT / "snippets" / f"{SNIPPET}.py"), "--trace_dir", str(tmp_path), "--variant", variant,
             "--layers", "4", "--d_model", "256", "--seq", "512", "--batch", "8", "--steps", "1"],
            capture_output=True, text=True, timeout=600,
        )
        assert done.returncode == 0, done.stderr[-2000:]
        stem = f"train_b8_s512_l4_d256_fp32_{variant}"
        memory = memory_of(tmp_path, stem)
        assert memory["allocator_history"] and memory["timeline"]["device"].startswith("cuda:")
        steps = memory["steps"]
        assert [s["phase"] for s in steps] == ["history"] * 2 + ["wait", "warmup", "recorded"]
        assert all(s["max_reserved_bytes"] >= s["max_allocated_bytes"] > 0 for s in steps)
        peaks[variant] = steps[-1]["max_allocated_bytes"]

        written = tmp_path / f"{stem}.snapshot.pickle"
        snapshot = sanitized("snapshot", written.name, written.read_bytes(), Scrubber.for_this_machine(tmp_path))
        assert snapshot["segments"] and any(snapshot["device_traces"])
        entries = [e for trace in snapshot["device_traces"] for e in trace]
        assert {"alloc", "free_completed"} <= {e["action"] for e in entries}
        assert all(isinstance(e["addr"], int) for e in entries if e["action"] == "alloc")
        frames = {f["filename"] for e in entries for f in e.get("frames", [])}
        assert f"snippets/{SNIPPET}.py" in frames  # relative to the repository, as committed
        assert pickle.loads(viewer_pickle(snapshot)) == snapshot
    assert peaks["checkpoint"] < peaks["baseline"]
