"""What the render cache computes: pure functions of a parsed trace (or of facts made from one)
and plain arguments, returning text or typed facts.

The page helpers call them through scripts.series.pages.cache (`cache.cached(kind, render.trace_facts, ...)`),
whose key is the trace's bytes, the arguments and the source of this module with everything it
imports: whatever one of these functions reads, a change to its code changes the key. Keep them
here, at module level, and keep page wording out of them.
"""

from __future__ import annotations

from dataclasses import replace

from ...tracefacts.facts.analysis import TraceFacts, facts, summary_text
from ...tracefacts.facts.recording import RecordingFacts, recording_facts
from ...tracefacts.facts.blocks import (ActivityCost, BatchFacts, LLMStep, Sweep, SweepStep, activity_time_per_step,
                     llm_step_samples, llm_steps, sweep, sweep_steps, top_activities_per_step)
from ..runs.samples import samples_of
from ...tracefacts.pictures.comparison import diff_timeline_svg  # noqa: F401 (cached by its own module's code)
from ...tracefacts.model.trace import Trace, Window, select_window


def trace_facts(trace: Trace, window=None) -> TraceFacts:
    """The analyzer's facts about a trace (over `window`, default the whole trace)."""
    return facts(trace, window=window)


def training_facts(trace: Trace):
    """The phases of the trace's training steps (scripts.tracefacts.facts.training), or None."""
    from ...tracefacts.facts.training import training_facts as phases

    return phases(trace)


def sync_facts(trace: Trace):
    """The trace's host syncs that drain the GPU's queue (scripts.tracefacts.facts.syncs), or None."""
    from ...tracefacts.facts.syncs import sync_facts as drains

    return drains(trace)


def summary(trace: Trace, shown: str) -> str:
    """What `python scripts/analyze.py TRACE` prints, naming the trace `shown`."""
    from ...tracefacts.pictures.markup import writable

    return writable(summary_text(replace(facts(trace), source=shown), recording_facts(trace)))


def recording(trace: Trace) -> RecordingFacts:
    """How the trace was recorded, and what can mislead in it (the whole trace)."""
    return recording_facts(trace)


def timeline_svg(trace: Trace, step: int | None, max_kb: int | None, block: str | None, window=None) -> str:
    """The annotated timeline of ProfilerStep#`step`, of the first annotation named `block`, or
    of `window` (a (start, end) in us, or a Window, whose label is shown)."""
    from ...tracefacts.pictures.timeline.draw import SIZE_BUDGET_BYTES, render_timeline

    if not isinstance(window, Window):
        window = select_window(trace, step=step, window=window, annotation=block)
    return render_timeline(trace, window=window, facts=facts(trace, window=window),
                           size_budget=max_kb * 1000 if max_kb else SIZE_BUDGET_BYTES)


def sweep_facts(trace: Trace) -> Sweep:
    return sweep(trace)


def llm_batches(trace: Trace, prompt: int) -> list[BatchFacts]:
    return llm_steps(trace, prompt)


def llm_steps_of(trace: Trace) -> dict[str, list[LLMStep]]:
    """Each `decode b=N` / `prefill b=N` label's steps, one sample each."""
    return llm_step_samples(trace)


def sweep_steps_of(trace: Trace) -> dict[str, tuple[SweepStep, ...]]:
    """Each sweep block's `step` annotations, one sample each."""
    return sweep_steps(trace)


def llm_activity_steps(trace: Trace, batch: int) -> dict[str, tuple[float, ...]]:
    """Each GPU activity's time in each step of one batch size."""
    return activity_time_per_step(trace, batch)


def llm_top_activities(trace: Trace, batch: int, top: int) -> list[ActivityCost]:
    return top_activities_per_step(trace, batch, top)


def sample_digest(trace: Trace) -> dict:
    """scripts.series.runs.samples' digest of the shown run (its steps, ops and GPU work)."""
    return samples_of(trace)


def activity_totals(trace: Trace) -> dict[str, tuple[str, float]]:
    """The name of each GPU activity of the trace -> (its kind, the total time of its runs, us)."""
    totals: dict[str, tuple[str, float]] = {}
    for event in trace.gpu_activities:
        kind, total = totals.get(event.name, (event.kind, 0.0))
        totals[event.name] = (kind, total + event.dur)
    return totals


def activity_kinds(trace: Trace) -> dict[str, str]:
    """The name of each GPU activity of the trace -> its kind (kernel, memcpy or memset)."""
    return {event.name: event.kind for event in trace.gpu_activities}


def kind_counts(trace: Trace) -> dict[str, int]:
    """How many complete events of each kind the trace holds (skipped kinds included)."""
    counts = {kind: len(events) for kind, events in trace.by_kind.items()}
    for kind, skipped in trace.skipped.items():
        counts[kind] = counts.get(kind, 0) + len(skipped)
    return dict(sorted(counts.items()))


def sweep_times_svg(data: Sweep) -> str:
    from .plots import sweep_times

    return sweep_times(data)


def sweep_tflops_svg(data: Sweep) -> str:
    from .plots import sweep_tflops

    return sweep_tflops(data)


def tokens_svg(labels: tuple[str, ...], batches: tuple[list[BatchFacts], ...]) -> str:
    from .plots import tokens_per_second

    return tokens_per_second(dict(zip(labels, batches)))


def memory_timeline_svg(labels: tuple[str, ...], paths: tuple, categories: tuple[str, ...]) -> str:
    """The memory timelines (scripts/extras: `.memory.json.gz`) of several runs, by category."""
    from ..runs.extras import read_extra
    from .plots import memory_timelines

    return memory_timelines({label: read_extra(path)["timeline"] for label, path in zip(labels, paths)}, categories)


def snapshot_pickle(path) -> bytes:
    """A committed allocator snapshot as the pickle PyTorch's memory viewer takes."""
    from ..runs.extras import read_extra, viewer_pickle

    return viewer_pickle(read_extra(path))


def roofline_svg(peak_flops: float, bandwidth: float, points: tuple) -> str:
    from .plots import roofline

    return roofline(peak_flops, bandwidth, points)
