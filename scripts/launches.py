"""The runtime and driver calls (the launch APIs) as columns: what the facts read of them, their
start, duration, name and thread, and which call launched an activity (by correlation id).

`launch_table(trace)` makes them from the calls' Events, or where loading kept those kinds as
columns (`load_trace(skip_kinds=LAUNCH_KINDS)`: the analyzer's one pass, for a trace has
hundreds of thousands of calls) from the columns, in some 40 bytes a call where an Event takes
some 200. Standard library only.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left
from itertools import compress, islice, repeat
from operator import attrgetter, ne

from .oprows import NO_ID, Coded, _add_ids, stable_order
from .trace_model import LAUNCH_KINDS, Trace

_EXACT = 1 << 53  # ids ordered as floats (stable_order) only below this: exact there


class LaunchTable:
    """Every call of the launch kinds (in sorted order of kind, each in trace order) as columns,
    and `row_of(correlation id)`: the row of the call with that id, the last one as
    `Trace.launches_by_correlation` keeps it (runtime's over driver's), -1 without one."""

    def __init__(self, trace: Trace):
        self.ts, self.dur = array("d"), array("d")
        self.names, self.threads = Coded(), Coded()  # the names; (pid, tid) threads
        ids, other = array("q"), {}  # correlation ids (NO_ID: none, or one in `other`)
        for kind in sorted(LAUNCH_KINDS):
            skipped = trace.skipped.get(kind)
            if skipped is not None:
                columns = skipped.columns  # with correlations (scripts.analysis checks)
                other.update({len(ids) + row: value
                              for row, value in columns.correlation_other.items()})
                ids += columns.correlations
                self.ts += skipped.ts
                self.dur += skipped.dur
                self.names.extend(list(columns.names))
                self.threads.extend(list(columns.threads))
            else:
                events = trace.by_kind.get(kind, [])
                _add_ids(ids, other, list(map(attrgetter("correlation"), events)))
                self.ts += array("d", map(attrgetter("ts"), events))
                self.dur += array("d", map(attrgetter("dur"), events))
                self.names.extend(list(map(attrgetter("name"), events)))
                self.threads.extend([(e.pid, e.tid) for e in events])
        self._index(ids, other)

    def _index(self, ids: array, other: dict) -> None:
        """Sorted ids and their rows (the last row of each id), for `row_of` to bisect; ids
        that are no 64-bit int (or too large to order as floats) in a dict."""
        self._other = {}
        given = bytes(map(ne, ids, repeat(NO_ID)))
        rows = array("i" if len(ids) < (1 << 31) else "q", compress(range(len(ids)), given))
        keys = array("q", compress(ids, given))
        if keys and not -_EXACT < min(keys) <= max(keys) < _EXACT:
            other.update(zip(rows, keys))
            rows, keys = rows[:0], keys[:0]
        for row in sorted(other):  # the last row of an id wins
            self._other[other[row]] = row
        order = stable_order(array("d", keys))[0]
        keys = array("q", map(keys.__getitem__, order))
        rows = array(rows.typecode, map(rows.__getitem__, order))
        last = bytes(map(ne, keys, islice(keys, 1, None))) + b"\1"  # of each run of one id
        self._keys = array("q", compress(keys, last))
        self._rows = array(rows.typecode, compress(rows, last))

    def __len__(self) -> int:
        return len(self.ts)

    def row_of(self, correlation) -> int:
        """The row of the call with this correlation id; -1 for none (or None)."""
        if correlation is None:
            return -1
        if type(correlation) is int and -_EXACT < correlation < _EXACT:
            at = bisect_left(self._keys, correlation)
            if at < len(self._keys) and self._keys[at] == correlation:
                return self._rows[at]
        return self._other.get(correlation, -1)


def launch_table(trace: Trace) -> LaunchTable:
    """The trace's launch calls as columns, made once (a loaded trace does not change)."""
    found = trace.__dict__.get("_launch_table")
    if found is None:
        found = trace.__dict__["_launch_table"] = LaunchTable(trace)
    return found
