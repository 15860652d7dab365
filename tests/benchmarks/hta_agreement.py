"""Our temporal breakdown beside HTA's on each trace, and which of the rows HTA reads account for
the difference (the constructs of docs/guide/analyze-your-trace.md, "Where we differ from HTA").

    .venv/bin/python tests/benchmarks/hta_agreement.py TRACE [TRACE ...]

HTA 0.5.0 runs with HTA_DISABLE_NS_ROUNDING=1 (nanoseconds kept, as ours). Its breakdown reads
every kept row with a stream other than -1; the rows that are not kernel, memcpy or memset rows
(synchronization calls, cudaEvent markers, ...), rows of negative duration and kernel rows
without a correlation are grouped by kind, and HTA's idle share is recomputed with each group
left out: the percentage points a group moves are printed under the trace. What is left after
leaving all of them out comes from the other differences the guide lists (rows without a
`stream`, names, several GPUs).
"""

from __future__ import annotations

import logging
import os
import shutil
import sys
import tempfile
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

ACTIVITY_CATS = {"kernel", "gpu_memcpy", "gpu_memset", "Kernel", "Memcpy", "Memset",
                 "mtia_ccp_events"}


def hta_rows(path: Path):
    """HTA's rows of the breakdown (stream != -1, after its choice of steps), with the kinds
    the difference is grouped by."""
    os.environ["HTA_DISABLE_NS_ROUNDING"] = "1"
    from hta.trace_analysis import TraceAnalysis
    with tempfile.TemporaryDirectory() as folder:
        shutil.copy(path, folder)
        analysis = TraceAnalysis(trace_dir=folder)
    trace = analysis.t
    rank = next(iter(trace.traces))
    sym = trace.symbol_table.get_sym_table()
    df = trace.get_trace(rank)
    rows = df[df["stream"].ne(-1)].copy()
    cats = rows["cat"].map(sym.__getitem__)
    names = rows["name"].map(sym.__getitem__)
    group = cats.where(cats.isin(ACTIVITY_CATS), cats + ": " + names)
    group = group.mask(cats.isin(ACTIVITY_CATS), "")
    group = group.mask(rows["dur"] < 0, "negative duration")
    group = group.mask(cats.isin(ACTIVITY_CATS) & (rows["correlation"] < 0),
                       "activity without correlation")
    rows["group"] = group
    return rows, sym


def hta_idle_pct(rows) -> float:
    from hta.analyzers.breakdown_analysis import BreakdownAnalysis
    if rows.empty:
        return float("nan")
    idle, span = BreakdownAnalysis._get_idle_time_for_kernels(rows.copy())
    return 100.0 * idle / span


def report(path: Path) -> None:
    from scripts.tracefacts.facts.analysis import facts
    from scripts.tracefacts.model.trace import load_trace
    mine = facts(load_trace(path)).temporal_breakdown
    rows, _ = hta_rows(path)
    theirs = hta_idle_pct(rows)
    print(f"{path}: idle {mine.idle_pct:.2f}% ours, {theirs:.2f}% HTA "
          f"({theirs - mine.idle_pct:+.2f} pp)")
    groups = sorted(g for g in rows["group"].unique() if g)
    for g in groups:
        part = rows[rows["group"] == g]
        without = hta_idle_pct(rows[rows["group"] != g])
        print(f"  {g} ({len(part)} rows, {part['dur'].sum():.3f} us): HTA without them "
              f"{without:.2f}% ({theirs - without:+.2f} pp)")
    if groups:
        rest = hta_idle_pct(rows[rows["group"] == ""])
        print(f"  HTA without all of these: {rest:.2f}% "
              f"({rest - mine.idle_pct:+.2f} pp from ours)")


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__.strip().splitlines()[2].strip())
        return 2
    warnings.filterwarnings("ignore")
    logging.disable(logging.WARNING)
    for arg in argv:
        report(Path(arg))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
