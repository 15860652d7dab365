"""The phases of a training step, from the trace alone: where each ProfilerStep's time went
between loading data, the forward pass, the backward pass and the optimizer, on the host and on
the GPU.

What a torch.profiler trace of a training loop holds without a label of the user's:

- the `ProfilerStep#N` spans of the schedule's `prof.step()`, on the loop's thread;
- the backward pass on a thread of its own: for CUDA tensors autograd runs the backward on a
  device thread, which Kineto names `pt_autograd_N` (its ops and the launches of the backward's
  kernels are on it, while the loop's thread waits in `loss.backward()`);
- `torch.optim`'s record_function around every `optimizer.step()`, `Optimizer.step#AdamW.step`
  (`Optimizer.step#<class>.step`), and the DataLoader's around every batch it hands out,
  `enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__` (or the multiprocessing one's).

A step is a training step where its backward is found: the autograd thread made runtime calls
in it. A CPU-only profile runs the backward on the loop's own thread and has none.

On the host, each training step's time splits into disjoint phases, in this order of precedence:
optimizer (inside an optimizer-step annotation on the loop's thread), backward (from the start of
the autograd thread's first runtime call in the step to the end of its last), data (inside a
DataLoader annotation), forward (the rest, up to the backward's start: the model's forward pass
and the loss), other (the rest of the step: zero_grad, logging, a `.item()`, anything between
the phases). The five add up to the step.

On the GPU, each activity launched in the step (by its launch call's start, as the analyzer
places every activity) belongs to the phase of its launch: backward where the call ran on an
autograd thread, else the phase of the loop's thread at the call's start (other on any other
thread). A phase's GPU busy time is the union of its activities' intervals, per GPU, summed.

A trace without a training step in the window gives None: the analyzer then prints what it
printed before these facts existed. Only what the analyzer's one pass keeps is read: the
annotations, the thread names, the launch calls' times and threads, the GPU activities' times.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from dataclasses import asdict, dataclass, field

from .terms import rounded
from ..model.intervals import total, union
from ..model.launches import activity_table, launch_table
from ..model.trace import Trace, Window

PHASES = ("data", "forward", "backward", "optimizer", "other")
OPTIMIZER_STEP = "Optimizer.step#"  # torch.optim's label of optimizer.step()
DATA_LOADER = "enumerate(DataLoader)#"  # torch.utils.data's label of each batch
AUTOGRAD_THREAD = re.compile(r"autograd")  # Kineto's "thread 1520 (pt_autograd_0)"


@dataclass
class Phase:
    """One phase of the steps: its host time and the GPU work launched in it."""

    phase: str  # data / forward / backward / optimizer / other
    host_us: float  # the steps' host time in the phase
    host_pct: float  # of the steps' host time
    gpu_busy_us: float  # the union of the activities launched in it, per GPU, summed
    gpu_pct: float  # of the GPU busy time of all the phases
    launches: int  # launch calls that started GPU work in it
    activities: int  # the GPU activities they started


@dataclass
class TrainingStep:
    label: str
    start_us: float
    end_us: float
    dur_us: float
    phases: list[Phase]


@dataclass
class TrainingFacts:
    """The training steps of a window, phase by phase: each step, and all of them summed."""

    label: str
    start_us: float
    end_us: float
    backward_threads: list[str]  # the autograd threads' names, as the trace gives them
    optimizers: list[str]  # the optimizer-step annotations' names found in the steps
    steps: list[TrainingStep]
    phases: list[Phase] = field(default_factory=list)  # over all the steps

    def to_dict(self) -> dict:
        """JSON-ready, times in us rounded to ns, percentages to 0.01."""
        return rounded(asdict(self))

    def phase(self, name: str) -> Phase:
        return next(p for p in self.phases if p.phase == name)


def autograd_threads(trace: Trace) -> set[tuple]:
    """The (pid, tid) of the threads Kineto names after autograd's device threads."""
    return {thread for thread, name in trace.thread_names.items() if AUTOGRAD_THREAD.search(name)}


def training_facts(trace: Trace, window: Window | None = None) -> TrainingFacts | None:
    """The training steps that start in `window` (default: the whole trace), or None where
    there is none (see the module's docstring)."""
    window = window or Window(0.0, trace.end_us, "whole trace")
    autograd = autograd_threads(trace)
    steps = [s for s in trace.steps if window.start <= s.ts < window.end]
    if not autograd or not steps:
        return None
    calls = launch_table(trace)
    backward_codes = {code for code, thread in enumerate(calls.threads.values) if thread in autograd}
    if not backward_codes:
        return None
    # Each step's backward on the host: its autograd threads' first and last runtime calls.
    starts = [s.ts for s in steps]
    spans: dict[int, list[float]] = {}
    ends = [s.end for s in steps]
    for ts, dur, code in zip(calls.ts, calls.dur, calls.threads.codes):
        if code in backward_codes:
            k = bisect_right(starts, ts) - 1
            if k >= 0 and ts < ends[k] and calls.threads.values[code][0] == steps[k].pid:
                found = spans.get(k)
                if found is None:
                    spans[k] = [ts, ts + dur]
                else:
                    if ts < found[0]:
                        found[0] = ts
                    if ts + dur > found[1]:
                        found[1] = ts + dur
    if not spans:
        return None
    chosen = sorted(spans)
    labels = _labels(trace)
    timelines = [_host_pieces(steps[k], spans[k], labels) for k in chosen]
    gpu = _gpu_work(trace, [steps[k] for k in chosen], timelines, backward_codes)
    done = []
    for k, pieces, (busy, launches, activities) in zip(chosen, timelines, gpu):
        step = steps[k]
        host = {phase: 0.0 for phase in PHASES}
        for start, end, phase in pieces:
            host[phase] += end - start
        done.append(TrainingStep(step.name, step.ts, step.end, step.dur,
                                 _phases(host, busy, launches, activities)))
    summed = {name: [sum(getattr(s.phases[i], name) for s in done) for i in range(len(PHASES))]
              for name in ("host_us", "gpu_busy_us", "launches", "activities")}
    optimizers = sorted({name for k in chosen for name in _in_step(labels, steps[k], OPTIMIZER_STEP)})
    return TrainingFacts(
        label=window.label, start_us=window.start, end_us=window.end,
        backward_threads=sorted({trace.lane_name(*calls.threads.values[code]) for code in backward_codes}),
        optimizers=optimizers, steps=done,
        phases=_phases(*(dict(zip(PHASES, summed[n])) for n in ("host_us", "gpu_busy_us", "launches",
                                                                 "activities"))))


def _phases(host: dict, busy: dict, launches: dict, activities: dict) -> list[Phase]:
    host_all, busy_all = sum(host.values()), sum(busy.values())
    return [Phase(p, host[p], 100.0 * host[p] / host_all if host_all else 0.0, busy[p],
                  100.0 * busy[p] / busy_all if busy_all else 0.0, int(launches[p]), int(activities[p]))
            for p in PHASES]


def _labels(trace: Trace) -> tuple[list[float], list]:
    """The optimizer-step and DataLoader annotations, by start: their starts, and the events."""
    found = [a for a in trace.by_kind.get("annotation", [])
             if a.name.startswith(OPTIMIZER_STEP) or a.name.startswith(DATA_LOADER)]
    found.sort(key=lambda a: a.ts)
    return [a.ts for a in found], found


def _in_step(labels: tuple[list[float], list], step, prefix: str) -> list[str]:
    """The names of the labels of one kind that start in the step, on its thread."""
    return [a.name for a in _labelled(labels, step) if a.name.startswith(prefix)]


def _labelled(labels: tuple[list[float], list], step) -> list:
    starts, events = labels
    lo, hi = bisect_left(starts, step.ts), bisect_left(starts, step.end)
    return [a for a in events[lo:hi] if (a.pid, a.tid) == (step.pid, step.tid)]


def _host_pieces(step, backward: list[float], labels: tuple[list[float], list]) -> list[tuple[float, float, str]]:
    """The step's host time, in order, as disjoint (start, end, phase) pieces that cover it."""
    optimizer, data = [], []
    for a in _labelled(labels, step):
        span = (a.ts, min(a.end, step.end))
        (optimizer if a.name.startswith(OPTIMIZER_STEP) else data).append(span)
    b0, b1 = max(backward[0], step.ts), min(backward[1], step.end)
    cuts = sorted({step.ts, step.end, b0, b1, *(t for span in optimizer + data for t in span)})
    optimizer, data = union(optimizer), union(data)
    pieces: list[tuple[float, float, str]] = []
    for start, end in zip(cuts, cuts[1:]):
        if end <= start:
            continue
        if _inside(optimizer, start, end):
            phase = "optimizer"
        elif b0 <= start and end <= b1:
            phase = "backward"
        elif _inside(data, start, end):
            phase = "data"
        elif end <= b0:
            phase = "forward"
        else:
            phase = "other"
        if pieces and pieces[-1][2] == phase and pieces[-1][1] == start:
            pieces[-1] = (pieces[-1][0], end, phase)
        else:
            pieces.append((start, end, phase))
    return pieces


def _inside(merged: list[tuple[float, float]], start: float, end: float) -> bool:
    """Whether [start, end] lies inside one of the merged intervals (cut at their ends)."""
    return any(s <= start and end <= e for s, e in merged)


def _gpu_work(trace: Trace, steps: list, timelines: list, backward_codes: set) -> list[tuple[dict, dict, dict]]:
    """Per step: each phase's GPU busy time, launch calls and activities (see the module's
    docstring for which phase an activity belongs to)."""
    calls = launch_table(trace)
    acts = activity_table(trace)
    rows = acts.launch_rows(calls)
    starts, ends = [s.ts for s in steps], [s.end for s in steps]
    piece_starts = [[p[0] for p in pieces] for pieces in timelines]
    codes = {thread: code for code, thread in enumerate(calls.threads.values)}
    loop_codes = [codes.get((s.pid, s.tid), -1) for s in steps]  # the code of each step's own thread
    first, last = starts[0], ends[-1]
    spans: dict[tuple, list] = {}  # (step, phase, device) -> [(start, end)] of its activities
    launched: dict[tuple, set] = {}  # (step, phase) -> launch rows
    call_ts, call_thread = calls.ts, calls.threads.codes
    for start, dur, device, row in zip(acts.ts, acts.dur, acts.device_of, rows):
        if row < 0:
            continue
        t = call_ts[row]
        if t < first or t >= last:
            continue
        k = bisect_right(starts, t) - 1
        if t >= ends[k]:
            continue
        code = call_thread[row]
        if code in backward_codes:
            phase = "backward"
        elif code == loop_codes[k]:
            phase = timelines[k][bisect_right(piece_starts[k], t) - 1][2]
        else:
            phase = "other"
        found = spans.get((k, phase, device))
        if found is None:
            found = spans[(k, phase, device)] = []
            launched.setdefault((k, phase), set())
        found.append((start, start + dur))
        launched[(k, phase)].add(row)
    found = []
    for k in range(len(steps)):
        busy = {p: 0.0 for p in PHASES}
        activities = {p: 0 for p in PHASES}
        for (step, phase, _), intervals in spans.items():
            if step == k:
                busy[phase] += total(intervals)
                activities[phase] += len(intervals)
        launches = {p: len(launched.get((k, p), ())) for p in PHASES}
        found.append((busy, launches, activities))
    return found


def training_text(facts: TrainingFacts) -> list[str]:
    """The training section of the analyzer's summary (names escaped by the caller's printer)."""
    from ..model.units import format_us

    steps = len(facts.steps)
    where = ", ".join(facts.backward_threads)
    optimizers = ", ".join(facts.optimizers) or "no optimizer step"
    lines = [f"training steps ({steps} ProfilerStep{'s' * (steps != 1)} with a backward on {where}; "
             f"{optimizers}), in {facts.label}:",
             f"  {'phase':<10}  {'host':>10}  {'of steps':>8}  {'GPU busy':>10}  {'of GPU':>7}  "
             f"{'launches':>8}  {'activities':>10}"]
    for p in facts.phases:
        lines.append(f"  {p.phase:<10}  {format_us(p.host_us):>10}  {p.host_pct:7.1f}%  "
                     f"{format_us(p.gpu_busy_us):>10}  {p.gpu_pct:6.1f}%  {p.launches:8,}  {p.activities:10,}")
    return lines
