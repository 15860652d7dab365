"""Part 4's LLM inference snippet and the matmul+add sweep run on the CPU at a small size.

The profiled runs share one subprocess (tests/snippet_runs.py), which loads each snippet and calls
its main() with one case's arguments: torch, transformers and the profiler's first start are paid
once (about 10 s on two cores), each tiny run then takes a second.
The LLM runs use the catalog's arguments for their example (so their outputs carry the catalog's
names) on a Llama-style model small enough for the CPU.

Checks that need no profiler (the output names of every catalog example, refused flag
combinations, static against dynamic KV cache on the same prompt) import the snippets here.

torch.compile is not run by default: on the CPU it generates and compiles C++, about 25 s for the
tiny decoder; the GPU refresh runs every compiled example, and SNIPPET_TESTS_COMPILE=1 runs them
here too. The sweep's rule that compile and graph run only up to --fast_upto is checked without
compiling, with torch.compile standing in as the identity; CUDA graphs only on a GPU.
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys

import pytest

from scripts.series.runs import catalog, freeze
from scripts.tracefacts.pictures.profiler_table import parse_table
from scripts.tracefacts.model.trace import load_trace
from tests.conftest import ROOT
from tests.snippet_runs import run_on_cpu, written

torch = pytest.importorskip("torch")

SNIPPETS = ROOT / "snippets"
HAVE_TRANSFORMERS = importlib.util.find_spec("transformers") is not None
needs_transformers = pytest.mark.skipif(not HAVE_TRANSFORMERS,
                                        reason="transformers is not installed (the test extra pins it)")
needs_compile = pytest.mark.skipif(
    not os.environ.get("SNIPPET_TESTS_COMPILE"),
    reason="torch.compile on the CPU compiles C++: about 25 s for the tiny decoder, 10 s for the sweep; the GPU "
           "refresh runs the compiled examples (SNIPPET_TESTS_COMPILE=1 runs this)")
needs_gpu = pytest.mark.skipif(not freeze.gpu_available(), reason="needs a CUDA GPU")

# A Llama-style decoder of 2 layers, 64 wide, 4 query heads sharing 2 KV heads (grouped-query
# attention, as in Llama 3), over a 256-token vocabulary; a 16-token prompt.
TINY = ("--layers", "2", "--hidden", "64", "--intermediate", "128", "--heads", "4", "--kv_heads", "2",
        "--vocab", "256")
PROMPT = 16
LAYERS = 2
SHARPEN = 8  # attention scores of order 1 to 10 instead of 0.1 (see the static-cache test)


def llm(phase, batches=(1,), *, static=False, compiled=False, tokens=3):
    """The catalog's example for these arguments, shrunk: (snippet, arguments, the stem it must write)."""
    example = catalog._llm(phase, batches, PROMPT, static=static, compiled=compiled, tokens=tokens)
    return example.snippet, (*example.args, *TINY), example.tag


SWEEP = ("--sizes", "16,32", "--modes", "eager", "--steps", "3", "--peak_size", "32")
FAST_UPTO = ("--sizes", "16,32", "--modes", "eager,compile", "--fast_upto", "16", "--steps", "2",
             "--peak_size", "16", "--peak_steps", "2", "--dtype", "fp32")

# name -> (snippet, arguments, the output stem the snippet must choose)
LLM_CASES = {
    "prefill": llm("prefill", tokens=2),
    "decode": llm("decode"),
    "decode_static": llm("decode", static=True, tokens=2),
    "decode_batches": llm("decode", (1, 3), tokens=2),
}
SWEEP_CASES = {
    "sweep": ("01_matmul_add_sweep", SWEEP, "sweep_bf16_16-32"),
    "sweep_fast_upto": ("01_matmul_add_sweep", FAST_UPTO, "sweep_fp32_16-32"),
}
CASES = {**(LLM_CASES if HAVE_TRANSFORMERS else {}), **SWEEP_CASES}
IDENTITY_COMPILE = frozenset({"sweep_fast_upto"})  # torch.compile(fn) returns fn: the blocks, not Inductor, are tested


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Every case, run once on the CPU; name -> its output folder, stdout, error and seconds."""
    return run_on_cpu(CASES, tmp_path_factory.mktemp("cpu_runs_part4"), timeout=300,
                      identity_compile=IDENTITY_COMPILE)


def outputs(runs, name):
    """The case's trace, table and report text, after checking that it ran, wrote exactly those,
    and printed the report and where it wrote it."""
    stem, text = written(runs, CASES, name)
    assert runs[name]["stdout"] == text + f"wrote {stem}.json and .txt\n"
    return load_trace(stem.parent / f"{stem.name}.json"), parse_table(text), text


def load_snippet(stem):
    """A snippet as a module (its file name starts with a digit, so no plain import)."""
    spec = importlib.util.spec_from_file_location(f"snippet_{stem}", SNIPPETS / f"{stem}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def llm_snippet():
    pytest.importorskip("transformers")
    return load_snippet("05_llm_inference")


@pytest.fixture(scope="module")
def sweep_snippet():
    return load_snippet("01_matmul_add_sweep")


def annotations(trace, name=None):
    """The host's record_function ranges (a GPU run also has their device copies), in time order."""
    found = [e for e in trace.events if e.kind == "annotation" and (name is None or e.name == name)]
    return sorted(found, key=lambda e: e.ts)


def within(trace, parent, name=None, kind=None):
    """Events on the parent's thread that lie inside it."""
    return [e for e in trace.events
            if e is not parent and e.tid == parent.tid and parent.ts <= e.ts and e.end <= parent.end
            and (name is None or e.name == name) and (kind is None or e.kind == kind)]


def count(trace, name):
    return sum(e.name == name for e in trace.events)


def count_in(trace, step, name):
    """Events named `name` on any host thread that start inside the step."""
    return sum(e.name == name and step.ts <= e.ts < step.end for e in trace.events)


# --- LLM inference: output names and refused flags ----------------------------------------------


@needs_transformers
def test_every_part4_example_is_named_as_the_catalog_says(llm_snippet, sweep_snippet):
    for example in catalog.PART4:
        assert llm_snippet.output_stem(llm_snippet.parse_args(list(example.args))) == example.tag
    for example in catalog.SWEEP:
        assert sweep_snippet.output_stem(sweep_snippet.parse_args(list(example.args))) == example.tag


@needs_transformers
@pytest.mark.parametrize("argv, message", [
    (["--compile"], "--compile needs --cache static"),
    (["--phase", "decode", "--cache", "dynamic", "--compile"], "--compile needs --cache static"),
    (["--phase", "prefill", "--cache", "static", "--compile"], "--compile applies to --phase decode"),
    (["--cache", "paged"], "invalid choice: 'paged'"),
    (["--batch", "1,1"], "--batch takes distinct positive sizes"),
    (["--batch", "0"], "--batch takes distinct positive sizes"),
    (["--tokens", "0"], "--tokens and --prompt must be positive"),
    (["--attention", "sparse"], "invalid choice: 'sparse'"),
])
def test_llm_refuses_flag_combinations_it_cannot_run(llm_snippet, capsys, argv, message):
    with pytest.raises(SystemExit) as refused:
        llm_snippet.parse_args(argv)
    assert refused.value.code == 2  # argparse's usage error, before any model is built
    err = capsys.readouterr().err
    assert err.startswith("usage: ") and message in err


# --- LLM inference: the profiled runs -----------------------------------------------------------

RATE_HEADER = re.compile(r"^ +batch +ms per step +(prompt|new) tokens/s$")
RATE = re.compile(r"^ +(\d+) +(\d+\.\d\d) +(\d{1,3}(?:,\d{3})*)$")


def rates(text, batches, unit):
    """The tokens-per-second lines that end the report: batch -> (ms per step, tokens per second)."""
    lines = text.splitlines()
    assert text.endswith("\n") and lines[-len(batches) - 1 - 1] == ""  # a blank line after the table
    header, *rows = lines[-len(batches) - 1:]
    assert RATE_HEADER.match(header) and header.endswith(f" {unit}"), header
    parsed = {}
    for row in rows:
        match = RATE.match(row)
        assert match, row
        parsed[int(match[1])] = (float(match[2]), int(match[3].replace(",", "")))
    assert list(parsed) == list(batches)  # one line per batch size, in the order given
    return parsed


def check_rates(text, batches, tokens_per_step):
    unit = "prompt tokens/s" if tokens_per_step > 1 else "new tokens/s"
    for batch, (ms, per_second) in rates(text, batches, unit).items():
        assert ms > 0
        expected = batch * tokens_per_step / (ms / 1e3)  # both printed rounded
        assert abs(per_second - expected) <= 1 + 0.01 * expected, (batch, ms, per_second)


def check_steps(trace, phase, batches, tokens, op="aten::scaled_dot_product_attention"):
    """One `{phase} b=N` annotation in each profiled step, batch after batch, and none outside; the
    model's `op` inside each (None for a compiled model, whose operators run inside its graph)."""
    steps = trace.steps
    assert [s.name for s in steps] == [f"ProfilerStep#{i}" for i in range(1, len(batches) * tokens + 1)]
    expected = [f"{phase} b={b}" for b in batches for _ in range(tokens)]
    assert [e.name for e in annotations(trace) if not e.name.startswith("ProfilerStep")] == expected
    for step, name in zip(steps, expected):
        inner = within(trace, step, kind="annotation")
        assert [e.name for e in inner] == [name], step.name
        assert op is None or within(trace, inner[0], op), step.name


@needs_transformers
def test_prefill_runs_the_whole_prompt_once_per_step(runs):
    trace, table, text = outputs(runs, "prefill")
    check_steps(trace, "prefill", [1], 2)
    assert table.row("prefill b=1")["# of Calls"] == "2"
    assert "decode b=1" not in table.column("Name")
    check_rates(text, [1], PROMPT)


@needs_transformers
def test_decode_runs_one_token_per_step_after_an_unprofiled_prefill(runs):
    trace, table, text = outputs(runs, "decode")
    check_steps(trace, "decode", [1], 3)
    assert table.row("decode b=1")["# of Calls"] == "3"
    assert count(trace, "prefill b=1") == 0  # the prefill and the warm-up tokens ran before profiling
    assert count(trace, "aten::index_copy_") == 0  # the dynamic cache grows by concatenation
    check_rates(text, [1], 1)


@needs_transformers
def test_static_cache_decode_writes_each_token_in_place(runs):
    trace, _, text = outputs(runs, "decode_static")
    check_steps(trace, "decode", [1], 2)
    # A key and a value per layer per token, copied into the cache allocated before profiling.
    assert count(trace, "aten::index_copy_") == 2 * LAYERS * 2
    check_rates(text, [1], 1)


@needs_transformers
def test_batch_list_puts_every_batch_size_in_one_trace(runs):
    trace, table, text = outputs(runs, "decode_batches")
    check_steps(trace, "decode", [1, 3], 2)
    assert table.row("decode b=1")["# of Calls"] == table.row("decode b=3")["# of Calls"] == "2"
    check_rates(text, [1, 3], 1)


@needs_transformers
def test_static_cache_decodes_the_same_greedy_tokens_as_the_dynamic_cache(llm_snippet):
    """The snippet's Generation with each cache, on one model and prompt: the same tokens, which are
    also what a forward pass over the whole sequence without a cache picks at each position.

    In fp32: in bf16 this random tiny model's top two logits are often one rounding step apart (an
    exact tie in one prompt of twenty), so a summation order that differs between the caches could
    flip a token on another CPU; in fp32 the gaps are thousands of rounding steps. The query and key
    projections are scaled up: at their initial scale every attention score is near 0, attention is
    a plain average whatever the positions, and a decode at the wrong position would go unseen."""
    snippet, device, batch, new_tokens = llm_snippet, torch.device("cpu"), 2, 5
    base = ["--phase", "decode", "--prompt", str(PROMPT), "--tokens", "3", "--device", "cpu", *TINY]
    with torch.random.fork_rng(), torch.inference_mode():
        torch.manual_seed(0)
        model = snippet.build_model(snippet.parse_args(base), device).float()
        for layer in model.model.layers:
            layer.self_attn.q_proj.weight.mul_(SHARPEN)
            layer.self_attn.k_proj.weight.mul_(SHARPEN)
        generated, prompts, lengths = {}, {}, {}
        for cache in ("dynamic", "static"):
            args = snippet.parse_args([*base, "--cache", cache])
            torch.manual_seed(1)  # the same prompt for both
            generation = snippet.Generation(model, model.forward, batch, args, device)
            tokens = [generation.prefill()] + [generation.decode() for _ in range(new_tokens)]
            generated[cache], prompts[cache] = torch.cat(tokens, dim=1), generation.prompt
            lengths[cache] = int(generation.cache.get_seq_length())
        assert type(generation.cache).__name__ == "StaticCache"
        assert torch.equal(prompts["dynamic"], prompts["static"])
        assert generated["dynamic"].shape == (batch, 1 + new_tokens)
        assert torch.equal(generated["static"], generated["dynamic"])
        assert lengths == {"dynamic": PROMPT + new_tokens, "static": PROMPT + new_tokens}

        whole = torch.cat([prompts["dynamic"], generated["dynamic"][:, :-1]], dim=1)
        logits = model(input_ids=whole, use_cache=False).logits[:, PROMPT - 1:]
        assert torch.equal(logits.argmax(-1), generated["dynamic"])


# --- The matmul+add sweep -----------------------------------------------------------------------

SUMMARY = re.compile(r"^ *(\S+ n=\d+) +(\d+\.\d) +(\d+\.\d) +(\d+\.\d\d) +(-|\d+\.\d%)$")


def summary(text):
    """The per-block lines under the table: label -> (CPU us/step, wall us/step, TFLOP/s, of peak)."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("peak: "))
    peak, header, *rows = lines[start:]
    assert header.split() == ["block", "CPU", "us/step", "wall", "us/step", "TFLOP/s", "of", "peak"]
    parsed = {}
    for row in rows:
        match = SUMMARY.match(row)
        assert match, row
        parsed[match[1]] = (float(match[2]), float(match[3]), float(match[4]), match[5])
    return peak, parsed


def check_blocks(trace, labels, steps, peak, peak_steps=20):
    """The peak block, then each (mode, size) block in order, each holding `steps` step annotations
    (an eager step runs the function's two operators); everything in the one profiled step."""
    assert [s.name for s in trace.steps] == ["ProfilerStep#1"]
    blocks = [e for e in annotations(trace) if e.name != "step" and not e.name.startswith("ProfilerStep")]
    assert [e.name for e in blocks] == [f"peak n={peak}", *labels]
    assert len(within(trace, blocks[0], "aten::matmul")) == peak_steps
    for block in blocks[1:]:
        inner = within(trace, block, "step", kind="annotation")
        assert len(inner) == steps, block.name
        for step in inner if block.name.startswith("eager ") else ():
            assert within(trace, step, "aten::matmul") and within(trace, step, "aten::add"), block.name
    assert len(annotations(trace, "step")) == steps * len(labels)  # none outside the blocks


def test_sweep_runs_each_size_in_its_own_block(runs):
    trace, table, text = outputs(runs, "sweep")
    check_blocks(trace, ["eager n=16", "eager n=32"], 3, 32)
    assert table.row("step")["# of Calls"] == "6"
    peak, blocks = summary(text)
    assert re.fullmatch(r"peak: [\d.e+-]+ TFLOP/s \(bf16 matmul n=32 on cpu, host clock\)", peak), peak
    assert list(blocks) == ["eager n=16", "eager n=32"]
    for label, (launch, wall, _, share) in blocks.items():
        assert 0 < launch <= wall and share.endswith("%"), label


def test_sweep_compiles_only_up_to_fast_upto(runs):
    trace, _, text = outputs(runs, "sweep_fast_upto")
    labels = ["eager n=16", "compile n=16", "eager n=32"]  # no compile n=32: above --fast_upto 16
    check_blocks(trace, labels, 2, 16, peak_steps=2)
    assert list(summary(text)[1]) == labels


@pytest.mark.parametrize("argv, message", [
    (["--modes", "graph", "--device", "cpu"], "--modes graph needs a CUDA device"),
    (["--modes", "eager,graph", "--device", "cpu"], "--modes graph needs a CUDA device"),
    (["--modes", "eager,fast"], "unknown mode(s): fast"),
    (["--modes", "jit,eager,aot"], "unknown mode(s): aot, jit"),
    (["--modes", "graph", "--device", "cpu:0"], "--modes graph needs a CUDA device"),
    (["--modes", "eager,eager"], "--sizes and --modes take each value once"),
    (["--sizes", "16,16"], "--sizes and --modes take each value once"),
    (["--steps", "0"], "must be positive"),
    (["--modes", "compile", "--sizes", "4096,8192"], "nothing to run"),
    (["--modes", "eager,compile", "--fast_upto", "8192"], "compile at most 8 sizes"),
])
def test_sweep_refuses_modes_it_cannot_run(sweep_snippet, capsys, argv, message):
    with pytest.raises(SystemExit) as refused:
        sweep_snippet.parse_args(argv)
    assert refused.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: ") and message in err


# --- Compiled and GPU runs ----------------------------------------------------------------------


def run_cli(snippet, out, *args, timeout=600):
    done = subprocess.run(
        [sys.executable, str(SNIPPETS / f"{snippet}.py"), "--trace_dir", str(out), *args],
        capture_output=True, text=True, timeout=timeout,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done


@pytest.mark.slow
@needs_transformers
@needs_compile
def test_compiled_static_decode_on_cpu(tmp_path):
    snippet, args, stem = llm("decode", static=True, compiled=True)
    run_cli(snippet, tmp_path, "--device", "cpu", *args)
    trace, table = load_trace(tmp_path / f"{stem}.json"), parse_table((tmp_path / f"{stem}.txt").read_text())
    check_steps(trace, "decode", [1], 3, op=None)
    # Compiled during the warm-up tokens: each profiled token is one call of the one graph.
    assert table.row("Torch-Compiled Region: 0/0")["# of Calls"] == "3"
    assert not any(name.startswith("Torch-Compiled Region: 0/1") for name in table.column("Name"))


@pytest.mark.slow
@needs_compile
def test_compiled_sweep_on_cpu(tmp_path):
    run_cli("01_matmul_add_sweep", tmp_path, "--device", "cpu", "--sizes", "16,32", "--modes", "eager,compile",
            "--fast_upto", "16", "--steps", "3", "--peak_size", "32")
    trace = load_trace(tmp_path / "sweep_bf16_16-32.json")
    check_blocks(trace, ["eager n=16", "compile n=16", "eager n=32"], 3, 32)
    block = annotations(trace, "compile n=16")[0]
    assert len(within(trace, block, "Torch-Compiled Region: 0/0")) == 3


@pytest.mark.gpu
@needs_gpu
def test_sweep_on_the_gpu_replays_one_graph_per_step(tmp_path):
    run_cli("01_matmul_add_sweep", tmp_path, "--sizes", "16,32,64", "--fast_upto", "32", "--steps", "3",
            "--peak_size", "1024", "--peak_steps", "5", timeout=900)
    trace, text = load_trace(tmp_path / "sweep_bf16_16-64.json"), (tmp_path / "sweep_bf16_16-64.txt").read_text()
    labels = ["eager n=16", "compile n=16", "graph n=16", "eager n=32", "compile n=32", "graph n=32", "eager n=64"]
    check_blocks(trace, labels, 3, 1024, peak_steps=5)
    for label in ("graph n=16", "graph n=32"):
        assert len(within(trace, annotations(trace, label)[0], "cudaGraphLaunch")) == 3, label
    peak, blocks = summary(text)
    assert re.fullmatch(r"peak: [\d.e+-]+ TFLOP/s \(bf16 matmul n=1024 on cuda, host clock\)", peak), peak
    assert list(blocks) == labels and all(share.endswith("%") for *_, share in blocks.values())


@pytest.mark.gpu
@needs_transformers
@needs_gpu
def test_compiled_decode_on_the_gpu_replays_one_cuda_graph_per_token(tmp_path):
    snippet, args, stem = llm("decode", (1, 4), static=True, compiled=True)
    run_cli(snippet, tmp_path, *args, timeout=900)
    trace = load_trace(tmp_path / f"{stem}.json")
    check_steps(trace, "decode", [1, 4], 3, op=None)
    for step in trace.steps:
        assert count_in(trace, step, "cudaGraphLaunch") == 1, step.name
    check_rates((tmp_path / f"{stem}.txt").read_text(), [1, 4], 1)
