"""Part 4 (docs/blog/posts/part-4-llm-inference.md): what its blocks read from the runs."""

from __future__ import annotations

from dataclasses import dataclass
from statistics import mean

from scripts.blocks import ActivityCost, BatchFacts
from scripts.pages import format_us


def during(run, name: str, step: str = "ProfilerStep#3") -> list:
    """The events called `name` that began inside one profiled step, in time order."""
    window = next((s for s in run.trace.steps if s.name == step), None)
    if window is None:
        raise KeyError(f"{run.example.key} has no {step}")
    return [e for e in run.trace.events if e.name == name and window.ts <= e.ts < window.end]


def span_text(events) -> str:
    """The shortest and the longest of some events, as text: '12.1 us to 30.5 us'."""
    durations = [e.dur for e in events]
    if not durations:
        raise ValueError("no events to give the span of")
    return f"{format_us(min(durations))} to {format_us(max(durations))}"


def mean_us(events) -> float:
    return mean(e.dur for e in events)


@dataclass(frozen=True)
class TopRow:
    name: str
    cell: str  # as the table prints it, e.g. "61.53%"
    value: float


def top_row(table, column: str = "Self CPU %") -> TopRow:
    """The table's row with the largest value in a percentage column."""
    def value(row) -> float:
        return float(row[table.columns.index(column)].rstrip("%"))

    row = max(table.rows, key=value)
    return TopRow(row[0], row[table.columns.index(column)], value(row))


def first_with_verdict(view, verdict: str) -> BatchFacts | None:
    return next((b for b in view.batches if b.verdict == verdict), None)


def leaves_overhead(view) -> tuple[BatchFacts | None, BatchFacts | None]:
    """The smallest batch the analyzer no longer calls overhead-bound, and the smallest it calls
    compute-bound (None where the sweep has none)."""
    return view.first_batch_overhead_free(), first_with_verdict(view, "compute-bound")


@dataclass(frozen=True)
class GraphAgainstEager:
    """The costliest GPU activities of a compiled graph's step against an eager step's."""

    fused: ActivityCost  # Inductor's first Triton kernel in the graph
    cudnn: ActivityCost  # the graph's attention kernel (cuDNN's SDPA)
    flash: ActivityCost  # eager's flash attention kernel
    fused_words: list[str]  # what the fused kernel's name says it copies
    gemm_graph_us: float  # nvjet GEMMs per step, graph
    gemm_eager_us: float
    gap_us: float  # the graph step's GPU time minus the eager step's

    @property
    def extra_us(self) -> float:
        """What the fused copies and cuDNN's attention cost beyond eager's flash kernel."""
        return self.fused.us_per_step + self.cudnn.us_per_step - self.flash.us_per_step


def graph_against_eager(graph_view, eager_view, graph_batch: int, eager_batch: int) -> GraphAgainstEager:
    graph, eager = graph_view.kernels(graph_batch), eager_view.kernels(eager_batch)

    def find(kernels, test, what):
        found = next((k for k in kernels if test(k.name)), None)
        if found is None:
            raise LookupError(f"no {what} among the costliest GPU activities")
        return found

    fused = find(graph, lambda n: n.startswith("triton_"), "Triton kernel")
    gpu_gap = (graph_view.batch(graph_batch).gpu_ms_per_step - eager_view.batch(eager_batch).gpu_ms_per_step) * 1e3
    return GraphAgainstEager(
        fused=fused,
        cudnn=find(graph, lambda n: "sdpa" in n, "cuDNN attention kernel"),
        flash=find(eager, lambda n: "flash" in n, "flash attention kernel"),
        fused_words=[w for w in ("expand", "clone", "cat", "cudnn_attention") if w in fused.name],
        gemm_graph_us=sum(k.us_per_step for k in graph if k.name.startswith("nvjet")),
        gemm_eager_us=sum(k.us_per_step for k in eager if k.name.startswith("nvjet")),
        gap_us=gpu_gap,
    )
