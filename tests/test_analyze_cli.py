"""scripts/analyze.py: runs as a file and as a module, prints text or JSON, writes timelines, and
answers a bad file with exit status 2 and one line."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

import pytest

from scripts import analyze
from scripts.analysis import facts
from scripts.trace import load_trace
from tests.fixtures.handmade import two_steps
from tests.fixtures.synth import Spec, synth_trace, write_trace

ROOT = Path(__file__).resolve().parents[1]
CPU_TRACE = Path(__file__).parent / "fixtures" / "torch_cpu_stack.json.gz"


def run(*args: str, cwd: Path, module: bool = False) -> subprocess.CompletedProcess:
    entry = ["-m", "scripts.analyze"] if module else [str(ROOT / "scripts" / "analyze.py")]
    return subprocess.run([sys.executable, *entry, *args], cwd=cwd, capture_output=True,
                          text=True, timeout=120)


@pytest.fixture(scope="module")
def gpu_trace(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("traces")
    return write_trace(synth_trace(Spec(steps=3, ops_per_step=50, streams=(7, 20), nccl_every=7)),
                       folder / "synthetic_gpu.json.gz")


@pytest.fixture(scope="module")
def handmade_trace(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("handmade") / "two_steps.json"
    path.write_text(json.dumps(two_steps()))
    return path


def test_runs_as_a_file_from_anywhere(gpu_trace, tmp_path):
    done = run(str(gpu_trace), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "verdict:" in done.stdout and "per ProfilerStep:" in done.stdout
    assert done.stderr == ""


def test_runs_as_a_module_with_json_lines(gpu_trace, handmade_trace):
    done = run(str(gpu_trace), str(handmade_trace), "--json", cwd=ROOT, module=True)
    assert done.returncode == 0, done.stderr
    first, second = (json.loads(line) for line in done.stdout.splitlines())
    assert first["source"] == str(gpu_trace) and second["source"] == str(handmade_trace)
    assert first["window"]["label"] == "whole trace"
    assert [s["label"] for s in second["steps"]] == ["ProfilerStep#1", "ProfilerStep#2"]
    assert second["window"]["window_busy_pct"] == 42.5
    assert set(first["window"]["verdict"]) == {"label", "reason"}


def test_step_and_window_pick_what_is_described(handmade_trace, tmp_path):
    step = json.loads(run(str(handmade_trace), "--json", "--step", "2", cwd=tmp_path).stdout)
    assert step["window"]["label"] == "ProfilerStep#2"
    window = json.loads(run(str(handmade_trace), "--json", "--window", "0:100", cwd=tmp_path).stdout)
    assert (window["window"]["start_us"], window["window"]["end_us"]) == (0, 100)


def test_cpu_only_trace_says_there_is_no_gpu_activity(tmp_path):
    done = run(str(CPU_TRACE), cwd=tmp_path)
    assert done.returncode == 0 and "no GPU activity" in done.stdout and "CPU busy" in done.stdout


def write_truncated_gzip(path: Path) -> None:
    data = gzip.compress(json.dumps(two_steps()).encode())
    path.write_bytes(data[:-40])


BAD_INPUTS = {
    "missing.json": None,
    "folder.json": lambda p: p.mkdir(),
    "notes.json": lambda p: p.write_text("these are notes, not JSON"),
    "config.json": lambda p: p.write_text('{"lr": 0.1}'),
    "cut.json": lambda p: p.write_text(json.dumps(two_steps())[:-30]),
    "cut.json.gz": write_truncated_gzip,
    "image.json": lambda p: p.write_bytes(bytes(range(256))),
}


@pytest.mark.parametrize("name", sorted(BAD_INPUTS))
def test_bad_input_exits_2_with_one_line(tmp_path, name):
    path = tmp_path / name
    if BAD_INPUTS[name]:
        BAD_INPUTS[name](path)
    done = run(str(path), cwd=tmp_path)
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.count("\n") == 1 and done.stderr.startswith(f"error: {path}: ")
    assert "Traceback" not in done.stderr


def test_a_bad_file_does_not_stop_the_others(tmp_path, handmade_trace):
    missing = tmp_path / "missing.json.gz"
    done = run(str(missing), str(handmade_trace), "--json", cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr == f"error: {missing}: no such file\n"
    assert json.loads(done.stdout)["source"] == str(handmade_trace)


def test_missing_step_is_a_one_line_error(handmade_trace, tmp_path):
    done = run(str(handmade_trace), "--step", "9", cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr == f"error: {handmade_trace}: no ProfilerStep#9 (steps: 1, 2)\n"


def test_svg_for_one_trace_and_for_several(gpu_trace, handmade_trace, tmp_path):
    one = tmp_path / "one.svg"
    assert run(str(gpu_trace), "--svg", str(one), cwd=tmp_path).returncode == 0
    assert one.read_text().lstrip().startswith("<svg")
    folder = tmp_path / "many"
    done = run(str(gpu_trace), str(handmade_trace), "--svg", str(folder), "--step", "2", cwd=tmp_path)
    assert done.returncode == 0, done.stderr  # both traces have a ProfilerStep#2
    assert sorted(p.name for p in folder.iterdir()) == ["synthetic_gpu.svg", "two_steps.svg"]


def test_svg_names_do_not_clash():
    paths = analyze._svg_paths(Path("out"), [Path("a/t.json"), Path("b/t.json.gz"), Path("c.json")])
    assert [p.name for p in paths.values()] == ["t.svg", "t-2.svg", "c.svg"]


def test_progress_only_on_a_terminal_for_large_files(gpu_trace, monkeypatch, capsys):
    assert analyze._progress_printer(gpu_trace) is None  # pytest's stderr is not a terminal
    monkeypatch.setattr(analyze, "PROGRESS_MIN_BYTES", 1)
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    assert analyze.main([str(gpu_trace), "--json"]) == 0
    err = capsys.readouterr().err
    assert "reading synthetic_gpu.json.gz: 100%\n" in err


@pytest.mark.parametrize("which", ["cpu", "gpu"])
def test_json_facts_are_those_of_a_full_load(which, gpu_trace, tmp_path):
    """Without --svg the CLI loads only what the facts read: it must not change them."""
    path = CPU_TRACE if which == "cpu" else gpu_trace
    done = run(str(path), "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    expected = json.loads(json.dumps(facts(load_trace(path)).to_dict()))
    assert json.loads(done.stdout) == expected


def test_blocks_gives_the_sweep_per_block(tmp_path):
    from scripts import blocks, catalog

    trace = catalog.get("01_matmul_add_sweep/sweep_bf16_16-8192").trace_path
    done = run(str(trace), "--blocks", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    sweep = blocks.sweep(load_trace(trace))
    assert f"sweep: peak {sweep.peak_tflops:.0f} TFLOP/s" in done.stdout
    lines = [line for line in done.stdout.splitlines() if line.strip().startswith(("eager n=", "compile n=", "graph n="))]
    assert len(lines) == len(sweep.points)
    eager64 = next(line for line in lines if line.split()[:2] == ["eager", "n=64"])
    assert f"{sweep.point('eager', 64).cpu_us_per_step:.1f}us" in eager64


def test_blocks_gives_llm_steps_per_batch_in_json(tmp_path):
    from scripts import catalog

    trace = catalog.get("05_llm_inference/decode_b1-8-64-256-1024-2048_p128_static_compile").trace_path
    done = run(str(trace), "--blocks", "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    steps = json.loads(done.stdout)["blocks"]["steps"]
    assert [s["batch"] for s in steps] == [1, 8, 64, 256, 1024, 2048]
    assert {s["phase"] for s in steps} == {"decode"}


def test_blocks_on_a_trace_without_blocks_is_one_line_error(handmade_trace, tmp_path):
    done = run(str(handmade_trace), "--blocks", cwd=tmp_path)
    assert done.returncode == analyze.EXIT_BAD_INPUT
    assert done.stderr.count("\n") == 1 and "no labelled blocks" in done.stderr
