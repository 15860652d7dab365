"""How the refresh runs a snippet: in a child of a fork server, or in a fresh interpreter.

A fresh `python snippet.py` per run spends most of a small example importing torch (8 to 10 s of
each on our H200 machine, with CUDA's start). The fork server (scripts/series/runs/forkserver.py) imports
torch once, and for each snippet the modules that snippet imports, without touching CUDA; each run
is then a forked child that runs the snippet as `__main__` and makes its own CUDA context, its own
cuBLAS handles and its own profiler session. A cold example stays cold: what is already done when
the snippet starts is Python's imports, which a snippet does before anything it records.

Warm examples get a fresh child too, not a process shared between examples: in a process that
already profiled once, the profiler's first-session work (CUPTI's `Activity Buffer Request`, which
Part 1 reads) would be missing from every later trace, and the caching allocator and cuBLAS would
start warm from the previous example. A warm example's own repeats (Job.more) run in the child of
its first run, after it: a process warm from that example is what the example is about, and its
first run, the one shown, is still the first in its process.

What a forked child shares with its siblings and a fresh interpreter would not: the address
layout of the libraries and the string hash seed (so repeated runs are a little less independent
than fresh interpreters), and the parent's Python objects, copied on the child's first write (a
first full garbage collection costs a fraction more than in a fresh interpreter: about 25% more
of a 180 ms collection with torch and Inductor imported, on a CPU machine).

`Isolated` is today's path, one interpreter per run: `--isolated`, and the fallback where fork is
unavailable (not Linux), the server cannot start, or a snippet's imports would initialize CUDA.
Both kill a run at its timeout, with its process group (Inductor's compile workers included).

Standard library only: this is the GPU refresh path.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

DEFAULT_TIMEOUT_S = 300.0
SERVER = Path(__file__).with_name("forkserver.py")
START_TIMEOUT_S = 600.0  # importing torch (and transformers) from a cold disk
REPLY_TIMEOUT_S = 60.0  # a fork, or a zygote's exit: instant unless the server is stuck
GRACE_S = 30.0  # past a run's timeout: the server kills the run itself, this is for a stuck server
SERVER_FAILURES_TOLERATED = 2  # then every later run is isolated


@dataclass(frozen=True)
class Job:
    """One run of a snippet: `python script *args` in cwd, its output into two files."""

    script: Path
    args: tuple[str, ...]
    cwd: Path
    stdout: Path
    stderr: Path
    timeout_s: float = DEFAULT_TIMEOUT_S  # for all its runs together
    preload: tuple[str, ...] = ()  # modules a fork server imports beside the snippet's own
    # Further argument lists run after `args` by the same process, one after the other (a warm
    # example's repeats), and the file where that process writes each run's seconds (a JSON list).
    more: tuple[tuple[str, ...], ...] = ()
    times: Path | None = None
    env: tuple[tuple[str, str], ...] = ()  # variables set for the run (a per-refresh compile cache)

    def request(self) -> dict:
        """The run as scripts/series/runs/forkserver.py reads it."""
        return {"argv": list(self.args), "cwd": str(self.cwd), "stdout": str(self.stdout),
                "stderr": str(self.stderr), "timeout_s": self.timeout_s, "more": [list(a) for a in self.more],
                "env": dict(self.env), "times": str(self.times) if self.times else ""}


@dataclass(frozen=True)
class Outcome:
    returncode: int | None  # negative: killed by that signal; None: no process finished
    wall_time_s: float  # from start (fork or exec) to exit
    timed_out: bool = False
    error: str = ""  # the runner's own failure, not the snippet's
    mode: str = "isolated"  # or "forked": how the process was made
    times_s: tuple[float, ...] = ()  # each run's seconds, when the job asked for them (Job.times)

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.timed_out and not self.error


class RunnerError(RuntimeError):
    """The fork server could not do what was asked; the message is one line."""


class NoAnswer(RunnerError):
    """The fork server said nothing in time (stuck, or its run outlived the timeout and grace)."""


def read_times(job: Job) -> tuple[float, ...]:
    """The seconds of each run the job's process finished (none if it wrote no times)."""
    try:
        times = json.loads(job.times.read_text()) if job.times else []
    except (OSError, ValueError):
        return ()
    return tuple(float(t) for t in times if isinstance(t, (int, float)))


def fork_available() -> bool:
    # Linux only: macOS system frameworks are not safe to use in a forked child.
    return hasattr(os, "fork") and sys.platform.startswith("linux")


def _kill_group(pgid: int | None) -> None:
    if pgid is None:
        return
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


class _Closing:
    def close(self) -> None:
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class Isolated(_Closing):
    """One fresh interpreter per run, in its own session."""

    kind = "isolated: a fresh interpreter per run"

    def __init__(self, python: str, env: dict[str, str] | None = None):
        self.python = python
        self.env = dict(env or {})

    def run(self, job: Job) -> Outcome:
        command = [self.python, str(job.script), *job.args]
        if job.more or job.times:
            # Several runs in one interpreter: what a fork server's child does, without the server.
            command = [self.python, str(SERVER), "--sequence", str(job.script), json.dumps(job.request())]
        env = {**os.environ, **self.env, **dict(job.env)} if (self.env or job.env) else None
        with open(job.stdout, "wb") as out, open(job.stderr, "wb") as err:
            started = time.perf_counter()
            process = subprocess.Popen(command, cwd=job.cwd, stdin=subprocess.DEVNULL, stdout=out,
                                       stderr=err, start_new_session=True, env=env)
            timed_out = False
            try:
                try:
                    code = process.wait(timeout=job.timeout_s)
                except subprocess.TimeoutExpired:
                    timed_out = True
                    _kill_group(process.pid)  # not reaped yet: the group id is still its own
                    code = process.wait()
            except BaseException:
                _kill_group(process.pid)
                process.wait()
                raise
        return Outcome(code, time.perf_counter() - started, timed_out, times_s=read_times(job))


class ForkServer(_Closing):
    """Runs jobs as forked children of scripts/series/runs/forkserver.py; falls back to Isolated for a snippet
    the server refuses, and for everything once the server has failed too often."""

    kind = "fork server: torch imported once, a fresh forked process (and CUDA context) per run"

    def __init__(self, python: str, log=print, env: dict[str, str] | None = None, imports: tuple[str, ...] = ()):
        self.python = python
        self.log = log
        self.env = dict(env or {})  # the server's own: what its imports see too
        self.imports = tuple(imports)  # what the server imports beside torch, where it can, for every run
        self.fallback = Isolated(python, env)
        self.process: subprocess.Popen | None = None
        self.root_pid: int | None = None
        self.zygote: tuple[str, tuple[str, ...]] | None = None
        self.zygote_pid: int | None = None
        self.child_pid: int | None = None
        self.refused: dict[tuple[str, tuple[str, ...]], str] = {}
        self.failures = 0
        self.broken = ""  # why the server is no longer used
        self._buffer = b""
        self._zygote_script = ""
        self._stderr = tempfile.TemporaryFile()

    # --- the protocol ---

    def _send(self, message: dict) -> None:
        try:
            self.process.stdin.write((json.dumps(message) + "\n").encode())
            self.process.stdin.flush()
        except (BrokenPipeError, OSError):
            raise RunnerError(f"the fork server has gone: {self._last_stderr_line()}") from None

    def _receive(self, timeout_s: float) -> dict:
        deadline = time.monotonic() + timeout_s
        fd = self.process.stdout.fileno()
        while b"\n" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                raise NoAnswer(f"the fork server did not answer within {timeout_s:g} s")
            chunk = os.read(fd, 65536)
            if not chunk:
                raise RunnerError(f"the fork server exited: {self._last_stderr_line()}")
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        return json.loads(line)

    def _expect(self, key: str, timeout_s: float = REPLY_TIMEOUT_S) -> dict:
        """The next reply, which must hold `key` (or be a refusal, which the caller handles)."""
        reply = self._receive(timeout_s)
        if key in reply or "refused" in reply:
            return reply
        if "zygote_exit" in reply:
            code = reply["zygote_exit"]
            how = f"killed by signal {-code}" if code < 0 else f"exit {code}"
            self.zygote = self.zygote_pid = None
            raise RunnerError(f"the fork server's process for {Path(self._zygote_script).name} died ({how})")
        raise RunnerError(f"the fork server answered {reply!r} where {key!r} was expected")

    def _last_stderr_line(self) -> str:
        self._stderr.seek(0)
        lines = [line.strip() for line in self._stderr.read().decode(errors="replace").splitlines() if line.strip()]
        return lines[-1] if lines else "no output"

    # --- the server's life ---

    def _start(self) -> None:
        started = time.perf_counter()
        self._buffer = b""
        self.process = subprocess.Popen([self.python, str(SERVER), *self.imports], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, stderr=self._stderr, bufsize=0,
                                        start_new_session=True, env={**os.environ, **self.env})
        reply = self._receive(START_TIMEOUT_S)
        if "refused" in reply:
            raise RunnerError(reply["refused"])
        self.root_pid = reply["pid"]
        self.log(f"  fork server ready: torch {reply['torch']} imported once ({time.perf_counter() - started:.1f} s)")

    def _enter(self, key: tuple[str, tuple[str, ...]]) -> bool:
        """Make the zygote for this snippet current; False if the server refuses the snippet."""
        if self.zygote == key:
            return True
        self._leave()
        self._send({"op": "zygote", "script": key[0], "preload": list(key[1])})
        self._zygote_script = key[0]
        reply = self._expect("ready", START_TIMEOUT_S)
        if "refused" in reply:
            self._expect("zygote_exit")
            self.refused[key] = reply["refused"]
            self.log(f"  fork server refused {Path(key[0]).name} ({reply['refused']}): its runs are isolated")
            return False
        self.zygote, self.zygote_pid = key, reply["pid"]
        return True

    def _leave(self) -> None:
        if self.zygote is not None:
            self.zygote = self.zygote_pid = None
            self._send({"op": "end"})
            self._expect("zygote_exit")

    def _abandon(self, reason: str) -> None:
        """Kill the server and whatever run it had, after a failure."""
        _kill_group(self.child_pid)
        if self.process is not None:
            _kill_group(self.process.pid)
            self.process.wait()
        self.process = self.root_pid = self.zygote = self.zygote_pid = self.child_pid = None
        self.failures += 1
        if self.failures >= SERVER_FAILURES_TOLERATED and not self.broken:
            self.broken = reason
            self.log(f"  the fork server failed {self.failures} times ({reason}): the remaining runs are isolated")

    # --- the interface ---

    def run(self, job: Job) -> Outcome:
        key = (str(job.script), tuple(job.preload))
        if self.broken or key in self.refused:
            return self.fallback.run(job)
        started = time.perf_counter()
        try:
            if self.process is None:
                try:
                    self._start()
                except RunnerError as error:
                    self._abandon(str(error))
                    self.broken = str(error)
                    self.log(f"  fork server unavailable ({error}): every run is isolated")
                    return self.fallback.run(job)
            if not self._enter(key):
                return self.fallback.run(job)
            self._send({"op": "run", **job.request()})
            reply = self._expect("pid")
            if "refused" in reply:
                self.refused[key] = reply["refused"]
                self.log(f"  fork server refused a run of {job.script.name} ({reply['refused']}): its runs are isolated")
                return self.fallback.run(job)
            self.child_pid = reply["pid"]
            done = self._expect("exit", job.timeout_s + GRACE_S)
            self.child_pid = None
            return Outcome(done["exit"], done["wall_s"], done["timed_out"], mode="forked", times_s=read_times(job))
        except RunnerError as error:
            timed_out = isinstance(error, NoAnswer) and self.child_pid is not None
            self._abandon(str(error))
            return Outcome(None, time.perf_counter() - started, timed_out, f"{error}", mode="forked")
        except BaseException:
            self._abandon("interrupted")
            raise

    def close(self) -> None:
        if self.process is None:
            return
        try:
            self._leave()
            self._send({"op": "quit"})
            self.process.stdin.close()
            self.process.wait(timeout=REPLY_TIMEOUT_S)
        except (RunnerError, subprocess.TimeoutExpired, OSError):
            _kill_group(self.process.pid)
            self.process.wait()
        self.process = None


def open_runner(python: str, *, isolated: bool = False, log=print, env: dict[str, str] | None = None,
                imports: tuple[str, ...] = ()) -> ForkServer | Isolated:
    """The runner a refresh uses: a fork server (importing `imports` beside torch, where it can)
    unless told otherwise or fork is unavailable, its processes started with `env` added to this
    one's. Close it when done, or use it as a context manager."""
    if isolated or not fork_available():
        return Isolated(python, env)
    return ForkServer(python, log, env, imports)


