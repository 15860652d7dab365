"""Time and peak memory of our analyzer against HTA's on one trace, each in a fresh process.

    .venv/bin/python tests/benchmarks/bench_analyzer.py [TRACE] [--repeat N] [--analyzer PY]

TRACE defaults to the largest .json.gz under traces/. Ours: `scripts/analyze.py --json TRACE`
(`--analyzer` runs another copy of it, e.g. an older version, under the same conditions).
HTA (holistictraceanalysis 0.5.0, default settings): load the trace, then its temporal breakdown,
idle time breakdown and kernel launch statistics, the facts we report too. Wall time includes
interpreter start and imports on both sides; peak memory is the child's maximum resident set.
Each side runs once untimed first, with bytecode caching on (as a user's first run leaves it):
HTA's modules come compiled with its install, ours are compiled by that run, and the file is
in the page cache for both. The machine's load changes both sides' times: compare ratios, and
runs made together.
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
    cpu_s: float  # user + system, all threads
    peak_rss_mb: float
    stdout: str


def child_env() -> dict[str, str]:
    """This environment with bytecode caching on, as Python's default is."""
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def measure(command: list[str]) -> Run:
    """Run a command to completion; its wall time and its own peak resident set size."""
    start = time.perf_counter()
    child = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                             env=child_env())
    stdout = child.stdout.read()
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - start
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode != 0:
        raise SystemExit(f"failed ({child.returncode}): {' '.join(command)}")
    return Run(wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024,  # maxrss: KiB
               stdout)


def largest_trace() -> Path:
    traces = sorted((ROOT / "traces").rglob("*.json.gz"), key=lambda p: p.stat().st_size)
    if not traces:
        raise SystemExit("no .json.gz under traces/: pass a trace")
    return traces[-1]


def summarize(runs: list[Run]) -> tuple[float, float, float]:
    return (statistics.median(r.wall_s for r in runs), statistics.median(r.cpu_s for r in runs),
            max(r.peak_rss_mb for r in runs))


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trace", type=Path, nargs="?", help="default: the largest under traces/")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each (median time)")
    parser.add_argument("--analyzer", type=Path, default=ROOT / "scripts" / "analyze.py",
                        help="the analyze.py to time (default: this checkout's)")
    args = parser.parse_args(argv)
    trace = (args.trace or largest_trace()).resolve()

    ours_command = [sys.executable, str(args.analyzer), "--json", str(trace)]
    with tempfile.TemporaryDirectory() as folder:  # HTA reads every trace in a directory
        shutil.copy(trace, folder)
        hta_command = [sys.executable, "-c", HTA_SCRIPT, folder]
        load_before = os.getloadavg()[0]
        measure(ours_command), measure(hta_command)  # untimed: compiles, fills the page cache
        ours, hta = [], []
        for _ in range(args.repeat):  # alternating, so that both sides see the same load
            ours.append(measure(ours_command))
            hta.append(measure(hta_command))
        load_after = os.getloadavg()[0]

    facts = json.loads(ours[0].stdout)
    our_idle = (facts.get("temporal_breakdown") or {}).get("idle_pct")
    hta_idle = json.loads(hta[0].stdout.strip().splitlines()[-1])["idle_pct"]
    (our_wall, our_cpu, our_rss), (hta_wall, hta_cpu, hta_rss) = summarize(ours), summarize(hta)
    print(f"trace: {trace.relative_to(ROOT) if trace.is_relative_to(ROOT) else trace} "
          f"({trace.stat().st_size / 2**20:.1f} MiB, {facts['events']:,} complete events)")
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, "
          f"Python {platform.python_version()}; median of {args.repeat} runs; load average "
          f"{load_before:.1f} before, {load_after:.1f} after")
    print(f"{'':8}{'wall s':>9}{'CPU s':>9}{'peak MB':>10}{'idle %':>9}")
    print(f"{'ours':8}{our_wall:9.2f}{our_cpu:9.2f}{our_rss:10.0f}{our_idle:9.2f}")
    print(f"{'HTA':8}{hta_wall:9.2f}{hta_cpu:9.2f}{hta_rss:10.0f}{hta_idle:9.2f}")
    print(f"HTA/ours wall time: {hta_wall / our_wall:.1f}x faster (aim: >= 10x)")
    print(f"ours/HTA peak memory: {our_rss / hta_rss:.2f} (aim: <= 0.33)")
    print("idle %: HTA rounds times to whole microseconds by default, we keep nanoseconds "
          "(see docs/guide/analyze-your-trace.md)")


if __name__ == "__main__":
    main()
