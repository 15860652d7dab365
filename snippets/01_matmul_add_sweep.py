# /// script
# requires-python = ">=3.10"
# dependencies = ["torch>=2.4"]
# ///
"""Sweep `x @ w + b` over matrix sizes, eager, compiled and as a CUDA graph, in one profiled run.

    uv run snippets/01_matmul_add_sweep.py
    uv run snippets/01_matmul_add_sweep.py --sizes 16,256,4096 --modes eager

Part 1 profiled two sizes; this runs the whole range from 16 to 8192, so that the size where the
GPU stops waiting for the CPU shows up in the data. Each (mode, size) block runs --steps steps back
to back inside a `{mode} n={size}` annotation, each step inside a `step` annotation, and ends
with a synchronize, so that its GPU work falls inside the block. Modes:
  eager    fn(x, w, b) as written: one launch per operator, every step
  compile  torch.compile(fn): Inductor's kernels, still launched one by one
  graph    fn captured once in a torch.cuda.CUDAGraph and replayed: one launch per step
compile and graph run up to --fast_upto, the end where launch overhead dominates.

The same run measures the GPU's peak first: --peak_steps back-to-back bf16 matrix products of
--peak_size inside a `peak n={size}` annotation; TFLOP/s are then given as a share of that.

Writes `sweep_{dtype}_{first}-{last}.json` (open it in Perfetto) and `.txt` (the key_averages
table and the per-block summary printed below it) into --trace_dir.
"""

import argparse
import time
from pathlib import Path

import torch
from torch.profiler import ProfilerActivity, profile, record_function, schedule

DTYPES = {"bf16": torch.bfloat16, "fp32": torch.float32}
SIZES = ",".join(str(2**k) for k in range(4, 14))  # 16 ... 8192
RECOMPILE_LIMIT = 8  # torch._dynamo.config.recompile_limit's default


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default=SIZES, help="comma-separated matrix sides")
    parser.add_argument("--modes", default="eager,compile,graph", help="any of eager, compile, graph")
    parser.add_argument("--fast_upto", type=int, default=1024,
                        help="largest size run with compile and graph (eager runs every size)")
    parser.add_argument("--steps", type=int, default=20, help="profiled steps per (mode, size)")
    parser.add_argument("--peak_size", type=int, default=None,
                        help="side of the peak's matrices (default: 8192 on a GPU, 512 on the CPU)")
    parser.add_argument("--peak_steps", type=int, default=20)
    parser.add_argument("--dtype", choices=sorted(DTYPES), default="bf16")
    parser.add_argument("--trace_dir", type=Path, default=Path("traces/01_matmul_add_sweep"))
    parser.add_argument("--device", default="cuda", help="cuda, or cpu for a smoke test")
    args = parser.parse_args(argv)
    args.sizes = [int(n) for n in args.sizes.split(",")]
    args.modes = args.modes.split(",")
    unknown = set(args.modes) - {"eager", "compile", "graph"}
    if unknown:
        parser.error(f"unknown mode(s): {', '.join(sorted(unknown))}")
    if len(set(args.sizes)) != len(args.sizes) or len(set(args.modes)) != len(args.modes):
        parser.error("--sizes and --modes take each value once")
    if min(args.sizes) < 1 or args.steps < 1 or args.peak_steps < 1:
        parser.error("sizes, --steps and --peak_steps must be positive")
    on_gpu = torch.device(args.device).type == "cuda"
    if "graph" in args.modes and not on_gpu:
        parser.error("--modes graph needs a CUDA device")
    fast = [n for n in args.sizes if n <= args.fast_upto]
    if not ("eager" in args.modes or fast):
        parser.error(f"nothing to run: no size is at most --fast_upto {args.fast_upto}")
    if "compile" in args.modes and len(fast) > RECOMPILE_LIMIT:
        # Past the limit torch.compile silently runs fn uncompiled: the block would be mislabelled.
        parser.error(f"torch.compile keeps at most {RECOMPILE_LIMIT} versions of fn; "
                     f"compile at most {RECOMPILE_LIMIT} sizes (lower --fast_upto)")
    args.peak_size = args.peak_size or (8192 if on_gpu else 512)
    return args


def output_stem(args):
    return f"sweep_{args.dtype}_{args.sizes[0]}-{args.sizes[-1]}"


def fn(x, w, b):
    return torch.add(torch.matmul(x, w), b)


# --8<-- [start:modes]
def make_step(mode, x, w, b):
    """A callable running one step of `mode` on these inputs, warmed up (compiled, captured)."""
    if mode == "eager":
        step = lambda: fn(x, w, b)  # noqa: E731
    elif mode == "compile":
        compiled = torch.compile(fn, dynamic=False)  # one specialised graph per size
        step = lambda: compiled(x, w, b)  # noqa: E731
    else:
        graph = torch.cuda.CUDAGraph()
        side = torch.cuda.Stream()  # capture needs warmed-up cuBLAS handles: warm on a side stream
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            fn(x, w, b)
        torch.cuda.current_stream().wait_stream(side)
        with torch.cuda.graph(graph):
            fn(x, w, b)
        step = graph.replay
    for _ in range(3):
        step()
    return step
# --8<-- [end:modes]


def main(argv=None):
    args = parse_args(argv)
    device = torch.device(args.device)
    dtype = DTYPES[args.dtype]
    on_gpu = device.type == "cuda"
    sync = torch.cuda.synchronize if on_gpu else (lambda: None)

    def tensors(n):
        return [torch.randn(n, n, device=device, dtype=dtype) for _ in range(3)]

    if "compile" in args.modes:
        import torch._inductor.config as inductor_config

        # Small graphs, one per size: Inductor compiles them faster in this process than by first
        # starting its pool of compile workers. Same code either way.
        inductor_config.compile_threads = 1
    blocks = []  # (label, mode, size, step): everything compiled and captured before profiling
    for size in args.sizes:
        x, w, b = tensors(size)
        for mode in args.modes:
            if mode == "eager" or size <= args.fast_upto:
                blocks.append((f"{mode} n={size}", mode, size, make_step(mode, x, w, b)))
    px, pw, _ = tensors(args.peak_size)
    sync()

    # --8<-- [start:profile]
    timings = {}
    with profile(activities=[ProfilerActivity.CPU] + [ProfilerActivity.CUDA] * on_gpu,
                 schedule=schedule(wait=0, warmup=1, active=1, repeat=1)) as prof:
        blocks[0][3]()  # the profiler's warm-up step, not recorded
        sync()
        prof.step()
        with record_function(f"peak n={args.peak_size}"):
            started = time.perf_counter()
            for _ in range(args.peak_steps):
                torch.matmul(px, pw)
            sync()
            peak_seconds = time.perf_counter() - started
        for label, mode, size, step in blocks:
            with record_function(label):
                started = time.perf_counter()
                for _ in range(args.steps):
                    with record_function("step"):
                        step()
                launched = time.perf_counter()
                sync()
                timings[label] = (launched - started, time.perf_counter() - started)
        prof.step()
    # --8<-- [end:profile]

    # Wall clock under the profiler, the host's view; the trace holds the GPU's side.
    peak = 2 * args.peak_size**3 * args.peak_steps / peak_seconds / 1e12
    lines = [f"peak: {peak:.3g} TFLOP/s ({args.dtype} matmul n={args.peak_size} on {device.type}, host clock)",
             f"{'block':>16} {'CPU us/step':>12} {'wall us/step':>13} {'TFLOP/s':>9} {'of peak':>8}"]
    for label, mode, size, _ in blocks:
        launch, wall = (t / args.steps for t in timings[label])
        tflops = (2 * size**3 + size**2) / wall / 1e12
        lines.append(f"{label:>16} {launch * 1e6:>12.1f} {wall * 1e6:>13.1f} {tflops:>9.2f} {tflops / peak:8.1%}")
    sort_by = "cuda_time_total" if on_gpu else "cpu_time_total"
    table = prof.key_averages().table(sort_by=sort_by, row_limit=15)
    report = table + "\n" + "\n".join(lines) + "\n"
    args.trace_dir.mkdir(parents=True, exist_ok=True)
    stem = output_stem(args)
    (args.trace_dir / f"{stem}.txt").write_text(report)
    prof.export_chrome_trace(str(args.trace_dir / f"{stem}.json"))
    print(report, end="")
    print(f"wrote {args.trace_dir / stem}.json and .txt")


if __name__ == "__main__":
    main()
