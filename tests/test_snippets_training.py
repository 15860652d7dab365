"""The training step post's snippets (10 to 14) and the guide's mistakes (15), on the CPU at a small
size; what only a GPU shows (autograd's thread, host syncs that drain a queue, two streams, ncu)
under the gpu marker, run by `make test-gpu`.

The CPU runs share one subprocess (tests/snippet_runs.py): torch's import and the profiler's first
start are paid once.
"""

from __future__ import annotations

import json
import runpy
import shutil
import subprocess
import sys

import pytest

from scripts.series.runs import catalog, freeze
from scripts.tracefacts.facts.analysis import facts
from scripts.tracefacts.facts.syncs import sync_facts
from scripts.tracefacts.facts.training import training_facts
from scripts.tracefacts.model.trace import load_trace
from tests.conftest import ROOT
from tests.snippet_runs import run_on_cpu, written

pytest.importorskip("torch")

SNIPPETS = ROOT / "snippets"
MODEL = ("--batch", "2", "--seq", "8", "--layers", "1", "--d_model", "32", "--steps", "2")
SYNC = ("--batch", "8", "--features", "16", "--hidden", "32", "--layers", "2", "--steps", "3")
DATA = ("--batch", "4", "--size", "16", "--hidden", "32", "--steps", "3")
STREAMS = ("--rows", "64", "--dim", "32", "--matmuls", "2", "--steps", "2")

# name -> (snippet, arguments, the output stem the snippet must choose)
CASES = {
    **{f"phases_{o}": ("10_train_phases", (*MODEL, "--optimizer", o), f"train_b2_s8_l1_d32_{o}")
       for o in ("foreach_false", "foreach", "fused")},
    **{f"sync_{s}": ("11_host_sync", (*SYNC, "--sync", s), f"sync_{s}_b8_h32_l2") for s in ("none", "item", "print", "cpu")},
    "data_w0": ("12_data_loading", (*DATA, "--workers", "0"), "data_w0_b4"),
    "data_w2_pinned": ("12_data_loading", (*DATA, "--workers", "2", "--pin_memory"), "data_w2_b4_pinned"),
    **{f"streams_{c}": ("13_streams", (*STREAMS, "--copy", c), f"streams_{c}_r64_d32_m2") for c in ("same", "side")},
    "ncu": ("14_ncu_top_kernel", MODEL, "ncu_b2_s8_l1_d32"),
    **{f"mistake_{m}": ("15_mistakes", ("--size", "64", "--steps", "3", "--mistake", m), f"mistake_{m}_n64")
       for m in ("no_step", "no_sync")},
}
EXTRA = {"ncu": ".ncu.json"}  # files a case writes beside its trace and table


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    return run_on_cpu(CASES, tmp_path_factory.mktemp("cpu_runs_training"), timeout=600)


def outputs(runs, name):
    """The case's trace and table, after checking that it wrote exactly those (and its extra)."""
    result = runs[name]
    assert not result["error"], result["error"]
    stem = CASES[name][2]
    extra = [f"{stem}{EXTRA[name]}"] if name in EXTRA else []
    assert sorted(p.name for p in result["dir"].iterdir()) == sorted([f"{stem}.json", f"{stem}.txt", *extra])
    return load_trace(result["dir"] / f"{stem}.json"), (result["dir"] / f"{stem}.txt").read_text()


def test_catalog_tags_are_the_names_the_snippets_choose():
    for example in catalog.TRAINING + catalog.MISTAKES:
        snippet = runpy.run_path(str(example.script))
        assert snippet["output_stem"](snippet["parse_args"](list(example.args))) == example.tag, example.key


def test_training_examples_are_refreshed_by_name_and_shown():
    keys = {e.key for e in catalog.select(["10_train_phases", "11_host_sync", "12_data_loading", "13_streams",
                                           "14_ncu_top_kernel", "15_mistakes"])}
    assert keys == {e.key for e in catalog.TRAINING + catalog.MISTAKES}
    # a full refresh runs them once they are shown; until their first GPU run they are pending
    # (refreshed when named, left out of the build)
    assert keys <= {e.key for e in catalog.select(None)} | {e.key for e in catalog.PENDING}
    assert catalog.get("14_ncu_top_kernel/ncu_b16_s256_l6_d512").extras == ("ncu",)


@pytest.mark.parametrize("optimizer", ["foreach_false", "foreach", "fused"])
def test_phases_snippet_records_its_steps_and_the_optimizers_label(runs, optimizer):
    trace, text = outputs(runs, f"phases_{optimizer}")
    assert [s.name for s in trace.steps] == ["ProfilerStep#2", "ProfilerStep#3"]
    labels = {a.name for a in trace.by_kind["annotation"]}
    assert "Optimizer.step#AdamW.step" in labels and "Optimizer.zero_grad#AdamW.zero_grad" in labels
    assert text.endswith("parameter tensors: 15\n")  # embedding, 12 in one encoder layer, head weight and bias
    # On the CPU the backward runs on the loop's own thread: no training facts, by definition.
    assert training_facts(trace) is None


def read_backs(trace, sync: str) -> list[list[str]]:
    """Per step, the ops under the snippet's `log (...)` label (AdamW on the CPU calls
    `.item()` on its step counts elsewhere: those do not wait for any GPU)."""
    found = []
    for label in (a for a in trace.by_kind["annotation"] if a.name == f"log ({sync})"):
        found.append([e.name for e in trace.by_kind["cpu_op"] if label.ts <= e.ts < label.end])
    return found


@pytest.mark.parametrize("sync", ["none", "item", "print", "cpu"])
def test_host_sync_snippet_reads_back_as_told(runs, sync):
    trace, text = outputs(runs, f"sync_{sync}")
    assert len(trace.steps) == 3
    logged = read_backs(trace, sync)
    assert len(logged) == 3
    items = [ops.count("aten::item") for ops in logged]
    if sync == "item":
        assert items == [1, 1, 1]
    elif sync == "print":
        assert min(items) > 1  # formatting a tensor reads several values back
    else:
        assert items == [0, 0, 0]
    assert text.splitlines()[1].split()[0] == "Name"  # the table, sorted by CPU time
    assert sync_facts(trace) is None  # no GPU: nothing to drain


@pytest.mark.parametrize("name", ["data_w0", "data_w2_pinned"])
def test_data_loading_labels_each_batch(runs, name):
    trace, _ = outputs(runs, name)
    which = "_SingleProcessDataLoaderIter" if name == "data_w0" else "_MultiProcessingDataLoaderIter"
    loads = [a for a in trace.by_kind["annotation"] if a.name == f"enumerate(DataLoader)#{which}.__next__"]
    assert len(loads) >= len(trace.steps) == 3
    assert all(any(s.ts <= a.ts < s.end for a in loads) for s in trace.steps)
    assert sum(a.name == "copy to GPU" for a in trace.by_kind["annotation"]) >= 3


@pytest.mark.parametrize("copy", ["same", "side"])
def test_streams_snippet_copies_and_computes_every_step(runs, copy):
    trace, _ = outputs(runs, f"streams_{copy}")
    labels = [a.name for a in trace.by_kind["annotation"]]
    assert labels.count("copy next batch") >= 2 and labels.count("compute") >= 2


def test_ncu_snippet_on_the_cpu_profiles_and_says_why_ncu_did_not_run(runs):
    trace, text = outputs(runs, "ncu")
    assert len(trace.steps) == 2 and "ncu: skipped on the CPU" in text
    found = json.loads((runs["ncu"]["dir"] / "ncu_b2_s8_l1_d32.ncu.json").read_text())
    assert "CUDA GPU" in found["error"]


def test_ncu_command_filters_one_launch_of_the_kernel():
    snippet = runpy.run_path(str(SNIPPETS / "14_ncu_top_kernel.py"))
    name = "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, " \
           "std::array<char*, 1ul> >(int, at::native::FillFunctor<float>, std::array<char*, 1ul>)"
    command = snippet["ncu_command"]("ncu", name, 24, ["python", "x.py", "--target"])
    assert command[:3] == ["ncu", "--clock-control", "none"]
    assert command[command.index("--launch-skip") + 1] == "24"
    assert command[command.index("--launch-count") + 1] == "1"
    import re

    pattern = command[command.index("--kernel-name") + 1].removeprefix("regex:")
    assert re.match(pattern, name) and not re.match(pattern, name.replace("FillFunctor", "Fill"))
    assert command[-3:] == ["python", "x.py", "--target"]


def test_ncu_csv_rows_keep_the_measurement_not_the_machine():
    """The CSV ncu prints (`--csv --page details`), read back: the columns naming the process,
    host and context are left out."""
    snippet = runpy.run_path(str(SNIPPETS / "14_ncu_top_kernel.py"))
    csv_text = ('==PROF== Connected\n"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream",'
                '"Block Size","Grid Size","Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"\n'
                '"0","4242","python3","gpu-node-17","nvjet_sm90","1","7","(384, 1, 1)","(132, 1, 1)","0","9.0",'
                '"GPU Speed Of Light Throughput","Compute (SM) Throughput","%","71.32"\n'
                '"0","4242","python3","gpu-node-17","nvjet_sm90","1","7","(384, 1, 1)","(132, 1, 1)","0","9.0",'
                '"Occupancy","Achieved Occupancy","%","11.87"\n')
    rows = snippet["kept_rows"](csv_text)
    assert rows == [["nvjet_sm90", "(384, 1, 1)", "(132, 1, 1)", "9.0", "GPU Speed Of Light Throughput",
                     "Compute (SM) Throughput", "%", "71.32"],
                    ["nvjet_sm90", "(384, 1, 1)", "(132, 1, 1)", "9.0", "Occupancy", "Achieved Occupancy", "%", "11.87"]]
    assert "gpu-node-17" not in json.dumps(rows) and "4242" not in json.dumps(rows)


def test_no_step_trace_has_no_profiler_step(runs):
    trace, _ = outputs(runs, "mistake_no_step")
    assert trace.steps == [] and facts(trace).steps == []
    assert sum(e.name == "aten::matmul" for e in trace.events) == 3 * 4  # every step's products, in one block


def test_no_sync_times_both_ways(runs):
    trace, text = outputs(runs, "mistake_no_sync")
    (line,) = [l for l in text.splitlines() if l.startswith("timing_json: ")]
    timing = json.loads(line.split(": ", 1)[1])
    assert timing["steps"] == 3 and timing["unsynced_s"] > 0 and timing["synced_s"] > 0
    labels = {a.name for a in trace.by_kind["annotation"]}
    assert {"timed without synchronize", "timed with synchronize"} <= labels


# --- on a GPU ------------------------------------------------------------------------------------------

GPU = pytest.mark.skipif(not freeze.gpu_available(), reason="needs a CUDA GPU")


def run_snippet(tmp_path, name: str, *args: str):
    done = subprocess.run([sys.executable, str(SNIPPETS / f"{name}.py"), *args, "--trace_dir", str(tmp_path)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return done


@pytest.mark.gpu
@GPU
def test_phases_on_the_gpu_find_the_backward_on_its_thread(tmp_path):
    run_snippet(tmp_path, "10_train_phases", "--optimizer", "foreach_false", "--layers", "2")
    trace = load_trace(tmp_path / "train_b16_s256_l2_d512_foreach_false.json")
    found = training_facts(trace)
    assert found is not None and len(found.steps) == 3 and "pt_autograd" in found.backward_threads[0]
    phases = {p.phase: p for p in found.phases}
    assert phases["backward"].gpu_busy_us > phases["forward"].gpu_busy_us > 0
    assert phases["optimizer"].launches >= 3 * (2 * 12 + 3)  # a launch per tensor and step, at least


@pytest.mark.gpu
@GPU
def test_item_drains_the_queue_every_step_and_none_never(tmp_path):
    drains = {}
    for sync in ("none", "item"):
        run_snippet(tmp_path, "11_host_sync", "--sync", sync)
        found = sync_facts(load_trace(tmp_path / f"sync_{sync}_b1024_h4096_l6.json"))
        drains[sync] = [d for d in (found.drained if found else []) if d.step]
    # every recorded step's read-back drains the queue but the last one's: no GPU work after it waits
    assert drains["none"] == [] and len(drains["item"]) == 5 - 1
    assert all(d.waited_for.startswith("Memcpy DtoH") and d.annotation == "log (item)" for d in drains["item"])


@pytest.mark.gpu
@GPU
def test_side_stream_overlaps_the_copy(tmp_path):
    run_snippet(tmp_path, "13_streams", "--copy", "side")
    trace = load_trace(tmp_path / "streams_side_r8192_d4096_m4.json")
    streams = {(a.arg("device"), a.arg("stream")) for a in trace.gpu_activities}
    assert len(streams) == 2
    step = facts(trace).steps[-1]
    assert sum(k.total_us for k in facts(trace, step=int(step.label.split("#")[1]), top=None).window.top_kernels) \
        > step.launched.busy_us


@pytest.mark.gpu
@GPU
@pytest.mark.skipif(shutil.which("ncu") is None, reason="needs Nsight Compute (ncu) on the PATH")
def test_ncu_measures_the_top_kernel(tmp_path):
    run_snippet(tmp_path, "14_ncu_top_kernel", "--layers", "2")
    found = json.loads((tmp_path / "ncu_b16_s256_l2_d512.ncu.json").read_text())
    assert "error" not in found, found.get("error")
    metrics = {(row[4], row[5]) for row in found["rows"]}
    assert ("Occupancy", "Achieved Occupancy") in metrics
    assert ("GPU Speed Of Light Throughput", "Compute (SM) Throughput") in metrics
