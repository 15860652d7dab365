"""Many snippet runs in one subprocess: torch's import and the profiler's first start are paid once.

The subprocess (the venv's python) loads each case's snippet and calls its main() with the case's
arguments, keeps what it printed, and records an exception rather than raising it, so one failing
case does not hide the others. A case may ask for torch.compile to be the identity, for checks of
what a snippet does around compilation without paying Inductor's C++ build on the CPU.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.conftest import ROOT

DRIVER = r"""
import contextlib, io, json, runpy, sys, time, traceback
import torch
cases, results = json.loads(sys.argv[1]), {}
real_compile = torch.compile
for name, (script, argv, identity_compile) in cases.items():
    main = runpy.run_path(script)["main"]  # not run as __main__: defines main() only
    stdout, started, error = io.StringIO(), time.perf_counter(), ""
    torch.compile = (lambda fn, **options: fn) if identity_compile else real_compile
    try:
        with contextlib.redirect_stdout(stdout):
            main(argv)
    except BaseException:  # SystemExit included: one case must not hide the others
        error = traceback.format_exc()
    finally:
        torch.compile = real_compile
    results[name] = {"stdout": stdout.getvalue(), "error": error, "seconds": time.perf_counter() - started}
print(json.dumps(results))
"""


def run_on_cpu(cases: dict[str, tuple[str, tuple[str, ...], str]], root: Path, timeout: float,
               identity_compile: frozenset[str] = frozenset()) -> dict[str, dict]:
    """Run each case `name -> (snippet stem, arguments, output stem)` on the CPU, writing into
    root/name; name -> {"stdout", "error", "seconds", "dir"}."""
    argv = {
        name: (str(ROOT / "snippets" / f"{snippet}.py"),
               ["--device", "cpu", "--trace_dir", str(root / name), *args], name in identity_compile)
        for name, (snippet, args, _) in cases.items()
    }
    done = subprocess.run([sys.executable, "-c", DRIVER, json.dumps(argv)],
                          capture_output=True, text=True, timeout=timeout, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-3000:]
    results = json.loads(done.stdout.strip().splitlines()[-1])
    for name, result in results.items():
        result["dir"] = root / name
    return results


def written(results: dict[str, dict], cases: dict, name: str) -> tuple[Path, str]:
    """The case's output stem (as a path in its folder) and its table text, after checking that it
    ran and wrote exactly a trace and a table."""
    result = results[name]
    assert not result["error"], result["error"]
    stem = cases[name][2]
    assert sorted(p.name for p in result["dir"].iterdir()) == [f"{stem}.json", f"{stem}.txt"]
    return result["dir"] / stem, (result["dir"] / f"{stem}.txt").read_text()
