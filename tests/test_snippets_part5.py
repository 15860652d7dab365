"""The snippets of Part 5 (shapes, stacks, the roofline) and Part 3's Triton variant, on the CPU at
a small size; their GPU-only checks (our Triton kernel against SDPA, the measured roofs) under the
gpu marker, run by `make test-gpu`.

The CPU runs share one subprocess (tests/snippet_runs.py): torch's import and the profiler's first
start are paid once.
"""

from __future__ import annotations

import json
import re
import runpy
import subprocess
import sys

import pytest

from scripts.series.runs import catalog, freeze
from scripts.tracefacts.pictures.profiler_table import parse_table
from scripts.tracefacts.model.trace import load_trace
from tests.conftest import ROOT
from tests.snippet_runs import run_on_cpu, written

pytest.importorskip("torch")

SNIPPETS = ROOT / "snippets"
SHAPES = ("--mode", "shapes", "--batch", "2", "--seqs", "4,16", "--in_dim", "16", "--out_dim", "32", "--steps", "2")
STACKS = ("--mode", "stacks", "--batch", "2", "--seq", "8", "--layers", "1", "--d_model", "32", "--steps", "1",
          "--timing_steps", "2", "--rounds", "2")
ROOFLINE = ("--tokens", "32", "--dim", "16", "--hidden", "64", "--batch", "1", "--heads", "2", "--seq", "16",
            "--head_dim", "8", "--steps", "2", "--peak_size", "32", "--peak_steps", "3", "--copy_mib", "1")
ATTENTION = ("--batch", "1", "--heads", "2", "--seq", "16", "--head_dim", "8")

# name -> (snippet, arguments, the output stem the snippet must choose)
CASES = {
    "shapes": ("07_shapes_stacks", SHAPES, "shapes_b2_s4-16_16x32_bf16"),
    "stacks_foreach_false": ("07_shapes_stacks", (*STACKS, "--optimizer", "foreach_false"),
                             "stacks_b2_s1_foreach_false"),
    "stacks_fused": ("07_shapes_stacks", (*STACKS, "--optimizer", "fused"), "stacks_b2_s1_fused"),
    "roofline": ("08_roofline", ROOFLINE, "roofline_bf16_t32_d16_h64"),
    "triton": ("04_attention", ("--variant", "triton", *ATTENTION), "triton_b1_h2_s16_d8_bf16_cold"),
}


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    return run_on_cpu(CASES, tmp_path_factory.mktemp("cpu_runs_part5"), timeout=400)


def outputs(runs, name):
    stem, text = written(runs, CASES, name)
    return load_trace(stem.parent / f"{stem.name}.json"), text


def json_line(text, prefix):
    """The JSON a snippet writes on its last line after `prefix: `."""
    (line,) = [line for line in text.splitlines() if line.startswith(prefix + ": ")]
    return json.loads(line.split(": ", 1)[1])


def test_catalog_tags_are_the_names_the_snippets_choose():
    for example in catalog.PART5:
        snippet = runpy.run_path(str(example.script))
        assert snippet["output_stem"](snippet["parse_args"](list(example.args))) == example.tag, example.key


def test_part5_examples_are_refreshed_by_name_and_shown():
    keys = {e.key for e in catalog.select(["06_memory", "07_shapes_stacks", "08_roofline", "04_attention"])}
    assert {e.key for e in catalog.PART5} <= keys
    assert {e.key for e in catalog.PART5} <= {e.key for e in catalog.select(None)}


# --- shapes -------------------------------------------------------------------------------------


def test_shapes_table_splits_the_layer_by_input_shape(runs):
    stem, text = written(runs, CASES, "shapes")
    plain, grouped = text.split("Grouped by input shape")
    # The plain table: one row for the layer, every length's calls in it (2 lengths x 2 steps).
    assert parse_table(plain).row("aten::linear")["# of Calls"] == "4"
    table = parse_table(grouped)
    rows = [dict(zip(table.columns, row)) for row in table.rows if row[0] == "aten::linear"]
    assert sorted(row["Input Shapes"] for row in rows) == ["[[2, 16, 16], [32, 16], [32]]",
                                                           "[[2, 4, 16], [32, 16], [32]]"]
    assert all(row["# of Calls"] == "2" for row in rows)
    # and the trace holds each call's shapes, for any reader of it
    events = json.loads(stem.with_name(f"{stem.name}.json").read_text())["traceEvents"]
    dims = {str(e["args"]["Input Dims"]) for e in events if e["name"] == "aten::linear"}
    assert dims == {"[[2, 4, 16], [32, 16], [32]]", "[[2, 16, 16], [32, 16], [32]]"}


# --- stacks -------------------------------------------------------------------------------------


def python_frames(trace):
    return {e.name for e in trace.events if e.cat == "python_function"}


@pytest.mark.parametrize("optimizer", ["foreach_false", "fused"])
def test_stacks_trace_leads_from_the_ops_to_the_training_step(runs, optimizer):
    trace, _ = outputs(runs, f"stacks_{optimizer}")
    assert any(re.search(r"07_shapes_stacks\.py\(\d+\): train_step$", frame) for frame in python_frames(trace))
    fused = any(e.name == "aten::_fused_adamw_" for e in trace.events)
    assert fused == (optimizer == "fused")


def test_stack_cost_is_measured_side_by_side(runs):
    _, text = outputs(runs, "stacks_foreach_false")
    cost = json_line(text, "stack_cost_json")
    assert set(cost["step_us"]) == {"no profiler", "profiler", "profiler + with_stack"}
    for config, samples in cost["step_samples_us"].items():
        assert len(samples) == 4 == cost["step_us"][config]["n"]  # 2 rounds x 2 steps
        spread = cost["step_us"][config]
        assert spread["min_us"] <= spread["median_us"] <= spread["max_us"]
    assert cost["trace_bytes_with_stack"] > cost["trace_bytes_without_stack"] > 0
    assert "What stacks cost" in text


# --- roofline -----------------------------------------------------------------------------------


def test_roofline_labels_every_call_with_its_work(runs):
    trace, text = outputs(runs, "roofline")
    summary = json_line(text, "roofline_json")
    labels = [e.name for e in trace.events if e.name.startswith(("kernel: ", "peak compute: ", "peak memory: "))]
    for kernel in summary["kernels"]:
        assert labels.count(kernel["label"]) == 2 == len(kernel["call_us"])
        name, flops, size = re.fullmatch(r"kernel: (\S+) flops=(\d+) bytes=(\d+)", kernel["label"]).groups()
        assert (name, int(flops), int(size)) == (kernel["name"], kernel["flops"], kernel["bytes"])
    for roof in summary["roofs"]:
        assert labels.count(roof["label"]) == 3
    names = [k["name"] for k in summary["kernels"]]
    assert names == ["gemm_16x16x16", "gemm_32x16x64", "gemm_16x16x64", "gemv_1x16x64", "add_32x64",
                     "softmax_32x64", "layer_norm_32x16", "sdpa_causal_b1_h2_s16_d8"]
    assert "roofline" in trace.metadata and summary["ridge_flop_per_byte"] > 0


def test_roofline_bandwidth_roof_reads_and_writes(runs):
    # The add reads two tensors and writes one: its roof must come from kernels that write too.
    # A read-only sum can outrun them; it is reported, named read only, and never the roof.
    _, text = outputs(runs, "roofline")
    summary = json_line(text, "roofline_json")
    roofs = {r["name"]: r for r in summary["roofs"]}
    assert set(roofs) == {"matmul_32", "copy_1MiB", "triad_1MiB", "sum_1MiB"}
    assert summary["bandwidth_from"] in {"copy_1MiB", "triad_1MiB"}
    numel = (1 << 20) // 2
    assert roofs["copy_1MiB"]["bytes"] == 2 * numel * 2 and roofs["triad_1MiB"]["bytes"] == 3 * numel * 2
    assert roofs["sum_1MiB"]["bytes"] == numel * 2
    rates = {n: r["bytes"] / sorted(r["call_us"])[1] / 1e6 for n, r in roofs.items() if n != "matmul_32"}
    assert summary["peak_tbytes_per_s"] == pytest.approx(max(rates["copy_1MiB"], rates["triad_1MiB"]), rel=1e-3)
    assert "(sum_1MiB, read only: no roof)" in text


def test_roofline_flops_agree_with_the_profilers_count_where_it_counts(runs):
    _, text = outputs(runs, "roofline")
    for kernel in json_line(text, "roofline_json")["kernels"]:
        if kernel["flops_from"] == "with_flops":
            assert kernel["profiler_flops"] == kernel["flops"], kernel["name"]
        else:
            assert kernel["profiler_flops"] == 0, kernel["name"]


# --- Part 3's Triton variant --------------------------------------------------------------------


def test_triton_attention_without_a_gpu_writes_only_the_reason(runs):
    result = runs["triton"]
    assert not result["error"], result["error"]
    (written_file,) = result["dir"].iterdir()
    assert written_file.name == "triton_b1_h2_s16_d8_bf16_cold.unavailable"
    reason = written_file.read_text()
    assert reason.count("\n") == 1 and "CUDA GPU" in reason


@pytest.mark.gpu
@pytest.mark.skipif(not freeze.gpu_available(), reason="needs a CUDA GPU and Triton")
def test_triton_attention_matches_sdpa_on_the_gpu(tmp_path):
    # 1000 tokens: not a multiple of the kernel's blocks, so the masked tail rows and keys are checked.
    done = subprocess.run(
        [sys.executable, str(SNIPPETS / "04_attention.py"), "--variant", "triton", "--batch", "2", "--heads", "4",
         "--seq", "1000", "--head_dim", "64", "--trace_dir", str(tmp_path)],
        capture_output=True, text=True, timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "matches SDPA" in done.stdout
    trace = load_trace(tmp_path / "triton_b2_h4_s1000_d64_bf16_cold.json")
    assert any(k.name == "causal_attention_kernel" for k in trace.kernels)
    assert "max abs difference" in (tmp_path / "triton_b2_h4_s1000_d64_bf16_cold.txt").read_text()


@pytest.mark.gpu
@pytest.mark.skipif(not freeze.gpu_available(), reason="needs a CUDA GPU")
def test_roofline_roofs_are_sane_on_the_gpu(tmp_path):
    done = subprocess.run(
        [sys.executable, str(SNIPPETS / "08_roofline.py"), "--steps", "3", "--trace_dir", str(tmp_path)],
        capture_output=True, text=True, timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    summary = json_line((tmp_path / "roofline_bf16_t8192_d4096_h14336.txt").read_text(), "roofline_json")
    peak, bandwidth = summary["peak_tflops"], summary["peak_tbytes_per_s"]
    # Every GPU of the last decade does more than one FLOP per byte it reads from memory.
    assert summary["ridge_flop_per_byte"] > 1
    # Both measures of a roof, CUDA events before profiling and the profiler's kernel times, agree.
    for roof in summary["roofs"]:
        rate = (roof["flops"] if roof["name"].startswith("matmul") else roof["bytes"])
        profiled = rate / sorted(roof["call_us"])[len(roof["call_us"]) // 2] / 1e6
        assert roof["events_rate"] == pytest.approx(profiled, rel=0.25), roof["name"]
    bound = {k["name"]: k["bound"] for k in summary["kernels"]}
    assert bound["gemm_4096x4096x4096"] == "compute" and bound["gemv_1x4096x14336"] == "memory"
    assert bound["add_8192x14336"] == bound["softmax_8192x14336"] == "memory"
    # No kernel beats its roof by more than noise: a roof measured too low, or bytes counted too
    # many, would show here. Each kernel's operands are larger than the L2 cache.
    for kernel in summary["kernels"]:
        median_us = sorted(kernel["call_us"])[len(kernel["call_us"]) // 2]
        tflops = kernel["flops"] / median_us / 1e6
        roof = min(peak, kernel["flops"] / kernel["bytes"] * bandwidth)
        assert tflops <= 1.1 * roof, kernel["name"]
