"""Facts per labelled block of a trace: the matmul sweep's `{mode} n={size}` blocks and the LLM
runs' `decode b={batch}` steps.

A sweep puts many configurations in one trace, each inside a `record_function` annotation; the
annotation's span on the host is the window whose facts describe that configuration. Pure
functions from a loaded Trace to dataclasses; the pages and plots read these, never the trace.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from dataclasses import asdict, dataclass

# GAP_MIN_US: idle stretches shorter than this are not gaps (one definition, in analysis)
from .analysis import GAP_MIN_US, WindowFacts, facts_of_windows
from ..model.intervals import LatestEnds, gaps, total
from ..model.names import text_lines
from ..model.trace import Trace, TraceError, Window

# Sizes and batches in ASCII digits, nine at most: int() reads them all ("\\d" would take any
# script's digits, "$" a newline after them).
SWEEP_BLOCK = re.compile(r"(eager|compile|graph) n=([0-9]{1,9})\Z")
PEAK_BLOCK = re.compile(r"peak n=([0-9]{1,9})\Z")
LLM_STEP = re.compile(r"(prefill|decode) b=([0-9]{1,9})\Z")


def matmul_add_flops(n: int) -> int:
    """x @ w + b for n x n matrices: n multiply-adds per output element, then one add."""
    return 2 * n**3 + n**2


def _annotations(trace: Trace, pattern: re.Pattern) -> list:
    return [e for e in trace.by_kind.get("annotation", []) if pattern.match(e.name)]


LOOK_BACK_US = 1e6  # how long before a window an activity that runs into it may have begun


def idle_intervals(trace: Trace, window: Window) -> list[tuple[float, float]]:
    """The stretches (start, end) of the window in which no GPU activity ran, edges included:
    the GPU idle gaps a timeline of the window shades. The activities that began up to
    LOOK_BACK_US before the window cover its start up to the latest of their ends: that one
    end is read (`LatestEnds`), not each of them, which for windows shorter than LOOK_BACK_US
    (a trace's steps) would be a pass over the activities of many windows for each."""
    start, end = window.start, window.end
    activities, starts, ends = _by_start(trace)
    first = bisect_left(starts, start - LOOK_BACK_US)
    last = bisect_left(starts, end)
    inside = min(bisect_left(starts, start), last)
    busy = [(e.ts, e.end) for e in activities[inside:last]]
    reach = ends.latest(first, inside)  # [start, reach] is covered (clipped to the window by gaps)
    if reach > start:
        busy.append((start, reach))
    return gaps(busy, start, end)


def _by_start(trace: Trace) -> tuple[list, list[float], LatestEnds]:
    """The trace's GPU activities (in time order), their starts and `LatestEnds` of them, made
    once (a trace of many steps asks for them per step)."""
    found = trace.__dict__.get("_activities_by_start")
    if found is None:
        activities = trace.gpu_activities
        found = trace.__dict__["_activities_by_start"] = (
            activities, [e.ts for e in activities], LatestEnds([e.end for e in activities]))
    return found


def _idle_stretches(trace: Trace, window: Window) -> list[float]:
    """Lengths of the stretches of the window in which no GPU activity ran, edges included."""
    return [end - start for start, end in idle_intervals(trace, window)]


def launched_in(trace: Trace, windows: list[Window]) -> list[list]:
    """For each of some disjoint windows in time order, the GPU activities launched in it: by
    their launch call's start (one without a launch in the trace: by its own start), as
    scripts.tracefacts.facts.analysis and scripts.series.runs.samples attribute them."""
    starts = [w.start for w in windows]
    found: list[list] = [[] for _ in windows]
    for activity in trace.gpu_activities:
        launch = trace.launch_of(activity)
        at = launch.ts if launch is not None else activity.ts
        i = bisect_right(starts, at) - 1
        if 0 <= i < len(windows) and at < windows[i].end:
            found[i].append(activity)
    return found


# --- the matmul + add sweep ----------------------------------------------------------------------


@dataclass(frozen=True)
class SweepPoint:
    """One (mode, size) block: --steps steps back to back, then a synchronize."""

    mode: str  # eager / compile / graph
    size: int
    steps: int
    cpu_us_per_step: float  # mean span of the `step` annotations: the host's cost of one step
    wall_us_per_step: float  # the block's span over its steps: what a step costs end to end
    gpu_us_per_step: float  # GPU busy time in the block over its steps
    gpu_busy_pct: float  # of the block's span
    launches_per_step: float
    tflops: float  # useful work per wall time: what the program achieved
    kernel_tflops: float  # useful work per GPU busy time: what the kernels achieved while running
    verdict: str

    @property
    def gpu_bound(self) -> bool:
        """The GPU's work per step outlasts the host's: adding host speed would not help."""
        return self.gpu_us_per_step >= self.cpu_us_per_step


@dataclass(frozen=True)
class Sweep:
    peak_size: int
    peak_tflops: float  # bf16 matmul of peak_size, flops over GPU busy time: the measured ceiling
    peak_products: int  # matrix products timed
    points: tuple[SweepPoint, ...]

    def modes(self) -> list[str]:
        return list(dict.fromkeys(p.mode for p in self.points))

    def of_mode(self, mode: str) -> list[SweepPoint]:
        return sorted((p for p in self.points if p.mode == mode), key=lambda p: p.size)

    def point(self, mode: str, size: int) -> SweepPoint:
        for p in self.points:
            if p.mode == mode and p.size == size:
                return p
        raise KeyError(f"no {mode} n={size} block in the sweep")

    def crossover(self, mode: str = "eager") -> int | None:
        """The smallest size from which on every larger one the GPU's work per step outlasts the
        host's (None if it never does)."""
        found = None
        for p in reversed(self.of_mode(mode)):
            if not p.gpu_bound:
                break
            found = p.size
        return found

    def share_of_peak(self, point: SweepPoint) -> float:
        return 100.0 * point.tflops / self.peak_tflops


def sweep(trace: Trace) -> Sweep:
    """The sweep's facts from its trace. Raises TraceError when the trace is not a sweep."""
    blocks = _annotations(trace, SWEEP_BLOCK)
    peaks = _annotations(trace, PEAK_BLOCK)
    if not blocks or len(peaks) != 1:
        raise TraceError(f"{trace.source or 'trace'}: not a sweep (needs `{{mode}} n={{size}}` "
                         "annotations and one `peak n={size}`)")
    step_events = sorted(_annotations(trace, re.compile(r"step\Z")), key=lambda e: e.ts)
    step_starts = [e.ts for e in step_events]
    windows = [Window(e.ts, e.end, e.name) for e in [peaks[0], *blocks]]
    peak_facts, *block_facts = facts_of_windows(trace, windows)

    peak_size = int(PEAK_BLOCK.match(peaks[0].name).group(1))
    # One aten::mm per product; a GEMM may take more than one kernel (a memset, a split-K reduce).
    peak = peaks[0]
    products = sum(1 for e in trace.by_kind.get("cpu_op", []) if e.name == "aten::mm" and peak.ts <= e.ts < peak.end)
    if not products or not peak_facts.window_busy_us:
        raise TraceError(f"{trace.source or 'trace'}: the peak block has no aten::mm on the GPU")
    peak_tflops = 2 * peak_size**3 * products / peak_facts.window_busy_us / 1e6

    points = []
    for block, window in zip(blocks, block_facts):
        mode, size = SWEEP_BLOCK.match(block.name).groups()
        size = int(size)
        inside = step_events[bisect_left(step_starts, block.ts):bisect_left(step_starts, block.end)]
        steps = len(inside)
        if not steps:
            raise TraceError(f"{trace.source or 'trace'}: block {block.name!r} has no `step` annotations")
        flops = matmul_add_flops(size) * steps
        points.append(SweepPoint(
            mode=mode,
            size=size,
            steps=steps,
            cpu_us_per_step=sum(e.dur for e in inside) / steps,
            wall_us_per_step=window.dur_us / steps,
            gpu_us_per_step=window.window_busy_us / steps,
            gpu_busy_pct=window.window_busy_pct,
            launches_per_step=window.launches.launches / steps,
            tflops=flops / window.dur_us / 1e6,
            kernel_tflops=flops / window.window_busy_us / 1e6 if window.window_busy_us else 0.0,
            verdict=window.verdict.label,
        ))
    return Sweep(peak_size, peak_tflops, products, tuple(points))


@dataclass(frozen=True)
class SweepStep:
    """One `step` annotation of a sweep block: the samples behind a SweepPoint's per-step means,
    for the comparisons that need their spread."""

    start_us: float
    host_us: float  # the annotation's span: the host's cost of the step
    gpu_us: float  # busy time (union) of the GPU work launched in the step
    kernels: int  # kernels launched in the step
    launches: int  # launch calls in the step that started GPU work (a graph replay is one)


def sweep_steps(trace: Trace) -> dict[str, tuple[SweepStep, ...]]:
    """The steps of every `{mode} n={size}` block, by block name, in time order."""
    blocks = _annotations(trace, SWEEP_BLOCK)
    if not blocks:
        raise TraceError(f"{trace.source or 'trace'}: not a sweep (no `{{mode}} n={{size}}` annotations)")
    steps = sorted(_annotations(trace, re.compile(r"step\Z")), key=lambda e: e.ts)
    work = launched_in(trace, [Window(e.ts, e.end, "step") for e in steps])
    starts = [e.ts for e in steps]
    result = {}
    for block in blocks:
        lo, hi = bisect_left(starts, block.ts), bisect_left(starts, block.end)
        result[block.name] = tuple(
            SweepStep(step.ts, step.dur, total((a.ts, a.end) for a in launched),
                      sum(a.kind == "kernel" for a in launched),
                      len({id(launch) for launch in map(trace.launch_of, launched) if launch is not None}))
            for step, launched in zip(steps[lo:hi], work[lo:hi]))
    return result


# --- LLM steps -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class BatchFacts:
    """The profiled steps of one batch size: one new token per sequence each (decode), or one
    whole prompt (prefill)."""

    phase: str
    batch: int
    steps: int
    ms_per_step: float  # mean span of the step annotations (each ends with tokens on the host)
    gpu_busy_pct: float  # GPU busy time over the steps' spans
    gpu_ms_per_step: float
    idle_ms_per_step: float  # time in a step with nothing on the GPU: the timeline's gaps
    gaps_per_step: float  # idle stretches of GAP_MIN_US or more
    longest_gap_ms: float
    launches_per_step: float
    kernels_per_step: float
    verdict: str
    tokens_per_step: int

    @property
    def tokens_per_s(self) -> float:
        return self.tokens_per_step / (self.ms_per_step / 1e3)


@dataclass(frozen=True)
class LLMStep:
    """One `decode b=N` / `prefill b=N` step: the samples that a BatchFacts averages, for the
    comparisons that need their spread."""

    dur_us: float  # the annotation's span
    busy_us: float  # GPU busy time inside the span (time-window view)
    idle_us: float  # time in the span with nothing on the GPU
    gaps: int  # idle stretches of GAP_MIN_US or more
    longest_gap_us: float
    launches: int
    kernels: int
    verdict: str


def llm_step_samples(trace: Trace) -> dict[str, list[LLMStep]]:
    """The steps of each `decode b=N` / `prefill b=N` label, labels in the order they ran."""
    steps = _annotations(trace, LLM_STEP)
    if not steps:
        raise TraceError(f"{trace.source or 'trace'}: no `decode b=N` or `prefill b=N` annotations")
    windows = [Window(e.ts, e.end, e.name) for e in steps]
    grouped: dict[str, list[LLMStep]] = {}
    for window, facts in zip(windows, facts_of_windows(trace, windows)):
        idle = _idle_stretches(trace, window)
        grouped.setdefault(window.label, []).append(LLMStep(
            dur_us=facts.dur_us,
            busy_us=facts.window_busy_us,
            idle_us=sum(idle),
            gaps=sum(1 for length in idle if length >= GAP_MIN_US),
            longest_gap_us=max(idle, default=0.0),
            launches=facts.launches.launches,
            kernels=facts.activities_by_kind.get("kernel", 0),
            verdict=facts.verdict.label,
        ))
    return grouped


def llm_steps(trace: Trace, prompt_tokens: int = 1) -> list[BatchFacts]:
    """One BatchFacts per batch size in the trace, in the order they ran. `prompt_tokens` is
    the prompt length for a prefill trace (tokens per sequence per step); decode steps make one."""
    result = []
    for name, measured in llm_step_samples(trace).items():
        phase, batch = LLM_STEP.match(name).groups()
        batch = int(batch)
        count = len(measured)
        span = sum(s.dur_us for s in measured)
        busy = sum(s.busy_us for s in measured)
        verdicts = [s.verdict for s in measured]
        result.append(BatchFacts(
            phase=phase,
            batch=batch,
            steps=count,
            ms_per_step=span / count / 1e3,
            gpu_busy_pct=100.0 * busy / span,
            gpu_ms_per_step=busy / count / 1e3,
            idle_ms_per_step=sum(s.idle_us for s in measured) / count / 1e3,
            gaps_per_step=sum(s.gaps for s in measured) / count,
            longest_gap_ms=max(s.longest_gap_us for s in measured) / 1e3,
            launches_per_step=sum(s.launches for s in measured) / count,
            kernels_per_step=sum(s.kernels for s in measured) / count,
            verdict=max(sorted(set(verdicts)), key=verdicts.count),
            tokens_per_step=batch * (prompt_tokens if phase == "prefill" else 1),
        ))
    return result


# --- for scripts/analyze.py --blocks ------------------------------------------------------------


def blocks_of(trace: Trace) -> Sweep | list[BatchFacts]:
    """The labelled blocks this trace holds: the matmul sweep, or the LLM steps per batch size.
    Raises TraceError when it holds neither."""
    if _annotations(trace, PEAK_BLOCK):
        return sweep(trace)
    if _annotations(trace, LLM_STEP):
        return llm_steps(trace)
    raise TraceError(f"{trace.source or 'trace'}: no labelled blocks (`{{mode}} n={{size}}` with a "
                     "`peak n={size}`, or `decode b=N` / `prefill b=N`), as the sweep and LLM "
                     "snippets write")


def blocks_json(found: Sweep | list[BatchFacts]) -> dict:
    """What blocks_of found, JSON-ready: {"sweep": ...} or {"steps": [...]}."""
    if isinstance(found, Sweep):
        return {"sweep": asdict(found)}
    return {"steps": [asdict(b) for b in found]}


def blocks_text(found: Sweep | list[BatchFacts]) -> str:
    """What blocks_of found, as the lines analyze.py prints."""
    if isinstance(found, Sweep):
        lines = [f"sweep: peak {found.peak_tflops:.0f} TFLOP/s ({found.peak_products} products of n={found.peak_size})",
                 f"  {'block':>16} {'host/step':>10} {'wall/step':>10} {'GPU/step':>10} {'busy':>6} "
                 f"{'TFLOP/s':>9} {'of peak':>8}  verdict"]
        for p in found.points:
            lines.append(f"  {p.mode + ' n=' + str(p.size):>16} {p.cpu_us_per_step:>8.1f}us "
                         f"{p.wall_us_per_step:>8.1f}us {p.gpu_us_per_step:>8.1f}us "
                         f"{p.gpu_busy_pct:>5.1f}% {p.tflops:>9.3g} "
                         f"{found.share_of_peak(p):>7.2g}%  {p.verdict}")
        return text_lines(lines)
    lines = [f"steps: one line per batch size; per second: new tokens (decode) or prompts (prefill); "
             f"gaps: GPU idle stretches of {GAP_MIN_US:g} us or more",
             f"  {'phase':>7} {'batch':>6} {'ms/step':>8} {'per second':>10} {'busy':>6} {'idle ms':>8} "
             f"{'gaps':>6} {'launches':>8}  verdict"]
    for b in found:
        lines.append(f"  {b.phase:>7} {b.batch:>6} {b.ms_per_step:>8.2f} {b.tokens_per_s:>10,.0f} "
                     f"{b.gpu_busy_pct:>5.1f}% {b.idle_ms_per_step:>8.2f} {b.gaps_per_step:>6.0f} "
                     f"{b.launches_per_step:>8.0f}  {b.verdict}")
    return text_lines(lines)


# --- the costliest GPU activities of a batch size's steps ---------------------------------------


@dataclass(frozen=True)
class ActivityCost:
    """One GPU activity (by full name) in the steps of one batch size, per step."""

    name: str
    kind: str  # compute / communication / memory / other
    count_per_step: float
    us_per_step: float


def top_activities_per_step(trace: Trace, batch: int, top: int = 5) -> list[ActivityCost]:
    """The `top` GPU activities that took the most time in the `decode b=N` / `prefill b=N`
    steps of batch size `batch`, from the first such step's start to the last one's end."""
    steps = [e for e in trace.by_kind.get("annotation", []) if e.name in (f"decode b={batch}", f"prefill b={batch}")]
    if not steps:
        raise KeyError(f"{trace.source or 'trace'} has no batch {batch}")
    (window,) = facts_of_windows(trace, [Window(steps[0].ts, steps[-1].end, f"batch {batch}")], top=top)
    return [ActivityCost(k.name, k.kind, k.count / len(steps), k.total_us / len(steps)) for k in window.top_kernels]


def activity_time_per_step(trace: Trace, batch: int) -> dict[str, tuple[float, ...]]:
    """For each GPU activity name, its summed duration in each `decode b=N` / `prefill b=N`
    step of batch size `batch` (the work launched in the step), steps in time order: the
    per-step samples behind top_activities_per_step's means."""
    steps = sorted((e for e in trace.by_kind.get("annotation", [])
                    if e.name in (f"decode b={batch}", f"prefill b={batch}")), key=lambda e: e.ts)
    if not steps:
        raise KeyError(f"{trace.source or 'trace'} has no batch {batch}")
    work = launched_in(trace, [Window(e.ts, e.end, e.name) for e in steps])
    per_name: dict[str, list[float]] = {}
    for i, launched in enumerate(work):
        for activity in launched:
            per_name.setdefault(activity.name, [0.0] * len(steps))[i] += activity.dur
    return {name: tuple(values) for name, values in per_name.items()}
