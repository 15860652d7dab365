"""Host syncs: the calls in which the host waits for the GPU, and the GPU's idle time they cause.

A host sync is a runtime call that returns only once the GPU has done the work queued before it:
the synchronize calls (`cudaDeviceSynchronize`, `cudaStreamSynchronize`, `cudaEventSynchronize`,
hip's; the names the facts' CPU wait counts, scripts/tracefacts/facts/index.py), a synchronous
`cudaMemcpy`, and a `cudaMemcpyAsync` whose copy goes to pageable host memory (its activity is a
`Memcpy DtoH (Device -> Pageable)`): CUDA finishes such a copy, and so everything queued before
it, before the call returns. `tensor.item()`, `.cpu()`, `.tolist()` and `print(tensor)` copy so,
then call `cudaStreamSynchronize`, which finds the GPU idle.

A sync drains the GPU's queue when, as the call began, the GPU still had work that had been
launched before it (running or queued), when the GPU had nothing running once the call
returned, and when more GPU work came after it: from the end of the last work before the call
returns to the start of the next activity, the GPU sits idle, waiting for the host to launch
again. That idle time is the cost of the sync that the host's time in the call does not show.
The recording's last sync, with no GPU work after it, drains nothing that anything waits for.

The GPUs of a trace are taken together (a call names no device); the calls are those that start
in the window. A trace without a drain in the window gives None: the analyzer then prints what
it printed before these facts existed.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from dataclasses import asdict, dataclass, field
from itertools import accumulate, compress, islice, repeat
from operator import add, ge, le

from .index import _HOST_WAIT_CALL as SYNC_CALL  # the one definition of a synchronizing call's name
from .terms import rounded
from ..model.launches import activity_table, launch_table
from ..model.trace import Trace, Window

TO_PAGEABLE = re.compile(r"-> Pageable\)")  # Kineto's "Memcpy DtoH (Device -> Pageable)"
# A GPU activity may be stamped to end a little after the call that waited for it returned (the
# host's and the GPU's clocks are read apart): this much later still counts as done by then.
RETURN_SLACK_US = 1.0
SHOWN = 3  # the drains the text lists, by the GPU's idle time after them


@dataclass
class Drain:
    """One host sync that drained the GPU's queue (see the module's docstring)."""

    name: str
    thread: str
    ts_us: float
    dur_us: float
    waited_us: float  # of the call, the time the GPU still ran work launched before it
    gpu_idle_after_us: float  # from the end of that work to the GPU's next activity
    waited_for: str  # the last activity of that work
    step: str | None  # the ProfilerStep it ran in
    annotation: str | None  # the innermost other annotation around it on its thread


@dataclass
class SyncFacts:
    label: str
    start_us: float
    end_us: float
    calls: int  # host syncs in the window
    by_name: dict[str, int]
    blocked_us: float  # the host's time in them
    drains: int
    waited_us: float  # summed over the drains
    gpu_idle_after_us: float  # summed over the drains
    drained: list[Drain] = field(default_factory=list)  # in time order

    def to_dict(self) -> dict:
        """JSON-ready, times in us rounded to ns."""
        return rounded(asdict(self))


def sync_rows(trace: Trace) -> list[int]:
    """The rows of the launch table (scripts/tracefacts/model/launches.py) that are host syncs,
    in row order."""
    calls = launch_table(trace)
    named = {code for code, name in enumerate(calls.names.values) if SYNC_CALL.search(name)}
    rows = {row for row, code in enumerate(calls.names.codes) if code in named}
    acts = activity_table(trace)
    pageable = {code for code, name in enumerate(acts.names.values) if TO_PAGEABLE.search(name)}
    if pageable:
        launched = acts.launch_rows(calls)
        rows.update(row for row, code in zip(launched, acts.names.codes) if code in pageable and row >= 0)
    return sorted(rows)


def sync_facts(trace: Trace, window: Window | None = None) -> SyncFacts | None:
    """The host syncs that start in `window` (default: the whole trace); None without a drain."""
    window = window or Window(0.0, trace.end_us, "whole trace")
    calls = launch_table(trace)
    rows = [row for row in sync_rows(trace) if window.start <= calls.ts[row] < window.end]
    if not rows:
        return None
    gpu = _GPU(trace)
    steps = trace.steps
    step_starts = [s.ts for s in steps]
    by_name: dict[str, int] = {}
    drained = []
    for row in sorted(rows, key=calls.ts.__getitem__):
        name, start = calls.names[row], calls.ts[row]
        end = start + calls.dur[row]
        by_name[name] = by_name.get(name, 0) + 1
        found = gpu.drain(start, end)
        if found is None:
            continue
        waited, idle, waited_for = found
        thread = calls.threads[row]
        k = bisect_right(step_starts, start) - 1
        step = steps[k].name if k >= 0 and start < steps[k].end else None
        drained.append(Drain(name, trace.lane_name(*thread), start, end - start, waited, idle, waited_for,
                             step, _annotation(trace, thread, start)))
    if not drained:
        return None
    return SyncFacts(
        label=window.label, start_us=window.start, end_us=window.end, calls=len(rows),
        by_name=dict(sorted(by_name.items(), key=lambda kv: (-kv[1], kv[0]))),
        blocked_us=sum(calls.dur[row] for row in rows), drains=len(drained),
        waited_us=sum(d.waited_us for d in drained), gpu_idle_after_us=sum(d.gpu_idle_after_us for d in drained),
        drained=drained)


class _GPU:
    """The GPU activities as the drains read them: in order of their launch call's start, with the
    one that ends last so far; and in order of their own start, with the latest end so far."""

    def __init__(self, trace: Trace):
        calls, acts = launch_table(trace), activity_table(trace)
        rows = acts.launch_rows(calls)
        self.names = acts.names
        self.ends = ends = list(map(add, acts.ts, acts.dur))
        launch_ts = calls.ts
        launched = sorted(compress(range(len(rows)), map(ge, rows, repeat(0))),
                          key=lambda i: launch_ts[rows[i]])  # as a rule nearly in order already
        self.launch_times = [launch_ts[rows[i]] for i in launched]
        self.latest_launched = list(accumulate(launched, lambda a, b: a if ends[a] >= ends[b] else b))
        starts = list(acts.ts)  # the table's order: the trace's, by start
        if not all(map(le, starts, islice(starts, 1, None))):  # NaN, or an unusual producer
            order = sorted(range(len(starts)), key=starts.__getitem__)
            starts, ends = [starts[i] for i in order], [ends[i] for i in order]
        self.starts = starts
        self.free_at = list(accumulate(ends, max))

    def drain(self, start: float, end: float) -> tuple[float, float, str] | None:
        """(waited, idle after, the activity waited for) of a sync call over [start, end], or
        None where it drained nothing (see the module's docstring)."""
        before = bisect_right(self.launch_times, start)  # launched as the call began, or before
        if not before:
            return None
        last = self.latest_launched[before - 1]
        last_end = self.ends[last]
        if last_end <= start or last_end > end + RETURN_SLACK_US:
            return None  # the GPU had done it all already, or the call returned before it had
        running = bisect_left(self.starts, end)  # the activities that started before the return
        if not running or running == len(self.starts):
            return None  # nothing after the call
        free_at = self.free_at[running - 1]
        if free_at > end + RETURN_SLACK_US:
            return None  # other work still ran once the call returned
        return min(last_end, end) - start, max(self.starts[running] - free_at, 0.0), self.names[last]


def _annotation(trace: Trace, thread: tuple, ts: float) -> str | None:
    """The innermost annotation (record_function) around `ts` on `thread`, ProfilerSteps aside."""
    around = [a for a in trace.by_kind.get("annotation", [])
              if (a.pid, a.tid) == thread and a.ts <= ts < a.end and not a.name.startswith("ProfilerStep#")]
    return max(around, key=lambda a: a.ts).name if around else None


def sync_text(facts: SyncFacts) -> list[str]:
    """The host-sync section of the analyzer's summary (names escaped by the caller's printer)."""
    from ..model.units import format_us
    from .text import short_name

    names = ", ".join(f"{name} {n:,}" for name, n in facts.by_name.items())
    lines = [f"host syncs (calls that wait for the GPU to finish), in {facts.label}: {facts.calls:,} ({names}); "
             f"the host blocked {format_us(facts.blocked_us)} in them",
             f"  {facts.drains:,} drained the GPU's queue: the GPU then idled {format_us(facts.gpu_idle_after_us)} "
             f"until the host's next work reached it",
             f"  {'idle after':>10}  {'waited':>10}  {'at':>10}  call, where"]
    for d in sorted(facts.drained, key=lambda d: (-d.gpu_idle_after_us, d.ts_us))[:SHOWN]:
        where = "; ".join(x for x in (d.step, d.annotation) if x)
        lines.append(f"  {format_us(d.gpu_idle_after_us):>10}  {format_us(d.waited_us):>10}  "
                     f"{format_us(d.ts_us):>10}  {d.name}" + (f" in {where}" if where else "")
                     + f", waiting for {short_name(d.waited_for)}")
    return lines
