"""What a repeated run contributes: a small per-step digest of its trace, kept beside the artifacts.

An example with `repeats > 1` runs in that many fresh processes; the first run's trace and table
are the artifacts shown, the others are kept only as this digest, in
`traces/<snippet>/<tag>.samples.json` = `{"format": 1, "runs": [run 2, run 3, ...]}`, each run being
`samples_of(its trace)` plus its `"wall_time_s"`. The claims compare medians and spreads over the
runs (the first one digested the same way from its trace).

Per `ProfilerStep#N` (in trace order):

- `dur_us`: the step annotation's length;
- `ops`: for each name of a host op (`cpu_op`) or user annotation that starts in the step's window
  (`ProfilerStep#...` itself excepted), in order of first appearance: `first_us`, its first start
  from the step's start; `total_us`, the sum of its durations (nested calls of one name each
  count); `count`;
- `gpu`: the GPU work the step launched, HTA's way and scripts/analysis.py's: each kernel, memcpy
  and memset belongs to the step whose window holds the start of its launch call (matched by
  correlation id; an activity without one by its own start), even when it runs past the step's
  end. `busy_us` is the union of their intervals, `kernels` the number of kernels among them.

Times are in microseconds, rounded to the nanosecond so the file is stable. Standard library only:
the refresh writes it.
"""

from __future__ import annotations

from bisect import bisect_right

from scripts.intervals import total
from scripts.trace import GPU_ACTIVITY_KINDS, Trace

SAMPLES_FORMAT = 1
HOST_KINDS = ("cpu_op", "annotation")


def _us(value: float) -> float:
    return round(value, 3)


def samples_of(trace: Trace) -> dict:
    """The per-step digest of one run (see the module's docstring)."""
    steps = sorted(trace.steps, key=lambda step: step.ts)
    starts = [step.ts for step in steps]

    def step_of(ts: float) -> int | None:
        index = bisect_right(starts, ts) - 1
        return index if index >= 0 and ts < steps[index].end else None

    ops: list[dict[str, dict]] = [{} for _ in steps]
    for event in trace.of_kinds(HOST_KINDS):
        if event.kind == "annotation" and event.name.startswith("ProfilerStep#"):
            continue
        index = step_of(event.ts)
        if index is None:
            continue
        found = ops[index].get(event.name)
        if found is None:
            ops[index][event.name] = {"first_us": event.ts - steps[index].ts, "total_us": event.dur, "count": 1}
        else:
            found["total_us"] += event.dur
            found["count"] += 1

    launched: list[list] = [[] for _ in steps]
    for activity in trace.events:
        if activity.kind not in GPU_ACTIVITY_KINDS:
            continue
        launch = trace.launch_of(activity)
        index = step_of(activity.ts if launch is None else launch.ts)
        if index is not None:
            launched[index].append(activity)

    return {"steps": [
        {
            "name": step.name,
            "dur_us": _us(step.dur),
            "ops": {name: {"first_us": _us(op["first_us"]), "total_us": _us(op["total_us"]), "count": op["count"]}
                    for name, op in step_ops.items()},
            "gpu": {"busy_us": _us(total((a.ts, a.end) for a in activities)),
                    "kernels": sum(a.kind == "kernel" for a in activities)},
        }
        for step, step_ops, activities in zip(steps, ops, launched)
    ]}


def samples_file(runs: list[dict]) -> dict:
    """The content of a `.samples.json`: the digests of the runs after the first, each with its
    `wall_time_s`."""
    return {"format": SAMPLES_FORMAT, "runs": runs}
