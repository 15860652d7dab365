"""The guide (docs/guide/analyze-your-trace.md): what its blocks read from the runs."""

from __future__ import annotations

from .. import cache, render


def event_counts(run) -> dict[str, int]:
    """How many complete events of each kind the run's trace holds."""
    return cache.cached("counts", render.kind_counts, run.trace_input)


def times_only_share(run) -> float:
    """The share (in %) of the trace's events that the facts read only as times (CPU ops and
    Python frames: scripts.tracefacts.facts.analysis.TIMES_ONLY_KINDS)."""
    from ....tracefacts.facts.analysis import TIMES_ONLY_KINDS

    counts = event_counts(run)
    return 100.0 * sum(counts.get(kind, 0) for kind in TIMES_ONLY_KINDS) / sum(counts.values())


def is_largest_trace(run) -> bool:
    """Whether the run's trace file is the largest of the catalog's frozen traces."""
    from ...runs import catalog

    sizes = [e.trace_path.stat().st_size for e in catalog.EXAMPLES if e.trace_path.exists()]
    return run.example.trace_path.stat().st_size == max(sizes)


def json_bytes(run) -> int:
    """The size of the run's trace as JSON text, from its gzip trailer (ISIZE: the uncompressed
    length modulo 2**32, exact for the single-member files torch writes, under 4 GiB)."""
    with run.example.trace_path.open("rb") as file:
        file.seek(-4, 2)
        return int.from_bytes(file.read(4), "little")


# The benchmark's last run by us: tests/benchmarks/bench_analyzer.py --repeat 3 on the stacked
# training trace, then on that trace repeated to 919 MB and to 5.0 GB of JSON (--no-hta), the
# analyzer of the commit below on a 2-CPU x86-64 machine with nothing else running (load average
# 1.0: the benchmark's own process); the 5.0 GB run once, under /usr/bin/time; the time shares
# from a cProfile of the same analyzer run. The build cannot rerun it (it needs HTA and a
# quiet machine): the page gives it as dated.
BENCHMARK = {"date": "2026-12-02", "commit": "3d250eb", "machine": "a 2-CPU x86-64 machine, Python 3.11.7",
             "ours_s": 0.60, "ours_mb": 66, "hta_s": 4.41, "hta_mb": 431,
             # reading alone: decompress, decode every event with msgspec, analyse nothing
             "read_only_s": 0.27,
             # the same trace repeated (big_traces.py repeat); CPU: both processes' (scripts/tracefacts/entry/beside.py)
             "big_json_mb": 919, "big_s": 7.13, "big_cpu_s": 8.90, "big_mb": 285,
             "huge_json_gb": 5.0, "huge_s": 57, "huge_mib": 898,
             # shares of ours on the stacked trace, in one process (cProfile, cumulative,
             # PROFILING_ANALYZER_FORK=0): reading, facts, stacks
             "read_pct": 48, "facts_pct": 24, "stacks_pct": 26}


def peak_share(bench: dict) -> str:
    """The big trace's peak memory as a share of its JSON, in words ("a fifth")."""
    share = bench["big_mb"] / bench["big_json_mb"]
    words = {2: "a half", 3: "a third", 4: "a quarter", 5: "a fifth", 6: "a sixth", 8: "an eighth"}
    return words[min(words, key=lambda n: abs(1 / n - share))]


def against_gib(mib: float) -> str:
    """Where a peak in MiB stands against the issue's bound of 1 GiB."""
    return "under 1 GiB" if mib < 1024 else "just over 1 GiB" if mib < 1100 else "over 1 GiB"

