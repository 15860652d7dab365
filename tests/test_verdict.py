"""The verdict (read from the window's time split) and the launched-work view on traces written
out by hand, with their numbers worked out by hand: the GPU waiting for the host, the GPU queued
behind its own work, a mix of both, and steps whose kernels run after the step has ended."""

from __future__ import annotations

import pytest

from scripts.tracefacts.facts import analysis
from scripts.tracefacts.facts.analysis import facts, steady_step, summary_text
from scripts.tracefacts.model.trace import build_trace
from tests.fixtures.handmade import GEMM, TraceWriter


def host_bound(offset: float = 0.0, head: float = 0.0, tail: float = 0.0) -> dict:
    """Three steps of 100 us, each launching one 5 us kernel: call [10, 15], kernel [17, 22]
    (times within the step). `offset` shifts everything; `head` and `tail` add host-only work
    before the first step and after the last one."""
    w = TraceWriter()
    if head:
        w.host_event("cpu_op", "aten::empty", 0, head)
    for k in range(3):
        start = offset + 100 * k
        w.host_event("user_annotation", f"ProfilerStep#{k}", start, 100)
        w.launch(start + 10, 5, [("kernel", GEMM, start + 17, 5, 7)])
    if tail:
        w.host_event("cpu_op", "aten::copy_", offset + 300, tail)
    return w.trace()


def test_host_wait_dominates_overhead_bound():
    window = facts(build_trace(host_bound())).window
    launched = window.launched
    # K0 is the GPU's first: idle from its call's start, [10, 17]: host wait 5 (until the call
    # returned at 15), queued 2. K1 and K2: idle 95 each since the previous kernel ended at
    # 22 (122), their calls returned at 115 (215): host wait 93, queued 2.
    assert launched.busy_us == pytest.approx(15)
    assert (launched.host_wait_us, launched.queued_us, launched.other_us) == pytest.approx((191, 6, 0))
    assert launched.active_us == pytest.approx(212)
    assert window.launches.delay_p50_us == pytest.approx(2)
    # The time window [0, 300]: busy 3 x 5 us; stalled from each call's return to its kernel's
    # start, [15, 17], [115, 117], [215, 217]; the rest the GPU waited for the host: 279 us.
    split = window.time_split
    assert (split.busy_us, split.host_wait_us, split.stalled_us) == pytest.approx((15, 279, 6))
    assert window.verdict.label == "overhead-bound"
    # 15 / 300 = 5.0%, 279 / 300 = 93.0%, 6 / 300 = 2.0%
    assert window.verdict.reason == (
        "the GPU was busy 5.0% of the window (300 us), idle waiting for the host 93.0%, stalled "
        "2.0%; median launch delay 2 us: the host set the pace")


def test_host_only_time_counts_as_host_wait_in_the_window_not_in_the_launched_work():
    plain = facts(build_trace(host_bound())).window
    padded = facts(build_trace(host_bound(offset=50_000, head=40_000, tail=30_000))).window
    assert padded.window_busy_pct < plain.window_busy_pct / 100  # the time window is mostly host
    assert padded.time_split.host_wait_pct > plain.time_split.host_wait_pct
    assert padded.verdict.label == plain.verdict.label == "overhead-bound"
    for name in ("busy_us", "active_us", "host_wait_us", "queued_us", "busy_pct", "host_wait_pct"):
        assert getattr(padded.launched, name) == pytest.approx(getattr(plain.launched, name)), name


def queue_filling() -> dict:
    """One step [0, 20]: the host launches four 100 us kernels in 20 us (calls [0, 3], [5, 8],
    [10, 13], [15, 18]); the GPU runs them at 10, 111, 212 and 313, 1 us apart."""
    w = TraceWriter()
    w.host_event("user_annotation", "ProfilerStep#1", 0, 20)
    for n in range(4):
        w.launch(5 * n, 3, [("kernel", GEMM, 10 + 101 * n, 100, 7)])
    w.host_event("cuda_runtime", "cudaDeviceSynchronize", 20, 395)
    return w.trace()


def test_queued_work_with_long_launch_delays_is_gpu_bound():
    result = facts(build_trace(queue_filling()))
    (step,) = result.steps
    # The step's time window [0, 20] holds 10 us of the GPU's 400 (50%), after the GPU waited for
    # the host [0, 3] and sat stalled [3, 10] with K0 launched: not GPU-bound, the GPU idled half
    # of it.
    assert step.window_busy_pct == pytest.approx(100 * 10 / 20)
    assert (step.time_split.host_wait_us, step.time_split.stalled_us) == pytest.approx((3, 7))
    assert step.verdict.label == "mixed"
    # The work it launched kept the GPU busy: K0 idle [0, 10], host wait 3 and queued 7; K1-K3
    # 1 us each after the previous kernel, long after their calls returned: queued.
    launched = step.launched
    assert (launched.busy_us, launched.host_wait_us, launched.queued_us) == pytest.approx((400, 3, 10))
    assert (launched.start_us, launched.end_us) == (10, 413)
    # Delays: 10 - 3, 111 - 8, 212 - 13, 313 - 18; the median by nearest rank is the second.
    assert step.launches.delay_p50_us == pytest.approx(103)
    # The whole trace [0, 415]: busy 400; stalled [3, 10] and the three 1 us gaps between the
    # kernels; waiting for the host [0, 3] and, after the last kernel, [413, 415].
    window = result.window
    split = window.time_split
    assert (split.busy_us, split.host_wait_us, split.stalled_us) == pytest.approx((400, 5, 10))
    assert window.verdict.label == "GPU-bound"
    assert window.verdict.reason == (  # 400 / 415 = 96.4%, 5 / 415 = 1.2%, 10 / 415 = 2.4%
        "the GPU was busy 96.4% of the window (415 us), idle waiting for the host 1.2%, stalled "
        "2.4%; median launch delay 103 us: the GPU's own work set the pace")


def test_neither_dominates_mixed():
    """Three 30 us kernels: K0 call [0, 2] runs [4, 34]; K1 call [20, 22] runs [40, 70] (queued
    6 us behind K0); K2 call [100, 102] runs [104, 134] (the GPU idle since 70)."""
    w = TraceWriter()
    for call, start in ((0, 4), (20, 40), (100, 104)):
        w.launch(call, 2, [("kernel", GEMM, start, 30, 7)])
    window = facts(build_trace(w.trace())).window
    launched = window.launched
    # Host wait: K0 [0, 2], K2 [70, 102]; queued: K0 [2, 4], K1 [34, 40], K2 [102, 104].
    assert (launched.busy_us, launched.host_wait_us, launched.queued_us) == pytest.approx((90, 34, 10))
    # The time window [0, 134] is the same span: stalled where a launched kernel had not started
    # ([2, 4], K1 from its return at 22, but the GPU busy with K0 until 34: [34, 40], [102, 104]).
    split = window.time_split
    assert (split.busy_us, split.host_wait_us, split.stalled_us) == pytest.approx((90, 34, 10))
    assert window.verdict.label == "mixed"  # host wait 34 / 134 = 25.4%, busy 90 / 134 = 67.2%
    assert window.verdict.reason.startswith(
        "the GPU was busy 67.2% of the window (134 us), idle waiting for the host 25.4%, stalled "
        "7.5%")
    assert window.verdict.reason.endswith(": neither the host nor the GPU's work dominates")


def test_a_gap_on_one_stream_while_another_runs_is_not_idle_time():
    w = TraceWriter()
    w.launch(0, 2, [("kernel", GEMM, 5, 100, 7)])
    w.launch(3, 2, [("kernel", "side_kernel", 10, 5, 20)])
    w.launch(200, 2, [("kernel", "late_kernel", 50, 5, 20)])  # stream 20 idles 35 us, the GPU not
    launched = facts(build_trace(w.trace())).window.launched
    assert launched.busy_us == pytest.approx(100)
    assert launched.host_wait_us + launched.queued_us == pytest.approx(5)  # before the first: [0, 5]


def spilling_steps() -> dict:
    """Four 50 us steps. Steps 1 to 3 each launch one 80 us GEMM at 5 us into the step (call
    [5, 10]); the GPU runs them back to back, 1 us apart: [12, 92], [93, 173], [174, 254]. Step 4
    launches nothing and waits in cudaDeviceSynchronize [160, 255]."""
    w = TraceWriter()
    for k, start in enumerate((12, 93, 174)):
        step = 50 * k
        w.host_event("user_annotation", f"ProfilerStep#{k + 1}", step, 50)
        w.launch(step + 5, 5, [("kernel", GEMM, start, 80, 7)])
    w.host_event("user_annotation", "ProfilerStep#4", 150, 150)
    w.host_event("cuda_runtime", "cudaDeviceSynchronize", 160, 95)
    return w.trace()


def test_steps_own_the_work_they_launched_wherever_it_ran():
    s1, s2, s3, s4 = facts(build_trace(spilling_steps())).steps
    # Launched-work view: each step its own GEMM.
    assert [s.launched.busy_us for s in (s1, s2, s3)] == pytest.approx([80, 80, 80])
    assert [(s.launched.start_us, s.launched.end_us) for s in (s1, s2, s3)] == [(12, 92), (93, 173), (174, 254)]
    # Idle before each: G1 [5, 12], its call returned at 10: host wait 5, queued 2; G2 and G3
    # 1 us after the previous GEMM, their calls long returned: queued.
    assert [t for s in (s1, s2, s3) for t in (s.launched.host_wait_us, s.launched.queued_us)] == pytest.approx(
        [5, 2, 0, 1, 0, 1])
    assert [s.launches.delay_p50_us for s in (s1, s2, s3)] == pytest.approx([2, 33, 64])
    assert s3.launched.start_us > s3.end_us  # step 3's GEMM starts after step 3 ended
    # Time-window view, which the verdict reads: what ran between the step's start and end,
    # whoever launched it. Step 1 [0, 50]: G1 from 12; step 2 [50, 100]: G1 to 92, G2 from 93;
    # step 3 [100, 150]: G2; step 4 [150, 300]: G2 to 173, G3 [174, 254].
    assert [s.window_busy_us for s in (s1, s2, s3, s4)] == pytest.approx([38, 49, 50, 103])
    # Stalled: step 1 [10, 12] (G1 returned at 10), step 2 [92, 93], step 4 [173, 174]; waiting
    # for the host: step 1 [0, 10], step 4 after G3 [254, 300] (it launched nothing).
    assert [t for s in (s1, s2, s3, s4) for t in (s.time_split.host_wait_us, s.time_split.stalled_us)] == (
        pytest.approx([10, 2, 0, 1, 0, 0, 46, 1]))
    assert [s.verdict.label for s in (s1, s2, s3, s4)] == ["mixed", "GPU-bound", "GPU-bound", "mixed"]
    assert s4.launched is None
    assert s4.verdict.reason == ("the GPU was busy 68.7% of the window (150 us), idle waiting for "
                                 "the host 30.7%, stalled 0.7%: neither the host nor the GPU's work "
                                 "dominates")  # 103 / 150, 46 / 150, 1 / 150
    table = summary_text(facts(build_trace(spilling_steps())))
    assert "per ProfilerStep:" in table and table.count("GPU-bound") >= 2


def test_steady_step_skips_the_first_and_takes_the_median():
    def steps(*durations):
        w = TraceWriter()
        start = 0.0
        for number, dur in durations:
            w.host_event("user_annotation", f"ProfilerStep#{number}", start, dur)
            start += dur
        return build_trace(w.trace())

    assert steady_step(steps((1, 1000), (2, 50), (3, 70), (4, 60))) == 4  # 50, 60, 70 -> 60
    assert steady_step(steps((1, 1000), (2, 50), (3, 70))) == 2  # the shorter middle one
    assert steady_step(steps((5, 900), (6, 40))) == 6  # the first is the warm-up
    assert steady_step(steps((7, 30))) == 7
    assert steady_step(build_trace(TraceWriter().trace())) is None
