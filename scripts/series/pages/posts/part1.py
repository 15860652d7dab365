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


# --- the step the post draws, as its facts box and the picture's badge read it ----------------------


@dataclass(frozen=True)
class StepView:
    """One recorded step as the post shows it: its timeline, whose badge, and its facts box, whose
    headline, read these same facts (scripts.tracefacts.facts.window, the step's time split)."""

    step: str
    busy_pct: float  # GPU busy: the box's headline number, and the badge's
    host_wait_pct: float  # of the step's time, idle waiting for the host (the box's idle line)
    stalled_pct: float  # of the step's time, idle with work launched
    longest_launch_us: float | None  # the longest launch arrow: a launch call's end to its work's start
    verdict: str

    @property
    def idle_pct(self) -> float:
        return 100.0 - self.busy_pct


def step_view(run, step: int) -> StepView:
    window = step_window(run, step)
    w = run.trace_facts(window).window
    split = w.time_split
    waits = (split.host_wait_pct, split.stalled_pct) if split else (0.0, 0.0)
    return StepView(window.label, w.window_busy_pct, *waits, w.launches.delay_max_us,
                    w.verdict.label)


def step_window(run, step: int):
    """ProfilerStep#`step` as a window, as Run.timeline(step=...) draws it."""
    from ....tracefacts.model.trace import select_window

    return select_window(run.trace, step=step)


@dataclass(frozen=True)
class CpuTime:
    """The table's Self CPU total against the facts box's CPU busy, and what tells them apart."""

    self_total_us: float  # the table's Self CPU time total: every row's self time, added up
    labels_us: float  # of which, the self time of the label rows (ProfilerStep*, record_function)
    waits_us: float  # the host's time blocked in synchronizing calls (the facts' cpu_wait_us)
    cpu_busy_us: float  # the box's CPU busy: ops and launch calls in the window, less the waits

    @property
    def rest_us(self) -> float:
        """What the labels and the waits leave unexplained of the difference."""
        return self.self_total_us - self.labels_us - self.waits_us - self.cpu_busy_us


def cpu_time(run) -> CpuTime:
    """The table adds up every row's self time, labels included; CPU busy is the union of the
    host's ops and launch calls (labels are not work of their own) less its synchronizing waits."""
    table = run.table_data
    labels = {e.name for e in run.trace.by_kind.get("annotation", [])}

    def is_label(name: str) -> bool:  # the table folds ProfilerStep#N into one "ProfilerStep*" row
        return name in labels or (name.endswith("*") and any(n.startswith(name[:-1]) for n in labels))

    column = table.columns.index("Self CPU")
    window = run.trace_facts().window
    return CpuTime(run.total_us("Self CPU time total"),
                   sum(to_us(row[column]) for row in table.rows if is_label(row[0])),
                   window.cpu_wait_us, window.cpu_busy_us)


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
    """From the start of the first recorded step to the GPU's first activity, and the profiler's
    Activity Buffer Request in it (what fills the rest: exercises.host_time_before_gpu)."""

    gap_us: float
    buffer_request_us: float  # the profiler's Activity Buffer Request, wherever it ran

    @property
    def buffer_share(self) -> float:
        return 100.0 * self.buffer_request_us / self.gap_us


def startup_gap(run) -> StartupGap:
    step = run.trace.steps[0]
    first_gpu = min(a.ts for a in run.trace.gpu_activities)
    requests = [e for e in run.events("Activity Buffer Request") if e.ts < first_gpu]
    return StartupGap(first_gpu - step.ts, sum(e.dur for e in requests))


# --- launches ------------------------------------------------------------------------------------


def launch_of_kernel(run, prefix: str):
    kernel = next(k for k in run.trace.kernels if k.name.startswith(prefix))
    return run.trace.launch_of(kernel)


def occupancy_queries(run) -> dict[str, int]:
    """Per recorded step, how many cudaOccupancy* queries the host made."""
    queries = run.events("cudaOccupancy")
    return {step.name: len(in_step(queries, step)) for step in run.trace.steps}


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
