"""scripts/analyze.py: runs as a file and as a module, prints text or JSON, writes timelines, and
answers a bad file with exit status 2 and one line."""

from __future__ import annotations

import gzip
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from scripts.tracefacts.facts.recording import recording_facts

from scripts.tracefacts.entry import cli as analyze
from scripts.tracefacts.facts.analysis import facts
from scripts.tracefacts.model.trace import load_trace
from tests.fixtures.handmade import two_steps
from tests.fixtures.synth import Spec, synth_trace, write_trace

ROOT = Path(__file__).resolve().parents[1]
CPU_TRACE = Path(__file__).parent / "fixtures" / "torch_cpu_stack.json.gz"


def run(*args: str, cwd: Path, module: bool = False, **options) -> subprocess.CompletedProcess:
    entry = ["-m", "scripts.analyze"] if module else [str(ROOT / "scripts" / "analyze.py")]
    options = {"capture_output": True, "text": True, "timeout": 120, **options}
    return subprocess.run([sys.executable, *entry, *args], cwd=cwd, **options)


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
    out = json.loads(done.stdout)
    assert {key: out[key] for key in expected} == expected
    # The CPU trace has stacks, the synthetic one a cudaDeviceSynchronize that drains the GPU's
    # queue every step: their sections come after the facts (tests/test_analyze_details.py,
    # tests/test_syncs.py). How the trace was recorded comes with every trace
    # (scripts/tracefacts/facts/recording.py): its warnings are those of a full load (the lean one
    # may leave CPU ops' tracks unchecked).
    assert set(out) - set(expected) == ({"ops", "recording"} if which == "cpu" else {"host_syncs", "recording"})
    full = json.loads(json.dumps(recording_facts(load_trace(path)).to_dict()))
    assert out["recording"]["warnings"] == full["warnings"]
    assert out["recording"]["perfetto"]["dropped"] == full["perfetto"]["dropped"]


def test_blocks_gives_the_sweep_per_block(tmp_path):
    from scripts.tracefacts.facts import blocks
    from scripts.series.runs import catalog

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
    from scripts.series.runs import catalog

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


# --- no traceback, whatever the input, the terminal or the pipe (issue 15) ---------------------

STRANGE_KERNEL = "K\ud800\x1b[31mRED\x9b\x07\u202e"  # lone surrogate, ESC, CSI (C1), BEL, bidi


def one_line_error(done: subprocess.CompletedProcess, status: int = analyze.EXIT_BAD_INPUT) -> str:
    """The one stderr line of a run that had to refuse; checks there is nothing else."""
    out, err = (x if isinstance(x, str) else (x or b"").decode("ascii", "backslashreplace")
                for x in (done.stdout, done.stderr))
    assert "Traceback" not in out + err, err
    assert done.returncode == status, err
    assert err.count("\n") == 1 and err.endswith("\n"), err
    return err


def strict_json(text: str):
    def refuse(constant: str):
        raise ValueError(f"not JSON: {constant}")
    return json.loads(text, parse_constant=refuse)


def json_strings(value):
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from json_strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from json_strings(item)


@pytest.fixture(scope="module")
def strange_trace(tmp_path_factory) -> Path:
    trace = two_steps()
    for event in trace["traceEvents"]:
        if event["cat"] == "kernel":
            event["name"] = STRANGE_KERNEL
    path = tmp_path_factory.mktemp("strange") / "strange.json"
    path.write_text(json.dumps(trace))  # ensure_ascii: the surrogate is a \ud800 escape
    assert "\\ud800" in path.read_text()
    return path


def test_names_with_surrogates_and_control_characters_print_escaped(strange_trace, tmp_path):
    done = run(str(strange_trace), cwd=tmp_path, text=False)
    assert done.returncode == 0 and done.stderr == b"", done.stderr
    out = done.stdout.decode("utf-8")  # valid UTF-8: the surrogate did not go out raw
    line = next(line for line in out.splitlines() if line.endswith("RED\\x9b\\x07\\u202e"))
    assert line.split()[-1] == "K\\ud800\\x1b[31mRED\\x9b\\x07\\u202e"
    # Nothing of the trace reaches the terminal as a control character.
    assert not [c for c in out if (ord(c) < 32 and c not in "\n") or 0x7F <= ord(c) < 0xA0]


def test_json_keeps_such_names_exactly(strange_trace, tmp_path):
    done = run(str(strange_trace), "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.isascii()
    assert STRANGE_KERNEL in set(json_strings(strict_json(done.stdout)))


def test_an_ascii_terminal_gets_ascii_stand_ins(handmade_trace, strange_trace, tmp_path):
    loaded = load_trace(handmade_trace)
    expected = analyze.summary_text(facts(loaded), recording_facts(loaded))
    assert "·" in expected  # what an ASCII terminal cannot show
    env = dict(os.environ, PYTHONIOENCODING="ascii")
    done = run(str(handmade_trace), cwd=tmp_path, text=False, env=env)
    assert done.returncode == 0 and done.stderr == b"", done.stderr
    assert done.stdout.isascii()
    lines = done.stdout.decode().splitlines()
    assert len(lines) == len(expected.splitlines())
    assert lines == [line.replace("·", "|").replace("…", "...") for line in expected.splitlines()]
    done = run(str(strange_trace), cwd=tmp_path, text=False, env=env)
    assert done.returncode == 0 and done.stdout.isascii() and b"K\\ud800\\x1b[31m" in done.stdout


def test_a_file_name_with_control_characters_and_undecodable_bytes(handmade_trace, tmp_path):
    path = tmp_path / os.fsdecode(b"\x1b]0;title\x07\xff.json")
    path.write_bytes(handmade_trace.read_bytes())
    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "analyze.py"), os.fsencode(path)],
                          cwd=tmp_path, capture_output=True, timeout=120)
    assert done.returncode == 0, done.stderr
    first = done.stdout.splitlines()[0]
    assert first == f"trace: {tmp_path}/\\x1b]0;title\\x07\\udcff.json (rank 0)".encode()
    missing = subprocess.run([sys.executable, str(ROOT / "scripts" / "analyze.py"),
                              os.fsencode(tmp_path / os.fsdecode(b"\x1b[2J\xfe.json"))],
                             cwd=tmp_path, capture_output=True, timeout=120)
    assert one_line_error(missing).endswith("\\x1b[2J\\udcfe.json: no such file\n")


@pytest.mark.parametrize("literal", ["1e400", "-1e400", "NaN"])
def test_json_is_strict_when_times_are_not_finite(literal, tmp_path):
    """1e400 is valid JSON that reads as infinity; NaN is what Python's json writes for nan. The
    event with such a time is left out, in a note, and the rest is analyzed as usual."""
    text = json.dumps(two_steps()).replace('"ts": 20,', f'"ts": {literal},', 1)
    assert literal in text
    path = tmp_path / "infinite.json"
    path.write_text(text)
    done = run(str(path), "--json", cwd=tmp_path)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    result = strict_json(done.stdout)
    assert result["duration_us"] == 200.0
    assert any("1 complete event left out (1 kernel)" in note for note in result["notes"])
    assert run(str(path), cwd=tmp_path).returncode == 0


def test_strict_json_maps_non_finite_numbers_to_null():
    value = {"a": float("nan"), "b": [1.5, float("inf"), (float("-inf"), 2)], "c": {"d": 0.0}}
    assert analyze.strict_json(value) == '{"a": null, "b": [1.5, null, [null, 2]], "c": {"d": 0.0}}'


def closed_pipe_run(command: list[str], cwd: Path) -> subprocess.CompletedProcess:
    """Run with stdout a pipe whose reader is gone, as when `| head` has exited."""
    read, write = os.pipe()
    os.close(read)
    try:
        return subprocess.run(command, cwd=cwd, stdout=write, stderr=subprocess.PIPE, text=True,
                              timeout=120)
    finally:
        os.close(write)


@pytest.mark.parametrize("flag", [None, "--json"])
def test_a_closed_pipe_ends_quietly_with_sigpipe_status(flag, gpu_trace, tmp_path):
    command = [sys.executable, str(ROOT / "scripts" / "analyze.py"), str(gpu_trace)]
    done = closed_pipe_run(command + ([flag] if flag else []), cwd=tmp_path)
    assert done.returncode == 141  # 128 + SIGPIPE: what a shell reports for `cat` in its place
    assert done.stderr == ""


def test_head_of_the_output(gpu_trace, tmp_path):
    done = subprocess.run(["bash", "-c", f'"$0" "$1" "$2" | head -1; echo "status ${{PIPESTATUS[0]}}" >&2',
                           sys.executable, str(ROOT / "scripts" / "analyze.py"), str(gpu_trace)],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.stdout == f"trace: {gpu_trace} (rank 0, NVIDIA H200)\n"
    assert done.stderr in ("status 0\n", "status 141\n")  # whether the pipe took it all first


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
def test_a_full_disk_on_stdout_is_one_line(handmade_trace, tmp_path):
    with open("/dev/full", "w") as full:
        done = subprocess.run([sys.executable, str(ROOT / "scripts" / "analyze.py"), str(handmade_trace)],
                              cwd=tmp_path, stdout=full, stderr=subprocess.PIPE, text=True, timeout=120)
    assert one_line_error(done) == "error: cannot write to standard output (No space left on device)\n"


SVG_OUTPUTS = {
    "a directory": (lambda tmp: tmp, "is a directory (with one trace OUT is the .svg file to write)"),
    "a missing parent": (lambda tmp: tmp / "missing" / "t.svg", "its directory {tmp}/missing does not exist"),
    "a file as parent": (lambda tmp: tmp / "file.txt" / "t.svg",
                         "its directory {tmp}/file.txt is not a directory"),
    "a full disk": (lambda tmp: Path("/dev/full"), "cannot write (No space left on device)"),
}


@pytest.mark.parametrize("case", sorted(SVG_OUTPUTS))
def test_svg_output_that_cannot_be_written_names_the_output(case, handmade_trace, tmp_path):
    out_of, why = SVG_OUTPUTS[case]
    (tmp_path / "file.txt").write_text("not a folder")
    out = out_of(tmp_path)
    if case == "a full disk" and not out.exists():
        pytest.skip("needs /dev/full")
    done = run(str(handmade_trace), "--svg", str(out), cwd=tmp_path)
    assert one_line_error(done) == f"error: --svg {out}: {why.format(tmp=tmp_path)}\n"
    assert done.stdout == ""


def test_svg_output_for_several_traces_must_be_a_directory(handmade_trace, tmp_path):
    out = tmp_path / "file.txt"
    out.write_text("not a folder")
    done = run(str(handmade_trace), str(handmade_trace), "--svg", str(out), cwd=tmp_path)
    assert one_line_error(done).startswith(f"error: --svg {out}: not a directory")
    assert out.read_text() == "not a folder"


def test_svg_in_a_read_only_folder(handmade_trace, tmp_path):
    folder = tmp_path / "read-only"
    folder.mkdir(mode=0o555)
    if os.access(folder, os.W_OK):
        pytest.skip("running as root: permissions do not stop writing")
    done = run(str(handmade_trace), "--svg", str(folder / "t.svg"), cwd=tmp_path)
    assert one_line_error(done) == (f"error: --svg {folder}/t.svg: {folder} is not writable "
                                    f"(permission denied)\n")


def test_unreadable_trace(handmade_trace, tmp_path):
    path = tmp_path / "secret.json"
    path.write_bytes(handmade_trace.read_bytes())
    path.chmod(0)
    if os.access(path, os.R_OK):
        pytest.skip("running as root: permissions do not stop reading")
    assert one_line_error(run(str(path), cwd=tmp_path)).startswith(f"error: {path}: cannot read")


@pytest.mark.skipif(not Path("/proc/self/mem").exists(), reason="needs Linux /proc")
def test_a_read_error_is_one_line(tmp_path):
    """/proc/self/mem opens but fails to read at offset 0 (EIO), whoever runs it."""
    assert one_line_error(run("/proc/self/mem", cwd=tmp_path)).startswith("error: /proc/self/mem: ")


@pytest.mark.parametrize("window, shown", [("1e9:2e9", "1e+09:2e+09"), ("-50:-1", "-50:-1"),
                                           ("200:300", "200:300")])
def test_window_outside_the_trace_is_one_line(window, shown, handmade_trace, tmp_path):
    done = run(str(handmade_trace), f"--window={window}", cwd=tmp_path)  # two_steps spans 0:200 us
    assert one_line_error(done) == (f"error: {handmade_trace}: window {shown} is outside the trace, "
                                    f"which spans 0:200 us\n")


def test_window_partly_inside_the_trace_is_described(handmade_trace, tmp_path):
    done = run(str(handmade_trace), "--json", "--window=-50:150", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert strict_json(done.stdout)["window"]["start_us"] == -50


@pytest.mark.parametrize("args", [["--window", "5:1"], ["--window", "nan:1"], ["--window", "0:inf"],
                                  ["--window", "0-100"], ["--step", "two"], ["--bogus"], []])
def test_bad_arguments_are_one_line(args, handmade_trace, tmp_path):
    done = run(*([str(handmade_trace)] if args else []), *args, cwd=tmp_path)
    assert one_line_error(done).startswith("analyze.py: error: ")


def test_interrupt_exits_130_without_traceback(tmp_path):
    fifo = tmp_path / "trace.json"
    os.mkfifo(fifo)
    child = subprocess.Popen([sys.executable, str(ROOT / "scripts" / "analyze.py"), str(fifo)],
                             cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    writer, deadline = None, time.monotonic() + 60
    try:
        while writer is None:  # the FIFO opens for writing once the analyzer opened the trace
            try:
                writer = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
            except OSError:  # ENXIO: no reader yet
                assert child.poll() is None and time.monotonic() < deadline, child.communicate()
                time.sleep(0.02)
        child.send_signal(signal.SIGINT)  # while it waits for the trace's first bytes
        out, err = child.communicate(timeout=60)
    finally:
        child.kill()
        if writer is not None:
            os.close(writer)
    assert (child.returncode, out, err) == (130, "", "interrupted\n")


def test_an_unwritable_folder_is_found_before_reading(monkeypatch, tmp_path):
    """What test_svg_in_a_read_only_folder checks where permissions apply (not as root)."""
    monkeypatch.setattr(analyze.os, "access", lambda path, mode: False)
    assert analyze._unwritable(tmp_path / "t.svg", several=False) == (
        f"--svg {tmp_path}/t.svg: {tmp_path} is not writable (permission denied)")
    assert analyze._unwritable(tmp_path, several=True) == (
        f"--svg {tmp_path}: {tmp_path} is not writable (permission denied)")


def test_stdin_twice_is_one_line(tmp_path):
    assert "can be read only once" in one_line_error(run("-", "-", cwd=tmp_path, input=""))


def test_stdin_is_named_in_errors(tmp_path):
    done = run("-", cwd=tmp_path, input="these are notes, not JSON")
    assert one_line_error(done).startswith("error: <stdin>: ")


@pytest.mark.parametrize("compress", [False, True])
def test_a_trace_from_stdin(compress, handmade_trace, tmp_path):
    data = handmade_trace.read_bytes()
    done = run("-", "--json", cwd=tmp_path, text=False, input=gzip.compress(data) if compress else data)
    assert done.returncode == 0, done.stderr
    result = strict_json(done.stdout.decode())
    assert result["source"] == "<stdin>"
    assert result == {**strict_json(run(str(handmade_trace), "--json", cwd=tmp_path).stdout),
                      "source": "<stdin>"}
