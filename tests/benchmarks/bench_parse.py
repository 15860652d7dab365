"""`load_trace` before and after a change, side by side: seconds and peak memory, each load in a
fresh process, on the largest committed trace, a ~100 MB synthetic one, and reshaped copies.

    .venv/bin/python tests/benchmarks/bench_parse.py [--before REF] [--repeat N] [--timeout S]
        [--mb 100] [--cases NAME,...]

REF (default: the commit before `scripts/tracefacts/reading/events.py` was added) is extracted with `git archive`
into a temporary folder and imported from there; "after" is this checkout. The cases:

- `committed`: the largest `.json.gz` under traces/ (Kineto's layout, re-serialized compact);
- `synthetic`: the events of that trace repeated, each copy later, up to `--mb` MB of JSON,
  written as torch writes traces (one key a line, indented), gzipped;
- `sorted_keys`, `indented`, `no_ph`: the committed trace re-serialized with `sort_keys=True`,
  with `indent=2`, and without the "ph" key (every event then is no complete event: both sides
  refuse the file, the time is the time to refuse it).

Times are the median of the runs, memory the largest peak resident set (the child's own, from
/proc: Linux only); a load that runs past
`--timeout` seconds is stopped and shown as `>S`. Not a test: the machine's load moves both
columns; compare them, from one run.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

LOAD = """
import sys, time
sys.path.insert(0, sys.argv[1])
from scripts.tracefacts.model.trace import TraceError, load_trace
start = time.perf_counter()
try:
    trace = load_trace(sys.argv[2])
    count = trace.event_count
except TraceError:
    count = -1
seconds = time.perf_counter() - start
with open("/proc/self/status") as status:  # this process's own peak (rusage's counts the parent's
    peak = next(line.split()[1] for line in status if line.startswith("VmHWM"))  # before exec)
print(seconds, count, int(peak) / 1024)
"""


def baseline_ref() -> str:
    added = subprocess.run(
        ["git", "log", "--diff-filter=A", "--format=%H", "--", "scripts/tracefacts/reading/events.py"],
        cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    return f"{added[-1]}^" if added else "HEAD"


def extract(ref: str, folder: Path) -> Path:
    archive = subprocess.run(["git", "archive", ref, "scripts"], cwd=ROOT, capture_output=True,
                             check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(folder)], input=archive, check=True)
    return folder


def measure(root: Path, trace: Path, timeout: float) -> tuple[float | None, float, int]:
    """(seconds, or None past the timeout; the child's peak MB; complete events, -1 refused)."""
    child = subprocess.Popen([sys.executable, "-c", LOAD, str(root), str(trace)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + timeout
    while True:
        pid, status = os.waitpid(child.pid, os.WNOHANG)
        if pid:
            break
        if time.monotonic() > deadline:
            child.kill()
            child.wait()
            return None, 0.0, 0
        time.sleep(0.02)
    child.returncode = os.waitstatus_to_exitcode(status)
    out, err = child.stdout.read(), child.stderr.read()
    if child.returncode:
        raise SystemExit(f"load failed under {root}:\n{err[-2000:]}")
    seconds, count, peak = out.split()
    return float(seconds), float(peak), int(count)


def largest_trace() -> Path:
    return max((ROOT / "traces").rglob("*.json.gz"), key=lambda p: p.stat().st_size)


def make_cases(folder: Path, names: list[str], megabytes: int) -> dict[str, Path]:
    """The case files, written by a child process: this one stays small, and so does the
    peak memory that each load's process starts with."""
    subprocess.run([sys.executable, __file__, "--write-cases", str(folder),
                    "--cases", ",".join(names), "--mb", str(megabytes)], check=True)
    return {name: (largest_trace() if name == "committed" else folder / CASE_FILES[name])
            for name in names}


CASE_FILES = {"synthetic": "synthetic.json.gz", "sorted_keys": "sorted_keys.json",
              "indented": "indented.json", "no_ph": "no_ph.json"}


def write_cases(folder: Path, names: list[str], megabytes: int) -> None:
    data = json.loads(gzip.decompress(largest_trace().read_bytes()))
    events = data["traceEvents"]
    for name in names:
        if name == "committed":
            continue
        path = folder / CASE_FILES[name]
        if name == "synthetic":  # the events again and again, each copy later, up to the size
            complete = [e for e in events if e.get("ph") == "X"]
            span = max(e["ts"] + e.get("dur", 0) for e in complete) - min(e["ts"] for e in complete)
            per_event = len(json.dumps(events, indent=2)) / len(events)
            count = round(megabytes * 1e6 / per_event)
            out = []
            for i in range(count):
                copy, event = divmod(i, len(events))
                e = events[event]
                shifted = copy and "ts" in e
                out.append({**e, "ts": e["ts"] + copy * (span + 1000.0)} if shifted else e)
            text = json.dumps({**{k: v for k, v in data.items() if k != "traceEvents"},
                               "traceEvents": out}, indent=2)
            path.write_bytes(gzip.compress(text.encode(), compresslevel=1))
        elif name == "sorted_keys":
            path.write_text(json.dumps(data, sort_keys=True))
        elif name == "indented":
            path.write_text(json.dumps(data, indent=2))
        elif name == "no_ph":
            stripped = [{k: v for k, v in e.items() if k != "ph"} for e in events]
            path.write_text(json.dumps({**data, "traceEvents": stripped}))
        else:
            raise SystemExit(f"unknown case {name!r}")


def text_mb(path: Path) -> float:
    with path.open("rb") as head:
        gzipped = head.read(2) == b"\x1f\x8b"
    with (gzip.open if gzipped else open)(path, "rb") as stream:
        return sum(iter(lambda: len(stream.read(1 << 24)), 0)) / 1e6


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", default=None, help="git ref of the old reader")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds per load")
    parser.add_argument("--mb", type=int, default=100, help="size of the synthetic trace")
    parser.add_argument("--cases", default="committed,synthetic,sorted_keys,indented,no_ph")
    parser.add_argument("--write-cases", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.write_cases:
        write_cases(args.write_cases, args.cases.split(","), args.mb)
        return
    ref = args.before or baseline_ref()
    with tempfile.TemporaryDirectory() as tmp:
        before = Path(tmp) / "before"
        before.mkdir()
        extract(ref, before)
        cases = make_cases(Path(tmp), args.cases.split(","), args.mb)
        short = subprocess.run(["git", "rev-parse", "--short", ref], cwd=ROOT, capture_output=True,
                               text=True).stdout.strip()
        print(f"before: {ref} ({short}); after: this checkout. Median of {args.repeat} loads, "
              f"each in a fresh process; load average {os.getloadavg()[0]:.1f}")
        print(f"{'case':12}{'MB JSON':>8}{'events':>10}{'before s':>10}{'after s':>9}"
              f"{'speedup':>9}{'before MB':>11}{'after MB':>10}")
        for name, path in cases.items():
            times: dict[str, list] = {"before": [], "after": []}
            peaks = {"before": 0.0, "after": 0.0}
            count = 0
            for _ in range(args.repeat):  # alternating: both sides see the same load
                for side, root in (("before", before), ("after", ROOT)):
                    if None in times[side]:
                        continue  # past the timeout once: not again
                    seconds, peak, events = measure(root, path, args.timeout)
                    times[side].append(seconds)
                    peaks[side] = max(peaks[side], peak)
                    if side == "after":
                        count = events
            old, new = (_median(times[side]) for side in ("before", "after"))
            speedup = f"{old / new:8.1f}x" if old and new else f"{'':9}"
            shown = [f"{t:.2f}" if t is not None else f">{args.timeout:g}" for t in (old, new)]
            mem = [f"{peaks[s]:.0f}" if peaks[s] else "-" for s in ("before", "after")]
            events = f"{count:,}" if count >= 0 else "refused"
            print(f"{name:12}{text_mb(path):8.1f}{events:>10}{shown[0]:>10}{shown[1]:>9}{speedup}"
                  f"{mem[0]:>11}{mem[1]:>10}")
        print(f"load average after: {os.getloadavg()[0]:.1f}")


def _median(values: list[float | None]) -> float | None:
    if not values or any(v is None for v in values):
        return None
    return statistics.median(values)


if __name__ == "__main__":
    main()
