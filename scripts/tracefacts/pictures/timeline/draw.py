"""Annotated timeline pictures: one window of a trace drawn as a standalone SVG.

`render_timeline(trace, window)` returns SVG text that a post embeds as an image: CPU thread lanes
(one row per nesting depth), GPU stream lanes, launch-to-kernel links, GPU idle gaps labelled with
their length, ProfilerStep bands, a time axis and a legend. Standard library only.

Three stages, each a plain function in a module of its own:
- `collect_lanes` and `plan_timeline` (scripts/tracefacts/pictures/timeline/plan.py): one pass over the trace -> the
  events of each lane that overlap the window, with their nesting depth (the only stage whose cost
  grows with the whole trace), then the picture's skeleton: header, axis, lanes, gaps, labels;
- `finish_layout` (scripts/tracefacts/pictures/timeline/layout.py): the skeleton -> `TimelineLayout`, boxes in pixels;
  events too narrow to see merge into one block, and labels are placed so that they never overlap;
- `svg_of` (scripts/tracefacts/pictures/timeline/svg.py): `TimelineLayout` -> SVG text.
The records they pass are in scripts/tracefacts/pictures/timeline/geometry.py; sizes, colours and text measuring in
scripts/tracefacts/pictures/timeline/style.py; the header's facts line in scripts/tracefacts/pictures/timeline/headline.py.
"""

from __future__ import annotations

from pathlib import Path

from .geometry import merge_spans
from .layout import finish_layout
from .plan import as_window, plan_timeline
from .style import MERGE_THRESHOLDS_PX
from .svg import svg_of
from ...model.trace import Trace, Window, load_trace, select_window

SIZE_BUDGET_BYTES = 290_000  # default: events merge further until the SVG fits


def render_timeline(
    trace: Trace, window: Window | None = None, facts=None, *, title: str | None = None,
    size_budget: int = SIZE_BUDGET_BYTES, span_us: float | None = None,
) -> str:
    """The annotated timeline of `window` (default: the first ProfilerStep, or the whole trace) as
    standalone SVG text. Events merge further, in steps, until the SVG fits `size_budget` bytes
    (a page with several dense pictures asks for less).

    `span_us` puts pictures on one time scale: the plot's width stands for that long (at least
    the window), so two windows drawn with the longer one's duration have equal microseconds per
    pixel and equal axes; a shorter window's lanes end where it does (see shared_span_us)."""
    skeleton = plan_timeline(trace, as_window(trace, window), facts, title, span_us)
    row_spans = [skeleton.scale.spans(row.events, row.depths) for row in skeleton.rows]
    svg, drawn = "", None
    for min_px in MERGE_THRESHOLDS_PX:
        row_spans = [merge_spans(spans, min_px) for spans in row_spans]
        # A merge joins spans, so where no row lost one nothing merged: the picture is the one
        # drawn last (thousands of lanes of one kernel each never merge), not drawn again.
        counts = list(map(len, row_spans))
        if counts != drawn:
            svg, drawn = svg_of(finish_layout(skeleton, trace, row_spans)), counts
        if len(svg.encode()) <= size_budget:
            break
    return svg


def shared_span_us(*windows: Window) -> float:
    """The `span_us` that draws all these windows on one scale: the longest one's duration."""
    return max(max(window.dur, 1.0) for window in windows)


def render_timeline_file(
    path, out_path, step: int | None = None, window: tuple[float, float] | None = None
) -> Window:
    """Load the trace at `path` and draw ProfilerStep#`step` (or `window`, or the default) into
    `out_path`; returns the window drawn."""
    trace = load_trace(path)
    chosen = select_window(trace, step=step, window=window)
    Path(out_path).write_text(render_timeline(trace, chosen), encoding="utf-8")
    return chosen
