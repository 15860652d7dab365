"""The matmul + add sweep (docs/blog/posts/matmul-add-sweep.md): what its blocks read from the run.

Every block (`eager n=64`, ...) runs its steps back to back, each inside a `step` annotation;
scripts.tracefacts.facts.blocks.sweep_steps gives one sample per step, so that comparisons between modes or sizes
rest on the spread of the steps, not on the block's means (which the table and plots show).
"""

from __future__ import annotations

from dataclasses import dataclass

from .. import cache, render
from ....tracefacts.facts.blocks import SweepStep, matmul_add_flops
from ..claims import Comparison, Spread, compare, samples

FIELDS = {"host_us": "us", "gpu_us": "us", "pace_us": "us", "kernels": "", "launches": ""}
SAID = {"host_us": "host time", "gpu_us": "GPU time", "pace_us": "time between steps", "kernels": "kernels",
        "launches": "launch calls"}  # how the comparisons' notes name the fields


def steps(run, mode: str, size: int) -> tuple[SweepStep, ...]:
    """The steps of the block `{mode} n={size}`, in time order."""
    found = cache.cached("sweep", render.sweep_steps_of, run.trace_input)
    try:
        return found[f"{mode} n={size}"]
    except KeyError:
        raise KeyError(f"{run.example.key}: no {mode} n={size} block") from None


def spread(run, mode: str, size: int, field: str) -> Spread:
    """One per-step quantity of a block: host_us (the step annotation's span), gpu_us (busy time
    of the GPU work the step launched), kernels, launches, or pace_us: from one step's start to
    the next one's (the block's last step has none), the rate at which the host issues steps."""
    block = steps(run, mode, size)
    if field == "pace_us":
        values = [b.start_us - a.start_us for a, b in zip(block, block[1:])]
    else:
        values = [getattr(s, field) for s in block]
    return samples(values, FIELDS[field], f"{field} per step, {mode} n={size}", [run.example.key])


def modes_against(run, a: str, b: str, size: int, field: str, question: str | None = None) -> Comparison:
    """Mode `a` against mode `b` at one size, on one per-step quantity (`question`: see
    scripts.series.pages.claims.compare)."""
    return compare(spread(run, a, size, field), spread(run, b, size, field),
                   what=f"{SAID[field]} per step at n = {size}", names=(a, b),
                   question=question)


def gpu_against_host(run, mode: str, size: int) -> Comparison:
    """Whether the GPU's work per step is shorter or longer than the host's time per step."""
    return compare(spread(run, mode, size, "gpu_us"), spread(run, mode, size, "host_us"),
                   what=f"time per step, {mode} n={size}", names=("GPU", "host"))


@dataclass(frozen=True)
class HostRange:
    """The median host time per step of each size of a mode, at its extremes."""

    low_us: float
    low_size: int
    high_us: float
    high_size: int

    @property
    def factor(self) -> float:
        return self.high_us / self.low_us


def host_range(run, sizes: list[int], mode: str = "eager") -> HostRange:
    med = {n: spread(run, mode, n, "host_us").median for n in sizes}
    low, high = min(med, key=med.get), max(med, key=med.get)
    return HostRange(med[low], low, med[high], high)


def work_growth(smallest: int, largest: int) -> float:
    """How many times the useful work of x @ w + b grows from one size to another."""
    return matmul_add_flops(largest) / matmul_add_flops(smallest)


def flat_until(run, sizes: list[int], mode: str = "eager", factor: float = 2.0) -> int:
    """The largest size up to which the GPU's median time per step stays under `factor` times its
    median time at the smallest size (every size up to it included)."""
    base = spread(run, mode, sizes[0], "gpu_us").median
    last = sizes[0]
    for n in sizes:
        if spread(run, mode, n, "gpu_us").median >= factor * base:
            break
        last = n
    return last


@dataclass(frozen=True)
class Doubling:
    size: int  # from this size to twice it
    factor: float  # of the plotted TFLOP/s (the blocks' means)
    pace: Comparison  # the per-step pace at `size` against the pace at twice it


def doublings(run, data, mode: str, up_to: int) -> list[Doubling]:
    """Each doubling of n below `up_to`: how much the plotted TFLOP/s grew, and whether the
    per-step pace changed."""
    points = [p for p in data.of_mode(mode) if p.size < up_to]
    result = []
    for p in points:
        if p.size * 2 not in {q.size for q in data.of_mode(mode)}:
            continue
        q = data.point(mode, p.size * 2)
        result.append(Doubling(p.size, q.tflops / p.tflops,
                               compare(spread(run, mode, p.size, "pace_us"), spread(run, mode, q.size, "pace_us"),
                                       what=f"time between steps, {mode}", names=(f"n = {p.size}", f"n = {q.size}"))))
    return result


def growth(run, mode: str, smaller: int, larger: int, field: str = "gpu_us") -> float:
    """How many times a per-step quantity's median grew from one size to another."""
    return spread(run, mode, larger, field).median / spread(run, mode, smaller, field).median


@dataclass(frozen=True)
class GraphSavings:
    """The CUDA graph against eager at each size both ran: GPU time per step, host time saved."""

    gpu: dict[int, Comparison]  # graph against eager, GPU time per step
    host_saved_us: dict[int, float]  # eager's median host time per step minus the graph's
    gpu_moved_us: dict[int, float]  # |graph - eager| of the medians of GPU time per step


def graph_savings(run, sizes: list[int]) -> GraphSavings:
    gpu = {n: modes_against(run, "graph", "eager", n, "gpu_us") for n in sizes}
    host = {n: spread(run, "eager", n, "host_us").median - spread(run, "graph", n, "host_us").median for n in sizes}
    return GraphSavings(gpu, host, {n: abs(c.a.median - c.b.median) for n, c in gpu.items()})


# --- the exercises --------------------------------------------------------------------------------


@dataclass(frozen=True)
class BlockStep:
    """What one `step` of a block put on the GPU, in launch order: (kind, name, launch call, bytes
    moved or set, 0 for a kernel), and the ops it called."""

    activities: tuple[tuple[str, str, str, int], ...]
    same_in_every_step: bool  # every step of the block launched the same sequence
    ops: frozenset[str]  # the CPU ops of the block's first step


def block_step(run, block: str) -> BlockStep:
    trace = run.trace
    span = next((e for e in trace.by_kind.get("annotation", []) if e.name == block), None)
    if span is None:
        raise KeyError(f"{run.example.key}: no {block} block")
    steps = [e for e in trace.by_kind["annotation"] if e.name == "step" and span.ts <= e.ts < span.end]
    per_step = []
    for step in steps:
        launched = sorted(((trace.launch_of(a), a) for a in trace.gpu_activities
                           if trace.launch_of(a) is not None and step.ts <= trace.launch_of(a).ts < step.end),
                          key=lambda p: (p[0].ts, p[1].ts))
        per_step.append(tuple((a.kind, a.name, l.name, int(a.args.get("bytes", 0))) for l, a in launched))
    ops = frozenset(e.name for e in trace.by_kind.get("cpu_op", []) if steps[0].ts <= e.ts < steps[0].end)
    return BlockStep(per_step[0], len(set(per_step)) == 1, ops)
