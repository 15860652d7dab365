# /// script
# requires-python = ">=3.10"
# dependencies = ["torch>=2.4"]
# ///
"""Hand a training step's top kernel to Nsight Compute: its occupancy and its throughput against the GPU's peaks.

    uv run snippets/14_ncu_top_kernel.py                       # profile, pick the top kernel, run ncu on it
    uv run snippets/14_ncu_top_kernel.py --ncu /opt/nvidia/nsight-compute/ncu
    uv run snippets/14_ncu_top_kernel.py --device cpu --layers 1 --d_model 32 --seq 8 --batch 2

First, torch.profiler records --steps training steps of the model of snippets/10_train_phases.py
(fused AdamW) and picks the kernel with the most GPU time in them: the top kernel. Then this
script runs itself again under Nsight Compute without torch.profiler (both use CUPTI, one at a
time): the same steps, and ncu measures one launch of the top kernel, the first of the first step
the profiler recorded (it skips as many launches of it as the steps before make, counted from the
trace; the steps are in NVTX ranges `step_N` too, for Nsight Systems):

    ncu --clock-control none --kernel-name-base demangled --kernel-name regex:^NAME
        --launch-skip SKIP --launch-count 1 --section SpeedOfLight --section Occupancy
        --metrics gpu__time_duration.sum,dram__bytes.sum python 14_ncu_top_kernel.py --target

`--clock-control none` leaves the GPU's clocks as they are (ncu locks them to base clocks by
default, which makes its times slower than the trace's). The report is read back as CSV (`ncu
--import ... --csv --page details`) and written as `{stem}.ncu.json`: the kernel, the command,
and the CSV's rows (section, metric, unit, value; the columns that name the machine left out).
Where ncu is missing or cannot read the GPU's counters, that file says why instead. On the CPU
the profile is made and ncu is skipped.

Writes `ncu_b{batch}_s{seq}_l{layers}_d{d_model}.json` (open it in Perfetto), `.txt` (the
key_averages table, then the top kernel and ncu's numbers) and `.ncu.json` into --trace_dir.
"""

import argparse
import contextlib
import csv
import io
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import torch
from torch import nn
from torch.profiler import ProfilerActivity, profile, schedule

VOCAB = 1024
WAIT, WARMUP = 1, 1
SECTIONS = ("SpeedOfLight", "Occupancy")
METRICS = ("gpu__time_duration.sum", "dram__bytes.sum")
# The CSV's columns kept: what was measured, not the process, host or context it was measured in.
KEPT_COLUMNS = ("Kernel Name", "Block Size", "Grid Size", "CC", "Section Name", "Metric Name", "Metric Unit",
                "Metric Value")
NCU_TIMEOUT_S = 240


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=3, help="profiled (active) steps")
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--seq", type=int, default=256, help="tokens per sequence")
    parser.add_argument("--layers", type=int, default=6)
    parser.add_argument("--d_model", type=int, default=512)
    parser.add_argument("--ncu", default="ncu", help="the Nsight Compute command line")
    parser.add_argument("--trace_dir", type=Path, default=Path("traces/14_ncu_top_kernel"))
    parser.add_argument("--device", default="cuda", help="cuda, or cpu for a smoke test (no ncu)")
    parser.add_argument("--target", action="store_true", help=argparse.SUPPRESS)  # the run ncu watches
    return parser.parse_args(argv)


def output_stem(args):
    return f"ncu_b{args.batch}_s{args.seq}_l{args.layers}_d{args.d_model}"


class TinyLM(nn.Module):
    """snippets/10_train_phases.py's model: token embedding, pre-norm encoder layers, a vocabulary head."""

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


def training(args, device):
    """The model, and a function that runs one training step of it."""
    on_gpu = device.type == "cuda"
    torch.manual_seed(0)
    model = TinyLM(args.layers, args.d_model).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
    tokens = torch.randint(0, VOCAB, (args.batch, args.seq + 1), device=device)
    inputs, targets = tokens[:, :-1], tokens[:, 1:]
    autocast = torch.autocast("cuda", dtype=torch.bfloat16) if on_gpu else contextlib.nullcontext()

    def train_step():
        with autocast:
            logits = model(inputs)
            loss = nn.functional.cross_entropy(logits.reshape(-1, VOCAB), targets.reshape(-1))
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    return train_step


def top_kernel(trace_path: Path) -> tuple[str, float, int]:
    """The kernel with the most GPU time in the trace: its name, total time (us) and launches."""
    totals: dict[str, list] = {}
    for event in json.loads(trace_path.read_text())["traceEvents"]:
        if event.get("ph") == "X" and event.get("cat") == "kernel":
            found = totals.setdefault(event["name"], [0.0, 0])
            found[0] += float(event.get("dur", 0))
            found[1] += 1
    name = max(totals, key=lambda n: (totals[n][0], n))
    return name, totals[name][0], totals[name][1]


def name_pattern(name: str) -> str:
    """A regular expression matching the kernel's demangled name from its start (metacharacters escaped)."""
    return "^" + re.sub(r"([\\^$.|?*+()\[\]{}])", r"\\\1", name)


# --8<-- [start:ncu]
def ncu_command(ncu: str, kernel: str, skip: int, target: list[str]) -> list[str]:
    return [ncu, "--clock-control", "none", "--kernel-name-base", "demangled",
            "--kernel-name", f"regex:{name_pattern(kernel)}", "--launch-skip", str(skip), "--launch-count", "1",
            *(a for s in SECTIONS for a in ("--section", s)), "--metrics", ",".join(METRICS), *target]
# --8<-- [end:ncu]


def run_ncu(args, kernel: str, skip: int) -> dict:
    """ncu's measurement of the kernel's launch after `skip` of them (the first of the first
    recorded step): the CSV's kept rows, or the reason there are none."""
    ncu = shutil.which(args.ncu)
    shown = ncu_command("ncu", kernel, skip, ["python", "snippets/14_ncu_top_kernel.py", "--target"])
    found = {"kernel": kernel, "command": shlex.join(shown)}
    if ncu is None:
        return {**found, "error": f"{args.ncu} not found: install Nsight Compute, or pass --ncu PATH"}
    target = [sys.executable, os.path.abspath(__file__), "--target", "--steps", str(args.steps), "--batch",
              str(args.batch), "--seq", str(args.seq), "--layers", str(args.layers), "--d_model", str(args.d_model)]
    with tempfile.TemporaryDirectory(prefix="ncu-") as folder:
        report = Path(folder) / "top_kernel"
        command = [ncu, "--export", str(report), "--force-overwrite", *ncu_command(ncu, kernel, skip, target)[1:]]
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=NCU_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            return {**found, "error": f"ncu did not finish in {NCU_TIMEOUT_S} s"}
        rep = report.with_suffix(".ncu-rep")
        if done.returncode != 0 or not rep.exists():
            return {**found, "error": "ncu failed: " + last_line(done.stdout + "\n" + done.stderr)}
        text = subprocess.run([ncu, "--import", str(rep), "--csv", "--page", "details"],
                              capture_output=True, text=True, timeout=NCU_TIMEOUT_S).stdout
    rows = kept_rows(text)
    if not rows:
        return {**found, "error": "ncu measured no launch of the kernel: " + last_line(done.stdout + done.stderr)}
    return {**found, "columns": list(KEPT_COLUMNS), "rows": rows}


def kept_rows(text: str) -> list[list[str]]:
    """The rows of ncu's CSV (`--csv --page details`) that hold a metric, in KEPT_COLUMNS only."""
    header = text.find('"')  # ncu's own messages (==PROF==) may come first
    rows = csv.DictReader(io.StringIO(text[header:] if header >= 0 else ""))
    return [[row.get(c) or "" for c in KEPT_COLUMNS] for row in rows if row.get("Metric Name")]


def last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip() and "==PROF==" not in line]
    errors = [line for line in lines if "ERROR" in line or "Error" in line]
    return (errors or lines or ["no output"])[-1][:300]


def main(argv=None):
    args = parse_args(argv)
    device = torch.device(args.device)
    on_gpu = device.type == "cuda"
    train_step = training(args, device)
    if args.target:  # under ncu: the same steps (in NVTX ranges, for nsys), no torch.profiler
        for number in range(WAIT + WARMUP + args.steps):
            with torch.cuda.nvtx.range(f"step_{number}"):
                train_step()
        torch.cuda.synchronize()
        return

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if on_gpu else [])
    with profile(activities=activities, schedule=schedule(wait=WAIT, warmup=WARMUP, active=args.steps, repeat=1)) as prof:
        for _ in range(WAIT + WARMUP + args.steps):
            train_step()
            prof.step()
    sort_by = "cuda_time_total" if on_gpu else "cpu_time_total"
    table = prof.key_averages().table(sort_by=sort_by, row_limit=15)
    args.trace_dir.mkdir(parents=True, exist_ok=True)
    stem = output_stem(args)
    trace = args.trace_dir / f"{stem}.json"
    prof.export_chrome_trace(str(trace))

    if on_gpu:
        kernel, total_us, launches = top_kernel(trace)
        # Its launches in the steps before the recorded ones, as many per step as in those.
        measured = run_ncu(args, kernel, launches // args.steps * (WAIT + WARMUP))
        lines = [f"top kernel: {kernel} ({total_us:.1f} us in {launches} launches over {args.steps} steps)"]
        if "error" in measured:
            lines.append(f"ncu: {measured['error']}")
        else:
            lines += [f"ncu {row[4]}: {row[5]} = {row[7]} {row[6]}".rstrip() for row in measured["rows"]]
    else:
        measured = {"error": "ncu needs a CUDA GPU: the profile was made on the CPU"}
        lines = ["ncu: skipped on the CPU"]
    (args.trace_dir / f"{stem}.ncu.json").write_text(json.dumps(measured, indent=1) + "\n")
    report = table + "\n" + "\n".join(lines) + "\n"
    (args.trace_dir / f"{stem}.txt").write_text(report)
    print(report, end="")
    print(f"wrote {args.trace_dir / stem}.json and .txt")


if __name__ == "__main__":
    main()
