"""analyze.py's memory, shapes and stacks sections: absent (the output unchanged) for a trace
without them; present, consistent and escaped for a real CPU trace recorded here with
profile_memory, record_shapes and with_stack, and for a hand-made one."""

from __future__ import annotations

import gzip
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from scripts.tracefacts.entry import cli as analyze
from scripts.tracefacts.facts.analysis import facts, summary_text
from scripts.tracefacts.facts.recording import recording_facts
from scripts.tracefacts.facts.memory import memory_facts
from scripts.tracefacts.facts.ops import OP_ARG_KINDS, op_facts
from scripts.tracefacts.model.trace import load_trace
from tests.fixtures.synth import write_trace
from tests.test_memory import memory_trace

ROOT = Path(__file__).resolve().parents[1]
PLAIN = ROOT / "traces" / "01_matmul_add" / "64_bf16_warm_eager.json.gz"

RECORD = r'''
import sys, torch
from torch.profiler import profile, ProfilerActivity
model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 8))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x = torch.randn(16, 32)
def train_step():
    loss = model(x).square().mean()
    loss.backward()
    opt.step()
    opt.zero_grad()
with profile(activities=[ProfilerActivity.CPU], profile_memory=True, record_shapes=True,
             with_stack=True) as prof:
    for _ in range(2):
        train_step()
prof.export_chrome_trace(sys.argv[1])
'''


@pytest.fixture(scope="module")
def cpu_trace(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("recorded")
    (folder / "tiny_train.py").write_text(RECORD)
    out = folder / "tiny.json"
    subprocess.run([sys.executable, "tiny_train.py", str(out)], cwd=folder, check=True,
                   capture_output=True, timeout=300)
    return out


def cli(capsys, *args) -> str:
    assert analyze.main([str(a) for a in args]) == 0
    return capsys.readouterr().out


@pytest.mark.skipif(not PLAIN.exists(), reason="a frozen trace without memory, shapes or stacks")
def test_a_trace_without_them_prints_what_it_printed(capsys):
    trace = load_trace(PLAIN)
    trace.source = str(PLAIN)
    # What it printed, with how the trace was recorded (scripts/tracefacts/facts/recording.py).
    assert cli(capsys, PLAIN) == summary_text(facts(trace), recording_facts(trace)) + "\n"
    assert json.loads(cli(capsys, PLAIN, "--json")).keys() == facts(trace).to_dict().keys() | {"recording"}


def test_real_cpu_trace_facts_are_consistent(cpu_trace):
    raw = json.loads(cpu_trace.read_text())["traceEvents"]
    samples = [e["args"] for e in raw if e.get("name") == "[memory]"]
    assert samples
    trace = load_trace(cpu_trace, keep_args=OP_ARG_KINDS)
    (cpu,) = memory_facts(trace).devices
    assert cpu.device == "cpu"
    assert cpu.peak_allocated >= max(s["Total Allocated"] for s in samples)
    assert cpu.peak_allocated == max([cpu.start_allocated] + [s["Total Allocated"] for s in samples])
    assert cpu.allocations == sum(s["Bytes"] > 0 for s in samples)
    assert cpu.allocated_bytes - cpu.freed_bytes == cpu.net_bytes
    assert cpu.end_allocated - cpu.start_allocated == cpu.net_bytes
    assert cpu.peak_op is None or cpu.peak_op.startswith(("aten::", "autograd::", "Optimizer"))
    assert all(a.bytes <= max(s["Bytes"] for s in samples) for a in cpu.largest)
    ops = op_facts(trace)
    addmm = [s for s in ops.shapes if s.name == "aten::addmm"]
    assert {s.input_dims.split("]")[0] + "]]" for s in addmm} <= {"[[64]]", "[[8]]"}
    assert all(s.self_us <= s.total_us for s in ops.shapes)
    # Every top op's user line is in the script that ran, not in torch.
    assert ops.sources and all(s.frame and s.frame.startswith("tiny_train.py(") for s in ops.sources)


def test_real_cpu_trace_in_the_cli(capsys, cpu_trace):
    text = cli(capsys, cpu_trace)
    assert "memory ([memory] events of profile_memory=True, in whole trace):" in text
    assert "ops by input shape (record_shapes=True)" in text and "<- tiny_train.py(" in text
    out = json.loads(cli(capsys, cpu_trace, "--json"))
    assert out["memory"]["devices"][0]["device"] == "cpu"
    assert out["ops"]["shapes"] and out["ops"]["sources"]
    step = json.loads(cli(capsys, cpu_trace, "--json", "--window", "0:1"))
    assert step.get("memory") is None or step["memory"]["end_us"] == 1


def test_hand_made_memory_in_the_cli_is_escaped(capsys, tmp_path):
    data = memory_trace()
    for event in data["traceEvents"]:
        if event["name"] == "aten::add":
            event["name"] = "aten::add\x1b]0;owned\x07\nfake line"
    path = write_trace(data, tmp_path / "memory.json")
    text = cli(capsys, path, "--step", "2")
    assert "peak allocated 500 B at 110 us, in aten::add\\x1b]0;owned\\x07\\x0afake line" in text
    assert "\x1b" not in text and "\nfake line" not in text
    out = json.loads(cli(capsys, path, "--json", "--step", "2"))
    assert out["memory"]["devices"][0]["peak_allocated"] == 500


ONE_PASS = [ROOT / "traces" / "07_shapes_stacks" / "shapes_b16_s64-256-1024-4096_1024x4096_bf16.json.gz",
            ROOT / "traces" / "07_shapes_stacks" / "stacks_b16_s3_fused.json.gz",
            ROOT / "traces" / "06_memory" / "train_b16_s512_l8_d512_fp32_checkpoint.json.gz"]


@pytest.mark.parametrize("decoder", ["compiled", "stdlib"])
@pytest.mark.parametrize("path", ONE_PASS, ids=lambda p: p.name.split(".")[0])
def test_one_pass_keeps_what_shapes_stacks_and_memory_read(path, decoder, monkeypatch):
    """The analyzer's one reading (ops and frames as columns, op args by the profiler's flags
    before the events) gives the facts of a full reading with every op's args."""
    from scripts.tracefacts.reading import msgspec_events as compiled
    from scripts.tracefacts.facts.analysis import TIMES_ONLY_KINDS
    from scripts.tracefacts.facts.details import details

    if decoder == "stdlib":
        monkeypatch.setenv(compiled.DECODER_ENV, "stdlib")
    lean = load_trace(path, skip_kinds=TIMES_ONLY_KINDS, op_args=None)
    full = load_trace(path, keep_args=OP_ARG_KINDS)
    assert lean.op_args and not lean.by_kind.get("cpu_op") and lean.skipped["cpu_op"].columns
    found = details(lean)
    assert found is not None and found == details(full)
    assert facts(lean).to_dict() == facts(full).to_dict()


FLAGS_IN_HEADER = re.compile(rb'"(?:with_stack|record_shapes|profile_memory)":\s*[01],')


@pytest.mark.parametrize("path", ONE_PASS[1:], ids=lambda p: p.name.split(".")[0])
def test_a_trace_without_the_flags_gives_the_same_facts_from_a_lean_second_reading(
        path, capsys, monkeypatch, tmp_path):
    """Without the profiler's flags before its events (an older torch, a hand-edited file), the
    CLI reads the trace again for the ops' args: the same facts as with the flags, and that
    second reading still keeps ops and frames as columns, not an object each (a large trace's
    memory)."""
    header, events = gzip.decompress(path.read_bytes()).split(b'"traceEvents"', 1)
    assert FLAGS_IN_HEADER.search(header)
    flagless = tmp_path / path.name
    flagless.write_bytes(gzip.compress(FLAGS_IN_HEADER.sub(b"", header) + b'"traceEvents"' + events))
    readings = []

    def recorded(*args, **kwargs):
        readings.append(load_trace(*args, **kwargs))
        return readings[-1]

    monkeypatch.setattr(analyze, "load_trace", recorded)
    without = json.loads(cli(capsys, flagless, "--json"))
    assert len(readings) == 2 and not readings[0].op_args and readings[1].op_args
    assert not readings[1].by_kind.get("cpu_op") and readings[1].skipped["cpu_op"].columns
    with_flags = json.loads(cli(capsys, path, "--json"))
    without.pop("source"), with_flags.pop("source")
    assert without == with_flags and (without.get("ops") or without.get("memory"))
