"""Agreement with Holistic Trace Analysis (HTA 0.5.0), the reference for trace metrics, on traces
from several producers: real H200 traces under traces/, torch-made CPU traces, and synthetic
Kineto traces in the layouts of other versions and vendors.

HTA rounds every timestamp inward to whole microseconds by default (ceil start, floor end); we keep
the trace's nanoseconds. So we compare our numbers with HTA run with HTA_DISABLE_NS_ROUNDING=1,
and HTA's default numbers with ours computed on the same rounded intervals: both within 0.5
percentage points."""

from __future__ import annotations

import math
import shutil
from pathlib import Path

import pytest

pytest.importorskip("hta")
from hta.trace_analysis import TraceAnalysis  # noqa: E402

from scripts.tracefacts.facts.analysis import facts, hta_scope_end  # noqa: E402
from scripts.tracefacts.model.trace import Event, Trace, load_trace  # noqa: E402
from tests.fixtures.handmade import two_steps  # noqa: E402
from tests.fixtures.synth import Spec, synth_trace, write_trace  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = Path(__file__).parent / "fixtures"
TOLERANCE_PP = 0.5

REAL_TRACES = [
    "traces/train_step/train_b16_s3.json.gz",
    "traces/01_matmul_add/4096_bf16_warm_compile.json.gz",
    "traces/01_matmul_add/64_bf16_cold_eager_s0-0-20.json.gz",
]
SYNTHETIC = {
    "synthetic_cuda_multistream": Spec(steps=3, ops_per_step=400, streams=(7, 20), nccl_every=9,
                                       memcpy_every=13, driver_every=5, with_stack=True, seed=1),
    "synthetic_cuda_graphs": Spec(steps=3, ops_per_step=300, graph_every=4, gap_after_op_us=20,
                                  seed=2),
    "synthetic_old_kineto": Spec(style="old", steps=3, ops_per_step=300, memcpy_every=6, seed=3,
                                 kernel_us=(1.0, 80.0)),
    "synthetic_rocm": Spec(style="rocm", steps=3, ops_per_step=300, streams=(1, 2), seed=4,
                           op_cpu_us=(2.0, 4.0)),
    "synthetic_gpu_bound_no_steps": Spec(steps=1, ops_per_step=500, kernel_us=(50.0, 200.0),
                                         sync_each_step=False, seed=5),
}


def gpu_traces() -> list:
    cases = [pytest.param(ROOT / rel, id=Path(rel).name.removesuffix(".json.gz"))
             for rel in REAL_TRACES if (ROOT / rel).exists()]
    cases += [pytest.param(name, id=name) for name in SYNTHETIC]
    return cases + [pytest.param("handmade", id="handmade_two_steps")]


@pytest.fixture
def trace_file(request, tmp_path) -> Path:
    """The case's trace as a file alone in a directory (HTA reads whole directories)."""
    source = request.param
    folder = tmp_path / "trace"
    folder.mkdir()
    if isinstance(source, Path):
        return Path(shutil.copy(source, folder))
    if source == "handmade":
        import json
        path = folder / "handmade.json"
        path.write_text(json.dumps(two_steps(), indent=1))
        return path
    return write_trace(synth_trace(SYNTHETIC[source]), folder / f"{source}.json.gz")


def hta(path: Path, monkeypatch, rounding: bool) -> TraceAnalysis:
    monkeypatch.setenv("HTA_DISABLE_NS_ROUNDING", "0" if rounding else "1")
    return TraceAnalysis(trace_dir=str(path.parent))


def hta_breakdown(analysis: TraceAnalysis) -> tuple[float, float, float]:
    row = analysis.get_temporal_breakdown(visualize=False).iloc[0]
    return row["idle_time_pctg"], row["compute_time_pctg"], row["non_compute_time_pctg"]


def ours(breakdown) -> tuple[float, float, float]:
    return breakdown.idle_pct, breakdown.compute_pct, breakdown.non_compute_pct


def assert_close_pp(theirs, mine):
    assert all(abs(a - b) <= TOLERANCE_PP for a, b in zip(theirs, mine)), (theirs, mine)


def rounded_as_hta_does(trace: Trace) -> Trace:
    """The trace with every event rounded inward to whole microseconds of absolute time, as HTA's
    parser does by default (an event shorter than that becomes empty)."""
    base = math.floor(trace.origin_us)
    events = []
    for e in trace.events:
        start = math.ceil(e.ts + trace.origin_us)
        end = math.floor(e.ts + e.dur + trace.origin_us)
        events.append(Event(e.name, e.kind, e.cat, float(start - base),
                            float(max(end - start, 0)), e.pid, e.tid, e.args))
    events.sort(key=lambda e: (e.ts, -e.dur))
    return Trace(events, [], trace.metadata, trace.process_names, trace.thread_names, base,
                 trace.source)


@pytest.mark.parametrize("trace_file", gpu_traces(), indirect=True)
def test_temporal_breakdown_agrees_at_nanosecond_precision(trace_file, monkeypatch):
    mine = facts(load_trace(trace_file)).temporal_breakdown
    assert_close_pp(hta_breakdown(hta(trace_file, monkeypatch, rounding=False)), ours(mine))


@pytest.mark.parametrize("trace_file", gpu_traces(), indirect=True)
def test_temporal_breakdown_agrees_with_default_hta_on_rounded_times(trace_file, monkeypatch):
    mine = facts(rounded_as_hta_does(load_trace(trace_file))).temporal_breakdown
    assert_close_pp(hta_breakdown(hta(trace_file, monkeypatch, rounding=True)), ours(mine))


@pytest.mark.parametrize("trace_file", gpu_traces(), indirect=True)
def test_idle_breakdown_and_launch_counts_agree(trace_file, monkeypatch):
    trace = load_trace(trace_file)
    analysis = hta(trace_file, monkeypatch, rounding=False)
    end = hta_scope_end(trace) or trace.end_us  # the activities HTA keeps
    window = facts(trace, window=(0.0, end)).window
    theirs, _ = analysis.get_idle_time_breakdown(visualize=False)
    for stream in window.idle_by_stream:
        rows = theirs[theirs["stream"] == stream.stream].set_index("idle_category")["idle_time"]
        # 0.5% of the idle time, and a nanosecond of float noise per gap
        tolerance = 0.005 * abs(stream.idle_us) + 0.001 * stream.gaps
        for category in ("host_wait", "kernel_wait", "other"):
            mine = getattr(stream, f"{category}_us")
            assert abs(rows.get(category, 0.0) - mine) <= tolerance, (stream, rows)
    launch_rows = analysis.get_cuda_kernel_launch_stats(visualize=False)[0]
    assert window.launches.hta_counts == len(launch_rows)


def test_cpu_only_trace_has_no_gpu_rows_for_either(tmp_path, monkeypatch):
    path = Path(shutil.copy(FIXTURES / "torch_cpu_stack.json.gz", tmp_path))
    analysis = hta(path, monkeypatch, rounding=False)
    assert not (analysis.t.get_trace(0)["stream"] >= 0).any()
    result = facts(load_trace(path))
    assert not result.has_gpu_activity and result.temporal_breakdown is None
    assert result.window.cpu_busy_us > 0
