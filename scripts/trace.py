"""The trace model: a torch.profiler / Kineto chrome trace read into plain dataclasses.

Every other stage (analysis, timelines, pages) reads traces through `load_trace`, so format
differences between Kineto versions and vendors are settled here, once:

- timestamps become microseconds since the earliest event (`Trace.origin_us` keeps the offset), for
  old absolute-epoch traces and new `baseTimeNanoseconds` ones alike;
- categories become one `kind` per event (older spellings such as `Kernel`/`Runtime`, ROCm's
  `hip_*` names and CUDA's driver launches map to the same kinds);
- a file that is not a trace raises `TraceError` with a one-line message.

`load_trace` reads the file with `scripts.parse` (a stream, in time linear in its size, from a
path, stdin or a pipe), keeps only the `args` that the analysis and the timeline read
(`KEPT_ARGS`), and no flow events: a 200k-event trace loads faster than `json.load` reads it, in
a fraction of the memory. `load_trace(path, skip_kinds=...)` does not make Events of the kinds it
is told to skip, only keeps their times (`Trace.skipped`): the facts need no more of the ops and
the Python frames.
"""

from __future__ import annotations

import gc
import json
import zlib
from array import array
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cached_property
from itertools import compress, groupby, islice, repeat
from operator import add, attrgetter, eq, not_, sub
from pathlib import Path

from .columns import int_args
from .oprows import MISSING, OP_ARG_KINDS, OP_ARGS, OpColumns, op_values, in_trace_order, trace_order
from .parse import DEFAULT_MAX_BYTES, MAX_BYTES_ENV, TraceError, read_trace  # noqa: F401

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
    `Trace.events`) where `columns` are kept, which scripts.oprows reads so, without a copy."""

    ts: array  # of floats ("d")
    dur: array
    # With load_trace(op_args=...): their names, threads and the args scripts.ops reads.
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
    op_args: bool = False  # whether load_trace(op_args=...) kept what scripts.ops reads

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
        return [e for e in self.by_kind.get("annotation", []) if e.name.startswith("ProfilerStep#")]

    @property
    def gpus(self) -> list[dict]:
        return list(self.metadata.get("deviceProperties") or [])

    @property
    def has_gpu_activity(self) -> bool:
        return bool(self.gpu_activities)

    @property
    def rank(self) -> int | None:
        """The distributed rank the trace says it is (None when it does not say)."""
        info = self.metadata.get("distributedInfo")
        rank = info.get("rank") if isinstance(info, dict) else None
        return rank if isinstance(rank, int) else None

    def lane_name(self, pid, tid) -> str:
        return self.thread_names.get((pid, tid)) or f"{pid}/{tid}"


def _in_trace_order(events: list[Event]) -> list[Event]:
    """Sort by start, the longest first among equal starts (parents before children), as two
    stable sorts (by duration, then by start) would. Traces are nearly in order and equal starts
    are few, so one sort by start and a fix of the runs of equal starts is faster."""
    events.sort(key=attrgetter("ts"))
    starts = list(map(attrgetter("ts"), events))
    ties = compress(range(1, len(starts)), map(eq, starts, islice(starts, 1, None)))
    by_dur = attrgetter("dur")
    first = end = -1  # the open run of equal starts: events[first:end]
    for i in ties:  # events[i] starts with events[i - 1]
        if i != end:
            if end - first > 1:
                events[first:end] = sorted(events[first:end], key=by_dur, reverse=True)
            first = i - 1
        end = i + 1
    if end - first > 1:
        events[first:end] = sorted(events[first:end], key=by_dur, reverse=True)
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


def _number(value, default=0.0) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return default


class _Builder:
    """Turns raw events into Events and Instants: the sink of `scripts.parse.read_trace`, and
    of `build_trace`'s decoded dicts.

    Times stay absolute until `finish`, which knows the earliest one. Events of `skip_kinds` are
    only counted, and their times kept for `finish`."""

    def __init__(self, source: str, skip_kinds=frozenset(), keep_args=frozenset(),
                 op_args: bool | None = False):
        self.source = source
        self.skip_kinds = frozenset(skip_kinds)
        self.keep_args = frozenset(keep_args) - self.skip_kinds
        self.kept_args = KEPT_ARGS
        self.raw_args: tuple[str, ...] = ()  # args whose JSON text the compiled path gives
        self.absent = MISSING  # what it gives for an arg an event lacks
        self.columns_of: frozenset = frozenset()  # skipped kinds kept as OpColumns
        self._times_only()
        self.op_args = op_args
        if op_args:
            self._keep_op_args()
        self.skipped: dict[str, tuple[array, array]] = {}  # kind -> absolute starts, durations
        self.columns: dict[str, OpColumns] = {}
        self.events: list[Event] = []
        self.instants: list[Instant] = []
        self.process_names: dict = {}
        self.thread_names: dict = {}
        self.raw_count = 0
        # Caches: the same names, categories and ids repeat thousands of times; one object each.
        self.strings: dict[str, str] = {}  # text -> the one copy kept
        self.kinds: dict[str, str] = {}  # cat -> kind
        self.shared: dict[tuple, dict] = {}  # kept args but the correlation id -> the one copy

    def _times_only(self) -> None:
        # The categories whose events the reader need not make columns of (Kineto's spellings).
        only = self.skip_kinds - self.columns_of
        self.times_only_cats = tuple(sorted(cat for cat, kind in KIND_BY_CATEGORY.items()
                                            if kind in only))

    def header(self, metadata: dict) -> None:
        """The top-level keys written before the events (Kineto writes its flags there): with
        op_args=None, keep the ops' args where the profiler says it recorded shapes, stacks or
        memory."""
        if self.op_args is None:
            self.op_args = any(metadata.get(flag) in (1, True) for flag in PROFILER_FLAGS)
            if self.op_args:
                self._keep_op_args()

    def _keep_op_args(self) -> None:
        """What scripts.ops reads of CPU ops and Python frames: columns of the skipped ones, all
        args of the others (as `keep_args`)."""
        self.columns_of = OP_ARG_KINDS & self.skip_kinds
        self.keep_args |= OP_ARG_KINDS - self.skip_kinds
        if "cpu_op" in self.columns_of:
            self.kept_args = KEPT_ARGS + OP_ARGS[:2]
            self.raw_args = OP_ARGS[2:]
        self._times_only()

    def add_raw(self, raw) -> None:
        """One decoded event dict, in any producer's layout."""
        self.raw_count += 1
        if not isinstance(raw, dict):
            return
        ph = raw.get("ph")
        if ph == "X":
            ts = _number(raw.get("ts"), None)
            if ts is None:
                return
            name, cat = str(raw.get("name", "")), str(raw.get("cat", ""))
            kind = _kind(cat, name)
            if kind in self.skip_kinds:
                self._commit_skipped([(kind, [ts], [max(_number(raw.get("dur")), 0.0)])])
                if kind in self.columns_of:
                    self._commit_columns(kind, [self._intern(name)], [raw.get("pid", 0)],
                                         [raw.get("tid", 0)], [op_values(raw.get("args"))])
                return
            correlation, args = None, _NO_ARGS
            if kind in self.keep_args:
                args = _whole_args(raw.get("args"))
            elif kind not in _ARGLESS_KINDS:
                correlation, args = self._shared(_kept_args(raw.get("args")))
            self.events.append(Event(
                self._intern(name), kind, self._intern(cat), ts,
                max(_number(raw.get("dur")), 0.0), raw.get("pid", 0), raw.get("tid", 0),
                args, correlation))
        elif ph == "M":
            args = raw.get("args") or {}
            if raw.get("name") == "process_name":
                self.process_names[raw.get("pid")] = str(args.get("name", ""))
            elif raw.get("name") == "thread_name":
                self.thread_names[(raw.get("pid"), raw.get("tid"))] = str(args.get("name", ""))
        elif ph in ("i", "I"):
            self.instants.append(Instant(
                name=str(raw.get("name", "")), cat=str(raw.get("cat", "")),
                ts=_number(raw.get("ts")), pid=raw.get("pid", 0), tid=raw.get("tid", 0),
                args=raw.get("args") or {},
            ))

    def _intern(self, text: str) -> str:
        return self.strings.setdefault(text, text)

    def _shared(self, kept: dict) -> tuple[int | None, dict]:
        """The correlation id of kept args (a new dict, or the shared empty one), and the
        others as the one dict shared by the events with the same."""
        correlation = kept.pop("correlation", None) if kept else None
        if not kept:
            return correlation, _NO_ARGS
        return correlation, self.shared.setdefault(tuple(kept.items()), kept)

    def _split(self, column: list[dict]) -> list:
        """`_shared` of each kept args of a column, in place: their correlation ids, and the
        others where the args were."""
        correlations: list = [None] * len(column)
        for i in compress(range(len(column)), map(_NO_ARGS.__ne__, column)):
            correlations[i], column[i] = self._shared(column[i])
        return correlations

    def add_complete(self, cats: list[str], names: list[str], pids: list, tids: list,
                     starts: list[float], durations: list[float], bodies: list) -> None:
        """Complete events read as columns (see `scripts.parse.EventSink`: one string object per
        name already), whole columns at a time."""
        kinds = self._kinds(cats, names)
        column = _args_column(kinds, bodies)
        correlations = self._split(column)
        if self.keep_args and not self.keep_args.isdisjoint(kinds):
            _add_whole_args(column, correlations, kinds, bodies, self.keep_args)
        op_args = None
        if "cpu_op" in self.columns_of and "cpu_op" in kinds:
            op_args = _op_args_column(kinds, bodies)
        self._add_columns(kinds, [names, kinds, cats, starts, durations, pids, tids, column,
                                  correlations], op_args)

    def add_columns(self, cats: list[str], names: list[str], pids: list, tids: list,
                    starts: list[float], durations: list[float], args: list,
                    read_args: Callable[[list], list]) -> None:
        """Complete events from the compiled path: `read_args` reads the kept args' values of
        the args objects (`args`), only of the kinds that keep some (never whole args: a sink
        with keep_args gets no compiled path, scripts.compiled.runs_for); and the CPU ops'
        OP_ARGS where they are kept as columns (`raw_args`: as JSON text)."""
        kinds = self._kinds(cats, names)
        column = [_NO_ARGS] * len(kinds)
        correlations: list = [None] * len(kinds)
        unread = _ARGLESS_KINDS | self.skip_kinds
        where = [i for i, kind, found in zip(range(len(kinds)), kinds, args)
                 if found is not None and kind not in unread]
        if where:
            for i, values in zip(where, read_args(list(map(args.__getitem__, where)))):
                if values is not None:
                    kept = {k: v for k, v in zip(KEPT_ARGS, values) if type(v) is int}
                    if kept:
                        correlations[i], column[i] = self._shared(kept)
        op_args = None
        if "cpu_op" in self.columns_of and "cpu_op" in kinds:
            op_args = [None] * len(kinds)
            where = [i for i, kind, found in zip(range(len(kinds)), kinds, args)
                     if found is not None and kind == "cpu_op"]
            if where:
                n = len(KEPT_ARGS)
                for i, values in zip(where, read_args(list(map(args.__getitem__, where)))):
                    if values is not None:
                        op_args[i] = values[n:]  # OP_ARGS, in their order
        self._add_columns(kinds, [names, kinds, cats, starts, durations, pids, tids, column,
                                  correlations], op_args)

    def _add_columns(self, kinds: list[str], columns: list[list], op_args: list | None = None
                     ) -> None:
        self.raw_count += len(kinds)
        if self.skip_kinds and not self.skip_kinds.isdisjoint(kinds):  # not by category
            keep = [kind not in self.skip_kinds for kind in kinds]
            drop = list(map(not_, keep))
            self._commit_skipped(_by_key(*(list(compress(columns[i], drop)) for i in (1, 3, 4))))
            for kind in self.columns_of.intersection(kinds):
                rows = list(map(kind.__eq__, kinds))
                self._commit_columns(kind, *(list(compress(columns[i], rows)) for i in (0, 5, 6)),
                                     list(compress(op_args, rows)) if op_args else None)
            columns = [list(compress(column, keep)) for column in columns]
        self.events.extend(map(Event, *columns))

    def _commit_columns(self, kind: str, names: list, pids: list, tids: list,
                        args: list | None) -> None:
        found = self.columns.get(kind)
        if found is None:
            found = self.columns[kind] = OpColumns(with_args=kind == "cpu_op")
        found.add(names, pids, tids, args)

    def add_times(self, cats: list[str], starts: list[float], durations: list[float]) -> None:
        """Complete events of `times_only_cats`, as columns."""
        self.raw_count += len(cats)
        self._commit_skipped(_by_key(list(map(KIND_BY_CATEGORY.__getitem__, cats)), starts,
                                     durations))

    def add_unread(self, count: int) -> None:
        self.raw_count += count

    def _commit_skipped(self, parts: list[tuple[str, list[float], list[float]]]) -> None:
        for kind, starts, durations in parts:
            times = self.skipped.get(kind)
            if times is None:  # arrays: 16 bytes an event, not a list's 64
                times = self.skipped[kind] = (array("d"), array("d"))
            times[0].extend(starts)
            times[1].extend(durations)

    def _kinds(self, cats: list[str], names: list[str]) -> list[str]:
        kinds = self.kinds  # only categories that decide the kind alone
        by_name = False
        for cat in set(cats).difference(kinds):
            kind = KIND_BY_CATEGORY.get(cat.lower())
            if kind is None:
                by_name = True
            else:
                kinds[cat] = kind
        if by_name:
            return [kinds.get(cat) or _kind(cat, name) for cat, name in zip(cats, names)]
        return list(map(kinds.__getitem__, cats))

    def finish(self, metadata: dict) -> Trace:
        events = self.events
        if not events and not self.skipped and self.raw_count and not self.instants:
            raise TraceError(
                f"{self.source or 'trace'}: chrome trace has no complete ('X') events to analyze")
        starts = [min(map(attrgetter("ts"), events))] if events else []
        starts += [min(ts) for ts, _ in self.skipped.values()]
        origin = min(starts, default=0.0)
        for event in events:
            event.ts -= origin
        for instant in self.instants:
            instant.ts -= origin
        _in_trace_order(events)
        skipped = {}
        for kind, (ts, dur) in sorted(self.skipped.items()):
            ts = array("d", map(sub, ts, repeat(origin)))
            columns = self.columns.get(kind)
            if columns is not None and not in_trace_order(ts, dur):
                order = trace_order(ts, dur)
                ts = array("d", map(ts.__getitem__, order))
                dur = array("d", map(dur.__getitem__, order))
                columns.reorder(order)
                del order
            skipped[kind] = Skipped(ts, dur, columns)
        return Trace(events=events, instants=self.instants, metadata=metadata,
                     process_names=self.process_names, thread_names=self.thread_names,
                     origin_us=origin, source=self.source, skipped=skipped,
                     op_args=bool(self.op_args))


def _by_key(keys: list, *columns: list) -> list[tuple]:
    """(key, the column values of the rows with that key...) for each key."""
    distinct = set(keys)
    if len(distinct) == 1:
        return [(keys[0], *columns)]
    return [(key, *(list(compress(column, map(key.__eq__, keys))) for column in columns))
            for key in sorted(distinct)]


def _args_column(kinds: list[str], bodies: list) -> list[dict]:
    """The kept args of each event, from the text of its args object (None without args), read
    only for the kinds that have kept args."""
    column = [_NO_ARGS] * len(kinds)
    wanted = {kind for kind in set(kinds) if kind not in _ARGLESS_KINDS}
    if not wanted:
        return column
    where = list(compress(range(len(kinds)), map(wanted.__contains__, kinds)))
    for i, args in zip(where, int_args(list(map(bodies.__getitem__, where)), KEPT_ARGS, _NO_ARGS)):
        column[i] = args
    return column


def _add_whole_args(column: list[dict], correlations: list, kinds: list[str], bodies: list,
                    keep: frozenset) -> None:
    """Put the whole args of the events of the `keep` kinds in their place in `column` (their
    correlation ids among them)."""
    for i, kind in enumerate(kinds):
        if kind in keep and bodies[i]:
            try:
                column[i] = _whole_args(json.loads("{" + bodies[i] + "}"))
                correlations[i] = None
            except ValueError:  # the reader is laxer than JSON inside args (see scripts.parse)
                pass


def _op_args_column(kinds: list[str], bodies: list) -> list:
    """The OP_ARGS values of the CPU ops (None for the other rows, and where json does not read
    the args: the reader is laxer than JSON inside them), from the text of their args."""
    column: list = [None] * len(kinds)
    where = [i for i, kind, body in zip(range(len(kinds)), kinds, bodies)
             if kind == "cpu_op" and body]
    if not where:
        return column
    texts = list(map(bodies.__getitem__, where))
    try:
        decoded = json.loads("[{" + "},{".join(texts) + "}]")
    except (ValueError, RecursionError):
        decoded = list(map(_decoded_or_none, texts))
    for i, args in zip(where, decoded):
        column[i] = op_values(args)
    return column


def _decoded_or_none(body: str):
    try:
        return json.loads("{" + body + "}")
    except (ValueError, RecursionError):
        return None


def _whole_args(args) -> dict:
    """Every arg of an event of a `keep_args` kind, as decoded (shapes, Python ids, ...)."""
    return args if isinstance(args, dict) and args else _NO_ARGS


def _kept_args(args) -> dict:
    if not isinstance(args, dict):
        return {}
    return {k: args[k] for k in KEPT_ARGS if type(args.get(k)) is int}


# --- public entry points ---------------------------------------------------------------------


def read_json(path: Path) -> dict:
    """Read `.json` or `.json.gz` (by content, not by name) into a dict, or raise TraceError:
    the plain `json` reading that `load_trace` agrees with (the tests' reference)."""
    try:
        raw = Path(path).read_bytes()
    except FileNotFoundError:
        raise TraceError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise TraceError(f"{path}: is a directory, not a trace file") from None
    except OSError as err:
        raise TraceError(f"{path}: cannot read ({err.strerror})") from None
    if raw[:2] == b"\x1f\x8b":
        import gzip  # only here: load_trace decompresses with zlib itself

        try:
            raw = gzip.decompress(raw)
        except (EOFError, OSError, zlib.error):
            raise TraceError(f"{path}: gzip data is truncated or corrupt") from None
    try:
        data = json.loads(raw)
    except UnicodeDecodeError:
        raise TraceError(f"{path}: not a trace (binary data, not JSON)") from None
    except json.JSONDecodeError as err:
        where = "truncated" if err.pos >= len(raw.rstrip()) - 1 else f"invalid JSON at line {err.lineno}"
        raise TraceError(f"{path}: not a readable trace ({where}: {err.msg})") from None
    if isinstance(data, list):  # the JSON Array Format of the trace-event spec
        data = {"traceEvents": data}
    if not isinstance(data, dict) or not isinstance(data.get("traceEvents"), list):
        raise TraceError(f"{path}: JSON, but not a chrome trace (no traceEvents list)")
    return data


def build_trace(data: dict, source: str = "", skip_kinds=frozenset(),
                keep_args=frozenset()) -> Trace:
    """A Trace from an already decoded chrome trace dict (`skip_kinds`, `keep_args`: as for
    `load_trace`)."""
    builder = _Builder(source, skip_kinds, keep_args)
    for raw in data["traceEvents"]:
        builder.add_raw(raw)
    return builder.finish({k: v for k, v in data.items() if k != "traceEvents"})


def load_trace(source, progress: Callable[[int, int], None] | None = None,
               skip_kinds=frozenset(), max_bytes: int | None = None,
               keep_args=frozenset(), op_args: bool | None = False) -> Trace:
    """Read a `.json` or `.json.gz` trace (gzip is told by content) from a path, "-" (stdin) or
    a binary file object. `progress(done, total)` is called with the source's bytes read and
    its size (0 when unknown) after each chunk. Complete events of `skip_kinds` (e.g.
    {"python"}: the stack frames of `with_stack=True`, most of such a trace) are not made into
    Events, which is faster; `Trace.skipped` counts them, and they still count in
    `Trace.event_count`, `end_us` and `origin_us`. A trace larger than `max_bytes` once
    decompressed is refused (default: $PROFILING_MAX_TRACE_BYTES, else 4 GiB). Events of the
    `keep_args` kinds keep all their args, as decoded (e.g. {"cpu_op", "python"}: the input
    shapes of `record_shapes=True` and the Python ids of `with_stack=True`, which
    `scripts.ops` reads); the others keep only `KEPT_ARGS`. `op_args`: keep what `scripts.ops`
    reads of the OP_ARG_KINDS in the same pass (of skipped kinds, as `Skipped.columns`; of the
    others, all their args, as `keep_args`); None: where the top-level keys written before the
    events (Kineto's `record_shapes`, `with_stack`, `profile_memory`) say there is some
    (`Trace.op_args` tells whether it was kept)."""
    builder = _Builder("", skip_kinds, keep_args, op_args)
    with paused_gc():
        metadata = read_trace(source, builder, progress=progress, max_bytes=max_bytes)
        return builder.finish(metadata)


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
        have = ", ".join(e.name.split("#")[1] for e in steps) or "none"
        raise TraceError(f"{trace.source or 'trace'}: no ProfilerStep#{step} (steps: {have})")
    if steps:
        first = steps[0]
        return Window(first.ts, first.end, first.name)
    return Window(0.0, trace.end_us, "whole trace")
