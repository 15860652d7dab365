"""The trace model's classes (Event, Instant, Skipped, Trace, Window) and the kinds events are
sorted into; `scripts.tracefacts.model.trace` gives them with the entry points that read a file (`load_trace`)."""

from __future__ import annotations

import gc
import re
from array import array
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cached_property
from itertools import groupby
from operator import add, attrgetter

from .columnar.rows import OpColumns, longest_first_at_equal_starts
from .names import shown
from ..reading.text import TraceError

# Raw `cat` spellings (lower-cased) to the kinds the rest of the package uses.
KIND_BY_CATEGORY = {
    "cpu_op": "cpu_op",
    "operator": "cpu_op",
    "user_annotation": "annotation",
    "gpu_user_annotation": "gpu_annotation",
    "cuda_runtime": "runtime",
    "runtime": "runtime",
    "hip_runtime": "runtime",
    "cuda_driver": "driver",
    "driver": "driver",
    "hip_driver": "driver",
    "kernel": "kernel",
    "gpu_memcpy": "memcpy",
    "memcpy": "memcpy",
    "gpu_memset": "memset",
    "memset": "memset",
    "cuda_sync": "sync",
    "cuda_event": "event",
    "python_function": "python",
    "cpu_instant_event": "instant",
    "overhead": "overhead",
    "trace": "trace",
    "mtia_runtime": "runtime",
    "mtia_ccp_events": "kernel",
}
GPU_ACTIVITY_KINDS = frozenset({"kernel", "memcpy", "memset"})
LAUNCH_KINDS = frozenset({"runtime", "driver"})

# The args kept on events (integers only); the rest are dropped while loading to save memory.
KEPT_ARGS = ("correlation", "stream", "device", "bytes", "est. achieved occupancy %")
# Host-side kinds that make up most of a trace and whose args nothing reads.
_ARGLESS_KINDS = frozenset({"cpu_op", "python", "annotation", "overhead", "trace"})
_NO_ARGS: dict = {}  # shared by every event without kept args; never mutated
# The profiler's flags among a trace's top-level keys: it recorded shapes, stacks or memory.
PROFILER_FLAGS = ("record_shapes", "with_stack", "profile_memory")
STEP_PREFIX = "ProfilerStep#"
# A step's number: ASCII digits (str.isdigit would take '²', which int() refuses), 18 at most
# (int() refuses more than 4,300; a step count has no use for more than a 64-bit integer).
_STEP_NUMBER = re.compile(r"ProfilerStep#([0-9]{1,18})\Z")
STEPS_NAMED = 8  # the step numbers an error lists, of a trace that may have thousands


def step_number(name: str) -> int | None:
    """N of a step named `ProfilerStep#N`; None where the name is not one of a number."""
    found = _STEP_NUMBER.match(name)
    return int(found.group(1)) if found else None


@contextmanager
def paused_gc():
    """Pause the cyclic garbage collector: building 100k+ acyclic objects otherwise triggers
    collections that scan all of them again and again."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()


class Event:
    """One complete (`ph: X`) event.

    Its kept args are held apart, in a fraction of a dict's memory (a trace has millions of
    events): the correlation id, the only arg unique to each event, in a slot, and the others
    as one dict shared by every event with the same values (never mutated). `args` makes the
    dict again."""

    __slots__ = ("name", "kind", "cat", "ts", "dur", "pid", "tid", "_correlation", "_others")

    def __init__(self, name: str, kind: str, cat: str, ts: float, dur: float, pid: int | str,
                 tid: int | str, args: dict | None = None, correlation: int | None = None):
        """`args`: only KEPT_ARGS, unless load_trace(keep_args=...); with `correlation` given,
        the args but the correlation id (the loader's, which shares them)."""
        self.name = name
        self.kind = kind
        self.cat = cat
        self.ts = ts  # microseconds since Trace.origin_us
        self.dur = dur
        self.pid = pid
        self.tid = tid
        self._correlation = correlation
        self._others = _NO_ARGS if args is None else args

    @property
    def args(self) -> dict:
        correlation = self._correlation
        if correlation is None:
            return self._others
        return {"correlation": correlation, **self._others}  # KEPT_ARGS' order

    def arg(self, key: str):
        """`args.get(key)`, without making the dict."""
        if key == "correlation" and self._correlation is not None:
            return self._correlation
        return self._others.get(key)

    @property
    def end(self) -> float:
        return self.ts + self.dur

    @property
    def correlation(self) -> int | None:
        correlation = self._correlation
        return correlation if correlation is not None else self._others.get("correlation")

    @property
    def is_gpu(self) -> bool:
        return self.kind in GPU_ACTIVITY_KINDS or self.kind == "gpu_annotation"

    def _fields(self) -> tuple:
        return (self.name, self.kind, self.cat, self.ts, self.dur, self.pid, self.tid, self.args)

    def __eq__(self, other) -> bool:
        if other.__class__ is not Event:
            return NotImplemented
        return self._fields() == other._fields()

    __hash__ = None  # type: ignore[assignment]  # mutable, as the dataclass it was

    def __repr__(self) -> str:
        fields = ("name", "kind", "cat", "ts", "dur", "pid", "tid", "args")
        return "Event(" + ", ".join(f"{k}={v!r}" for k, v in zip(fields, self._fields())) + ")"


@dataclass(slots=True)
class Instant:
    name: str
    cat: str
    ts: float
    pid: int | str
    tid: int | str
    args: dict = field(default_factory=dict)


@dataclass(slots=True)
class Skipped:
    """The events of one kind that `load_trace(skip_kinds=...)` did not make into Events: their
    start times (relative, as `Event.ts`) and durations, in file order; in trace order (as
    `Trace.events`) where `columns` are kept, which scripts.tracefacts.model.columnar.rows reads so, without a copy."""

    ts: array  # of floats ("d")
    dur: array
    # With load_trace(op_args=...): their names, threads and the args scripts.tracefacts.facts.ops reads; of
    # launch calls and GPU activities, always: names, threads, correlation ids (and devices and
    # streams), what the facts read of them (scripts/tracefacts/model/launches.py).
    columns: OpColumns | None = None

    def __len__(self) -> int:
        return len(self.ts)


@dataclass
class Trace:
    events: list[Event]  # sorted by (ts, -dur): parents before children
    instants: list[Instant]
    metadata: dict  # the top-level keys other than traceEvents
    process_names: dict
    thread_names: dict
    origin_us: float
    source: str = ""
    # The kinds that `load_trace(skip_kinds=...)` left out of `events`, with their times; they
    # still count in `event_count`, `end_us`, `origin_us` and `times`.
    skipped: dict[str, Skipped] = field(default_factory=dict)
    op_args: bool = False  # whether load_trace(op_args=...) kept what scripts.tracefacts.facts.ops reads
    # What the reading left out (events with unusable times, unpaired B/E events), in words.
    reading_notes: list[str] = field(default_factory=list)

    @property
    def event_count(self) -> int:
        """The complete events of the file, skipped ones included."""
        return len(self.events) + sum(map(len, self.skipped.values()))

    def time_columns(self, kind: str) -> tuple[array, array]:
        """`times`, as arrays (of a skipped kind, its own: not to be changed)."""
        if kind in self.skipped:
            return self.skipped[kind].ts, self.skipped[kind].dur
        events = self.by_kind.get(kind, [])
        return array("d", map(attrgetter("ts"), events)), array("d", map(attrgetter("dur"), events))

    def times(self, kind: str) -> tuple[list[float], list[float]]:
        """The start times and durations of the events of one kind, made into Events or not."""
        if kind in self.skipped:
            return list(self.skipped[kind].ts), list(self.skipped[kind].dur)
        events = self.by_kind.get(kind, [])
        return list(map(attrgetter("ts"), events)), list(map(attrgetter("dur"), events))

    @cached_property
    def by_kind(self) -> dict[str, list[Event]]:
        """The events of each kind, in trace order (a stable sort by kind keeps that order)."""
        by_kind = attrgetter("kind")
        return {kind: list(group) for kind, group in groupby(sorted(self.events, key=by_kind), by_kind)}

    @cached_property
    def end_us(self) -> float:
        """When the last event ends (skipped ones included)."""
        events = self.events
        ends = [max(map(add, map(attrgetter("ts"), events), map(attrgetter("dur"), events)),
                    default=0.0)]
        ends += [max(map(add, s.ts, s.dur), default=0.0) for s in self.skipped.values()]
        return max(ends)

    def of_kinds(self, kinds) -> list[Event]:
        """The events of these kinds, sorted as `events`."""
        groups = [self.by_kind.get(kind, []) for kind in kinds]
        if len([g for g in groups if g]) <= 1:
            return [e for g in groups for e in g]
        return _in_trace_order([e for g in groups for e in g])

    @cached_property
    def gpu_activities(self) -> list[Event]:
        return self.of_kinds(sorted(GPU_ACTIVITY_KINDS))

    @cached_property
    def kernels(self) -> list[Event]:
        return self.by_kind.get("kernel", [])

    @cached_property
    def cpu_events(self) -> list[Event]:
        """Everything that runs on a host thread."""
        return [e for e in self.events if not e.is_gpu]

    @cached_property
    def launches_by_correlation(self) -> dict[int, Event]:
        """Runtime/driver calls that launched GPU work, keyed by correlation id."""
        found = {}
        for kind in sorted(LAUNCH_KINDS):
            for e in self.by_kind.get(kind, []):
                args = e.args  # made once (a dict for each)
                if "correlation" in args:
                    found[args["correlation"]] = e
        return found

    def launch_of(self, activity: Event) -> Event | None:
        cid = activity.correlation
        return self.launches_by_correlation.get(cid) if cid is not None else None

    @cached_property
    def steps(self) -> list[Event]:
        """`ProfilerStep#N` annotations on the host, in order."""
        return [e for e in self.by_kind.get("annotation", []) if e.name.startswith(STEP_PREFIX)]

    @property
    def gpus(self) -> list[dict]:
        """The devices the profiler describes (`deviceProperties`, a list: anything else, none)."""
        found = self.metadata.get("deviceProperties")
        return list(found) if isinstance(found, list) else []

    @property
    def has_gpu_activity(self) -> bool:
        return bool(self.gpu_activities) or any(
            len(self.skipped.get(kind, ())) for kind in GPU_ACTIVITY_KINDS)

    @property
    def rank(self) -> int | None:
        """The distributed rank the trace says it is (None when it does not say)."""
        info = self.metadata.get("distributedInfo")
        rank = info.get("rank") if isinstance(info, dict) else None
        return rank if type(rank) is int and 0 <= rank < 1 << 31 else None  # not a bool

    def lane_name(self, pid, tid) -> str:
        return self.thread_names.get((pid, tid)) or f"{pid}/{tid}"


def _in_trace_order(events: list[Event]) -> list[Event]:
    """Sort by start, the longest first among equal starts (parents before children), as two
    stable sorts (by duration, then by start) would, but with one sort and a fix of the few runs
    of equal starts."""
    events.sort(key=attrgetter("ts"))
    longest_first_at_equal_starts(events, list(map(attrgetter("ts"), events)), attrgetter("dur"))
    return events


def kind_of(raw_event: dict) -> str:
    return _kind(str(raw_event.get("cat", "")), str(raw_event.get("name", "")))


def _kind(cat: str, name: str) -> str:
    kind = KIND_BY_CATEGORY.get(cat.lower())
    if kind is not None:
        return kind
    # Some exporters leave `cat` off GPU rows; their names still say what they are.
    if name.startswith(("Memcpy", "memcpy")):
        return "memcpy"
    if name.startswith(("Memset", "memset")):
        return "memset"
    return "other"


def _steps_named(steps: list[Event]) -> str:
    """The steps a trace has, for an error: all of a few, else the first and last few."""
    numbers = [shown(e.name.removeprefix(STEP_PREFIX), 24) for e in steps]
    if len(numbers) <= STEPS_NAMED:
        return f"steps: {', '.join(numbers) or 'none'}"
    half = STEPS_NAMED // 2
    return (f"{len(numbers):,} steps: {', '.join(numbers[:half])}, …, "
            f"{', '.join(numbers[-half:])}")


@dataclass(frozen=True)
class Window:
    """A time range of a trace to look at, with a label that says where it came from."""

    start: float
    end: float
    label: str

    @property
    def dur(self) -> float:
        return self.end - self.start


def select_window(trace: Trace, step: int | None = None, window: tuple[float, float] | None = None,
                  annotation: str | None = None) -> Window:
    """The range to study: an explicit window, ProfilerStep#`step`, the first host annotation named
    `annotation` (a sweep's `eager n=64`), or by default the first profiled step (the whole trace
    when it has no steps). Raises TraceError if the step or annotation is absent."""
    if window is not None:
        start, end = window
        if end <= start:
            raise TraceError(f"window {start}:{end} is empty (END must be after START)")
        return Window(float(start), float(end), f"{start:g}-{end:g} us")
    if annotation is not None:
        found = next((e for e in trace.by_kind.get("annotation", []) if e.name == annotation), None)
        if found is None:
            raise TraceError(f"{trace.source or 'trace'}: no annotation named {annotation!r}")
        return Window(found.ts, found.end, annotation)
    steps = trace.steps
    if step is not None:
        for event in steps:
            if event.name == f"ProfilerStep#{step}":
                return Window(event.ts, event.end, event.name)
        raise TraceError(f"{trace.source or 'trace'}: no ProfilerStep#{step} "
                         f"({_steps_named(steps)})")
    if steps:
        first = steps[0]
        return Window(first.ts, first.end, first.name)
    return Window(0.0, trace.end_us, "whole trace")

