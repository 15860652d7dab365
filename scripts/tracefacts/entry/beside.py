"""One function run beside the main line: in a forked child, while the parent goes on.

The analyzer's facts and its details (memory, shapes, stacks) read the same loaded trace and
nothing of each other; on a large trace each takes seconds. Forked once the trace is read, a child
computes the details on the second core while the parent computes the facts, and hands them back
pickled through a pipe. The child shares the trace's memory with its parent (copy on write: the
columns are arrays whose buffers it only reads, and the cyclic collector, paused, touches no
object), so the pair holds the trace once.

Nothing is lost where a child cannot help: without `os.fork` (Windows, Pyodide), off Linux (a
forked macOS process may not use some system libraries), with other threads running (a fork copies
only the calling thread, and locks held by the others stay held), on one core (nothing to gain),
with PROFILING_ANALYZER_FORK=0, or where the child fails in any way, the function runs in the
parent, as it did before: same result, same error.
"""

from __future__ import annotations

import os
import pickle
import signal
import sys
import threading
from typing import Callable, Generic, TypeVar

FORK_ENV = "PROFILING_ANALYZER_FORK"  # "0": everything in one process

T = TypeVar("T")


def can_fork() -> bool:
    """Whether a child may run work beside this process (see the module's docstring)."""
    if os.environ.get(FORK_ENV, "").strip().lower() in ("0", "no", "off", "false"):
        return False
    return (hasattr(os, "fork") and sys.platform.startswith("linux")
            and threading.active_count() == 1 and len(os.sched_getaffinity(0)) > 1)


class Beside(Generic[T]):
    """`fn(*args)`, started in a forked child where `fork` (and `can_fork()`), else when its
    result is asked for. Use as a context manager: a child still running at the exit (the
    parent's own work failed) is stopped and reaped."""

    def __init__(self, fn: Callable[..., T], *args, fork: bool = True) -> None:
        self.fn, self.args = fn, args
        self.pid: int | None = None
        self.pipe: int | None = None
        self.forked = False  # whether the result came, or will come, from a child
        if fork and can_fork():
            self._start()

    def _start(self) -> None:
        for stream in (sys.stdout, sys.stderr):  # a child never writes its parent's buffers
            try:
                stream.flush()
            except (OSError, ValueError, AttributeError):
                pass
        read_end, write_end = os.pipe()
        try:
            pid = os.fork()
        except OSError:  # no memory or process left for a child: the parent does it
            os.close(read_end)
            os.close(write_end)
            return
        if pid == 0:
            _child(read_end, write_end, self.fn, self.args)
        os.close(write_end)
        self.pid, self.pipe, self.forked = pid, read_end, True

    def result(self) -> T:
        """The function's value: the child's, or computed here where there is none or it
        failed (so a failure is raised here, as in one process)."""
        if self.pid is not None:
            with open(self.pipe, "rb") as pipe:  # read to the end first: a child blocks on a full pipe
                self.pipe = None
                data = pipe.read()
            status = self._reap()
            if status == 0 and data:
                try:
                    return pickle.loads(data)
                except Exception:  # noqa: BLE001 (any damage: computed again below)
                    pass
        self.forked = False
        return self.fn(*self.args)

    def _reap(self) -> int:
        pid, self.pid = self.pid, None
        try:
            return os.waitpid(pid, 0)[1]
        except ChildProcessError:
            return -1

    def close(self) -> None:
        """Stop and reap a child whose result is no longer wanted."""
        if self.pipe is not None:
            os.close(self.pipe)
            self.pipe = None
        if self.pid is not None:
            try:
                os.kill(self.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self._reap()

    def __enter__(self) -> Beside[T]:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _child(read_end: int, write_end: int, fn: Callable, args: tuple) -> None:
    """The child's whole life: the result pickled into the pipe, exit status 0; any failure
    (an exception, an interrupt, an unpicklable result) exits 1 with nothing said, and the
    parent computes it again. `os._exit`: no atexit handler, no buffer of the parent's, is run
    twice."""
    status = 1
    try:
        os.close(read_end)
        signal.signal(signal.SIGINT, signal.SIG_DFL)  # Ctrl-C: the parent reports it, once
        data = pickle.dumps(fn(*args), protocol=pickle.HIGHEST_PROTOCOL)
        with open(write_end, "wb") as pipe:
            pipe.write(data)
        status = 0
    except BaseException:  # noqa: BLE001 (the parent computes it again and says what failed)
        pass
    finally:
        os._exit(status)
