"""Orders of rows by time, as scripts/tracefacts/model/columnar/rows.py's columns and the index need them: a trace's
rows come as a few runs already in order (one per thread or per flush of the profiler's buffer),
which these merge in arrays (a block at a time where the runs interleave in blocks, else by ranges
of keys), where a sort of all the rows would take lists of some 70 bytes a row. Standard library
only.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left, bisect_right
from heapq import heapify, heappop, heappush
from itertools import chain, compress, islice, pairwise
from operator import eq, ge, gt, le, ne


def in_trace_order(ts, dur) -> bool:
    """Whether the rows are in `trace_order` already (as Python frames are in Kineto's files)."""
    if not all(map(le, ts, islice(ts, 1, None))):
        return False
    ties = compress(range(1, len(ts)), map(eq, ts, islice(ts, 1, None)))
    return all(dur[i - 1] >= dur[i] for i in ties)


def trace_order(ts, dur) -> tuple[list[int] | array, list[float] | array]:
    """The rows by start, the longest first among equal starts, file order among full ties:
    the order of `Trace.events` (scripts.tracefacts.model.records._in_trace_order), as indices; and their
    starts in that order.

    A file holds its rows as a few runs already in order (one per thread or per flush of the
    profiler's buffer): those are merged, in arrays of 16 bytes a row, where a sort of all the
    rows by key would take some 70 (a list of int objects and one of new floats). Rows in many
    short runs (or with NaN starts, which order nothing) are sorted as a whole."""
    return trace_order_in_pieces(ts, dur)[:2]


def trace_order_in_pieces(ts, dur) -> tuple:
    """`trace_order`, and `pieces` of the order where the merge found them (False: not found)."""
    order, starts, parts = stable_order_in_pieces(ts)
    if longest_first_at_equal_starts(order, starts, dur.__getitem__):  # equal starts: the same
        parts = False
    return order, starts, parts


def stable_order(keys) -> tuple[list[int] | array, list[float] | array]:
    """The rows by key (floats), file order among equal keys, and the keys in that order: as
    `sorted(range(len(keys)), key=keys.__getitem__)`, by merging the runs already in order in
    arrays where the rows are in a few (see `trace_order`)."""
    return stable_order_in_pieces(keys)[:2]


def stable_order_in_pieces(keys) -> tuple:
    """`stable_order`, and `pieces` of the order where the runs were merged in a few blocks
    (False: not found, for the caller's `pieces`)."""
    n = len(keys)
    if n <= SMALL or has_nan(keys):  # few rows, or NaN (as sorted orders them)
        order = sorted(range(n), key=keys.__getitem__)
        return order, list(map(keys.__getitem__, order)), False
    index = "i" if n < (1 << 31) else "q"
    bounds = _run_bounds(keys)
    if bounds is not None:  # a few runs in order: the file's own (a range of rows, no copy)
        if len(bounds) <= 2:
            return array(index, range(n)), array("d", keys), [(0, n)]
        parts = _merged_pieces(keys, bounds)
        if parts is not None:  # runs that interleave in a few blocks: those, in slices
            order, starts, at = array(index, [0]) * n, array("d", [0.0]) * n, 0
            for a, b in parts:
                order[at:at + b - a] = array(index, range(a, b))
                piece = keys[a:b]
                starts[at:at + b - a] = piece if isinstance(piece, array) else array("d", piece)
                at += b - a
            return order, starts, parts
        rows = range(n)
        return *_merge_all([(rows, keys, a, b) for a, b in pairwise(bounds)], keys, index), False
    return *_sorted_in_chunks(keys, index), False


def has_nan(values) -> bool:
    """Whether any of the floats is NaN: their sum is NaN where one is (or where infinities of
    both signs are), and a pass that adds is 4x faster than one that compares each with itself,
    made only then."""
    total = sum(values, 0.0)
    return total != total and any(map(ne, values, values))


def sorted_floats(values) -> array:
    """`sorted(values)` (no NaN among them) in an array, as `stable_order`'s keys: the runs
    already in order merged (or sorted chunks, where they are many) without a list of all."""
    bounds = _run_bounds(values)
    if bounds is None:  # sorted by chunks
        runs = []
        for first in range(0, len(values), _CHUNK):
            run = array("d", sorted(values[first:first + _CHUNK]))
            runs.append((run, 0, len(run)))
    elif len(bounds) <= 2:
        return values if isinstance(values, array) else array("d", values)
    elif (parts := _merged_pieces(values, bounds)) is not None:
        merged = array("d")
        for a, b in parts:
            merged += array("d", values[a:b]) if isinstance(values, list) else values[a:b]
        return merged
    else:
        runs = [(values, a, b) for a, b in pairwise(bounds)]
    merged = array("d")
    for equal, rest in _buckets(runs):
        for i, a, b in equal:
            merged += array("d", runs[i][0][a:b])
        if len(rest) == 1:
            i, a, b = rest[0]
            merged += array("d", runs[i][0][a:b])
        elif rest:
            merged += array("d", sorted(chain.from_iterable(runs[i][0][a:b] for i, a, b in rest)))
    return merged


def _run_bounds(keys) -> list[int] | None:
    """Where the runs in order of `keys` begin, and its length; None where they are more than
    _MERGED_RUNS."""
    n = len(keys)
    descents = compress(range(1, n), map(gt, keys, islice(keys, 1, None)))
    bounds = [0, *islice(descents, _MERGED_RUNS), n]  # of the runs, up to _MERGED_RUNS + 1
    return bounds if len(bounds) - 1 <= _MERGED_RUNS else None


def _merged_pieces(keys, bounds: list[int]) -> list[tuple[int, int]] | None:
    """The runs of `keys` in order (`_run_bounds`, no NaN) merged stably (equal keys in file
    order), as ranges of rows (first, end) each: where runs interleave in blocks (the threads of
    a file, each busy for a while), a block at a time, the run of the least head taking every
    key before the next least head (bisected). None where the blocks are more than
    1/_FEW_BLOCKS of the rows (runs that alternate row by row: merged by `_merge_all`)."""
    budget = len(keys) // _FEW_BLOCKS
    ends = bounds[1:]
    heads = [(keys[a], run, a) for run, a in enumerate(bounds[:-1]) if a < ends[run]]
    heapify(heads)
    found = []
    while heads:
        _, run, a = heappop(heads)
        if not heads:
            found.append((a, ends[run]))
            break
        least, other, _ = heads[0]
        # Keys equal to the next head: this run's first where it is earlier in the file.
        b = (bisect_right if run < other else bisect_left)(keys, least, a, ends[run])
        found.append((a, b))
        if len(found) > budget:
            return None
        if b < ends[run]:
            heappush(heads, (keys[b], run, b))
    return found


_FEW_BLOCKS = 256  # a block costs some 50 rows of a merge by ranges (`_merge_all`)
_CHUNK = 1 << 16  # rows sorted at a time (by `_sorted_in_chunks`, and in each range merged)
_SAMPLE = 64  # every _SAMPLE-th key of each run read to cut the merged keys into ranges
# Up to this many rows the orders are one sort at C speed: its lists (some 70 bytes a row, 18 MB
# here) matter only at millions of rows, where merging runs in arrays saves them but costs
# Python steps (a trace of 200k events took 20% longer merged).
SMALL = 1 << 18


def _sorted_in_chunks(keys, index: str) -> tuple[array, array]:
    """`stable_order` by sorting chunks of rows (a list of int objects and one of floats for
    one chunk at a time, not for all), then merging them: equal keys by row number, so in file
    order, as one stable sort."""
    n = len(keys)
    chunks = []
    for first in range(0, n, _CHUNK):
        rows = sorted(range(first, min(first + _CHUNK, n)), key=keys.__getitem__)
        chunks.append((array(index, rows), array("d", map(keys.__getitem__, rows)), 0, len(rows)))
        del rows
    if len(chunks) <= 1:
        return chunks[0][:2] if chunks else (array(index), array("d"))
    return _merge_all(chunks, keys, index)


def _merge_all(runs: list[tuple], keys, index: str) -> tuple[array, array]:
    """The runs (rows, starts, lo, hi: rows[lo:hi] and their starts in order; each run of rows
    earlier in the file than the next one's; `keys` the starts by row) merged into one, its rows
    and starts (only the result is made, 12 bytes a row): a range of keys at a time
    (`_buckets`), its pieces of the runs taken as they are where one run holds them, else
    sorted together at C speed (a sort of runs in order merges them), in lists of one range's
    rows, not of all. A stable sort of pieces in run order: equal keys in file order."""
    rows, starts = array(index), array("d")
    for equal, rest in _buckets([run[1:] for run in runs]):
        for i, a, b in equal if len(rest) != 1 else (*equal, *rest):  # as they are
            rows += array(index, runs[i][0][a:b])
            starts += array("d", runs[i][1][a:b])
        if len(rest) > 1:
            taken = list(chain.from_iterable(runs[i][0][a:b] for i, a, b in rest))
            taken.sort(key=keys.__getitem__)
            rows += array(index, taken)
            starts += array("d", map(keys.__getitem__, taken))
    return rows, starts


def _buckets(runs: list[tuple]):
    """The keys of the runs (keys, lo, hi: keys[lo:hi] in order, no NaN) cut into ranges of
    about _CHUNK keys, in order, at keys read every _SAMPLE-th of each run; for each range, the
    pieces (run number, a, b: keys[a:b] of that run) that hold its least key (`equal`, its
    first, in run order), then those that hold the rest. A range holds fewer than
    _CHUNK // _SAMPLE of the keys read above its least, so its rest is at most
    (_CHUNK // _SAMPLE + the runs) * _SAMPLE keys, however many keys are equal."""
    samples = sorted(chain.from_iterable(keys[lo:hi:_SAMPLE] for keys, lo, hi in runs))
    every = max(_CHUNK // _SAMPLE, 1)
    cuts = sorted(set(islice(samples, every, None, every)))
    del samples
    at = [lo for _, lo, _ in runs]
    low = None  # the least key of the range (None: the first, from the least of all)
    for cut in chain(cuts, (None,)):
        equal, rest = [], []
        for i, (keys, _, hi) in enumerate(runs):
            a = at[i]
            if a == hi:
                continue
            b = hi if cut is None else bisect_left(keys, cut, a, hi)
            if a == b:
                continue
            middle = a if low is None else bisect_right(keys, low, a, b)
            if middle > a:
                equal.append((i, a, middle))
            if b > middle:
                rest.append((i, middle, b))
            at[i] = b
        yield equal, rest
        low = cut


_MERGED_RUNS = 1024  # the most runs merged (each range of keys takes a line of Python a run)


def longest_first_at_equal_starts(items: list | array, starts, duration) -> bool:
    """`items` (a list, or an array of row numbers), sorted by their `starts`, reordered in
    place so that among equal starts the longest `duration(item)` comes first (a stable sort
    within each run of equal starts); whether any moved. Traces are nearly in order and equal
    starts are few: only those runs are sorted again."""
    ties = compress(range(1, len(starts)), map(eq, starts, islice(starts, 1, None)))
    first = end = -1  # the open run of equal starts: items[first:end]
    moved = False
    for i in ties:  # items[i] starts with items[i - 1]
        if i != end:
            if end - first > 1:
                moved = _longest_first(items, first, end, duration) or moved
            first = i - 1
        end = i + 1
    if end - first > 1:
        moved = _longest_first(items, first, end, duration) or moved
    return moved


def _longest_first(items, first: int, end: int, duration) -> bool:
    run = items[first:end]
    durations = list(map(duration, run))
    if all(map(ge, durations, islice(durations, 1, None))):  # longest first already
        return False
    fixed = sorted(run, key=duration, reverse=True)
    items[first:end] = fixed if isinstance(items, list) else array(items.typecode, fixed)
    return True
