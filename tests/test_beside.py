"""scripts/tracefacts/entry/beside.py and its use by the CLI: the details computed in a forked child give what one
process gives, a failing or unwanted child costs nothing but time, and no output is written twice."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from scripts.tracefacts.entry import cli as analyze, beside
from scripts.tracefacts.entry.beside import FORK_ENV, Beside, can_fork

ROOT = Path(__file__).resolve().parents[1]
STACK_TRACE = ROOT / "traces" / "train_step" / "train_b16_s10_stack.json.gz"

pytestmark = pytest.mark.skipif(not can_fork(), reason="forks only on Linux, on two cores or more")


@pytest.fixture(autouse=True)
def _alone():
    """A thread left running by an earlier test would stop every fork here: named, not skipped."""
    others = [thread.name for thread in threading.enumerate() if thread is not threading.main_thread()]
    assert not others, f"threads left running by earlier tests: {others}"


def _pid_and(value):
    return os.getpid(), value


def _fails_in_a_child(parent: int):
    if os.getpid() != parent:
        raise RuntimeError("only in the child")
    return "computed by the parent"


def _always_fails():
    raise ValueError("bad trace: says so once, from the parent")


def _unpicklable():
    return lambda: None if os.getpid() else 0


def _sleeps():
    time.sleep(60)


def test_the_result_comes_from_a_child_and_equals_the_functions():
    with Beside(_pid_and, {"gpu": [1.5, "a"]}) as aside:
        pid, value = aside.result()
    assert aside.forked and pid != os.getpid()
    assert value == {"gpu": [1.5, "a"]}


def test_a_child_that_fails_leaves_the_parent_to_compute_it():
    with Beside(_fails_in_a_child, os.getpid()) as aside:
        assert aside.result() == "computed by the parent"
    assert not aside.forked


def test_an_error_of_the_function_is_raised_in_the_parent_as_in_one_process():
    with Beside(_always_fails) as aside, pytest.raises(ValueError, match="says so once"):
        aside.result()


def test_a_result_that_cannot_be_pickled_is_computed_again_in_the_parent():
    with Beside(_unpicklable) as aside:
        assert callable(aside.result())
    assert not aside.forked


def test_a_child_whose_result_is_not_wanted_is_stopped_and_reaped():
    with pytest.raises(KeyError):
        with Beside(_sleeps) as aside:
            pid = aside.pid
            assert pid is not None
            raise KeyError("the parent's own work failed")
    with pytest.raises(ChildProcessError):  # reaped: no zombie left behind
        os.waitpid(pid, os.WNOHANG)


def test_no_child_when_turned_off_or_beside_another_thread(monkeypatch):
    monkeypatch.setenv(FORK_ENV, "0")
    assert not can_fork()
    with Beside(_pid_and, 1) as aside:
        assert aside.pid is None and aside.result() == (os.getpid(), 1)
    monkeypatch.delenv(FORK_ENV)
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    try:
        assert not can_fork()  # a fork would copy this thread's locks, not the thread
    finally:
        stop.set()
        other.join()
    assert can_fork()


def test_the_cli_forks_for_the_details_and_prints_what_one_process_prints(monkeypatch, capsys):
    """On the stacks trace (shapes, stacks and memory), above CHILD_MIN_EVENTS."""
    made = []

    class Recorded(Beside):
        def result(self):
            found = super().result()
            made.append(self.forked)
            return found

    monkeypatch.setattr(analyze, "Beside", Recorded)
    monkeypatch.setattr(analyze, "CHILD_MIN_EVENTS", 1000)
    assert analyze.main([str(STACK_TRACE), "--json"]) == 0
    forked = capsys.readouterr().out
    monkeypatch.setenv(FORK_ENV, "0")
    assert analyze.main([str(STACK_TRACE), "--json"]) == 0
    alone = capsys.readouterr().out
    assert made == [True, False]
    assert forked == alone and "ops" in json.loads(forked)


def test_a_child_never_writes_what_the_parent_had_buffered(tmp_path):
    """Two traces into a pipe (block-buffered): the first one's line, still in the parent's
    buffer when the second one's child is forked, comes out once."""
    code = ("import sys; from scripts.tracefacts.entry import cli as analyze; analyze.CHILD_MIN_EVENTS = 1000; "
            "sys.exit(analyze.main(sys.argv[1:]))")
    done = subprocess.run([sys.executable, "-c", code, str(STACK_TRACE), str(STACK_TRACE), "--json"],
                          cwd=ROOT, capture_output=True, text=True, timeout=120,
                          env={k: v for k, v in os.environ.items() if k != FORK_ENV})
    assert done.returncode == 0 and done.stderr == ""
    lines = done.stdout.splitlines()
    assert len(lines) == 2 and lines[0] == lines[1]


def test_only_traces_between_the_two_thresholds_get_a_child():
    """Small ones cost more to fork than the child saves; the largest keep one process, whose
    memory alone is held under 1 GiB."""
    class Sized:
        def __init__(self, events):
            self.event_count = events

    low, high = analyze.CHILD_MIN_EVENTS, analyze.LARGE_TRACE_EVENTS
    assert [analyze._worth_a_child(Sized(n)) for n in (low - 1, low, high - 1, high)] == [
        False, True, True, False]
