"""The snippets of Parts 2 and 3 run on the CPU at a small size and write a valid trace and table.

Every profiled run pays torch's import and the profiler's first start (which imports
torch._inductor): about 6 s per process on two cores. So the runs share one subprocess
(tests/snippet_runs.py), which loads each snippet and calls its main() with one case's arguments; a
single run through the real command line checks the exit status of an unavailable backend.
torch.compile is not run by default: on the CPU it generates and compiles C++, 12 s for the linear
layer and 15 s for the MLP with empty caches (6 s eager); the GPU refresh runs every compiled
example, and SNIPPET_TESTS_COMPILE=1 runs them here too.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from scripts.series.runs import freeze
from scripts.tracefacts.pictures.profiler_table import parse_table
from scripts.tracefacts.model.trace import load_trace
from tests.conftest import ROOT
from tests.snippet_runs import run_on_cpu, written

pytest.importorskip("torch")

SNIPPETS = ROOT / "snippets"
ATTENTION = ("--batch", "1", "--heads", "2", "--seq", "16", "--head_dim", "8")
LINEAR = ("--batch", "4", "--in_dim", "8", "--out_dim", "16")
MLP = ("--batch", "2", "--seq", "4", "--dim", "16", "--hidden", "32")

# name -> (snippet, arguments, the output stem the snippet must choose)
CASES = {
    "linear": ("02_linear", LINEAR, "linear_b4_8x16_bf16_cold_eager"),
    "linear_fp32_warm": ("02_linear", (*LINEAR, "--dtype", "fp32", "--warmup"), "linear_b4_8x16_fp32_warm_eager"),
    "simple_mlp": ("03_simple_mlp", MLP, "mlp_b2_s4_16x32_bf16_cold_eager"),
    "kernels_mlp": ("03_kernels_mlp", MLP, "mlp_b2_s4_16x32_bf16_cold_triton"),
    "naive": ("04_attention", ("--variant", "naive", *ATTENTION), "naive_b1_h2_s16_d8_bf16_cold"),
    "inplace": ("04_attention", ("--variant", "inplace", *ATTENTION), "inplace_b1_h2_s16_d8_bf16_cold"),
    **{
        f"sdpa_{backend}": ("04_attention", ("--variant", "sdpa", "--backend", backend, *ATTENTION),
                            f"sdpa_{backend}_b1_h2_s16_d8_bf16_cold")
        for backend in ("math", "flash", "efficient", "cudnn")
    },
    # --steps records more calls (the samples the posts compare), under the same output names
    "simple_mlp_steps": ("03_simple_mlp", (*MLP, "--steps", "5"), "mlp_b2_s4_16x32_bf16_cold_eager"),
    "kernels_mlp_steps": ("03_kernels_mlp", (*MLP, "--steps", "4"), "mlp_b2_s4_16x32_bf16_cold_triton"),
    "naive_steps": ("04_attention", ("--variant", "naive", *ATTENTION, "--steps", "4"), "naive_b1_h2_s16_d8_bf16_cold"),
}

@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Every case, run once on the CPU; name -> its output folder, stdout, error and seconds."""
    return run_on_cpu(CASES, tmp_path_factory.mktemp("cpu_runs"), timeout=240)


def outputs(runs, name):
    """The case's trace and table, after checking that it ran and wrote exactly those."""
    stem, text = written(runs, CASES, name)
    trace = load_trace(stem.parent / f"{stem.name}.json")
    assert [s.name for s in trace.steps] == ["ProfilerStep#2", "ProfilerStep#3", "ProfilerStep#4"]
    return trace, parse_table(text)


def names(trace):
    return {e.name for e in trace.events}


def count(trace, name):
    return sum(e.name == name for e in trace.events)


def inside(trace, child, parent):
    """Whether some `child` event runs within some `parent` event on the same thread."""
    parents = [e for e in trace.events if e.name == parent]
    return any(
        c.tid == p.tid and p.ts <= c.ts and c.end <= p.end
        for c in trace.events if c.name == child for p in parents
    )


# --- Part 2 -----------------------------------------------------------------------------------


def test_linear_dispatches_to_addmm_through_a_transpose_view(runs):
    trace, table = outputs(runs, "linear")
    assert {"linear", "aten::linear", "aten::t", "aten::addmm"} <= names(trace)
    assert inside(trace, "aten::t", "aten::linear") and inside(trace, "aten::addmm", "aten::linear")
    assert table.row("aten::addmm")["# of Calls"] == "3"


def test_linear_names_dtype_and_warmup_in_its_outputs(runs):
    trace, _ = outputs(runs, "linear_fp32_warm")
    assert "aten::addmm" in names(trace)


def test_simple_mlp_runs_three_gemms_a_gelu_and_a_multiply(runs):
    trace, table = outputs(runs, "simple_mlp")
    assert {"mlp", "aten::linear", "aten::mm", "aten::gelu", "aten::mul"} <= names(trace)
    # A 3-d input: aten::linear goes through aten::matmul to aten::mm, once per projection.
    assert table.row("aten::mm")["# of Calls"] == "9"
    assert table.row("aten::gelu")["# of Calls"] == "3"


def test_kernels_mlp_falls_back_to_eager_gelu_on_the_cpu(runs):
    trace, table = outputs(runs, "kernels_mlp")
    assert "NOTE: no GPU, so no Triton kernel" in runs["kernels_mlp"]["stdout"]
    assert {"mlp", "gelu_mul", "aten::mm", "aten::gelu", "aten::mul"} <= names(trace)
    assert inside(trace, "aten::gelu", "gelu_mul") and inside(trace, "aten::mul", "gelu_mul")
    assert table.row("gelu_mul")["# of Calls"] == "3"


@pytest.mark.slow
@pytest.mark.skipif(not os.environ.get("SNIPPET_TESTS_COMPILE"),
                    reason="torch.compile on the CPU compiles C++: 12 s for the linear layer, 15 s for the "
                           "MLP; the GPU refresh runs the compiled examples (SNIPPET_TESTS_COMPILE=1 runs this)")
@pytest.mark.parametrize("snippet, args, stem", [
    ("02_linear", LINEAR, "linear_b4_8x16_bf16_cold_compile"),
    ("03_simple_mlp", MLP, "mlp_b2_s4_16x32_bf16_cold_compile"),
])
def test_compiled_variant_on_cpu(tmp_path, snippet, args, stem):
    done = subprocess.run(
        [sys.executable, str(SNIPPETS / f"{snippet}.py"), "--device", "cpu", "--trace_dir", str(tmp_path),
         "--compile", *args],
        capture_output=True, text=True, timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    table = parse_table((tmp_path / f"{stem}.txt").read_text())
    assert table.row("Torch-Compiled Region: 0/0")["# of Calls"] == "3"


@pytest.mark.gpu
@pytest.mark.skipif(not freeze.gpu_available(), reason="needs a CUDA GPU and Triton")
def test_triton_kernel_matches_eager_on_the_gpu(tmp_path):
    # 2 * 3 * 100 elements: not a multiple of the kernel's block, so the masked tail is checked.
    done = subprocess.run(
        [sys.executable, str(SNIPPETS / "03_kernels_mlp.py"), "--batch", "2", "--seq", "3", "--dim", "64",
         "--hidden", "100", "--trace_dir", str(tmp_path)],
        capture_output=True, text=True, timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "matches the eager MLP" in done.stdout
    trace = load_trace(tmp_path / "mlp_b2_s3_64x100_bf16_cold_triton.json")
    assert any(k.name == "gelu_tanh_mul_kernel" for k in trace.kernels)


# --- Part 3 -----------------------------------------------------------------------------------


def test_naive_attention_copies_the_scores_before_masking(runs):
    trace, table = outputs(runs, "naive")
    assert {"attention", "aten::bmm", "aten::masked_fill", "aten::softmax"} <= names(trace)
    # The out-of-place masked_fill is a clone (the hidden copy) and an in-place fill of it.
    assert inside(trace, "aten::clone", "aten::masked_fill")
    assert inside(trace, "aten::masked_fill_", "aten::masked_fill")
    assert table.row("aten::masked_fill")["# of Calls"] == "3"


def test_inplace_attention_fills_the_scores_where_they_are(runs):
    trace, _ = outputs(runs, "inplace")
    assert {"attention", "aten::bmm", "aten::masked_fill_", "aten::softmax"} <= names(trace)
    assert not {"aten::masked_fill", "aten::clone"} & names(trace)
    assert count(trace, "aten::masked_fill_") == 3


def test_sdpa_math_backend_rebuilds_the_causal_mask_each_call(runs):
    trace, _ = outputs(runs, "sdpa_math")
    assert {"aten::scaled_dot_product_attention", "aten::_scaled_dot_product_attention_math"} <= names(trace)
    assert count(trace, "aten::tril") == 3  # once per call, inside the op
    assert inside(trace, "aten::tril", "aten::_scaled_dot_product_attention_math")
    naive, _ = outputs(runs, "naive")
    assert count(naive, "aten::tril") == 0  # the naive mask is built once, before profiling


@pytest.mark.parametrize("backend", ["flash", "efficient", "cudnn"])
def test_sdpa_backend_runs_or_says_why_not(runs, backend):
    """The contract: a trace and a table, or only `{stem}.unavailable` holding one line."""
    name, stem = f"sdpa_{backend}", CASES[f"sdpa_{backend}"][2]
    result = runs[name]
    assert not result["error"], result["error"]
    unavailable = result["dir"] / f"{stem}.unavailable"
    if not unavailable.exists():
        if backend in ("efficient", "cudnn"):
            pytest.fail(f"{backend} has no CPU implementation, yet it ran")
        trace, _ = outputs(runs, name)  # flash has a CPU implementation
        assert "aten::scaled_dot_product_attention" in names(trace)
        return
    assert [p.name for p in result["dir"].iterdir()] == [unavailable.name]
    reason = unavailable.read_text()
    assert reason.endswith("\n") and reason.count("\n") == 1 and reason.strip()
    assert "Triggered internally" not in reason


def test_unavailable_backend_exits_zero_from_the_command_line(tmp_path):
    # Fast: the refusal comes before the profiler starts.
    done = subprocess.run(
        [sys.executable, str(SNIPPETS / "04_attention.py"), "--device", "cpu", "--trace_dir", str(tmp_path),
         "--variant", "sdpa", "--backend", "cudnn", *ATTENTION],
        capture_output=True, text=True, timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "BACKEND UNAVAILABLE" in done.stderr
    assert [p.name for p in tmp_path.iterdir()] == ["sdpa_cudnn_b1_h2_s16_d8_bf16_cold.unavailable"]


def test_backend_is_refused_for_the_hand_written_variants():
    done = subprocess.run(
        [sys.executable, str(SNIPPETS / "04_attention.py"), "--variant", "naive", "--backend", "flash"],
        capture_output=True, text=True, timeout=120,
    )
    assert done.returncode == 2 and "--backend applies to --variant sdpa only" in done.stderr


@pytest.mark.parametrize("name, steps", [("simple_mlp_steps", 5), ("kernels_mlp_steps", 4), ("naive_steps", 4)])
def test_steps_records_that_many_steps_under_the_same_names(runs, name, steps):
    stem, _ = written(runs, CASES, name)
    trace = load_trace(stem.parent / f"{stem.name}.json")
    assert [s.name for s in trace.steps] == [f"ProfilerStep#{n}" for n in range(2, 2 + steps)]


@pytest.mark.parametrize("snippet", ["03_simple_mlp", "03_kernels_mlp", "04_attention"])
def test_steps_must_be_positive(snippet):
    done = subprocess.run([sys.executable, str(SNIPPETS / f"{snippet}.py"), "--steps", "0"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and done.stderr.strip().splitlines()[-1].endswith("--steps must be positive")
