"""Helpers of the posts, one module per post (part1, part4, ...): what a post's blocks compute
from its runs, as tested functions, so that a block only calls helpers and states claims.

The helpers shared by the posts are here.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations

from ..claims import Spread, compare

# Questions that different runs answer on different pages (scripts.series.pages.claims.compare's
# `question`): the site must give each one answer.
COMPILED_HOST_COST_64 = "host time per step of x @ w + b at n = 64, compiled against eager"


@dataclass(frozen=True)
class VerdictReading:
    """The analyzer's verdict about a run, and which window it is of (said where it is shown)."""

    label: str
    window: str


def verdict(run) -> VerdictReading:
    """The one place the posts read a run's verdict from (scripts.tracefacts.facts.analysis decides it).

    Today: the verdict of the recorded steps after the first (the first one fills the GPU's
    queue), when they agree; "mixed" when they do not; the whole trace's when there is one step.
    """
    facts = run.trace_facts()
    steady = [step.verdict.label for step in facts.steps[1:]]
    if not steady:
        return VerdictReading(facts.window.verdict.label, "over the whole trace")
    if len(set(steady)) == 1:
        return VerdictReading(steady[0], f"in each of its {len(steady)} recorded steps after the first")
    return VerdictReading("mixed", f"over its {len(steady)} recorded steps after the first, which disagree "
                                   f"({', '.join(steady)})")


@dataclass(frozen=True)
class WindowReading:
    """What the badge of a picture of `window` reads: the verdict of its time split."""

    window: str  # the window's label, as the picture names it
    label: str
    busy_pct: float  # of the window's time (GPU busy), as are the two below
    host_wait_pct: float
    stalled_pct: float


def window_reading(run, window) -> WindowReading:
    """The facts of a drawn window (a scripts.tracefacts.model.trace.Window, or a (start, end) in us) as its badge
    shows them."""
    w = run.trace_facts(window).window
    split = w.time_split
    if split is None:
        return WindowReading(w.label, w.verdict.label, 0.0, 0.0, 0.0)
    return WindowReading(w.label, w.verdict.label, split.busy_pct, split.host_wait_pct, split.stalled_pct)


def badge_text(run, window, what: str | None = "The picture") -> str:
    """A sentence saying what the badge of the picture of `window` reads, worded from its verdict,
    stated as a claim (the page must have a wording for the verdict the data gives). `what`
    names the picture ("The picture above draws ProfilerStep#4; its badge reads ..."); None
    leaves the window unnamed, for a page that has just said which it is ("Its badge reads ...")."""
    import re

    from ..claims import pct, worded_from

    r = window_reading(run, window)
    drawn = f"`{r.window}`" if re.fullmatch(r"ProfilerStep#\d+", r.window) else r.window
    lead = f"{what} draws {drawn}; its badge reads" if what else "Its badge reads"
    shares = (f"the GPU was busy **{r.busy_pct:.1f}%** of the window and waited for the host "
              f"**{r.host_wait_pct:.1f}%**")
    return worded_from(r.label, {
        "GPU-bound": f"{lead} **GPU-bound**: {shares}, so the GPU's own work set the pace.",
        "overhead-bound": f"{lead} **overhead-bound**: {shares}, so the host set the pace.",
        "stalled": f"{lead} **stalled**: {shares}, and sat idle with work already launched "
                   f"**{r.stalled_pct:.1f}%**.",
        "mixed": f"{lead} **mixed**: {shares}: neither the host nor the GPU's work dominates.",
    }, runs=[run.example.key], numbers={"window": r.window, "verdict": r.label, "busy": pct(r.busy_pct),
                                        "waiting for the host": pct(r.host_wait_pct),
                                        "stalled": pct(r.stalled_pct)})


def ratio_text(a: float, b: float) -> str:
    """a / b as a reader says it (12.3×, 3.4×), through the claims' one number formatter."""
    from ..claims import format_value

    return format_value(a / b, "x")


# --- comparing several runs -----------------------------------------------------------------------


def pooled(*spreads: Spread, label: str = "") -> Spread:
    """One Spread of the samples of several (of one quantity, from several runs of one program)."""
    return Spread(tuple(v for s in spreads for v in s.values), spreads[0].unit,
                  label or spreads[0].label, tuple(dict.fromkeys(r for s in spreads for r in s.runs)))


def pairwise(spreads: dict[str, Spread], what: str) -> list:
    """Every pair of the spreads compared (scripts.series.pages.claims.compare), in the dict's order."""
    return [compare(spreads[a], spreads[b], what=what, names=(a, b)) for a, b in combinations(spreads, 2)]


def effect_cell(comparison) -> str:
    """A comparison's outcome for a table's cell ("about 15% less (0.84×)", "not settled (1.2×)"),
    recorded as a claim worded from the data, with the marker of the note holding its numbers."""
    from ..claims import worded

    said = comparison.effect
    return worded(comparison, lower=said, higher=said, same=said, unclear=said, too_few="not enough samples")


def lowest(comparisons: list) -> str | None:
    """The one name lower than every other in these pairwise comparisons, or None if there is none."""
    names = dict.fromkeys(n for c in comparisons for n in c.names)
    for name in names:
        if all((c.names[0] == name and c.outcome == "lower") or (c.names[1] == name and c.outcome == "higher")
               for c in comparisons if name in c.names):
            return name
    return None
