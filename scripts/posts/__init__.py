"""Helpers of the posts, one module per post (part1, part4, ...): what a post's blocks compute
from its runs, as tested functions, so that a block only calls helpers and states claims.

The helpers shared by the posts are here.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class VerdictReading:
    """The analyzer's verdict about a run, and which window it is of (said where it is shown)."""

    label: str
    window: str


def verdict(run) -> VerdictReading:
    """The one place the posts read a run's verdict from (scripts.analysis decides it).

    Today: the verdict of the recorded steps after the first (the first one fills the GPU's
    queue), when they agree; "mixed" when they do not; the whole trace's when there is one step.
    """
    facts = run.trace_facts()
    steady = [step.verdict.label for step in facts.steps[1:]]
    if not steady:
        return VerdictReading(facts.window.verdict.label, "over the whole trace")
    label = steady[0] if len(set(steady)) == 1 else "mixed"
    return VerdictReading(label, f"in each of its {len(steady)} recorded steps after the first")


def ratio_text(a: float, b: float) -> str:
    """a / b as a reader says it (12.3×, 3.4×), through the claims' one number formatter."""
    from scripts.claims import format_value

    return format_value(a / b, "x")
