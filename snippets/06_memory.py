# /// script
# requires-python = ">=3.10"
# dependencies = ["torch>=2.4"]
# ///
"""Where a training step's memory goes: torch.profiler's memory timeline and the allocator's record.

    uv run snippets/06_memory.py                          # the baseline step, on cuda
    uv run snippets/06_memory.py --variant checkpoint     # the same step with activation checkpointing
    uv run snippets/06_memory.py --device cpu --layers 1 --d_model 32 --seq 16 --batch 2 --steps 1

The model is a small GPT-style stack (embedding, pre-norm blocks of causal self-attention and a
GELU MLP, a vocabulary head) trained with AdamW, in fp32 throughout so that every tensor of a
category has the size its shape says (no bf16 copies of the weights as under autocast).

  --variant baseline    forward, backward, optimizer step, zero_grad(set_to_none=True)
  --variant checkpoint  each block runs under torch.utils.checkpoint: its forward keeps only the
                        block's input, and backward runs the block's forward again to rebuild the
                        rest. At these sizes the activations saved for backward are most of the peak
                        (they grow with batch x seq x layers, the weights do not), so the peak falls
                        by most of them, for one more forward of every block per step.

The run, in order:
1. On cuda, the caching allocator records every allocation and free with its Python stack
   (`torch.cuda.memory._record_memory_history`) while the model and optimizer are made and two
   untimed steps run: the first creates AdamW's state (lazily, at its first step()), the second is a
   steady step. Then `{stem}.snapshot.pickle` is written (`torch.cuda.memory._dump_snapshot`): drop
   it on https://pytorch.org/memory_viz. Recording stops before the profiled steps, whose timings
   it would slow. The allocator's history is CUDA-only: on the CPU this part is skipped.
2. torch.profiler with profile_memory=True, record_shapes=True and with_stack=True (the memory
   timeline needs all three) over wait=1, warmup=1, active=--steps steps.

Writes into --trace_dir, with stem `train_b{batch}_s{seq}_l{layers}_d{d_model}_fp32_{variant}`:
  {stem}.json             the chrome trace, with the profiler's [memory] events
  {stem}.txt              the key_averages table, by self memory
  {stem}.memory.json      the memory timeline (export_memory_timeline's [times, sizes] form, one
                          series per category) and a summary: the bytes of parameters, gradients and
                          optimizer state counted from the tensors, and per step the allocator's
                          peak allocated and reserved bytes (cuda only)
  {stem}.snapshot.pickle  the allocator's record (cuda only)
"""

import argparse
import json
import tempfile
import warnings
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn
from torch.profiler import ProfilerActivity, profile, record_function, schedule
from torch.utils.checkpoint import checkpoint

VOCAB = 1024
WAIT, WARMUP = 1, 1
HISTORY_STEPS = 2  # untimed: the first creates AdamW's state, the second is a steady step
MEMORY_FORMAT = 1
# export_memory_timeline's sizes, column by column (torch.profiler._memory_profiler: column 0 is
# unused, then its categories in this order, then tensors it could not categorize).
CATEGORIES = ("parameter", "optimizer_state", "input", "temporary", "activation", "gradient",
              "autograd_detail", "unknown")


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variant", choices=["baseline", "checkpoint"], default="baseline")
    parser.add_argument("--steps", type=int, default=2, help="profiled (active) steps")
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--seq", type=int, default=512, help="tokens per sequence")
    parser.add_argument("--layers", type=int, default=8)
    parser.add_argument("--d_model", type=int, default=512)
    parser.add_argument("--heads", type=int, default=8)
    parser.add_argument("--max_entries", type=int, default=100_000,
                        help="allocations and frees the allocator's record keeps (the latest ones)")
    parser.add_argument("--trace_dir", type=Path, default=Path("traces/06_memory"))
    parser.add_argument("--device", default="cuda", help="cuda, or cpu for a smoke test")
    return parser.parse_args(argv)


def output_stem(args):
    return f"train_b{args.batch}_s{args.seq}_l{args.layers}_d{args.d_model}_fp32_{args.variant}"


# --8<-- [start:model]
class Block(nn.Module):
    """Pre-norm causal self-attention, then a 4x GELU MLP, each around a residual."""

    def __init__(self, d_model, heads):
        super().__init__()
        self.heads = heads
        self.norm1, self.norm2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
        self.qkv, self.proj = nn.Linear(d_model, 3 * d_model), nn.Linear(d_model, d_model)
        self.up, self.down = nn.Linear(d_model, 4 * d_model), nn.Linear(4 * d_model, d_model)

    def forward(self, x):
        batch, seq, width = x.shape
        q, k, v = self.qkv(self.norm1(x)).view(batch, seq, 3, self.heads, -1).transpose(1, 3).unbind(2)
        attended = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(attended.transpose(1, 2).reshape(batch, seq, width))
        return x + self.down(F.gelu(self.up(self.norm2(x))))


class TinyGPT(nn.Module):
    def __init__(self, layers, d_model, heads, checkpointed):
        super().__init__()
        self.checkpointed = checkpointed
        self.embed = nn.Embedding(VOCAB, d_model)
        self.blocks = nn.ModuleList(Block(d_model, heads) for _ in range(layers))
        self.norm, self.head = nn.LayerNorm(d_model), nn.Linear(d_model, VOCAB)

    def forward(self, tokens):
        x = self.embed(tokens)
        for block in self.blocks:
            # checkpoint: keep x, drop what block(x) saves for backward; backward recomputes it.
            x = checkpoint(block, x, use_reentrant=False) if self.checkpointed else block(x)
        return self.head(self.norm(x))
# --8<-- [end:model]


def tensor_bytes(tensors):
    return sum(t.numel() * t.element_size() for t in tensors)


def timeline(prof, device, directory):
    """The profiler's memory timeline for one device: time (us) and bytes per category."""
    path = Path(directory) / "timeline.json"
    with warnings.catch_warnings():
        # Deprecated in favour of the allocator's history, which is CUDA-only and has no categories.
        warnings.simplefilter("ignore", FutureWarning)
        prof.export_memory_timeline(str(path), device=device)
    times, sizes = json.loads(path.read_text())
    series = {name: [row[i + 1] for row in sizes] for i, name in enumerate(CATEGORIES)}
    return {"device": device, "times_us": times, "bytes": series}


def peak_of(memory_timeline):
    """The timeline's highest total and what each category held at that moment."""
    series = memory_timeline["bytes"]
    totals = [sum(column) for column in zip(*series.values())]
    if not totals:
        return {"total_bytes": 0, "time_us": None, "bytes": {}}
    at = max(range(len(totals)), key=totals.__getitem__)
    return {"total_bytes": totals[at], "time_us": memory_timeline["times_us"][at],
            "bytes": {name: values[at] for name, values in series.items()}}


def mib(n):
    return f"{n / 2**20:.1f} MiB"


def main(argv=None):
    args = parse_args(argv)
    device = torch.device(args.device)
    on_gpu = device.type == "cuda"
    args.trace_dir.mkdir(parents=True, exist_ok=True)
    stem = output_stem(args)

    if on_gpu:
        # --8<-- [start:history]
        torch.cuda.memory._record_memory_history(max_entries=args.max_entries, stacks="python")
        # --8<-- [end:history]
    torch.manual_seed(0)
    model = TinyGPT(args.layers, args.d_model, args.heads, args.variant == "checkpoint").to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    tokens = torch.randint(0, VOCAB, (args.batch, args.seq + 1), device=device)
    inputs, targets = tokens[:, :-1], tokens[:, 1:]

    # --8<-- [start:step]
    def train_step():
        with record_function("forward"):
            logits = model(inputs)
            loss = F.cross_entropy(logits.reshape(-1, VOCAB), targets.reshape(-1))
        with record_function("backward"):
            loss.backward()
        with record_function("optimizer"):
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
    # --8<-- [end:step]

    steps = []

    def measured_step(phase):
        """One step, with the allocator's peaks during it (cuda): allocated counts the bytes
        of live tensors, reserved what the caching allocator holds from the driver for them."""
        if on_gpu:
            torch.cuda.reset_peak_memory_stats()
        train_step()
        step = {"step": len(steps) + 1, "phase": phase}
        if on_gpu:
            torch.cuda.synchronize()  # so that a recorded step lasts until its GPU work is done
            step.update(max_allocated_bytes=torch.cuda.max_memory_allocated(),
                        max_reserved_bytes=torch.cuda.max_memory_reserved(),
                        allocated_after_bytes=torch.cuda.memory_allocated(),
                        reserved_after_bytes=torch.cuda.memory_reserved())
        steps.append(step)

    for _ in range(HISTORY_STEPS):
        measured_step("history" if on_gpu else "untimed")
    if on_gpu:
        # --8<-- [start:snapshot]
        torch.cuda.memory._dump_snapshot(str(args.trace_dir / f"{stem}.snapshot.pickle"))
        torch.cuda.memory._record_memory_history(enabled=None)  # stop recording
        # --8<-- [end:snapshot]
    else:
        print("the allocator's history (torch.cuda.memory._record_memory_history) is CUDA-only: "
              "no snapshot on the CPU")

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if on_gpu else [])
    # --8<-- [start:profile]
    with profile(
        activities=activities,
        schedule=schedule(wait=WAIT, warmup=WARMUP, active=args.steps, repeat=1),
        profile_memory=True,
        record_shapes=True,
        with_stack=True,
    ) as prof:
        for phase in ["wait"] * WAIT + ["warmup"] * WARMUP + ["recorded"] * args.steps:
            measured_step(phase)
            prof.step()
    # --8<-- [end:profile]

    timeline_device = f"cuda:{torch.cuda.current_device()}" if on_gpu else "cpu"
    with tempfile.TemporaryDirectory() as scratch:
        memory_timeline = timeline(prof, timeline_device, scratch)
    parameters = list(model.parameters())
    state = [value for per_param in optimizer.state.values() for value in per_param.values()
             if torch.is_tensor(value) and value.device.type == device.type]
    summary = {
        "format": MEMORY_FORMAT,
        "device": device.type,
        "variant": args.variant,
        # Counted from the tensors themselves, to hold the timeline's categories against.
        "model": {"parameters": sum(p.numel() for p in parameters),
                  "parameter_bytes": tensor_bytes(parameters),
                  "gradient_bytes": tensor_bytes(parameters),  # one fp32 gradient per parameter
                  "optimizer_state_bytes": tensor_bytes(state),
                  "input_bytes": tensor_bytes([tokens])},
        "allocator_history": on_gpu,
        "steps": steps,
        "timeline": memory_timeline,
    }

    sort_by = "self_cuda_memory_usage" if on_gpu else "self_cpu_memory_usage"
    table = prof.key_averages().table(sort_by=sort_by, row_limit=15)
    trace_path = args.trace_dir / f"{stem}.json"
    prof.export_chrome_trace(str(trace_path))
    # The timeline's times are microseconds since the epoch; the trace's are since its
    # baseTimeNanoseconds: a [memory] event at ts lies at ts + trace_base_us on the timeline.
    base_ns = json.loads(trace_path.read_text()).get("baseTimeNanoseconds")
    memory_timeline["trace_base_us"] = None if base_ns is None else base_ns / 1000
    (args.trace_dir / f"{stem}.memory.json").write_text(json.dumps(summary, separators=(",", ":")) + "\n")
    # What the .txt holds is what the run prints: the table, then the peaks under it (the
    # .memory.json and, on CUDA, the .snapshot.pickle beside it hold the rest).
    peak = peak_of(memory_timeline)
    lines = [table, f"timeline peak on {timeline_device}: {mib(peak['total_bytes'])}: "
             + ", ".join(f"{name} {mib(n)}" for name, n in peak["bytes"].items() if n)]
    if on_gpu:
        last = steps[-1]
        lines.append(f"last step: max allocated {mib(last['max_allocated_bytes'])}, "
                     f"max reserved {mib(last['max_reserved_bytes'])}")
    report = "\n".join(lines)
    (args.trace_dir / f"{stem}.txt").write_text(report + "\n")
    print(report)
    print(f"wrote {args.trace_dir / stem}.json and .txt")


if __name__ == "__main__":
    main()
