"""Trace facts: what a torch.profiler trace says about GPU busy time, gaps, launches and kernels.

`facts(trace)` is the entry point; `summary_text(facts)` reads it out. Definitions follow Holistic
Trace Analysis (HTA 0.5.0) where HTA has one, so our numbers can be checked against it; the
places where we differ on purpose are listed in docs/guide/analyze-your-trace.md:

- GPU busy time is the union of kernel, memcpy and memset intervals (`gpu_user_annotation` rows
  span idle gaps, and synchronization rows are waits: neither is busy time).
- HTA's temporal breakdown: over the kernel span (first GPU activity start to last end), idle =
  span - busy, compute = union of compute kernels, non-compute = the rest. Kernel kinds by name,
  with HTA's regular expressions.
- HTA's idle breakdown per stream: each gap before an activity is host wait (its launch call
  began after the previous activity on the stream ended), else kernel wait (gap shorter than
  KERNEL_WAIT_US), else other.
- Launch delay: activity start - end of the runtime/driver call with the same correlation id,
  clipped at 0, for every launch API (HTA only knows four names).

Two views of a window. The time-window view (`window_busy_*`) clips GPU intervals to the window:
what the GPU did between its start and end, whoever launched it. The launched-work view
(`launched`, and every other GPU fact) takes the activities launched in the window, wherever they
ran: an activity belongs to the window in which its launch call started, as HTA assigns kernels to
iterations. The verdict comes from the launched work: its busy time and the GPU's idle time
before each of its activities, by cause (the GPU waited for the host, or the work was queued).
"""

from __future__ import annotations

import heapq
import math
import re
from array import array
from bisect import bisect_left, bisect_right
from collections import Counter, defaultdict
from dataclasses import asdict, dataclass, field
from itertools import accumulate, compress, repeat
from operator import add, and_, attrgetter, eq, ge, gt, is_not, lt, sub

from .intervals import Merged, covered, intersection, union_of_rows, union_of_times
from .trace import LAUNCH_KINDS, Event, Trace, Window, paused_gc, select_window

# HTA's `consecutive_kernel_delay` default: a gap shorter than this between two activities on a
# stream, not caused by the host, is the GPU's own launch latency ("kernel wait"). HTA's docstring
# says nanoseconds, but it compares against trace timestamps, which are microseconds.
KERNEL_WAIT_US = 30.0

# Verdict thresholds, as shares of the launched work's GPU time (its busy time plus the GPU's idle
# time before each of its activities; see LaunchedWork). Explained in the guide page.
OVERHEAD_BOUND_MIN_HOST_WAIT_PCT = 50.0  # the GPU idled waiting for the host at least this long
COMPUTE_BOUND_MIN_BUSY_OR_QUEUED_PCT = 80.0  # busy, or idle with the next work already queued

TOP_KERNELS = 10
# Idle time before a GPU activity shorter than this is the GPU moving from one queued kernel to the
# next (inside a CUDA graph ~0.5 us on the H200); a longer one is a gap, time it waited for work.
GAP_MIN_US = 5.0
WIDEST_GAPS = 3

# HTA's kernel kinds (hta/utils/utils.py): the same expressions, so that the breakdowns agree.
_COMMUNICATION = re.compile(r"^nccl.*Kernel")
_MEMORY = re.compile(r"(^Memcpy)|(^Memset)|(^dma)")
_NOT_COMPUTE = re.compile(r"(^nccl.*Kernel)|(.*(Memcpy)|(Memset))|(.*Sync)")

# The launch APIs HTA's launch statistics know; we match every runtime/driver call by correlation.
HTA_LAUNCH_APIS = frozenset({
    "cudaLaunchKernel", "cudaLaunchKernelExC", "cudaMemcpyAsync", "cudaMemsetAsync",
    "runFunction - job_prep_and_submit_for_execution",
})
# Host calls that block until the GPU catches up: time in them is waiting, not host work.
_HOST_WAIT_CALL = re.compile(r"Synchronize|^(cuda|hip)Memcpy$|^cuMemcpy(DtoH|HtoD)?(_v2)?$")
HOST_WORK_KINDS = frozenset({"cpu_op"}) | LAUNCH_KINDS
# The kinds whose events the facts read only as times (ops: host work) or not at all (the Python
# frames of with_stack=True): `load_trace(path, skip_kinds=TIMES_ONLY_KINDS)` gives the same
# facts, faster.
TIMES_ONLY_KINDS = frozenset({"cpu_op", "python"})

NO_GPU = "no GPU activity"


# --- the facts ---------------------------------------------------------------------------------


@dataclass
class Gap:
    """The GPU's idle time right before one launched activity (see LaunchedWork), by cause."""

    device: int | str
    start_us: float  # where the GPU's earlier work ended (or the activity's launch call began)
    end_us: float  # the activity's start
    dur_us: float
    host_wait_us: float
    queued_us: float
    other_us: float
    next_activity: str  # the name of the activity that ended the gap


@dataclass
class LaunchedWork:
    """The GPU activities launched in a window (by their launch call's start), wherever they ran.

    Their GPU time (`active_us`) is their busy time plus the GPU's idle time right before each of
    them: from the end of all the GPU's earlier work to the activity's start. That idle time is
    host wait until the activity's launch call returned (the GPU had nothing to do because the
    host had not handed it the work yet), queued after that (the work was launched: the GPU's own
    launch latency, or a dependency), other without a launch call in the trace. Time before a
    GPU's first launch or after its last activity never counts."""

    activities: int
    start_us: float  # the first one's start
    end_us: float  # the last one's end
    span_us: float
    busy_us: float  # their union, summed over the GPUs
    active_us: float  # busy_us + host_wait_us + queued_us + other_us
    host_wait_us: float
    queued_us: float
    other_us: float
    busy_pct: float  # of active_us, as are the three below
    host_wait_pct: float
    queued_pct: float
    other_pct: float
    gaps: int = 0  # the idle times of GAP_MIN_US or more before its activities
    widest_gaps: list[Gap] = field(default_factory=list)  # the WIDEST_GAPS longest, longest first


@dataclass
class TemporalBreakdown:
    """HTA's `get_temporal_breakdown` under its definitions (percentages of the kernel span)."""

    scope: str
    kernel_time_us: float
    idle_us: float
    compute_us: float
    non_compute_us: float
    idle_pct: float
    compute_pct: float
    non_compute_pct: float


@dataclass
class StreamIdle:
    """HTA's `get_idle_time_breakdown` for one stream: the gaps before each activity."""

    device: int | str
    stream: int | str
    gaps: int
    idle_us: float
    host_wait_us: float
    kernel_wait_us: float
    other_us: float
    host_wait_pct: float  # of idle_us
    kernel_wait_pct: float
    other_pct: float


@dataclass
class LaunchStats:
    """Launch calls matched to the first GPU activity they started (by correlation id)."""

    launches: int
    delay_mean_us: float | None
    delay_p50_us: float | None
    delay_p90_us: float | None
    delay_max_us: float | None
    call_p50_us: float | None  # duration of the launch call on the host
    by_api: dict[str, int]
    hta_counts: int  # how many of them HTA's launch statistics would see


@dataclass
class KernelStat:
    name: str
    kind: str  # compute / communication / memory / other
    count: int
    total_us: float
    mean_us: float
    share_pct: float  # of all GPU activity time in the window


@dataclass
class Verdict:
    label: str  # compute-bound / overhead-bound / mixed / no GPU activity
    reason: str


@dataclass
class WindowFacts:
    """The facts of one time window: a ProfilerStep, an explicit range or the whole trace.

    `window_busy_*` is the time-window view; every other GPU fact, and the verdict, is of the
    work launched in the window."""

    label: str
    start_us: float
    end_us: float
    dur_us: float
    window_busy_us: float  # GPU busy time clipped to the window, summed over the trace's GPUs
    window_busy_pct: float  # of the window (times the number of GPUs)
    launched: LaunchedWork | None  # None: nothing launched in the window ran on the GPU
    cpu_busy_us: float  # host threads running ops or launch calls, not blocked on the GPU
    cpu_busy_pct: float
    cpu_wait_us: float  # host threads blocked in synchronizing calls
    temporal_breakdown: TemporalBreakdown | None
    idle_by_stream: list[StreamIdle]
    launches: LaunchStats
    activities_by_kind: dict[str, int]  # kernel / memcpy / memset
    kernels_by_kind: dict[str, int]  # compute / communication / memory / other
    top_kernels: list[KernelStat]
    verdict: Verdict  # from `launched` and the launch delays


@dataclass
class TraceFacts:
    source: str
    rank: int | None
    gpus: list[str]
    events: int
    duration_us: float
    has_gpu_activity: bool
    window: WindowFacts  # the window asked for; the whole trace by default
    temporal_breakdown: TemporalBreakdown | None  # per trace, with HTA's choice of steps
    steps: list[WindowFacts] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        """JSON-ready, keys in declaration order, times in us rounded to ns, percentages to 0.01."""
        return rounded(asdict(self))


def rounded(value, key: str = ""):
    """A JSON-ready value with its floats rounded: times in us to the ns, `*_pct` to 0.01 (the
    one rounding of every facts object's to_dict)."""
    if isinstance(value, dict):
        return {k: rounded(v, k) for k, v in value.items()}
    if isinstance(value, list):
        return [rounded(v, key) for v in value]
    if isinstance(value, float):
        return round(value, 2 if key.endswith("_pct") else 3)
    return value


# --- the engine ----------------------------------------------------------------------------------


def facts(trace: Trace, step: int | None = None, window: Window | tuple[float, float] | None = None,
          top: int | None = TOP_KERNELS) -> TraceFacts:
    """All facts of a trace; `step` or `window` (a Window or (start, end) in us) picks the window
    that `TraceFacts.window` describes (default: the whole trace). Steps are always listed. The
    window lists its `top` GPU activities by total time (None: all of them)."""
    with paused_gc():
        return _facts(trace, step, window, top)


def _check_loaded(trace: Trace) -> None:
    """The facts read the events of every kind but TIMES_ONLY_KINDS: those must not be skipped."""
    missing = sorted(set(trace.skipped) - TIMES_ONLY_KINDS)
    if missing:
        raise ValueError(f"the facts need the {', '.join(missing)} events that loading skipped")


def _facts(trace: Trace, step, window, top) -> TraceFacts:
    _check_loaded(trace)
    index = _TraceIndex(trace)
    focus = _focus_window(trace, step, window)
    steps = [Window(s.ts, s.end, s.name) for s in trace.steps]
    notes = _notes(trace, index)
    return TraceFacts(
        source=trace.source,
        rank=trace.rank,
        gpus=[str(gpu.get("name", "")) for gpu in trace.gpus if isinstance(gpu, dict)],
        events=trace.event_count,
        duration_us=index.trace_end,
        has_gpu_activity=trace.has_gpu_activity,
        window=window_facts(index, focus, top=top),
        temporal_breakdown=_hta_scope_breakdown(index),
        steps=[window_facts(index, s, top=0) for s in steps],
        notes=notes,
    )


def facts_of_windows(trace: Trace, windows: list[Window], top: int = 0) -> list[WindowFacts]:
    """The facts of many windows of one trace, its index built once (a sweep has dozens)."""
    _check_loaded(trace)
    with paused_gc():
        index = _TraceIndex(trace)
        return [window_facts(index, window, top=top) for window in windows]


def steady_step(trace: Trace) -> int | None:
    """The number N of a steady-state ProfilerStep#N, for a picture or a quote of one typical
    step: of the recorded steps but the first (which carries the warm-up: cold caches, the first
    launches, a GPU queue still filling), the one of median host duration (the shorter of the two
    middle ones, then the earlier). With one step, that one; None without numbered steps."""
    durations: dict[int, float] = {}
    for step in trace.steps:
        number = step.name.removeprefix("ProfilerStep#")
        if number.isdigit():
            durations[int(number)] = max(durations.get(int(number), 0.0), step.dur)
    if not durations:
        return None
    numbers = sorted(durations)
    candidates = numbers[1:] if len(numbers) > 1 else numbers
    ranked = sorted(candidates, key=lambda n: (durations[n], n))
    return ranked[(len(ranked) - 1) // 2]


def _focus_window(trace: Trace, step, window) -> Window:
    if isinstance(window, Window):
        return window
    if step is not None or window is not None:
        return select_window(trace, step=step, window=window)
    return Window(0.0, trace.end_us, "whole trace")


def kernel_kind(name: str, kind: str = "kernel") -> str:
    """compute / communication / memory / other, by HTA's name rules; memcpy and memset rows are
    memory whatever their name (ROCm names them e.g. 'CopyDeviceToDevice')."""
    if _COMMUNICATION.match(name):
        return "communication"
    if _MEMORY.match(name) or kind != "kernel":
        return "memory"
    return "compute" if not _NOT_COMPUTE.match(name) else "other"


GAP_CATEGORIES = ("host_wait", "kernel_wait", "other")


class _TraceIndex:
    """What every window needs, computed once per trace, as columns (lists with one value per
    item): the GPU activities ordered by placing time, the gaps between activities on a stream,
    the launch calls matched to their activities, and merged host and GPU intervals. A window is
    a range of these lists, found by bisection; the facts are made of operations on whole lists
    rather than of loops in Python."""

    def __init__(self, trace: Trace):
        self.trace = trace
        self._activities(trace)
        self._gaps()
        self._idle_before()
        self._launches()
        self.trace_end = trace.end_us
        self.host_work = _host_work(trace)
        self.host_wait = intersection(self.host_work, _host_waits(trace))

    def _activities(self, trace: Trace) -> None:
        events = trace.gpu_activities
        launches = list(map(trace.launches_by_correlation.get,
                            map(attrgetter("correlation"), events)))
        starts = list(map(attrgetter("ts"), events))
        # A GPU activity belongs to the window in which its launch call started (HTA's iterations).
        placed = [start if launch is None else launch.ts for start, launch in zip(starts, launches)]
        order = sorted(range(len(events)), key=placed.__getitem__)
        events = _take(events, order)
        self.placed_times = _take(placed, order)
        self.launches = _take(launches, order)  # the runtime/driver call, or None
        self.starts = list(map(attrgetter("ts"), events))
        self.durs = list(map(attrgetter("dur"), events))
        # New floats as arrays (8 bytes a value, not 32); the others share the events' objects.
        self.ends = array("d", map(add, self.starts, self.durs))
        self.names = list(map(attrgetter("name"), events))
        self.event_kinds = list(map(attrgetter("kind"), events))  # kernel / memcpy / memset
        named = list(zip(self.names, self.event_kinds))
        kinds = {pair: kernel_kind(*pair) for pair in set(named)}
        self.kinds = list(map(kinds.__getitem__, named))  # compute / communication / ...
        self.device_of = _arg_or(events, "device", "pid")
        self.stream_of = _arg_or(events, "stream", "tid")
        self.devices = sorted(set(self.device_of), key=str)
        self.busy_by_device = {
            device: union_of_times(*_where(self.device_of, device, self.starts, self.ends))
            for device in self.devices
        }

    def _gaps(self) -> None:
        """Every gap between consecutive activities of a stream, categorized as HTA does, sorted
        by the placing time of the activity after the gap. As in HTA, an overlap (a negative
        gap, which clock rounding makes) counts negative, so that rounding jitter cancels out."""
        starts, ends = self.starts, self.ends
        # When the launch call of each activity began; -inf without one (never host wait).
        launch_starts = [-math.inf if launch is None else launch.ts for launch in self.launches]
        by_stream = defaultdict(list)  # (device, stream) -> activities in placing order
        for i, key in enumerate(zip(self.device_of, self.stream_of)):
            by_stream[key].append(i)
        self.stream_numbers = {key: number for number, key in enumerate(by_stream)}
        times, codes, durs, keys = [], [], [], []
        for key, on_stream in by_stream.items():
            on_stream.sort(key=starts.__getitem__)
            previous, current = on_stream[:-1], on_stream[1:]
            previous_ends = _take(ends, previous)
            gaps = list(map(sub, _take(starts, current), previous_ends))
            host_wait = map(gt, _take(launch_starts, current), previous_ends)
            kernel_wait = map(lt, gaps, repeat(KERNEL_WAIT_US))
            base = 3 * self.stream_numbers[key]  # code: 3 * stream number + category number
            codes += [base if host else base + 1 if kernel else base + 2
                      for host, kernel in zip(host_wait, kernel_wait)]
            times += _take(self.placed_times, current)
            durs += gaps
            keys += [key] * len(gaps)
        order = sorted(range(len(times)), key=times.__getitem__)
        self.gap_times, self.gap_codes = _take(times, order), _take(codes, order)
        self.gap_durs, self.gap_keys = array("d", map(durs.__getitem__, order)), _take(keys, order)

    def _idle_before(self) -> None:
        """The GPU's idle time right before each activity, by cause (`idle_host_wait`,
        `idle_queued`, `idle_other`): from the end of all earlier work on the same GPU, whatever
        its stream (a gap on one stream while another runs is not idle time), to the activity's
        start. Until its launch call returned, the GPU waited for the host; after that, the work
        was queued (the GPU's launch latency, or a dependency); without a launch call in the
        trace, the cause is unknown (other). Before the first activity of a GPU the recording
        shows no earlier work: only the time from that activity's launch call counts, not what
        the recording happened to hold before the first launch."""
        n = len(self.starts)
        self.idle_host_wait, self.idle_queued, self.idle_other = (array("d", bytes(8 * n))
                                                                  for _ in range(3))
        by_device = defaultdict(list)
        for i, device in enumerate(self.device_of):
            by_device[device].append(i)
        for members in by_device.values():
            members.sort(key=self.starts.__getitem__)
            starts, ends = _take(self.starts, members), _take(self.ends, members)
            first_launch = self.launches[members[0]]
            origin = starts[0] if first_launch is None else min(first_launch.ts, starts[0])
            # Where the GPU's earlier work ended: the running maximum of the ends before each one.
            frontier = list(accumulate(ends[:-1], max, initial=origin))
            idle = list(map(max, map(sub, starts, frontier), repeat(0.0)))
            for i, gap, free_at in compress(zip(members, idle, frontier), idle):
                launch = self.launches[i]
                if launch is None:
                    self.idle_other[i] = gap
                    continue
                host = min(max(launch.ts + launch.dur - free_at, 0.0), gap)
                self.idle_host_wait[i], self.idle_queued[i] = host, gap - host
        self.idle = array("d", map(add, map(add, self.idle_host_wait, self.idle_queued),
                                   self.idle_other))

    def _launches(self) -> None:
        """One match per launch call and the earliest activity it started (a CUDA graph launch
        starts many; only the first one's delay is the launch's). Activities are placed at their
        call's start: taken in order, the calls come in order of start."""
        launches, starts = self.launches, self.starts
        launched = list(compress(range(len(launches)), map(is_not, launches, repeat(None))))
        ids = dict.fromkeys(map(id, _take(launches, launched)))  # each call once, in order
        matched = launched
        if len(ids) < len(launched):  # calls that started several activities
            by_start = sorted(launched, key=starts.__getitem__)[::-1]
            earliest = dict(zip(map(id, _take(launches, by_start)), by_start))  # first one wins
            matched = list(map(earliest.__getitem__, ids))
        calls = _take(launches, matched)
        self.launch_times = list(map(attrgetter("ts"), calls))
        self.call_durs = list(map(attrgetter("dur"), calls))
        self.call_names = list(map(attrgetter("name"), calls))
        self.launch_delays = array("d", map(max, map(sub, map(sub, _take(starts, matched),
                                                                  self.launch_times),
                                                      self.call_durs), repeat(0.0)))

    def placed_range(self, window: Window) -> tuple[int, int]:
        """The activities placed in the window: [lo, hi) of the activity columns."""
        return (bisect_left(self.placed_times, window.start),
                bisect_left(self.placed_times, window.end))


def _arg_or(events: list, key: str, attribute: str) -> list:
    """Each event's arg `key`, or its `attribute` where it has no such arg."""
    values = list(map(Event.arg, events, repeat(key)))
    if None in values:
        values = [getattr(event, attribute) if value is None else value
                  for value, event in zip(values, events)]
    return values


def _take(column: list, indices: list[int]) -> list:
    return list(map(column.__getitem__, indices))


def _where(keys: list, key, *columns: list) -> list[list]:
    """The columns' values in the rows whose key is `key`."""
    if all(map(eq, keys, repeat(key))):
        return list(columns)
    return [list(compress(column, map(eq, keys, repeat(key)))) for column in columns]


def _host_work(trace: Trace) -> Merged:
    """The merged intervals of host work: ops and launch calls (events or skipped times). The
    union of each kind's union: the same intervals, without a copy of the millions of ops."""
    starts: list[float] = []
    ends: list[float] = []
    for kind in sorted(HOST_WORK_KINDS):
        kind_starts, kind_durations = trace.time_columns(kind)
        merged = union_of_rows(kind_starts, array("d", map(add, kind_starts, kind_durations)))
        starts += merged[0]
        ends += merged[1]
    return union_of_times(starts, ends)


def _host_waits(trace: Trace) -> Merged:
    """The merged intervals of the launch-API calls that block until the GPU catches up."""
    blocking: dict[str, bool] = {}
    calls = []
    for kind in sorted(LAUNCH_KINDS):
        for event in trace.by_kind.get(kind, []):
            is_wait = blocking.get(event.name)
            if is_wait is None:
                is_wait = blocking[event.name] = bool(_HOST_WAIT_CALL.search(event.name))
            if is_wait:
                calls.append(event)
    starts = list(map(attrgetter("ts"), calls))
    return union_of_times(starts, list(map(add, starts, map(attrgetter("dur"), calls))))


def window_facts(index: _TraceIndex, window: Window, top: int | None = TOP_KERNELS) -> WindowFacts:
    """The facts of one window; `top` kernels are listed (0 for none, None for all), and unless
    `top` is 0 the WIDEST_GAPS widest gaps."""
    lo, hi = index.placed_range(window)
    starts, ends, kinds = index.starts[lo:hi], index.ends[lo:hi], index.kinds[lo:hi]
    merged = _union_of(starts, ends)
    n_gpus = max(len(index.devices), 1)
    busy = sum((covered(m, window.start, window.end) for m in index.busy_by_device.values()), 0.0)
    cpu_work = covered(index.host_work, window.start, window.end)
    cpu_wait = covered(index.host_wait, window.start, window.end)
    busy_pct = _pct(busy, window.dur * n_gpus)
    launched = _launched_work(index, lo, hi, merged, WIDEST_GAPS if top != 0 else 0)
    launches = _launch_stats(index, window)
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
        temporal_breakdown=_temporal_breakdown(window.label, starts, ends, kinds, merged),
        idle_by_stream=_idle_by_stream(index, window),
        launches=launches,
        activities_by_kind=dict(Counter(index.event_kinds[lo:hi])),
        kernels_by_kind=dict(Counter(kinds)),
        top_kernels=top_kernels(index, lo, hi, top) if top != 0 else [],
        verdict=verdict(index.trace.has_gpu_activity, launched, launches, busy_pct),
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
    return _Union(union_of_times(starts, ends), min(starts), max(ends))


def _launched_work(index: _TraceIndex, lo: int, hi: int, merged: _Union | None, widest: int
                   ) -> LaunchedWork | None:
    """The launched-work view of the activities [lo, hi) of the index, with its `widest` widest
    gaps; `merged` is their union over all GPUs (their busy time is per GPU, summed)."""
    if merged is None:
        return None
    if len(index.devices) > 1:
        devices, starts, ends = index.device_of[lo:hi], index.starts[lo:hi], index.ends[lo:hi]
        busy = sum(_union_of(*_where(devices, device, starts, ends)).busy
                   for device in set(devices))
    else:
        busy = merged.busy
    host_wait = sum(index.idle_host_wait[lo:hi])
    queued = sum(index.idle_queued[lo:hi])
    other = sum(index.idle_other[lo:hi])
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
        gaps=sum(map(ge, index.idle[lo:hi], repeat(GAP_MIN_US))),
        widest_gaps=_widest_gaps(index, lo, hi, widest),
    )


def _widest_gaps(index: _TraceIndex, lo: int, hi: int, count: int) -> list[Gap]:
    """The `count` longest idle times before the activities [lo, hi), longest first (the earlier
    one of equal lengths first)."""
    idle = index.idle
    widest = heapq.nsmallest(count, range(lo, hi), key=lambda i: (-idle[i], index.starts[i]))
    return [Gap(device=index.device_of[i], start_us=index.starts[i] - idle[i],
                end_us=index.starts[i], dur_us=idle[i], host_wait_us=index.idle_host_wait[i],
                queued_us=index.idle_queued[i], other_us=index.idle_other[i],
                next_activity=index.names[i])
            for i in widest if idle[i] > 0]


def _temporal_breakdown(scope: str, starts: list[float], ends: list[float], kinds: list[str],
                        merged: _Union | None = None) -> TemporalBreakdown | None:
    """HTA's temporal breakdown of the activities with these times and kinds (None without any,
    or when they all take no time); `merged` is their union when the caller has it."""
    merged = _union_of(starts, ends) if merged is None else merged
    if merged is None or merged.end <= merged.start:
        return None
    span = merged.end - merged.start
    busy = merged.busy
    compute_starts, compute_ends = union_of_times(*_where(kinds, "compute", starts, ends))
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


def _hta_scope_breakdown(index: _TraceIndex) -> TemporalBreakdown | None:
    """The per-trace breakdown over the activities HTA keeps by default (see hta_scope_end)."""
    cut = hta_scope_end(index.trace)
    columns = (index.starts, index.ends, index.kinds)
    if cut is None:
        return _temporal_breakdown("whole trace", *columns)
    # Kept: launched before the cut, that is placed before it (an activity is placed at its launch).
    kept = list(map(and_, map(is_not, index.launches, repeat(None)),
                    map(lt, index.placed_times, repeat(cut))))
    return _temporal_breakdown(f"launched before {index.trace.steps[-1].name} began "
                               "(HTA drops the last step)",
                               *(list(compress(column, kept)) for column in columns))


def _idle_by_stream(index: _TraceIndex, window: Window) -> list[StreamIdle]:
    lo, hi = bisect_left(index.gap_times, window.start), bisect_left(index.gap_times, window.end)
    codes, durs = index.gap_codes[lo:hi], index.gap_durs[lo:hi]
    # Sum the gaps of each stream and category in placing order: a stable sort by code groups them.
    order = sorted(range(hi - lo), key=codes.__getitem__)
    sorted_codes = list(map(codes.__getitem__, order))
    totals = {}  # code -> (gaps, total us)
    for code in set(codes):
        first, last = bisect_left(sorted_codes, code), bisect_right(sorted_codes, code)
        totals[code] = (last - first, sum(map(durs.__getitem__, order[first:last])))
    rows = []
    first_seen = dict.fromkeys(index.gap_keys[lo:hi])
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


def _launch_stats(index: _TraceIndex, window: Window) -> LaunchStats:
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


def top_kernels(index: _TraceIndex, lo: int, hi: int,
                top: int = TOP_KERNELS) -> list[KernelStat]:
    """The GPU activities (index columns [lo, hi)) with the most total time, by name."""
    totals: dict[str, list] = {}
    for name, dur, kind in zip(index.names[lo:hi], index.durs[lo:hi], index.kinds[lo:hi]):
        entry = totals.setdefault(name, [0, 0.0, kind])
        entry[0] += 1
        entry[1] += dur
    all_time = sum(entry[1] for entry in totals.values())
    ranked = sorted(totals.items(), key=lambda kv: (-kv[1][1], kv[0]))[:top]
    return [KernelStat(name, kind, count, total, total / count, _pct(total, all_time))
            for name, (count, total, kind) in ranked]


def verdict(has_gpu_activity: bool, launched: LaunchedWork | None,
            launches: LaunchStats | None = None, window_busy_pct: float = 0.0) -> Verdict:
    """compute-bound / overhead-bound / mixed, from the GPU time of the work launched in the
    window: the share in which the GPU idled waiting for the host against the share in which it
    was busy or had the next work queued (thresholds: the module constants). The launch delays
    and the time-window busy share only make the reason more precise."""
    if not has_gpu_activity:
        return Verdict(NO_GPU, "the trace has no kernel, memcpy or memset: only host facts apply")
    if launched is None or launched.active_us <= 0:
        reason = ("no GPU activity was launched in this window" if launched is None else
                  "the GPU activities launched in this window take no time")
        if window_busy_pct > 0:
            reason += (f"; the GPU was busy {window_busy_pct:.1f}% of the window with work "
                       "launched before it")
        return Verdict(NO_GPU, reason)
    w = launched
    fed = w.busy_pct + w.queued_pct
    if w.host_wait_pct >= OVERHEAD_BOUND_MIN_HOST_WAIT_PCT:
        label, pace = "overhead-bound", "the host set the pace"
    elif fed >= COMPUTE_BOUND_MIN_BUSY_OR_QUEUED_PCT:
        label, pace = "compute-bound", "the GPU's own work set the pace"
    else:
        label, pace = "mixed", "neither the host nor the GPU's work dominates"
    # One decimal: a share printed as 50% must not sit on either side of a 50% threshold.
    shares = f"waiting for the host {w.host_wait_pct:.1f}%, queued {w.queued_pct:.1f}%"
    if w.other_us > 0:
        shares += f", before activities with no launch call {w.other_pct:.1f}%"
    delay = ""
    if launches is not None and launches.delay_p50_us is not None:
        delay = f"; median launch delay {_ms(launches.delay_p50_us)}"
    return Verdict(label, f"the GPU was busy {w.busy_pct:.1f}% of its time on the work launched "
                   f"here ({_ms(w.active_us)}), idle {shares}{delay}: {pace}")


def _notes(trace: Trace, index: _TraceIndex) -> list[str]:
    notes = []
    if not trace.has_gpu_activity:
        notes.append("no GPU activity: the trace has host events only (CPU-only profile, or "
                     "CUDA activities were not recorded)")
    unmatched = len(index.launches) - sum(map(is_not, index.launches, repeat(None)))
    if unmatched:
        notes.append(f"{unmatched} GPU activities have no launch call in the trace: they are "
                     "placed by their own start time, and HTA leaves them out")
    syncs = len(trace.by_kind.get("sync", ()))
    if syncs:
        notes.append(f"{syncs} synchronization rows on the GPU are not counted as busy time "
                     "(HTA counts them as non-compute time)")
    if len(index.devices) > 1:
        notes.append(f"{len(index.devices)} GPUs in one trace: busy percentages are averaged over "
                     "them; the temporal breakdown merges them, as HTA does per trace file")
    return notes


# --- the summary ---------------------------------------------------------------------------------


def summary_text(trace_facts: TraceFacts) -> str:
    """The facts as readable lines."""
    f = trace_facts
    lines = [f"trace: {f.source or 'trace'}" + _trace_tags(f)]
    lines.append(f"events: {f.events:,} over {_ms(f.duration_us)}; {len(f.steps)} ProfilerSteps")
    lines += _window_lines(f.window)
    if f.temporal_breakdown is not None:
        lines.append("temporal breakdown, HTA's definitions, per trace "
                     f"({f.temporal_breakdown.scope}):")
        lines.append("  " + _breakdown_line(f.temporal_breakdown))
    if f.steps:
        lines += _steps_table(f.steps)
    lines += [f"note: {note}" for note in f.notes]
    return "\n".join(lines)


def _trace_tags(f: TraceFacts) -> str:
    tags = [f"rank {f.rank}"] if f.rank is not None else []
    tags += sorted(set(f.gpus))
    return f" ({', '.join(tags)})" if tags else ""


def _ms(us: float) -> str:
    from .units import format_us

    return format_us(us)


def _window_lines(w: WindowFacts) -> list[str]:
    lines = [f"window: {w.label} ({_ms(w.start_us)} to {_ms(w.end_us)}, {_ms(w.dur_us)})"]
    if w.verdict.label == NO_GPU and not w.window_busy_us:
        lines.append(f"  GPU: {NO_GPU}")
    else:
        lines.append(f"  GPU busy in the window: {_ms(w.window_busy_us)} = {w.window_busy_pct:.1f}% "
                     "of the window")
    if w.launched is not None:
        x = w.launched
        lines.append(f"  GPU work launched in the window: {x.activities:,} activities, span "
                     f"{_ms(x.start_us)} to {_ms(x.end_us)}; busy {_ms(x.busy_us)} = "
                     f"{x.busy_pct:.1f}% of its GPU time {_ms(x.active_us)}; idle waiting for the "
                     f"host {x.host_wait_pct:.1f}% · queued {x.queued_pct:.1f}% · other "
                     f"{x.other_pct:.1f}%")
    lines.append(f"  CPU busy: {_ms(w.cpu_busy_us)} = {w.cpu_busy_pct:.1f}% of the window"
                 f" (blocked on the GPU: {_ms(w.cpu_wait_us)})")
    lines.append(f"  verdict: {w.verdict.label}: {w.verdict.reason}")
    if w.temporal_breakdown is not None:
        lines.append("  temporal breakdown (HTA's definitions): " + _breakdown_line(w.temporal_breakdown))
    for s in w.idle_by_stream:
        lines.append(f"  idle on GPU {s.device} stream {s.stream}: {_ms(s.idle_us)} = host wait "
                     f"{s.host_wait_pct:.1f}% · kernel wait {s.kernel_wait_pct:.1f}% · other "
                     f"{s.other_pct:.1f}%")
    lines += _launch_lines(w.launches)
    if w.activities_by_kind:
        counts = " · ".join(f"{n:,} {k}" for k, n in sorted(w.activities_by_kind.items()))
        kinds = " · ".join(f"{k} {n:,}" for k, n in sorted(w.kernels_by_kind.items()))
        lines.append(f"  GPU activities: {counts} (by kind: {kinds})")
    if w.top_kernels:
        lines.append("  top GPU activities by total time:")
        lines.append(f"    {'share':>6}  {'total':>10}  {'count':>6}  {'mean us':>9}  name")
        for k in w.top_kernels:
            lines.append(f"    {k.share_pct:5.1f}%  {_ms(k.total_us):>10}  {k.count:6,}  "
                         f"{k.mean_us:9.1f}  {short_name(k.name)}")
    return lines


def _launch_lines(launches: LaunchStats) -> list[str]:
    if not launches.launches:
        return []
    apis = ", ".join(f"{api} {n:,}" for api, n in launches.by_api.items())
    return [
        f"  launches: {launches.launches:,} ({apis}); HTA's launch statistics see "
        f"{launches.hta_counts:,} of them",
        f"  launch delay: median {launches.delay_p50_us:.1f} us, p90 {launches.delay_p90_us:.1f} us, "
        f"max {launches.delay_max_us:,.1f} us; launch call median {launches.call_p50_us:.1f} us",
    ]


def _breakdown_line(b: TemporalBreakdown) -> str:
    return (f"idle {b.idle_pct:.2f}% · compute {b.compute_pct:.2f}% · non-compute "
            f"{b.non_compute_pct:.2f}% of {_ms(b.kernel_time_us)}")


def _steps_table(steps: list[WindowFacts]) -> list[str]:
    lines = ["per ProfilerStep: (GPU busy in the step's window, and of the work it launched)",
             f"  {'step':>6}  {'duration':>10}  {'CPU busy':>8}  {'GPU busy':>8}  {'launched':>8}  "
             f"{'host wait':>9}  {'queued':>6}  {'launches':>8}  {'delay p50':>9}  verdict"]
    for s in steps:
        number = s.label.rsplit("#", 1)[-1]
        x = s.launched
        launched = (f"{x.busy_pct:7.1f}%  {x.host_wait_pct:8.1f}%  {x.queued_pct:5.1f}%" if x else
                    f"{'-':>8}  {'-':>9}  {'-':>6}")
        delay = f"{s.launches.delay_p50_us:6.1f} us" if s.launches.launches else f"{'-':>9}"
        lines.append(f"  {number:>6}  {_ms(s.dur_us):>10}  {s.cpu_busy_pct:7.1f}%  "
                     f"{s.window_busy_pct:7.1f}%  {launched}  {s.launches.launches:8,}  {delay}  "
                     f"{s.verdict.label}")
    return lines


def short_name(name: str, width: int = 80) -> str:
    """A C++ kernel name without template and function arguments, as HTA shortens names."""
    if "<" in name or "(" in name:
        depth, kept = 0, []
        for char in name.replace("->", ""):
            if char in "<(":
                depth += 1
            elif char in ">)":
                depth = max(depth - 1, 0)
            elif depth == 0:
                kept.append(char)
        name = "".join(kept).split(" ")[-1] or name
    return name if len(name) <= width else name[: width - 1] + "…"

