"""Page helper for a before/after comparison of two frozen runs.

    ```python exec="true" html="true"
    from scripts.series.pages.helpers import example
    from scripts.series.pages.diff import compare_runs
    print(compare_runs(example("01_matmul_add/4096_bf16_warm_eager"),
                       example("01_matmul_add/4096_bf16_warm_compile")))
    ```

The numbers come from scripts.tracefacts.facts.diff (the two runs' facts, subtracted), the pictures from
scripts.tracefacts.pictures.timeline.draw on one time scale. Every string from a trace goes through scripts.tracefacts.pictures.markup.
"""

from __future__ import annotations

import re

from ...tracefacts.facts.analysis import facts, steady_step
from ...tracefacts.facts.diff import diff
from ...tracefacts.model.trace import Window, select_window
from ...tracefacts.pictures.comparison import comparison_html
from ...tracefacts.pictures.markup import Markup, concat, h
from . import cache, render
from .helpers import FACTS_GUIDE, Run, format_us, relative_url, zoomable_figure

STEADY = "steady"  # compare_runs(step="steady"): each run's steady-state step


def compare_runs(before: Run, after: Run, step: int | str | None = None, pictures: bool = True) -> Markup:
    """A before/after table of the deltas that matter, the verdicts' reasons, the GPU activities
    added, removed and changed, and both timelines on one time scale. `step`: ProfilerStep#N in
    both runs, "steady" for each run's steady-state step, None for the whole traces (per-step
    values then are means over their steps; the pictures show each run's steady step).
    `pictures=False` leaves the timelines out, for a page that would otherwise weigh too much."""
    steps = [_step(run, step) for run in (before, after)]
    result = diff(*(facts(run.trace, step=n, top=None) for run, n in zip((before, after), steps)))
    windows = [select_window(run.trace, step=n if step is not None else steady_step(run.trace))
               for run, n in zip((before, after), steps)]
    caption = (f"{before.example.key} → {after.example.key}, "
               + (f"{windows[0].label} → {windows[1].label}" if step is not None else
                  "whole traces (per ProfilerStep: means over their steps)")
               + f" — {after.caption()}")
    return h("div", {"class": "before-after"},
             comparison_html(result, caption, relative_url(FACTS_GUIDE)),
             _timelines(before, after, windows) if pictures else "")


def _step(run: Run, step: int | str | None) -> int | None:
    if step != STEADY:
        return step
    number = steady_step(run.trace)
    if number is None:
        raise ValueError(f"{run.example.key}: no numbered ProfilerStep to take a steady step from")
    return number


def _timelines(before: Run, after: Run, windows: list[Window]) -> Markup:
    """Both runs' timelines of those windows, on the time scale of the longer one."""
    from ...tracefacts.pictures.timeline.draw import shared_span_us

    span = shared_span_us(*windows)
    figures = []
    for role, run, window in (("before", before, windows[0]), ("after", after, windows[1])):
        svg = cache.cached_file("timeline", render.diff_timeline_svg, run.trace_input, window, span,
                                f"{role.capitalize()}: {run.example.key}", suffix=".svg")
        label = re.sub(r"[^A-Za-z0-9]+", "-", window.label).strip("-")
        name = f"{before.example.tag}_vs_{after.example.tag}_{label}_{role}.svg"
        figures.append(zoomable_figure(
            f"timelines/{run.example.snippet}/{name}", svg,
            f"Annotated timeline of {run.example.key}, {window.label}, on the same time scale as "
            f"the {'after' if role == 'before' else 'before'} picture",
            f"{role.capitalize()}: {run.example.key}, {window.label}. Both pictures share one time "
            f"scale ({format_us(span)} across). {run.caption()}. Click to zoom."))
    return concat(figures)
