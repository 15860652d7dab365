"""The refresh's runners: the fork server and the isolated path give the same artifacts, repeats
keep the digests of the later runs, a hung snippet is killed at its timeout and costs nothing
frozen, a crash is reported by its last line, and CUDA is never initialized above a run."""

from __future__ import annotations

import gzip
import inspect
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from scripts.series.runs import catalog, freeze, runner
from scripts.series import cli
from scripts.series.runs.samples import samples_of
from scripts.tracefacts.model.trace import build_trace
from tests.conftest import ROOT, fake_project

pytestmark = pytest.mark.skipif(not runner.fork_available(), reason="the fork server needs Linux")


def hand_trace(run: int) -> dict:
    """Run `run`'s trace, as the test snippet writes it: two steps whose times move with the run."""
    def x(name, cat, ts, dur, **args):
        return {"ph": "X", "cat": cat, "name": name, "ts": ts, "dur": dur, "pid": 1, "tid": 1, "args": args}

    return {"traceEvents": [
        x("ProfilerStep#2", "user_annotation", 1000, 100 + run),
        x("aten::mm", "cpu_op", 1010 + run, 20),
        x("cudaLaunchKernel", "cuda_runtime", 1040, 5, correlation=7),
        {**x("gemm", "kernel", 1050, 80 * run, correlation=7), "pid": 0, "tid": 7},
        x("ProfilerStep#3", "user_annotation", 1100 + run, 50),
        x("aten::add", "cpu_op", 1110 + run, 3 * run),
    ]}


# A snippet with no real work, made to do what the tests need; it imports torch (the real one, or
# the fake below) at the top as the real snippets do.
TEST_SNIPPET = textwrap.dedent('''
    import argparse, atexit, json, os, pathlib, subprocess, sys, time
    import torch

    parser = argparse.ArgumentParser()
    for flag in ("--tag", "--counter", "--pids", "--log"):
        parser.add_argument(flag)
    parser.add_argument("--crash_on", type=int)
    for flag in ("--crash", "--hang", "--cuda", "--facts"):
        parser.add_argument(flag, action="store_true")
    parser.add_argument("--exit", type=int)
    parser.add_argument("--trace_dir", type=pathlib.Path)
    args = parser.parse_args()
    args.trace_dir.mkdir(parents=True, exist_ok=True)
    if args.cuda:
        torch.cuda.init()
    if args.facts:
        # What a process running this file can see of how it was started.
        main = sys.modules["__main__"]
        atexit.register(lambda: print("atexit ran"))
        (args.trace_dir / "facts.json").write_text(json.dumps({
            "name": __name__, "argv": sys.argv, "path0": sys.path[0], "cwd": os.getcwd(),
            "file": __file__, "main_file": getattr(main, "__file__", None),
            "stdin": sys.stdin.read(), "nvml": os.environ.get("PYTORCH_NVML_BASED_CUDA_CHECK"),
            "same_group": os.getpgid(0) == os.getpid(),
        }))
        print("to stdout"); print("to stderr", file=sys.stderr)
        sys.exit(args.exit or 0)
    if args.hang:
        helper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
        pathlib.Path(args.pids).write_text(f"{os.getpid()} {helper.pid}")
        time.sleep(600)
    if args.crash:
        print("loading the model")
        print("a warning on the way", file=sys.stderr)
        raise RuntimeError("CUDA error: out of memory")
    run = 1
    if args.counter:
        counter = pathlib.Path(args.counter)
        run = int(counter.read_text()) + 1 if counter.exists() else 1
        counter.write_text(str(run))
    if args.log:  # which process ran, and the compile cache it was given
        with open(args.log, "a") as log:
            log.write(json.dumps([os.getpid(), os.environ.get("TORCHINDUCTOR_CACHE_DIR"),
                                  os.environ.get("TRITON_CACHE_DIR")]) + "\\n")
    if args.crash_on == run:
        raise RuntimeError(f"run {run} crashed")
''') + textwrap.dedent(inspect.getsource(hand_trace)) + textwrap.dedent('''
    (args.trace_dir / (args.tag + ".json")).write_text(json.dumps(hand_trace(run)))
    (args.trace_dir / (args.tag + ".txt")).write_text("table\\n")
''')

# A torch that is only what the fork server asks of it, and says who asked: it lets the tests
# see where "CUDA" is initialized without a GPU (and start the server without torch's import).
FAKE_TORCH = textwrap.dedent('''
    import os
    __version__ = "fake"
    _IMPORTED_BY = os.getpid()

    def _log(what):
        if os.environ.get("FAKE_CUDA_LOG"):
            with open(os.environ["FAKE_CUDA_LOG"], "a") as log:
                log.write(f"{os.getpid()} {what}\\n")

    class _Cuda:
        _initialized = bool(os.environ.get("FAKE_CUDA_AT_IMPORT"))

        def is_initialized(self):
            _log("is_initialized")
            return self._initialized

        def init(self):
            _log("init")
            if os.environ.get("FAKE_DRIVER_STARTED") and os.getpid() != _IMPORTED_BY:
                raise RuntimeError("CUDA error: initialization error")
            self._initialized = True

        def device_count(self):
            return int(bool(os.environ.get("FAKE_GPU")))

        def _is_in_bad_fork(self):
            return bool(os.environ.get("FAKE_BAD_FORK")) and os.getpid() != _IMPORTED_BY

    cuda = _Cuda()

    class backends:
        class cuda:
            is_built = staticmethod(lambda: True)
''')


@pytest.fixture
def project(tmp_path, monkeypatch):
    """A catalog of test snippets in a temporary tree; the torch they import is a fake."""
    fake_project(tmp_path, monkeypatch, TEST_SNIPPET)
    (tmp_path / "fake_torch" / "torch").mkdir(parents=True)
    (tmp_path / "fake_torch" / "torch" / "__init__.py").write_text(FAKE_TORCH)
    monkeypatch.setenv("PYTHONPATH", str(tmp_path / "fake_torch"))
    monkeypatch.setenv("FAKE_CUDA_LOG", str(tmp_path / "cuda.log"))
    monkeypatch.delenv("PYTORCH_NVML_BASED_CUDA_CHECK", raising=False)
    return tmp_path


def fake(tag: str, *args: str, repeats: int = 1, cold: bool = False) -> catalog.Example:
    return catalog.Example("fake", tag, ("--tag", tag, *args), repeats, cold=cold)


def snapshot(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def quiet(*_):
    pass


def job(project: Path, name: str, *args: str, timeout_s: float = 60) -> runner.Job:
    out = project / "runs" / name
    out.mkdir(parents=True)
    return runner.Job(project / "snippets" / "fake.py", (*args, "--trace_dir", str(out / "trace")), project,
                      out / "stdout.txt", out / "stderr.txt", timeout_s)


# --- the same run either way -------------------------------------------------------------------


def test_a_forked_run_sees_what_a_fresh_interpreter_sees(project):
    """Arguments, __main__, sys.path, cwd, stdin, the environment, exit code, atexit and output
    files: the child of the fork server is indistinguishable from `python snippet.py` here."""
    facts, outputs = {}, {}
    for name, make in (("isolated", runner.Isolated), ("forked", runner.ForkServer)):
        with make(sys.executable) as run:
            done = run.run(job(project, name, "--facts", "--exit", "3"))
        assert (done.returncode, done.timed_out, done.error, done.mode) == (3, False, "", name)
        facts[name] = json.loads((project / "runs" / name / "trace" / "facts.json").read_text())
        facts[name]["argv"][-1] = "TRACE_DIR"  # the one argument that differs, by design
        outputs[name] = [(project / "runs" / name / f).read_text() for f in ("stdout.txt", "stderr.txt")]
    assert facts["forked"] == facts["isolated"]
    assert facts["forked"]["name"] == "__main__" and facts["forked"]["nvml"] is None
    assert facts["forked"]["path0"] == str(project / "snippets") and facts["forked"]["stdin"] == ""
    assert outputs["forked"] == outputs["isolated"] == ["to stdout\natexit ran\n", "to stderr\n"]


def test_fork_server_and_isolated_refresh_give_artifacts_of_the_same_shape(tmp_path, monkeypatch):
    """Part 1's snippet on the CPU, with the real torch, through both runners (the environment
    probe included): the same files, the same steps and ops, and metadata that differs only
    where a run does (date, wall time, the hashes of what was measured, the runner)."""
    pytest.importorskip("torch")
    (tmp_path / "snippets").mkdir()
    shutil.copy(ROOT / "snippets" / "01_matmul_add.py", tmp_path / "snippets")
    monkeypatch.setattr(catalog, "SNIPPETS", tmp_path / "snippets")
    for module in (catalog, freeze):
        monkeypatch.setattr(module, "ROOT", tmp_path)
    example = catalog.Example("01_matmul_add", "16_bf16_cold_eager", ("--device", "cpu", "--size", "16"))
    metas, steps, ops, tables = {}, {}, {}, {}
    for mode in ("forked", "isolated"):
        for module in (catalog, freeze):
            monkeypatch.setattr(module, "TRACES", tmp_path / mode)
        log = []
        assert freeze.refresh([example], sys.executable, log=log.append, isolated=mode == "isolated") == 0, log
        files = snapshot(tmp_path / mode / "01_matmul_add")
        assert sorted(files) == ["16_bf16_cold_eager.json.gz", "16_bf16_cold_eager.meta.json", "16_bf16_cold_eager.txt"]
        metas[mode] = json.loads(files["16_bf16_cold_eager.meta.json"])
        trace = build_trace(json.loads(gzip.decompress(files["16_bf16_cold_eager.json.gz"])))
        steps[mode] = [s.name for s in trace.steps]
        ops[mode] = {e.name for e in trace.events if e.kind == "cpu_op"}
        tables[mode] = [line.split()[0] for line in files["16_bf16_cold_eager.txt"].decode().splitlines()[3:-3]]
        assert freeze.status(example).ok
    assert metas["forked"]["runner"] == "forked" and metas["isolated"]["runner"] == "isolated"
    varying = {"date", "wall_time_s", "outputs", "runner", "meta_sha256"}  # the seal covers them all
    assert {k: v for k, v in metas["forked"].items() if k not in varying} == \
           {k: v for k, v in metas["isolated"].items() if k not in varying}
    assert metas["forked"]["environment"]["torch"] == __import__("torch").__version__
    assert metas["forked"]["outputs"].keys() == metas["isolated"]["outputs"].keys()
    assert steps["forked"] == steps["isolated"] == ["ProfilerStep#2", "ProfilerStep#3", "ProfilerStep#4"]
    assert ops["forked"] == ops["isolated"] and {"aten::matmul", "aten::mm", "aten::add"} <= ops["forked"]
    assert sorted(tables["forked"]) == sorted(tables["isolated"])


# --- repeats -----------------------------------------------------------------------------------


def _logged(project: Path) -> list[list]:
    return [json.loads(line) for line in (project / "log").read_text().splitlines()]


@pytest.mark.parametrize("isolated", [False, True], ids=["forked", "isolated"])
@pytest.mark.parametrize("cold", [True, False], ids=["cold", "warm"])
def test_repeats_keep_the_first_run_and_the_digests_of_the_others(project, cold, isolated):
    """A cold example's runs are three processes, a warm one's three runs of one process; either
    way the shown artifacts are run 1's and the samples hold digests of the same shape."""
    counter = project / "counter"
    example = fake("rep", "--counter", str(counter), "--log", str(project / "log"), repeats=3, cold=cold)
    log = []
    assert freeze.refresh([example], sys.executable, log=log.append, isolated=isolated) == 0, log
    assert counter.read_text() == "3"  # three runs
    pids = [pid for pid, *_ in _logged(project)]
    assert len(set(pids)) == (3 if cold else 1)
    files = snapshot(project / "traces" / "fake")
    shown = json.loads(gzip.decompress(files["rep.json.gz"]))
    assert shown["traceEvents"] == hand_trace(1)["traceEvents"]  # the artifacts are run 1's
    samples = json.loads(files["rep.samples.json"])
    assert samples["format"] == 1 and len(samples["runs"]) == 2
    for run, digest in zip((2, 3), samples["runs"]):
        assert digest.pop("wall_time_s") >= 0
        assert digest == samples_of(build_trace(hand_trace(run)))
    meta = json.loads(files["rep.meta.json"])
    assert meta["inputs"]["repeats"] == 3
    assert meta["inputs"].get("repeats_in", "processes") == ("processes" if cold else "one process")
    assert set(meta["outputs"]) == {"rep.json.gz", "rep.txt", "rep.samples.json"}
    assert freeze.status(example).ok
    where = "processes" if cold else "one process"
    assert any("fake/rep" in line and f"3 runs in {where}" in line for line in log)
    # The report: the total, the phase, its processes apart from the sanitizing, the slowest.
    report = "\n".join(log)
    assert "refresh wall time:" in report and "runner start" in report and "slowest: fake/rep" in report
    processes = 3 if cold else 1
    assert re.search(rf"fake +[\d.]+ s +\(1 example\(s\), 3 run\(s\) in {processes} process\(es\): running [\d.]+ s", report)


def test_the_fork_server_imports_what_the_profiler_would_import_in_each_run(project):
    """torch.profiler imports Inductor's config in every process when it prepares a trace: the
    fork server does it once, before any run; where torch has none, runs still fork."""
    package = project / "fake_torch" / "torch" / "_inductor"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "config.py").write_text(
        "import os\nwith open(os.environ['FAKE_CUDA_LOG'], 'a') as log:\n    log.write(f'{os.getpid()} config\\n')\n")
    logged = str(project / "log")
    log = []
    assert freeze.refresh([fake("a", "--log", logged, repeats=2, cold=True), fake("b", "--log", logged)],
                          sys.executable, log=log.append) == 0, log
    imports = [int(line.split()[0]) for line in (project / "cuda.log").read_text().splitlines() if line.endswith("config")]
    runs = {pid for pid, *_ in _logged(project)}
    assert len(imports) == 1 and imports[0] not in runs and len(runs) == 3
    assert json.loads((project / "traces" / "fake" / "a.meta.json").read_text())["runner"] == "forked"


def test_the_compile_cache_is_one_per_refresh_shared_by_warm_runs_and_empty_for_each_cold_one(project):
    """torch.compile's caches live in a directory made for the refresh and removed after it: the
    warm examples' runs share one, each cold process gets its own, none is the user's default."""
    logged = str(project / "log")
    examples = [fake("w1", "--log", logged, repeats=2), fake("w2", "--log", logged),
                fake("c1", "--log", logged, repeats=2, cold=True)]
    assert freeze.refresh(examples, sys.executable, log=quiet) == 0
    runs = _logged(project)
    assert len(runs) == 5
    warm, cold = runs[:3], runs[3:]
    assert len({inductor for _, inductor, _ in warm}) == 1 and len({inductor for _, inductor, _ in cold}) == 2
    for _, inductor, triton in runs:
        assert inductor and Path(inductor).name in ("shared",) + tuple(f"cold-{n}" for n in range(1, 9))
        assert triton == str(Path(inductor) / "triton")
        assert not Path(inductor).parent.exists()  # removed with the refresh
    assert {Path(inductor).parent for _, inductor, _ in runs} == {Path(warm[0][1]).parent}
    assert freeze.refresh(examples[1:2], sys.executable, log=quiet) == 0
    assert Path(_logged(project)[-1][1]).parent != Path(warm[0][1]).parent  # a new one per refresh


def test_repeats_enter_the_inputs_only_above_one(project):
    once, twice = fake("a"), fake("a", repeats=2)
    assert "repeats" not in freeze.inputs_of(once)
    assert freeze.inputs_of(twice)["repeats"] == 2
    assert freeze.refresh([once], sys.executable, log=quiet) == 0
    status = freeze.status(twice)
    assert status.state == "stale" and "repeats changed from 1 to 2" in status.reason
    assert freeze.refresh([twice], sys.executable, log=quiet) == 0
    assert (project / "traces" / "fake" / "a.samples.json").exists() and freeze.status(twice).ok
    # Back to one run: the repeated run's samples file goes with the rest of its artifacts.
    assert freeze.refresh([once], sys.executable, log=quiet) == 0
    assert not (project / "traces" / "fake" / "a.samples.json").exists() and freeze.status(once).ok


def test_a_failing_repeat_fails_its_example(project, monkeypatch):
    real_run_once, calls = freeze._run_once, []

    def second_run_crashes(example, run, timeout_s, **options):
        calls.append(example)
        return real_run_once(fake("flaky", "--crash") if len(calls) == 2 else example, run, timeout_s, **options)

    monkeypatch.setattr(freeze, "_run_once", second_run_crashes)
    log = []
    assert freeze.refresh([fake("flaky", repeats=3, cold=True)], sys.executable, log=log.append) == 1
    assert len(calls) == 2  # no third run once one failed
    assert any("run 2 of 3: exit 1: RuntimeError: CUDA error: out of memory" in line for line in log)
    assert not (project / "traces").exists()


@pytest.mark.parametrize("isolated", [False, True], ids=["forked", "isolated"])
def test_a_failing_repeat_in_one_process_fails_its_example_and_ends_the_process(project, isolated):
    counter = project / "counter"
    example = fake("flaky", "--counter", str(counter), "--crash_on", "2", repeats=3)
    log = []
    assert freeze.refresh([example], sys.executable, log=log.append, isolated=isolated) == 1
    assert counter.read_text() == "2"  # no third run once one failed
    assert any("run 2 of 3: exit 1: RuntimeError: run 2 crashed" in line for line in log), log
    assert not (project / "traces").exists()


# --- timeouts and crashes ----------------------------------------------------------------------


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, IndexError):
        return False
    return state not in ("Z", "X")  # a zombie waiting for a container's init is dead


@pytest.mark.parametrize("isolated", [False, True], ids=["forked", "isolated"])
def test_a_hung_snippet_is_killed_at_the_timeout_and_nothing_frozen_changes(project, isolated):
    earlier = [fake("run0"), fake("run1")]
    assert freeze.refresh(earlier, sys.executable, log=quiet) == 0
    before = snapshot(project / "traces")
    log = []
    started = time.perf_counter()
    pids = project / "pids"
    failed = freeze.refresh([earlier[0], fake("hang", "--hang", "--pids", str(pids))], sys.executable,
                            log=log.append, timeout_s=3, isolated=isolated)
    elapsed = time.perf_counter() - started
    assert failed == 1
    report = "\n".join(log)
    assert "FAILED fake/hang" in report and "timed out after 3 s" in report and "left unchanged" in report
    assert snapshot(project / "traces") == before
    assert elapsed < 60, "the hung run was not cut at its timeout"
    snippet, helper = map(int, pids.read_text().split())
    deadline = time.monotonic() + 10
    while (_alive(snippet) or _alive(helper)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _alive(snippet) and not _alive(helper), "the run's process group survived its timeout"


@pytest.mark.parametrize("isolated", [False, True], ids=["forked", "isolated"])
def test_a_crashing_snippet_reports_its_last_stderr_line(project, isolated):
    log = []
    assert freeze.refresh([fake("boom", "--crash")], sys.executable, log=log.append, isolated=isolated) == 1
    line = next(line for line in log if "FAILED fake/boom" in line)
    assert line.endswith("exit 1: RuntimeError: CUDA error: out of memory")


def test_a_fork_server_that_dies_fails_only_the_run_it_had(project):
    with runner.ForkServer(sys.executable, log=quiet) as run:
        assert run.run(job(project, "first", "--tag", "x")).ok
        zygote = run.zygote_pid
        os.kill(zygote, 9)  # as an out-of-memory killer would
        lost = run.run(job(project, "lost", "--tag", "x"))
        assert not lost.ok and "fork server" in lost.error
        again = run.run(job(project, "again", "--tag", "x"))  # a new server
        assert again.ok and again.mode == "forked" and run.zygote_pid != zygote


# --- CUDA stays in the runs --------------------------------------------------------------------


def _cuda_log(project: Path) -> list[tuple[int, str]]:
    text = (project / "cuda.log").read_text() if (project / "cuda.log").exists() else ""
    return [(int(pid), what) for pid, what in (line.split() for line in text.splitlines())]


def test_cuda_is_initialized_only_in_the_runs_each_in_its_own_process(project):
    with runner.ForkServer(sys.executable, log=quiet) as run:
        outcomes = [run.run(job(project, f"r{n}", "--tag", "x", "--cuda")) for n in range(3)]
        root, zygote = run.root_pid, run.zygote_pid
        server = {root, zygote}
    assert all(o.ok and o.mode == "forked" for o in outcomes)
    log = _cuda_log(project)
    initializing = [pid for pid, what in log if what == "init"]
    assert len(set(initializing)) == 3, "each run makes its own context"
    assert not server & set(initializing)
    # The zygote asked before each of its forks (and after its imports), the root after its own.
    checks = [pid for pid, what in log if what == "is_initialized"]
    assert checks.count(zygote) >= 3 + 1 and root in checks


def test_on_a_gpu_the_server_checks_once_per_snippet_that_a_child_can_make_a_context(project, monkeypatch):
    monkeypatch.setenv("FAKE_GPU", "1")
    with runner.ForkServer(sys.executable, log=quiet) as run:
        outcomes = [run.run(job(project, f"r{n}", "--tag", "x", "--cuda")) for n in range(2)]
        server = {run.root_pid, run.zygote_pid}
    assert all(o.ok and o.mode == "forked" for o in outcomes)
    initializing = [pid for pid, what in _cuda_log(project) if what == "init"]
    assert len(initializing) == len(set(initializing)) == 3  # the check's child, then the two runs
    assert not server & set(initializing)


@pytest.mark.parametrize("how, said", [
    (("FAKE_CUDA_AT_IMPORT",), "importing torch initialized CUDA"),
    (("FAKE_BAD_FORK",), "a forked child cannot use CUDA (torch calls this process a bad fork)"),
    (("FAKE_GPU", "FAKE_DRIVER_STARTED"), "a forked child cannot use CUDA (RuntimeError: CUDA error: initialization error)"),
], ids=["initialized", "bad fork", "driver started"])
def test_a_server_with_cuda_started_is_refused_and_the_runs_are_isolated(project, monkeypatch, how, said):
    for variable in how:
        monkeypatch.setenv(variable, "1")
    log = []
    with runner.ForkServer(sys.executable, log=log.append) as run:
        outcome = run.run(job(project, "r", "--tag", "x"))
    assert outcome.ok and outcome.mode == "isolated"
    assert any(said in line and "isolated" in line for line in log), log


def test_a_snippet_whose_imports_initialize_cuda_runs_isolated_and_the_others_forked(project):
    (project / "snippets" / "cuda_at_import.py").write_text("import torch\ntorch.cuda.init()\n")
    greedy = project / "snippets" / "greedy.py"
    greedy.write_text("import cuda_at_import\n" + TEST_SNIPPET)
    log = []
    with runner.ForkServer(sys.executable, log=log.append) as run:
        base = job(project, "g", "--tag", "x")
        refused = run.run(runner.Job(greedy, base.args, base.cwd, base.stdout, base.stderr, base.timeout_s))
        other = run.run(job(project, "f", "--tag", "x"))
    assert refused.ok and refused.mode == "isolated"
    assert other.ok and other.mode == "forked"
    assert any("refused greedy.py" in line and "initialized CUDA" in line for line in log), log


# --- the command line --------------------------------------------------------------------------


@pytest.mark.parametrize("value", ["0", "-5", "soon", "inf"])
def test_refresh_refuses_a_timeout_that_is_not_a_positive_number(value, capsys):
    with pytest.raises(SystemExit) as exit:
        cli.main(["refresh", "--timeout", value])
    assert exit.value.code == 2
    assert "expected a positive number of seconds" in capsys.readouterr().err


def test_the_refresh_path_imports_only_the_standard_library():
    """It runs on a bare GPU image: python -m scripts refresh, and the fork server before torch."""
    probe = textwrap.dedent('''
        import sys
        sys.modules["torch"] = None  # importing torch fails
        before = set(sys.modules)
        import scripts.series.cli, scripts.series.runs.freeze, scripts.series.runs.runner, scripts.series.runs.samples, scripts.series.runs.forkserver
        added = {name.split(".")[0] for name in set(sys.modules) - before}
        print(sorted(added - set(sys.stdlib_module_names) - {"scripts"}))
    ''')
    done = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True,
                                        env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
