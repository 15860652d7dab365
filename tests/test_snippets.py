"""Each snippet runs on the CPU at a small size and writes a valid trace and table."""

from __future__ import annotations

import subprocess
import sys

import pytest

from scripts.tracefacts.pictures.profiler_table import parse_table
from scripts.tracefacts.model.trace import load_trace
from tests.conftest import ROOT

pytest.importorskip("torch")


def run_snippet(name: str, out, *args: str) -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "snippets" / name), "--device", "cpu", "--trace_dir", str(out), *args],
        capture_output=True, text=True, timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]


def test_matmul_add_on_cpu(tmp_path):
    run_snippet("01_matmul_add.py", tmp_path, "--size", "16")
    trace = load_trace(tmp_path / "16_bf16_cold_eager.json")
    assert [s.name for s in trace.steps] == ["ProfilerStep#2", "ProfilerStep#3", "ProfilerStep#4"]
    names = {e.name for e in trace.events}
    assert {"matmul_add", "aten::matmul", "aten::mm", "aten::add"} <= names
    table = parse_table((tmp_path / "16_bf16_cold_eager.txt").read_text())
    assert table.row("aten::mm")["# of Calls"] == "3"


def test_matmul_add_variants_name_their_outputs(tmp_path):
    run_snippet("01_matmul_add.py", tmp_path, "--size", "8", "--batch", "2", "--schedule", "0,0,2",
                "--warmup", "--dtype", "fp32")
    trace = load_trace(tmp_path / "8_fp32_warm_eager_b2_s0-0-2.json")
    assert any(e.name == "aten::bmm" for e in trace.events)
    assert [s.name for s in trace.steps] == ["ProfilerStep#0", "ProfilerStep#1"]


def test_matmul_add_tf32_names_its_outputs(tmp_path):
    run_snippet("01_matmul_add.py", tmp_path, "--size", "8", "--dtype", "fp32", "--tf32", "--schedule", "0,0,1")
    assert (tmp_path / "8_fp32_cold_eager_tf32_s0-0-1.json").is_file()


def test_every_part1_example_is_named_as_the_catalog_says():
    import runpy

    from scripts.series.runs import catalog

    snippet = runpy.run_path(str(ROOT / "snippets" / "01_matmul_add.py"))
    for example in catalog.PART1:
        args = snippet["parse_args"](list(example.args))
        schedule = (int(n) for n in args.schedule.split(","))
        assert snippet["output_stem"](args, *schedule) == example.tag, example.key


def test_train_step_on_cpu(tmp_path):
    run_snippet("train_step.py", tmp_path, "--layers", "1", "--d_model", "32", "--seq", "8",
                "--batch", "2", "--steps", "1")
    trace = load_trace(tmp_path / "train_b2_s1.json")
    names = {e.name for e in trace.events}
    assert {"forward", "backward", "optimizer"} <= names
