"""Repeated measurements of one example: a small digest of each run, and the values across runs.

A claim that A is slower than B needs more than one measurement of each (scripts.series.pages.claims decides
only when the spreads separate). The samples of an example are its recorded ProfilerSteps, in
the shown trace and in every extra process run of the same example that the refresh made. Each
run is digested by `samples_of(trace)`:

    {"steps": [{"name": "ProfilerStep#2",
                "dur_us": 180.9,
                "ops": {"aten::matmul": {"first_us": 40.0, "total_us": 35.1, "count": 1}, ...},
                "gpu": {"busy_us": 4.2, "kernels": 2}}, ...]}

- `ops`: every host event inside the step (CPU ops, `record_function` labels, runtime and driver
  calls, the profiler's own overhead events; not Python frames), by name: when the first one began
  after the step began (`first_us`), their summed durations (inclusive) and their count;
- `gpu`: the GPU work the step launched (a kernel, memcpy or memset belongs to the step in which
  its launch call began, as in scripts.tracefacts.facts.analysis; one without a launch in the trace, to the step in
  which it began): the union of its intervals, and how many kernels.

The extra runs live next to the other artifacts as `traces/<snippet>/<tag>.samples.json`,
`{"format": 1, "runs": [<digest>, ...]}` (absent for runs made before repetitions); the refresh
adds each run's `wall_time_s` beside its `steps` (a fresh process's life for a cold example, the
run inside the process of the first for a warm one: scripts.series.runs.catalog.Example.cold). Times are in microseconds, rounded to the
nanosecond so that the file is stable.

Standard library only: the GPU refresh writes these files.
"""

from __future__ import annotations

import json
from bisect import bisect_left, bisect_right
from pathlib import Path

from ...tracefacts.model.intervals import total

FORMAT = 1
SAMPLES_FORMAT = FORMAT
HOST_KINDS = frozenset({"cpu_op", "annotation", "runtime", "driver", "overhead"})


def samples_of(trace) -> dict:
    """The digest of one run (a scripts.tracefacts.model.trace.Trace): its ProfilerSteps, each with its ops and
    the GPU work it launched."""
    steps = trace.steps
    starts = [e.ts for e in trace.events]
    launched: list[list] = [[] for _ in steps]
    step_starts = [s.ts for s in steps]
    for activity in trace.gpu_activities:
        launch = trace.launch_of(activity)
        at = launch.ts if launch is not None else activity.ts
        i = bisect_right(step_starts, at) - 1  # the last step that began at or before `at`
        if 0 <= i < len(steps) and at < steps[i].end:
            launched[i].append(activity)
    digest = []
    for step, work in zip(steps, launched):
        ops: dict[str, dict] = {}
        for event in trace.events[bisect_left(starts, step.ts):bisect_left(starts, step.end)]:
            if event.kind not in HOST_KINDS or event is step:
                continue
            op = ops.setdefault(event.name, {"first_us": event.ts - step.ts, "total_us": 0.0, "count": 0})
            op["total_us"] += event.dur
            op["count"] += 1
        digest.append({
            "name": step.name,
            "dur_us": _us(step.dur),
            "ops": {name: {"first_us": _us(op["first_us"]), "total_us": _us(op["total_us"]),
                           "count": op["count"]} for name, op in ops.items()},
            "gpu": {"busy_us": _us(total((a.ts, a.end) for a in work)),
                    "kernels": sum(a.kind == "kernel" for a in work)},
        })
    return {"steps": digest}


def _us(value: float) -> float:
    return round(value, 3)


def samples_file(runs: list[dict]) -> dict:
    """The content of a `.samples.json`: the digests of the runs after the first, each with its
    `wall_time_s`."""
    return {"format": FORMAT, "runs": runs}


def samples_path(trace_path: Path) -> Path:
    """traces/<snippet>/<tag>.samples.json beside traces/<snippet>/<tag>.json.gz."""
    return trace_path.with_name(trace_path.name.removesuffix(".json.gz") + ".samples.json")


def read_extra_runs(path: Path) -> list[dict]:
    """The digests of the extra process runs stored at `path` ([] when there is no such file);
    a file of another shape raises ValueError with one line saying what is wrong."""
    if not path.exists():
        return []
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise ValueError(f"{path.name}: not readable as JSON ({err})") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT or not isinstance(doc.get("runs"), list):
        raise ValueError(f"{path.name}: expected {{\"format\": {FORMAT}, \"runs\": [...]}}")
    for n, run in enumerate(doc["runs"]):
        if not isinstance(run, dict) or not isinstance(run.get("steps"), list) or not all(
                isinstance(s, dict) and isinstance(s.get("dur_us"), (int, float)) and isinstance(s.get("ops"), dict)
                for s in run["steps"]):
            raise ValueError(f"{path.name}: run {n} is not a digest of steps (see scripts/series/runs/samples.py)")
    return doc["runs"]


def _steps(digests: list[dict], skip_first: bool) -> list[dict]:
    return [step for run in digests for step in run["steps"][1 if skip_first else 0:]]


def _field(step: dict, field: str) -> float | None:
    value = step
    for part in field.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def step_values(digests: list[dict], field: str, *, skip_first: bool) -> list[float]:
    """One value per recorded step of every run: `dur_us`, or a GPU field (`gpu.busy_us`,
    `gpu.kernels`). `skip_first` leaves out each run's first recorded step."""
    values = [_field(step, field) for step in _steps(digests, skip_first)]
    return [v for v in values if v is not None]


def first_step_values(digests: list[dict], field: str) -> list[float]:
    """The same field of each run's first recorded step only: one value per run."""
    values = [_field(run["steps"][0], field) for run in digests if run["steps"]]
    return [v for v in values if v is not None]


def op_values(digests: list[dict], name: str, field: str, *, skip_first: bool) -> list[float]:
    """One value per recorded step (of every run) in which the op or label `name` ran:
    its `first_us`, `total_us` or `count`."""
    return [float(step["ops"][name][field]) for step in _steps(digests, skip_first)
            if name in step["ops"] and isinstance(step["ops"][name].get(field), (int, float))]
