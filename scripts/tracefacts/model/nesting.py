"""Which rows (ops or Python frames, in trace order) run at given times on given threads:
`_Nesting`, asked at a few points or at many at once, each row's parent found when first
needed (scripts/tracefacts/facts/ops.py reads stacks and the ops around launches with it). Standard library only.
"""

from __future__ import annotations

import math
from array import array
from bisect import bisect_right
from collections.abc import Iterator
from functools import cache, partial
from itertools import compress
from operator import add

from .columnar.rows import Coded


_UNKNOWN = -2  # a parent not looked for yet (-1: none)


def _parent(thread: _Thread, row: int) -> int:
    """The row under `row` on the sweep's stack (-1: none), kept: the last row before it that
    had not ended when it started. Up the parents of the row before it while they are known
    (the rows they pass over ended before that row started, so before this one); at one not
    known, by the rows' ends."""
    start, ends, parents = thread.starts[row], thread.ends, thread.parents
    k = row - 1
    while k >= 0 and ends[k] < start:
        above = parents[k]
        if above == _UNKNOWN:
            k = thread.by_end().last_at_least(k - 1, start)
            break
        k = above
    parents[row] = k
    return k


class _Thread:
    """The rows of one thread (row numbers, or a range where the thread has them all), their
    ends and parents, and for `innermost_marked` each row's innermost marked row up its parents
    and the earliest end among them; its starts (in order, rows in trace order), searched
    without a key called at each step: the column itself where the thread has every row, else
    a copy (8 bytes a row, made with the ends at C speed; freed with the nesting)."""

    __slots__ = ("rows", "starts", "ends", "parents", "nearest", "earliest", "by_end")

    def __init__(self, starts, rows, ends, marked: bool):
        self.rows, self.starts, self.ends = rows, starts, ends
        count = len(rows)
        index = _index(range(count))
        self.parents = array(index, [_UNKNOWN]) * count
        self.nearest = self.earliest = None  # only for `innermost_marked`
        if marked:
            self.nearest = array(index, [_UNKNOWN]) * count
            self.earliest = array("d", bytes(8 * count))  # read only where `nearest` is known
        self.by_end = cache(partial(_Ends, ends))


class _Nesting:
    """Which rows (trace order) run at a given time on a given thread (start <= t <= end),
    asked at a few points.

    A sweep in trace order would keep a stack of open rows, each row popping those that ended
    before it starts; at time t the rows running are on that stack (nesting in a trace is not
    always exact: some on it may have ended, and are left out). That stack is a chain of
    parents, a row's parent being the top of the stack it was pushed onto: the last row before
    it that had not ended when it started. So a query bisects the thread's starts for the last
    row opened and walks up its parents, each found when first needed (by the rows' ends,
    `_Ends`) and kept; no sweep visits every row of every thread. Each row also keeps the
    innermost marked row up its parents (`innermost_marked`: the user's frame).

    The rows' ends: `end`, or where that is None, start + `dur` (the same floats), made for
    each thread asked only (a column of them all would hold 8 bytes a row more)."""

    def __init__(self, ts, end, threads: list[tuple], marked: list[bool] | None = None,
                 dur=None):
        self.ts, self.end, self.dur, self.all_threads = ts, end, dur, threads
        self.marked = marked  # rows that `innermost_marked` looks for
        self._threads: dict[tuple, _Thread | None] = {}
        self._grouped: dict | None | int = 0  # `_many_threads`: 0 until looked at

    def _thread(self, thread: tuple) -> _Thread | None:
        found = self._threads.get(thread, 0)
        if found != 0:
            return found
        threads, ts, end, dur = self.all_threads, self.ts, self.end, self.dur
        if threads and threads[0] == thread and threads.count(thread) == len(threads):
            rows, starts = range(len(threads)), ts
            ends = end if end is not None else array("d", map(add, ts, dur))
        elif self._many_threads() is not None:  # this thread's rows, found with all the others'
            rows = self._grouped.get(thread)
            if rows is None:
                self._threads[thread] = None
                return None
            starts = array("d", map(ts.__getitem__, rows))
            ends = array("d", map(end.__getitem__, rows) if end is not None else
                         map(add, starts, map(dur.__getitem__, rows)))
        else:
            coded = isinstance(threads, Coded)
            code = threads._code.get(thread) if coded else None
            if coded and code is None:  # not in its table: no row (no pass over the column)
                self._threads[thread] = None
                return None
            # Coded: its codes compared with one int (not each row's tuple with the thread);
            # codes of a byte, translated at once (a table of 256), not compared one by one
            if code is None:
                mine = bytes(map(thread.__eq__, threads))
            elif threads.codes.typecode == "B":
                mine = bytes(threads.codes).translate(bytes(map(code.__eq__, range(256))))
            else:
                mine = bytes(map(code.__eq__, threads.codes))
            # Arrays: a trace may have millions of rows (4 or 8 bytes a value, not an object).
            rows = array(_index(threads), compress(range(len(threads)), mine))
            starts = array("d", compress(ts, mine))
            ends = array("d", compress(end, mine) if end is not None else
                         map(add, starts, compress(dur, mine)))
            del mine
        found = self._threads[thread] = (_Thread(starts, rows, ends, self.marked is not None)
                                         if rows else None)
        return found

    def _many_threads(self) -> dict | None:
        """Of rows on many threads, every thread's rows (thread -> rows), found in one pass
        when the first thread is asked for, not a pass over every row for each thread asked
        (a trace may hold a thread per op); None for few (a pass at C speed for each)."""
        if self._grouped == 0:  # not looked at yet
            threads = self.all_threads
            distinct = len(threads.values) if isinstance(threads, Coded) else len(set(threads))
            self._grouped = _rows_by(threads) if distinct > _FEW_KEYS else None
        return self._grouped

    def running(self, thread: tuple, t: float) -> Iterator[int]:
        """The rows running at `t` on `thread`, innermost first."""
        found = self._thread(thread)
        if found is None:
            return
        rows, ends, parents = found.rows, found.ends, found.parents
        at = bisect_right(found.starts, t) - 1  # the last row opened by t
        while at >= 0:
            if ends[at] >= t:
                yield rows[at]
            parent = parents[at]
            at = parent if parent != _UNKNOWN else _parent(found, at)

    def innermost_marked(self, thread: tuple, t: float) -> tuple[bool, int | None]:
        """Whether any row runs at `t` on `thread`, and the innermost marked one (None: none
        is). Each row keeps the innermost marked row up its parents, so that this reads one
        row where nesting is exact (no row up the parents ended before `t`)."""
        found = self._thread(thread)
        at = -1 if found is None else _running_at(found, t)
        if at < 0:
            return False, None
        mine = self._marked_at(found, thread, t, at)
        return True, None if mine < 0 else mine

    def innermost_marked_all(self, threads: list[tuple], times) -> tuple[bytearray, array]:
        """`innermost_marked` of each (threads[i], times[i]): whether any row runs (a byte
        each) and the innermost marked row (-1: none), the queries of a thread together (its
        columns looked up once)."""
        some, mine = bytearray(len(times)), array(_index(self.ts), [-1]) * len(times)
        for thread, queries in _rows_by(threads).items():
            found = self._thread(thread)
            if found is None:
                continue
            for i in queries:
                at = _running_at(found, times[i])
                if at >= 0:
                    some[i] = 1
                    mine[i] = self._marked_at(found, thread, times[i], at)
        return some, mine

    def innermost_all(self, threads: list[tuple], times) -> array:
        """The innermost row running at each (threads[i], times[i]) (-1: none), as
        `next(running(...))`, the queries of a thread together."""
        innermost = array(_index(self.ts), [-1]) * len(times)
        for thread, queries in _rows_by(threads).items():
            found = self._thread(thread)
            if found is None:
                continue
            rows = found.rows
            for i in queries:
                at = _running_at(found, times[i])
                if at >= 0:
                    innermost[i] = rows[at]
        return innermost

    def _marked_at(self, found: _Thread, thread: tuple, t: float, at: int) -> int:
        """The innermost marked row running at `t` (-1: none), `at` the position of the
        innermost row running then."""
        nearest = found.nearest
        if nearest[at] == _UNKNOWN:
            self._fill(found, at)
        if found.earliest[at] >= t:  # nesting exact up the parents: the row kept
            return -1 if nearest[at] < 0 else found.rows[nearest[at]]
        marked = self.marked
        return next((row for row in self.running(thread, t) if marked[row]), -1)

    def _fill(self, found: _Thread, at: int) -> None:
        rows, ends, parents = found.rows, found.ends, found.parents
        nearest, earliest = found.nearest, found.earliest
        path = []
        while at >= 0 and nearest[at] == _UNKNOWN:
            path.append(at)
            parent = parents[at]
            at = parent if parent != _UNKNOWN else _parent(found, at)
        near, low = (nearest[at], earliest[at]) if at >= 0 else (-1, math.inf)
        marked = self.marked
        for at in reversed(path):
            if marked[rows[at]]:
                near = at
            low = min(low, ends[at])
            nearest[at], earliest[at] = near, low

    def chain(self, thread: tuple, t: float) -> list[int]:
        """The rows running at `t` on `thread`, outermost first."""
        return list(self.running(thread, t))[::-1]


def _running_at(found: _Thread, t: float) -> int:
    """The position in a thread's columns (`_Nesting._thread`) of the innermost row running at
    `t` (-1: none): the last row opened by then, up its parents past those that had ended."""
    ends, parents = found.ends, found.parents
    at = bisect_right(found.starts, t) - 1  # the last row opened by t
    while at >= 0 and ends[at] < t:  # rows that ended before t: not running
        parent = parents[at]
        at = parent if parent != _UNKNOWN else _parent(found, at)
    return at


_BLOCK = 32  # rows a block of _Ends
_FEW_KEYS = 32  # the most values of a Coded column that `_rows_by` reads a value at a time


class _Ends:
    """Values by position, for "the last position at or before `at` whose value is `t` or
    more": each block of _BLOCK positions keeps its greatest value, and the blocks are the
    leaves of a binary tree of maxima (the root at 1, node i's children at 2i and 2i + 1), so
    that the search reads a few values in a block, then whole blocks by their maxima, in a
    logarithmic number of steps."""

    def __init__(self, values):
        self.values = values
        level = [max(values[i:i + _BLOCK]) for i in range(0, len(values), _BLOCK)]
        self.leaves = 1 << max(len(level) - 1, 0).bit_length()
        level += [-math.inf] * (self.leaves - len(level))
        levels = [level]
        while len(level) > 1:
            level = list(map(max, level[0::2], level[1::2]))
            levels.append(level)
        self.tree = [-math.inf]
        for level in reversed(levels):
            self.tree += level

    def last_at_least(self, at: int, t: float) -> int:
        """The last position at or before `at` whose value is `t` or more (-1: none)."""
        values = self.values
        first = at - at % _BLOCK
        while at >= first:
            if values[at] >= t:
                return at
            at -= 1
        if first == 0:
            return -1
        # The blocks before: from the leaf before this block, past each subtree whose maximum
        # is less than t, leftwards; then down the rightmost branch of the first that reaches t.
        tree, node = self.tree, self.leaves + first // _BLOCK - 1
        while tree[node] < t:
            while not node & 1:  # a left child: what lies left of it lies left of its parent
                node >>= 1
            if node == 1:
                return -1
            node -= 1
        while node < self.leaves:
            node = 2 * node + 1 if tree[2 * node + 1] >= t else 2 * node
        at = (node - self.leaves) * _BLOCK + _BLOCK - 1
        while values[at] < t:
            at -= 1
        return at


def _index(rows) -> str:
    """The array type of row numbers (or positions) into `rows`: 4 bytes where they fit."""
    return "i" if len(rows) < (1 << 31) else "q"


def _rows_by(keys) -> dict:
    """key -> the positions that hold it, in order. Of a Coded column of few values, a pass
    over its codes for each (C loops, not a line of Python a position)."""
    index = _index(keys)
    if isinstance(keys, Coded) and len(keys.values) <= _FEW_KEYS:
        return {keys.values[code]: array(index, compress(range(len(keys)),
                                                         map(code.__eq__, keys.codes)))
                for code in set(keys.codes)}
    rows: dict = {}
    for i, key in enumerate(keys):
        found = rows.get(key)
        if found is None:
            found = rows[key] = array(index)
        found.append(i)
    return rows
