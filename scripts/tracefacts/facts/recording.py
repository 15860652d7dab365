"""How a trace was recorded, read from the trace alone, and where the recording can mislead the
facts made of it (`recording_facts`): checked before the verdict is read.

What it says of every trace: which ProfilerSteps were recorded (and so what the schedule skipped),
whether the profiler recorded shapes, Python stacks and memory, and how many CUDA graph launches
the trace holds. What it warns about, each warning naming its evidence and pointing at the first
piece of it (a `Span`, to open in a viewer):

- warm-up in the window: ProfilerStep#0 (the first step pays for the CUDA context, library handles
  and the allocator's growth), torch.compile at work (Dynamo and Inductor's `(dynamo_timed)`
  ranges, autotuning), or CUDA loading kernels lazily (CUPTI's "Lazy Function Loading" rows);
- the profiler's own work in the window: CUPTI asking for or flushing its buffers;
- CUDA graph launches with no GPU activity of theirs in the trace: the graphs' kernels were not
  recorded, and the GPU looks idle while it ran them;
- Python stacks (`with_stack=True`) or memory profiling (`profile_memory=True`) on in the window:
  both make the host slower than it is without them, so host times and step times run long;
- complete events that Perfetto's JSON import drops: on one thread's track (a GPU stream is one
  too) an event that starts inside another and ends after it is dropped (trace processor's
  SliceTracker, "slice_drop_overlapping_complete_event"), in Perfetto's own nanoseconds
  (scripts/tracefacts/model/perfetto.py), events ordered as its sorter orders them (by start, the
  longest first among equal starts). The whole trace is checked (the import reads all of it), with
  the events whose thread the load kept: all of them, except where the analyzer's lean load reads
  CPU ops or Python frames as times only (`unchecked` names those kinds).
"""

from __future__ import annotations

import re
from math import isfinite
from array import array
from collections import Counter
from dataclasses import asdict, dataclass, field
from itertools import accumulate, compress, islice, repeat
from operator import add, attrgetter, ge, mul

from .places import event_span
from .terms import Span, rounded
from .text import short_name
from ..model.columnar.orders import trace_order
from ..model.columnar.rows import Coded
from ..model.launches import activity_table, launch_table
from ..model.names import printable
from ..model.perfetto import perfetto_ns, track_of
from ..model.records import PROFILER_FLAGS, step_number
from ..model.trace import Event, Trace, Window
from ..model.units import format_us

# Torch.compile at work: Dynamo and Inductor time their phases with record_function ranges named
# "<phase> (dynamo_timed)" (torch/_dynamo/utils.py); autotuning benchmarks its configurations.
COMPILE_EVENT = re.compile(r"\(dynamo_timed\)|compile_inner|compile_fx|fx_codegen_and_compile|"
                           r"call_user_compiler|benchmark_all_configs|autotune", re.IGNORECASE)
# CUPTI's rows of CUDA loading kernels on first use (lazy module loading).
LAZY_LOADING = frozenset({"Lazy Function Loading", "Runtime Triggered Module Loading"})
# CUPTI's rows of the profiler's own buffer work.
PROFILER_WORK = re.compile(r"^Activity Buffer Request$|Flush", re.IGNORECASE)
GRAPH_LAUNCH = re.compile(r"^(cuda|hip|cu)GraphLaunch")
MEMORY_EVENT = "[memory]"
EXAMPLES = 3  # evidence named per warning


@dataclass
class RecordingWarning:
    """One way the recording can mislead, with its evidence."""

    kind: str  # warm-up / profiler-work / graph-kernels-missing / python-stacks / memory-profiling / perfetto-drops
    text: str  # one line naming the evidence
    count: int  # how many events are the evidence
    span: Span | None = None  # the first of them, in the file's time


@dataclass
class PerfettoImport:
    """What Perfetto's JSON import would drop of the trace (see the module's docstring)."""

    checked: int  # complete events checked
    dropped: int  # of them, those it would drop
    unchecked: list[str] = field(default_factory=list)  # kinds read as times only: not checked
    dropped_by_kind: dict[str, int] = field(default_factory=dict)


@dataclass
class RecordingFacts:
    """How the trace was recorded, and the warnings about the window the facts describe."""

    label: str  # the window
    steps: list[int]  # the ProfilerStep numbers recorded, in order
    schedule: str  # which steps were recorded, in words
    shapes: bool  # record_shapes: ops with input shapes (or the profiler's flag)
    stacks: bool  # with_stack: Python frames
    memory: bool  # profile_memory: [memory] events
    python_frames: int  # in the window
    memory_events: int  # in the window
    graph_launches: int  # CUDA graph launch calls in the window
    graph_launches_without_activity: int
    perfetto: PerfettoImport
    warnings: list[RecordingWarning] = field(default_factory=list)

    def to_dict(self) -> dict:
        return rounded(asdict(self))


def recording_facts(trace: Trace, window: Window | None = None) -> RecordingFacts:
    """How `trace` was recorded, and what can mislead in `window` (default: the whole trace)."""
    window = window or Window(0.0, trace.end_us, "whole trace")
    steps = _step_numbers(trace)
    frames = _count_in(trace, "python", window)
    memory = [i for i in trace.instants if i.name == MEMORY_EVENT and window.start <= i.ts < window.end]
    flags = {flag: trace.metadata.get(flag) in (1, True) for flag in PROFILER_FLAGS}
    graphs, graphs_empty, first_empty = _graph_launches(trace, window)
    perfetto, first_drop = perfetto_import(trace)
    found = RecordingFacts(
        label=window.label,
        steps=steps,
        schedule=_schedule(steps),
        shapes=flags["record_shapes"] or _has_shapes(trace),
        stacks=flags["with_stack"] or bool(len(trace.skipped.get("python", ())) or trace.by_kind.get("python")),
        memory=flags["profile_memory"] or any(i.name == MEMORY_EVENT for i in trace.instants),
        python_frames=frames,
        memory_events=len(memory),
        graph_launches=graphs,
        graph_launches_without_activity=graphs_empty,
        perfetto=perfetto,
    )
    found.warnings = [w for w in (
        _warm_up(trace, window),
        _profiler_work(trace, window),
        _graph_warning(trace, graphs, graphs_empty, first_empty),
        _stacks_warning(trace, window, frames),
        _memory_warning(trace, memory),
        _perfetto_warning(perfetto, first_drop),
    ) if w is not None]
    return found


# --- how it was recorded -------------------------------------------------------------------------


def _step_numbers(trace: Trace) -> list[int]:
    numbers = {n for n in map(step_number, (s.name for s in trace.steps)) if n is not None}
    return sorted(numbers)


def _runs(numbers: list[int]) -> list[tuple[int, int]]:
    runs: list[list[int]] = []
    for n in numbers:
        if runs and n == runs[-1][1] + 1:
            runs[-1][1] = n
        else:
            runs.append([n, n])
    return [(a, b) for a, b in runs]


def _steps_text(runs: list[tuple[int, int]]) -> str:
    return ", ".join(f"#{a}" if a == b else f"#{a}-#{b}" for a, b in runs)


def _schedule(numbers: list[int]) -> str:
    """Which ProfilerSteps the trace holds, and what that says of the profiler's schedule."""
    if not numbers:
        return "no ProfilerSteps (no schedule, or no prof.step() calls)"
    runs = _runs(numbers)
    notes = []
    if numbers[0] > 0:
        notes.append(f"{_steps_text([(0, numbers[0] - 1)])} not recorded: the schedule's wait and warm-up")
    if len(runs) > 1:
        notes.append(f"{len(runs)} recording cycles: the schedule repeats")
    return f"ProfilerSteps {_steps_text(runs)}" + (f" ({'; '.join(notes)})" if notes else "")


def _has_shapes(trace: Trace) -> bool:
    """Ops with input shapes, where the load kept their args (Events keep none by default: the
    profiler's `record_shapes` flag says it there)."""
    skipped = trace.skipped.get("cpu_op")
    return bool(skipped is not None and skipped.columns is not None and skipped.columns.has_dims)


def _count_in(trace: Trace, kind: str, window: Window) -> int:
    ts, dur = trace.time_columns(kind)
    return sum(map(bool, map(_overlaps, ts, dur, repeat(window))))


def _overlaps(ts: float, dur: float, window: Window) -> bool:
    return ts < window.end and ts + dur > window.start or window.start <= ts < window.end


def _named(trace: Trace, kinds, match) -> list[Event]:
    """The Events of `kinds` whose name `match`es (each distinct name tried once)."""
    found = []
    for kind in kinds:
        events = trace.by_kind.get(kind, [])
        names = {name for name in set(map(attrgetter("name"), events)) if match(name)}
        found += [e for e in events if e.name in names]
    return sorted(found, key=attrgetter("ts"))


def _in_window(events, window: Window) -> list:
    return [e for e in events if _overlaps(e.ts, e.dur, window)]


def _names(events, count: int = EXAMPLES) -> str:
    """The most frequent names of `events`, quoted, with their counts."""
    counts = Counter(e.name for e in events)
    shown = [f'{n:,} × "{_short(name)}"' if n > 1 else f'"{_short(name)}"'
             for name, n in counts.most_common(count)]
    more = len(counts) - count
    return ", ".join(shown) + (f" and {more} more" if more > 0 else "")


# --- the warnings --------------------------------------------------------------------------------


def _warm_up(trace: Trace, window: Window) -> RecordingWarning | None:
    evidence = []
    first = None
    step0 = [s for s in trace.steps if s.name == "ProfilerStep#0" and _overlaps(s.ts, s.dur, window)]
    if step0:
        evidence.append("ProfilerStep#0 is recorded (the first step pays for the CUDA context, library "
                        "handles and the allocator's growth)")
        first = step0[0]
    compiling = _in_window(_named(trace, ("annotation", "cpu_op"), COMPILE_EVENT.search), window)
    if compiling:
        evidence.append(f"torch.compile at work: {_names(compiling)} "
                        f"({format_us(sum(e.dur for e in compiling))} in all)")
        first = min([first, compiling[0]] if first else compiling, key=attrgetter("ts"))
    lazy = _in_window(_named(trace, ("overhead",), LAZY_LOADING.__contains__), window)
    if lazy:
        evidence.append(f"CUDA loaded kernels lazily {len(lazy):,} time{'s' * (len(lazy) != 1)} "
                        f"({_names(lazy)})")
        first = min([first, lazy[0]] if first else lazy, key=attrgetter("ts"))
    if not evidence:
        return None
    return RecordingWarning("warm-up", "warm-up in the window: " + "; ".join(evidence),
                            len(step0) + len(compiling) + len(lazy), event_span(trace, first))


def _profiler_work(trace: Trace, window: Window) -> RecordingWarning | None:
    rows = _in_window(_named(trace, ("overhead",), PROFILER_WORK.search), window)
    if not rows:
        return None
    steps = sorted({s.name for e in rows for s in trace.steps if s.ts <= e.ts < s.end}, key=_step_key)
    where = f", inside {', '.join(steps)}" if steps else ""
    return RecordingWarning(
        "profiler-work", f"the profiler's own work is in the window: {_names(rows)} "
        f"({format_us(sum(e.dur for e in rows))}{where}); its time is not the program's",
        len(rows), event_span(trace, rows[0]))


def _step_key(name: str):
    number = step_number(name)
    return (0, number) if number is not None else (1, name)


def _graph_launches(trace: Trace, window: Window) -> tuple[int, int, Span | None]:
    """The CUDA graph launch calls that start in the window, those of them with no GPU activity
    in the trace, and the first of these."""
    calls = launch_table(trace)
    graph = {code for name, code in calls.names._code.items() if GRAPH_LAUNCH.match(name)}
    if not graph:
        return 0, 0, None
    rows = [r for r in compress(range(len(calls)), map(graph.__contains__, calls.names.codes))
            if window.start <= calls.ts[r] < window.end]
    launched = set(activity_table(trace).launch_rows(calls))
    empty = [r for r in rows if r not in launched]
    first = None
    if empty:
        r = min(empty, key=calls.ts.__getitem__)
        start, (pid, tid) = trace.origin_us + calls.ts[r], calls.threads[r]
        first = Span(start, start + calls.dur[r], pid, tid, start, calls.dur[r])
    return len(rows), len(empty), first


def _graph_warning(trace: Trace, graphs: int, empty: int, first: Span | None) -> RecordingWarning | None:
    if not empty:
        return None
    return RecordingWarning(
        "graph-kernels-missing",
        f"{empty:,} of {graphs:,} CUDA graph launches have no GPU activity in the trace: the graphs' "
        "kernels were not recorded, so the GPU looks idle while it ran them", empty, first)


def _stacks_warning(trace: Trace, window: Window, frames: int) -> RecordingWarning | None:
    if not frames:
        return None
    first = _first_in(trace, "python", window)
    return RecordingWarning(
        "python-stacks", f"Python stacks were recorded (with_stack=True): {frames:,} Python frames in "
        "the window; the profiler's Python tracer slows the host, so host and step times run long "
        "(time steps with it off)", frames, first)


def _first_in(trace: Trace, kind: str, window: Window) -> Span | None:
    """The first event of `kind` in the window, from its Events or the columns a lean load keeps
    (its thread, where they hold it)."""
    events = _in_window(trace.by_kind.get(kind, ()), window)
    if events:
        return event_span(trace, events[0])
    skipped = trace.skipped.get(kind)
    if skipped is None:
        return None
    row = next((r for r, (t, d) in enumerate(zip(skipped.ts, skipped.dur)) if _overlaps(t, d, window)), None)
    if row is None:
        return None
    start, dur = trace.origin_us + skipped.ts[row], skipped.dur[row]
    pid, tid = skipped.columns.threads[row] if skipped.columns is not None else (None, None)
    return Span(start, start + dur, pid, tid, *((start, dur) if pid is not None else (None, None)))


def _memory_warning(trace: Trace, memory: list) -> RecordingWarning | None:
    if not memory:
        return None
    return RecordingWarning(
        "memory-profiling", f"memory profiling was on (profile_memory=True): {len(memory):,} [memory] "
        "events in the window, one per allocation and free, recorded on the host as it runs, so "
        "host and step times run long", len(memory), event_span(trace, memory[0]))


# --- Perfetto's import ---------------------------------------------------------------------------


@dataclass
class _Dropped:
    kind: str
    name: str
    track: tuple
    span: Span
    crossed: str  # the name of the event it starts inside
    by_ns: int  # how far past that event's end it runs


def perfetto_import(trace: Trace) -> tuple[PerfettoImport, _Dropped | None]:
    """Which complete events Perfetto's JSON import would drop, and the first of them."""
    sources, unchecked = _complete_events(trace)
    origin = trace.origin_us
    tracks: dict = {}  # track -> [(source, its rows on the track)]
    for source, (_, _, _, threads, _) in enumerate(sources):
        for thread, code in threads._code.items():
            rows = array("q", compress(range(len(threads)), map(code.__eq__, threads.codes)))
            if rows:
                tracks.setdefault(track_of(*thread), []).append((source, rows))
    checked, by_kind, first = 0, Counter(), None
    for track, parts in tracks.items():
        starts, durs, owner, rows = array("d"), array("d"), array("q"), array("q")
        for source, found in parts:
            ts, dur = sources[source][1], sources[source][2]
            # A time that is no number (NaN, infinite) places the event nowhere: not checked.
            found = array("q", compress(found, map(isfinite, map(add, map(ts.__getitem__, found),
                                                                   map(dur.__getitem__, found)))))
            starts += array("d", map(ts.__getitem__, found))
            durs += array("d", map(dur.__getitem__, found))
            owner += array("q", [source]) * len(found)
            rows += found
        checked += len(rows)
        for i, crossed, by in _drops(_ns(array("d", map(add, starts, repeat(origin)))), _ns(durs)):
            kind, _, _, threads, names = sources[owner[i]]
            by_kind[kind] += 1
            at = origin + starts[i]
            if first is None or at < first.span.start_us:
                first = _Dropped(kind, names[rows[i]], track,
                                 Span(at, at + durs[i], *threads[rows[i]], at, durs[i]),
                                 sources[owner[crossed]][4][rows[crossed]], by)
    dropped = sum(by_kind.values())
    return PerfettoImport(checked, dropped, unchecked, dict(sorted(by_kind.items()))), first


def _complete_events(trace: Trace) -> tuple[list[tuple], list[str]]:
    """(kind, starts, durations, threads, names) of each kind's complete events whose threads the
    load kept (threads as a Coded column of (pid, tid)); and the kinds read as times only."""
    sources, unchecked = [], []
    for kind, events in sorted(trace.by_kind.items()):
        threads = Coded()
        threads.extend_pairs([e.pid for e in events], [e.tid for e in events])
        sources.append((kind, array("d", map(attrgetter("ts"), events)),
                        array("d", map(attrgetter("dur"), events)), threads, [e.name for e in events]))
    for kind, skipped in sorted(trace.skipped.items()):
        if skipped.columns is None:
            if len(skipped):
                unchecked.append(kind)
            continue
        sources.append((kind, skipped.ts, skipped.dur, skipped.columns.threads, skipped.columns.names))
    return sources, unchecked


_EXACT_PRODUCT = (1 << 53) / 1000  # below this, us * 1000.0 is exact for integral us too


def _ns(times: array) -> list[int]:
    """perfetto_ns of each: at C speed where the product is exact for every one (as a rule)."""
    if all(map(_EXACT_PRODUCT.__gt__, map(abs, times))):
        return list(map(int, map(mul, times, repeat(1000.0))))
    return list(map(perfetto_ns, times))


def _drops(begin: list[int], length: list[int]):
    """(event, the open event it crosses, by how many ns) for each event of one track that
    Perfetto's SliceTracker drops: in its sorter's order (start, then the longest first), an
    event is dropped when it starts inside an open event and ends after it. Open events nest (a
    dropped one is never opened), so the innermost, on top, ends first: only it can be crossed."""
    order = trace_order(array("d", begin), array("d", length))[0]
    starts, lengths = list(map(begin.__getitem__, order)), list(map(length.__getitem__, order))
    # A track where no event starts before every earlier one has ended (a GPU stream, as a
    # rule) nests nothing, so drops nothing: told in C loops, without the walk below.
    if all(map(ge, islice(starts, 1, None), accumulate(map(add, starts, lengths), max))):
        return
    stack: list[tuple[int, int, int]] = []  # (end, duration, event) of the open events, innermost last
    push, pop = stack.append, stack.pop
    for i, start, dur in zip(order, starts, lengths):
        # Closed ones pop: those that ended before it, or at its start (unless both are instants).
        while stack and stack[-1][0] <= start:
            if stack[-1][0] == start and not dur and not stack[-1][1]:
                break
            pop()
        end = start + dur
        if stack and start < stack[-1][0] < end:
            yield i, stack[-1][2], end - stack[-1][0]
            continue
        push((end, dur, i))


def _perfetto_warning(found: PerfettoImport, first: _Dropped | None) -> RecordingWarning | None:
    if not found.dropped or first is None:
        return None
    kinds = ", ".join(f"{n:,} {kind}" for kind, n in found.dropped_by_kind.items())
    pid, tid = first.track
    where = f"pid {_thread_text(pid)} tid {_thread_text(tid)}"
    return RecordingWarning(
        "perfetto-drops",
        f"Perfetto leaves out {kinds} events of this trace when it opens it: each starts inside "
        f'another event of its track and ends after it; the first, the {first.kind} "{_short(first.name)}" '
        f'({where}), starts inside "{_short(first.crossed)}" and ends {format_us(first.by_ns / 1000)} '
        "after it", found.dropped, first.span)


def _short(name: str) -> str:
    """A name from the trace as a warning quotes it: shortened (a kernel's template arguments
    left out), control characters escaped."""
    return printable(short_name(name, width=60))


def _thread_text(value) -> str:
    return printable(value[1]) if isinstance(value, tuple) else str(value)


# --- as text -------------------------------------------------------------------------------------


def recording_lines(found: RecordingFacts) -> list[str]:
    """The summary's lines: how the trace was recorded, then one line per warning."""
    graphs = f"{found.graph_launches:,} launches" if found.graph_launches else "none"
    what = " · ".join([f"shapes {'yes' if found.shapes else 'no'}",
                       f"Python stacks {'yes' if found.stacks else 'no'}",
                       f"memory {'yes' if found.memory else 'no'}", f"CUDA graphs {graphs}"])
    lines = [f"recorded: {found.schedule} · {what}"]
    lines += [f"warning: {w.text}" for w in found.warnings]
    return lines
