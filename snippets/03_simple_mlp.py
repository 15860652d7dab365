# /// script
# requires-python = ">=3.10"
# dependencies = ["torch>=2.4"]
# ///
"""Profile a GeGLU MLP (the feed-forward block of Gemma-style transformers) with torch.profiler.

    uv run snippets/03_simple_mlp.py --batch 64 --seq 128 --dim 768 --hidden 3072
    uv run snippets/03_simple_mlp.py --warmup --compile

Writes `mlp_b{batch}_s{seq}_{dim}x{hidden}_{dtype}_{warm|cold}_{compile|eager}.json` (open it in
Perfetto) and `.txt` (the key_averages table) into --trace_dir. snippets/03_kernels_mlp.py runs the
same MLP with a hand-written Triton kernel and names its outputs `..._triton`.
"""

import argparse
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn
from torch.profiler import ProfilerActivity, profile, record_function, schedule

DTYPES = {"bf16": torch.bfloat16, "fp32": torch.float32}
WAIT, WARMUP, ACTIVE = 1, 1, 3


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=64, help="sequences per batch")
    parser.add_argument("--seq", type=int, default=128, help="tokens per sequence")
    parser.add_argument("--dim", type=int, default=768, help="model width")
    parser.add_argument("--hidden", type=int, default=3072, help="width of the gate and up projections")
    parser.add_argument("--dtype", choices=sorted(DTYPES), default="bf16")
    parser.add_argument("--compile", action="store_true", help="wrap the MLP in torch.compile")
    parser.add_argument("--warmup", action="store_true", help="three untimed steps before profiling")
    parser.add_argument("--steps", type=int, default=ACTIVE, help="profiled (active) steps, one call each")
    parser.add_argument("--trace_dir", type=Path, default=Path("traces/03_simple_mlp"))
    parser.add_argument("--device", default="cuda", help="cuda, or cpu for a smoke test")
    args = parser.parse_args(argv)
    if args.steps < 1:
        parser.error("--steps must be positive")
    return args


def output_stem(args):
    return (
        f"mlp_b{args.batch}_s{args.seq}_{args.dim}x{args.hidden}_{args.dtype}_"
        f"{'warm' if args.warmup else 'cold'}_{'compile' if args.compile else 'eager'}"
    )


# --8<-- [start:model]
class GeGLUMLP(nn.Module):
    """down(gelu(gate(x)) * up(x)): three GEMMs around an elementwise GELU and multiply."""

    def __init__(self, dim, hidden):
        super().__init__()
        self.gate_proj = nn.Linear(dim, hidden, bias=False)
        self.up_proj = nn.Linear(dim, hidden, bias=False)
        self.down_proj = nn.Linear(hidden, dim, bias=False)

    def forward(self, x):
        # The tanh approximation of GELU, as Gemma uses; eager runs GELU and the multiply as two
        # kernels, each reading and writing a full (tokens, hidden) tensor.
        gate = F.gelu(self.gate_proj(x), approximate="tanh")
        return self.down_proj(gate * self.up_proj(x))
# --8<-- [end:model]


def main(argv=None):
    args = parse_args(argv)
    device = torch.device(args.device)
    dtype = DTYPES[args.dtype]
    torch.manual_seed(0)
    mlp = GeGLUMLP(args.dim, args.hidden).to(device=device, dtype=dtype)
    x = torch.randn(args.batch, args.seq, args.dim, device=device, dtype=dtype)
    compute = mlp
    if args.compile:
        import torch._inductor.config as inductor_config

        # One small graph: Inductor compiles it faster in this process than by first starting
        # its pool of compile workers (half of a 29 s run on our H200 machine). Same code either way.
        inductor_config.compile_threads = 1
        compute = torch.compile(mlp)

    # --8<-- [start:step]
    def step():
        with record_function("mlp"):
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
        schedule=schedule(wait=WAIT, warmup=WARMUP, active=args.steps, repeat=1),
    ) as prof:
        for _ in range(WAIT + WARMUP + args.steps):
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
