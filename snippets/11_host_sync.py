# /// script
# requires-python = ">=3.10"
# dependencies = ["torch>=2.4"]
# ///
"""Profile a training loop that makes the host wait for the GPU every step, against the same loop without.

    uv run snippets/11_host_sync.py --sync none    # nothing read back while the loop runs
    uv run snippets/11_host_sync.py --sync item    # running_loss += loss.item() every step
    uv run snippets/11_host_sync.py --sync print   # print(loss) every step
    uv run snippets/11_host_sync.py --sync cpu     # an accuracy metric moved with .cpu() every step
    uv run snippets/11_host_sync.py --device cpu --batch 8 --features 16 --hidden 32 --layers 2

Each step makes its batch on the host (random features and labels, copied into pinned memory, then
to the GPU without blocking), runs an MLP forward and backward under bf16 autocast on cuda, and
a fused AdamW update. Reading a value of the GPU back (`.item()`, `print`, `.cpu()`) makes the
host wait for every kernel queued before it; without that, the host prepares the next batch
while the GPU still runs the last step. The profiler schedule is wait=1, warmup=1, active=--steps.

Writes `sync_{sync}_b{batch}_h{hidden}_l{layers}.json` (open it in Perfetto) and `.txt` (the
key_averages table) into --trace_dir.
"""

import argparse
import contextlib
from pathlib import Path

import torch
from torch import nn
from torch.profiler import ProfilerActivity, profile, record_function, schedule

SYNCS = ("none", "item", "print", "cpu")
CLASSES = 10


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sync", choices=SYNCS, default="none", help="what the loop reads back each step")
    parser.add_argument("--steps", type=int, default=5, help="profiled (active) steps")
    parser.add_argument("--batch", type=int, default=1024)
    parser.add_argument("--features", type=int, default=512, help="input features the host makes per row")
    parser.add_argument("--hidden", type=int, default=4096)
    parser.add_argument("--layers", type=int, default=6)
    parser.add_argument("--trace_dir", type=Path, default=Path("traces/11_host_sync"))
    parser.add_argument("--device", default="cuda", help="cuda, or cpu for a smoke test")
    return parser.parse_args(argv)


def output_stem(args):
    return f"sync_{args.sync}_b{args.batch}_h{args.hidden}_l{args.layers}"


def mlp(features, hidden, layers):
    widths = [features] + [hidden] * layers
    blocks = [nn.Sequential(nn.Linear(a, b), nn.GELU()) for a, b in zip(widths, widths[1:])]
    return nn.Sequential(*blocks, nn.Linear(hidden, CLASSES))


def main(argv=None):
    args = parse_args(argv)
    device = torch.device(args.device)
    on_gpu = device.type == "cuda"
    torch.manual_seed(0)
    model = mlp(args.features, args.hidden, args.layers).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=on_gpu)
    autocast = torch.autocast("cuda", dtype=torch.bfloat16) if on_gpu else contextlib.nullcontext()
    generator = torch.Generator().manual_seed(0)
    running = torch.zeros((), device=device)  # the loss summed on the GPU, read once at the end
    history = []

    # --8<-- [start:step]
    def train_step(step):
        nonlocal running
        with record_function("make batch"):  # host work: the next batch, in pinned memory
            x = torch.randn(args.batch, args.features, generator=generator)
            y = torch.randint(0, CLASSES, (args.batch,), generator=generator)
            if on_gpu:
                x, y = x.pin_memory(), y.pin_memory()
        x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
        with autocast:
            logits = model(x)
            loss = nn.functional.cross_entropy(logits.float(), y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        accuracy = (logits.argmax(-1) == y).float().mean()
        with record_function(f"log ({args.sync})"):
            if args.sync == "item":
                history.append(loss.item())  # a Python float: the host waits for the GPU
            elif args.sync == "print":
                print(f"step {step}: loss", loss)  # formatting a CUDA tensor reads it back
            elif args.sync == "cpu":
                history.append(accuracy.cpu())  # a CPU tensor: the host waits for the GPU
            else:
                running = running + loss.detach()  # stays on the GPU: nothing to wait for
    # --8<-- [end:step]

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if on_gpu else [])
    wait, warmup = 1, 1
    with profile(
        activities=activities,
        schedule=schedule(wait=wait, warmup=warmup, active=args.steps, repeat=1),
    ) as prof:
        for step in range(wait + warmup + args.steps):
            train_step(step)
            prof.step()
    if args.sync == "none":
        print(f"loss summed on the GPU, read once after the loop: {running.item():.3f}")

    # By CPU time: a wait for the GPU is host time (in cudaMemcpyAsync, cudaStreamSynchronize),
    # and the ops that read a value back (aten::item, aten::_local_scalar_dense) hold it. Every
    # row: the synchronization after the wait, and the copy on the GPU, have little time of their own.
    report = prof.key_averages().table(sort_by="cpu_time_total", row_limit=-1) + "\n"
    args.trace_dir.mkdir(parents=True, exist_ok=True)
    stem = output_stem(args)
    (args.trace_dir / f"{stem}.txt").write_text(report)
    prof.export_chrome_trace(str(args.trace_dir / f"{stem}.json"))
    print(report, end="")
    print(f"wrote {args.trace_dir / stem}.json and .txt")


if __name__ == "__main__":
    main()
