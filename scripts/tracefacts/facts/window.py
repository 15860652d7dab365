"""The facts of one window (`window_facts`), read out of a trace's index
(scripts/tracefacts/facts/index.py): busy time in the window, the work launched in it and the GPU's idle time before it, HTA's
temporal and idle breakdowns, launch statistics, the top GPU activities and the verdict.
"""

from __future__ import annotations

import heapq
import math
from bisect import bisect_left, bisect_right
from collections import Counter, deque
from dataclasses import dataclass
from functools import reduce
from array import array
from itertools import compress, repeat
from operator import add, and_, call, ge, lt, sub

from .terms import (GAP_MIN_US, GPU_BOUND, HTA_LAUNCH_APIS, MIXED, NO_GPU, OVERHEAD_BOUND,
                    STALLED, TOP_KERNELS, WIDEST_GAPS, Gap, KernelStat, LaunchedWork, LaunchStats,
                    StreamIdle, TemporalBreakdown, TimeSplit, Verdict, WindowFacts,
                    WorkClassShare, pace)
from .index import GAP_CATEGORIES, TraceIndex, kept, rows_by
from .text import _ms
from ..model.intervals import Merged, covered, union_of_arrays
from ..model.names import bounded
from ..model.columnar.orders import has_nan
from ..model.columnar.rows import taken_all
from ..model.trace import Trace, Window

def window_facts(index: TraceIndex, window: Window, top: int | None = TOP_KERNELS) -> WindowFacts:
    """The facts of one window; `top` kernels are listed (0 for none, None for all), and unless
    `top` is 0 the WIDEST_GAPS widest gaps."""
    lo, hi = index.placed_range(window)
    starts, ends, kinds = index.starts[lo:hi], index.ends[lo:hi], index.kinds.codes[lo:hi]
    merged = _union_of_range(index, lo, hi, starts, ends)
    n_gpus = max(len(index.devices), 1)
    busy = sum((covered(index.busy_by_device[device], window.start, window.end)
                for device in index.busy_devices(window)), 0.0)
    cpu_work = covered(index.host_work, window.start, window.end)
    cpu_wait = covered(index.host_wait, window.start, window.end)
    busy_pct = _pct(busy, window.dur * n_gpus)
    launched = _launched_work(index, lo, hi, merged, WIDEST_GAPS if top != 0 else 0)
    launches = _launch_stats(index, window)
    split = time_split(index, window, busy) if index.trace.has_gpu_activity else None
    totals = _name_totals(index, lo, hi) if top != 0 else {}
    return WindowFacts(
        label=window.label,
        start_us=window.start,
        end_us=window.end,
        dur_us=window.dur,
        window_busy_us=busy,
        window_busy_pct=busy_pct,
        launched=launched,
        cpu_busy_us=cpu_work - cpu_wait,
        cpu_busy_pct=_pct(cpu_work - cpu_wait, window.dur),
        cpu_wait_us=cpu_wait,
        temporal_breakdown=_temporal_breakdown(window.label, starts, ends,
                                               _is_compute(index, kinds), merged,
                                               index if hi - lo == len(index.starts) else None),
        idle_by_stream=_idle_by_stream(index, window),
        launches=launches,
        activities_by_kind=dict(Counter(index.event_kinds[lo:hi])),
        kernels_by_kind={index.kinds.values[code]: count for code, count in Counter(kinds).items()},
        top_kernels=_top_of(totals, top) if top != 0 else [],
        verdict=verdict(index.trace.has_gpu_activity, split, launches),
        time_split=split,
        work_classes=_work_classes(totals),
    )


def _pct(part: float, whole: float) -> float:
    return 100.0 * part / whole if whole > 0 else 0.0


@dataclass
class _Union:
    """The union of some activities, with their span (which zero-length ones also extend)."""

    intervals: Merged
    start: float
    end: float

    @property
    def busy(self) -> float:
        starts, ends = self.intervals
        return sum(map(sub, ends, starts))


def _union_of(starts: list[float], ends: list[float]) -> _Union | None:
    if not starts:
        return None
    return _Union(union_of_arrays(starts, ends), min(starts), max(ends))


def _union_of_range(index: TraceIndex, lo: int, hi: int, starts, ends) -> _Union | None:
    """`_union_of` the activities [lo, hi) of the index: of all of them on one GPU, that GPU's
    busy intervals, which the index holds already (the same union of the same columns)."""
    if lo == 0 and hi == len(index.starts) and len(index.busy_by_device) == 1 and starts:
        return _Union(next(iter(index.busy_by_device.values())), min(starts), max(ends))
    return _union_of(starts, ends)


def _launched_work(index: TraceIndex, lo: int, hi: int, merged: _Union | None, widest: int
                   ) -> LaunchedWork | None:
    """The launched-work view of the activities [lo, hi) of the index, with its `widest` widest
    gaps; `merged` is their union over all GPUs (their busy time is per GPU, summed)."""
    if merged is None:
        return None
    if len(index.devices) > 1:
        devices, starts, ends = index.device_of[lo:hi], index.starts[lo:hi], index.ends[lo:hi]
        # Each device's rows found in one pass, not a pass over the rows for each device.
        rows = rows_by(index.device_of.with_codes(index.device_of.codes[lo:hi]))
        busy = sum(_union_of(*taken_all([starts, ends], rows[device])).busy
                   for device in set(devices))
    else:
        busy = merged.busy
    host_wait = sum(index.idle_host_wait[lo:hi])
    queued = sum(index.idle_queued[lo:hi])
    other = sum(index.idle_other[lo:hi])
    idle = _idle(index, lo, hi)
    active = busy + host_wait + queued + other
    return LaunchedWork(
        activities=hi - lo,
        start_us=merged.start,
        end_us=merged.end,
        span_us=merged.end - merged.start,
        busy_us=busy,
        active_us=active,
        host_wait_us=host_wait,
        queued_us=queued,
        other_us=other,
        busy_pct=_pct(busy, active),
        host_wait_pct=_pct(host_wait, active),
        queued_pct=_pct(queued, active),
        other_pct=_pct(other, active),
        gaps=sum(map(ge, idle, repeat(GAP_MIN_US))),
        widest_gaps=_widest_gaps(index, lo, idle, widest),
    )


def _widest_gaps(index: TraceIndex, lo: int, idle: array, count: int) -> list[Gap]:
    """The `count` longest idle times before the activities [lo, lo + len(idle)) (`idle`: the
    GPU's before each), longest first (the earlier one of equal lengths first)."""
    if not count:
        return []
    rows: range | list = range(lo, lo + len(idle))
    if not has_nan(idle):  # only rows of the count-th widest idle or more
        least = heapq.nlargest(count, idle)[-1:]
        rows = list(compress(rows, map(ge, idle, repeat(least[0])))) if least else []
    widest = heapq.nsmallest(count, rows, key=lambda i: (-idle[i - lo], index.starts[i]))
    return [Gap(device=index.device_of[i], start_us=index.starts[i] - idle[i - lo],
                end_us=index.starts[i], dur_us=idle[i - lo], host_wait_us=index.idle_host_wait[i],
                queued_us=index.idle_queued[i], other_us=index.idle_other[i],
                next_activity=index.names[i])
            for i in widest if idle[i - lo] > 0]


def _idle(index: TraceIndex, lo: int, hi: int) -> array:
    """The GPU's idle time before each of the activities [lo, hi), all causes: made for the
    window asked (a column of them all would hold 8 bytes an activity more)."""
    return array("d", map(add, map(add, index.idle_host_wait[lo:hi], index.idle_queued[lo:hi]),
                          index.idle_other[lo:hi]))


def _is_compute(index: TraceIndex, codes) -> bytes:
    """Whether each activity of these codes of `index.kinds` is compute, a byte each (not a list
    of their kinds, 8 bytes an activity)."""
    code = index.kinds._code.get("compute")
    return bytes(len(codes)) if code is None else bytes(map(code.__eq__, codes))


def _temporal_breakdown(scope: str, starts: list[float], ends: list[float], compute: bytes,
                        merged: _Union | None = None, whole: TraceIndex | None = None
                        ) -> TemporalBreakdown | None:
    """HTA's temporal breakdown of the activities with these times, `compute` whether each is of
    that kind (None without any, or when they all take no time); `merged` is their union when
    the caller has it (then of those it chose, `compute` choosing among them too). `whole`: the
    index, where these are all its activities (the union of the compute ones kept on it: the
    whole trace's window and HTA's scope, where it keeps them all, ask for the same)."""
    merged = _union_of(starts, ends) if merged is None else merged
    if merged is None or merged.end <= merged.start:
        return None
    span = merged.end - merged.start
    busy = merged.busy
    found = None if whole is None else whole.compute_union
    if found is None:
        found = union_of_arrays(
            *((starts, ends) if all(compute) else (kept(starts, compute), kept(ends, compute))))
        if whole is not None:
            whole.compute_union = found
    compute_starts, compute_ends = found
    compute = sum(map(sub, compute_ends, compute_starts))
    idle = span - busy
    return TemporalBreakdown(
        scope=scope,
        kernel_time_us=span,
        idle_us=idle,
        compute_us=compute,
        non_compute_us=span - idle - compute,
        idle_pct=_pct(idle, span),
        compute_pct=_pct(compute, span),
        non_compute_pct=_pct(span - idle - compute, span),
    )


def hta_scope_end(trace: Trace) -> float | None:
    """Where HTA stops by default: with two or more ProfilerSteps, it keeps the GPU activities
    launched before the latest start of a ProfilerStep row. That row is the last step's
    `gpu_user_annotation` when there is one (HTA takes it for a host row), so the cut falls at the
    last step's first GPU activity rather than at its start on the host. None: HTA keeps all."""
    rows = [e for kind in ("annotation", "gpu_annotation") for e in trace.by_kind.get(kind, [])
            if "ProfilerStep" in e.name]
    if len({e.name for e in rows}) < 2:
        return None
    return max(e.ts for e in rows)


def hta_scope_breakdown(index: TraceIndex) -> TemporalBreakdown | None:
    """The per-trace breakdown over the activities HTA keeps by default (see hta_scope_end)."""
    cut = hta_scope_end(index.trace)
    chosen = None if cut is None else bytes(  # launched before the cut, so placed before it
        map(and_, map(ge, index.launches, repeat(0)), map(lt, index.placed_times, repeat(cut))))
    if chosen is None or all(chosen):  # all of them: the whole trace's unions
        scope = "whole trace" if cut is None else _hta_scope(index)
        return _temporal_breakdown(scope, index.starts, index.ends,
                                   _is_compute(index, index.kinds.codes),
                                   _union_of_range(index, 0, len(index.starts),
                                                   index.starts, index.ends), index)
    # Their union from copies freed once it is made; the compute ones read of the index's columns.
    merged = _union_of(kept(index.starts, chosen), kept(index.ends, chosen))
    compute = bytes(map(and_, chosen, _is_compute(index, index.kinds.codes)))
    del chosen
    return _temporal_breakdown(_hta_scope(index), index.starts, index.ends, compute, merged)


def _hta_scope(index: TraceIndex) -> str:
    return f"launched before {bounded(index.trace.steps[-1].name)} began (HTA drops the last step)"


def _idle_by_stream(index: TraceIndex, window: Window) -> list[StreamIdle]:
    lo, hi = bisect_left(index.gap_times, window.start), bisect_left(index.gap_times, window.end)
    codes, durs = index.gap_codes[lo:hi], index.gap_durs[lo:hi]
    # Sum the gaps of each stream and category in placing order: of a few codes, a pass over the
    # codes for each (C loops, no list of an int object a gap); of many, a stable sort by code.
    found = set(codes)
    totals = {}  # code -> (gaps, total us)
    if len(found) <= _FEW_CODES:
        for code in found:
            totals[code] = (codes.count(code), sum(compress(durs, map(code.__eq__, codes))))
    else:
        order = sorted(range(hi - lo), key=codes.__getitem__)
        sorted_codes = list(map(codes.__getitem__, order))
        for code in found:
            first, last = bisect_left(sorted_codes, code), bisect_right(sorted_codes, code)
            totals[code] = (last - first, sum(map(durs.__getitem__, order[first:last])))
        del order, sorted_codes
    rows = []
    # The streams in order of their first gap: of the codes (a byte or two a gap, not a list).
    keys = index.gap_keys
    first_seen = map(keys.values.__getitem__, dict.fromkeys(keys.codes[lo:hi]))
    for device, stream in sorted(first_seen, key=lambda key: (str(key[0]), str(key[1]))):
        base = 3 * index.stream_numbers[(device, stream)]
        (n_host, host), (n_kernel, kernel), (n_other, other) = (
            totals.get(base + i, (0, 0)) for i in range(len(GAP_CATEGORIES)))
        idle = host + kernel + other
        rows.append(StreamIdle(
            device=device, stream=stream, gaps=n_host + n_kernel + n_other, idle_us=idle,
            host_wait_us=host, kernel_wait_us=kernel, other_us=other,
            host_wait_pct=_pct(host, idle), kernel_wait_pct=_pct(kernel, idle),
            other_pct=_pct(other, idle),
        ))
    return rows


_FEW_CODES = 64  # the most codes of gaps (3 a stream) summed by a pass over them each


def _launch_stats(index: TraceIndex, window: Window) -> LaunchStats:
    lo = bisect_left(index.launch_times, window.start)
    hi = bisect_left(index.launch_times, window.end)
    delays = sorted(index.launch_delays[lo:hi])
    calls = sorted(index.call_durs[lo:hi])
    by_api = Counter(index.call_names[lo:hi])
    return LaunchStats(
        launches=len(delays),
        delay_mean_us=sum(delays) / len(delays) if delays else None,
        delay_p50_us=_percentile(delays, 50),
        delay_p90_us=_percentile(delays, 90),
        delay_max_us=delays[-1] if delays else None,
        call_p50_us=_percentile(calls, 50),
        by_api=dict(by_api.most_common()),
        hta_counts=sum(n for api, n in by_api.items() if api in HTA_LAUNCH_APIS),
    )


def _percentile(ordered: list[float], pct: float) -> float | None:
    """Nearest-rank percentile of an ordered list."""
    if not ordered:
        return None
    return ordered[max(math.ceil(pct / 100 * len(ordered)) - 1, 0)]


def top_kernels(index: TraceIndex, lo: int, hi: int,
                top: int = TOP_KERNELS) -> list[KernelStat]:
    """The GPU activities (index columns [lo, hi)) with the most total time, by name."""
    return _top_of(_name_totals(index, lo, hi), top)


def _name_totals(index: TraceIndex, lo: int, hi: int) -> dict[str, list]:
    """name -> [count, total us, kind, work class] of the GPU activities [lo, hi) of the index,
    names in order of their first row."""
    # Each name's durations in row order, by its code (one append a row at C speed, not a line
    # of Python; in arrays, 8 bytes a row), summed in that order from 0.0 (as `total += dur`
    # would); its kind and class, its first row's.
    codes, kinds = index.names.codes[lo:hi], index.kinds.codes[lo:hi]
    classes = index.work_classes.codes[lo:hi]
    found = {code: array("d") for code in dict.fromkeys(codes)}
    deque(map(call, map({code: durs.append for code, durs in found.items()}.__getitem__, codes),
              index.durs[lo:hi]), 0)
    first_kind: dict = {}
    deque(map(first_kind.setdefault, codes, kinds), 0)
    first_class: dict = {}
    deque(map(first_class.setdefault, codes, classes), 0)
    return {index.names.values[code]: [len(durs), reduce(add, durs, 0.0),
                                        index.kinds.values[first_kind[code]],
                                        index.work_classes.values[first_class[code]]]
            for code, durs in found.items()}


def _top_of(totals: dict[str, list], top: int | None) -> list[KernelStat]:
    all_time = sum(entry[1] for entry in totals.values())
    ranked = sorted(totals.items(), key=lambda kv: (-kv[1][1], kv[0]))[:top]
    return [KernelStat(name, kind, count, total, total / count, _pct(total, all_time), work)
            for name, (count, total, kind, work) in ranked]


def _work_classes(totals: dict[str, list]) -> list[WorkClassShare]:
    """The activities' time by work class, the most first (shares of all their time)."""
    by_class: dict[str, list] = {}
    for count, total, _, work in totals.values():
        entry = by_class.setdefault(work, [0, 0.0])
        entry[0] += count
        entry[1] += total
    all_time = sum(entry[1] for entry in by_class.values())
    return [WorkClassShare(work, count, total, _pct(total, all_time))
            for work, (count, total) in sorted(by_class.items(), key=lambda kv: (-kv[1][1], kv[0]))]


def time_split(index: TraceIndex, window: Window, busy: float) -> TimeSplit:
    """The window's GPU time (its length times the GPUs) split into busy (`busy`, the GPU busy
    time clipped to it), stalled and unattributed idle time (the index's, clipped to it) and
    waiting for the host: the rest."""
    span = window.dur * max(len(index.devices), 1)
    # Only the devices with such idle time in the window: any other's is 0.0, which the sum
    # (in the devices' order, as before) leaves out unchanged.
    stalled = sum((covered(index.stalled_by_device[d], window.start, window.end)
                   for d in index.idle_devices("stalled", window)), 0.0)
    unattributed = sum((covered(index.unattributed_by_device[d], window.start, window.end)
                        for d in index.idle_devices("unattributed", window)), 0.0)
    host_wait = max(span - busy - stalled - unattributed, 0.0)
    hidden = (bisect_left(index.hidden_launch_times, window.end)
              - bisect_left(index.hidden_launch_times, window.start))
    return TimeSplit(span, busy, host_wait, stalled, unattributed, _pct(busy, span),
                     _pct(host_wait, span), _pct(stalled, span), _pct(unattributed, span), hidden)


_PACE = {OVERHEAD_BOUND: "the host set the pace", GPU_BOUND: "the GPU's own work set the pace",
         STALLED: "the GPU sat idle with work already launched",
         MIXED: "neither the host nor the GPU's work dominates"}


def verdict(has_gpu_activity: bool, split: TimeSplit | None,
            launches: LaunchStats | None = None) -> Verdict:
    """Who set the pace of the window (terms.pace, from the shares of its time split), with the
    shares it was decided from as its reason; the launch delays only make the reason more
    precise. No GPU activity: the trace has none, or in the window the GPU was neither busy nor
    stalled."""
    if not has_gpu_activity or split is None:
        return Verdict(NO_GPU, "the trace has no kernel, memcpy or memset: only host facts apply")
    s = split
    if s.busy_us <= 0 and s.stalled_us <= 0:
        return Verdict(NO_GPU, "the GPU was neither busy nor waiting to start launched work in "
                               "this window")
    label = pace(s.busy_pct, s.host_wait_pct, s.stalled_pct)
    # One decimal, as `pace` reads them: a share shown as 50.0% is on the side it says.
    shares = f"waiting for the host {s.host_wait_pct:.1f}%, stalled {s.stalled_pct:.1f}%"
    if s.unattributed_us > 0:
        shares += f", before activities with no launch call {s.unattributed_pct:.1f}%"
    hidden = ""
    if s.hidden_launches:
        hidden = (f"; {s.hidden_launches} launch call{'s' if s.hidden_launches > 1 else ''} here "
                  "handed the GPU work the trace does not show (stalled until it ran)")
    delay = ""
    if launches is not None and launches.delay_p50_us is not None:
        delay = f"; median launch delay {_ms(launches.delay_p50_us)}"
    return Verdict(label, f"the GPU was busy {s.busy_pct:.1f}% of the window ({_ms(s.span_us)}), "
                   f"idle {shares}{hidden}{delay}: {_PACE[label]}")

