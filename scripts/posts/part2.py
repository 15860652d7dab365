"""Part 2 (docs/blog/posts/part-2-linear-mlp.md): what its blocks read from the runs."""

from __future__ import annotations

from dataclasses import dataclass
from statistics import mean


def launched_in(run, start: float, end: float, tid=None) -> list:
    """GPU activities whose launch call ran between start and end (on thread tid, if given)."""
    found = []
    for activity in run.trace.gpu_activities:
        launch = run.trace.launch_of(activity)
        if launch and start <= launch.ts < end and (tid is None or launch.tid == tid):
            found.append(activity)
    return found


def per_step(run) -> dict[str, list]:
    """The GPU activities each ProfilerStep launched, in launch order."""
    return {step.name: launched_in(run, step.ts, step.end) for step in run.trace.steps}


def steady_step_us(run) -> float:
    """Mean length of the recorded steps after the first (the first carries one-off costs)."""
    return mean(list(run.step_durations().values())[1:])


def step_lengths(runs: dict) -> tuple[list[str], dict[str, list[float]], bool]:
    """The recorded steps' names, each run's step lengths in order (label -> lengths), and
    whether the first recorded step is the longest in every run."""
    lengths = {label: list(run.step_durations().values()) for label, run in runs.items()}
    steps = list(next(iter(runs.values())).step_durations())
    return steps, lengths, all(d[0] == max(d) for d in lengths.values())


@dataclass(frozen=True)
class StepKernels:
    kernels: list  # the kernels one step launched, in launch order
    memsets: int
    steps_agree: bool  # every recorded step launched the same activities


def step_kernels(run, step: str = "ProfilerStep#3") -> StepKernels:
    launched = per_step(run)
    acts = launched[step]
    return StepKernels([a for a in acts if a.kind == "kernel"], sum(a.kind == "memset" for a in acts),
                       len({tuple(a.name for a in acts) for acts in launched.values()}) == 1)


@dataclass(frozen=True)
class VariantMeasures:
    """The analyzer's measures of one MLP variant, for the side-by-side tables."""

    gpu_busy_pct: float  # the time-window view: of the whole trace
    span_busy_pct: float  # the launched-work view: of the GPU time of its launched work
    idle_us: float  # the first stream's idle time between activities
    host_wait_pct: float  # of that idle time
    delay_p50_us: float | None  # median launch-to-start
    later_verdicts: list[str]  # the verdicts of the recorded steps after the first
    steady_step_us: float
    gpu_per_step_us: float  # all GPU activity over the recorded steps


def measures(run) -> VariantMeasures:
    facts = run.trace_facts()
    window, idle = facts.window, facts.window.idle_by_stream[0]
    return VariantMeasures(
        window.window_busy_pct, window.launched.busy_pct, idle.idle_us, idle.host_wait_pct,
        window.launches.delay_p50_us, [s.verdict.label for s in facts.steps[1:]], steady_step_us(run),
        window.window_busy_us / len(run.trace.steps))
