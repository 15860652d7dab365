# /// script
# requires-python = ">=3.10"
# dependencies = ["torch>=2.4"]
# ///
"""Measure the GPU's roofs (bf16 matmul FLOP/s and HBM bandwidth) and place kernels under them.

    uv run snippets/08_roofline.py
    uv run snippets/08_roofline.py --tokens 4096 --dim 2048 --steps 20

One run, two parts, both profiled with record_shapes=True and with_flops=True:
  roofs    --peak_steps bf16 products of two --peak_size matrices (compute), and as many copies,
           triads and sums of --copy_mib MiB tensors (memory: a device-to-device copy reads and
           writes every byte, a triad `c = a + b` reads two and writes one, a sum only reads). The
           achievable bandwidth is the faster of the copy and the triad, kernels that read and write
           as the measured kernels do; the read-only sum is reported beside it, named as such, and
           sets no roof. The ridge point, where a kernel stops being memory-bound, is peak FLOP/s
           over that bandwidth.
  kernels  --steps calls each of: GEMMs of several shapes (square, an MLP projection over
           --tokens rows, and batch-16 and batch-1 decode-like products with the same weight
           matrix, by default the shape of Part 4's MLP projections), an elementwise add, a
           softmax, a layer norm, and causal SDPA at Part 3's shape.
Every call runs inside its own annotation, `{role}: {name} flops={F} bytes={B}` (role: `peak
compute`, `peak memory` or `kernel`), so that a reader of the trace alone (our analyzer included)
has each call's work beside its GPU time. Before profiling, the same roofs are timed with CUDA
events (outside the profiler) and stored in the trace's metadata under "roofline".

FLOPs: with_flops counts the products (aten::mm, addmm, bmm) and aten::add; the table below the
profiler's shows its count beside ours. Where it counts nothing (softmax, layer norm, SDPA), the
FLOPs come from the shapes, by the formulas in `kernel_cases` (a reading of what each kernel must
compute, not a count of the instructions it runs). Bytes: from shapes and dtype sizes, every input
read once and every output written once: the least traffic the kernel can do, so an achieved
bandwidth is a lower bound of the real one.

Writes `roofline_{dtype}_t{tokens}_d{dim}_h{hidden}.json` (open it in Perfetto) and `.txt` (the
key_averages table grouped by input shape, then the roofs and each kernel's place under them,
ending with `roofline_json: {...}`) into --trace_dir.
"""

import argparse
import json
import statistics
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import torch
import torch.nn.functional as F
from torch.autograd import DeviceType
from torch.profiler import ProfilerActivity, profile, record_function

DTYPES = {"bf16": torch.bfloat16, "fp32": torch.float32}
MIB = 1 << 20


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=8192, help="rows of the MLP GEMM, the add and the softmax")
    parser.add_argument("--dim", type=int, default=4096, help="model width (Llama 3 8B's, as Part 4's model)")
    parser.add_argument("--hidden", type=int, default=14336, help="MLP width (Llama 3 8B's, as Part 4's model)")
    parser.add_argument("--batch", type=int, default=8, help="SDPA: sequences")
    parser.add_argument("--heads", type=int, default=16, help="SDPA: heads")
    parser.add_argument("--seq", type=int, default=1024, help="SDPA: tokens per sequence")
    parser.add_argument("--head_dim", type=int, default=64, help="SDPA: width of a head")
    parser.add_argument("--steps", type=int, default=10, help="profiled calls of each kernel")
    parser.add_argument("--peak_size", type=int, default=None,
                        help="side of the peak's matrices (default: 8192 on a GPU, 256 on the CPU)")
    parser.add_argument("--peak_steps", type=int, default=20, help="calls of each roof's kernel")
    parser.add_argument("--copy_mib", type=int, default=None,
                        help="MiB copied and summed for the bandwidth (default: 2048 on a GPU, 16 on the CPU)")
    parser.add_argument("--dtype", choices=sorted(DTYPES), default="bf16")
    parser.add_argument("--trace_dir", type=Path, default=Path("traces/08_roofline"))
    parser.add_argument("--device", default="cuda", help="cuda, or cpu for a smoke test")
    args = parser.parse_args(argv)
    on_gpu = torch.device(args.device).type == "cuda"
    args.peak_size = args.peak_size or (8192 if on_gpu else 256)
    args.copy_mib = args.copy_mib or (2048 if on_gpu else 16)
    if min(args.tokens, args.dim, args.hidden, args.batch, args.heads, args.seq, args.head_dim, args.steps,
           args.peak_size, args.peak_steps, args.copy_mib) < 1:
        parser.error("sizes and counts must be positive")
    return args


def output_stem(args):
    return f"roofline_{args.dtype}_t{args.tokens}_d{args.dim}_h{args.hidden}"


@dataclass(frozen=True)
class Case:
    """One kernel (or roof) to time: a call, and the work it must do by its shapes."""

    role: str  # "peak compute", "peak memory" or "kernel"
    name: str  # no spaces: it sits in the annotation
    call: Callable[[], object]
    flops: int
    bytes: int
    flops_from: str  # "with_flops" where PyTorch counts this op, else "shapes"

    @property
    def label(self) -> str:
        return f"{self.role}: {self.name} flops={self.flops} bytes={self.bytes}"


def is_read_only(name):
    """The sum reads and writes (almost) nothing: its rate is no roof for kernels that write."""
    return name.startswith("sum_")


def element_size(dtype):
    return torch.empty((), dtype=dtype).element_size()


def roof_cases(args, device, dtype):
    size = element_size(dtype)
    n = args.peak_size
    a, b = (torch.randn(n, n, device=device, dtype=dtype) for _ in range(2))
    numel = args.copy_mib * MIB // size
    src, dst = torch.randn(numel, device=device, dtype=dtype), torch.empty(numel, device=device, dtype=dtype)
    other = torch.randn(numel, device=device, dtype=dtype)
    mib = args.copy_mib
    # --8<-- [start:roofs]
    return [
        Case("peak compute", f"matmul_{n}", lambda: torch.mm(a, b), 2 * n**3, 3 * n * n * size, "with_flops"),
        # Bytes are reads plus writes. A copy reads every byte and writes it again; a triad reads
        # two tensors and writes a third; a sum reads every byte once (read-only: no roof).
        Case("peak memory", f"copy_{mib}MiB", lambda: dst.copy_(src), 0, 2 * numel * size, "shapes"),
        Case("peak memory", f"triad_{mib}MiB", lambda: torch.add(src, other, out=dst),
             numel, 3 * numel * size, "shapes"),
        Case("peak memory", f"sum_{mib}MiB", lambda: src.sum(), numel, numel * size, "shapes"),
    ]
    # --8<-- [end:roofs]


def kernel_cases(args, device, dtype):
    size = element_size(dtype)
    t, d, hidden = args.tokens, args.dim, args.hidden

    def randn(*shape):
        return torch.randn(*shape, device=device, dtype=dtype)

    x, up, square = randn(t, d), randn(d, hidden), randn(d, d)
    weight = randn(hidden, d)  # as nn.Linear stores it: decode reads all of it for a few rows
    rows16, row = randn(16, d), randn(1, d)
    wide_a, wide_b = randn(t, hidden), randn(t, hidden)
    norm_w, norm_b = randn(d), randn(d)
    b, h, s, hd = args.batch, args.heads, args.seq, args.head_dim
    q, k, v = (randn(b, h, s, hd) for _ in range(3))
    # --8<-- [start:cases]
    return [
        Case("kernel", f"gemm_{d}x{d}x{d}", lambda: square @ square,
             2 * d**3, 3 * d * d * size, "with_flops"),
        Case("kernel", f"gemm_{t}x{d}x{hidden}", lambda: x @ up,
             2 * t * d * hidden, (t * d + d * hidden + t * hidden) * size, "with_flops"),
        # Decode-like: a few rows against a whole weight matrix; the weight's bytes dominate.
        Case("kernel", f"gemm_16x{d}x{hidden}", lambda: F.linear(rows16, weight),
             2 * 16 * d * hidden, (16 * d + hidden * d + 16 * hidden) * size, "with_flops"),
        Case("kernel", f"gemv_1x{d}x{hidden}", lambda: F.linear(row, weight),
             2 * d * hidden, (d + hidden * d + hidden) * size, "with_flops"),
        Case("kernel", f"add_{t}x{hidden}", lambda: wide_a + wide_b,
             t * hidden, 3 * t * hidden * size, "with_flops"),
        # From shapes: max, subtract, exp, sum and divide, 5 FLOPs per element (exp counted as one).
        Case("kernel", f"softmax_{t}x{hidden}", lambda: torch.softmax(wide_a, dim=-1),
             5 * t * hidden, 2 * t * hidden * size, "shapes"),
        # From shapes: mean (1), variance (3: subtract, square, add), normalize (2), scale and
        # shift (2): 8 FLOPs per element; bytes: input, output, weight and bias.
        Case("kernel", f"layer_norm_{t}x{d}", lambda: F.layer_norm(x, (d,), norm_w, norm_b),
             8 * t * d, (2 * t * d + 2 * d) * size, "shapes"),
        # From shapes: q @ k^T and p @ v, 2 * s * s * hd FLOPs each per head, halved by causality
        # (the softmax's FLOPs left out, as is usual); bytes: q, k, v read and the output written
        # once, what a fused kernel moves at least (the math backend moves the scores too).
        Case("kernel", f"sdpa_causal_b{b}_h{h}_s{s}_d{hd}",
             lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True),
             2 * b * h * s * s * hd, 4 * b * h * s * hd * size, "shapes"),
    ]
    # --8<-- [end:cases]


def event_timed_us(call, calls, on_gpu):
    """The median of `calls` calls' times in us, each timed alone: by CUDA events on the GPU (the
    GPU's clock, outside the profiler), by the host clock on the CPU."""
    times = []
    for _ in range(calls):
        if on_gpu:
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            call()
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end) * 1e3)
        else:
            started = time.perf_counter()
            call()
            times.append((time.perf_counter() - started) * 1e6)
    return statistics.median(times)


def descendants(event):
    for child in event.cpu_children:
        yield child
        yield from descendants(child)


def main(argv=None):
    args = parse_args(argv)
    device = torch.device(args.device)
    dtype = DTYPES[args.dtype]
    on_gpu = device.type == "cuda"
    sync = torch.cuda.synchronize if on_gpu else (lambda: None)
    torch.manual_seed(0)
    roofs = roof_cases(args, device, dtype)
    kernels = kernel_cases(args, device, dtype)
    runs = [(case, args.peak_steps) for case in roofs] + [(case, args.steps) for case in kernels]
    by_label = {case.label: case for case, _ in runs}
    for case, _ in runs:  # cuBLAS handles, kernel selection, the allocator: before any timing
        case.call()
    sync()

    def rate(case, us):
        return (case.flops if case.role == "peak compute" else case.bytes) / us / 1e6  # TFLOP/s or TB/s

    # The roofs by CUDA events, before the profiler starts: a second measure of the same ceilings.
    before = {case.name: rate(case, event_timed_us(case.call, args.peak_steps, on_gpu)) for case in roofs}

    # --8<-- [start:profile]
    with profile(
        activities=[ProfilerActivity.CPU] + [ProfilerActivity.CUDA] * on_gpu,
        record_shapes=True,
        with_flops=True,
    ) as prof:
        prof.add_metadata_json("roofline", json.dumps({
            "timed_by": "CUDA events, median of each kernel's calls, before profiling" if on_gpu
                        else "host clock, median of each kernel's calls, before profiling (CPU smoke test)",
            "tflops": {name: value for name, value in before.items() if name.startswith("matmul")},
            "tbytes_per_s": {name: value for name, value in before.items() if not name.startswith("matmul")},
        }))
        for case, calls in runs:
            for _ in range(calls):
                with record_function(case.label):
                    case.call()
        sync()
    # --8<-- [end:profile]

    # Each call's time: on the GPU the kernels under its annotation, on the CPU the host's.
    calls_us, counted = {}, {}
    for event in prof.events():
        case = by_label.get(event.name)
        if case is None or event.device_type != DeviceType.CPU:
            continue
        calls_us.setdefault(case.name, []).append(event.device_time_total if on_gpu else event.cpu_time_total)
        counted[case.name] = sum(child.flops or 0 for child in descendants(event))
    median_us = {name: statistics.median(times) for name, times in calls_us.items()}

    peak_tflops = rate(roofs[0], median_us[roofs[0].name])
    bandwidths = {case.name: rate(case, median_us[case.name]) for case in roofs[1:]}
    # The roof: the faster kernel that reads and writes; a read-only sum can outrun both.
    bandwidth_name = max((name for name in bandwidths if not is_read_only(name)), key=bandwidths.get)
    peak_tbs = bandwidths[bandwidth_name]
    ridge = peak_tflops / peak_tbs  # FLOP per byte
    lines = [
        f"roofs, from the {'GPU' if on_gpu else 'CPU'} time the profiler recorded (median of {args.peak_steps} "
        f"calls each; {'CUDA events' if on_gpu else 'the host clock'} before profiling in brackets):",
        f"  compute: {peak_tflops:.4g} TFLOP/s ({roofs[0].name}) [{before[roofs[0].name]:.4g}]",
        *(f"  memory:  {value:.4g} TB/s ({name}{', read only: no roof' if is_read_only(name) else ''}) "
          f"[{before[name]:.4g}]" for name, value in bandwidths.items()),
        f"  roofline: {peak_tbs:.4g} TB/s ({bandwidth_name}) and {peak_tflops:.4g} TFLOP/s; "
        f"ridge at {ridge:.4g} FLOP/byte",
        "",
        f"{'kernel':>32} {'GFLOP':>10} {'profiler':>10} {'MB':>9} {'FLOP/B':>8} {'us/call':>9} "
        f"{'TFLOP/s':>8} {'TB/s':>7} {'bound':>8} {'of roof':>8}",
    ]
    placed = []
    for case in kernels:
        us = median_us[case.name]
        intensity = case.flops / case.bytes
        roof_tflops = min(peak_tflops, intensity * peak_tbs)
        tflops, tbs = case.flops / us / 1e6, case.bytes / us / 1e6
        bound = "memory" if intensity < ridge else "compute"
        profiler_gflop = f"{counted[case.name] / 1e9:.4g}" if counted[case.name] else "--"
        lines.append(f"{case.name:>32} {case.flops / 1e9:>10.4g} {profiler_gflop:>10} {case.bytes / 1e6:>9.4g} "
                     f"{intensity:>8.3g} {us:>9.1f} {tflops:>8.3g} {tbs:>7.3g} {bound:>8} "
                     f"{tflops / roof_tflops:>8.1%}")
        placed.append({"name": case.name, "label": case.label, "flops": case.flops, "bytes": case.bytes,
                       "flops_from": case.flops_from, "profiler_flops": counted[case.name],
                       "call_us": [round(t, 2) for t in calls_us[case.name]], "bound": bound})
    summary = {
        "time_source": "profiler device time" if on_gpu else "profiler CPU time (no GPU)",
        "peak_tflops": peak_tflops, "peak_tbytes_per_s": peak_tbs, "bandwidth_from": bandwidth_name,
        "ridge_flop_per_byte": ridge,
        "roofs": [{"name": case.name, "label": case.label, "flops": case.flops, "bytes": case.bytes,
                   "call_us": [round(t, 2) for t in calls_us[case.name]], "events_rate": before[case.name]}
                  for case in roofs],
        "kernels": placed,
    }
    lines.append("roofline_json: " + json.dumps(summary))

    sort_by = "cuda_time_total" if on_gpu else "cpu_time_total"
    table = prof.key_averages(group_by_input_shape=True).table(sort_by=sort_by, row_limit=25)
    report = table + "\n" + "\n".join(lines) + "\n"
    args.trace_dir.mkdir(parents=True, exist_ok=True)
    stem = output_stem(args)
    (args.trace_dir / f"{stem}.txt").write_text(report)
    prof.export_chrome_trace(str(args.trace_dir / f"{stem}.json"))
    print(report, end="")
    print(f"wrote {args.trace_dir / stem}.json and .txt")


if __name__ == "__main__":
    main()
