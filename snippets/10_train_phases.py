# /// script
# requires-python = ">=3.10"
# dependencies = ["torch>=2.4"]
# ///
"""Profile a training step read in order: forward, backward on autograd's thread, AdamW's update.

    uv run snippets/10_train_phases.py --optimizer foreach_false
    uv run snippets/10_train_phases.py --optimizer foreach
    uv run snippets/10_train_phases.py --optimizer fused
    uv run snippets/10_train_phases.py --device cpu --layers 1 --d_model 32 --seq 8 --batch 2

A small transformer (token embedding, pre-norm encoder layers, vocabulary head) trained with
AdamW, bf16 autocast on cuda. No record_function of ours: the trace says by itself where the
forward ends (the backward's ops start on autograd's own thread) and where the optimizer runs
(torch.optim labels it `Optimizer.step#AdamW.step`). --optimizer picks AdamW's implementation:
one small kernel per parameter and operation (foreach=False), one per group of parameters and
operation (foreach=True), or a few fused kernels (fused=True). The profiler schedule is wait=1,
warmup=1, active=--steps.

Writes `train_b{batch}_s{seq}_l{layers}_d{d_model}_{optimizer}.json` (open it in Perfetto) and
`.txt` (the key_averages table) into --trace_dir.
"""

import argparse
import contextlib
from pathlib import Path

import torch
from torch import nn
from torch.profiler import ProfilerActivity, profile, schedule

VOCAB = 1024
OPTIMIZERS = {"foreach_false": {"foreach": False}, "foreach": {"foreach": True}, "fused": {"fused": True}}


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--optimizer", choices=sorted(OPTIMIZERS), default="foreach_false",
                        help="AdamW per parameter, per group (foreach) or fused")
    parser.add_argument("--steps", type=int, default=3, help="profiled (active) steps")
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--seq", type=int, default=256, help="tokens per sequence")
    parser.add_argument("--layers", type=int, default=6)
    parser.add_argument("--d_model", type=int, default=512)
    parser.add_argument("--trace_dir", type=Path, default=Path("traces/10_train_phases"))
    parser.add_argument("--device", default="cuda", help="cuda, or cpu for a smoke test")
    return parser.parse_args(argv)


def output_stem(args):
    return f"train_b{args.batch}_s{args.seq}_l{args.layers}_d{args.d_model}_{args.optimizer}"


# --8<-- [start:model]
class TinyLM(nn.Module):
    """Token embedding, a stack of pre-norm encoder layers, a vocabulary head."""

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
# --8<-- [end:model]


def main(argv=None):
    args = parse_args(argv)
    device = torch.device(args.device)
    on_gpu = device.type == "cuda"
    torch.manual_seed(0)
    model = TinyLM(args.layers, args.d_model).to(device)
    # --8<-- [start:optimizer]
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, **OPTIMIZERS[args.optimizer])
    # --8<-- [end:optimizer]
    tokens = torch.randint(0, VOCAB, (args.batch, args.seq + 1), device=device)
    inputs, targets = tokens[:, :-1], tokens[:, 1:]
    autocast = torch.autocast("cuda", dtype=torch.bfloat16) if on_gpu else contextlib.nullcontext()

    # --8<-- [start:step]
    def train_step():
        with autocast:
            logits = model(inputs)
            loss = nn.functional.cross_entropy(logits.reshape(-1, VOCAB), targets.reshape(-1))
        loss.backward()  # on cuda, autograd runs this on its own thread
        optimizer.step()  # labelled Optimizer.step#AdamW.step by torch.optim
        optimizer.zero_grad(set_to_none=True)
    # --8<-- [end:step]

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if on_gpu else [])
    wait, warmup = 1, 1
    # --8<-- [start:profile]
    with profile(
        activities=activities,
        schedule=schedule(wait=wait, warmup=warmup, active=args.steps, repeat=1),
    ) as prof:
        for _ in range(wait + warmup + args.steps):
            train_step()
            prof.step()
    # --8<-- [end:profile]

    sort_by = "cuda_time_total" if on_gpu else "cpu_time_total"
    table = prof.key_averages().table(sort_by=sort_by, row_limit=15)
    # What AdamW updates: one small kernel per tensor and operation with foreach=False.
    report = table + f"\nparameter tensors: {sum(1 for _ in model.parameters())}\n"
    args.trace_dir.mkdir(parents=True, exist_ok=True)
    stem = output_stem(args)
    (args.trace_dir / f"{stem}.txt").write_text(report)
    prof.export_chrome_trace(str(args.trace_dir / f"{stem}.json"))
    print(report, end="")
    print(f"wrote {args.trace_dir / stem}.json and .txt")


if __name__ == "__main__":
    main()
