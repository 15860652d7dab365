"""Time and peak memory of our analyzer against HTA's on one trace, each in a fresh process.

    .venv/bin/python tests/benchmarks/bench_analyzer.py [TRACE | --size MB] [--repeat N]
        [--analyzer PY] [--baseline PY] [--no-hta]

TRACE defaults to the largest .json.gz under traces/; `--size MB` writes instead that trace's
events repeated, each copy later, up to MB megabytes of JSON (tests/benchmarks/big_traces.py).
Ours: `scripts/analyze.py --json TRACE` (`--analyzer` runs another copy of it, e.g. an older
version, under the same conditions), with the compiled decoder where msgspec is installed and
with the standard library's path alone (PROFILING_TRACE_DECODER=stdlib), both printed.
HTA (holistictraceanalysis 0.5.0, default settings): load the trace, then its temporal breakdown,
idle time breakdown and kernel launch statistics, the facts we report too. Where msgspec is
installed, a "read only" row times reading alone (decompress, decode every event, analyse
nothing): the floor under an analyzer that decodes the whole file with msgspec in one thread,
so HTA's time over it is the ceiling of the HTA/ours ratio on that trace for such a design. Wall time includes
interpreter start and imports on both sides; CPU time includes the analyzer's forked child
(scripts/tracefacts/entry/beside.py); peak memory is the larger of the process's maximum resident set and its
process tree's summed PSS, sampled every 20 ms (the analyzer and its child together).
Each side runs once untimed first, with bytecode caching on (as a user's first run leaves it):
HTA's modules come compiled with its install, ours are compiled by that run, and the file is
in the page cache for both. The machine's load changes both sides' times: compare ratios, and
runs made together.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
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

# What reading alone costs, with nothing analysed: the file decompressed (if gzipped) and every
# event decoded by msgspec into a struct of the six fields every analysis needs. No analyzer that
# reads the whole file this way, in one Python thread, can take less: HTA's time over this one is
# the most that "HTA/ours" could reach on this trace.
READ_ONLY_SCRIPT = """
import sys, zlib, msgspec
class Event(msgspec.Struct, gc=False):
    ph: str = ""
    name: str = ""
    ts: float = 0.0
    dur: float = 0.0
    pid: object = None
    tid: object = None
class Document(msgspec.Struct):
    traceEvents: list[Event] = []
data = open(sys.argv[1], "rb").read()
if data[:2] == b"\\x1f\\x8b":
    data = zlib.decompress(data, 31)
print(len(msgspec.json.decode(data, type=Document).traceEvents))
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


def measure(command: list[str], env: dict | None = None) -> Run:
    """Run a command to completion; its wall time, CPU time (its children's included) and peak
    memory: the larger of its own peak resident set and its process tree's peak (scripts/tracefacts/entry/beside.py
    forks a child beside the facts), sampled."""
    start = time.perf_counter()
    child = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                             env={**child_env(), **(env or {})})
    sampler = TreeSampler(child.pid)
    sampler.start()
    stdout = child.stdout.read()
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - start
    sampler.stop()
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode != 0:
        raise SystemExit(f"failed ({child.returncode}): {' '.join(command)}")
    return Run(wall, usage.ru_utime + usage.ru_stime,
               max(usage.ru_maxrss / 1024, sampler.peak_kib / 1024),  # both KiB
               stdout)


class TreeSampler(threading.Thread):
    """The most memory a process and its descendants held together, sampled every 20 ms: the
    sum of their proportional set sizes (PSS: each shared page counted once, split between the
    processes that share it; a forked child's copy-on-write pages are not counted twice). Zero
    where /proc has no smaps_rollup (off Linux): the process's own peak is then the measure."""

    INTERVAL_S = 0.02

    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self.pid, self.peak_kib = pid, 0
        self._done = threading.Event()

    def run(self) -> None:
        while not self._done.wait(self.INTERVAL_S):
            self.peak_kib = max(self.peak_kib, sum(map(_pss_kib, _tree(self.pid))))

    def stop(self) -> None:
        self._done.set()
        self.join()


def _tree(pid: int) -> list[int]:
    found = [pid]
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children") as children:
                for child in children.read().split():
                    found += _tree(int(child))
    except OSError:  # gone, or no /proc
        pass
    return found


def _pss_kib(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/smaps_rollup") as rollup:
            for line in rollup:
                if line.startswith("Pss:"):
                    return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return 0


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
    parser.add_argument("--size", type=float, metavar="MB",
                        help="a trace of this many MB of JSON, made from the largest one")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each (median time)")
    parser.add_argument("--analyzer", type=Path, default=ROOT / "scripts" / "analyze.py",
                        help="the analyze.py to time (default: this checkout's)")
    parser.add_argument("--baseline", type=Path, metavar="PY",
                        help="also time this analyze.py (e.g. an older version's, from `git "
                             "archive REF scripts | tar -x -C DIR`) in the same runs")
    parser.add_argument("--no-hta", action="store_true", help="ours only (HTA takes minutes "
                        "and gigabytes on a gigabyte)")
    parser.add_argument("--max-peak-mb", type=float, metavar="MB",
                        help="exit with status 1 where a run of ours peaks above MB (the aim: "
                             "1024, at any --size)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as folder:  # HTA reads every trace in a directory
        if args.size:
            trace = Path(folder) / f"repeated_{args.size:g}MB.json"
            subprocess.run([sys.executable, str(ROOT / "tests/benchmarks/big_traces.py"),
                            "repeat", str(trace), "--mb", str(args.size)], check=True)
        else:
            trace = (args.trace or largest_trace()).resolve()
            shutil.copy(trace, folder)
        run(args, trace, folder)


def run(args, trace: Path, folder: str) -> None:
    ours_command = [sys.executable, str(args.analyzer), "--json", str(trace)]
    hta_command = [sys.executable, "-c", HTA_SCRIPT, folder]
    sides = {"ours": (ours_command, None),
             "ours, stdlib": (ours_command, {"PROFILING_TRACE_DECODER": "stdlib"})}
    if args.baseline:
        sides["baseline"] = ([sys.executable, str(args.baseline), "--json", str(trace)], None)
    if _has_msgspec():
        sides["read only"] = ([sys.executable, "-c", READ_ONLY_SCRIPT, str(trace)], None)
    if not args.no_hta:
        sides["HTA"] = (hta_command, None)
    load_before = os.getloadavg()[0]
    for command, env in sides.values():  # untimed: compiles, fills the page cache
        measure(command, env)
    runs: dict[str, list[Run]] = {side: [] for side in sides}
    for _ in range(args.repeat):  # in turns, so that every side sees the same load
        for side, (command, env) in sides.items():
            runs[side].append(measure(command, env))
    load_after = os.getloadavg()[0]

    facts = json.loads(runs["ours"][0].stdout)
    megabytes = text_mb(trace)
    print(f"trace: {trace.relative_to(ROOT) if trace.is_relative_to(ROOT) else trace.name} "
          f"({trace.stat().st_size / 2**20:.1f} MiB on disk, {megabytes:.0f} MB of JSON, "
          f"{facts['events']:,} complete events)")
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, "
          f"Python {platform.python_version()}; median of {args.repeat} runs; load average "
          f"{load_before:.1f} before, {load_after:.1f} after")
    print(f"{'':14}{'wall s':>9}{'CPU s':>9}{'MB/s':>8}{'peak MB':>10}{'MB/GB':>7}{'idle %':>9}")
    summary = {side: summarize(found) for side, found in runs.items()}
    for side, (wall, cpu, rss) in summary.items():
        idle = _idle(side, runs[side][0].stdout)
        print(f"{side:14}{wall:9.2f}{cpu:9.2f}{megabytes / wall:8.0f}{rss:10.0f}"
              f"{rss / megabytes * 1000:7.0f}{'-' if idle is None else f'{idle:.2f}':>9}")
    if "HTA" in summary:
        hta_wall, hta_cpu, hta_rss = summary["HTA"]
        for side in [side for side in summary if side not in ("HTA", "read only")]:
            wall, cpu, rss = summary[side]
            print(f"HTA/{side} time: {hta_wall / wall:.1f}x wall, {hta_cpu / cpu:.1f}x CPU "
                  f"(aim: >= 20x); {side}/HTA peak memory: {rss / hta_rss:.2f} (aim: <= 0.20)")
        if "read only" in summary:
            wall, cpu, _ = summary["read only"]
            print(f"HTA/read only: {hta_wall / wall:.1f}x wall, {hta_cpu / cpu:.1f}x CPU: the "
                  f"ceiling of HTA/ours on this trace for a reader that decodes every event")
        print("idle %: HTA rounds times to whole microseconds by default, we keep nanoseconds "
              "(see docs/guide/analyze-your-trace.md)")
    print("aim: >= 100 MB of JSON a second, peak under 1 GiB (MB/s: JSON MB over wall time, "
          "interpreter start included; on a shared machine compare the CPU column; MB/GB: peak "
          "MB per GB of JSON)")
    if args.max_peak_mb is not None:
        over = [side for side in ("ours", "ours, stdlib")
                if summary[side][2] > args.max_peak_mb]
        if over:
            print(f"over {args.max_peak_mb:g} MB at peak: {', '.join(over)}")
            sys.exit(1)


def _has_msgspec() -> bool:
    return subprocess.run([sys.executable, "-c", "import msgspec"], capture_output=True).returncode == 0


def _idle(side: str, stdout: str) -> float | None:
    if side == "read only":
        return None
    if side == "HTA":
        return json.loads(stdout.strip().splitlines()[-1])["idle_pct"]
    return (json.loads(stdout).get("temporal_breakdown") or {}).get("idle_pct") or float("nan")


def text_mb(path: Path) -> float:
    """Megabytes of JSON (decompressed)."""
    with path.open("rb") as head:
        gzipped = head.read(2) == b"\x1f\x8b"
    if not gzipped:
        return path.stat().st_size / 1e6
    with gzip.open(path, "rb") as stream:
        return sum(iter(lambda: len(stream.read(1 << 24)), 0)) / 1e6


if __name__ == "__main__":
    main()
