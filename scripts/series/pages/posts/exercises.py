"""What the posts' "find it in the trace" exercises read from a run: the things a reader finds by
opening the trace in Perfetto (the longest launch wait, where the GPU's time goes, what one step
launches, which annotation holds an event), computed here so that each answer is a claim the
build checks against the same trace.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass


@dataclass(frozen=True)
class LaunchWait:
    """The kernel whose launch waited longest: from the end of its launch call to its start."""

    kernel: str
    launch: str
    delay_us: float
    busy_with: tuple[str, ...]  # the GPU activities that ran while it waited (none: the GPU idled)
    step: str | None  # the recorded step it ran in, if any
    after_steps: bool  # it started after the last recorded step had ended
    launch_ts: float  # when its launch call began (to find the annotation that holds it)
    previous: str | None  # the GPU activity launched just before it
    launch_step: str | None = None  # the recorded step whose span holds the launch call, if any

    @property
    def launched_in(self) -> str:
        """Where the launch call ran, for a sentence: "in `ProfilerStep#3`", or outside the steps."""
        return f"in `{self.launch_step}`" if self.launch_step else "outside the recorded steps"


def longest_launch_wait(run) -> LaunchWait:
    trace = run.trace
    pairs = [(k, trace.launch_of(k)) for k in trace.kernels]
    kernel, launch = max(((k, l) for k, l in pairs if l is not None), key=lambda p: p[0].ts - p[1].end)
    during = [a.name for a in trace.gpu_activities
              if a is not kernel and a.ts < kernel.ts and a.end > launch.end]
    steps = [s.name for s in trace.steps if s.ts <= kernel.ts < s.end]
    launched_in = [s.name for s in trace.steps if s.ts <= launch.ts < s.end]
    earlier = [(l.ts, a.ts, a.name) for a in trace.gpu_activities
               if (l := trace.launch_of(a)) is not None and l.ts < launch.ts]
    return LaunchWait(kernel.name, launch.name, max(kernel.ts - launch.end, 0.0), tuple(during),
                      steps[0] if steps else None, bool(trace.steps) and kernel.ts >= trace.steps[-1].end,
                      launch.ts, max(earlier)[2] if earlier else None, launched_in[0] if launched_in else None)


@dataclass(frozen=True)
class GpuShare:
    """One name's GPU time over the whole trace (all its kernels, copies or memsets of that name)."""

    name: str
    kind: str  # kernel, memcpy, memset
    calls: int  # activities of that name in the trace
    us: float
    pct: float  # of the GPU time of every activity in the trace


def gpu_time_by_name(run) -> list[GpuShare]:
    """The GPU's time by activity name, the largest first: Perfetto's area selection over the GPU
    lane, summed by name."""
    time, calls, kinds = Counter(), Counter(), {}
    for a in run.trace.gpu_activities:
        time[a.name] += a.dur
        calls[a.name] += 1
        kinds[a.name] = a.kind
    whole = sum(time.values())
    return [GpuShare(name, kinds[name], calls[name], us, 100.0 * us / whole) for name, us in time.most_common()]


@dataclass(frozen=True)
class StepWork:
    """The GPU work one recorded ProfilerStep launched (by the launch call's start), and the calls
    that launched it, counted by name."""

    step: str
    kernels: int
    activities: int  # kernels, copies and memsets
    launches: dict[str, int]  # launch call name -> calls in the step that started GPU work
    launched_by: dict[str, int]  # launch call name -> the activities those calls started

    @property
    def launch_calls(self) -> int:
        return sum(self.launches.values())


def step_work(run) -> list[StepWork]:
    trace = run.trace
    found = []
    for step in trace.steps:
        launched = [(a, l) for a in trace.gpu_activities
                    if (l := trace.launch_of(a)) is not None and step.ts <= l.ts < step.end]
        calls = {id(l): l.name for _, l in launched}
        found.append(StepWork(step.name, sum(a.kind == "kernel" for a, _ in launched), len(launched),
                              dict(Counter(calls.values())), dict(Counter(l.name for _, l in launched))))
    return found


def annotation_at(run, ts: float, pattern: str) -> str | None:
    """The innermost user annotation whose name matches `pattern` (a regular expression) and whose
    span holds the time `ts`: which labelled block of a run an event belongs to."""
    match = re.compile(pattern)
    holding = [e for e in run.trace.by_kind.get("annotation", [])
               if match.fullmatch(e.name) and e.ts <= ts < e.end]
    return min(holding, key=lambda e: e.dur).name if holding else None
