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

Two views of a window. The time-window view (`window_busy_*`, `time_split`) clips GPU intervals
to the window: what the GPU did between its start and end, whoever launched it. It gives the one
GPU busy share, and the verdict: who set the pace (overhead-bound, GPU-bound, stalled, mixed),
from the split of the window's GPU time into busy, waiting for the host and stalled (idle with
work already launched). The launched-work view (`launched`, and the activity facts) takes the
activities launched in the window, wherever they ran: an activity belongs to the window in which
its launch call started, as HTA assigns kernels to iterations.

The engine in modules: `analysis_facts` (the constants that define its terms, and the typed
facts), `analysis_index` (what every window needs, once per trace), `analysis_window` (one
window's facts) and `analysis_text` (the facts as lines); their public names are importable
from here.
"""

from __future__ import annotations

from .terms import (  # noqa: F401 (the engine's names, imported from here)
    COLUMN_KINDS, GAP_MIN_US, GPU_BOUND, GPU_BOUND_MIN_BUSY_PCT, HOST_WORK_KINDS,
    HTA_LAUNCH_APIS, KERNEL_WAIT_US, MIXED, NO_GPU, OVERHEAD_BOUND,
    OVERHEAD_BOUND_MIN_HOST_WAIT_PCT, PACE_LABELS, STALLED, STALLED_MIN_STALLED_PCT,
    TIMES_ONLY_KINDS, TOP_KERNELS, WIDEST_GAPS, WORK_CLASSES, Gap, HostWait, KernelStat, LaunchedWork,
    LaunchStats, StreamIdle, TemporalBreakdown, TimeSplit, TraceFacts, Verdict, WindowFacts,
    WorkClassShare, Span, pace, rounded)
from .index import TraceIndex, kernel_kind  # noqa: F401
from .places import locate
from .text import _ms, short_name, summary_text  # noqa: F401
from .window import (hta_scope_breakdown, hta_scope_end, time_split,  # noqa: F401
                     top_kernels, verdict, window_facts)
from ..model.trace import Trace, Window, paused_gc, select_window, step_number

# --- the engine ----------------------------------------------------------------------------------


def facts(trace: Trace, step: int | None = None, window: Window | tuple[float, float] | None = None,
          top: int | None = TOP_KERNELS) -> TraceFacts:
    """All facts of a trace; `step` or `window` (a Window or (start, end) in us) picks the window
    that `TraceFacts.window` describes (default: the whole trace). Steps are always listed. The
    window lists its `top` GPU activities by total time (None: all of them)."""
    with paused_gc():
        return _facts(trace, step, window, top)


def _check_loaded(trace: Trace) -> None:
    """The facts read the events of every kind but COLUMN_KINDS: those must not be skipped."""
    missing = sorted(set(trace.skipped) - COLUMN_KINDS)
    if missing:
        raise ValueError(f"the facts need the {', '.join(missing)} events that loading skipped")


def _facts(trace: Trace, step, window, top) -> TraceFacts:
    _check_loaded(trace)
    index = TraceIndex(trace)
    focus = focus_window(trace, step, window)
    steps = [Window(s.ts, s.end, s.name) for s in trace.steps]
    notes = _notes(trace, index)
    found = TraceFacts(
        source=trace.source,
        rank=trace.rank,
        gpus=[str(gpu.get("name", "")) for gpu in trace.gpus if isinstance(gpu, dict)],
        events=trace.event_count,
        duration_us=index.trace_end,
        has_gpu_activity=trace.has_gpu_activity,
        window=window_facts(index, focus, top=top),
        temporal_breakdown=hta_scope_breakdown(index),
        steps=[window_facts(index, s, top=0) for s in steps],
        notes=notes,
    )
    locate(trace, found, focus, steps)  # where each finding lies, in the file's own time
    return found


def facts_of_windows(trace: Trace, windows: list[Window], top: int = 0) -> list[WindowFacts]:
    """The facts of many windows of one trace, its index built once (a sweep has dozens)."""
    _check_loaded(trace)
    with paused_gc():
        index = TraceIndex(trace)
        return [window_facts(index, window, top=top) for window in windows]


def steady_step(trace: Trace) -> int | None:
    """The number N of a steady-state ProfilerStep#N, for a picture or a quote of one typical
    step: of the recorded steps but the first (which carries the warm-up: cold caches, the first
    launches, a GPU queue still filling), the one of median host duration (the shorter of the two
    middle ones, then the earlier). With one step, that one; None without numbered steps."""
    durations: dict[int, float] = {}
    for step in trace.steps:
        number = step_number(step.name)
        if number is not None:
            durations[number] = max(durations.get(number, 0.0), step.dur)
    if not durations:
        return None
    numbers = sorted(durations)
    candidates = numbers[1:] if len(numbers) > 1 else numbers
    ranked = sorted(candidates, key=lambda n: (durations[n], n))
    return ranked[(len(ranked) - 1) // 2]


def focus_window(trace: Trace, step: int | None = None,
                 window: Window | tuple[float, float] | None = None) -> Window:
    """The window that `facts(trace, step, window)` describes."""
    if isinstance(window, Window):
        return window
    if step is not None or window is not None:
        return select_window(trace, step=step, window=window)
    return Window(0.0, trace.end_us, "whole trace")


def _notes(trace: Trace, index: TraceIndex) -> list[str]:
    notes = []
    if not trace.has_gpu_activity:
        notes.append("no GPU activity: the trace has host events only (CPU-only profile, or "
                     "CUDA activities were not recorded)")
    unmatched = index.launches.count(-1)  # activities without a launch call
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
    notes += trace.reading_notes
    return notes

