# /// script
# requires-python = ">=3.10"
# dependencies = ["torch>=2.4"]
# ///
"""Profile a few training steps of a small transformer with torch.profiler.

    uv run snippets/train_step.py                        # 3 profiled steps on cuda
    uv run snippets/train_step.py --with_stack --steps 10
    uv run snippets/train_step.py --device cpu --layers 2 --d_model 64 --seq 32

Each step is forward, backward and an AdamW update (foreach=False, so one small kernel per
parameter and operation: many launches, as in real training loops). On cuda the step runs under
bf16 autocast. The profiler schedule is wait=1, warmup=1, active=--steps.

Writes `train_b{batch}_s{steps}[_stack].json` (the chrome trace, open it in Perfetto) and `.txt`
(the key_averages table) into --trace_dir.
"""

import argparse
import contextlib
from pathlib import Path

import torch
from torch import nn
from torch.profiler import ProfilerActivity, profile, record_function, schedule

VOCAB = 1024


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=3, help="profiled (active) steps")
    parser.add_argument("--with_stack", action="store_true", help="record Python stacks")
    parser.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--seq", type=int, default=256, help="tokens per sequence")
    parser.add_argument("--layers", type=int, default=12)
    parser.add_argument("--d_model", type=int, default=512)
    parser.add_argument("--trace_dir", type=Path, default=Path("traces/train_step"))
    return parser.parse_args(argv)


def output_stem(args):
    return f"train_b{args.batch}_s{args.steps}{'_stack' if args.with_stack else ''}"


class TinyLM(nn.Module):
    """Token embedding, a stack of encoder layers, a vocabulary head."""

    def __init__(self, layers, d_model):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, d_model)
        block = nn.TransformerEncoderLayer(
            d_model, nhead=8, dim_feedforward=4 * d_model, batch_first=True, norm_first=True
        )
        self.blocks = nn.TransformerEncoder(block, layers, enable_nested_tensor=False)
        self.head = nn.Linear(d_model, VOCAB)

    def forward(self, tokens):
        return self.head(self.blocks(self.embed(tokens)))


def main(argv=None):
    args = parse_args(argv)
    device = torch.device(args.device)
    on_gpu = device.type == "cuda"
    torch.manual_seed(0)
    model = TinyLM(args.layers, args.d_model).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, foreach=False)
    tokens = torch.randint(0, VOCAB, (args.batch, args.seq + 1), device=device)
    inputs, targets = tokens[:, :-1], tokens[:, 1:]
    autocast = (
        torch.autocast("cuda", dtype=torch.bfloat16) if on_gpu else contextlib.nullcontext()
    )

    # --8<-- [start:step]
    def train_step():
        with record_function("forward"), autocast:
            logits = model(inputs)
            loss = nn.functional.cross_entropy(logits.reshape(-1, VOCAB), targets.reshape(-1))
        with record_function("backward"):
            loss.backward()
        with record_function("optimizer"):
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
        return loss
    # --8<-- [end:step]

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if on_gpu else [])
    wait, warmup = 1, 1
    # --8<-- [start:profile]
    with profile(
        activities=activities,
        schedule=schedule(wait=wait, warmup=warmup, active=args.steps, repeat=1),
        with_stack=args.with_stack,
    ) as prof:
        for _ in range(wait + warmup + args.steps):
            train_step()
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
