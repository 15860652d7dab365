"""Part 4 (docs/blog/posts/part-4-llm-inference.md): what its blocks read from the runs.

The runs label every step `decode b=N` (or `prefill b=N`); the per-step samples come from those
labels (scripts.tracefacts.facts.blocks.llm_step_samples), the same steps the page's tables average, so a claim
and the table next to it read the same steps. The frozen LLM runs have no extra process runs, so
the samples of a quantity are its steps in the one trace (`--tokens` of them per batch size).
"""

from __future__ import annotations

from dataclasses import dataclass
from statistics import median

from .. import cache, render
from ....tracefacts.facts.analysis import WindowFacts, steady_step
from ....tracefacts.facts.blocks import GAP_MIN_US, LLM_STEP, ActivityCost, BatchFacts, LLMStep, idle_intervals
from ..claims import Spread, samples
from ....tracefacts.model.intervals import gaps
from ..helpers import format_us
from ....tracefacts.model.trace import Window, select_window
from ....tracefacts.pictures.markup import Markup, table, td, th
from ....tracefacts.pictures.profiler_table import scrolling_table

# Llama 3 8B's dimensions, as its config.json on the Hugging Face Hub gives them
# (meta-llama/Meta-Llama-3-8B: hidden_size, intermediate_size, num_attention_heads,
# num_key_value_heads, vocab_size, num_hidden_layers).
LLAMA3_8B = {"hidden": 4096, "intermediate": 14336, "heads": 32, "kv_heads": 8, "vocab": 128256, "layers": 32}
WIDTH = ("hidden", "intermediate", "heads", "kv_heads", "vocab")


def width_differences(model: dict) -> dict[str, tuple]:
    """The width dimensions in which the snippet's model differs from Llama 3 8B: name ->
    (the snippet's, Llama 3 8B's). Empty when it has Llama 3 8B's width."""
    return {k: (model.get(k), LLAMA3_8B[k]) for k in WIDTH if model.get(k) != LLAMA3_8B[k]}


def overridden_dims(examples) -> dict[str, list[str]]:
    """The model dimensions (WIDTH and layers) that a run's arguments set, by example key: the
    runs whose model is not the snippet's default one."""
    names = {f"--{k}" for k in (*WIDTH, "layers")}
    found = {e.key: [a for a in e.args if a in names] for e in examples}
    return {key: args for key, args in found.items() if args}


# --- per-step samples ----------------------------------------------------------------------------

UNITS = {"dur_us": "us", "busy_us": "us", "idle_us": "us", "longest_gap_us": "us", "busy_pct": "%",
         "gaps": "", "launches": "", "kernels": ""}
SAID = {"dur_us": "time per step", "busy_us": "GPU busy time per step", "idle_us": "GPU idle time per step",
        "longest_gap_us": "widest GPU gap of a step", "busy_pct": "GPU busy share of a step",
        "gaps": "GPU gaps per step", "launches": "launch calls per step", "kernels": "kernels per step"}


def steps(run, batch: int = 1) -> list[LLMStep]:
    """The `decode b=<batch>` (or `prefill b=<batch>`) steps of a run, in time order."""
    found = cache.cached("llm", render.llm_steps_of, run.trace_input)
    for label, measured in found.items():
        if int(LLM_STEP.match(label).group(2)) == batch:
            return measured
    raise KeyError(f"{run.example.key} has no batch {batch}")


def spread(run, field: str, batch: int = 1, *, skip_first: bool) -> Spread:
    """One field of the steps of a batch size as a Spread: dur_us, busy_us, idle_us,
    longest_gap_us, gaps, launches, kernels, or busy_pct (GPU busy time over the step's span,
    the time-window view). `skip_first` leaves out the first step."""
    measured = steps(run, batch)[1 if skip_first else 0:]
    if field == "busy_pct":
        values = [100.0 * s.busy_us / s.dur_us for s in measured]
    else:
        values = [getattr(s, field) for s in measured]
    label = f"{SAID[field]} at batch {batch}" + (", steps after the first" if skip_first else "")
    return samples(values, UNITS[field], label, [run.example.key])


def per_second(tokens_per_step: int, step: Spread) -> float:
    """Tokens (or prompts) per second at the median step time."""
    return tokens_per_step / (step.median / 1e6)


# --- the drawn step ------------------------------------------------------------------------------


def drawn_step(run) -> int:
    """The ProfilerStep a steady-state picture of this run draws (scripts.tracefacts.facts.analysis.steady_step)."""
    number = steady_step(run.trace)
    if number is None:
        raise LookupError(f"{run.example.key}: no numbered ProfilerStep to draw")
    return number


def drawn_facts(run, step: int | None = None, block: str | None = None) -> WindowFacts:
    """The analyzer's facts of the window a timeline draws (ProfilerStep#`step`, or the
    annotation `block`): what its badge reads."""
    return run.trace_facts(select_window(run.trace, step=step, annotation=block)).window


def during(run, name: str, step: str = "ProfilerStep#3") -> list:
    """The events called `name` that began inside one profiled step, in time order."""
    window = next((s for s in run.trace.steps if s.name == step), None)
    if window is None:
        raise KeyError(f"{run.example.key} has no {step}")
    return [e for e in run.trace.events if e.name == name and window.ts <= e.ts < window.end]


def calls_per_step(run, name: str) -> list[int]:
    """How many events called `name` began in each recorded ProfilerStep."""
    return [len(during(run, name, step.name)) for step in run.trace.steps]


# --- the table -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class TopRow:
    name: str
    cell: str  # as the table prints it, e.g. "61.53%"
    value: float


def table_cut(run, names: tuple[str, ...]):
    """The run's profiler table cut to every row with one of these names, in the table's order, its
    foot kept: a label keeps both its rows, the host's and its copy on the GPU's row, and the first
    GPU activity (the costliest kernel) is kept whatever its name."""
    kernel = next((row[0] for row in run.table_data.rows if row[0] in run.activities), None)
    return run.table(rows=tuple(row for row in run.table_data.rows if row[0] in names or row[0] == kernel))


def top_row(table, column: str = "Self CPU %") -> TopRow:
    """The table's row with the largest value in a percentage column."""
    at = table.columns.index(column)

    def value(row) -> float:
        return float(row[at].rstrip("%"))

    row = max(table.rows, key=value)
    return TopRow(row[0], row[at], value(row))


# --- attention calls, and the gap under the first one ---------------------------------------------


@dataclass(frozen=True)
class AttentionCalls:
    """An attention op's host calls per recorded step: the first of each step and the others."""

    per_step: tuple[int, ...]  # calls in each step
    first_us: Spread  # the first call of each step
    others_us: Spread  # every other call
    first_is_longest: tuple[bool, ...]  # per step: its first call is its longest

    @property
    def all_us(self) -> tuple[float, ...]:
        return self.first_us.values + self.others_us.values


def attention_calls(run, name: str, *, skip_first: bool) -> AttentionCalls:
    chosen = run.trace.steps[1 if skip_first else 0:]
    calls = [during(run, name, step.name) for step in chosen]
    if not all(calls):
        raise LookupError(f"{run.example.key}: a recorded step without {name}")
    key = [run.example.key]
    return AttentionCalls(
        tuple(len(c) for c in calls),
        samples([c[0].dur for c in calls], "us", f"first {name} of a step", key),
        samples([e.dur for c in calls for e in c[1:]], "us", f"other {name} calls", key),
        tuple(c[0].dur == max(e.dur for e in c) for c in calls),
    )


@dataclass(frozen=True)
class WidestGap:
    """The longest GPU idle stretch of one ProfilerStep (as its timeline shades it), and how much
    of it a host call covers."""

    step: str
    start_us: float
    end_us: float
    step_us: float
    covered_pct: float  # of the gap, by the call

    @property
    def dur_us(self) -> float:
        return self.end_us - self.start_us

    @property
    def share_of_step(self) -> float:
        return 100.0 * self.dur_us / self.step_us


def widest_gap(run, step: int, call=None) -> WidestGap:
    """The widest GPU gap of ProfilerStep#`step`, and the share of it that `call` (an event) covers."""
    window = select_window(run.trace, step=step)
    holes = idle_intervals(run.trace, window)
    if not holes:
        raise LookupError(f"{run.example.key}: ProfilerStep#{step} has no GPU gap")
    start, end = max(holes, key=lambda h: h[1] - h[0])
    covered = max(0.0, min(end, call.end) - max(start, call.ts)) if call is not None else 0.0
    return WidestGap(window.label, start, end, window.dur, 100.0 * covered / (end - start))


# --- the CUDA graph's gaps ------------------------------------------------------------------------


@dataclass(frozen=True)
class GraphGaps:
    """Over the recorded steps of a run that replays one CUDA graph per step: the GPU's pauses
    between the graph's own kernels, and where the gaps of GAP_MIN_US or more fall."""

    steps: int
    longest_pause_us: float  # between consecutive activities of the graph, in any step
    median_pause_us: float
    gaps_inside: int  # gaps of GAP_MIN_US or more inside a graph's span (first to last activity)
    gaps_outside: int  # the others: before the graph's first kernel or after its last


def graph_gaps(run, launch: str = "cudaGraphLaunch") -> GraphGaps:
    trace = run.trace
    pauses, inside, outside = [], 0, 0
    for step in trace.steps:
        window = select_window(trace, step=int(step.name.removeprefix("ProfilerStep#")))
        replayed = [a for a in trace.gpu_activities if window.start <= a.ts < window.end
                    and (trace.launch_of(a) is not None and trace.launch_of(a).name == launch)]
        if not replayed:
            raise LookupError(f"{run.example.key}: {step.name} replays no {launch}")
        first, last = min(a.ts for a in replayed), max(a.end for a in replayed)
        pauses += [e - s for s, e in gaps([(a.ts, a.end) for a in replayed], first, last)]
        for s, e in idle_intervals(trace, window):
            if e - s >= GAP_MIN_US:
                if s >= first and e <= last:
                    inside += 1
                else:
                    outside += 1
    return GraphGaps(len(trace.steps), max(pauses, default=0.0), median(pauses) if pauses else 0.0,
                     inside, outside)


# What a fused Triton kernel's name says it computes: Inductor names a kernel after the ops fused
# into it (RMSNorm is mean, pow, rsqrt; rotary embeddings are cos and sin; the MLP's activation silu).
FUSED_OPS = {"normalizations": ("rsqrt",), "rotary embeddings": ("cos", "sin"), "activations": ("silu",)}


def fused_ops(run) -> dict[str, bool]:
    """For each of FUSED_OPS, whether some Triton kernel of the run has all its words in its name."""
    names = [k.name for k in run.trace.kernels if k.name.startswith("triton_")]
    return {what: any(all(f"_{w}" in n for w in words) for n in names) for what, words in FUSED_OPS.items()}


def median_kernel_us(run) -> float:
    """The median duration of the run's kernels."""
    return median(k.dur for k in run.trace.kernels)


# --- the batch sweeps ----------------------------------------------------------------------------


def first_with_verdict(view, verdict: str) -> BatchFacts | None:
    return next((b for b in view.batches if b.verdict == verdict), None)


def leaves_overhead(view) -> tuple[BatchFacts | None, BatchFacts | None]:
    """The smallest batch the analyzer no longer calls overhead-bound, and the smallest it calls
    GPU-bound (None where the sweep has none)."""
    return view.first_batch_overhead_free(), first_with_verdict(view, "GPU-bound")


def stays_from(view, batch: BatchFacts | None, verdict: str) -> bool:
    """Whether every batch from `batch` on has `verdict` (False without a batch)."""
    return batch is not None and all(b.verdict == verdict for b in view.batches if b.batch >= batch.batch)


def leaving_text(view) -> str:
    """Where a sweep leaves the overhead-bound side, in words (GPU busy: the time-window view of
    the batch's steps, as the tables give it)."""
    mixed, bound = leaves_overhead(view)
    if mixed is None:
        return "never leaves the overhead-bound side in this sweep"
    text = (f"is *{mixed.verdict}* from batch **{mixed.batch}** (GPU busy **{mixed.gpu_busy_pct:.0f}%** "
            "of the step time)" if mixed is not bound else "")
    if bound:
        text += (" and " if text else "is ") + (f"*GPU-bound* from batch **{bound.batch}** on "
                                             f"(GPU busy **{bound.gpu_busy_pct:.0f}%** of the step time)")
    return text


def leaving_holds(view) -> bool:
    """What leaving_text says holds: no batch from the first overhead-free one on is overhead-bound,
    and every batch from the first GPU-bound one on is GPU-bound."""
    mixed, bound = leaves_overhead(view)
    if mixed is None:
        return all(b.verdict == "overhead-bound" for b in view.batches)
    later = [b for b in view.batches if b.batch >= mixed.batch]
    return all(b.verdict != "overhead-bound" for b in later) and (bound is None or stays_from(view, bound, "GPU-bound"))


# --- GPU work per step, by kernel ----------------------------------------------------------------


def activity_steps(run, batch: int) -> dict[str, tuple[float, ...]]:
    """Each GPU activity name's time in each step of a batch size."""
    return cache.cached("llm", render.llm_activity_steps, run.trace_input, batch)


def time_of(run, batch: int, test, what: str) -> Spread:
    """The per-step time of the GPU activities whose name passes `test`, over a batch's steps."""
    per_name = activity_steps(run, batch)
    n = len(next(iter(per_name.values()), ()))
    values = [sum(v[i] for name, v in per_name.items() if test(name)) for i in range(n)]
    return samples(values, "us", what, [run.example.key])


def is_copy_kernel(name: str) -> bool:
    """Inductor's fused kernels that expand and copy the shared key/value heads."""
    return name.startswith("triton_") and "expand" in name and "clone" in name


# --- the exercises --------------------------------------------------------------------------------


@dataclass(frozen=True)
class OpShare:
    """One op's host time inside the recorded ProfilerSteps, against those steps' own time."""

    op: str
    calls: int
    op_us: float
    steps_us: float

    @property
    def pct(self) -> float:
        return 100.0 * self.op_us / self.steps_us


def top_host_op(run) -> OpShare:
    """The op with the most host time in the recorded steps among the outermost ops (those no other
    op holds, on the same thread): the widest rows of the CPU lane, summed by name."""
    steps = run.trace.steps
    outer_end, time, calls = {}, {}, {}
    for e in run.trace.events:  # sorted by (ts, -dur): a parent comes before what it holds
        if e.kind != "cpu_op" or not any(s.ts <= e.ts < s.end for s in steps):
            continue
        if e.ts >= outer_end.get(e.tid, float("-inf")):
            outer_end[e.tid] = e.end
            time[e.name] = time.get(e.name, 0.0) + e.dur
            calls[e.name] = calls.get(e.name, 0) + 1
    op = max(time, key=time.get)
    return OpShare(op, calls[op], time[op], sum(s.dur for s in steps))


# --- batch 1: the runs side by side ---------------------------------------------------------------


@dataclass(frozen=True)
class Batch1:
    """One run at batch 1 as the post's table gives it: the per-step medians of the steps after the
    first (as the verdicts read them), and the whole trace's GPU busy share and verdict, the two
    headline facts of its facts box (one number per question: the prose quotes these)."""

    label: str
    key: str
    tokens: int  # new tokens (decode) or prompt tokens (prefill) per step
    step_us: Spread
    launches: Spread
    kernels: Spread
    busy_pct: float
    verdict: str

    @property
    def per_second(self) -> float:
        return per_second(self.tokens, self.step_us)


def batch1(label: str, run, tokens: int = 1) -> Batch1:
    box = run.trace_facts().window
    return Batch1(label, run.example.key, tokens, *(spread(run, f, skip_first=True) for f in
                                                    ("dur_us", "launches", "kernels")),
                  box.window_busy_pct, box.verdict.label)


def batch1_table(rows: list[Batch1], caption: str) -> Markup:
    """The batch-1 runs side by side, one row each."""
    head = ["run", "tokens per step", "time per step", "tokens/s", "launches per step", "kernels per step",
            "GPU busy", "verdict"]
    body = [[r.label, f"{r.tokens:,}", format_us(r.step_us.median), f"{r.per_second:,.0f}",
             f"{r.launches.median:.0f}", f"{r.kernels.median:.0f}", f"{r.busy_pct:.1f}%", r.verdict] for r in rows]
    cells = [[th(row[0], {"scope": "row"}), *(td(cell, {"class": "num"}) for cell in row[1:])] for row in body]
    heads = [th(name, {"scope": "col", "class": "num" if i else None}) for i, name in enumerate(head)]
    return scrolling_table(table(heads, cells, caption=caption, attrs={"class": "prof"}), caption, searchable=False)


# --- what a GPU-bound batch is busy with ----------------------------------------------------------


def batch_window(run, batch: int) -> Window:
    """From the start of the first `decode b=<batch>` step to the end of the last."""
    label = f"decode b={batch}"
    found = [e for e in run.trace.by_kind.get("annotation", []) if e.name == label]
    if not found:
        raise KeyError(f"{run.example.key} has no {label} steps")
    return Window(min(e.ts for e in found), max(e.end for e in found), f"{label}, all its steps")


@dataclass(frozen=True)
class BusyWith:
    """What the GPU's busy time went to in the steps of one batch size: the analyzer's work
    classes (shares of the GPU activity time launched in those steps) and the costliest activity."""

    batch: int
    classes: dict[str, float]  # work class -> share in %
    top: ActivityCost
    top_share_pct: float  # the costliest activity's time per step over the GPU busy time per step (medians)

    def share(self, work_class: str) -> float:
        return self.classes.get(work_class, 0.0)


def busy_with(view, batch: int) -> BusyWith:
    run = view.run
    facts = run.trace_facts(batch_window(run, batch)).window
    top = view.kernels(batch, top=1)[0]
    top_us = time_of(run, batch, lambda n: n == top.name, "costliest GPU activity per step")
    busy = spread(run, "busy_us", batch, skip_first=False)
    return BusyWith(batch, {c.work_class: c.share_pct for c in facts.work_classes}, top,
                    100.0 * top_us.median / busy.median)
