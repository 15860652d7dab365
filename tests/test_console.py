"""scripts/tracefacts/entry/console.py, the command line's error boundary, and `python -m scripts` behind it: a
closed pipe, an unwritable output, Ctrl-C and a bug each end in a status and at most one line."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import pytest

from scripts.tracefacts.entry import console

ROOT = Path(__file__).resolve().parents[1]


class Failing(io.StringIO):
    """A stdout whose writes fail as a closed pipe or a full disk would."""

    def __init__(self, error: OSError):
        super().__init__()
        self.error = error

    def write(self, text):
        raise self.error


def call_with(monkeypatch, main, stdout=None) -> tuple[int, str]:
    err = io.StringIO()
    monkeypatch.setattr(sys, "stdout", stdout or io.StringIO())
    monkeypatch.setattr(sys, "stderr", err)
    status = console.call(main)
    return status, err.getvalue()


def test_a_closed_pipe_is_status_141_and_silent(monkeypatch):
    status, err = call_with(monkeypatch, lambda: print("x") or 0, Failing(BrokenPipeError(32, "Broken pipe")))
    assert (status, err) == (console.EXIT_PIPE_CLOSED, "")


def test_a_failing_output_is_one_line(monkeypatch):
    full = Failing(OSError(28, "No space left on device"))
    status, err = call_with(monkeypatch, lambda: print("x") or 0, full)
    assert (status, err) == (2, "error: cannot write to standard output (No space left on device)\n")


def test_a_closed_pipe_is_not_taken_for_a_bad_trace(monkeypatch):
    """Output errors pass through `except Exception`, which blames the input."""
    def main():
        try:
            print("progress")
        except Exception:
            print("error: the trace is bad", file=sys.stderr)
            return 2
        return 0
    status, err = call_with(monkeypatch, main, Failing(BrokenPipeError(32, "Broken pipe")))
    assert (status, err) == (console.EXIT_PIPE_CLOSED, "")


def test_interrupt_is_130(monkeypatch):
    def main():
        raise KeyboardInterrupt
    assert call_with(monkeypatch, main) == (130, "interrupted\n")


def test_a_bug_is_one_line_unless_debugging(monkeypatch):
    def main():
        raise TypeError("bad\nthing")
    monkeypatch.delenv(console.DEBUG_ENV, raising=False)
    assert call_with(monkeypatch, main) == (
        console.EXIT_INTERNAL,
        f"error: unexpected TypeError: bad thing (a bug; {console.DEBUG_ENV}=1 shows the traceback)\n")
    monkeypatch.setenv(console.DEBUG_ENV, "1")
    with pytest.raises(TypeError):
        call_with(monkeypatch, main)


@pytest.mark.parametrize("exit_with, status, err", [(None, 0, ""), (3, 3, ""), ("message", 1, "message\n")])
def test_system_exit_keeps_its_status(exit_with, status, err, monkeypatch):
    def main():
        sys.exit(exit_with)
    assert call_with(monkeypatch, main) == (status, err)


def test_the_streams_are_restored(monkeypatch):
    out = io.StringIO()
    monkeypatch.setattr(sys, "stdout", out)
    seen = []
    console.call(lambda: seen.append(sys.stdout) or 0)
    assert sys.stdout is out and seen[0] is not out


def test_control_characters_are_escaped_on_the_way_out(monkeypatch):
    out = io.StringIO()
    name = "a\x1b[2Jb\x9b\x00\u202ec"
    call_with(monkeypatch, lambda: print(f"name:\t{name}\nnext"), out)
    assert out.getvalue() == "name:\ta\\x1b[2Jb\\x9b\\x00\\u202ec\nnext\n"


def test_printable_escapes_newlines_in_one_field():
    assert console.printable("a\nb\tc\rd") == "a\\x0ab\\x09c\\x0dd"
    assert console.printable("aten::mm · ok") == "aten::mm · ok"


@pytest.mark.parametrize("encoding", ["ascii", "latin-1", "utf-8"])
def test_any_string_prints_on_any_encoding(encoding, monkeypatch):
    raw = io.BytesIO()
    out = io.TextIOWrapper(raw, encoding=encoding)
    call_with(monkeypatch, lambda: print("idle 1% · compute 2% … \ud800 \u4e2d"), out)
    out.flush()
    text = raw.getvalue().decode(encoding)
    stand_in = "|" if encoding == "ascii" else "·"
    assert text.startswith(f"idle 1% {stand_in} compute 2% ")
    assert "\\ud800" in text and ("\u4e2d" if encoding == "utf-8" else "\\u4e2d") in text
    assert out.errors == "strict"  # given back as it was


def test_usage_errors_are_one_line(monkeypatch, capsys):
    parser = console.ArgumentParser(prog="tool")
    parser.add_argument("--n", type=int)
    with pytest.raises(SystemExit) as stopped:
        parser.parse_args(["--n", "x"])
    assert stopped.value.code == 2
    assert capsys.readouterr().err == "tool: error: argument --n: invalid int value: 'x' (see --help)\n"


# --- python -m scripts ---------------------------------------------------------------------------


def scripts_command(*args: str, **options) -> subprocess.CompletedProcess:
    options = {"capture_output": True, "text": True, "timeout": 120, **options}
    return subprocess.run([sys.executable, "-m", "scripts", *args], cwd=ROOT, **options)


def test_list_into_a_closed_pipe_ends_quietly():
    read, write = os.pipe()
    os.close(read)  # `| head` that has exited
    try:
        done = scripts_command("list", stdout=write, capture_output=False, stderr=subprocess.PIPE)
    finally:
        os.close(write)
    assert (done.returncode, done.stderr) == (141, "")


def test_list_into_head():
    done = subprocess.run(["bash", "-c", '"$0" -m scripts list | head -1; echo "status ${PIPESTATUS[0]}" >&2',
                           sys.executable], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert len(done.stdout.splitlines()) == 1 and done.stdout.split()[0] in ("fresh", "stale", "missing")
    assert done.stderr in ("status 0\n", "status 141\n")


@pytest.mark.parametrize("args", [["bogus"], ["list", "--only", "x"], []])
def test_cli_usage_errors_are_one_line(args):
    done = scripts_command(*args)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("python -m scripts")


def test_cli_imports_only_the_standard_library():
    """cli.py (and console.py) run on a bare GPU image for `refresh`."""
    probe = ("import sys; before = set(sys.modules); import scripts.series.cli; "
             "print(sorted(m for m in set(sys.modules) - before "
             "if m.split('.')[0] not in sys.stdlib_module_names and m.split('.')[0] != 'scripts'))")
    done = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "[]\n"
    assert "scripts.tracefacts.entry.console" in subprocess.run(
        [sys.executable, "-c", "import sys, scripts.series.cli; print(list(sys.modules))"],
        cwd=ROOT, capture_output=True, text=True, timeout=60).stdout
