# /// script
# requires-python = ">=3.10"
# dependencies = ["torch>=2.4"]
# ///
"""Two things torch.profiler records only on request: input shapes and Python stacks.

    uv run snippets/07_shapes_stacks.py --mode shapes
    uv run snippets/07_shapes_stacks.py --mode stacks --optimizer foreach_false
    uv run snippets/07_shapes_stacks.py --mode stacks --optimizer fused

--mode shapes: one Linear layer fed, in every step, a batch at each of several sequence lengths
(--seqs), profiled with record_shapes=True. The .txt holds the plain key_averages table, where the
layer's calls of every shape share one row, then the same events grouped by input shape
(key_averages(group_by_input_shape=True)): one row per op and shapes, so that each length's cost
shows apart. Writes `shapes_b{batch}_s{seqs}_{in}x{out}_{dtype}.json` and `.txt`.

--mode stacks: the guide's training step (the TinyLM of snippets/train_step.py, copied so that
this script stands alone), profiled with with_stack=True, with AdamW(foreach=False), one small
kernel per parameter and operation, or AdamW(fused=True), one kernel per chunk of parameters.
The trace's events carry the Python lines that launched them. The .txt holds the plain table, the
table grouped by the five innermost stack frames (group_by_stack_n=5, where this PyTorch keeps the
frames on the ops), and what stacks cost, measured in the same run: each step's synchronized wall
time without the profiler, under the profiler, and under the profiler with stacks (--rounds rounds
of --timing_steps steps each, the three in a rotating order), and the size of the trace with stacks
against the same steps without. The last line, `stack_cost_json: {...}`, holds every sample.
Writes `stacks_b{batch}_s{steps}_{optimizer}.json` and `.txt`.

Output files go into --trace_dir.
"""

import argparse
import contextlib
import json
import statistics
import tempfile
import time
from pathlib import Path

import torch
from torch import nn
from torch.profiler import ProfilerActivity, profile, record_function, schedule

DTYPES = {"bf16": torch.bfloat16, "fp32": torch.float32}
VOCAB = 1024
WAIT, WARMUP = 1, 1
OPTIMIZERS = ("foreach_false", "fused")
# How a step is timed in the cost measurement: without the profiler, under it, under it with stacks.
CONFIGS = ("no profiler", "profiler", "profiler + with_stack")


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mode", choices=["shapes", "stacks"], required=True)
    parser.add_argument("--batch", type=int, default=16, help="sequences per batch")
    parser.add_argument("--steps", type=int, default=3, help="profiled (active) steps")
    parser.add_argument("--trace_dir", type=Path, default=Path("traces/07_shapes_stacks"))
    parser.add_argument("--device", default="cuda", help="cuda, or cpu for a smoke test")
    shapes = parser.add_argument_group("--mode shapes")
    shapes.add_argument("--seqs", default="64,256,1024,4096", help="comma-separated sequence lengths")
    shapes.add_argument("--in_dim", type=int, default=1024)
    shapes.add_argument("--out_dim", type=int, default=4096)
    shapes.add_argument("--dtype", choices=sorted(DTYPES), default="bf16")
    stacks = parser.add_argument_group("--mode stacks")
    stacks.add_argument("--optimizer", choices=OPTIMIZERS, default="foreach_false",
                        help="AdamW(foreach=False) or AdamW(fused=True)")
    stacks.add_argument("--seq", type=int, default=256, help="tokens per sequence")
    stacks.add_argument("--layers", type=int, default=12)
    stacks.add_argument("--d_model", type=int, default=512)
    stacks.add_argument("--timing_steps", type=int, default=10, help="timed steps per round and configuration")
    stacks.add_argument("--rounds", type=int, default=3, help="rounds of the three configurations")
    args = parser.parse_args(argv)
    args.seqs = [int(s) for s in args.seqs.split(",")]
    if len(set(args.seqs)) != len(args.seqs) or min(args.seqs) < 1:
        parser.error("--seqs takes positive lengths, each once")
    if min(args.batch, args.steps, args.timing_steps, args.rounds) < 1:
        parser.error("--batch, --steps, --timing_steps and --rounds must be positive")
    return args


def output_stem(args):
    if args.mode == "shapes":
        seqs = "-".join(map(str, args.seqs))
        return f"shapes_b{args.batch}_s{seqs}_{args.in_dim}x{args.out_dim}_{args.dtype}"
    return f"stacks_b{args.batch}_s{args.steps}_{args.optimizer}"


def synchronizer(device):
    return torch.cuda.synchronize if device.type == "cuda" else (lambda: None)


def activities_for(device):
    return [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.type == "cuda" else [])


def sort_key(device):
    return "cuda_time_total" if device.type == "cuda" else "cpu_time_total"


# --- shapes -------------------------------------------------------------------------------------


def run_shapes(args, device):
    torch.manual_seed(0)
    dtype = DTYPES[args.dtype]
    layer = nn.Linear(args.in_dim, args.out_dim).to(device=device, dtype=dtype)
    # One input per length, made before profiling: the step holds the layer's calls only.
    inputs = [torch.randn(args.batch, seq, args.in_dim, device=device, dtype=dtype) for seq in args.seqs]

    # --8<-- [start:shapes_step]
    def step():
        # The same layer at every length, as a model serving requests of mixed lengths would run it.
        with torch.no_grad():
            for x in inputs:
                layer(x)
    # --8<-- [end:shapes_step]

    # --8<-- [start:shapes_profile]
    with profile(
        activities=activities_for(device),
        schedule=schedule(wait=WAIT, warmup=WARMUP, active=args.steps, repeat=1),
        record_shapes=True,
    ) as prof:
        for _ in range(WAIT + WARMUP + args.steps):
            step()
            prof.step()
    plain = prof.key_averages().table(sort_by=sort_key(device), row_limit=15)
    by_shape = prof.key_averages(group_by_input_shape=True).table(sort_by=sort_key(device), row_limit=20)
    # --8<-- [end:shapes_profile]
    report = (plain + "\n\nGrouped by input shape (key_averages(group_by_input_shape=True)):\n\n"
              + by_shape + "\n")
    return prof, report


# --- stacks -------------------------------------------------------------------------------------


class TinyLM(nn.Module):
    """Token embedding, a stack of encoder layers, a vocabulary head (snippets/train_step.py's)."""

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


def make_optimizer(name, params):
    # --8<-- [start:optimizer]
    if name == "foreach_false":
        # A Python loop over parameters, each update a handful of small kernels.
        return torch.optim.AdamW(params, lr=1e-4, foreach=False)
    # One fused kernel applies the whole update to a chunk of parameters at once: a few launches.
    return torch.optim.AdamW(params, lr=1e-4, fused=True)
    # --8<-- [end:optimizer]


def spread(samples):
    """Median, lowest and highest of step times in microseconds."""
    return {"n": len(samples), "median_us": round(statistics.median(samples), 1),
            "min_us": round(min(samples), 1), "max_us": round(max(samples), 1)}


def run_stacks(args, device):
    torch.manual_seed(0)
    sync = synchronizer(device)
    model = TinyLM(args.layers, args.d_model).to(device)
    optimizer = make_optimizer(args.optimizer, model.parameters())
    tokens = torch.randint(0, VOCAB, (args.batch, args.seq + 1), device=device)
    inputs, targets = tokens[:, :-1], tokens[:, 1:]
    on_gpu = device.type == "cuda"
    autocast = torch.autocast("cuda", dtype=torch.bfloat16) if on_gpu else contextlib.nullcontext()

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

    for _ in range(3):  # optimizer state, allocator and cuBLAS warmed before anything is timed
        train_step()
    sync()

    def timed(count, after=lambda: None):
        """Each step's wall time in us, synchronized, with `after` (the profiler's step) outside it."""
        times = []
        for _ in range(count):
            started = time.perf_counter()
            train_step()
            sync()
            times.append((time.perf_counter() - started) * 1e6)
            after()
        return times

    def window(config):
        if config == "no profiler":
            return timed(args.timing_steps)
        # One untimed step while the profiler starts, then the timed steps, all recorded; the
        # profiler stops at the last prof.step(), after the last timed step.
        with profile(activities=activities_for(device), with_stack=config.endswith("with_stack"),
                     schedule=schedule(wait=0, warmup=1, active=args.timing_steps, repeat=1)) as prof:
            train_step()
            sync()
            prof.step()
            return timed(args.timing_steps, after=prof.step)

    # Rotated each round, so that no configuration always runs first or after the same one.
    samples = {config: [] for config in CONFIGS}
    for number in range(args.rounds):
        for config in CONFIGS[number % 3:] + CONFIGS[:number % 3]:
            samples[config] += window(config)

    def profiled(with_stack):
        # --8<-- [start:profile]
        with profile(
            activities=activities_for(device),
            schedule=schedule(wait=WAIT, warmup=WARMUP, active=args.steps, repeat=1),
            with_stack=with_stack,
        ) as prof:
            for _ in range(WAIT + WARMUP + args.steps):
                train_step()
                prof.step()
        # --8<-- [end:profile]
        return prof

    # The same steps without stacks, exported only to be weighed against the trace with them.
    with tempfile.TemporaryDirectory() as tmp:
        twin = Path(tmp) / "without_stack.json"
        profiled(False).export_chrome_trace(str(twin))
        bytes_without = twin.stat().st_size
    prof = profiled(True)

    plain = prof.key_averages().table(sort_by=sort_key(device), row_limit=15)
    # Ops grouped by their five innermost Python frames, sorted by self time so that the rows are
    # the ops that did the work. Recent PyTorch versions keep the frames only in the trace (as
    # python_function events around the ops), not on the ops of key_averages: then say so.
    stacked = prof.key_averages(group_by_stack_n=5)
    if any(event.stack for event in stacked):
        # Frames untrimmed: a whole path is one the refresh's sanitizer can make relative.
        by_stack = stacked.table(sort_by=f"self_{sort_key(device)}", row_limit=10, max_src_column_width=300)
    else:
        by_stack = ("(no op holds a stack in key_averages with this PyTorch: the Python frames are in the "
                    "trace, as python_function events enclosing each op)")
    cost = {"steps_per_trace": args.steps, "trace_bytes_without_stack": bytes_without,
            "step_us": {config: spread(times) for config, times in samples.items()},
            "step_samples_us": {config: [round(t, 1) for t in times] for config, times in samples.items()}}

    def finish(bytes_with):
        cost["trace_bytes_with_stack"] = bytes_with
        lines = ["What stacks cost, measured in this run (synchronized wall time per training step, "
                 f"{args.rounds} rounds of {args.timing_steps} steps per configuration):",
                 f"{'configuration':>24} {'median us':>11} {'min us':>11} {'max us':>11}"]
        for config, numbers in cost["step_us"].items():
            lines.append(f"{config:>24} {numbers['median_us']:>11.1f} {numbers['min_us']:>11.1f} "
                         f"{numbers['max_us']:>11.1f}")
        lines.append(f"trace of {args.steps} steps: {bytes_with} bytes with stacks, {bytes_without} without "
                     f"({bytes_with / bytes_without:.2f}x)")
        lines.append("stack_cost_json: " + json.dumps(cost))
        return (plain + "\n\nGrouped by the five innermost stack frames (key_averages(group_by_stack_n=5)):\n\n"
                + by_stack + "\n\n" + "\n".join(lines) + "\n")

    return prof, finish


def main(argv=None):
    args = parse_args(argv)
    device = torch.device(args.device)
    args.trace_dir.mkdir(parents=True, exist_ok=True)
    stem = output_stem(args)
    trace = args.trace_dir / f"{stem}.json"
    if args.mode == "shapes":
        prof, report = run_shapes(args, device)
        prof.export_chrome_trace(str(trace))
    else:
        prof, finish = run_stacks(args, device)
        prof.export_chrome_trace(str(trace))
        report = finish(trace.stat().st_size)  # the trace's own size is known once it is written
    (args.trace_dir / f"{stem}.txt").write_text(report)
    print(report, end="")
    print(f"wrote {args.trace_dir / stem}.json and .txt")


if __name__ == "__main__":
    main()
