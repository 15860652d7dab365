"""Part 4 (docs/blog/posts/part-4-llm-inference.md): what its blocks read from the runs.

The runs label every step `decode b=N` (or `prefill b=N`); the per-step samples come from those
labels (scripts.tracefacts.facts.blocks.llm_step_samples), the same steps the page's tables average, so a claim
and the table next to it read the same steps. The frozen LLM runs have no extra process runs, so
the samples of a quantity are its steps in the one trace (`--tokens` of them per batch size).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import mean, median

from .. import cache, render
from ....tracefacts.facts.analysis import WindowFacts, steady_step
from ....tracefacts.facts.blocks import GAP_MIN_US, LLM_STEP, ActivityCost, BatchFacts, LLMStep, idle_intervals
from ..claims import MIN_SAMPLES, Spread, bootstrap, outcome_of, samples
from ....tracefacts.model.intervals import gaps
from ..helpers import format_us
from ....tracefacts.model.trace import select_window

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


def medians(run, field: str, batches: list[int]) -> dict[int, float]:
    """The median of a field per batch size (all steps of each)."""
    return {b: spread(run, field, b, skip_first=False).median for b in batches}


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


def span_text(events) -> str:
    """The shortest and the longest of some events, as text: '12.1 us to 30.5 us'."""
    durations = [e.dur for e in events]
    if not durations:
        raise ValueError("no events to give the span of")
    return f"{format_us(min(durations))} to {format_us(max(durations))}"


def mean_us(events) -> float:
    return mean(e.dur for e in events)


# --- the table -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class TopRow:
    name: str
    cell: str  # as the table prints it, e.g. "61.53%"
    value: float


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


def most_share(part: Spread, whole: Spread) -> float:
    """The largest share (in %) that `part` can be of `whole`, given their spreads."""
    return 100.0 * part.high / whole.low


def _difference_over(a: float, b: float, c: float, d: float) -> float:
    """(a - b) / (c - d): a difference of medians as a share of another (for scripts.series.pages.claims.bootstrap)."""
    return (a - b) / (c - d) if c != d else math.inf


def is_copy_kernel(name: str) -> bool:
    """Inductor's fused kernels that expand and copy the shared key/value heads."""
    return name.startswith("triton_") and "expand" in name and "clone" in name


@dataclass(frozen=True)
class GraphAgainstEager:
    """The costliest GPU activities of a compiled graph's steps against an eager run's, at one
    batch size each, per step with their spreads."""

    fused: ActivityCost  # Inductor's costliest Triton kernel in the graph
    cudnn: ActivityCost  # the graph's attention kernel (cuDNN's SDPA)
    flash: ActivityCost  # eager's flash attention kernel
    fused_words: list[str]  # what the fused kernel's name says it does
    fused_us: Spread  # per step
    cudnn_us: Spread
    flash_us: Spread
    copies_and_attention_us: Spread  # fused + cudnn, per graph step
    gemm_graph_us: Spread  # nvjet GEMMs per step, graph
    gemm_eager_us: Spread
    graph_gpu_us: Spread  # GPU busy per step
    eager_gpu_us: Spread

    @property
    def extra_us(self) -> float:
        """What the fused copies and cuDNN's attention cost beyond eager's flash kernel (medians)."""
        return self.copies_and_attention_us.median - self.flash_us.median

    @property
    def gap_us(self) -> float:
        """The graph step's GPU time minus the eager step's (medians)."""
        return self.graph_gpu_us.median - self.eager_gpu_us.median

    @property
    def extra_against_gap(self) -> str:
        """Whether `extra_us` is more than, less than or about the whole of `gap_us`, by the
        bootstrap interval of their ratio (scripts.series.pages.claims: lower, higher, same, unclear),
        or "too few" below MIN_SAMPLES steps a side."""
        sides = (self.copies_and_attention_us, self.flash_us, self.graph_gpu_us, self.eager_gpu_us)
        if min(s.n for s in sides) < MIN_SAMPLES:
            return "too few"
        return outcome_of(*bootstrap(_difference_over, *(s.values for s in sides)))


def graph_against_eager(graph_view, eager_view, graph_batch: int, eager_batch: int) -> GraphAgainstEager:
    graph, eager = graph_view.kernels(graph_batch), eager_view.kernels(eager_batch)

    def find(kernels, test, what):
        found = next((k for k in kernels if test(k.name)), None)
        if found is None:
            raise LookupError(f"no {what} among the costliest GPU activities")
        return found

    fused = find(graph, lambda n: n.startswith("triton_"), "Triton kernel")
    cudnn = find(graph, lambda n: "sdpa" in n, "cuDNN attention kernel")
    flash = find(eager, lambda n: "flash" in n, "flash attention kernel")
    g, e = graph_view.run, eager_view.run
    return GraphAgainstEager(
        fused=fused, cudnn=cudnn, flash=flash,
        fused_words=[w for w in ("expand", "clone", "cat", "cudnn_attention") if w in fused.name],
        fused_us=time_of(g, graph_batch, lambda n: n == fused.name, "fused kernel per step"),
        cudnn_us=time_of(g, graph_batch, lambda n: n == cudnn.name, "cuDNN attention per step"),
        flash_us=time_of(e, eager_batch, lambda n: n == flash.name, "flash attention per step"),
        copies_and_attention_us=time_of(g, graph_batch, lambda n: n in (fused.name, cudnn.name),
                                        "fused copies and cuDNN attention per step"),
        gemm_graph_us=time_of(g, graph_batch, lambda n: n.startswith("nvjet"), "nvjet GEMMs per step, graph"),
        gemm_eager_us=time_of(e, eager_batch, lambda n: n.startswith("nvjet"), "nvjet GEMMs per step, eager"),
        graph_gpu_us=spread(g, "busy_us", graph_batch, skip_first=False),
        eager_gpu_us=spread(e, "busy_us", eager_batch, skip_first=False),
    )


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


def op_share_of_steps(run, op: str) -> OpShare:
    steps = run.trace.steps
    calls = [e for e in run.trace.events if e.name == op and e.kind == "cpu_op"
             and any(s.ts <= e.ts < s.end for s in steps)]
    return OpShare(op, len(calls), sum(e.dur for e in calls), sum(s.dur for s in steps))


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


def first_busy_batch(run, batches: list[int], share: float = 50.0) -> int | None:
    """The smallest batch size whose median step keeps the GPU busy more than `share`% of the
    step's span (the time-window view), or None."""
    return next((b for b in batches if spread(run, "busy_pct", b, skip_first=False).median > share), None)
