# /// script
# requires-python = ">=3.10"
# dependencies = ["torch>=2.4", "triton>=3.0; sys_platform == 'linux'"]
# ///
"""Profile the GeGLU MLP with GELU-and-multiply done by our own Triton kernel, with torch.profiler.

    uv run snippets/03_kernels_mlp.py --batch 64 --seq 128 --dim 768 --hidden 3072 --warmup

The MLP is the one of snippets/03_simple_mlp.py; the three GEMMs stay cuBLAS, and the two eager
elementwise kernels (GELU, then multiply) become one hand-written Triton kernel, the role that a
downloaded fused GeGLU kernel played in the original series. Before writing anything the run checks
the MLP's output against the eager MLP; on --device cpu (no Triton, no GPU) it runs the eager
GELU and multiply instead and says so.

Writes `mlp_b{batch}_s{seq}_{dim}x{hidden}_{dtype}_{warm|cold}_triton.json` (open it in Perfetto)
and `.txt` (the key_averages table) into --trace_dir.
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
    parser.add_argument("--warmup", action="store_true", help="three untimed steps before profiling")
    parser.add_argument("--steps", type=int, default=ACTIVE, help="profiled (active) steps, one call each")
    parser.add_argument("--trace_dir", type=Path, default=Path("traces/03_kernels_mlp"))
    parser.add_argument("--device", default="cuda", help="cuda, or cpu for a smoke test (eager fallback)")
    args = parser.parse_args(argv)
    if args.steps < 1:
        parser.error("--steps must be positive")
    return args


def output_stem(args):
    return (
        f"mlp_b{args.batch}_s{args.seq}_{args.dim}x{args.hidden}_{args.dtype}_"
        f"{'warm' if args.warmup else 'cold'}_triton"
    )


# --8<-- [start:kernel]
BLOCK_SIZE = 1024  # elements per Triton program: 8 per thread with the default 4 warps


def triton_gelu_mul():
    """gelu_tanh(gate) * up as one Triton kernel launch. Triton is imported here, on first use,
    so that the CPU fallback runs where Triton is not installed."""
    import triton
    import triton.language as tl

    @triton.jit
    def gelu_tanh_mul_kernel(gate_ptr, up_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
        # Each program handles BLOCK_SIZE consecutive elements of the flattened tensors; the
        # mask keeps the last program inside them.
        offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
        in_bounds = offsets < n_elements
        gate = tl.load(gate_ptr + offsets, mask=in_bounds).to(tl.float32)
        up = tl.load(up_ptr + offsets, mask=in_bounds).to(tl.float32)
        # tanh-GELU, as F.gelu(approximate="tanh"): 0.5 * x * (1 + tanh(u)) with
        # u = sqrt(2 / pi) * (x + 0.044715 * x^3). Since 0.5 * (1 + tanh(u)) == sigmoid(2u),
        # this is x * sigmoid(2u). Computed in fp32, rounded once on the store.
        inner = 0.7978845608028654 * (gate + 0.044715 * gate * gate * gate)
        out = gate * tl.sigmoid(2.0 * inner) * up
        tl.store(out_ptr + offsets, out.to(out_ptr.dtype.element_ty), mask=in_bounds)

    def gelu_mul(gate, up):
        assert gate.shape == up.shape and gate.is_contiguous() and up.is_contiguous()
        out = torch.empty_like(gate)
        grid = (triton.cdiv(gate.numel(), BLOCK_SIZE),)
        gelu_tanh_mul_kernel[grid](gate, up, out, gate.numel(), BLOCK_SIZE=BLOCK_SIZE)
        return out

    return gelu_mul
# --8<-- [end:kernel]


def eager_gelu_mul(gate, up):
    """The reference: two kernels, GELU then multiply, as in snippets/03_simple_mlp.py."""
    return F.gelu(gate, approximate="tanh") * up


# --8<-- [start:model]
class GeGLUMLP(nn.Module):
    """down(gelu(gate(x)) * up(x)), with the GELU-and-multiply done by `gelu_mul`."""

    def __init__(self, dim, hidden, gelu_mul):
        super().__init__()
        self.gate_proj = nn.Linear(dim, hidden, bias=False)
        self.up_proj = nn.Linear(dim, hidden, bias=False)
        self.down_proj = nn.Linear(hidden, dim, bias=False)
        self.gelu_mul = gelu_mul

    def forward(self, x):
        gate, up = self.gate_proj(x), self.up_proj(x)
        # A label of our own: a Triton launch has no aten:: op above it in the trace.
        with record_function("gelu_mul"):
            hidden = self.gelu_mul(gate, up)
        return self.down_proj(hidden)
# --8<-- [end:model]


def check_against_eager(mlp, x):
    """The MLP's output with our kernel must match the eager MLP's (same weights)."""
    with torch.no_grad():
        ours = mlp(x)
        kernel, mlp.gelu_mul = mlp.gelu_mul, eager_gelu_mul
        try:
            reference = mlp(x)
        finally:
            mlp.gelu_mul = kernel
    # bf16 keeps 8 bits of mantissa: eager rounds twice (after GELU, after the multiply), our
    # kernel once, and the down projection sums `hidden` such products. Tolerances allow a few
    # bf16 ulps of the output's scale, far below what a wrong formula or index would give.
    scale = reference.abs().max().item()
    tolerance = 1e-4 if x.dtype == torch.float32 else 2e-2
    torch.testing.assert_close(ours, reference, rtol=tolerance, atol=tolerance * scale)
    return (ours - reference).abs().max().item()


def main(argv=None):
    args = parse_args(argv)
    device = torch.device(args.device)
    dtype = DTYPES[args.dtype]
    on_gpu = device.type == "cuda"
    if on_gpu:
        gelu_mul = triton_gelu_mul()
    else:
        print("NOTE: no GPU, so no Triton kernel: running the eager GELU and multiply instead "
              "(the trace shows aten::gelu and aten::mul where a GPU run shows gelu_tanh_mul_kernel)")
        gelu_mul = eager_gelu_mul
    torch.manual_seed(0)
    mlp = GeGLUMLP(args.dim, args.hidden, gelu_mul).to(device=device, dtype=dtype)
    x = torch.randn(args.batch, args.seq, args.dim, device=device, dtype=dtype)

    # --8<-- [start:step]
    def step():
        with record_function("mlp"):
            return mlp(x)
    # --8<-- [end:step]

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

    # Checked after profiling, so that a run without --warmup profiles a cold kernel, and before
    # writing, so that a kernel that computes the wrong thing leaves no trace behind.
    if on_gpu:
        print(f"matches the eager MLP: max abs difference {check_against_eager(mlp, x):.3g}")

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
