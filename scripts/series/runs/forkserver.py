"""The fork server: torch imported once, each snippet run in a fresh forked child.

Started by scripts/series/runs/runner.py as `python scripts/series/runs/forkserver.py` with the interpreter that runs the
snippets; never imported by the package (standard library and torch only). Three levels:

- the root imports torch without initializing CUDA (and the modules named on its command line,
  where it can: what every run imports before it records), then waits for requests;
- per snippet, a zygote forked from the root runs the snippet's own top-level import statements
  (and any module the request names), so its children start with exactly what that snippet
  imports: transformers is never loaded beside Part 1's snippet;
- per run, a child forked from the zygote runs the snippet as `__main__` with its arguments, its
  stdout and stderr in files, in its own process group. It makes its own CUDA context: nothing
  above it touched CUDA (the zygote checks `torch.cuda.is_initialized()` before every fork and
  refuses otherwise), so a cold example is as cold as in a fresh interpreter, minus the imports.

The protocol is one JSON object per line, strictly request then reply; requests are read one byte
at a time from fd 0 so that a zygote, which inherits fd 0, never misses what its parent buffered.
Replies go to a copy of the original fd 1; fd 1 itself is pointed at stderr so that a stray print
during an import cannot corrupt them.

root:   -> {"ready": true, "pid", "torch"} or {"refused": reason}
        {"op": "zygote", "script", "preload"} -> (the zygote's replies) ... {"zygote_exit": code}
        {"op": "quit"}
zygote: -> {"ready": true, "pid"} or {"refused": reason}, then exits
        {"op": "run", "argv", "cwd", "stdout", "stderr", "timeout_s"[, "more", "env", "times"]}
            -> {"pid"}, then {"exit": code, "wall_s", "timed_out"} (code < 0: killed by a signal)
            or {"refused": reason} when CUDA is initialized in the zygote
        {"op": "end"}

A run's optional fields: `more`, further argument lists that the same child runs after `argv`, one
after the other (a warm example's repeats: its steps again in a process already warm); `env`,
variables set in the child (a per-refresh compile cache); `times`, a file where the child writes
the seconds each of its runs took, as a JSON list, after each.

`python scripts/series/runs/forkserver.py --sequence SCRIPT REQUEST_JSON` does what such a child does in a fresh
interpreter (the isolated runner's path for a job of several runs).
"""

import os
import sys

# The script's own folder heads sys.path; scripts/tracefacts/model/trace.py there would shadow the standard
# library's trace module for everything imported below (and for the snippets).
if sys.path and os.path.abspath(sys.path[0] or ".") == os.path.dirname(os.path.abspath(__file__)):
    del sys.path[0]

import ast  # noqa: E402
import atexit  # noqa: E402
import gc  # noqa: E402
import importlib  # noqa: E402
import json  # noqa: E402
import runpy  # noqa: E402
import signal  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402
import traceback  # noqa: E402

# torch.cuda.is_available() asks NVML instead of the CUDA driver, which cannot be used in a child
# once initialized in its parent; the children get the variable back as it was.
NVML_CHECK = "PYTORCH_NVML_BASED_CUDA_CHECK"
_NVML_BEFORE: str | None = None
REPLIES = -1  # the runner's end of the replies; main() sets it


def send(message: dict) -> None:
    data = (json.dumps(message) + "\n").encode()
    while data:
        data = data[os.write(REPLIES, data):]


def receive() -> dict | None:
    """The next request, or None when the runner has gone (end of input)."""
    line = bytearray()
    while True:
        byte = os.read(0, 1)
        if not byte:
            return None
        if byte == b"\n":
            return json.loads(line)
        line += byte


def cuda_initialized() -> bool:
    torch = sys.modules.get("torch")
    return bool(torch is not None and torch.cuda.is_initialized())


def why_children_cannot_use_cuda() -> str:
    """Why a forked child could not use CUDA as a fresh process would ("" if it can), asked of a
    child: torch marks every child a bad fork once its parent asked the CUDA runtime anything (a
    device count, say), and a library that started the driver itself (cuInit) leaves children
    that fail to make a context. Where there is a GPU the child makes one, then exits."""
    torch = sys.modules.get("torch")
    cuda = getattr(torch, "cuda", None)
    if cuda is None or not hasattr(cuda, "_is_in_bad_fork"):
        return ""
    flush()
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        why = ""
        try:
            if cuda._is_in_bad_fork():
                why = "torch calls this process a bad fork"
            elif torch.backends.cuda.is_built() and cuda.device_count() > 0:
                cuda.init()
        except BaseException as error:  # noqa: BLE001 - any failure is the answer
            why = last_line(error)
        os.write(write, why.encode()[:4000])
        os._exit(0)
    os.close(write)
    chunks = []
    while chunk := os.read(read, 4096):
        chunks.append(chunk)
    os.close(read)
    os.waitpid(pid, 0)
    return b"".join(chunks).decode(errors="replace")


def returncode(status: int) -> int:
    return -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)


def last_line(error: BaseException) -> str:
    return f"{type(error).__name__}: {error}".splitlines()[0]


# --- root -------------------------------------------------------------------------------------


def root() -> None:
    try:
        import torch
    except BaseException as error:  # noqa: BLE001 - any failure is reported, the runner falls back
        send({"refused": f"cannot import torch: {last_line(error)}"})
        return
    for name in sys.argv[1:]:  # what every run would import before recording (the runner says)
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001 - a run imports it itself, or never needs it
            pass
    if cuda_initialized():
        send({"refused": "importing torch initialized CUDA"})
        return
    send({"ready": True, "pid": os.getpid(), "torch": torch.__version__})
    while (request := receive()) is not None and request.get("op") == "zygote":
        flush()
        pid = os.fork()
        if pid == 0:
            os._exit(zygote(request))
        _, status = os.waitpid(pid, 0)
        send({"zygote_exit": returncode(status)})


def flush() -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass


# --- zygote -----------------------------------------------------------------------------------


def top_level_imports(script: str) -> ast.Module:
    """The snippet's own `import` and `from ... import` statements at module level."""
    with open(script, "rb") as handle:
        tree = ast.parse(handle.read(), script)
    body = [node for node in tree.body if isinstance(node, (ast.Import, ast.ImportFrom))]
    return ast.Module(body=body, type_ignores=[])


def zygote(request: dict) -> int:
    script = request["script"]
    try:
        sys.path.insert(0, os.path.dirname(os.path.abspath(script)))  # as `python script.py` does
        exec(compile(top_level_imports(script), script, "exec"), {"__name__": "__forkserver_preload__"})
        for name in request.get("preload", ()):
            importlib.import_module(name)
    except BaseException as error:  # noqa: BLE001 - the runner runs this snippet on its own instead
        send({"refused": f"importing what {os.path.basename(script)} imports failed: {last_line(error)}"})
        return 0
    if cuda_initialized():
        send({"refused": f"importing what {os.path.basename(script)} imports initialized CUDA"})
        return 0
    why = why_children_cannot_use_cuda()
    if why:
        send({"refused": f"after importing what {os.path.basename(script)} imports, a forked child "
                         f"cannot use CUDA ({why})"})
        return 0
    send({"ready": True, "pid": os.getpid()})
    while (request := receive()) is not None and request.get("op") == "run":
        if cuda_initialized():
            send({"refused": "CUDA is initialized in the fork server"})
            continue
        send(run(script, request))
    return 0


def run(script: str, request: dict) -> dict:
    """Fork one child for the request, wait for it (killing its process group at the timeout)."""
    flush()
    started = time.perf_counter()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            os.setpgid(0, 0)
            code = child(script, request)
        except BaseException:  # noqa: BLE001 - setting up the child failed: say why, exit 1
            traceback.print_exc()
        finally:
            os._exit(code)
    try:
        os.setpgid(pid, pid)  # also here, so that the group exists before any kill
    except OSError:
        pass  # the child did it first
    send({"pid": pid})
    fired = []

    def at_timeout(signum, frame):
        # The wait below resumes after this handler (PEP 475) and returns the killed status.
        fired.append(signum)
        _kill_group(pid)

    signal.signal(signal.SIGALRM, at_timeout)
    try:
        signal.setitimer(signal.ITIMER_REAL, max(float(request["timeout_s"]), 0.001))
        _, status = os.waitpid(pid, 0)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, signal.SIG_DFL)
    # An alarm that came as the child was exiting on its own did not time it out.
    timed_out = bool(fired) and os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL
    return {"exit": returncode(status), "wall_s": time.perf_counter() - started, "timed_out": timed_out}


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


# --- child ------------------------------------------------------------------------------------


def child(script: str, request: dict) -> int:
    """Run the snippet as `python script *argv` would (then as often again as `more` says, in this
    process), and return the exit code."""
    if REPLIES >= 0:
        os.close(REPLIES)
    os.chdir(request["cwd"])
    for fd, path, flags in ((0, os.devnull, os.O_RDONLY),
                            (1, request["stdout"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC),
                            (2, request["stderr"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC)):
        opened = os.open(path, flags, 0o644)
        os.dup2(opened, fd)
        os.close(opened)
    if _NVML_BEFORE is None:
        os.environ.pop(NVML_CHECK, None)
    else:
        os.environ[NVML_CHECK] = _NVML_BEFORE
    os.environ.update(request.get("env") or {})
    code, times = 0, []
    for argv in [request["argv"], *request.get("more", ())]:
        if times:
            gc.collect()  # the previous run's objects go now, not inside the next one's steps
        sys.argv = [script, *argv]
        started = time.perf_counter()
        try:
            runpy.run_path(script, run_name="__main__")
        except SystemExit as done:
            code = exit_code(done.code)
        except BaseException:  # noqa: BLE001 - reported as the interpreter would, then exit 1
            sys.excepthook(*sys.exc_info())
            code = 1
        times.append(time.perf_counter() - started)
        if request.get("times"):
            with open(request["times"], "w") as handle:
                json.dump(times, handle)
        if code:
            break  # a failed run ends the sequence, as a failed process would
    # What the interpreter does on its way out: wait for threads, run atexit, flush.
    try:
        getattr(threading, "_shutdown", lambda: None)()
        atexit._run_exitfuncs()
    except BaseException:  # noqa: BLE001
        traceback.print_exc()
        code = code or 1
    flush()
    return code


def exit_code(code) -> int:
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


def sequence(script: str, request: dict) -> int:
    """A child's work in this fresh interpreter (no server): sys.path as `python script` has it."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
    return child(script, request)


def main() -> None:
    global REPLIES, _NVML_BEFORE
    _NVML_BEFORE = os.environ.get(NVML_CHECK)
    if sys.argv[1:2] == ["--sequence"]:
        os._exit(sequence(sys.argv[2], json.loads(sys.argv[3])))  # as a forked child ends
    os.environ[NVML_CHECK] = "1"
    REPLIES = os.dup(1)
    os.dup2(2, 1)
    root()


if __name__ == "__main__":
    main()
