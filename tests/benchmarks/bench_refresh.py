"""The refresh's runners side by side: each example run isolated (a fresh interpreter) and forked
(a child of the fork server), timed, and what its first recorded step looked like in each.

    .venv/bin/python tests/benchmarks/bench_refresh.py [--repeat N]            # CPU examples
    python3 tests/benchmarks/bench_refresh.py --catalog 01_matmul_add/64_bf16_cold_eager ...  # GPU

Without --catalog it runs small CPU examples of Part 1's snippet and the guide's training step
(`--device cpu`); with it, the catalog's examples as the refresh runs them. Nothing is written
under traces/: the runs go through freeze.run_example, which only returns the artifacts. Each
example runs N times per runner, the runners alternating, so that a machine's changing load
falls on both. The time per run is the runner's wall time of the snippet's process; the total
includes sanitizing and, forked, the server's one-off start (torch's import). The first step
columns are the median length of the first recorded step, where a cold start shows: a forked
child must not be warmer than a fresh interpreter there. A benchmark, not a test: compare ratios.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from scripts.series.runs import catalog, freeze, runner  # noqa: E402
from scripts.series.runs.samples import samples_of  # noqa: E402
from scripts.tracefacts.model.trace import build_trace  # noqa: E402

CPU_EXAMPLES = (
    catalog.Example("01_matmul_add", "64_bf16_cold_eager", ("--device", "cpu", "--size", "64")),
    catalog.Example("01_matmul_add", "64_bf16_warm_eager", ("--device", "cpu", "--size", "64", "--warmup")),
    catalog.Example("01_matmul_add", "64_fp32_cold_eager_s0-0-3",
                    ("--device", "cpu", "--size", "64", "--dtype", "fp32", "--schedule", "0,0,3")),
    catalog.Example("train_step", "train_b2_s1", ("--device", "cpu", "--layers", "1", "--d_model", "32",
                                                  "--seq", "8", "--batch", "2", "--steps", "1")),
)


def first_step_us(example: catalog.Example, result: freeze.RunResult) -> float | None:
    data = result.files.get(example.trace_path.name)
    if data is None:
        return None
    import gzip
    import json

    steps = samples_of(build_trace(json.loads(gzip.decompress(data))))["steps"]
    return steps[0]["dur_us"] if steps else None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--catalog", nargs="*", metavar="KEY", help="catalog examples instead of the CPU ones")
    parser.add_argument("--repeat", type=int, default=2, help="runs of each example per runner")
    parser.add_argument("--python", default=sys.executable)
    args = parser.parse_args()
    examples = catalog.select(args.catalog) if args.catalog else list(CPU_EXAMPLES)
    environment = {"torch": "bench", "gpu": None}
    # The fork server as the refresh opens it: the profiler's own imports done once, beside torch.
    forked = runner.ForkServer(args.python, log=print, imports=freeze.PROFILER_MODULES)
    runners = {"isolated": runner.Isolated(args.python), "forked": forked}
    walls = {name: {e.key: [] for e in examples} for name in runners}
    firsts = {name: {e.key: [] for e in examples} for name in runners}
    totals = dict.fromkeys(runners, 0.0)
    try:
        for _ in range(args.repeat):
            for name, run in runners.items():
                started = time.perf_counter()
                for example in examples:
                    result = freeze.run_example(example, args.python, environment, runner=run)
                    if result.error:
                        print(f"{name} {example.key}: {result.error}", file=sys.stderr)
                        return 1
                    walls[name][example.key].append(result.wall_time_s)
                    firsts[name][example.key].append(first_step_us(example, result))
                totals[name] += time.perf_counter() - started
    finally:
        for run in runners.values():
            run.close()

    def median(values):
        values = [v for v in values if v is not None]
        return statistics.median(values) if values else float("nan")

    width = max(len(e.key) for e in examples)
    print(f"{'example':{width}}  isolated s  forked s  ratio   first step us: isolated  forked")
    for example in examples:
        iso, fork = median(walls["isolated"][example.key]), median(walls["forked"][example.key])
        print(f"{example.key:{width}}  {iso:10.2f}  {fork:8.2f}  {iso / fork:5.1f}x  "
              f"{median(firsts['isolated'][example.key]):23.0f}  {median(firsts['forked'][example.key]):6.0f}")
    print(f"{'all runs, total':{width}}  {totals['isolated']:10.1f}  {totals['forked']:8.1f}  "
          f"{totals['isolated'] / totals['forked']:5.1f}x  ({args.repeat} run(s) of each example per runner)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
