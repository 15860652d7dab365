"""Where HTA 0.5.0's temporal breakdown and ours part, one construct at a time, on traces small
enough to work out by hand from the definitions (docs/guide/analyze-your-trace.md, "Where we
differ from HTA").

Each case holds our numbers, worked out by hand, and HTA's differing ones, worked out by hand from
its code, asserted as HTA's behaviour: a future HTA that reads the construct as we do fails the
HTA half, and the guide's entry should then go.

Every case starts from the same two kernels on stream 7, launched at 0 and 60:

    s7  K1 [10, 50]   K2 [70, 100]      span 90, busy 70: idle 22.22%, compute 77.78%

HTA's breakdown reads every row with an integer `stream` other than -1 as GPU work, whatever its
category (analyzers/breakdown_analysis.py: `trace_df["stream"].ne(-1)`), sums merged intervals as
sum(end) - sum(start), and keeps, when there are several ProfilerSteps, the rows whose correlation
matches a host row before the last step; rows without one are taken for host rows and kept by
their start time (common/trace.py, `_filter_irrelevant_gpu_kernels`).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from scripts.tracefacts.facts.analysis import facts
from scripts.tracefacts.model.trace import load_trace
from tests.fixtures.handmade import GEMM, TraceWriter

# HTA turns integer columns into the smallest integer type that holds them, so small hand-made
# times would overflow int8 in its `ts + dur`; real traces' times are large. So are these.
ORIGIN_US = 5_000_000_000_000.5


def base() -> TraceWriter:
    w = TraceWriter()
    w.host_event("cpu_op", "aten::mm", 0, 10)
    w.launch(0, 5, [("kernel", GEMM, 10, 40, 7)])
    w.launch(60, 5, [("kernel", GEMM, 70, 30, 7)])
    return w


def gpu_row(w: TraceWriter, cat: str, name: str, ts: float, dur: float, stream: int,
            correlation: int | None, **args) -> None:
    """A row on the GPU's lane (pid 0, tid = stream), as Kineto writes it."""
    if correlation is not None:
        args["correlation"] = correlation
    w.events.append({"ph": "X", "cat": cat, "name": name, "pid": 0, "tid": stream, "ts": ts,
                     "dur": dur, "args": {"device": 0, "stream": stream, **args}})


def stream_sync() -> TraceWriter:
    """cudaStreamSynchronize called at 40, returning at 102: CUPTI's synchronization record spans
    the call on the host, and Kineto draws it on stream 7 (`cuda_sync`, "Stream Sync")."""
    w = base()
    w.host_event("cuda_runtime", "cudaStreamSynchronize", 40, 62, correlation=90, cbid=131)
    gpu_row(w, "cuda_sync", "Stream Sync", 40, 62, 7, 90, cuda_sync_kind="Stream Sync")
    return w


def stream_wait_event() -> TraceWriter:
    """cudaStreamWaitEvent [55, 58] on the host, drawn on stream 7 ("Stream Wait Event")."""
    w = base()
    w.host_event("cuda_runtime", "cudaStreamWaitEvent", 55, 3, correlation=90, cbid=146)
    gpu_row(w, "cuda_sync", "Stream Wait Event", 55, 3, 7, 90,
            cuda_sync_kind="Stream Wait Event", wait_on_stream=20,
            wait_on_cuda_event_record_corr_id=-1)
    return w


def event_sync() -> TraceWriter:
    """cudaEventSynchronize [40, 102]: its row has no stream (-1), and both readings leave it out."""
    w = base()
    w.host_event("cuda_runtime", "cudaEventSynchronize", 40, 62, correlation=90, cbid=133)
    gpu_row(w, "cuda_sync", "Event Sync", 40, 62, -1, 90, cuda_sync_kind="Event Sync")
    return w


def cuda_event() -> TraceWriter:
    """cudaEventRecord at 66; the event is reached on stream 7 at 104 (`cuda_event` row, 1 ns)."""
    w = base()
    w.host_event("cuda_runtime", "cudaEventRecord", 66, 2, correlation=90, cbid=135)
    gpu_row(w, "cuda_event", "cudaEvent", 104, 0.001, 7, 90, event_id=1)
    return w


def negative_duration() -> TraceWriter:
    """A kernel row [60, 55]: dur -5, which a clock fault can write."""
    w = base()
    w.launch(58, 1, [("kernel", GEMM, 60, -5, 7)])
    return w


def steps_with_uncorrelated_kernel() -> TraceWriter:
    """Three ProfilerSteps of 200 us, each launching K [t+20, t+70] and K [t+80, t+100]; both
    readings of the per-trace breakdown drop the last step: span [20, 300], busy 140. A kernel row
    [150, 160] carries no correlation: its launch is unknown."""
    w = TraceWriter()
    for number, t in enumerate((0, 200, 400)):
        w.host_event("user_annotation", f"ProfilerStep#{number}", t, 200)
        w.launch(t + 5, 5, [("kernel", GEMM, t + 20, 50, 7)])
        w.launch(t + 15, 5, [("kernel", GEMM, t + 80, 20, 7)])
    gpu_row(w, "kernel", GEMM, 150, 10, 7, None)
    return w


def graph_launch() -> TraceWriter:
    """A cudaGraphLaunch at 101 runs three kernels under its one correlation id: [110, 120],
    [120, 130], [140, 150]."""
    w = base()
    w.launch(101, 5, [("kernel", "graph_k0", 110, 10, 7), ("kernel", "graph_k1", 120, 10, 7),
                      ("kernel", "graph_k2", 140, 10, 7)], api="cudaGraphLaunch")
    return w


def overlap_on_one_stream() -> TraceWriter:
    """A kernel [95, 105] that starts before K2 ends on the same stream (programmatic dependent
    launch lets it)."""
    w = base()
    w.launch(90, 2, [("kernel", GEMM, 95, 10, 7)])
    return w


def steps_with_graph_across_cut() -> TraceWriter:
    """The three steps, and a graph launched at 390, before the last step began, whose kernels
    [420, 430] and [500, 510] run inside it: kept by both, by their launch."""
    w = steps_with_uncorrelated_kernel()
    w.events = [e for e in w.events if "correlation" in e["args"] or e["pid"] != 0]
    w.launch(390, 5, [("kernel", "graph_k0", 420, 10, 7), ("kernel", "graph_k1", 500, 10, 7)],
             api="cudaGraphLaunch")
    return w


# (trace, ours, HTA's): (idle, compute, non-compute) percent of the span.
CASES = {
    # HTA: busy [10, 102] with the sync row: span 92, idle 0, compute 70/92, the rest (22) is
    # "other" time (the name contains "Sync").
    "stream_sync": (stream_sync, (22.22, 77.78, 0.0), (0.0, 76.09, 23.91)),
    # HTA: busy 70 + 3, span 90, idle 17; the name has no "Sync": the call counts as compute.
    "stream_wait_event": (stream_wait_event, (22.22, 77.78, 0.0), (18.89, 81.11, 0.0)),
    # HTA: the event's row extends the span to 94.001 and counts as a compute kernel.
    "cuda_event": (cuda_event, (22.22, 77.78, 0.0), (25.53, 74.47, 0.0)),
    # HTA: the row is its own merged interval, summed as -5: busy 65 of 90.
    "negative_duration": (negative_duration, (22.22, 77.78, 0.0), (27.78, 72.22, 0.0)),
    # HTA takes the row for a host row and keeps it, by its start, before the last step: busy
    # 150 of 280.
    "uncorrelated_kernel_before_cut": (steps_with_uncorrelated_kernel, (50.0, 50.0, 0.0),
                                       (46.43, 53.57, 0.0)),
}
AGREED = {
    "event_sync": (event_sync, (22.22, 77.78, 0.0)),
    # busy 70 + 30 of the span [10, 150]
    "graph_launch": (graph_launch, (28.57, 71.43, 0.0)),
    # busy [10, 50] and [70, 105]: 75 of 95
    "overlap_on_one_stream": (overlap_on_one_stream, (21.05, 78.95, 0.0)),
    # span [20, 510], busy 140 + 20
    "graph_across_the_last_step": (steps_with_graph_across_cut, (67.35, 32.65, 0.0)),
}


def write(w: TraceWriter, folder: Path) -> Path:
    trace = w.trace(distributedInfo={"backend": "nccl", "rank": 0, "world_size": 1})
    for event in trace["traceEvents"]:
        event["ts"] += ORIGIN_US
    folder.mkdir()
    path = folder / "trace.json"
    path.write_text(json.dumps(trace))
    return path


def ours(path: Path) -> tuple[float, float, float]:
    b = facts(load_trace(path)).temporal_breakdown
    return round(b.idle_pct, 2), round(b.compute_pct, 2), round(b.non_compute_pct, 2)


def htas(path: Path, monkeypatch) -> tuple[float, float, float]:
    pytest.importorskip("hta")
    from hta.trace_analysis import TraceAnalysis
    monkeypatch.setenv("HTA_DISABLE_NS_ROUNDING", "1")
    row = TraceAnalysis(trace_dir=str(path.parent)).get_temporal_breakdown(visualize=False).iloc[0]
    return (float(row["idle_time_pctg"]), float(row["compute_time_pctg"]),
            float(row["non_compute_time_pctg"]))


@pytest.mark.parametrize("case", sorted(CASES))
def test_ours_follows_the_definitions(case, tmp_path):
    build, mine, _ = CASES[case]
    assert ours(write(build(), tmp_path / "t")) == pytest.approx(mine, abs=0.01)


@pytest.mark.parametrize("case", sorted(CASES))
def test_hta_reads_the_construct_as_documented(case, tmp_path, monkeypatch):
    build, mine, theirs = CASES[case]
    got = htas(write(build(), tmp_path / "t"), monkeypatch)
    assert got == pytest.approx(theirs, abs=0.01), (
        f"HTA now gives {got} on {case} (ours {mine}): if it agrees with ours, drop the case "
        "from the guide's list of differences")


@pytest.mark.parametrize("case", sorted(AGREED))
def test_constructs_both_read_alike(case, tmp_path, monkeypatch):
    build, expected = AGREED[case]
    path = write(build(), tmp_path / "t")
    assert ours(path) == pytest.approx(expected, abs=0.01)
    assert htas(path, monkeypatch) == pytest.approx(expected, abs=0.01)
