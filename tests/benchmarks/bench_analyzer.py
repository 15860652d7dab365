"""Time and peak memory of our analyzer against HTA's on one trace, each in a fresh process.

    .venv/bin/python tests/benchmarks/bench_analyzer.py [TRACE] [--repeat N]

TRACE defaults to the largest .json.gz under traces/. Ours: `scripts/analyze.py --json TRACE`.
HTA (holistictraceanalysis 0.5.0, default settings): load the trace, then its temporal breakdown,
idle time breakdown and kernel launch statistics, the facts we report too. Wall time includes
interpreter start and imports on both sides; peak memory is the child's maximum resident set.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

HTA_SCRIPT = """
import json, sys
from hta.trace_analysis import TraceAnalysis
analysis = TraceAnalysis(trace_dir=sys.argv[1])
breakdown = analysis.get_temporal_breakdown(visualize=False).iloc[0]
analysis.get_idle_time_breakdown(visualize=False)
analysis.get_cuda_kernel_launch_stats(visualize=False)
print(json.dumps({"idle_pct": float(breakdown["idle_time_pctg"])}))
"""


@dataclass
class Run:
    wall_s: float
    peak_rss_mb: float
    stdout: str


def measure(command: list[str]) -> Run:
    """Run a command to completion; its wall time and its own peak resident set size."""
    start = time.perf_counter()
    child = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    stdout = child.stdout.read()
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - start
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode != 0:
        raise SystemExit(f"failed ({child.returncode}): {' '.join(command)}")
    return Run(wall, usage.ru_maxrss / 1024, stdout)  # ru_maxrss is in KiB on Linux


def largest_trace() -> Path:
    traces = sorted((ROOT / "traces").rglob("*.json.gz"), key=lambda p: p.stat().st_size)
    if not traces:
        raise SystemExit("no .json.gz under traces/: pass a trace")
    return traces[-1]


def summarize(runs: list[Run]) -> tuple[float, float]:
    return statistics.median(r.wall_s for r in runs), max(r.peak_rss_mb for r in runs)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trace", type=Path, nargs="?", help="default: the largest under traces/")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each (median time)")
    args = parser.parse_args(argv)
    trace = (args.trace or largest_trace()).resolve()

    ours_command = [sys.executable, str(ROOT / "scripts" / "analyze.py"), "--json", str(trace)]
    with tempfile.TemporaryDirectory() as folder:  # HTA reads every trace in a directory
        shutil.copy(trace, folder)
        hta_command = [sys.executable, "-c", HTA_SCRIPT, folder]
        ours = [measure(ours_command) for _ in range(args.repeat)]
        hta = [measure(hta_command) for _ in range(args.repeat)]

    facts = json.loads(ours[0].stdout)
    our_idle = (facts.get("temporal_breakdown") or {}).get("idle_pct")
    hta_idle = json.loads(hta[0].stdout.strip().splitlines()[-1])["idle_pct"]
    (our_wall, our_rss), (hta_wall, hta_rss) = summarize(ours), summarize(hta)
    print(f"trace: {trace.relative_to(ROOT) if trace.is_relative_to(ROOT) else trace} "
          f"({trace.stat().st_size / 2**20:.1f} MiB, {facts['events']:,} complete events)")
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, "
          f"Python {platform.python_version()}; median of {args.repeat} runs")
    print(f"{'':8}{'wall s':>9}{'peak MB':>10}{'idle %':>9}")
    print(f"{'ours':8}{our_wall:9.2f}{our_rss:10.0f}{our_idle:9.2f}")
    print(f"{'HTA':8}{hta_wall:9.2f}{hta_rss:10.0f}{hta_idle:9.2f}")
    print(f"HTA/ours wall time: {hta_wall / our_wall:.1f}x faster (aim: >= 10x)")
    print(f"ours/HTA peak memory: {our_rss / hta_rss:.2f} (aim: <= 0.33)")
    print("idle %: HTA rounds times to whole microseconds by default, we keep nanoseconds "
          "(see docs/guide/analyze-your-trace.md)")


if __name__ == "__main__":
    main()
