"""The trace model's builder: raw events (from `scripts.tracefacts.reading.events`'s stream, or a decoded dict) into
the Events, Instants and skipped columns of `scripts.tracefacts.model.records`, and the entry points `load_trace`,
`build_trace` and `read_json` (`scripts.tracefacts.model.trace` gives them with the model: import from there)."""

from __future__ import annotations

import json
import math
import struct
import zlib
from array import array
from collections import Counter
from collections.abc import Callable
from itertools import chain, compress, repeat
from operator import and_, attrgetter, is_not, not_, sub, truth
from pathlib import Path

from ..reading.columns import int_args
from .columnar.rows import (_CHUNK, MISSING, OP_ARG_KINDS, OP_ARGS, OpColumns, in_trace_order, op_values,
                     pieces, taken, trace_order_in_pieces)
from ..reading.events import TraceError, read_trace
from .records import (_ARGLESS_KINDS, _NO_ARGS, GPU_ACTIVITY_KINDS, KEPT_ARGS,
                          KIND_BY_CATEGORY, LAUNCH_KINDS, PROFILER_FLAGS, Event, Instant, Skipped,
                          Trace, _in_trace_order, _kind, paused_gc)

# Kinds that, where skipped, are kept as columns with the ids of their kept args (what the facts
# read of them: scripts/tracefacts/model/launches.py).
_ID_KINDS = LAUNCH_KINDS | GPU_ACTIVITY_KINDS


# A time (ts, dur) larger than this many us is no clock's: a Unix time in us is 1.7e15, in ns
# 1.7e18. An event with a time beyond it, NaN, infinite, or not a number is left out (and said in
# a note): one kernel at 1e300 would otherwise make every share of the trace 0.
MAX_TIME_US = 1e20


def _number(value, default=0.0) -> float:
    try:
        return float(value)
    except (TypeError, ValueError, OverflowError):
        return default


def _time(value) -> float | None:
    """A time as the trace gives it (a number, or the text of one), None where it is not a
    usable one: missing, of another type (a bool, a list), NaN, infinite, beyond MAX_TIME_US."""
    if value is None or value.__class__ is bool:
        return None
    found = _number(value, None)
    return found if found is not None and -MAX_TIME_US <= found <= MAX_TIME_US else None


def _usable_rows(starts: list[float], durations: list[float]) -> list[bool] | None:
    """None where every row's start and duration are usable times (as a rule: told by a sum, a
    min and a max at C speed); else whether each row's are. Durations are not negative here
    (clamped at 0): their sum bounds each of them, and is NaN if one is."""
    if not starts:
        return None
    total = sum(durations)
    if (0.0 <= total <= MAX_TIME_US and -MAX_TIME_US <= min(starts) and max(starts) <= MAX_TIME_US
            and math.isfinite(sum(starts))):
        return None
    return [-MAX_TIME_US <= start <= MAX_TIME_US and 0.0 <= dur <= MAX_TIME_US
            for start, dur in zip(starts, durations)]


def _ids_of(values: list) -> list:
    """pid or tid values as keys: ints and strings as they are (as a rule all of them); any other
    JSON value (a list, an object, null, a bool) by its JSON text, so that it names one lane."""
    if {int, str}.issuperset(map(type, values)):
        return values
    return list(map(_id, values))


def _id(value):
    if value.__class__ in (int, str, float) and value == value:  # NaN: no key finds it again
        return value
    try:
        return json.dumps(value)
    except ValueError:  # NaN, infinities
        return str(value)


class _Builder:
    """Turns raw events into Events and Instants: the sink of `scripts.tracefacts.reading.events.read_trace`, and
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
        # Skipped kinds kept as OpColumns: launch calls and GPU activities with the ids of their
        # kept args (what the facts read of them), and with op_args the ops' and frames' args.
        self.columns_of: frozenset = _ID_KINDS & self.skip_kinds
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
        self.renamed: dict = {}  # (pid, tid) -> every name of a thread named more than once
        self.raw_count = 0
        self.unusable: Counter = Counter()  # kind -> complete events left out for their times
        self.begun: list[dict] = []  # `B` and `E` events, paired into complete ones at the end
        # Caches: the same names, categories and ids repeat thousands of times; one object each.
        self.strings: dict[str, str] = {}  # text -> the one copy kept
        self.ids: dict = {}  # pid/tid -> the one object kept (of those the compiled path gives)
        self.kinds: dict[str, str] = {}  # cat -> kind
        self.shared: dict[tuple, dict] = {}  # kept args but the correlation id -> the one copy
        self.others_by_values: dict[tuple, dict] = {}  # the same, by the compiled path's values

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
        """What scripts.tracefacts.facts.ops reads of CPU ops and Python frames: columns of the skipped ones, all
        args of the others (as `keep_args`)."""
        self.columns_of |= OP_ARG_KINDS & self.skip_kinds
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
            self._add_complete_raw(raw)
        elif ph in ("B", "E"):
            self.begun.append(raw)
        elif ph == "M":
            args = raw.get("args")
            name = _label(args.get("name")) if isinstance(args, dict) else ""
            if raw.get("name") == "process_name":
                self.process_names[_id(raw.get("pid"))] = name
            elif raw.get("name") == "thread_name":
                key = (_id(raw.get("pid")), _id(raw.get("tid")))
                earlier = self.thread_names.get(key)
                if earlier is not None and earlier != name:
                    self.renamed.setdefault(key, [earlier]).append(name)
                self.thread_names[key] = name
        elif ph in ("i", "I"):
            ts = _time(raw.get("ts"))
            if ts is None:
                return
            args = raw.get("args")
            self.instants.append(Instant(
                name=_label(raw.get("name")), cat=_label(raw.get("cat")),
                ts=ts, pid=_id(raw.get("pid", 0)), tid=_id(raw.get("tid", 0)),
                args=args if isinstance(args, dict) else {},
            ))

    def _add_complete_raw(self, raw: dict) -> None:
        name, cat = _label(raw.get("name")), _label(raw.get("cat"))
        kind = _kind(cat, name)
        ts, dur = _time(raw.get("ts")), raw.get("dur")
        dur = 0.0 if dur is None else _time(dur)
        if ts is None or dur is None:
            self.unusable[kind] += 1
            return
        dur = max(dur, 0.0)
        pid, tid = _id(raw.get("pid", 0)), _id(raw.get("tid", 0))
        if kind in self.skip_kinds:
            self._commit_skipped([(kind, [ts], [dur])])
            if kind in self.columns_of:
                kept = _kept_args(raw.get("args"))
                self._commit_columns(kind, [self._intern(name)], [pid], [tid],
                                     [op_values(raw.get("args"))], [kept.get("correlation")], [kept])
            return
        correlation, args = None, _NO_ARGS
        if kind in self.keep_args:
            args = _whole_args(raw.get("args"))
        elif kind not in _ARGLESS_KINDS:
            correlation, args = self._shared(_kept_args(raw.get("args")))
        self.events.append(Event(self._intern(name), kind, self._intern(cat), ts, dur, pid, tid,
                                 args, correlation))

    def _pair_begun(self) -> int:
        """Each `B` event with the `E` that ends it (the latest `B` not yet ended on its pid and
        tid, in time order, as trace viewers pair them) as one complete event: its name,
        category and args (with the `E`'s args added), from the `B`'s start to the `E`'s. The
        number of `B` and `E` events left without their other half."""
        begun, self.begun = self.begun, []
        timed = [(ts, i, raw) for i, raw in enumerate(begun) if (ts := _time(raw.get("ts"))) is not None]
        unusable = len(begun) - len(timed)
        timed.sort(key=lambda item: item[:2])  # by time, in file order among equal times
        open_by_lane: dict[tuple, list] = {}
        for ts, _, raw in timed:
            lane = open_by_lane.setdefault((_id(raw.get("pid", 0)), _id(raw.get("tid", 0))), [])
            if raw.get("ph") == "B":
                lane.append((ts, raw))
            elif lane:
                start, first = lane.pop()
                args = first.get("args")
                args = dict(args) if isinstance(args, dict) else {}
                if isinstance(raw.get("args"), dict):
                    args.update(raw["args"])
                self._add_complete_raw({**first, "ph": "X", "ts": start, "dur": ts - start,
                                        "args": args})
            else:
                unusable += 1
        return unusable + sum(map(len, open_by_lane.values()))

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
        """Complete events read as columns (see `scripts.tracefacts.reading.events.EventSink`: one string object per
        name already), whole columns at a time."""
        usable = _usable_rows(starts, durations)
        if usable is not None:
            self._count_unusable(cats, names, usable)
            cats, names, pids, tids, starts, durations, bodies = (
                list(compress(column, usable))
                for column in (cats, names, pids, tids, starts, durations, bodies))
        pids, tids = _ids_of(pids), _ids_of(tids)
        kinds, distinct = self._kinds(cats, names)
        column = _args_column(kinds, bodies)
        correlations = self._split(column)
        if self.keep_args and not self.keep_args.isdisjoint(kinds):
            _add_whole_args(column, correlations, kinds, bodies, self.keep_args)
        op_args = None
        if "cpu_op" in self.columns_of and "cpu_op" in kinds:
            op_args = _op_args_column(kinds, bodies)
        self._add_columns(kinds, distinct, [names, kinds, cats, starts, durations, pids, tids,
                                            column, correlations], op_args)

    def group_of(self, cat: str) -> str | None:
        """The group of a category's complete events for `add_columns` (see
        `scripts.tracefacts.reading.msgspec_events`): their kind where it is skipped, else "" (made into Events, in
        file order); None where the kind is told by the event's name."""
        kind = self._category_kind(cat)
        if kind is None:
            return None
        return kind if kind in self.skip_kinds else ""

    def add_columns(self, cats: list[str], names: list[str], pids: list, tids: list,
                    starts: list[float], durations: list[float], args: list,
                    read_args: Callable[[list], list]) -> None:
        """Complete events from the compiled path: `read_args` reads the kept args' values of
        the args objects (`args`), only of the kinds that keep some (never whole args: a sink
        with keep_args gets no compiled path, scripts.tracefacts.reading.msgspec_events.runs_for); and the CPU ops'
        OP_ARGS where they are kept as columns (`raw_args`: as JSON text)."""
        usable = _usable_rows(starts, durations)
        if usable is not None:
            self._count_unusable(cats, names, usable)
            cats, names, pids, tids, starts, durations, args = (
                list(compress(column, usable))
                for column in (cats, names, pids, tids, starts, durations, args))
        kinds, distinct = self._kinds(cats, names)
        column = [_NO_ARGS] * len(kinds)
        correlations: list = [None] * len(kinds)
        if not self.skip_kinds.issuperset(distinct):  # Events: one object per text, per id
            strings, ids = self.strings, self.ids
            names = list(map(strings.setdefault, names, names))
            pids = list(map(ids.setdefault, pids, pids))
            tids = list(map(ids.setdefault, tids, tids))
        wanted = distinct.difference(_ARGLESS_KINDS, self.skip_kinds - _ID_KINDS)
        with_ops = "cpu_op" in self.columns_of and "cpu_op" in distinct
        # All rows of one kind (as `scripts.tracefacts.reading.msgspec_events` groups them), all with args: no picking.
        every = (wanted or with_ops) and len(distinct) == 1 and None not in args
        given = None if every or not (wanted or with_ops) else list(map(is_not, args, repeat(None)))
        where = (range(len(kinds)) if every else _rows(kinds, wanted, given)) if wanted else []
        if where:
            self._kept_values(where, _picked(args, where), read_args, column, correlations)
        op_args = None
        if with_ops:
            where = range(len(kinds)) if every else _rows(kinds, {"cpu_op"}, given)
            # OP_ARGS, in order (after KEPT_ARGS)
            values = read_args(_picked(args, where), slice(len(KEPT_ARGS), None)) if where else []
            if len(where) == len(kinds) and (every or None not in values):
                op_args = values
            else:
                op_args = [None] * len(kinds)
                for i, found in zip(where, values):
                    if found is not None:
                        op_args[i] = found
        self._add_columns(kinds, distinct, [names, kinds, cats, starts, durations, pids, tids,
                                            column, correlations], op_args)

    def _kept_values(self, where: list[int], args: list, read_args: Callable, column: list,
                     correlations: list) -> None:
        """The correlation ids and shared others (as `_shared`) of rows `where` from the values
        of their KEPT_ARGS (`read_args` of their `args`; maybe others after them): where those
        are ints or absent (as a rule), looked up by the values but the correlation id, not a
        dict made per event."""
        n = len(KEPT_ARGS)
        ids, others = read_args(args, 0), read_args(args, slice(1, n))
        # Only ints and MISSING: no two values that compare equal are read differently (1, 1.0
        # and True would be one key). A null args object (None): not those either.
        if not {int, object}.issuperset(set(map(type, ids)).union(
                map(type, chain.from_iterable(others)) if None not in others else (None,))):
            for i, found in zip(where, read_args(args)):
                if found is not None:
                    kept = {k: v for k, v in zip(KEPT_ARGS, found) if type(v) is int}
                    if kept:
                        correlations[i], column[i] = self._shared(kept)
            return
        if MISSING in ids:
            ids = [None if found is MISSING else found for found in ids]
        by_values = self.others_by_values
        for key in set(others).difference(by_values):
            args = {k: v for k, v in zip(KEPT_ARGS[1:], key) if v is not MISSING}
            by_values[key] = self.shared.setdefault(tuple(args.items()), args) if args \
                else _NO_ARGS
        if len(where) == len(column):  # every row
            correlations[:], column[:] = ids, map(by_values.__getitem__, others)
            return
        for i, correlation, found in zip(where, ids, map(by_values.__getitem__, others)):
            correlations[i], column[i] = correlation, found

    def _add_columns(self, kinds: list[str], distinct: set[str], columns: list[list],
                     op_args: list | None = None) -> None:
        """Rows (`columns`: names, kinds, cats, starts, durations, pids, tids, kept args,
        correlation ids) of the `distinct` kinds: Events, or of skipped kinds their times and
        maybe columns."""
        self.raw_count += len(kinds)
        skipped = self.skip_kinds.intersection(distinct)  # not by category
        if len(distinct) == 1 and skipped:  # one skipped kind: no picking
            kind = kinds[0]
            self._commit_skipped([(kind, columns[3], columns[4])])
            if kind in self.columns_of:
                self._commit_columns(kind, columns[0], columns[5], columns[6], op_args,
                                     columns[8], columns[7])
            return
        if skipped:
            starts, durations = columns[3], columns[4]
            for kind in sorted(skipped):  # one pick of the rows of each kind, for all its columns
                rows = list(map(kind.__eq__, kinds))
                self._commit_skipped([(kind, list(compress(starts, rows)),
                                       list(compress(durations, rows)))])
                if kind in self.columns_of:
                    self._commit_columns(kind, *(list(compress(columns[i], rows))
                                                 for i in (0, 5, 6)),
                                         list(compress(op_args, rows)) if op_args else None,
                                         *(list(compress(columns[i], rows)) for i in (8, 7)))
            keep = list(map(not_, map(self.skip_kinds.__contains__, kinds)))
            columns = [list(compress(column, keep)) for column in columns]
        self.events.extend(map(Event, *columns))

    def _commit_columns(self, kind: str, names: list, pids: list, tids: list,
                        args: list | None, correlations: list, others: list[dict]) -> None:
        found = self.columns.get(kind)
        if found is None:
            found = self.columns[kind] = OpColumns(
                with_args=kind == "cpu_op", with_correlations=kind in _ID_KINDS,
                with_streams=kind in GPU_ACTIVITY_KINDS)
        found.add(names, pids, tids, args, correlations, others)

    def add_times(self, cats: list[str], starts: list[float], durations: list[float]) -> None:
        """Complete events of `times_only_cats`, as columns."""
        self.raw_count += len(cats)
        usable = _usable_rows(starts, durations)
        if usable is not None:
            self._count_unusable(cats, cats, usable)
            cats, starts, durations = (list(compress(column, usable))
                                       for column in (cats, starts, durations))
        self._commit_skipped(_by_key(list(map(KIND_BY_CATEGORY.__getitem__, cats)), starts,
                                     durations))

    def _count_unusable(self, cats: list[str], names: list[str], usable: list[bool]) -> None:
        """Count the rows left out for their times, by kind."""
        left = list(map(not_, usable))
        self.unusable.update(_kind(cat, name) for cat, name in zip(compress(cats, left),
                                                                   compress(names, left)))

    def add_unread(self, count: int) -> None:
        self.raw_count += count

    def _commit_skipped(self, parts: list[tuple[str, list[float], list[float]]]) -> None:
        for kind, starts, durations in parts:
            times = self.skipped.get(kind)
            if times is None:  # arrays: 16 bytes an event, not a list's 64
                times = self.skipped[kind] = (array("d"), array("d"))
            times[0].frombytes(_packed(starts))  # made at once: a list's extend goes item by item
            times[1].frombytes(_packed(durations))

    def _kinds(self, cats: list[str], names: list[str]) -> tuple[list[str], set[str]]:
        """The kind of each row, and the set of them."""
        kinds = self.kinds  # only categories that decide the kind alone
        if cats and cats.count(cats[0]) == len(cats) and cats[0] in kinds:  # one (compiled groups)
            return [kinds[cats[0]]] * len(cats), {kinds[cats[0]]}
        by_name = None in [self._category_kind(cat) for cat in set(cats).difference(kinds)]
        if by_name:
            found = [kinds.get(cat) or _kind(cat, name) for cat, name in zip(cats, names)]
        else:
            found = list(map(kinds.__getitem__, cats))
        return found, set(found)

    def _category_kind(self, cat: str) -> str | None:
        """The kind of a category's events, kept in `kinds`; None where the name tells it."""
        kind = self.kinds.get(cat)
        if kind is None:
            kind = KIND_BY_CATEGORY.get(cat.lower())
            if kind is not None:
                self.kinds[cat] = kind
        return kind

    def finish(self, metadata: dict) -> Trace:
        unpaired = self._pair_begun() if self.begun else 0
        for key, names in self.renamed.items():
            self.thread_names[key] = _own_name(key, names, self.thread_names)
        events = self.events
        if not events and not self.skipped and self.raw_count and not self.instants:
            if self.unusable:
                raise TraceError(f"{self.source or 'trace'}: none of its complete ('X') events has "
                                 "a usable start and duration (a number, finite, at most "
                                 f"{MAX_TIME_US:g} us)")
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
        for kind in sorted(self.skipped):
            ts, dur = self.skipped.pop(kind)  # the absolute times dropped once made relative
            ts = _shifted(ts, origin)
            columns = self.columns.get(kind)
            if columns is not None and not in_trace_order(ts, dur):
                order, ts, parts = trace_order_in_pieces(ts, dur)
                ts = ts if isinstance(ts, array) else array("d", ts)
                if parts is False:  # as a rule a few hundred: every column taken in slices
                    parts = pieces(order)
                dur = taken(dur, order, parts)
                columns.reorder(order, parts)
                del order, parts
            skipped[kind] = Skipped(ts, dur, columns)
        return Trace(events=events, instants=self.instants, metadata=metadata,
                     process_names=self.process_names, thread_names=self.thread_names,
                     origin_us=origin, source=self.source, skipped=skipped,
                     op_args=bool(self.op_args), reading_notes=self._notes(unpaired))

    def _notes(self, unpaired: int) -> list[str]:
        """What the reading left out, in words for the facts' notes."""
        notes = []
        if self.unusable:
            kinds = ", ".join(f"{n:,} {kind}" for kind, n in sorted(self.unusable.items()))
            notes.append(f"{_count(sum(self.unusable.values()), 'complete event')} left out ({kinds}): "
                         "a start or duration missing, not a number, NaN, infinite or beyond "
                         f"{MAX_TIME_US:g} us")
        if unpaired:
            notes.append(f"{_count(unpaired, 'B/E (begin/end) event')} left out: each needs its other half "
                         "on the same pid and tid")
        return notes


def _own_name(key: tuple, names: list[str], thread_names: dict) -> str:
    """The name of a thread Kineto lists under several: one for each name it saw the thread under,
    in no fixed order. A thread that named itself (autograd's device threads: `pt_autograd_0`) is
    also listed under its process's name, the one its main thread (tid = pid) carries in
    parentheses, `thread 1520 (python3)`: the name of its own wins; else the last one listed."""
    main = thread_names.get((key[0], key[0]), "")
    generic = main[main.rfind("("):] if main.endswith(")") and "(" in main else None
    own = [name for name in names if not (generic and name.endswith(generic))]
    return own[-1] if own else names[-1]


def _packed(floats, count: int | None = None) -> bytes:
    """Floats (a list, or an iterator of `count` of them) as an array's bytes, by struct: twice
    as fast as an array made of them (which parses a format for each)."""
    return struct.pack(f"{len(floats) if count is None else count}d", *floats)


def _shifted(times: array, origin: float) -> array:
    """`time - origin` of each, a chunk of rows at a time (`_packed`)."""
    found = array("d")
    for first in range(0, len(times), _CHUNK):
        chunk = times[first:first + _CHUNK]
        found.frombytes(_packed(map(sub, chunk, repeat(origin)), len(chunk)))
    return found


def _by_key(keys: list, *columns: list) -> list[tuple]:
    """(key, the column values of the rows with that key...) for each key."""
    distinct = set(keys)
    if len(distinct) == 1:
        return [(keys[0], *columns)]
    return [(key, *(list(compress(column, map(key.__eq__, keys))) for column in columns))
            for key in sorted(distinct)]


def _picked(column: list, where) -> list:
    """The values of `column` at rows `where` (a range: all of them)."""
    return column if isinstance(where, range) else list(map(column.__getitem__, where))


def _rows(kinds: list[str], wanted: set, given: list[bool]) -> list[int]:
    """The rows of the `wanted` kinds that are `given` (args)."""
    return list(compress(range(len(kinds)), map(and_, map(wanted.__contains__, kinds), given)))


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
            except ValueError:  # the reader is laxer than JSON inside args (see scripts.tracefacts.reading.events)
                pass


def _op_args_column(kinds: list[str], bodies: list) -> list:
    """The OP_ARGS values of the CPU ops (None for the other rows, and where json does not read
    the args: the reader is laxer than JSON inside them), from the text of their args."""
    column: list = [None] * len(kinds)
    where = _rows(kinds, {"cpu_op"}, list(map(truth, bodies)))
    if not where:
        return column
    texts = list(map(bodies.__getitem__, where))
    try:
        decoded = json.loads("[{" + "},{".join(texts) + "}]")
    except (ValueError, RecursionError):
        decoded = list(map(_decoded_or_none, texts))
    if None in decoded:  # some that json did not read
        values = list(map(op_values, decoded))
    else:  # a column per arg, then rows: no call in Python per event
        values = list(zip(*(map(dict.get, decoded, repeat(key), repeat(MISSING))
                            for key in OP_ARGS)))
    for i, found in zip(where, values):
        column[i] = found
    return column


def _decoded_or_none(body: str):
    try:
        return json.loads("{" + body + "}")
    except (ValueError, RecursionError):
        return None


def _count(n: int, what: str) -> str:
    return f"{n:,} {what}" + ("" if n == 1 else "s")


def _label(value) -> str:
    """A name or category as text: a string as it is, nothing (null) as "", any other JSON
    value as Python writes it."""
    if value.__class__ is str:
        return value
    return "" if value is None else str(value)


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
    `Trace.event_count`, `end_us` and `origin_us`; of launch calls and GPU activities it keeps
    what the facts read, as columns (scripts/tracefacts/model/launches.py: the analyzer's one pass skips
    scripts.tracefacts.facts.analysis.COLUMN_KINDS). A trace larger than `max_bytes` once
    decompressed is refused (default: $PROFILING_MAX_TRACE_BYTES, else 4 GiB). Events of the
    `keep_args` kinds keep all their args, as decoded (e.g. {"cpu_op", "python"}: the input
    shapes of `record_shapes=True` and the Python ids of `with_stack=True`, which
    `scripts.tracefacts.facts.ops` reads); the others keep only `KEPT_ARGS`. `op_args`: keep what `scripts.tracefacts.facts.ops`
    reads of the OP_ARG_KINDS in the same pass (of skipped kinds, as `Skipped.columns`; of the
    others, all their args, as `keep_args`); None: where the top-level keys written before the
    events (Kineto's `record_shapes`, `with_stack`, `profile_memory`) say there is some
    (`Trace.op_args` tells whether it was kept)."""
    builder = _Builder("", skip_kinds, keep_args, op_args)
    with paused_gc():
        metadata = read_trace(source, builder, progress=progress, max_bytes=max_bytes)
        return builder.finish(metadata)
