"""One vocabulary, one number per question: who set the pace (overhead-bound, GPU-bound, stalled,
mixed) on traces where each case dominates, with their time splits worked out by hand; the
verdict never disagreeing with the split printed beside it, on random traces too; the facts box,
the timeline's badge and the text giving one GPU busy number; and the box's sentence on why the
profiler table's Self CPU total is not the box's CPU busy, held to a frozen run."""

from __future__ import annotations

import random
import re

import pytest

from scripts.tracefacts.facts import analysis
from scripts.tracefacts.facts.analysis import facts, pace, summary_text
from scripts.tracefacts.facts.terms import (COPIES, GPU_BOUND, MATRIX_MATH, MEMORY_BOUND_KERNELS,
                                           MIXED, NO_GPU, OVERHEAD_BOUND, STALLED)
from scripts.tracefacts.model.trace import Window, build_trace, load_trace
from scripts.tracefacts.pictures.facts_box import render_facts_box
from scripts.tracefacts.pictures.timeline.headline import facts_headline
from tests.conftest import ROOT
from tests.fixtures.handmade import ADD, GEMM, TraceWriter
from tests.fixtures.synth import Spec, synth_trace

HTOD = "Memcpy HtoD (Pageable -> Device)"
DTOH = "Memcpy DtoH (Device -> Pageable)"


def split_of(window) -> tuple[float, float, float, float]:
    s = window.time_split
    return s.busy_us, s.host_wait_us, s.stalled_us, s.unattributed_us


def host_wait_trace() -> dict:
    """Five 100 us steps, each launching one 2 us GEMM: call [10, 15], GEMM [17, 19]."""
    w = TraceWriter()
    for k in range(5):
        t = 100 * k
        w.host_event("user_annotation", f"ProfilerStep#{k}", t, 100)
        w.launch(t + 10, 5, [("kernel", GEMM, t + 17, 2, 7)])
    return w.trace()


def test_host_wait_dominates_overhead_bound():
    window = facts(build_trace(host_wait_trace())).window
    # [0, 500]: busy 5 x 2; stalled [15, 17] in each step; the rest waiting for the host.
    assert split_of(window) == pytest.approx((10, 480, 10, 0))
    assert window.verdict.label == OVERHEAD_BOUND
    assert [(c.work_class, c.share_pct) for c in window.work_classes] == [(MATRIX_MATH, 100)]


def busy_trace(*kernels: tuple[str, float]) -> dict:
    """The host launches the kernels [(name, us)] 2 us apart, from 0; the GPU runs them back to back
    from 5; the host waits in cudaDeviceSynchronize [12, end + 1]."""
    w = TraceWriter()
    start = 5.0
    for k, (name, dur) in enumerate(kernels):
        w.launch(2 * k, 1, [("kernel", name, start, dur, 7)])
        start += dur
    w.host_event("cuda_runtime", "cudaDeviceSynchronize", 12, start + 1 - 12)
    return w.trace()


def test_busy_gemms_gpu_bound_matrix_math():
    window = facts(build_trace(busy_trace(*[(GEMM, 100.0)] * 5))).window
    # [0, 506]: busy 500; stalled [1, 5] (the first GEMM's call returned at 1); waiting for the
    # host [0, 1] and [505, 506].
    assert split_of(window) == pytest.approx((500, 2, 4, 0))
    assert window.verdict.label == GPU_BOUND
    assert [(c.work_class, c.share_pct) for c in window.work_classes] == [(MATRIX_MATH, 100)]


def test_busy_elementwise_gpu_bound_memory_bound_kernels():
    window = facts(build_trace(busy_trace(*[(ADD, 100.0)] * 4, (GEMM, 50.0)))).window
    assert split_of(window) == pytest.approx((450, 2, 4, 0))
    assert window.verdict.label == GPU_BOUND
    # GPU-bound by its own work, most of it elementwise: 400 of 450 us
    assert [(c.work_class, round(c.share_pct, 1)) for c in window.work_classes] == [
        (MEMORY_BOUND_KERNELS, 88.9), (MATRIX_MATH, 11.1)]
    assert window.top_kernels[0].work_class == MEMORY_BOUND_KERNELS


def graph_trace(copy_back: bool = True) -> dict:
    """A decode step [0, 1000] as SGLang's trace shows it: a copy in [3, 8] (call [0, 2]), one
    cudaGraphLaunch [10, 20] whose kernels the trace does not show, then, with `copy_back`, a
    DtoH copy (call [25, 30]) that runs after the graph, [980, 990], while the host waits in
    cudaStreamSynchronize [30, 995]; without it, the host waits [22, 900]."""
    w = TraceWriter()
    w.host_event("user_annotation", "ProfilerStep#1", 0, 1000)
    w.launch(0, 2, [("gpu_memcpy", HTOD, 3, 5, 7)], api="cudaMemcpyAsync")
    w.launch(10, 10, [], api="cudaGraphLaunch")
    if copy_back:
        w.launch(25, 5, [("gpu_memcpy", DTOH, 980, 10, 7)], api="cudaMemcpyAsync")
        w.host_event("cuda_runtime", "cudaStreamSynchronize", 30, 965)
    else:
        w.host_event("cuda_runtime", "cudaStreamSynchronize", 22, 878)
    return w.trace()


def test_idle_after_a_graph_launch_without_kernels_is_stalled_not_gpu_work():
    result = facts(build_trace(graph_trace()))
    window = result.window
    # busy: the two copies, 15 us. Stalled: [2, 3] (the first copy launched), the graph's work from
    # its return at 20 to the next activity the GPU runs, at 980 (the copy back, launched at 30,
    # is pending inside it too): 1 + 960. Waiting for the host: [0, 2], [8, 20], [990, 1000].
    assert split_of(window) == pytest.approx((15, 24, 961, 0))
    assert window.time_split.hidden_launches == 1
    assert window.verdict.label == STALLED
    assert window.verdict.reason.startswith(
        "the GPU was busy 1.5% of the window (1 ms), idle waiting for the host 2.4%, stalled 96.1%; "
        "1 launch call here handed the GPU work the trace does not show (stalled until it ran)")
    assert [c.work_class for c in window.work_classes] == [COPIES]
    # HTA's per-stream line calls the gap before the copy back host wait (its call began after
    # the copy before it ended): a different question, which the verdict does not read.
    (stream,) = window.idle_by_stream
    assert stream.host_wait_pct == 100
    # The launched-work view counts that idle time as queued behind the work: a GPU 1.5% busy
    # once read as compute-bound from it.
    assert window.launched.busy_pct + window.launched.queued_pct > 80


def test_a_graph_launch_followed_by_a_sync_is_stalled_until_the_sync_returns():
    window = facts(build_trace(graph_trace(copy_back=False))).window
    # busy [3, 8]; stalled [2, 3] and [20, 900]; waiting for the host [0, 2], [8, 20], [900, 1000]
    assert split_of(window) == pytest.approx((5, 114, 881, 0))
    assert window.verdict.label == STALLED


def cross_stream_trace() -> dict:
    """K1 on stream 7 (call [0, 2]) runs [3, 13]; K2 on stream 20 (call [5, 7], after a
    cudaStreamWaitEvent [3, 4]) waits for an event and runs [900, 950]; step [0, 1000]."""
    w = TraceWriter()
    w.host_event("user_annotation", "ProfilerStep#1", 0, 1000)
    w.launch(0, 2, [("kernel", GEMM, 3, 10, 7)])
    w.host_event("cuda_runtime", "cudaStreamWaitEvent", 3, 1)
    w.launch(5, 2, [("kernel", GEMM, 900, 50, 20)])
    return w.trace()


def test_idle_on_a_cross_stream_wait_is_stalled():
    window = facts(build_trace(cross_stream_trace())).window
    # busy 10 + 50; stalled [2, 3] and, K2 launched at 7, [13, 900]; waiting for the host [0, 2],
    # [950, 1000].
    assert split_of(window) == pytest.approx((60, 52, 888, 0))
    assert window.verdict.label == STALLED
    assert window.time_split.hidden_launches == 0  # cudaStreamWaitEvent hands the GPU no work
    assert [c.work_class for c in window.work_classes] == [MATRIX_MATH]


# --- the verdict never disagrees with the numbers beside it ----------------------------------------


def random_trace(seed: int) -> dict:
    """Steps of random host work launching random kernels on two streams, some behind a wait
    (long launch delays), some graph launches with no kernels, some activities with no launch
    call, with long host-only stretches."""
    rng = random.Random(seed)
    w = TraceWriter()
    t, free = 0.0, {7: 0.0, 20: 0.0}
    for step in range(4):
        start = t
        for _ in range(rng.randint(1, 12)):
            t += rng.choice([1.0, 5.0, 50.0, 400.0])
            call = rng.uniform(1, 8)
            stream = rng.choice([7, 20])
            if rng.random() < 0.1:
                w.launch(t, call, [], api="cudaGraphLaunch")
            elif rng.random() < 0.1:
                begin = max(t, free[stream]) + rng.uniform(0, 30)
                dur = rng.choice([2.0, 30.0, 300.0])
                w.events.append({"ph": "X", "cat": "kernel", "name": ADD, "pid": 0, "tid": stream,
                                 "ts": begin, "dur": dur, "args": {"device": 0, "stream": stream}})
                free[stream] = begin + dur
            else:
                dur = rng.choice([2.0, 30.0, 300.0, 3000.0])
                wait = rng.choice([0.0, 0.0, 200.0])
                begin = max(t + call + rng.uniform(0.5, 3), free[stream]) + wait
                w.launch(t, call, [("kernel", rng.choice([GEMM, ADD]), begin, dur, stream)])
                free[stream] = begin + dur
            t += call
        if rng.random() < 0.5:
            w.host_event("cuda_runtime", "cudaDeviceSynchronize", t, max(free.values()) - t + 1)
            t = max(t, max(free.values()) + 1)
        w.host_event("user_annotation", f"ProfilerStep#{step + 1}", start, t - start + 1)
        t += 1
    return w.trace()


def windows_of(result, trace) -> list:
    end = trace.end_us
    extra = [analysis.focus_window(trace, window=(a, b)) for a, b in
             ((0, end / 3), (end / 3, 2 * end / 3), (end / 2, end))]
    return [result.window, *result.steps] + [facts(trace, window=w, top=0).window for w in extra]


def check_window(window) -> None:
    s = window.time_split
    parts = (s.busy_us, s.host_wait_us, s.stalled_us, s.unattributed_us)
    assert min(parts) >= 0 and sum(parts) == pytest.approx(s.span_us, abs=1e-6)
    assert s.busy_pct == pytest.approx(window.window_busy_pct)
    label = window.verdict.label
    if s.busy_us <= 0 and s.stalled_us <= 0:
        assert label == NO_GPU
        return
    assert label == pace(s.busy_pct, s.host_wait_pct, s.stalled_pct)
    # The shares the reason prints decide the same label.
    printed = re.match(r"the GPU was busy ([\d.]+)% of the window \([^)]*\), idle waiting for the "
                       r"host ([\d.]+)%, stalled ([\d.]+)%", window.verdict.reason)
    assert printed, window.verdict.reason
    busy, host_wait, stalled = map(float, printed.groups())
    assert pace(busy, host_wait, stalled) == label
    if label == GPU_BOUND:
        assert busy >= analysis.GPU_BOUND_MIN_BUSY_PCT
    if 100 - s.busy_pct >= 90:  # a GPU idle 90% of its window
        assert label != GPU_BOUND
    if label == OVERHEAD_BOUND:
        assert host_wait >= analysis.OVERHEAD_BOUND_MIN_HOST_WAIT_PCT
    if label == STALLED:
        assert stalled >= analysis.STALLED_MIN_STALLED_PCT


@pytest.mark.parametrize("seed", range(40))
def test_verdict_agrees_with_the_split_beside_it_on_random_traces(seed):
    trace = build_trace(random_trace(seed))
    result = facts(trace)
    labels = set()
    for window in windows_of(result, trace):
        check_window(window)
        labels.add(window.verdict.label)
    assert labels <= {OVERHEAD_BOUND, GPU_BOUND, STALLED, MIXED, NO_GPU}


def test_random_traces_reach_every_verdict():
    """The random traces above are not all of one kind: together they meet every label."""
    found = set()
    for seed in range(40):
        trace = build_trace(random_trace(seed))
        found |= {w.verdict.label for w in windows_of(facts(trace), trace)}
    assert {OVERHEAD_BOUND, GPU_BOUND, STALLED, MIXED} <= found


@pytest.mark.parametrize("spec", [
    Spec(kernel_us=(1.0, 4.0)),  # the host sets the pace
    Spec(kernel_us=(200.0, 400.0), op_cpu_us=(3.0, 6.0), launch_us=(1.0, 2.0)),  # the GPU does
    Spec(graph_every=3, memcpy_every=5, streams=(7, 20)),
    Spec(nccl_every=4, driver_every=3, streams=(7, 20), gap_after_op_us=50.0),
], ids=["host", "gpu", "graphs", "mixed"])
def test_synthetic_runs_verdicts_agree_with_their_splits(spec):
    trace = build_trace(synth_trace(spec))
    result = facts(trace)
    for window in windows_of(result, trace):
        check_window(window)
    if spec.kernel_us == (1.0, 4.0):
        assert all(s.verdict.label == OVERHEAD_BOUND for s in result.steps)
    if spec.kernel_us == (200.0, 400.0):
        assert result.steps[-1].verdict.label == GPU_BOUND


# --- one GPU busy number -----------------------------------------------------------------------


@pytest.mark.parametrize("make", [host_wait_trace, graph_trace, cross_stream_trace],
                         ids=["host", "graph", "cross-stream"])
def test_box_badge_and_text_give_one_busy_number_and_the_verdict(make):
    result = facts(build_trace(make()))
    w = result.window
    busy = f"{w.window_busy_pct:.1f}%"
    box = str(render_facts_box(result, "../guide/analyze-your-trace/"))
    head, folded = box.split("<details>", 1)
    assert f"GPU busy</a></dt><dd>{busy} of the whole trace" in head
    assert f"<strong>{w.verdict.label}</strong>" in head
    assert f"waiting for the host {w.time_split.host_wait_pct:.1f}% · stalled {w.time_split.stalled_pct:.1f}%" in head
    # the definitions are the glossary's, the rest folded
    assert 'href="../guide/glossary/#gpu-busy"' in head and 'href="../guide/glossary/#verdict"' in head
    assert "Launched-work view" in folded and "Launched-work view" not in head
    assert facts_headline(result, w.label) == f"GPU busy {busy} of the window · {w.verdict.label}"
    assert f"GPU busy: {analysis._ms(w.window_busy_us)} = {busy} of the window" in summary_text(result)


def test_the_steps_table_and_the_box_give_each_step_its_split():
    result = facts(build_trace(host_wait_trace()))
    text = summary_text(result)
    rows = text.split("per ProfilerStep:", 1)[1].splitlines()[2:]
    for step, row in zip(result.steps, rows):
        s = step.time_split
        assert f"{s.busy_pct:7.1f}%  {s.host_wait_pct:8.1f}%  {s.stalled_pct:6.1f}%" in row
        assert row.endswith(step.verdict.label)


def test_no_queued_or_compute_bound_words_in_the_analyzer_outputs():
    """One vocabulary: the analyzer's text, box and badge say stalled and GPU-bound."""
    result = facts(build_trace(graph_trace()))
    said = summary_text(result) + str(render_facts_box(result, "guide/")) + facts_headline(result)
    assert "compute-bound" not in said and "queued" not in said


# --- the box's sentence on Self CPU and CPU busy -------------------------------------------------


def test_self_cpu_total_is_cpu_busy_plus_what_the_box_says_it_also_counts():
    """64x64 matmul + add (Part 1): the table's Self CPU total is CPU busy plus the self time of the
    ProfilerStep rows and the record_function label, and of the synchronizing call."""
    from scripts.tracefacts.pictures.facts_box import SELF_CPU_NOTE
    from scripts.tracefacts.pictures.profiler_table import parse_table, to_us

    stem = ROOT / "traces" / "01_matmul_add" / "64_bf16_cold_eager"
    table = parse_table((stem.with_suffix(".txt")).read_text())
    result = facts(load_trace(stem.with_suffix(".json.gz")))
    self_cpu = {row[0]: to_us(dict(zip(table.columns, row))["Self CPU"]) for row in table.rows}
    also = self_cpu["ProfilerStep*"] + self_cpu["matmul_add"] + self_cpu["cudaDeviceSynchronize"]
    total = to_us(table.total("Self CPU time total"))
    assert total > 1.5 * result.window.cpu_busy_us  # they differ a lot...
    assert total - also == pytest.approx(result.window.cpu_busy_us, rel=0.01)  # ...and this is why
    assert result.window.cpu_wait_us == pytest.approx(self_cpu["cudaDeviceSynchronize"], rel=0.01)
    assert "ProfilerStep rows and record_function labels" in SELF_CPU_NOTE
    assert "synchronizing calls" in SELF_CPU_NOTE
    folded = str(render_facts_box(result, "guide/")).split("<details>", 1)[1]
    assert "Self CPU total differs: it also counts the self time of the ProfilerStep rows" in folded


def test_a_window_with_nothing_but_host_work_is_no_gpu_activity():
    trace = build_trace(host_wait_trace())
    window = facts(trace, window=Window(20, 100, "host only")).window
    # [20, 100]: the GEMM of step 0 ended at 19, the next call starts at 110
    assert split_of(window) == pytest.approx((0, 80, 0, 0))
    assert window.verdict.label == NO_GPU
