"""Page helper for a before/after comparison of two frozen runs.

    ```python exec="true" html="true"
    from scripts.pages import example
    from scripts.pages_diff import compare_runs
    print(compare_runs(example("01_matmul_add/4096_bf16_warm_eager"),
                       example("01_matmul_add/4096_bf16_warm_compile")))
    ```

The numbers come from scripts.diff (the two runs' facts, subtracted), the pictures from
scripts.timeline on one time scale. Every string from a trace goes through scripts.markup.
"""

from __future__ import annotations

import re

from . import cache, render
from .analysis import facts, short_name, steady_step
from .diff import Delta, TraceDiff, change_text, diff, kernel_lists, rows, value_text
from .markup import Markup, concat, h, join, table, td, th
from .pages import FACTS_GUIDE, Run, format_us, relative_url, zoomable_figure
from .table import scrolling_table
from .trace import Window, select_window

STEADY = "steady"  # compare_runs(step="steady"): each run's steady-state step
LISTED_KERNELS = 3  # per list (added, removed, changed) on a page


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


def comparison_html(d: TraceDiff, caption: str, guide_href: str) -> Markup:
    """The table (verdict first, then one row per fact), the two verdicts' reasons and the GPU
    activities added, removed and changed. Names and reasons are escaped by the builder."""
    head = [th(name, {"scope": "col", "class": "num" if i else None})
            for i, name in enumerate(("", "before", "after", "change"))]
    body = [[th("verdict", {"scope": "row"}), td(d.before.verdict.label), td(d.after.verdict.label),
             td("changed" if d.verdict_changed else "unchanged")]]
    body += [[th(row.label, {"scope": "row"}),
              *(td(text, {"class": "num"}) for text in (
                  value_text(row.delta.before, row.unit, format_us),
                  value_text(row.delta.after, row.unit, format_us),
                  change_text(row.delta, row.unit, format_us)))]
             for row in rows(d, brief=True, us=format_us)]
    grid = table(head, body, caption=caption, attrs={"class": "prof"})
    reasons = h("p", None, "Verdict before: ", d.before.verdict.reason, ". After: ",
                d.after.verdict.reason, ". ",
                h("a", {"href": guide_href}, "How to read these facts"), ".")
    lists = [h("li", None, f"{title}: ",
               join(", ", (_kernel(k.name, k.total_us) for k in kernels[:LISTED_KERNELS])))
             for title, kernels in kernel_lists(d)]
    notes = [h("li", None, f"Note: {note}.") for note in d.notes]
    after = concat(reasons, h("ul", None, lists, notes) if lists or notes else None)
    return scrolling_table(grid, caption, after=after, searchable=False)


def _kernel(name: str, total: Delta) -> Markup:
    """A GPU activity's short name (its full name on hover) and its total time on each side."""
    times = (f"{format_us(total.after)} after" if not total.before else
             f"{format_us(total.before)} before" if not total.after else
             f"{format_us(total.before)} → {format_us(total.after)}")
    return concat(h("code", {"title": name}, short_name(name, 60)), f" ({times})")


def _timelines(before: Run, after: Run, windows: list[Window]) -> Markup:
    """Both runs' timelines of those windows, on the time scale of the longer one."""
    from .timeline import shared_span_us

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
