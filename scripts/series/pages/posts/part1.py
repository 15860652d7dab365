"""Part 1 (docs/blog/posts/part-1-matmul-add.md): what its blocks read from the runs.

Each function takes frozen runs (scripts.series.pages.helpers.Run) and returns numbers or small dataclasses; the
post words them and states its claims about them through scripts.series.pages.claims.
"""

from __future__ import annotations

from dataclasses import dataclass

from ....tracefacts.model.intervals import total, union
from ....tracefacts.pictures.profiler_table import to_us
from .exercises import LaunchWait, longest_launch_wait  # noqa: F401 (the page reads them as part1's)

MODULE_LOADING = ("Lazy Function Loading", "Runtime Triggered Module Loading")
LAUNCH_KINDS = ("runtime", "driver")


def in_step(events, step) -> list:
    return [e for e in events if step.ts <= e.ts < step.end]


# --- the table ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Totals:
    cpu_us: float  # Self CPU time total
    gpu_us: float  # Self CUDA time total

    @property
    def gpu_share(self) -> float:
        """GPU time as a share of CPU time, in %."""
        return 100.0 * self.gpu_us / self.cpu_us


def totals(run) -> Totals:
    return Totals(run.total_us("Self CPU time total"), run.total_us("Self CUDA time total"))


def gpu_shadow_us(run, label: str = "matmul_add") -> float:
    """The CUDA total of a label's GPU-side row (the row with CUDA time and no CPU time): a span
    from its first to its last kernel, idle time included."""
    table = run.table_data
    for row in table.rows:
        cells = dict(zip(table.columns, row))
        if row[0] == label and to_us(cells["CPU total"]) == 0 and to_us(cells["CUDA total"]) > 0:
            return to_us(cells["CUDA total"])
    raise KeyError(f"{run.example.key}: no GPU-side row for {label!r} in the table")


def table_launch_calls(run) -> list[str]:
    """The launch calls of the table (runtime/driver calls that started GPU work), in its order."""
    names = {launch.name for launch in map(run.trace.launch_of, run.trace.gpu_activities) if launch is not None}
    return [row[0] for row in run.table_data.rows if row[0] in names]


def gemm(run):
    """The first GEMM kernel of the run (cuBLAS names them nvjet on Hopper, *gemm* elsewhere)."""
    kernels = [k for k in run.trace.kernels if k.name.startswith("nvjet") or "gemm" in k.name.lower()]
    if not kernels:
        raise LookupError(f"{run.example.key}: no GEMM kernel in the trace")
    return kernels[0]


def gemms(run) -> list:
    first = gemm(run)
    return [k for k in run.trace.kernels if k.name == first.name]


def gemm_share(run) -> float:
    """The GEMM kernels' share of all GPU activity time, in %."""
    busy = sum(a.dur for a in run.trace.gpu_activities)
    return 100.0 * sum(k.dur for k in gemms(run)) / busy


def kernel_family(name: str) -> str:
    """What a kernel name starts with: nvjet, ampere, sm90, void ..."""
    return name.removeprefix("void ").split("_")[0].split("::")[0]


# --- steps ---------------------------------------------------------------------------------------


def first_step_rows(run, op: str = "aten::matmul") -> list[tuple[str, float, float | None]]:
    """(step, its length, from its start to the first `op`) for each recorded step."""
    offsets = {s["name"]: s["ops"][op]["first_us"] for s in run.samples()[0]["steps"] if op in s["ops"]}
    return [(step.name, step.dur, offsets.get(step.name)) for step in run.trace.steps]


def excess_before_op(run, op: str = "aten::matmul") -> float:
    """Of the first recorded step's extra length over the median later step, the share (in %)
    that comes before `op` starts (the median later offset subtracted likewise)."""
    from statistics import median

    rows = first_step_rows(run, op)
    (_, first_len, first_at), later = rows[0], rows[1:]
    extra = first_len - median(r[1] for r in later)
    before = first_at - median(r[2] for r in later if r[2] is not None)
    return 100.0 * before / extra


@dataclass(frozen=True)
class ColdStart:
    """What the first recorded step of a run recorded from step 0 holds that the others do not."""

    first_step: str
    loads_first: list  # module-loading events inside the first step
    loads_later: int
    mallocs_first: int
    mallocs_later: int
    first_launch_us: float  # the first cudaLaunchKernel call of the run


def cold_start(run) -> ColdStart:
    first, *later = run.trace.steps
    loads = [e for e in run.trace.events if e.name.startswith(MODULE_LOADING)]
    mallocs = run.events("cudaMalloc")
    return ColdStart(
        first.name,
        in_step(loads, first),
        sum(len(in_step(loads, s)) for s in later),
        len(in_step(mallocs, first)),
        sum(len(in_step(mallocs, s)) for s in later),
        run.events("cudaLaunchKernel")[0].dur,
    )


def module_loads(run) -> int:
    return sum(1 for e in run.trace.events if e.name.startswith(MODULE_LOADING))


# --- the gap before the first kernel --------------------------------------------------------------


@dataclass(frozen=True)
class StartupGap:
    """From the start of the first recorded step to the GPU's first activity."""

    gap_us: float
    inside_first_mm_us: float  # of which the first aten::mm was running
    buffer_request_us: float  # the profiler's Activity Buffer Request, wherever it ran

    @property
    def mm_share(self) -> float:
        return 100.0 * self.inside_first_mm_us / self.gap_us

    @property
    def buffer_share(self) -> float:
        return 100.0 * self.buffer_request_us / self.gap_us


def startup_gap(run) -> StartupGap:
    step = run.trace.steps[0]
    first_gpu = min(a.ts for a in run.trace.gpu_activities)
    mm = run.events("aten::mm")[0]
    inside = max(0.0, min(mm.end, first_gpu) - max(mm.ts, step.ts))
    requests = [e for e in run.events("Activity Buffer Request") if e.ts < first_gpu]
    return StartupGap(first_gpu - step.ts, inside, sum(e.dur for e in requests))


def self_cpu_pct(run, name: str) -> float:
    """A row's Self CPU % from the table."""
    row = run.table_data.row(name)
    if row is None:
        raise KeyError(f"{run.example.key}: no {name!r} row in the table")
    return float(row["Self CPU %"].rstrip("%"))


def later_steps_us(run, keep: int) -> float:
    """Host time of the recorded steps after the first `keep` ones (what a longer window adds)."""
    return sum(step.dur for step in run.trace.steps[keep:])


# --- launches ------------------------------------------------------------------------------------


def launch_of_kernel(run, prefix: str):
    kernel = next(k for k in run.trace.kernels if k.name.startswith(prefix))
    return run.trace.launch_of(kernel)


def occupancy_queries(run) -> dict[str, int]:
    """Per recorded step, how many cudaOccupancy* queries the host made."""
    queries = run.events("cudaOccupancy")
    return {step.name: len(in_step(queries, step)) for step in run.trace.steps}


def op_calls(run, name: str) -> int:
    return len(run.events(name, kind="cpu_op")) if name.startswith("aten::") else len(run.events(name))


def calls_per_step(run, names: tuple[str, ...]) -> dict[str, float]:
    steps = len(run.trace.steps)
    return {name: sum(1 for e in run.trace.events if e.name == name and e.kind == "cpu_op") / steps
            for name in names}


# --- the synchronize at the end -------------------------------------------------------------------


@dataclass(frozen=True)
class SyncWait:
    sync_us: float  # the profiler's closing cudaDeviceSynchronize
    gpu_busy_us: float  # all GPU work of the trace
    queued_us: float  # GPU work still running or queued when the synchronize began


def sync_wait(run) -> SyncWait:
    sync = run.events("cudaDeviceSynchronize")[0]
    busy = union((a.ts, a.end) for a in run.trace.gpu_activities)
    queued = total((max(start, sync.ts), end) for start, end in busy if end > sync.ts)
    return SyncWait(sync.dur, total(busy), queued)


# --- torch.compile -------------------------------------------------------------------------------

COMPILER_ROWS = ("Torch-Compiled Region", "TorchDynamo Cache Lookup", "AOTDispatcher Runtime Wrapper Prologue",
                 "## Call CompiledFxGraph")


def compiler_rows(run) -> dict[str, bool]:
    """Which of the compiler runtime's rows the table has (by prefix)."""
    names = [row[0] for row in run.table_data.rows]
    return {prefix: any(n.startswith(prefix) for n in names) for prefix in COMPILER_ROWS}


def activities_per_step(run) -> list[str]:
    """The distinct GPU activities of the run, by name, in order of first appearance."""
    return list(dict.fromkeys(a.name for a in run.trace.gpu_activities))


def has_op(run, name: str) -> bool:
    return any(e.name == name and e.kind == "cpu_op" for e in run.trace.events)


# --- the exercises --------------------------------------------------------------------------------


@dataclass(frozen=True)
class BufferRequest:
    """The profiler's Activity Buffer Request against the GPU's work in the step that holds it."""

    step: str | None
    first_step: str
    dur_us: float
    kernels_us: float  # the kernels of that step, summed


def buffer_request(run) -> BufferRequest:
    request = run.events("Activity Buffer Request")[0]
    steps = [s for s in run.trace.steps if s.ts <= request.ts < s.end]
    kernels = sum(k.dur for k in in_step(run.trace.kernels, steps[0])) if steps else 0.0
    return BufferRequest(steps[0].name if steps else None, run.trace.steps[0].name, request.dur, kernels)
