"""The command line's time against a trace's size in each dimension that a hostile or unlucky
trace can make large: ranks with N steps and 2N collectives each, N kernels each on a device of
its own, N kernels each on a stream of its own, N ops each on a host thread of its own, N
ProfilerSteps. Linear growth doubles the time when N doubles (ratio 2); quadratic growth
quadruples it.

    .venv/bin/python tests/benchmarks/bench_scaling.py [--cases ranks,devices,streams,threads,steps]
        [--sizes 1000,2000,4000,8000] [--repeat N]

Each trace is made by tests/fixtures/scaling.py and written to a temporary folder, then read
by `analyze.py` in this process (`main`, its output discarded): `analyze.py TRACE` and
`analyze.py TRACE --svg OUT` for one trace, `analyze.py DIR --workers 1` for the ranks; all of
it in this one process (no forked child for the details either), so that its CPU time is the
whole run's. Per size: the number of events, then the least wall time (perf_counter) and CPU
time (process_time) of --repeat runs, each with its ratio to the size before. Not a test
(tests/test_scaling.py holds the growth to a bound): the machine's load moves the wall times;
the CPU times are the steadier column on a shared machine."""

from __future__ import annotations

import argparse
import contextlib
import gzip
import io
import json
import math
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from scripts.tracefacts.entry.beside import FORK_ENV  # noqa: E402
from scripts.tracefacts.entry.cli import main  # noqa: E402
from tests.fixtures.scaling import (many_steps, one_kernel_per_device,  # noqa: E402
                                    one_kernel_per_stream, one_op_per_thread, two_ranks)

CASES = {  # name: (what N counts, the trace(s) of size N)
    "ranks": ("steps of 2 ranks (2 NCCL collectives a step)", two_ranks),
    "devices": ("kernels, each on a device of its own", one_kernel_per_device),
    "streams": ("kernels, each on a stream of its own", one_kernel_per_stream),
    "threads": ("ops recorded with stacks, each on a host thread of its own", one_op_per_thread),
    "steps": ("ProfilerSteps of 2 ops each", lambda n: many_steps(n, ops=2)),
}
DEFAULT_SIZES = (1000, 2000, 4000, 8000)


def write(trace: dict, path: Path) -> Path:
    """Compact and quickly compressed: the layout does not matter here, the time to write
    it would."""
    path.write_bytes(gzip.compress(json.dumps(trace).encode(), compresslevel=1, mtime=0))
    return path


def run(argv: list[str], repeat: int) -> tuple[float, float]:
    """The least wall and CPU seconds of `repeat` runs of `analyze.py argv`."""
    wall = cpu = math.inf
    for _ in range(repeat):
        start, start_cpu = time.perf_counter(), time.process_time()
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            status = main(argv)
        wall = min(wall, time.perf_counter() - start)
        cpu = min(cpu, time.process_time() - start_cpu)
        if status:
            raise SystemExit(f"analyze.py {' '.join(argv)} exited with {status}")
    return wall, cpu


def ratio(now: float, before: float | None) -> str:
    return f"x{now / before:.2f}" if before else "-"


def bench(case: str, sizes: list[int], repeat: int, folder: Path) -> None:
    what, make = CASES[case]
    modes = {"analyze.py DIR": ["--workers", "1"]} if case == "ranks" else {
        "analyze.py TRACE": [], "analyze.py TRACE --svg OUT": ["--svg", str(folder / "out.svg")]}
    print(f"\n{case}: N {what}")
    print(f"{'':>8} {'':>9}" + "".join(f"  {mode:^40}" for mode in modes))
    print(f"{'N':>8} {'events':>9}" + f"  {'wall s':>9} {'ratio':>7} {'CPU s':>9} {'ratio':>7}     "
          * len(modes))
    before: dict = {}
    for n in sizes:
        made = make(n)
        if case == "ranks":
            target = folder / f"ranks_{n}"
            target.mkdir()
            for rank, trace in enumerate(made):
                write(trace, target / f"rank{rank}.json.gz")
            events = sum(len(trace["traceEvents"]) for trace in made)
        else:
            target = write(made, folder / f"{case}_{n}.json.gz")
            events = len(made["traceEvents"])
        del made
        cells = []
        for mode, extra in modes.items():
            wall, cpu = run([str(target), *extra], repeat)
            last_wall, last_cpu = before.get(mode, (None, None))
            cells.append(f"  {wall:9.3f} {ratio(wall, last_wall):>7} {cpu:9.3f} {ratio(cpu, last_cpu):>7}     ")
            before[mode] = wall, cpu
        print(f"{n:>8} {events:>9}" + "".join(cells), flush=True)


def main_bench(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", default=",".join(CASES), help="of: " + ", ".join(CASES))
    parser.add_argument("--sizes", default=",".join(map(str, DEFAULT_SIZES)))
    parser.add_argument("--repeat", type=int, default=1, help="runs of each; the least time counts")
    args = parser.parse_args(argv)
    cases = args.cases.split(",")
    unknown = sorted(set(cases) - set(CASES))
    if unknown:
        parser.error(f"unknown cases: {', '.join(unknown)}")
    sizes = [int(size) for size in args.sizes.split(",")]
    os.environ[FORK_ENV] = "0"  # the details in this process: its CPU time is all of the run's
    with tempfile.TemporaryDirectory() as folder:
        for case in cases:
            bench(case, sizes, args.repeat, Path(folder))


if __name__ == "__main__":
    main_bench()
