"""Part 2 (docs/blog/posts/part-2-linear-mlp.md): what its blocks read from the runs.

Each function takes frozen runs (scripts.series.pages.helpers.Run) and returns numbers, Spreads or small
dataclasses; the post words them and states its claims about them through scripts.series.pages.claims.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..claims import Spread, samples
from . import pooled

# The kernels that compute gelu(gate) * up in each MLP variant, matched by name.
GELU_MUL = {"eager": ("GeluCUDAKernelImpl", "MulFunctor"),
            "Inductor": ("triton_poi_fused",), "our Triton kernel": ("gelu_tanh_mul_kernel",)}
_GENERIC_FUNCTORS = {"BinaryFunctor", "AUnaryFunctor", "BUnaryFunctor"}

# Published peak memory bandwidth, TB/s, of the GPUs we know (NVIDIA's data sheets). A GPU not
# listed here gets no bandwidth comparison: the page says so instead of guessing.
HBM_PEAK_TBPS = {"NVIDIA H200": 4.8, "NVIDIA H100 80GB HBM3": 3.35, "NVIDIA A100-SXM4-80GB": 2.039}
# "Close to the memory's limit": a streaming kernel (a few flops per byte, far below any GPU's
# ridge point) that moves its bytes at this share of the published peak or more. Measured copy
# kernels reach about 80-90% of it; a kernel held back by anything else stays far below.
NEAR_PEAK_SHARE = 0.7


def short(name: str) -> str:
    """A kernel name a table can hold: a C++ template shortened to the functor that says what it does."""
    if "<" not in name:
        return name
    base = name.removeprefix("void ").split("<")[0].split("::")[-1]
    words = [w for w in re.findall(r"\w+(?:Functor|KernelImpl)", name) if w not in _GENERIC_FUNCTORS]
    return f"{base}<…{words[0]}…>" if words else f"{base}<…>"


def args_of(run) -> dict[str, int]:
    """The snippet's numeric command-line arguments, from the run's metadata."""
    args = run.meta.inputs.args
    return {k.lstrip("-"): int(v) for k, v in zip(args, args[1:]) if k.startswith("--") and v.isdigit()}


# --- one nn.Linear ---------------------------------------------------------------------------------


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


@dataclass(frozen=True)
class ChainRow:
    depth: int  # how many host events of the step contain it
    event: object
    launched: list  # the GPU activities launched inside it


def chain(run, step_index: int) -> list[ChainRow]:
    """The host events of one ProfilerStep (ops, labels, launch calls), each with its nesting depth
    and the GPU activities its launches started."""
    step = run.trace.steps[step_index]
    host = [e for e in run.trace.events if e.tid == step.tid and step.ts <= e.ts < step.end
            and e.kind in ("annotation", "cpu_op", "runtime", "driver")]
    rows = []
    for event in host:
        depth = sum(1 for other in host if other is not event and other.ts <= event.ts
                    and event.end <= other.end and (other.ts, -other.dur) < (event.ts, -event.dur))
        rows.append(ChainRow(depth, event, launched_in(run, event.ts, event.end, event.tid)))
    return rows


def launched_by(rows: list[ChainRow], name: str) -> list:
    """What the first host event called `name` of a chain launched."""
    return next(row.launched for row in rows if row.event.name == name)


def op_names(run) -> set[str]:
    return {e.name for e in run.trace.events if e.kind == "cpu_op"}


def later_steps(*runs) -> Spread:
    """The host length of every recorded step after each run's first, pooled over the runs."""
    return pooled(*(run.step_samples("dur_us", skip_first=True) for run in runs), label="step length")


# --- nvjet names -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class NvjetName:
    """An nvjet kernel name split at its underscores (our reading of the fields; see the post)."""

    family: str
    arch: str
    types: str
    tile: str
    k_stages: str
    cluster: str
    letter: str
    epilogue: str
    layout: str

    @classmethod
    def of(cls, name: str) -> NvjetName:
        parts = name.split("_")
        if parts[0] != "nvjet" or len(parts) < 9:
            raise ValueError(f"not an nvjet kernel name: {name!r}")
        return cls(*parts[:7], "_".join(parts[7:-1]), parts[-1])

    @property
    def tile_mn(self) -> tuple[int, int]:
        tm, tn = self.tile.split("x")
        return int(tm), int(tn)

    @property
    def tk_stages(self) -> tuple[int, int]:
        tk, stages = self.k_stages.split("x")
        return int(tk), int(stages)

    @property
    def schedule(self) -> str:
        """The epilogue's last word: coopA, coopB, or something else."""
        return self.epilogue.split("_")[-1]


def gemm_names(*runs, step: str = "ProfilerStep#3") -> list[str]:
    """The nvjet GEMMs the runs launched in one step, unique, in order of appearance."""
    names = [a.name for run in runs for a in per_step(run)[step] if a.name.startswith("nvjet")]
    return list(dict.fromkeys(names))


# --- the MLP variants ------------------------------------------------------------------------------


def gelu_mul_kernels(run, variant: str) -> list:
    return [k for k in run.trace.kernels if any(p in k.name for p in GELU_MUL[variant])]


def gelu_mul_samples(run, variant: str) -> Spread:
    """Per recorded step, the GPU time of the GELU-and-multiply kernels it launched."""
    values = [sum(a.dur for a in acts if any(p in a.name for p in GELU_MUL[variant]))
              for acts in per_step(run).values()]
    return samples(values, label="GELU-and-multiply per step", runs=[run.example.key])


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


def bandwidth_samples(moved_bytes: float, times: Spread) -> Spread:
    """TB/s per sample of a kernel time that moves `moved_bytes` (a ratio: unit '')."""
    return samples((moved_bytes / t / 1e6 for t in times.values), unit="", label="TB/s", runs=times.runs)


# The verdicts that say who sets the pace, from the GPU's own work to the host's.
_PACE = ("GPU-bound", "mixed", "overhead-bound")


def pace_shift(before: str, after: str) -> str:
    """Which way a change moved the verdict: "towards the host", "towards the GPU" or "unchanged";
    "from X to Y" where either verdict says nothing of who sets the pace (stalled, no GPU activity)."""
    if before not in _PACE or after not in _PACE:
        return f"from {before} to {after}"
    moved = _PACE.index(after) - _PACE.index(before)
    return "towards the host" if moved > 0 else "towards the GPU" if moved < 0 else "unchanged"


def gap_samples(run, pattern: str) -> Spread:
    """The GPU's idle time right before each kernel whose name contains `pattern`: from the end of
    the previous activity to its start, one sample per such kernel."""
    acts = run.trace.gpu_activities
    gaps = [a.ts - acts[n - 1].end for n, a in enumerate(acts) if n and pattern in a.name]
    return samples(gaps, label=f"GPU idle before {pattern}", runs=[run.example.key])


def launch_lead_samples(run, label: str) -> Spread:
    """Per `label` annotation: from entering it to its first launch call (host work before the
    GPU gets anything to do)."""
    found = []
    launches = [e for e in run.trace.events if e.kind in ("runtime", "driver")]
    for ann in (e for e in run.events(label) if e.kind == "annotation" and e.name == label):
        inside = [e.ts for e in launches if ann.ts <= e.ts < ann.end]
        if inside:
            found.append(min(inside) - ann.ts)
    return samples(found, label=f"{label} to its first launch", runs=[run.example.key])


def kernel_family(name: str) -> str:
    """Who wrote a kernel of this post: cuBLAS, Inductor, we, or ATen."""
    if name.startswith("nvjet"):
        return "cuBLAS"
    if name.startswith("triton_"):
        return "Inductor's Triton"
    if name.startswith("gelu_tanh_mul"):
        return "our Triton"
    return "ATen"


def enclosing_ops(run, event) -> list[str]:
    """The names of the CPU ops on the event's thread that contain it, outermost first."""
    return [e.name for e in sorted(run.trace.events, key=lambda e: (e.ts, -e.dur))
            if e.kind == "cpu_op" and e.tid == event.tid and e.ts <= event.ts and event.end <= e.end]



# --- the exercises --------------------------------------------------------------------------------


@dataclass(frozen=True)
class CompiledRegion:
    """The host time of a compiled run's `Torch-Compiled Region` rows over its recorded steps, and
    of the one op inside them that launches the work."""

    region_us: float
    op: str
    op_us: float  # the op's calls inside the regions
    steps: int

    @property
    def wrapper_us(self) -> float:
        """What the region costs around the op: guards, wrappers, the compiled graph's own Python."""
        return self.region_us - self.op_us


def compiled_region(run, op: str = "aten::addmm") -> CompiledRegion:
    trace = run.trace
    steps = trace.steps
    regions = [e for e in trace.events if e.kind == "cpu_op" and e.name.startswith("Torch-Compiled Region")
               and any(s.ts <= e.ts < s.end for s in steps)]
    inner = [e for e in trace.events if e.name == op and e.kind == "cpu_op"
             and any(r.tid == e.tid and r.ts <= e.ts and e.end <= r.end for r in regions)]
    return CompiledRegion(sum(r.dur for r in regions), op, sum(e.dur for e in inner), len(steps))
