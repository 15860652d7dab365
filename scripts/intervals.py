"""Interval arithmetic on (start, end) pairs in microseconds: unions, totals, gaps, clipping."""

from __future__ import annotations

from collections.abc import Iterable

Interval = tuple[float, float]


def union(intervals: Iterable[Interval]) -> list[Interval]:
    """Merge overlapping or touching intervals; the result is sorted and disjoint."""
    merged: list[list[float]] = []
    for start, end in sorted(intervals):
        if end <= start:
            continue
        if merged and start <= merged[-1][1]:
            if end > merged[-1][1]:
                merged[-1][1] = end
        else:
            merged.append([start, end])
    return [(s, e) for s, e in merged]


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
