"""Run-or-reuse, like Quarto's freeze: GPU runs become committed artifacts under traces/.

For each example the refresh runs its snippet in a fresh process, sanitizes the trace
(scripts/series/runs/sanitize.py: no path, host, user, address or device of the builder), gzips it reproducibly,
and writes beside it the table, the extra artifacts its catalog entry names (scripts/series/runs/extras.py: the
memory timeline, the allocator's snapshot; sanitized and gzipped the same way) and a sealed metadata
file (scripts/series/runs/meta.py) holding the hash of everything that determines the result and of every
output. A build without a GPU reuses the artifacts; one whose inputs
changed since is stale, one whose metadata cannot be used is invalid, and `check` says what to run.

Standard library only: this module is the GPU refresh path and runs on a bare GPU image.
"""

from __future__ import annotations

import functools
import gzip
import hashlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from . import runner as runners
from .catalog import EXTRAS, ROOT, TRACES, Example
from .extras import MAX_FROZEN_BYTES, ExtraError, sanitized
from .meta import REFRESH_HINT, Meta, MetaError, inputs_hash, read_meta, seal, shown  # noqa: F401
from .meta import dumps as meta_file_bytes
from .samples import samples_file, samples_of
from .sanitize import TRACE_NUMBER_KEYS, Scrubber, sanitize_trace
from ...tracefacts.model.trace import build_trace

# Bump when the artifact layout or the sanitizer changes what is written.
FREEZE_FORMAT = 1


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def snippet_digest(example: Example) -> str:
    # Line endings are normalized so a checkout on another OS is not stale.
    return sha256_bytes(example.script.read_bytes().replace(b"\r\n", b"\n"))


def inputs_of(example: Example) -> dict:
    """Everything that determines an example's result, in the form stored in its metadata."""
    return {
        "snippet": example.script.relative_to(ROOT).as_posix(),
        "snippet_sha256": snippet_digest(example),
        "args": list(example.args),
        "freeze_format": FREEZE_FORMAT,
        # Only when repeated, so that the examples run once keep the hash they had.
        **({"repeats": example.repeats} if example.repeats > 1 else {}),
        **({"repeats_in": example.repeats_in} if example.repeats_in != "processes" else {}),
    }


# --- status -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Status:
    example: Example
    state: str  # "fresh", "missing", "stale" or "invalid" (metadata that cannot be used)
    reason: str = ""

    @property
    def ok(self) -> bool:
        return self.state == "fresh"


def status(example: Example) -> Status:
    if not example.meta_path.exists():
        return Status(example, "missing", f"{shown(example.meta_path)} is missing")
    try:
        meta = read_meta(example)
    except MetaError as err:
        return Status(example, "invalid", f"{shown(err.path)} {err.problem}")
    recorded, current = meta.inputs, inputs_of(example)
    if recorded.freeze_format != current["freeze_format"]:
        return Status(example, "stale", "the artifact format changed (scripts/series/runs/freeze.py)")
    if recorded.snippet != current["snippet"]:
        return Status(example, "stale", f"its snippet is now {current['snippet']}")
    if recorded.snippet_sha256 != current["snippet_sha256"]:
        return Status(example, "stale", f"{current['snippet']} changed since the last GPU run")
    if list(recorded.args) != current["args"]:
        was, now = " ".join(recorded.args), " ".join(current["args"])
        return Status(example, "stale", f"its arguments changed from '{was}' to '{now}'")
    if recorded.repeats != current.get("repeats", 1):
        return Status(example, "stale", f"its repeats changed from {recorded.repeats} to {example.repeats}")
    if recorded.repeats_in != current.get("repeats_in", "processes"):
        return Status(example, "stale", f"its repeats now run in {example.repeats_in}, not {recorded.repeats_in}")
    for name, digest in meta.outputs.items():
        path = example.folder / name
        try:
            content = path.read_bytes()
        except FileNotFoundError:
            return Status(example, "missing", f"{shown(path)} is missing")
        except OSError as err:
            return Status(example, "invalid", f"{shown(path)} cannot be read ({err.strerror or err})")
        if sha256_bytes(content) != digest:
            return Status(example, "stale", f"{shown(path)} was modified after the run")
    if example.unavailable_path.name not in meta.outputs:
        for path in example.extra_paths.values():
            if path.name not in meta.outputs:
                return Status(example, "stale", f"its run made no {path.name}, which the catalog now asks for")
    return Status(example, "fresh")


def check(examples: list[Example]) -> list[Status]:
    """The examples that are not fresh, but those never run that need more GPUs than this
    machine has (`awaits_gpus`): a build or `check` without them does not fail."""
    return [s for s in map(status, examples) if not s.ok
            and not (s.state == "missing" and awaits_gpus(s.example))]


def awaits_gpus(example: Example) -> bool:
    """An example of several GPUs that was never run, on a machine with fewer: it is left out of
    the check and of the pages until a machine with enough GPUs refreshes it."""
    return example.gpus > 1 and not example.meta_path.exists() and gpu_count() < example.gpus


def awaiting_report(examples: list[Example]) -> str:
    """One line for the examples `awaits_gpus` leaves out, or ''."""
    waiting = [e for e in examples if awaits_gpus(e)]
    if not waiting:
        return ""
    needs = sorted({e.gpus for e in waiting})
    return (f"{len(waiting)} example(s) not run yet, they need {' or '.join(map(str, needs))} GPUs "
            f"(this machine has {gpu_count()}): {' '.join(e.key for e in waiting)}")


def _refresh_keys(examples: list[Example]) -> list[str]:
    """The shortest ONLY= list: a snippet's name where all its examples need a run."""
    from .catalog import EXAMPLES

    keys = []
    for snippet in dict.fromkeys(e.snippet for e in examples):
        mine = [e for e in examples if e.snippet == snippet]
        everything = [e for e in EXAMPLES if e.snippet == snippet]
        keys += [snippet] if len(mine) == len(everything) else [e.key for e in mine]
    return keys


def stale_report(problems: list[Status]) -> str:
    """One message for all of them: which example, what changed, and the one command to run."""
    lines = [f"{len(problems)} frozen example(s) need a GPU run:"]
    lines += [f"  {p.example.key} is {p.state}: {p.reason}" for p in problems]
    keys = " ".join(_refresh_keys([p.example for p in problems]))
    lines.append(f'Refresh on a GPU machine with: make refresh ONLY="{keys}"  (then commit traces/)')
    return "\n".join(lines)


# --- writing ----------------------------------------------------------------------------------


def gzip_reproducibly(data: bytes) -> bytes:
    """gzip with no file name and a zero mtime: the same input gives the same bytes."""
    buffer = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buffer, mtime=0, compresslevel=9) as out:
        out.write(data)
    return buffer.getvalue()


# --- refresh ----------------------------------------------------------------------------------

ENV_PROBE = """
import json, platform, sys, torch
from importlib import metadata

def version(name):
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None

cuda = torch.cuda.is_available()
print(json.dumps({
    "torch": torch.__version__,
    "cuda": torch.version.cuda if cuda else None,
    "gpu": torch.cuda.get_device_name(0) if cuda else None,
    "python": platform.python_version(),
    "packages": {name: version(name) for name in sys.argv[1:]},
}))
"""

# A PEP 723 header: `# /// script` ... `# ///`, holding `# dependencies = ["torch>=2.4", ...]`.
_HEADER = re.compile(r"^# /// script$(.*?)^# ///$", re.S | re.M)
_DEPENDENCY_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")


def snippet_dependencies(example: Example) -> list[str]:
    """The packages a snippet's PEP 723 header asks for, by name, torch excepted (always probed)."""
    header = _HEADER.search(example.script.read_text())
    if not header:
        return []
    block = "\n".join(line.removeprefix("#").strip() for line in header.group(1).splitlines())
    listed = re.search(r"dependencies\s*=\s*\[(.*?)\]", block, re.S)
    names = [_DEPENDENCY_NAME.match(item.strip().strip("\"'")) for item in (listed.group(1).split(",") if listed else [])]
    return [m.group(1).lower() for m in names if m and m.group(1).lower() != "torch"]


def probe_environment(python: str, packages: list[str] = (), runner=None) -> dict:
    """Versions of the interpreter that runs the snippets, of the packages named, and the GPU
    driver; asked through `runner` (a fork server's child saves an import of torch) if given."""
    if runner is None:
        done = subprocess.run([python, "-c", ENV_PROBE, *packages], capture_output=True, text=True, check=False)
        code, stdout, stderr = done.returncode, done.stdout, done.stderr
    else:
        with tempfile.TemporaryDirectory(prefix="freeze-probe-") as tmp:
            script, out, err = Path(tmp) / "probe.py", Path(tmp) / "stdout.txt", Path(tmp) / "stderr.txt"
            script.write_text(ENV_PROBE)
            done = runner.run(runners.Job(script, tuple(packages), ROOT, out, err, runners.DEFAULT_TIMEOUT_S))
            code = done.returncode if done.ok else (done.returncode or 1)
            stdout, stderr = out.read_text(errors="replace"), done.error or err.read_text(errors="replace")
    if code != 0 or not stdout.strip():
        raise RuntimeError(f"{python} cannot import torch: {_last_line(stderr)}")
    env = json.loads(stdout.strip().splitlines()[-1])
    env["driver"] = _nvidia_driver()
    return env


def environment_of(example: Example, environment: dict) -> dict:
    """The probed environment as this example saw it: only the packages its snippet asks for."""
    wanted = snippet_dependencies(example)
    env = {key: value for key, value in environment.items() if key != "packages"}
    if wanted:
        env["packages"] = {name: environment.get("packages", {}).get(name) for name in wanted}
    return env


def _nvidia_driver() -> str | None:
    if not shutil.which("nvidia-smi"):
        return None
    done = subprocess.run(
        ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
        capture_output=True, text=True, check=False,
    )
    return done.stdout.strip().splitlines()[0] if done.returncode == 0 and done.stdout.strip() else None


def snippet_python() -> str:
    """The interpreter that runs snippets during a build: $SNIPPET_PYTHON, else this one."""
    return os.environ.get("SNIPPET_PYTHON") or sys.executable


def gpu_available() -> bool:
    return gpu_count() > 0


@functools.lru_cache(maxsize=1)
def gpu_count() -> int:
    """The GPUs nvidia-smi lists (0 without it)."""
    if not shutil.which("nvidia-smi"):
        return 0
    done = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, check=False)
    return sum(line.startswith("GPU") for line in done.stdout.splitlines()) if done.returncode == 0 else 0


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else "no output"


@dataclass
class RunResult:
    example: Example
    files: dict[str, bytes] = field(default_factory=dict)  # artifact name -> content
    error: str = ""
    wall_time_s: float = 0.0  # of the first run, the one whose artifacts are shown
    total_s: float = 0.0  # every run of the example, sanitizing included
    processes_s: float = 0.0  # of which in the runner, making and running its processes (the rest: sanitizing, digests)


# What a compiled run imports at its first torch.compile (seconds of Python, before any recorded
# step): a fork server imports it once, for the compiled runs of a snippet only, so that the
# eager children carry no more compiler than a profiled process loads anyway (below).
COMPILER_MODULES = ("torch._dynamo", "torch._inductor.compile_fx")
# What torch.profiler imports in every process, compiled or not, when it prepares its first trace
# (`hasattr(torch, "_inductor")` imports Inductor, its config, Dynamo and sympy: 3 s on a CPU
# machine, about 2 s of every eager run on the H200, where a compiled run, whose fork server had
# imported them, took 2.0 s against 4.4 s eager). It happens before anything is recorded, also
# when the schedule starts recording at once (prepare comes before start), so the fork server
# imports it once, beside torch, where torch has it.
PROFILER_MODULES = ("torch._inductor.config",)


def compiles(example: Example) -> bool:
    """Whether the example's run calls torch.compile (the sweep compiles unless told otherwise)."""
    return "--compile" in example.args or (example.snippet == "01_matmul_add_sweep" and "--modes" not in example.args)


def preloaded(example: Example) -> tuple[str, ...]:
    """The modules a fork server imports for this example beside its snippet's own imports."""
    return COMPILER_MODULES if compiles(example) else ()


class CompileCache:
    """Where torch.compile (Inductor, Triton) keeps what it compiled during one refresh: a
    directory made for the refresh and removed after it, so that no refresh starts from what an
    earlier one, or another torch, compiled. Warm examples share it: their compiles happen in their
    warm-up, outside the recorded steps, and a warm example's repeats compile nothing new. A cold
    example gets an empty one per process, so that a compile inside its recorded steps is a first
    compile every time. `CompileCache(None)` sets nothing (a run outside a refresh)."""

    def __init__(self, root: Path | None):
        self.root = root
        self._cold = 0

    @staticmethod
    def _variables(folder: Path) -> tuple[tuple[str, str], ...]:
        return (("TORCHINDUCTOR_CACHE_DIR", str(folder)), ("TRITON_CACHE_DIR", str(folder / "triton")))

    def shared(self) -> dict[str, str]:
        """The variables for every process of the refresh, the fork server's imports included."""
        return dict(self._variables(self.root / "shared")) if self.root else {}

    def env(self, example: Example) -> tuple[tuple[str, str], ...]:
        """The variables for one process running `example`."""
        if self.root is None:
            return ()
        if not example.cold:
            return self._variables(self.root / "shared")
        self._cold += 1
        return self._variables(self.root / f"cold-{self._cold}")


@dataclass
class _Run:
    """One run of a snippet, sanitized: its outputs by artifact name, or why there are none."""

    error: str = ""
    wall_time_s: float = 0.0
    mode: str = "isolated"  # how its process was made (scripts.series.runs.runner.Outcome.mode)
    outputs: dict[str, bytes] = field(default_factory=dict)
    trace: dict | None = None  # the sanitized trace (None where the example was unavailable)
    runner_s: float = 0.0  # in the runner: its process made (a fork server's switch of imports) and run


def _run_once(example: Example, run, timeout_s: float, *, artifacts: bool = True, runs: int = 1,
              env: tuple[tuple[str, str], ...] = ()) -> list[_Run]:
    """Run the snippet in one process, `runs` times one after the other (a warm example's repeats),
    each run sanitized: the first with its artifacts (unless not `artifacts`), the others keeping
    only their trace. One _Run with the error when the process failed."""
    with tempfile.TemporaryDirectory(prefix="freeze-") as tmp:
        out_dirs = [Path(tmp) / f"out{n}" for n in range(runs)]
        for out_dir in out_dirs:
            out_dir.mkdir()
        stderr = Path(tmp) / "stderr.txt"
        argv = [(*example.args, "--trace_dir", str(out_dir)) for out_dir in out_dirs]
        job = runners.Job(example.script, argv[0], ROOT, Path(tmp) / "stdout.txt", stderr, timeout_s * runs,
                          preloaded(example), more=tuple(argv[1:]), env=env,
                          times=Path(tmp) / "times.json" if runs > 1 else None)
        started = time.perf_counter()
        done = run.run(job)
        wall, mode, runner_s = done.wall_time_s, done.mode, time.perf_counter() - started
        if done.timed_out:
            return [_Run(f"timed out after {timeout_s * runs:g} s", wall, runner_s=runner_s)]
        if done.error:
            return [_Run(done.error, wall, runner_s=runner_s)]
        if done.returncode != 0:
            which = f"run {len(done.times_s)} of {runs}: " if runs > 1 and done.times_s else ""
            return [_Run(f"{which}exit {done.returncode}: {_last_line(stderr.read_text(errors='replace'))}", wall,
                         runner_s=runner_s)]
        # The first run's wall time is the process's, less the runs after it.
        times = [wall - sum(done.times_s[1:]), *done.times_s[1:]] if len(done.times_s) == runs > 1 else [wall] * runs
        return [_collect(example, out_dir, artifacts and n == 0,
                         _Run(wall_time_s=time_s, mode=mode, runner_s=runner_s if n == 0 else 0.0))
                for n, (out_dir, time_s) in enumerate(zip(out_dirs, times))]


def _collect(example: Example, out_dir: Path, artifacts: bool, done: _Run) -> _Run:
    """One run's outputs from out_dir, sanitized, into `done` (or why there are none)."""
    unavailable = out_dir / example.unavailable_path.name
    if unavailable.exists():
        # The snippet says what it cannot do here; that reason is the frozen result.
        reason = Scrubber.for_this_machine(out_dir).scrub(_last_line(unavailable.read_text()))
        done.outputs = {example.unavailable_path.name: (reason + "\n").encode()}
        return done
    expected = [out_dir / f"{stem}{suffix}" for stem in example.stems for suffix in (".json", ".txt")]
    if not all(path.exists() for path in expected):
        wrote = ", ".join(sorted(p.name for p in out_dir.iterdir())) or "nothing"
        names = " and ".join(f"{stem}.json and .txt" for stem in example.stems)
        done.error = f"expected {names}, the snippet wrote {wrote}"
        return done
    scrubber = Scrubber.for_this_machine(out_dir)
    sanitized = {}  # stem -> (trace, table): one of each per rank
    for stem in example.stems:
        trace = sanitize_trace(json.loads((out_dir / f"{stem}.json").read_text()), f"{stem}.json", scrubber)
        table = scrubber.scrub((out_dir / f"{stem}.txt").read_text())
        leaks = scrubber.leaks(trace, TRACE_NUMBER_KEYS) + scrubber.leaks(table)
        if leaks:
            done.error = f"the sanitizer left a machine path or name: {leaks[0][:120]!r}"
            return done
        sanitized[stem] = trace, table
    done.trace = sanitized[example.stems[0]][0]  # a repeat's digest reads the first rank's
    if artifacts:
        outputs = {}
        for stem, (one_trace, table) in sanitized.items():
            outputs[f"{stem}.json.gz"] = gzip_reproducibly(json.dumps(one_trace, separators=(",", ":")).encode())
            outputs[f"{stem}.txt"] = table.encode()
        for kind, path in example.extra_paths.items():
            try:
                outputs[path.name] = _frozen_extra(example, kind, out_dir, scrubber)
            except ExtraError as err:
                done.error = str(err)
                return done
        done.outputs = outputs
    return done


def _frozen_extra(example: Example, kind: str, out_dir: Path, scrubber: Scrubber) -> bytes:
    """An extra artifact the snippet wrote (scripts/catalog.EXTRAS), sanitized and gzipped."""
    written = out_dir / f"{example.tag}{EXTRAS[kind][0]}"
    if not written.exists():
        wrote = ", ".join(sorted(p.name for p in out_dir.iterdir())) or "nothing"
        raise ExtraError(f"expected {written.name} beside the trace, the snippet wrote {wrote}")
    clean = sanitized(kind, written.name, written.read_bytes(), scrubber)
    data = gzip_reproducibly(json.dumps(clean, separators=(",", ":")).encode())
    if len(data) > MAX_FROZEN_BYTES:
        raise ExtraError(f"{written.name} is {len(data) / 2**20:.1f} MB gzipped, over the "
                         f"{MAX_FROZEN_BYTES >> 20} MB that traces/ takes")
    return data


def run_example(example: Example, python: str, environment: dict, *, runner=None,
                timeout_s: float = runners.DEFAULT_TIMEOUT_S, compile_cache: CompileCache | None = None) -> RunResult:
    """Run one example `example.repeats` times (through `runner`, by default a fresh interpreter per
    process): a cold example in as many fresh processes, a warm one in one process. Return the first
    run's sanitized artifacts with the other runs' digests (nothing written)."""
    started = time.perf_counter()
    run = runner or runners.Isolated(python)
    cache = compile_cache or CompileCache(None)
    in_one = example.repeats_in == "one process"
    runs = _run_once(example, run, timeout_s, runs=example.repeats if in_one else 1, env=cache.env(example))
    first = runs[0]
    processes_s = sum(r.runner_s for r in runs)
    if first.error:
        return RunResult(example, error=first.error, wall_time_s=first.wall_time_s,
                         total_s=time.perf_counter() - started, processes_s=processes_s)
    outputs = dict(first.outputs)
    if first.trace is not None and example.repeats > 1:
        digests = []
        for number in range(2, example.repeats + 1):
            if in_one:
                again = runs[number - 1]
            else:
                again = _run_once(example, run, timeout_s, artifacts=False, env=cache.env(example))[0]
                processes_s += again.runner_s
            error = again.error or ("" if again.trace is not None else "it was unavailable this time")
            if error:
                return RunResult(example, error=f"run {number} of {example.repeats}: {error}",
                                 wall_time_s=first.wall_time_s, total_s=time.perf_counter() - started,
                                 processes_s=processes_s)
            digests.append({"wall_time_s": round(again.wall_time_s, 2), **samples_of(build_trace(again.trace))})
        outputs[example.samples_path.name] = (json.dumps(samples_file(digests), separators=(",", ":")) + "\n").encode()
    result = _frozen(example, outputs, environment, first.wall_time_s, first.mode)
    result.total_s, result.processes_s = time.perf_counter() - started, processes_s
    return result


def _frozen(example: Example, outputs: dict[str, bytes], environment: dict, wall: float,
            mode: str = "isolated") -> RunResult:
    """The run's outputs plus the metadata file that records how they were made."""
    inputs = inputs_of(example)
    meta = {
        "example": example.key,
        "command": example.command,
        "inputs": inputs,
        "inputs_hash": inputs_hash(inputs),
        "outputs": {name: sha256_bytes(content) for name, content in outputs.items()},
        "environment": environment_of(example, environment),
        "date": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "wall_time_s": round(wall, 2),
        # "forked": from the fork server's fork to exit, the imports done before; "isolated":
        # a fresh interpreter's whole life.
        "runner": mode,
    }
    outputs[example.meta_path.name] = meta_file_bytes(seal(meta))
    return RunResult(example, files=outputs, wall_time_s=wall)


def write_artifacts(result: RunResult) -> None:
    """Each file is written beside its target and renamed over it, so none is ever half-written.
    Outputs of the other kind (a trace where the example was unavailable before, or the reverse)
    are removed after."""
    example = result.example
    folder = example.folder
    folder.mkdir(parents=True, exist_ok=True)
    for name, content in result.files.items():
        partial = folder / f".{name}.partial"
        partial.write_bytes(content)
        os.replace(partial, folder / name)
    for leftover in (*example.trace_paths, *example.table_paths, example.unavailable_path, example.samples_path,
                     *example.extra_paths.values()):
        if leftover.name not in result.files and leftover.exists():
            leftover.unlink()


SLOWEST_SHOWN = 5


def report(results: list[RunResult], total_s: float, setup_s: float, writing_s: float) -> list[str]:
    """The refresh's time: in all, by phase (runner start, each part of the series, writing), and
    its slowest examples; a part's time splits into its processes' and the sanitizing and digests'."""
    from .catalog import phase_of

    lines = [f"refresh wall time: {total_s:.1f} s"]
    phases: dict[str, list[RunResult]] = {}
    for result in results:
        phases.setdefault(phase_of(result.example), []).append(result)
    width = max([len(name) for name in phases] + [len("runner start")])
    lines.append(f"  {'runner start':<{width}} {setup_s:6.1f} s  (the fork server's imports, the environment probe)")
    for name, members in phases.items():
        spent = sum(r.total_s for r in members)
        runs = sum(r.example.repeats for r in members)
        count = sum(1 if r.example.repeats_in == "one process" else r.example.repeats for r in members)
        running = sum(r.processes_s for r in members)
        lines.append(f"  {name:<{width}} {spent:6.1f} s  ({len(members)} example(s), {runs} run(s) in {count} "
                     f"process(es): running {running:.1f} s, sanitizing and digests {spent - running:.1f} s)")
    lines.append(f"  {'writing':<{width}} {writing_s:6.1f} s")
    slowest = sorted(results, key=lambda r: -r.total_s)[:SLOWEST_SHOWN]
    lines.append("  slowest: " + ", ".join(f"{r.example.key} {r.total_s:.1f} s" for r in slowest))
    return lines


def refresh(examples: list[Example], python: str, *, keep_going: bool = False, log=print,
            timeout_s: float = runners.DEFAULT_TIMEOUT_S, isolated: bool = False) -> int:
    """Run the examples (each run killed after timeout_s); write their artifacts only if all
    succeeded (or, with keep_going, those that did). Returns the number of failed examples."""
    started = time.perf_counter()
    fitting = [e for e in examples if e.gpus <= max(gpu_count(), 1)]
    for example in examples:
        if example not in fitting:
            log(f"  skipped {example.key}: it needs {example.gpus} GPUs, this machine has {gpu_count()}")
    examples = fitting
    packages = sorted({name for example in examples for name in snippet_dependencies(example)})
    results = []
    with tempfile.TemporaryDirectory(prefix="refresh-compile-", ignore_cleanup_errors=True) as cache_root:
        cache = CompileCache(Path(cache_root))
        with runners.open_runner(python, isolated=isolated, log=log, env=cache.shared(),
                                 imports=PROFILER_MODULES) as run:
            log(f"runner: {run.kind}")
            environment = probe_environment(python, packages, run)
            setup_s = time.perf_counter() - started
            processes = sum(1 if e.repeats_in == "one process" else e.repeats for e in examples)
            runs = sum(example.repeats for example in examples)
            log(f"refreshing {len(examples)} example(s), {runs} run(s) in {processes} process(es), with torch "
                f"{environment['torch']} on {environment['gpu'] or 'CPU'}")
            # A snippet's eager runs, then its compiled ones: a fork server then switches between
            # the two sets of imports once per snippet. Each example starts a fresh process.
            first_seen = {snippet: n for n, snippet in enumerate(dict.fromkeys(e.snippet for e in examples))}
            for example in sorted(examples, key=lambda e: (first_seen[e.snippet], bool(preloaded(e)))):
                result = run_example(example, python, environment, runner=run, timeout_s=timeout_s,
                                     compile_cache=cache)
                repeated = (f"; {example.repeats} runs in {example.repeats_in}, {result.total_s:.1f} s in all"
                            if example.repeats > 1 else "")
                log(f"  {'FAILED' if result.error else 'ok    '} {example.key} ({result.wall_time_s:.1f} s{repeated})"
                    + (f": {result.error}" if result.error else ""))
                results.append(result)
    writing = time.perf_counter()
    failed = [r for r in results if r.error]
    succeeded = [r for r in results if not r.error]
    if failed and not keep_going:
        log(f"refresh failed for {', '.join(r.example.key for r in failed)}; traces/ left unchanged")
    else:
        for result in succeeded:
            write_artifacts(result)
        log(f"wrote {len(succeeded)} example(s) under traces/"
            + (f"; failed: {', '.join(r.example.key for r in failed)}" if failed else ""))
    done = time.perf_counter()
    for line in report(results, done - started, setup_s, done - writing):
        log(line)
    return len(failed)
