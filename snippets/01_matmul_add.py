# /// script
# requires-python = ">=3.10"
# dependencies = ["torch>=2.4"]
# ///
"""Profile `x @ w + b` with torch.profiler; write the chrome trace and the profiler table.

    uv run snippets/01_matmul_add.py --size 64
    uv run snippets/01_matmul_add.py --size 4096 --warmup --compile

Writes `{size}_{dtype}_{warm|cold}_{compile|eager}.json` (open it in Perfetto) and `.txt`
(the key_averages table) into --trace_dir. Variants add a suffix: `_b{N}` for a batch
dimension, `_tf32` for --tf32 (fp32 matrix products allowed on TF32 tensor cores),
`_s{wait}-{warmup}-{active}` for a non-default profiler schedule.
"""

import argparse
from pathlib import Path

import torch
from torch.profiler import ProfilerActivity, profile, record_function, schedule

DTYPES = {"bf16": torch.bfloat16, "fp32": torch.float32}
DEFAULT_SCHEDULE = (1, 1, 3)


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=64, help="side of the square matrices")
    parser.add_argument("--dtype", choices=sorted(DTYPES), default="bf16")
    parser.add_argument("--compile", action="store_true", help="wrap fn in torch.compile")
    parser.add_argument("--warmup", action="store_true", help="three untimed steps before profiling")
    parser.add_argument("--trace_dir", type=Path, default=Path("traces/01_matmul_add"))
    parser.add_argument("--device", default="cuda", help="cuda, or cpu for a smoke test")
    parser.add_argument("--batch", type=int, default=0, help="add a batch dimension: aten::bmm")
    parser.add_argument("--tf32", action="store_true",
                        help="let fp32 matrix products use TF32 tensor cores (torch.backends.cuda.matmul.allow_tf32)")
    parser.add_argument(
        "--schedule",
        default=",".join(map(str, DEFAULT_SCHEDULE)),
        help="profiler schedule as wait,warmup,active (one step() per scheduled step)",
    )
    return parser.parse_args(argv)


def output_stem(args, wait, warmup, active):
    stem = (
        f"{args.size}_{args.dtype}_{'warm' if args.warmup else 'cold'}_"
        f"{'compile' if args.compile else 'eager'}"
    )
    if args.batch:
        stem += f"_b{args.batch}"
    if args.tf32:
        stem += "_tf32"
    if (wait, warmup, active) != DEFAULT_SCHEDULE:
        stem += f"_s{wait}-{warmup}-{active}"
    return stem


# --8<-- [start:fn]
def fn(x, w, b):
    return torch.add(torch.matmul(x, w), b)
# --8<-- [end:fn]


def main(argv=None):
    args = parse_args(argv)
    wait, warmup, active = (int(n) for n in args.schedule.split(","))
    device = torch.device(args.device)
    dtype = DTYPES[args.dtype]
    if args.tf32:
        # What torch.set_float32_matmul_precision("high") sets: cuBLAS may round fp32 inputs to
        # TF32 and run the product on tensor cores. PyTorch leaves it off by default.
        torch.backends.cuda.matmul.allow_tf32 = True
    shape = (args.batch, args.size, args.size) if args.batch else (args.size, args.size)
    x = torch.randn(shape, device=device, dtype=dtype)
    w = torch.randn(shape, device=device, dtype=dtype)
    b = torch.randn(shape, device=device, dtype=dtype)
    compute = fn
    if args.compile:
        import torch._inductor.config as inductor_config

        # One small graph: Inductor compiles it faster in this process than by first starting
        # its pool of compile workers (a warm compiled run took 5 s longer than a warm eager one
        # on our H200 machine). Same code either way.
        inductor_config.compile_threads = 1
        compute = torch.compile(fn)

    # --8<-- [start:step]
    def step():
        with record_function("matmul_add"):
            return compute(x, w, b)
    # --8<-- [end:step]

    on_gpu = device.type == "cuda"
    if args.warmup:
        for _ in range(3):
            step()
        if on_gpu:
            torch.cuda.synchronize()

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if on_gpu else [])
    # --8<-- [start:profile]
    with profile(
        activities=activities,
        schedule=schedule(wait=wait, warmup=warmup, active=active, repeat=1),
    ) as prof:
        for _ in range(wait + warmup + active):
            step()
            prof.step()
    # --8<-- [end:profile]

    # --8<-- [start:export]
    sort_by = "cuda_time_total" if on_gpu else "cpu_time_total"
    table = prof.key_averages().table(sort_by=sort_by, row_limit=15)
    args.trace_dir.mkdir(parents=True, exist_ok=True)
    stem = output_stem(args, wait, warmup, active)
    (args.trace_dir / f"{stem}.txt").write_text(table + "\n")
    prof.export_chrome_trace(str(args.trace_dir / f"{stem}.json"))
    # --8<-- [end:export]
    print(table)
    print(f"wrote {args.trace_dir / stem}.json and .txt")


if __name__ == "__main__":
    main()
