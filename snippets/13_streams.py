# /// script
# requires-python = ">=3.10"
# dependencies = ["torch>=2.4"]
# ///
"""Profile the next batch's copy to the GPU on a side stream, overlapping compute, against the same copy on the compute stream.

    uv run snippets/13_streams.py --copy same   # copy, then compute, on the default stream
    uv run snippets/13_streams.py --copy side   # copy on a stream of its own, while the compute runs
    uv run snippets/13_streams.py --device cpu --rows 64 --dim 32

Each step copies the next batch (--rows x --dim, bf16, from pinned host memory, non_blocking) to
the GPU and computes on the current one (--matmuls products with a --dim x --dim weight). On one
stream the GPU runs the two one after the other; with the copy on a side stream, the copy engine
moves the next batch while the SMs compute, and the compute stream waits for the copy only where
it needs the batch (`wait_stream`). The profiler schedule is wait=1, warmup=1, active=--steps.

Writes `streams_{copy}_r{rows}_d{dim}_m{matmuls}.json` (open it in Perfetto) and `.txt` (the
key_averages table) into --trace_dir.
"""

import argparse
import contextlib
from pathlib import Path

import torch
from torch.profiler import ProfilerActivity, profile, record_function, schedule


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--copy", choices=("same", "side"), default="same", help="the stream the copy runs on")
    parser.add_argument("--steps", type=int, default=5, help="profiled (active) steps")
    parser.add_argument("--rows", type=int, default=8192)
    parser.add_argument("--dim", type=int, default=4096)
    parser.add_argument("--matmuls", type=int, default=4, help="products per step")
    parser.add_argument("--trace_dir", type=Path, default=Path("traces/13_streams"))
    parser.add_argument("--device", default="cuda", help="cuda, or cpu for a smoke test")
    return parser.parse_args(argv)


def output_stem(args):
    return f"streams_{args.copy}_r{args.rows}_d{args.dim}_m{args.matmuls}"


def main(argv=None):
    args = parse_args(argv)
    device = torch.device(args.device)
    on_gpu = device.type == "cuda"
    dtype = torch.bfloat16
    torch.manual_seed(0)
    weight = torch.randn(args.dim, args.dim, device=device, dtype=dtype) / args.dim ** 0.5
    # Two batches in host memory, pinned so that the copies can run while the host goes on.
    host = [torch.randn(args.rows, args.dim, dtype=dtype) for _ in range(2)]
    host = [h.pin_memory() for h in host] if on_gpu else host
    current = host[0].to(device)
    side = torch.cuda.Stream() if on_gpu and args.copy == "side" else None

    # --8<-- [start:step]
    def step(number):
        nonlocal current
        with record_function("copy next batch"):
            with torch.cuda.stream(side) if side is not None else contextlib.nullcontext():
                following = host[(number + 1) % 2].to(device, non_blocking=True)
        with record_function("compute"):
            y = current
            for _ in range(args.matmuls):
                y = torch.tanh(y @ weight)
        if side is not None:
            torch.cuda.current_stream().wait_stream(side)  # the next step computes on it
            following.record_stream(torch.cuda.current_stream())
        current = following
        return y
    # --8<-- [end:step]

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if on_gpu else [])
    wait, warmup = 1, 1
    with profile(
        activities=activities,
        schedule=schedule(wait=wait, warmup=warmup, active=args.steps, repeat=1),
    ) as prof:
        for number in range(wait + warmup + args.steps):
            step(number)
            prof.step()

    sort_by = "cuda_time_total" if on_gpu else "cpu_time_total"
    report = prof.key_averages().table(sort_by=sort_by, row_limit=15) + "\n"
    args.trace_dir.mkdir(parents=True, exist_ok=True)
    stem = output_stem(args)
    (args.trace_dir / f"{stem}.txt").write_text(report)
    prof.export_chrome_trace(str(args.trace_dir / f"{stem}.json"))
    print(report, end="")
    print(f"wrote {args.trace_dir / stem}.json and .txt")


if __name__ == "__main__":
    main()
