"""Where the findings lie: each fact that has a place in time gets its span in the file's own time
(`Span`: microseconds as the trace writes them, and the event itself where the finding is one), so
that any tool can open a viewer there (scripts/tracefacts/pictures/perfetto_links.py does, for
Perfetto). `locate` fills them into the facts once they are made: the window (a ProfilerStep: its
event), the widest gaps, the first run of each top GPU activity and the longest blocking host call;
memory.py gives the memory peak its own (`DeviceMemory.peak_span`).

Our times are microseconds since the trace's first complete event; the file's are those plus
`Trace.origin_us`. That sum gives back the number written (the difference of two nearby doubles is
exact, Sterbenz's lemma, so adding the origin again is too).
"""

from __future__ import annotations

from bisect import bisect_left
from itertools import compress
from operator import attrgetter

from .index import _HOST_WAIT_CALL
from .terms import HostWait, Span, TraceFacts, WindowFacts
from ..model.launches import activity_table, launch_table
from ..model.trace import Event, Instant, Trace, Window


def locate(trace: Trace, found: TraceFacts, window: Window, steps: list[Window]) -> None:
    """Fill the spans of `found` (the facts of `window`, and of the `steps` in order), in place."""
    origin = trace.origin_us
    found.span = Span(origin, origin + trace.end_us)
    waits = _HostWaits(trace)  # the blocking calls, found once for every window
    _locate_window(trace, found.window, window, waits)
    for facts, step in zip(found.steps, steps):
        _locate_window(trace, facts, step, waits)


def _locate_window(trace: Trace, facts: WindowFacts, window: Window, waits: _HostWaits) -> None:
    origin = trace.origin_us
    step = next((s for s in trace.steps if s.name == window.label and s.ts == window.start
                 and s.end == window.end), None)
    facts.span = event_span(trace, step) if step else Span(origin + window.start, origin + window.end)
    if facts.launched is not None:
        for gap in facts.launched.widest_gaps:
            gap.span = Span(origin + gap.start_us, origin + gap.end_us)
    runs = first_runs(trace, [k.name for k in facts.top_kernels], window) if facts.top_kernels else {}
    for kernel in facts.top_kernels:
        kernel.first_run = runs.get(kernel.name)
    facts.host_wait = waits.longest(window)


def event_span(trace: Trace, event: Event | Instant) -> Span:
    """The span of one event of the trace: itself, selected (an instant: zero long)."""
    start = trace.origin_us + event.ts
    dur = getattr(event, "dur", 0.0)
    return Span(start, start + dur, event.pid, event.tid, start, dur)


def _slice_span(trace: Trace, ts: float, dur: float, pid, tid) -> Span:
    start = trace.origin_us + ts
    return Span(start, start + dur, pid, tid, start, dur)


def first_run(trace: Trace, name: str, window: Window) -> Span | None:
    """The earliest run of the GPU activity `name` among those launched in the window (placed
    as the facts place them: at their launch call's start, or their own without one)."""
    return first_runs(trace, [name], window).get(name)


def first_runs(trace: Trace, names: list[str], window: Window) -> dict[str, Span]:
    """`first_run` of each of `names` (those with a run in the window), in one pass over the
    activities."""
    activities = activity_table(trace)
    codes = {activities.names._code[n] for n in names if n in activities.names._code}
    if not codes:
        return {}
    calls = launch_table(trace)
    launches = activities.launch_rows(calls)
    best: dict[int, int] = {}  # name code -> row
    starts = activities.ts
    for row in compress(range(len(activities)), map(codes.__contains__, activities.names.codes)):
        call = launches[row]
        placed = calls.ts[call] if call >= 0 else starts[row]
        if window.start <= placed < window.end:
            code = activities.names.codes[row]
            if code not in best or starts[row] < starts[best[code]]:
                best[code] = row
    found = {}
    for row in best.values():
        ts, dur, kind, name = starts[row], activities.dur[row], activities.kinds[row], activities.names[row]
        thread = _thread_of(trace, kind, ts, name)
        pid, tid = thread if thread is not None else (None, None)
        found[name] = _slice_span(trace, ts, dur, pid, tid)
    return found


def _thread_of(trace: Trace, kind: str, ts: float, name: str) -> tuple | None:
    """The (pid, tid) of the event of `kind` that starts at `ts` with `name` (None: not found),
    from its Events or from the columns a lean load keeps (both in trace order: by start)."""
    skipped = trace.skipped.get(kind)
    if skipped is not None:
        columns = skipped.columns
        if columns is None:
            return None
        times = skipped.ts
        i = bisect_left(times, ts)
        while i < len(times) and times[i] == ts:
            if columns.names[i] == name:
                return columns.threads[i]
            i += 1
        return None
    events = trace.by_kind.get(kind, [])
    i = bisect_left(events, ts, key=attrgetter("ts"))
    while i < len(events) and events[i].ts == ts:
        if events[i].name == name:
            return events[i].pid, events[i].tid
        i += 1
    return None


class _HostWaits:
    """The calls that block the host until the GPU catches up (those whose time `cpu_wait_us`
    counts), in order of start: the longest of those that start in a window, by bisection."""

    def __init__(self, trace: Trace):
        self.trace = trace
        calls = self.calls = launch_table(trace)
        waiting = {code for value, code in calls.names._code.items() if _HOST_WAIT_CALL.search(value)}
        rows = compress(range(len(calls)), map(waiting.__contains__, calls.names.codes)) if waiting else ()
        self.rows = sorted(rows, key=calls.ts.__getitem__)
        self.starts = [calls.ts[r] for r in self.rows]

    def longest(self, window: Window) -> HostWait | None:
        calls = self.calls
        lo, hi = bisect_left(self.starts, window.start), bisect_left(self.starts, window.end)
        if lo == hi:
            return None
        best = max(self.rows[lo:hi], key=calls.dur.__getitem__)  # the first of the longest
        pid, tid = calls.threads[best]
        return HostWait(calls.names[best], calls.dur[best],
                        _slice_span(self.trace, calls.ts[best], calls.dur[best], pid, tid))


def longest_host_wait(trace: Trace, window: Window) -> HostWait | None:
    """The longest call that blocks the host until the GPU catches up (the calls whose time
    `cpu_wait_us` counts) among those that start in the window; None without one."""
    return _HostWaits(trace).longest(window)
