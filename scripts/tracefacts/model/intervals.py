"""Interval arithmetic in microseconds: unions, totals, gaps, clipping.

Two shapes of the same thing: lists of (start, end) pairs, and for the analyzer's hundreds of
thousands of intervals, `Merged` columns (a list of starts and a list of ends), which whole-list
operations handle fast. Both take their unions from `union_of_times`.
"""

from __future__ import annotations

import math
from bisect import bisect_left, bisect_right
from collections.abc import Iterable
from array import array
from itertools import chain, compress, islice
from operator import add, le, lt, sub

from .columnar import orders

Column = list[float] | array  # floats, or an array of them ("d")

Interval = tuple[float, float]
# Merged intervals as two lists, their starts and their ends: sorted, disjoint, not touching.
Merged = tuple[list[float], list[float]]


def union(intervals: Iterable[Interval]) -> list[Interval]:
    """Merge overlapping or touching intervals; the result is sorted and disjoint."""
    pairs = list(intervals)
    return list(zip(*union_of_times([s for s, _ in pairs], [e for _, e in pairs])))


def total(intervals: Iterable[Interval]) -> float:
    """Length covered by the intervals, overlaps counted once."""
    return sum(e - s for s, e in union(intervals))


def clip(intervals: Iterable[Interval], start: float, end: float) -> list[Interval]:
    """The parts of the intervals that fall inside [start, end]."""
    return [(max(s, start), min(e, end)) for s, e in intervals if e > start and s < end]


def gaps(intervals: Iterable[Interval], start: float, end: float) -> list[Interval]:
    """The parts of [start, end] that no interval covers."""
    holes = []
    cursor = start
    for s, e in union(clip(intervals, start, end)):
        if s > cursor:
            holes.append((cursor, s))
        cursor = max(cursor, e)
    if cursor < end:
        holes.append((cursor, end))
    return holes


# --- merged columns ---------------------------------------------------------------------------


def covered(merged: Merged, start: float, end: float) -> float:
    """How much of [start, end] the merged intervals cover: the sum, in order, of the parts of
    the ones that overlap it (only the first and the last can stick out)."""
    starts, ends = merged
    first, last = bisect_right(ends, start), bisect_left(starts, end) - 1  # those that overlap
    if first > last:
        return 0.0
    if first == last:
        return min(ends[first], end) - max(starts[first], start)
    inner = map(sub, ends[first + 1:last], starts[first + 1:last])
    return sum(chain((ends[first] - max(starts[first], start),), inner,
                     (min(ends[last], end) - starts[last],)), 0.0)


def difference(a: Merged, b: Merged) -> tuple[array, array]:
    """The parts of the merged intervals `a` that the merged intervals `b` do not cover, merged
    (sorted, disjoint), in arrays: for each of `a`, the holes between the ones of `b` over it."""
    starts, ends = array("d"), array("d")
    b_starts, b_ends = b
    count = len(b_starts)
    for start, end in zip(*a):
        i, cursor = bisect_right(b_ends, start), start  # the first of b that ends after start
        while i < count and b_starts[i] < end:
            if b_starts[i] > cursor:
                starts.append(cursor)
                ends.append(b_starts[i])
            cursor = b_ends[i] if b_ends[i] > cursor else cursor
            i += 1
        if cursor < end:
            starts.append(cursor)
            ends.append(end)
    return starts, ends


def intersection(a: Merged, b: Merged) -> Merged:
    """The parts covered by both merged lists (b the shorter one, as a rule)."""
    starts, ends = [], []
    for b_start, b_end in zip(*b):
        first, last = bisect_right(a[1], b_start), bisect_left(a[0], b_end)
        for a_start, a_end in zip(a[0][first:last], a[1][first:last]):
            starts.append(max(a_start, b_start))
            ends.append(min(a_end, b_end))
    return starts, ends


def union_of_times(starts: list[float], ends: list[float]) -> Merged:
    """The union of the intervals [starts[i], ends[i]]: touching ones merged, empty ones
    dropped. With the starts and the ends sorted apart, S and E: a merged interval begins at
    S[i] when E[i - 1] < S[i] (the i intervals that start first have all ended: no other can
    end before S[i]), and ends at E[j - 1] when the next one begins at S[j]."""
    nonempty = list(map(lt, starts, ends))
    if not all(nonempty):
        starts, ends = list(compress(starts, nonempty)), list(compress(ends, nonempty))
    if not starts:
        return [], []
    starts, ends = sorted(starts), sorted(ends)
    breaks = list(map(lt, ends, islice(starts, 1, None)))  # a merged interval ends at E[i]
    return ([starts[0], *compress(islice(starts, 1, None), breaks)],
            [*compress(ends, breaks), ends[-1]])


def union_of_rows(starts, ends) -> Merged:
    """`union_of_times` of columns (lists or arrays) that may be millions long, without a copy of
    them where the starts are sorted (rows in trace order): then a merged interval begins at
    S[i] when every interval before has ended (the running maximum of their ends is below
    S[i]), which is `union_of_times`' test, and ends at the largest end of its rows."""
    if len(starts) <= orders.SMALL:  # lists already: no round trip through arrays
        return union_of_times(list(starts), list(ends))
    starts, ends = union_of_columns(starts, ends)
    return list(starts), list(ends)


class LatestEnds:
    """Of a table of rows in order of start, their ends: the latest end of any range of rows
    in time independent of its length (the latest end of each block of _BLOCK rows, and of each
    run of 2**k blocks: a sparse table; a range reads two of those and at most 2 * _BLOCK rows
    at its edges), and the rows of a range that end after a time, in time proportional to how
    many do. A NaN end never counts (as no comparison with it holds)."""

    def __init__(self, ends: Column):
        self.ends = ends = [e if e == e else -math.inf for e in ends]
        level = [max(ends[i:i + _BLOCK]) for i in range(0, len(ends), _BLOCK)]
        self.levels = [level]  # levels[k][i]: the latest end of blocks i .. i + 2**k - 1
        blocks, span = len(level), 1
        while 2 * span <= blocks:
            level = list(map(max, level[:len(level) - span], level[span:]))
            self.levels.append(level)
            span *= 2

    def latest(self, lo: int, hi: int) -> float:
        """The latest end of rows [lo, hi); -inf for none."""
        ends = self.ends
        if hi - lo <= 2 * _BLOCK:
            return max(ends[lo:hi], default=-math.inf)
        first, last = -(-lo // _BLOCK), hi // _BLOCK  # the whole blocks inside: [first, last)
        k = (last - first).bit_length() - 1
        level = self.levels[k]
        return max(max(ends[lo:first * _BLOCK], default=-math.inf),
                   max(ends[last * _BLOCK:hi], default=-math.inf),
                   level[first], level[last - (1 << k)])

    def ending_after(self, lo: int, hi: int, t: float) -> list[int]:
        """The rows of [lo, hi) whose end is after `t`, in order: halves of the range whose
        latest end is not after `t` are passed over whole."""
        found, pending = [], [(max(lo, 0), min(hi, len(self.ends)))]
        while pending:
            lo, hi = pending.pop()
            if hi - lo <= 2 * _BLOCK:
                found += [i for i in range(lo, hi) if self.ends[i] > t]
            elif self.latest(lo, hi) > t:
                middle = (lo + hi) // 2
                pending += [(middle, hi), (lo, middle)]  # the first half popped first
        return found


_BLOCK = 64


# --- in arrays ----------------------------------------------------------------------------------
# The same unions of millions of rows in arrays of 8 bytes a value: lists of new floats take 32.


def union_of_columns(starts: Column, ends: Column) -> tuple[array, array]:
    """`union_of_rows`, in arrays."""
    if len(starts) <= orders.SMALL:
        return _as_arrays(union_of_times(list(starts), list(ends)))
    if not all(map(le, starts, islice(starts, 1, None))):
        return union_of_arrays(starts, ends)
    return _union_in_order(starts, lambda first, end: ends[first:end])


def union_of_spans(starts: Column, durations: Column) -> tuple[array, array]:
    """`union_of_columns` of the rows [starts[i], starts[i] + durations[i]], without a column
    of their ends (8 bytes a row, of millions of ops) where the starts are in order."""
    if len(starts) <= orders.SMALL:
        return _as_arrays(union_of_times(list(starts), list(map(add, starts, durations))))
    if not all(map(le, starts, islice(starts, 1, None))):
        return union_of_arrays(starts, array("d", map(add, starts, durations)))
    return _union_in_order(starts, lambda first, end: array("d", map(add, starts[first:end],
                                                                      durations[first:end])))


def _union_in_order(starts: Column, ends_of) -> tuple[array, array]:
    """The union of rows in order of start (no NaN start), `ends_of(first, end)` the ends of
    rows [first, end): a chunk of rows at a time (the empty ones dropped), with the running
    maximum of the ends before each row: a row begins an interval where that is below its
    start, and is there the end of the interval before (all earlier rows ended before that
    one's first row began, so it is the greatest end of its rows). One loop in Python, its
    maximum by a comparison that picks as `max` does: twice as fast as passes at C speed that
    call `max` a row."""
    merged_starts, merged_ends = array("d"), array("d")
    running = -math.inf
    for first in range(0, len(starts), orders._CHUNK):
        rows = zip(starts[first:first + orders._CHUNK], ends_of(first, first + orders._CHUNK))
        if not merged_starts:
            for start, end in rows:
                if start < end:  # the first row not empty, whatever its start
                    merged_starts.append(start)
                    merged_ends.append(running)
                    running = end if end > running else running
                    break
        for start, end in rows:  # the same rows, on from there
            if start < end:
                if running < start:
                    merged_starts.append(start)
                    merged_ends.append(running)
                running = end if end > running else running
    merged_ends.append(running)
    return merged_starts, merged_ends[1:]  # not the first's: no interval before it


def union_of_arrays(starts: Column, ends: Column, in_order: bool = False) -> tuple[array, array]:
    """`union_of_times`, in arrays (a sorted copy of the starts, then of the ends; `in_order`:
    the caller sorted each already, not searched for runs again)."""
    if len(starts) <= orders.SMALL:
        return _as_arrays(union_of_times(list(starts), list(ends)))
    starts, ends = _nonempty(starts, ends)
    if not starts:
        return array("d"), array("d")
    if not in_order:
        starts = sorted_values(starts)
        ends = sorted_values(ends)
    # Whether a merged interval ends at E[i] (and the next begins at S[i + 1]): a byte each.
    breaks = bytes(map(lt, ends, islice(starts, 1, None)))
    return (array("d", chain((starts[0],), compress(islice(starts, 1, None), breaks))),
            array("d", chain(compress(ends, breaks), (ends[-1],))))


def _as_arrays(merged: Merged) -> tuple[array, array]:
    """Below orders.SMALL rows the unions are taken in lists, at C speed (an array's every
    value read makes a new float); their few merged intervals are returned as arrays."""
    return array("d", merged[0]), array("d", merged[1])


def _nonempty(starts: Column, ends: Column) -> tuple[Column, Column]:
    nonempty = bytes(map(lt, starts, ends))
    if all(nonempty):
        return starts, ends
    return array("d", compress(starts, nonempty)), array("d", compress(ends, nonempty))


def sorted_values(values: Column) -> array:
    """`sorted(values)` (no NaN among them) in an array: as a rule the values are a few runs
    already in order (the rows of a trace, by kind), merged (`orders.sorted_floats`) at 16 bytes
    a value, where a sorted list would make a float object of 32 for each."""
    if len(values) <= orders.SMALL:  # one sort at C speed (see orders.SMALL)
        return array("d", sorted(values))
    return orders.sorted_floats(values)
