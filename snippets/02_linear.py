# /// script
# requires-python = ">=3.10"
# dependencies = ["torch>=2.4"]
# ///
"""Profile a single nn.Linear with torch.profiler; write the chrome trace and the profiler table.

    uv run snippets/02_linear.py --batch 1024 --in_dim 32 --out_dim 64
    uv run snippets/02_linear.py --batch 1024 --in_dim 32 --out_dim 64 --warmup --compile

Writes `linear_b{batch}_{in_dim}x{out_dim}_{dtype}_{warm|cold}_{compile|eager}.json` (open it in
Perfetto) and `.txt` (the key_averages table) into --trace_dir.
"""

import argparse
from pathlib import Path

import torch
from torch import nn
from torch.profiler import ProfilerActivity, profile, record_function, schedule

DTYPES = {"bf16": torch.bfloat16, "fp32": torch.float32}
WAIT, WARMUP, ACTIVE = 1, 1, 3


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=1024, help="rows of the input")
    parser.add_argument("--in_dim", type=int, default=32, help="input features")
    parser.add_argument("--out_dim", type=int, default=64, help="output features")
    parser.add_argument("--dtype", choices=sorted(DTYPES), default="bf16")
    parser.add_argument("--compile", action="store_true", help="wrap the layer in torch.compile")
    parser.add_argument("--warmup", action="store_true", help="three untimed steps before profiling")
    parser.add_argument("--trace_dir", type=Path, default=Path("traces/02_linear"))
    parser.add_argument("--device", default="cuda", help="cuda, or cpu for a smoke test")
    return parser.parse_args(argv)


def output_stem(args):
    return (
        f"linear_b{args.batch}_{args.in_dim}x{args.out_dim}_{args.dtype}_"
        f"{'warm' if args.warmup else 'cold'}_{'compile' if args.compile else 'eager'}"
    )


def main(argv=None):
    args = parse_args(argv)
    device = torch.device(args.device)
    dtype = DTYPES[args.dtype]
    torch.manual_seed(0)
    # --8<-- [start:model]
    # y = x @ W^T + b. W is stored (out_dim, in_dim), so the layer multiplies by its transpose.
    layer = nn.Linear(args.in_dim, args.out_dim, bias=True).to(device=device, dtype=dtype)
    x = torch.randn(args.batch, args.in_dim, device=device, dtype=dtype)
    # --8<-- [end:model]
    compute = layer
    if args.compile:
        import torch._inductor.config as inductor_config

        # One small graph: Inductor compiles it faster in this process than by first starting
        # its pool of compile workers (half of a 29 s run on our H200 machine). Same code either way.
        inductor_config.compile_threads = 1
        compute = torch.compile(layer)

    # --8<-- [start:step]
    def step():
        with record_function("linear"):
            return compute(x)
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
        schedule=schedule(wait=WAIT, warmup=WARMUP, active=ACTIVE, repeat=1),
    ) as prof:
        for _ in range(WAIT + WARMUP + ACTIVE):
            step()
            prof.step()
    # --8<-- [end:profile]

    sort_by = "cuda_time_total" if on_gpu else "cpu_time_total"
    table = prof.key_averages().table(sort_by=sort_by, row_limit=15)
    args.trace_dir.mkdir(parents=True, exist_ok=True)
    stem = output_stem(args)
    (args.trace_dir / f"{stem}.txt").write_text(table + "\n")
    prof.export_chrome_trace(str(args.trace_dir / f"{stem}.json"))
    print(table)
    print(f"wrote {args.trace_dir / stem}.json and .txt")


if __name__ == "__main__":
    main()
