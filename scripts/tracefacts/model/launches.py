"""The runtime and driver calls (the launch APIs) and the GPU activities as columns: what the
facts read of them. Of a call, its start, duration, name and thread, and which call launched an
activity (by correlation id); of an activity, its start, duration, name, kind, correlation id,
device and stream.

`launch_table(trace)` and `activity_table(trace)` make them from the Events, or where loading
kept those kinds as columns (`load_trace(skip_kinds=COLUMN_KINDS)`: the analyzer's one pass, for
a trace has hundreds of thousands of each) from the columns, in some 40 bytes a row where an
Event takes some 200. Standard library only.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left
from collections import deque
from itertools import compress, islice, repeat
from operator import and_, attrgetter, ge, lt, ne, not_, sub

from .columnar.rows import (NO_ID, Coded, _add_ids, _moved, pieces, stable_order, taken_all,
                     trace_order_in_pieces)
from .records import GPU_ACTIVITY_KINDS, LAUNCH_KINDS, Trace

_EXACT = 1 << 53  # ids ordered as floats (stable_order) only below this: exact there


class LaunchTable:
    """Every call of the launch kinds (in sorted order of kind, each in trace order) as columns,
    and `row_of(correlation id)`: the row of the call with that id, the last one as
    `Trace.launches_by_correlation` keeps it (runtime's over driver's), -1 without one."""

    def __init__(self, trace: Trace):
        self.ts, self.dur = array("d"), array("d")
        self.names, self.threads = Coded(), Coded()  # the names; (pid, tid) threads
        ids, other = array("q"), {}  # correlation ids (NO_ID: none, or one in `other`)
        self._indexes = []  # of each kind, runtime's first: (first row, sorted ids, their rows)
        self._other = {}
        spans: list = []  # the least and the greatest id of each kind
        for kind in sorted(LAUNCH_KINDS):
            first = len(ids)
            skipped = trace.skipped.get(kind)
            if skipped is not None:
                columns = skipped.columns  # with correlations (scripts.tracefacts.facts.analysis checks)
                other.update({len(ids) + row: value
                              for row, value in columns.correlation_other.items()})
                ids += columns.correlations
                self.ts += skipped.ts
                self.dur += skipped.dur
                self.names.extend_coded(columns.names)
                self.threads.extend_coded(columns.threads)
            else:
                events = trace.by_kind.get(kind, [])
                _add_ids(ids, other, list(map(attrgetter("correlation"), events)))
                self.ts += array("d", map(attrgetter("ts"), events))
                self.dur += array("d", map(attrgetter("dur"), events))
                self.names.extend(list(map(attrgetter("name"), events)))
                self.threads.extend([(e.pid, e.tid) for e in events])
            # Each kind's ids apart: in order of time, as a rule, so that ordering them merges
            # a few runs (scripts.tracefacts.model.columnar.orders.stable_order) where both kinds' would interleave.
            index, span = self._index(ids, first)
            self._indexes.insert(0, index)
            spans.extend(span)
        lowest, highest = min(spans, default=0), max(spans, default=0)  # of all the ids given
        if not -_EXACT < lowest <= highest < _EXACT:  # all in the dict
            self._indexes = []
            other.update((row, value) for row, value in enumerate(ids) if value != NO_ID)
        for row in sorted(other):  # the last row of an id wins, runtime's over driver's
            self._other[other[row]] = row

    @staticmethod
    def _index(ids: array, first: int) -> tuple[tuple, tuple]:
        """The rows from `first` on by id (the last row of each id), for `row_of`: where the
        ids span a range of few more values than rows (as a rule: Kineto counts them up), a
        table of rows by id - its least (-1 for none), filled in row order (the last row
        written last); else (None, sorted ids, their rows), to bisect. And the least and the
        greatest of the ids given (none: empty)."""
        ids = ids[first:]
        given = bytes(map(ne, ids, repeat(NO_ID)))
        typecode = "i" if first + len(ids) < (1 << 31) else "q"
        rows = array(typecode, compress(range(first, first + len(ids)), given))
        keys = array("q", compress(ids, given))
        span = (min(keys), max(keys)) if keys else ()
        if keys and not -_EXACT < span[0] <= span[1] < _EXACT:
            return (None, array("q"), array("i")), span  # the dict's (see __init__)
        if keys and span[1] - span[0] < _DENSE * len(keys):
            lowest = span[0]
            table = array(typecode, [-1]) * (span[1] - lowest + 1)
            deque(map(table.__setitem__, map(sub, keys, repeat(lowest)), rows), 0)
            return (lowest, table), span
        order = stable_order(array("d", keys))[0]
        keys = array("q", map(keys.__getitem__, order))
        rows = array(rows.typecode, map(rows.__getitem__, order))
        last = bytes(map(ne, keys, islice(keys, 1, None))) + b"\1"  # of each run of one id
        return (None, array("q", compress(keys, last)),
                array(rows.typecode, compress(rows, last))), span

    def __len__(self) -> int:
        return len(self.ts)

    def row_of(self, correlation) -> int:
        """The row of the call with this correlation id; -1 for none (or None)."""
        if correlation is None:
            return -1
        if type(correlation) is int and -_EXACT < correlation < _EXACT:
            for index in self._indexes:  # runtime's first
                found = _rows_at(index, (correlation,))[0]
                if found >= 0:
                    return found
        return self._other.get(correlation, -1)

    def rows_of(self, ids: array, other: dict) -> array:
        """`row_of` of each id of a column (as OpColumns.correlations: NO_ID for none, or for
        one in `other` by row), a column at a time: each index looked up by the rows that the
        ones before did not find."""
        rows = array("i" if len(self) < (1 << 31) else "q", [-1]) * len(ids)
        if not self._indexes:  # every id in the dict
            deque(map(rows.__setitem__, range(len(ids)), map(self.row_of, (
                other.get(row) if value == NO_ID else value for row, value in enumerate(ids)))), 0)
            return rows
        missing, values = range(len(ids)), ids  # the rows not found yet, and their ids
        for index in self._indexes:  # runtime's first
            found = _rows_at(index, values)
            hit = bytes(map(ge, found, repeat(0)))
            if len(missing) == len(rows):  # the first index: every row
                rows = array(rows.typecode, found)
            else:
                deque(map(rows.__setitem__, compress(missing, hit), compress(found, hit)), 0)
            missed = bytes(map(not_, hit))
            missing = array("q", compress(missing, missed))
            values = array("q", compress(values, missed))
        if other or self._other:  # ids of other types, or not in the indexes: rare
            for row, value in zip(missing, values):
                rows[row] = self.row_of(other.get(row) if value == NO_ID else value)
        return rows


_DENSE = 4  # a table of rows by id where the ids span fewer than this many values a row


def _rows_at(index: tuple, values) -> array | list:
    """The row of each id of `values` (ints) in one index of LaunchTable (-1 for none)."""
    lowest = index[0]
    if lowest is None:
        keys, rows = index[1:]
        if not keys:
            return [-1] * len(values)
        at = list(map(bisect_left, repeat(keys), values))
        padded = keys + keys[-1:]  # at len(keys): an id past them all, not equal to the last
        found = list(map(padded.__getitem__, at))
        return [rows[i] if key == value else -1 for i, key, value in zip(at, found, values)]
    table = index[1]
    highest = lowest + len(table)
    inside = bytes(map(and_, map(ge, values, repeat(lowest)), map(lt, values, repeat(highest))))
    if all(inside):
        return list(map(table.__getitem__, map(sub, values, repeat(lowest))))
    found = [-1] * len(values)
    deque(map(found.__setitem__, compress(range(len(values)), inside),
              map(table.__getitem__, map(sub, compress(values, inside), repeat(lowest)))), 0)
    return found


def launch_table(trace: Trace) -> LaunchTable:
    """The trace's launch calls as columns, made once (a loaded trace does not change)."""
    found = trace.__dict__.get("_launch_table")
    if found is None:
        found = trace.__dict__["_launch_table"] = LaunchTable(trace)
    return found


class ActivityTable:
    """The GPU activities in the order of `Trace.gpu_activities` (kinds in sorted order, put in
    trace order together), as columns: `device_of` and `stream_of` are their `device` and
    `stream` args, else their pid and tid (as the facts read them)."""

    def __init__(self, trace: Trace):
        self.ts, self.dur = array("d"), array("d")
        self.names, self.kinds = Coded(), Coded()
        self.device_of, self.stream_of = Coded(), Coded()
        self.ids, self.other = array("q"), {}  # correlation ids (see OpColumns.correlations)
        self._launches: tuple | None = None  # (calls, launch_rows(calls)): read twice
        for kind in sorted(GPU_ACTIVITY_KINDS):
            skipped = trace.skipped.get(kind)
            if skipped is not None:
                columns = skipped.columns  # with ids and streams (scripts.tracefacts.facts.analysis checks)
                self._add(skipped.ts, skipped.dur, columns.names, kind,
                          _or_thread(columns.devices, columns.threads, 0),
                          _or_thread(columns.streams, columns.threads, 1),
                          columns.correlations, columns.correlation_other)
            else:
                events = trace.by_kind.get(kind, [])
                ids, other = array("q"), {}
                _add_ids(ids, other, list(map(attrgetter("correlation"), events)))
                self._add(array("d", map(attrgetter("ts"), events)),
                          array("d", map(attrgetter("dur"), events)),
                          list(map(attrgetter("name"), events)), kind,
                          [e.pid if e.arg("device") is None else e.arg("device") for e in events],
                          [e.tid if e.arg("stream") is None else e.arg("stream") for e in events],
                          ids, other)
        if len(self.kinds.values) > 1:  # kinds together, as Trace.of_kinds: in trace order
            self._reorder(*trace_order_in_pieces(self.ts, self.dur)[::2])

    def _add(self, ts, dur, names, kind, devices, streams, ids, other) -> None:
        self.other.update({len(self.ids) + row: value for row, value in other.items()})
        self.ids += ids
        self.ts += ts
        self.dur += dur
        self.kinds.extend([kind] * len(names))
        for column, values in ((self.names, names), (self.device_of, devices),
                               (self.stream_of, streams)):
            if isinstance(values, Coded):
                column.extend_coded(values)
            else:
                column.extend(values)

    def _reorder(self, order, parts) -> None:
        if parts is False:  # the kinds' runs merged: as a rule a few hundred slices
            parts = pieces(order)
        self.ts, self.dur, self.ids = taken_all([self.ts, self.dur, self.ids], order, parts)
        self.other = _moved(self.other, order)
        for column in (self.names, self.kinds, self.device_of, self.stream_of):
            column.reorder(order, parts)

    def __len__(self) -> int:
        return len(self.ts)

    def launch_rows(self, calls: LaunchTable) -> array:
        """The row in `calls` of each activity's launch call, -1 without one."""
        if self._launches is None or self._launches[0] is not calls:
            self._launches = calls, calls.rows_of(self.ids, self.other)
        return self._launches[1]


def _or_thread(values: Coded, threads: Coded, part: int) -> Coded | list:
    """The values (a `device` or `stream` arg), else the row's pid (`part` 0) or tid (1): the
    column itself where every row has one."""
    if None not in values.values:
        return values
    return [pair[part] if value is None else value for value, pair in zip(values, threads)]


def activity_table(trace: Trace) -> ActivityTable:
    """The trace's GPU activities as columns, made once."""
    found = trace.__dict__.get("_activity_table")
    if found is None:
        found = trace.__dict__["_activity_table"] = ActivityTable(trace)
    return found
