"""The guide (docs/guide/analyze-your-trace.md): what its blocks read from the runs."""

from __future__ import annotations

from scripts import cache, render


def event_counts(run) -> dict[str, int]:
    """How many complete events of each kind the run's trace holds."""
    return cache.cached("counts", render.kind_counts, run.trace_input)


def times_only_share(run) -> float:
    """The share (in %) of the trace's events that the facts read only as times (CPU ops and
    Python frames: scripts.analysis.TIMES_ONLY_KINDS)."""
    from scripts.analysis import TIMES_ONLY_KINDS

    counts = event_counts(run)
    return 100.0 * sum(counts.get(kind, 0) for kind in TIMES_ONLY_KINDS) / sum(counts.values())


def is_largest_trace(run) -> bool:
    """Whether the run's trace file is the largest of the catalog's frozen traces."""
    from scripts import catalog

    sizes = [e.trace_path.stat().st_size for e in catalog.EXAMPLES if e.trace_path.exists()]
    return run.example.trace_path.stat().st_size == max(sizes)
