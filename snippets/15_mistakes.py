# /// script
# requires-python = ">=3.10"
# dependencies = ["torch>=2.4"]
# ///
"""Two common profiling mistakes, recorded: no prof.step(), and timing GPU work without torch.cuda.synchronize().

    uv run snippets/15_mistakes.py --mistake no_step   # profile(...) with no schedule and no prof.step()
    uv run snippets/15_mistakes.py --mistake no_sync   # the same steps timed without, then with, a sync
    uv run snippets/15_mistakes.py --device cpu --size 64

The work is --steps steps of a chain of --matmuls bf16 products of --size x --size matrices.

no_step: the profiler runs without a schedule and the loop never calls prof.step(), so the
trace has no ProfilerStep and every step, the first (cold) one included, lands in one block.

no_sync: after a warm-up, the profiler records the steps twice, each pass inside a label:
`timed without synchronize` measures time.perf_counter() around the loop alone, which is the time
the host takes to queue the work; `timed with synchronize` calls torch.cuda.synchronize() before
reading the clock, which is the time the GPU takes to run it. Both times end the table.

Writes `mistake_{mistake}_n{size}.json` (open it in Perfetto) and `.txt` (the key_averages table)
into --trace_dir.
"""

import argparse
import json
import time
from pathlib import Path

import torch
from torch.profiler import ProfilerActivity, profile, record_function


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mistake", choices=("no_step", "no_sync"), default="no_step")
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--size", type=int, default=8192, help="matrix size")
    parser.add_argument("--matmuls", type=int, default=4, help="products per step")
    parser.add_argument("--trace_dir", type=Path, default=Path("traces/15_mistakes"))
    parser.add_argument("--device", default="cuda", help="cuda, or cpu for a smoke test")
    return parser.parse_args(argv)


def output_stem(args):
    return f"mistake_{args.mistake}_n{args.size}"


def main(argv=None):
    args = parse_args(argv)
    device = torch.device(args.device)
    on_gpu = device.type == "cuda"
    torch.manual_seed(0)
    x = torch.randn(args.size, args.size, device=device, dtype=torch.bfloat16)
    w = torch.randn(args.size, args.size, device=device, dtype=torch.bfloat16) / args.size ** 0.5

    def step():
        y = x
        for _ in range(args.matmuls):
            y = y @ w
        return y

    def synchronize():
        if on_gpu:
            torch.cuda.synchronize()

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if on_gpu else [])
    lines = []
    if args.mistake == "no_step":
        # --8<-- [start:no_step]
        with profile(activities=activities) as prof:  # no schedule, and no prof.step() below
            for _ in range(args.steps):
                step()
        # --8<-- [end:no_step]
    else:
        for _ in range(3):  # warm-up, outside the recording
            step()
        synchronize()
        # --8<-- [start:no_sync]
        with profile(activities=activities) as prof:
            with record_function("timed without synchronize"):
                start = time.perf_counter()
                for _ in range(args.steps):
                    step()
                unsynced = time.perf_counter() - start  # the host has queued the work, no more
            synchronize()
            with record_function("timed with synchronize"):
                start = time.perf_counter()
                for _ in range(args.steps):
                    step()
                synchronize()  # wait for the GPU before reading the clock
                synced = time.perf_counter() - start
        # --8<-- [end:no_sync]
        lines = [f"timed without synchronize: {unsynced * 1e3:.3f} ms for {args.steps} steps",
                 f"timed with synchronize: {synced * 1e3:.3f} ms for {args.steps} steps",
                 "timing_json: " + json.dumps({"unsynced_s": unsynced, "synced_s": synced, "steps": args.steps})]

    sort_by = "cuda_time_total" if on_gpu else "cpu_time_total"
    report = prof.key_averages().table(sort_by=sort_by, row_limit=15) + "\n" + "".join(l + "\n" for l in lines)
    args.trace_dir.mkdir(parents=True, exist_ok=True)
    stem = output_stem(args)
    (args.trace_dir / f"{stem}.txt").write_text(report)
    prof.export_chrome_trace(str(args.trace_dir / f"{stem}.json"))
    print(report, end="")
    print(f"wrote {args.trace_dir / stem}.json and .txt")


if __name__ == "__main__":
    main()
