"""The facts engine against numbers worked out by hand on tiny traces (tests/fixtures/handmade.py
draws the reference trace), and the verdict's thresholds."""

from __future__ import annotations

import json
import random
from array import array
from operator import add

import pytest

from scripts.tracefacts.facts import analysis
from scripts.tracefacts.model import intervals
from scripts.tracefacts.model.columnar import rows as oprows, orders
from scripts.tracefacts.facts.analysis import (
    TimeSplit,
    facts,
    kernel_kind,
    short_name,
    summary_text,
    verdict,
)
from scripts.tracefacts.model.trace import TraceError, Window, build_trace
from tests.fixtures.handmade import GEMM, NCCL, TRITON, cuda_graph, two_gpus, two_steps


@pytest.fixture(scope="module")
def reference():
    return facts(build_trace(two_steps(), source="two_steps.json"))


def test_gpu_busy_is_the_union_of_activities_not_annotations(reference):
    window = reference.window
    assert (window.start_us, window.end_us) == (0, 200)
    # K1 30 + K2 10 + memcpy 5 + K4 40 (K5 runs inside K4); the gpu_user_annotation adds nothing.
    assert window.window_busy_us == pytest.approx(85)
    assert window.window_busy_pct == pytest.approx(42.5)
    launched = window.launched
    assert (launched.start_us, launched.end_us, launched.span_us) == (20, 160, 140)
    assert launched.busy_us == pytest.approx(85) and launched.activities == 5


def test_launched_work_splits_the_gpu_idle_time_by_cause(reference):
    # The GPU's idle time before each activity, whatever its stream: K1 is the GPU's first, so
    # only from its launch call's start: [10, 20], the call returned at 15: host wait 5, queued
    # 5. K2 [70]: idle since K1 ended at 50, its call returned at 65: host wait 15, queued 5.
    # Memcpy [85]: idle since 80, its call returned at 70: queued 5. K4 [120]: idle since 90,
    # call returned at 115: host wait 25, queued 5. K5 [130] runs inside K4: no idle time.
    launched = reference.window.launched
    assert (launched.host_wait_us, launched.queued_us, launched.other_us) == pytest.approx((45, 20, 0))
    assert launched.active_us == pytest.approx(85 + 65)
    assert (launched.busy_pct, launched.host_wait_pct, launched.queued_pct) == pytest.approx(
        (100 * 85 / 150, 100 * 45 / 150, 100 * 20 / 150))
    step1, step2 = reference.steps
    assert (step1.launched.busy_us, step1.launched.host_wait_us, step1.launched.queued_us) == pytest.approx((45, 20, 15))
    assert (step2.launched.busy_us, step2.launched.host_wait_us, step2.launched.queued_us) == pytest.approx((40, 25, 5))


def test_temporal_breakdown_of_the_whole_trace(reference):
    b = reference.window.temporal_breakdown
    assert b.kernel_time_us == pytest.approx(140)
    assert b.idle_us == pytest.approx(55)
    assert b.compute_us == pytest.approx(80)  # K1, K2, K4; the memcpy is memory, K5 communication
    assert b.non_compute_us == pytest.approx(5)
    assert (b.idle_pct, b.compute_pct, b.non_compute_pct) == pytest.approx(
        (100 * 55 / 140, 100 * 80 / 140, 100 * 5 / 140))


def test_per_trace_breakdown_drops_the_last_step_as_hta_does(reference):
    b = reference.temporal_breakdown
    assert "ProfilerStep#2" in b.scope
    # K1, K2 and the memcpy: span [20, 90], busy 45.
    assert (b.kernel_time_us, b.idle_us, b.compute_us) == pytest.approx((70, 25, 40))


def test_idle_by_stream_categories(reference):
    (stream7,) = reference.window.idle_by_stream  # stream 20 has one activity: no gap
    assert (stream7.device, stream7.stream, stream7.gaps) == (0, 7, 3)
    # K1->K2: launch at 60 after K1 ended at 50: host wait 20. K2->memcpy: launched at 66, before
    # K2 ended, gap 5 < 30 us: kernel wait. memcpy->K4: launch at 110 after 90: host wait 30.
    assert (stream7.host_wait_us, stream7.kernel_wait_us, stream7.other_us) == pytest.approx((50, 5, 0))
    assert stream7.host_wait_pct == pytest.approx(100 * 50 / 55)


def test_a_long_gap_after_an_early_launch_is_other():
    trace = two_steps()
    for event in trace["traceEvents"]:
        if event["name"] == "Memcpy HtoD (Pageable -> Device)":
            event["ts"] = 80 + analysis.KERNEL_WAIT_US + 10  # launched at 66, ran 40 us after K2
    (stream7,) = facts(build_trace(trace)).window.idle_by_stream
    assert stream7.other_us == pytest.approx(analysis.KERNEL_WAIT_US + 10)


def test_launch_delays_count_every_launch_api(reference):
    launches = reference.window.launches
    # delays: 20-15, 70-65, 85-70, 120-115, 130-118
    assert launches.launches == 5
    assert (launches.delay_p50_us, launches.delay_p90_us, launches.delay_max_us) == (5, 15, 15)
    assert launches.delay_mean_us == pytest.approx(42 / 5)
    assert launches.by_api == {"cudaLaunchKernel": 3, "cudaMemcpyAsync": 1, "cuLaunchKernel": 1}
    assert launches.hta_counts == 4  # HTA does not know cuLaunchKernel
    assert launches.call_p50_us == 5


def test_cuda_graph_launch_has_one_delay_from_its_first_kernel():
    window = facts(build_trace(cuda_graph())).window
    assert window.launches.launches == 1
    assert window.launches.delay_max_us == 2  # first kernel at 12, the launch ended at 10
    assert window.activities_by_kind == {"kernel": 3}
    # All three kernels share the launch's correlation: none of the gaps is host wait.
    (stream,) = window.idle_by_stream
    assert (stream.host_wait_us, stream.kernel_wait_us) == (0, 10)


def test_cpu_busy_excludes_time_blocked_on_the_gpu(reference):
    window = reference.window
    # Work: [8,18] [58,72] [105,120] [170,195] = 64 us, of which the synchronize (25) is waiting.
    assert window.cpu_wait_us == pytest.approx(25)
    assert window.cpu_busy_us == pytest.approx(39)
    step1, step2 = reference.steps
    assert (step1.cpu_busy_us, step2.cpu_busy_us, step2.cpu_wait_us) == pytest.approx((24, 15, 25))


def test_steps_place_activities_by_their_launch(reference):
    step1, step2 = reference.steps
    assert (step1.label, step2.label) == ("ProfilerStep#1", "ProfilerStep#2")
    assert step1.window_busy_pct == pytest.approx(45) and step2.window_busy_pct == pytest.approx(40)
    assert step2.activities_by_kind == {"kernel": 2}
    assert step2.kernels_by_kind == {"compute": 1, "communication": 1}
    assert step2.temporal_breakdown.idle_pct == 0
    (gap,) = step2.idle_by_stream  # the gap before K4 belongs to the step that launched K4
    assert gap.host_wait_us == pytest.approx(30)
    assert [s.launches.launches for s in reference.steps] == [3, 2]


def test_top_kernels_rank_by_total_time(reference):
    top = reference.window.top_kernels
    assert [k.name for k in top] == [TRITON, GEMM, NCCL, top[3].name, top[4].name]
    assert top[0].share_pct == pytest.approx(100 * 40 / 105)
    assert (top[0].count, top[0].kind, top[2].kind) == (1, "compute", "communication")
    assert reference.steps[0].top_kernels == []


def test_window_and_step_arguments_pick_the_described_window():
    trace = build_trace(two_steps())
    assert facts(trace, step=2).window.label == "ProfilerStep#2"
    by_range = facts(trace, window=(0, 100)).window
    assert by_range.window_busy_us == pytest.approx(45)
    assert facts(trace, window=Window(0, 100, "first half")).window.label == "first half"
    with pytest.raises(TraceError, match="no ProfilerStep#7"):
        facts(trace, step=7)


def test_busy_is_averaged_over_the_gpus_of_one_process():
    result = facts(build_trace(two_gpus()))
    assert result.window.window_busy_pct == pytest.approx(100 * 75 / 200)
    # Launched work: busy per GPU, summed; GPU 1's first kernel waited from its launch call [1, 2]
    # to 50: host wait 1, queued 48 (its launch had returned).
    launched = result.window.launched
    assert (launched.busy_us, launched.host_wait_us, launched.queued_us) == pytest.approx((75, 1, 48))
    assert result.window.temporal_breakdown.idle_us == 0  # merged, as HTA merges one file's GPUs
    assert any("2 GPUs" in note for note in result.notes)


def test_cpu_only_trace_gives_host_facts_and_says_so():
    trace = {"traceEvents": [
        {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#0", "pid": 1, "tid": 1, "ts": 0, "dur": 50},
        {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 10, "dur": 20},
    ]}
    result = facts(build_trace(trace))
    assert not result.has_gpu_activity
    assert result.window.verdict.label == analysis.NO_GPU
    assert result.window.cpu_busy_pct == pytest.approx(40)
    assert result.temporal_breakdown is None and result.window.launched is None
    assert "no GPU activity" in summary_text(result)


def test_kernel_kinds_follow_hta_names_and_memcpy_rows_are_memory():
    assert kernel_kind(NCCL) == "communication"
    assert kernel_kind("Memcpy DtoD (Device -> Device)", "memcpy") == "memory"
    assert kernel_kind("CopyDeviceToDevice", "memcpy") == "memory"  # ROCm's memcpy name
    assert kernel_kind("Event Sync") == "other"  # HTA's 'Sync' rule
    assert kernel_kind(GEMM) == "compute"


def _split(busy: float, host_wait: float, stalled: float, unattributed: float = 0.0) -> TimeSplit:
    """A window's time split with these times (us), its shares of their sum."""
    span = busy + host_wait + stalled + unattributed
    return TimeSplit(span, busy, host_wait, stalled, unattributed,
                     *(100 * t / span for t in (busy, host_wait, stalled, unattributed)))


@pytest.mark.parametrize(("busy", "host_wait", "stalled", "unattributed", "label"), [
    (100 - analysis.OVERHEAD_BOUND_MIN_HOST_WAIT_PCT, analysis.OVERHEAD_BOUND_MIN_HOST_WAIT_PCT, 0, 0,
     "overhead-bound"),
    (100.1 - analysis.OVERHEAD_BOUND_MIN_HOST_WAIT_PCT, analysis.OVERHEAD_BOUND_MIN_HOST_WAIT_PCT - 0.1, 0, 0,
     "mixed"),
    (100 - analysis.STALLED_MIN_STALLED_PCT, 0, analysis.STALLED_MIN_STALLED_PCT, 0, "stalled"),
    (analysis.GPU_BOUND_MIN_BUSY_PCT, 0, 100 - analysis.GPU_BOUND_MIN_BUSY_PCT, 0, "GPU-bound"),
    (analysis.GPU_BOUND_MIN_BUSY_PCT - 0.1, 0, 100.1 - analysis.GPU_BOUND_MIN_BUSY_PCT, 0,
     "mixed"),  # stalled behind its own work no longer counts with busy
    (analysis.GPU_BOUND_MIN_BUSY_PCT - 0.1, 0, 0, 100.1 - analysis.GPU_BOUND_MIN_BUSY_PCT,
     "mixed"),  # idle before activities with no known launch: not evidence either way
    (analysis.GPU_BOUND_MIN_BUSY_PCT - 0.04, 0, 100.04 - analysis.GPU_BOUND_MIN_BUSY_PCT, 0,
     "GPU-bound"),  # 79.96% is printed as 80.0%, and read as printed
])
def test_verdict_thresholds(busy, host_wait, stalled, unattributed, label):
    assert verdict(True, _split(busy, host_wait, stalled, unattributed)).label == label


def test_verdict_without_gpu_work():
    assert verdict(False, None).label == analysis.NO_GPU
    idle = verdict(True, _split(0, 100, 0))  # the GPU neither busy nor stalled in the window
    assert idle.label == analysis.NO_GPU and "neither busy nor waiting" in idle.reason


def test_to_dict_is_json_ready_with_stable_keys(reference):
    data = reference.to_dict()
    assert list(data)[:7] == ["source", "rank", "gpus", "events", "duration_us",
                              "has_gpu_activity", "window"]
    assert data["window"]["window_busy_pct"] == 42.5
    assert data["window"]["verdict"]["label"] == "mixed"  # host wait 30% of 150 us, busy 57%
    assert json.loads(json.dumps(data)) == data
    assert data["window"]["launched"]["busy_pct"] == round(100 * 85 / 150, 2)


def test_summary_names_the_verdict_and_shortens_kernel_names(reference):
    text = summary_text(reference)
    assert "verdict: mixed" in text
    assert "at::native::vectorized_elementwise_kernel" in text and "CUDAFunctor_add" not in text
    assert short_name(NCCL) == "ncclDevKernel_AllReduce_Sum_f32_RING_LL"


def test_interval_unions_and_coverage_match_a_plain_sweep(monkeypatch):
    """The engine merges and measures intervals with whole-list operations; a plain loop over
    sorted intervals must give the same floats."""
    def plain_union(starts, ends):
        merged = []
        for start, end in sorted(zip(starts, ends)):
            if end <= start:
                continue
            if merged and start <= merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], end)
            else:
                merged.append([start, end])
        return [m[0] for m in merged], [m[1] for m in merged]

    def plain_covered(merged, start, end):
        total = 0.0
        for s, e in zip(*merged):
            if e > start and s < end:
                total += min(e, end) - max(s, start)
        return total

    rng = random.Random(3)
    for _ in range(3000):
        starts = [rng.choice([float(rng.randint(0, 30)), rng.uniform(0, 30)])
                  for _ in range(rng.randint(0, 12))]
        ends = [s + rng.choice([0.0, -1.0, 1.0, 2.5, rng.uniform(0, 6)]) for s in starts]
        merged = intervals.union_of_times(starts, ends)
        assert merged == plain_union(starts, ends)
        rows = sorted(zip(starts, ends))  # in trace order: union_of_rows' sweep
        assert intervals.union_of_rows(array("d", [s for s, _ in rows]),
                                       array("d", [e for _, e in rows])) == merged
        assert intervals.union_of_rows(starts, ends) == merged  # unsorted: as union_of_times
        for columns in ((starts, ends), (array("d", starts), array("d", ends))):
            assert tuple(map(list, intervals.union_of_arrays(*columns))) == merged
            assert tuple(map(list, intervals.union_of_columns(*columns))) == merged
        # From starts and durations (no column of ends): sorted or not, split into chunks.
        for columns in (rows, rows[::-1]):
            begins, durations = array("d", [s for s, _ in columns]), [e - s for s, e in columns]
            assert tuple(map(list, intervals.union_of_spans(begins, durations))) == \
                plain_union(begins, list(map(add, begins, durations)))
        # Merged runs in order, or sorted where more than sorted_values' limit (made small here).
        monkeypatch.setattr(orders, "_MERGED_RUNS", rng.choice([1, 2, 64]))
        monkeypatch.setattr(orders, "_CHUNK", rng.choice([1, 3, 1 << 16]))
        monkeypatch.setattr(orders, "_SAMPLE", rng.choice([1, 2, 64]))
        monkeypatch.setattr(orders, "SMALL", rng.choice([-1, -1, 1 << 18]))  # -1: never one sort
        monkeypatch.setattr(orders, "_FEW_BLOCKS", rng.choice([1, 4, 1 << 30]))  # 1: by blocks
        runs = [v for _ in range(rng.randint(1, 4))
                for v in sorted(rng.sample(starts, len(starts) // 2))]
        assert list(intervals.sorted_values(runs)) == sorted(runs)
        assert list(intervals.sorted_values(starts)) == sorted(starts)
        for _ in range(4):
            start = rng.uniform(-2, 32)
            end = start + rng.uniform(0, 12)
            assert intervals.covered(merged, start, end) == plain_covered(merged, start, end)


@pytest.mark.parametrize("streams", [3, 40], ids=["few_streams", "many_streams"])
def test_idle_by_stream_sums_each_streams_gaps_in_placing_order(streams):
    """Each stream's gaps counted and summed by category, in placing order (the same floats as
    a sum over each one's gaps in order), the streams by name: with few streams by a pass over
    the codes for each, with many by a sort, both against a scan of every gap."""
    from types import SimpleNamespace

    from scripts.tracefacts.facts.window import _idle_by_stream

    rng = random.Random(streams)
    keys = [(rng.choice([0, 1]), 7 + k) for k in range(streams)]
    numbers = {key: number for number, key in enumerate(keys)}
    n = 3000
    times = array("d", sorted(rng.uniform(0, 1000) for _ in range(n)))
    gap_keys = oprows.Coded()
    gap_keys.extend([rng.choice(keys) for _ in range(n)])
    codes = array("i", (3 * numbers[key] + rng.randrange(3) for key in gap_keys))
    durs = array("d", (rng.choice([rng.uniform(-1, 50), 0.1, 1e-9, 1e9]) for _ in range(n)))
    index = SimpleNamespace(gap_times=times, gap_codes=codes, gap_durs=durs, gap_keys=gap_keys,
                            stream_numbers=numbers)
    for start, end in ((0, 1001), (200, 700), (500, 500.5)):
        inside = [i for i in range(n) if start <= times[i] < end]
        expected = []
        for key in sorted(dict.fromkeys(gap_keys[i] for i in inside),
                          key=lambda k: (str(k[0]), str(k[1]))):
            parts = [[durs[i] for i in inside if codes[i] == 3 * numbers[key] + c] for c in range(3)]
            expected.append((key, sum(map(len, parts)), *map(sum, parts)))
        found = _idle_by_stream(index, Window(start, end, "w"))
        assert [((s.device, s.stream), s.gaps, s.host_wait_us, s.kernel_wait_us, s.other_us)
                for s in found] == expected
