"""The trace model: a torch.profiler / Kineto chrome trace read into plain dataclasses.

Every other stage (analysis, timelines, pages) reads traces through `load_trace`, so format
differences between Kineto versions and vendors are settled here, once:

- timestamps become microseconds since the earliest event (`Trace.origin_us` keeps the offset), for
  old absolute-epoch traces and new `baseTimeNanoseconds` ones alike;
- categories become one `kind` per event (older spellings such as `Kernel`/`Runtime`, ROCm's
  `hip_*` names and CUDA's driver launches map to the same kinds);
- a file that is not a trace raises `TraceError` with a one-line message.

`load_trace` streams the file a chunk at a time instead of building the whole JSON document
(a gzip file is decompressed a chunk ahead, in a thread), reads the events of Kineto's own layout
in bulk with a regular expression, a column at a time (any other layout goes through `json`),
keeps only the `args` that the analysis and the timeline read (`KEPT_ARGS`), and skips flow
events: a 250k-event trace loads faster than `json.load` reads it, in a fraction of the memory.
`load_trace(path, skip_kinds=...)` does not make Events of the kinds it is told to skip, only
keeps their times (`Trace.skipped`): the facts need no more of the ops and the Python frames.
"""

from __future__ import annotations

import codecs
import gc
import json
import queue
import re
import sys
import threading
import zlib
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cached_property
from itertools import compress, groupby, islice, repeat
from operator import add, and_, attrgetter, eq, is_, not_, sub
from pathlib import Path

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

CHUNK_BYTES = 1 << 20  # text decompressed and decoded at a time
_GZIP_READ_BYTES = 1 << 20  # compressed bytes read at a time
_MARGIN = 1 << 20  # text buffered ahead of the parser before it looks for the last whole event


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


class TraceError(ValueError):
    """A file that cannot be read as a trace; the message is one line, fit for a user."""


@dataclass(slots=True)
class Event:
    """One complete (`ph: X`) event."""

    name: str
    kind: str
    cat: str
    ts: float  # microseconds since Trace.origin_us
    dur: float
    pid: int | str
    tid: int | str
    args: dict = field(default_factory=dict)  # only KEPT_ARGS

    @property
    def end(self) -> float:
        return self.ts + self.dur

    @property
    def correlation(self) -> int | None:
        return self.args.get("correlation")

    @property
    def is_gpu(self) -> bool:
        return self.kind in GPU_ACTIVITY_KINDS or self.kind == "gpu_annotation"


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
    start times (relative, as `Event.ts`) and durations, in file order."""

    ts: list[float]
    dur: list[float]

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

    @property
    def event_count(self) -> int:
        """The complete events of the file, skipped ones included."""
        return len(self.events) + sum(map(len, self.skipped.values()))

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
        return {
            e.args["correlation"]: e
            for kind in sorted(LAUNCH_KINDS)
            for e in self.by_kind.get(kind, [])
            if "correlation" in e.args
        }

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
    """Turns raw events into Events and Instants; shared by the streaming and the dict path.

    Times stay absolute until `finish`, which knows the earliest one. Events of `skip_kinds` are
    only counted, and their times kept for `finish`."""

    def __init__(self, source: str, skip_kinds=frozenset()):
        self.source = source
        self.skip_kinds = frozenset(skip_kinds)
        # The categories whose events the fast path's expression skips (Kineto's spellings).
        self.skipped_cats = tuple(sorted(cat for cat, kind in KIND_BY_CATEGORY.items()
                                         if kind in self.skip_kinds))
        self.skipped: dict[str, tuple[list, list]] = {}  # kind -> absolute starts, durations
        self.events: list[Event] = []
        self.instants: list[Instant] = []
        self.process_names: dict = {}
        self.thread_names: dict = {}
        self.raw_count = 0
        # Caches: the same names, categories and ids repeat thousands of times; one object each.
        self.strings: dict[str, str] = {}  # text -> the one copy kept
        self.texts: dict[str, str] = {}  # the fast path's raw text (escapes and all) -> string
        self.ids: dict[str, int | float | str] = {}  # pid/tid as written -> value
        self.kinds: dict[str, str] = {}  # cat -> kind

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
                return
            self.events.append(Event(
                self._intern(name), kind, self._intern(cat), ts,
                max(_number(raw.get("dur")), 0.0), raw.get("pid", 0), raw.get("tid", 0),
                _no_args_if_empty(_kept_args(raw.get("args"))) if kind not in _ARGLESS_KINDS
                else _NO_ARGS,
            ))
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

    def add_parts(self, parts: list[str], width: int, skip_groups: bool) -> None:
        """Add the events of the fast path's `split`: the text before a match, then the match's
        groups (`_Layout.x_event`), `width` items in all per match. Whole columns at a time.
        Raises ValueError, having added nothing, on text that is not what it should be: json
        reads that segment instead."""
        def column(group: int) -> list[str]:
            return parts[group::width]

        skipped = []
        keep = list(map(is_, column(1), repeat(None)))  # not a flow (a group left out is None)
        base = 1
        if skip_groups:
            flags = column(2)
            if any(flags):
                kinds = list(map(KIND_BY_CATEGORY.__getitem__, compress(flags, flags)))
                skipped += _by_key(kinds, _floats(compress(column(3), flags)),
                                   _durations(list(compress(column(4), flags))))
                keep = list(map(and_, keep, map(is_, flags, repeat(None))))
            base = 4
        events: list[Event] = []
        if any(keep):
            cats, names, pids, tids, starts, durs, bodies = (
                list(compress(column(base + i), keep)) for i in range(1, 8))
            names, cats = self._texts(names), self._texts(cats)
            kinds = self._kinds(cats, names)
            columns = [names, kinds, cats, _floats(starts), _durations(durs), self._ids(pids),
                       self._ids(tids), _args_column(kinds, bodies)]
            if self.skip_kinds and not self.skip_kinds.isdisjoint(kinds):  # not by category
                keep = [kind not in self.skip_kinds for kind in kinds]
                drop = list(map(not_, keep))
                skipped += _by_key(*(list(compress(columns[i], drop)) for i in (1, 3, 4)))
                columns = [list(compress(column, keep)) for column in columns]
            events = list(map(Event, *columns))
        self.events.extend(events)
        self._commit_skipped(skipped)

    def _commit_skipped(self, parts: list[tuple[str, list[float], list[float]]]) -> None:
        for kind, starts, durations in parts:
            times = self.skipped.get(kind)
            if times is None:
                times = self.skipped[kind] = ([], [])
            times[0].extend(starts)
            times[1].extend(durations)

    def _texts(self, column: tuple[str, ...]) -> list[str]:
        """Names or categories as written (escapes undone), one string object per text."""
        texts = self.texts
        found = list(map(texts.get, column))
        if not all(found):  # new texts (or empty ones)
            strings = self.strings
            for raw in set(column).difference(texts):
                text = json.loads(f'"{raw}"') if "\\" in raw else raw
                texts[raw] = strings.setdefault(text, text)
            found = list(map(texts.__getitem__, column))
        return found

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

    def _ids(self, column: tuple[str, ...]) -> list:
        ids = self.ids
        found = list(map(ids.get, column))
        if None in found:
            for text in set(column).difference(ids):
                _id(text, ids)
            found = list(map(ids.__getitem__, column))
        return found

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
        skipped = {kind: Skipped(list(map(sub, ts, repeat(origin))), dur)
                   for kind, (ts, dur) in sorted(self.skipped.items())}
        return Trace(events=events, instants=self.instants, metadata=metadata,
                     process_names=self.process_names, thread_names=self.thread_names,
                     origin_us=origin, source=self.source, skipped=skipped)


def _id(text: str, ids: dict):
    """A pid/tid as the trace wrote it: an int, or a string (Kineto's "Spans", "Traces")."""
    value = ids.get(text)
    if value is None:
        stripped = text.strip()
        if stripped.startswith('"'):
            value = json.loads(stripped)
        else:
            value = int(stripped) if stripped.lstrip("-").isdigit() else float(stripped)
        ids[text] = value
    return value


def _floats(column) -> list[float]:
    return list(map(float, column))


def _durations(column: list[str]) -> list[float]:
    """Durations as floats, negative ones (and -0.0 and NaN) made 0. Those are written with a
    minus sign or an 'n': only then are all of them clamped (so are 'inf' and '1e-05', to no
    effect)."""
    durations = list(map(float, column))
    text = "".join(column)
    if "-" in text or "n" in text or "N" in text:
        durations = list(map(max, repeat(0.0), durations))
    return durations


def _by_key(keys: list, *columns: list) -> list[tuple]:
    """(key, the column values of the rows with that key...) for each key."""
    distinct = set(keys)
    if len(distinct) == 1:
        return [(keys[0], *columns)]
    return [(key, *(list(compress(column, map(key.__eq__, keys))) for column in columns))
            for key in sorted(distinct)]


def _args_column(kinds: list[str], bodies: tuple[str, ...]) -> list[dict]:
    """The kept args of each event, from the text of its args object (without braces; None
    without args): one search through the bodies of the kinds that have kept args, joined by
    `"\\0"`."""
    column = [_NO_ARGS] * len(kinds)
    wanted = {kind for kind in set(kinds) if kind not in _ARGLESS_KINDS}
    if not wanted:
        return column
    where = list(compress(range(len(kinds)), map(wanted.__contains__, kinds)))
    texts = list(map(bodies.__getitem__, where))
    if None in texts:  # events without args
        texts = [text or "" for text in texts]
    text = '"\0"'.join(texts)
    if "{" in text or text.count("\0") != len(where) - 1:  # an object, a NUL inside args
        raise ValueError("args that json should read")
    at = iter(where)
    args = {}
    keys = _KEPT_ARG_KEYS  # one string object per key, as dict literals have: faster lookups
    for between, key, value in _KEPT_ARG.findall(text):
        if between:  # the end of an event's args
            i = next(at)
            if args:
                column[i] = args
                args = {}
        else:
            args[keys[key]] = int(value)
    if args:
        column[next(at)] = args
    return column


def _kept_args(args) -> dict:
    if not isinstance(args, dict):
        return {}
    return {k: args[k] for k in KEPT_ARGS if type(args.get(k)) is int}


def _no_args_if_empty(args: dict) -> dict:
    return args or _NO_ARGS


# --- the streaming reader -------------------------------------------------------------------
#
# The text is read in chunks. Each chunk is cut before its last event, and the complete events
# before the cut (a "segment") are read in bulk: one `split` by a regular expression for
# Kineto's complete events and flows, whose groups become columns (names, kinds, times, ...)
# that are converted a column at a time; no "ph" key may be left in the text between matches.
# A segment that the expression does not account for exactly is halved until the odd events are
# isolated, and those small pieces are decoded with `json`, so any producer's layout is read,
# only more slowly.


class _Layout:
    """One way of spelling events: Kineto writes `"ph": "X"`, re-serialized traces `"ph":"X"`."""

    def __init__(self, colon: str, comma: str):
        self.colon = colon  # ':' or ': '
        self.comma = comma  # the expression between two keys
        self.patterns: dict[tuple[str, ...], re.Pattern] = {}  # compiled when first needed

    def ph(self, value: str) -> str:
        """How `"ph": value` is spelled; value "" gives the prefix."""
        return f'"ph"{self.colon}"{value}' + ('"' if value else "")

    def x_event(self, skipped_cats: tuple[str, ...] = ()) -> re.Pattern:
        """The expression of a complete event or a flow; groups: the flow's ph, then with
        `skipped_cats` the cat, ts, dur of a skipped event, then cat, name, pid, tid, ts, dur,
        args body of an event to keep (a group that took no part in a match is None)."""
        pattern = self.patterns.get(skipped_cats)
        if pattern is None:
            pattern = self.patterns[skipped_cats] = _x_event_pattern(
                self.colon, self.comma, skipped_cats)
        return pattern


def _x_event_pattern(colon: str, comma: str, skipped_cats: tuple[str, ...]) -> re.Pattern:
    """A complete event in Kineto's key order, or the start of a flow event (`"ph"` first).
    A string stops at the first quote: one with an escaped quote does not match (json reads it),
    other escapes are undone after. Args end at the first '}' (an object inside them is refused
    when they are read, see `_args_column`). Possessive quantifiers keep the engine from
    backtracking; classes of one character scan fast (and `[^}]*` faster than `[^}]*+`)."""
    def key(name):
        return f'{comma}"{name}"{colon}'

    def fields(group: str) -> str:  # pid, tid, ts, dur, args, captured by `group`
        g = group.format
        return (rf'{key("pid")}{g("[^,]*+")}{key("tid")}{g("[^,]*+")}{key("ts")}([^,]*+)'
                rf'{key("dur")}([^,}}]*+)(?:{key("args")}\{{{g("[^}]*")}\}}\s*+)?\}}')

    event = rf'"([^"]*+)"{key("name")}"([^"]*+)"' + fields("({})")
    if skipped_cats:
        cats = "|".join(map(re.escape, skipped_cats))
        event = rf'(?:"({cats})"{key("name")}"[^"]*+"' + fields("{}") + f"|{event})"
    return re.compile(rf'\{{\s*+"ph"{colon}"(?:([fs])"|X"{key("cat")}{event})')


_LAYOUTS = (_Layout(":", ","), _Layout(": ", r",\s*+"))
_OTHER_PH = re.compile(r'"ph"\s*:\s*"([^Xsf"][^"]*)"')  # events read one by one with json
# A kept integer arg, or the `"\0"` between two events' args (a quote first: the search skips
# to quotes fast).
_KEPT_ARG = re.compile(r'"(?:(\0)"|(' + "|".join(map(re.escape, KEPT_ARGS))
                       + r')"\s*:\s*(-?\d+)(?=[,}\s"]|\Z))')
_KEPT_ARG_KEYS = {sys.intern(key): sys.intern(key) for key in KEPT_ARGS}
_SPACE = re.compile(r"\s*")
_SMALLEST_SEGMENT = 1 << 15  # below this, a segment that the fast path misreads goes to json


def _event_start_before(buf: str, start: int, end: int) -> int:
    """The position of the last event that begins in buf[start:end] with its "ph" key (the '{'
    of `{"ph"`), or -1. A quote inside a JSON string is escaped, so `"ph"` is always a key."""
    found = buf.rfind('"ph"', start, end)
    while found > start:
        before = found - 1
        while before > start and buf[before] in " \t\r\n":
            before -= 1
        if buf[before] == "{":
            return before
        found = buf.rfind('"ph"', start, found)
    return -1


def _read_segment(buf: str, start: int, end: int, builder: _Builder) -> None:
    """Read the complete events in buf[start:end]: in bulk where possible, else by halves."""
    if _read_segment_fast(buf, start, end, builder):
        return
    middle = _event_start_before(buf, start, (start + end) // 2)
    if end - start <= _SMALLEST_SEGMENT or middle <= start:
        _read_segment_json(buf, start, end, builder)
        return
    _read_segment(buf, start, middle, builder)
    _read_segment(buf, middle, end, builder)


def _read_segment_fast(buf: str, start: int, end: int, builder: _Builder) -> bool:
    """Read the segment with its layout's expression; False (and nothing added) if the
    expression does not account for every event in it."""
    first = buf.find('"ph"', start, end)
    layout = next((lay for lay in _LAYOUTS if buf.startswith(lay.ph(""), first, end)), None)
    if first < 0 or layout is None:
        return False
    pattern = layout.x_event(builder.skipped_cats)
    parts = pattern.split(buf[start:end])
    width = pattern.groups + 1
    matched = len(parts) // width
    # Every event starts with a "ph" key, and `"ph"` is never inside a string (its quotes would be
    # escaped). So the events that the expression did not read are those whose "ph" is in the
    # text between matches: json reads them here if they are neither complete nor flows.
    others = []
    if '"ph"' in "".join(parts[::width]):
        others = _decode_others(buf, start, end)
        if others is None or len(others) != buf.count('"ph"', start, end) - matched:
            return False
    try:
        builder.add_parts(parts, width, bool(builder.skipped_cats))
    except ValueError:  # a number that is not one: let json say what is wrong
        return False
    builder.raw_count += matched
    for raw in others:
        builder.add_raw(raw)
    return True


def _decode_others(buf: str, start: int, end: int) -> list[dict] | None:
    """The events of the segment that are neither complete events nor flows (metadata,
    instants, counters), decoded with json; None if one cannot be located."""
    decoded = []
    for match in _OTHER_PH.finditer(buf, start, end):
        brace = buf.rfind("{", start, match.start())
        try:
            raw, _ = _DECODER.raw_decode(buf, brace) if brace >= 0 else (None, 0)
        except json.JSONDecodeError:
            return None
        if not isinstance(raw, dict) or raw.get("ph") != match.group(1):
            return None
        decoded.append(raw)
    return decoded


def _read_segment_json(buf: str, start: int, end: int, builder: _Builder) -> None:
    pos = start
    while True:
        pos = _SPACE.match(buf, pos).end()
        if pos < end and buf[pos] == ",":
            pos += 1
            continue
        if pos >= end:
            return
        try:
            raw, pos = _DECODER.raw_decode(buf, pos)
        except json.JSONDecodeError as err:
            raise TraceError(f"{builder.source}: not a readable trace (invalid JSON in "
                             f"traceEvents: {err.msg})") from None
        builder.add_raw(raw)


@contextmanager
def _readable(path: Path):
    """A file that cannot be opened or read, as a one-line TraceError."""
    try:
        yield
    except FileNotFoundError:
        raise TraceError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise TraceError(f"{path}: is a directory, not a trace file") from None
    except OSError as err:
        raise TraceError(f"{path}: cannot read ({err.strerror})") from None


def _open_bytes(path: Path):
    """A binary stream of the file's JSON text (gunzipped when the content is gzip)."""
    with _readable(path):
        handle = path.open("rb")
    if handle.read(2) == b"\x1f\x8b":
        handle.seek(0)
        return handle, _Gunzip(handle)
    handle.seek(0)
    return handle, handle


class _Gunzip:
    """The decompressed content of a gzip file, read as `GzipFile` would (several members,
    zero padding after them), decompressed ahead in a thread: zlib lets go of the interpreter
    while it works, so that the parser runs meanwhile. The thread needs the interpreter back
    several times per call (zlib fills its output in blocks), and waits for it while the parser
    is in a long call: so it decompresses several chunks per call, and hands them over through
    C-level queues (a chunk queue, and a queue of tokens that bounds how far ahead it runs).
    `read` returns the next chunk (a memoryview), b"" at the end, and raises what went wrong
    (EOFError, OSError, zlib.error)."""

    AHEAD = 8  # chunks decompressed at a time, and at most waiting to be read

    def __init__(self, handle):
        self.handle = handle
        self.chunks: queue.SimpleQueue = queue.SimpleQueue()  # (chunk or error, file position)
        self.tokens: queue.SimpleQueue = queue.SimpleQueue()  # one per chunk it may decompress
        for _ in range(self.AHEAD):
            self.tokens.put(True)
        self.position = 0  # compressed bytes behind the chunks read so far
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def read(self, size: int = -1) -> bytes | memoryview:
        chunk, self.position = self.chunks.get()
        self.tokens.put(True)
        if isinstance(chunk, BaseException):
            raise chunk
        return chunk

    def tell(self) -> int:
        return self.position

    def close(self) -> None:
        self.tokens.put(False)  # stop at the next chunk
        self.thread.join()

    def _run(self) -> None:
        put, take, tell = self.chunks.put, self.tokens.get, self.handle.tell
        try:
            for chunk in self._decompressed():
                if not take():
                    return
                put((chunk, tell()))
            item = b""
        except (EOFError, OSError, zlib.error) as err:
            item = err
        if take():
            put((item, tell()))

    def _decompressed(self):
        read = self.handle.read
        data = b""
        calls = 0  # the first chunks one by one (the parser waits for them), then more
        while True:  # one gzip member
            member = zlib.decompressobj(wbits=31)
            while not member.eof:
                if not data:
                    data = read(_GZIP_READ_BYTES)
                    if not data:
                        raise EOFError("compressed file ended before the end of a member")
                size = CHUNK_BYTES
                text = memoryview(member.decompress(data, size * min(self.AHEAD, 1 << calls // 2)))
                calls += 1
                data = member.unconsumed_tail
                for start in range(0, len(text), size):
                    yield text[start:start + size]
            data = member.unused_data
            while not data.lstrip(b"\0"):  # zero padding, then the end or another member
                more = read(_GZIP_READ_BYTES)
                if not more:
                    return
                data = more
            data = data.lstrip(b"\0")
            if len(data) < 2:
                data += read(_GZIP_READ_BYTES)
            if not data.startswith(b"\x1f\x8b"):
                raise OSError("not a gzipped file after a member")


class _Stream:
    """The parser's view of the file: a text buffer that is refilled from the file on demand."""

    def __init__(self, path: Path, progress: Callable[[int, int], None] | None):
        self.path = path
        self.raw, self.data = _open_bytes(path)
        self.size = path.stat().st_size
        self.progress = progress
        self.decoder = codecs.getincrementaldecoder("utf-8")()
        self.buf = ""
        self.pos = 0
        self.eof = False

    def close(self):
        self.data.close()
        self.raw.close()

    def fail(self, what: str) -> TraceError:
        return TraceError(f"{self.path}: {what}")

    def refill(self) -> None:
        """Append the next chunk of text (dropping what the parser has consumed)."""
        if self.eof:
            return
        try:
            chunk = self.data.read(CHUNK_BYTES)
        except (EOFError, OSError, zlib.error):
            raise self.fail("gzip data is truncated or corrupt") from None
        try:
            text = self.decoder.decode(chunk, final=not chunk)
        except UnicodeDecodeError:
            raise self.fail("not a trace (binary data, not JSON)") from None
        self.eof = not chunk
        self.buf = self.buf[self.pos:] + text
        self.pos = 0
        if self.progress is not None:
            self.progress(self.data.tell(), self.size)

    def ensure(self, margin: int = _MARGIN) -> None:
        while not self.eof and len(self.buf) - self.pos < margin:
            self.refill()

    def skip_space(self) -> str:
        """Skip whitespace and return the next character ('' at the end of the file)."""
        while True:
            self.pos = _SPACE.match(self.buf, self.pos).end()
            if self.pos < len(self.buf) or self.eof:
                return self.buf[self.pos: self.pos + 1]
            self.refill()

    def expect(self, char: str, where: str) -> None:
        found = self.skip_space()
        if found != char:
            raise self.fail(self.unexpected(found, where))
        self.pos += 1

    def unexpected(self, found: str, where: str) -> str:
        if not found:
            return f"truncated ({where})"
        return f"not a readable trace (unexpected {found!r} {where})"

    def value(self, where: str):
        """Decode one JSON value at the current position, reading more text as needed."""
        self.skip_space()
        while True:
            try:
                value, end = _DECODER.raw_decode(self.buf, self.pos)
            except json.JSONDecodeError as err:
                near_end = err.pos >= len(self.buf) - _MARGIN // 2
                if self.eof or not near_end:
                    what = "truncated" if self.eof and near_end else "invalid JSON"
                    raise self.fail(f"not a readable trace ({what} {where}: {err.msg})") from None
                self.ensure(len(self.buf) - self.pos + _MARGIN)
                continue
            self.pos = end
            return value


_DECODER = json.JSONDecoder()


def _parse_document(stream: _Stream, builder: _Builder) -> dict:
    """Walk the top-level object, streaming traceEvents; returns the other top-level keys."""
    stream.ensure()
    first = stream.skip_space()
    if first == "\ufeff":  # a byte-order mark
        stream.pos += 1
        first = stream.skip_space()
    if first == "[":  # the JSON Array Format of the trace-event spec
        stream.pos += 1
        _parse_events(stream, builder)
        return {}
    if first != "{":
        raise stream.fail("not a trace (empty file)" if not first else "not a trace (not JSON)")
    stream.pos += 1
    metadata: dict = {}
    has_events = False
    while True:
        found = stream.skip_space()
        if found == "}":
            break
        if found != '"':
            raise stream.fail(stream.unexpected(found, "in the top-level object"))
        key = stream.value("in the top-level object")
        stream.expect(":", f"after key {key!r}")
        if key == "traceEvents" and stream.skip_space() == "[":
            stream.pos += 1
            _parse_events(stream, builder)
            has_events = True
        else:
            metadata[key] = stream.value(f"in {key!r}")
        found = stream.skip_space()
        if found == ",":
            stream.pos += 1
        elif found != "}":
            raise stream.fail(stream.unexpected(found, "in the top-level object"))
    if not has_events:
        raise stream.fail("JSON, but not a chrome trace (no traceEvents list)")
    return metadata


def _parse_events(stream: _Stream, builder: _Builder) -> None:
    """The traceEvents array, from after its '[' to after its ']'."""
    while True:
        stream.ensure()
        cut = _event_start_before(stream.buf, stream.pos, len(stream.buf))
        if cut > stream.pos:  # all events before the last one that starts in the buffer
            _read_segment(stream.buf, stream.pos, cut, builder)
            stream.pos = cut
            if not stream.eof:
                continue
        # The last event (or one larger than the buffer), and the end of the array.
        found = stream.skip_space()
        if found == "]":
            stream.pos += 1
            return
        if found == ",":
            stream.pos += 1
            continue
        if not found:
            raise stream.fail("truncated (ends inside traceEvents)")
        builder.add_raw(stream.value("in traceEvents"))


# --- public entry points ---------------------------------------------------------------------


def read_json(path: Path) -> dict:
    """Read `.json` or `.json.gz` (by content, not by name) into a dict, or raise TraceError."""
    with _readable(path):
        raw = path.read_bytes()
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


def build_trace(data: dict, source: str = "", skip_kinds=frozenset()) -> Trace:
    """A Trace from an already decoded chrome trace dict (`skip_kinds`: as for `load_trace`)."""
    builder = _Builder(source, skip_kinds)
    for raw in data["traceEvents"]:
        builder.add_raw(raw)
    return builder.finish({k: v for k, v in data.items() if k != "traceEvents"})


def load_trace(path: str | Path, progress: Callable[[int, int], None] | None = None,
               skip_kinds=frozenset()) -> Trace:
    """Read a `.json` or `.json.gz` trace (gzip is told by content). `progress(done, total)` is
    called with file bytes read after each chunk. Complete events of `skip_kinds` (e.g.
    {"python"}: the stack frames of `with_stack=True`, most of such a trace) are not made into
    Events, which is faster; `Trace.skipped` counts them, and they still count in
    `Trace.event_count`, `end_us` and `origin_us`."""
    path = Path(path)
    stream = _Stream(path, progress)
    builder = _Builder(str(path), skip_kinds)
    with paused_gc():
        try:
            return builder.finish(_parse_document(stream, builder))
        finally:
            stream.close()


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
