"""The facts engine's definitions and records (scripts/tracefacts/facts/analysis.py computes them): the
constants that define its terms, as the glossary and the guide quote them, and the typed facts
of a trace and of its windows, with the one rounding of their JSON.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from ..model.trace import GPU_ACTIVITY_KINDS, LAUNCH_KINDS

# HTA's `consecutive_kernel_delay` default: a gap shorter than this between two activities on a
# stream, not caused by the host, is the GPU's own launch latency ("kernel wait"). HTA's docstring
# says nanoseconds, but it compares against trace timestamps, which are microseconds.
KERNEL_WAIT_US = 30.0

# Who set the pace of a window: thresholds on its time split (TimeSplit: busy, host wait, stalled
# and unattributed shares of the window's GPU time, which add up to 100%), read by `pace`.
# Explained in docs/guide/analyze-your-trace.md#the-verdict and the glossary.
OVERHEAD_BOUND_MIN_HOST_WAIT_PCT = 50.0  # the GPU idled waiting for the host at least this long
STALLED_MIN_STALLED_PCT = 50.0  # the GPU idled with work already launched at least this long
GPU_BOUND_MIN_BUSY_PCT = 80.0  # the GPU was busy at least this long

OVERHEAD_BOUND = "overhead-bound"  # the GPU waited for the host
GPU_BOUND = "GPU-bound"  # the GPU's own work set the pace
STALLED = "stalled"  # the GPU sat idle with work already launched
MIXED = "mixed"  # none of them dominates

TOP_KERNELS = 10
# Idle time before a GPU activity shorter than this is the GPU moving from one queued kernel to the
# next (inside a CUDA graph ~0.5 us on the H200); a longer one is a gap, time it waited for work.
GAP_MIN_US = 5.0
WIDEST_GAPS = 3

# The launch APIs HTA's launch statistics know; we match every runtime/driver call by correlation.
HTA_LAUNCH_APIS = frozenset({
    "cudaLaunchKernel", "cudaLaunchKernelExC", "cudaMemcpyAsync", "cudaMemsetAsync",
    "runFunction - job_prep_and_submit_for_execution",
})
HOST_WORK_KINDS = frozenset({"cpu_op"}) | LAUNCH_KINDS
# The kinds whose events the facts read only as times (ops: host work) or not at all (the Python
# frames of with_stack=True): `load_trace(path, skip_kinds=TIMES_ONLY_KINDS)` gives the same
# facts, faster.
TIMES_ONLY_KINDS = frozenset({"cpu_op", "python"})
# With them, the launch calls and the GPU activities, which loading keeps as columns where it
# skips them (times, names, threads, correlation ids, devices and streams: all the facts read,
# scripts/tracefacts/model/launches.py): `load_trace(path, skip_kinds=COLUMN_KINDS)` gives the same facts, in a
# fraction of the memory.
COLUMN_KINDS = TIMES_ONLY_KINDS | LAUNCH_KINDS | GPU_ACTIVITY_KINDS

NO_GPU = "no GPU activity"
PACE_LABELS = (OVERHEAD_BOUND, GPU_BOUND, STALLED, MIXED, NO_GPU)


def pace(busy_pct: float, host_wait_pct: float, stalled_pct: float) -> str:
    """Who set the pace, from the shares of one window's GPU time (TimeSplit), each rounded to
    0.1 as it is printed, so that a share shown as 50.0% never sits on the other side of a 50%
    threshold: overhead-bound, stalled, GPU-bound or mixed (NO_GPU is the caller's: a window
    in which the GPU was neither busy nor stalled). The shares add up to at most 100%, so at
    most one label's condition holds, but for host wait and stalled both at exactly 50%:
    overhead-bound, checked first. A GPU idle more than 100 - GPU_BOUND_MIN_BUSY_PCT of the
    window is never GPU-bound."""
    busy, host_wait, stalled = (round(x, 1) for x in (busy_pct, host_wait_pct, stalled_pct))
    if host_wait >= OVERHEAD_BOUND_MIN_HOST_WAIT_PCT:
        return OVERHEAD_BOUND
    if stalled >= STALLED_MIN_STALLED_PCT:
        return STALLED
    if busy >= GPU_BOUND_MIN_BUSY_PCT:
        return GPU_BOUND
    return MIXED


# What the GPU's busy time was spent on, by kernel name (scripts/tracefacts/facts/kernels.py).
MATRIX_MATH = "matrix math"  # GEMMs, convolutions, attention
MEMORY_BOUND_KERNELS = "memory-bound kernels"  # elementwise, reductions, norms, softmax, indexing
COPIES = "copies and memsets"  # memcpy and memset activities
COMMUNICATION = "communication"  # NCCL collectives and point-to-point
UNKNOWN = "unknown"  # a name the decoder cannot read: never guessed
WORK_CLASSES = (MATRIX_MATH, MEMORY_BOUND_KERNELS, COPIES, COMMUNICATION, UNKNOWN)


# --- the facts ---------------------------------------------------------------------------------


@dataclass
class Span:
    """Where a finding lies in the trace, in the file's own microseconds (its `ts` as written,
    not our times since the first event: those plus `Trace.origin_us`), so that any viewer can be
    sent there (scripts/tracefacts/model/perfetto.py: Perfetto's time is these times 1000). Where
    the finding is one event of the trace, its pid, tid, ts and dur as written, to select it."""

    start_us: float
    end_us: float
    pid: int | str | None = None  # the event's; None: the finding is no one event
    tid: int | str | None = None
    ts_us: float | None = None
    dur_us: float | None = None


@dataclass
class HostWait:
    """The longest host call in a window that blocks until the GPU catches up (a synchronize, a
    synchronous copy): the longest of those whose time `cpu_wait_us` adds up."""

    name: str
    dur_us: float
    span: Span


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
    span: Span | None = None  # [start_us, end_us] in the file's time


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
    kind: str  # compute / communication / memory / other (HTA's kinds)
    count: int
    total_us: float
    mean_us: float
    share_pct: float  # of all GPU activity time in the window
    work_class: str = UNKNOWN  # one of WORK_CLASSES (scripts/tracefacts/facts/kernels.py)
    first_run: Span | None = None  # its first run launched in the window, the event itself


@dataclass
class WorkClassShare:
    """The GPU activities of one work class, of those launched in the window (as top_kernels)."""

    work_class: str  # one of WORK_CLASSES
    count: int
    total_us: float
    share_pct: float  # of all GPU activity time in the window, as KernelStat's


@dataclass
class TimeSplit:
    """The window's GPU time (its length times the number of GPUs) in four parts that add up to
    it: busy (a kernel, memcpy or memset running: the GPU busy share, `window_busy_pct`);
    waiting for the host (idle with nothing launched waiting to run); stalled (idle with work
    already launched and not started: a dependency, a synchronization, another stream, the GPU's
    own latency between queued kernels, or a launch whose GPU work the trace does not show, such
    as the kernels inside a CUDA graph's launch); unattributed (idle before activities that have
    no launch call in the trace, not stalled). The verdict is read from these shares (`pace`)."""

    span_us: float
    busy_us: float
    host_wait_us: float
    stalled_us: float
    unattributed_us: float
    busy_pct: float  # of span_us, as are the three below
    host_wait_pct: float
    stalled_pct: float
    unattributed_pct: float
    hidden_launches: int = 0  # launch calls in the window whose GPU work the trace does not show


@dataclass
class Verdict:
    label: str  # overhead-bound / GPU-bound / stalled / mixed / no GPU activity (PACE_LABELS)
    reason: str


@dataclass
class WindowFacts:
    """The facts of one time window: a ProfilerStep, an explicit range or the whole trace.

    The time-window view, what the GPU did between the window's start and end: `window_busy_*`
    (the GPU busy share) and `time_split`, which the verdict reads. The launched-work view, the
    GPU activities launched in the window wherever they ran: `launched` and the activity facts
    (breakdowns, launches, kernels, work classes)."""

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
    verdict: Verdict  # from `time_split` (and the launch delays, in its reason)
    time_split: TimeSplit | None = None  # None without GPU activity in the trace
    work_classes: list[WorkClassShare] = field(default_factory=list)  # with top_kernels
    span: Span | None = None  # the window in the file's time (a ProfilerStep: its event)
    host_wait: HostWait | None = None  # the longest of the host's blocking calls in the window


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
    span: Span | None = None  # the trace's first complete event to its last end, in the file's time

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

