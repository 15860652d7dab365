"""The timeline's layout as data: typed records of what the picture shows, in pixels of the
viewBox (`TimelineLayout` and its boxes, bars, links, labels), the time scale that puts a window's
microseconds on the plot, and the pure helpers the layout stages share: merging spans too narrow
to see, placing labels so that they never overlap, ticks of the time axis. Nothing here reads a
trace's files or writes SVG (scripts/tracefacts/pictures/timeline/svg.py does).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import NamedTuple

from .style import MIN_DRAW_PX, PLOT_LEFT, PLOT_RIGHT, WIDTH
from ...model.trace import Event, Window


# ---------------------------------------------------------------------------------------------
# Geometry records


@dataclass(frozen=True)
class Box:
    x: float
    y: float
    w: float
    h: float

    @property
    def right(self) -> float:
        return self.x + self.w

    @property
    def bottom(self) -> float:
        return self.y + self.h

    def overlaps(self, other: Box, pad: float = 0.0) -> bool:
        return (
            self.x < other.right + pad
            and other.x < self.right + pad
            and self.y < other.bottom + pad
            and other.y < self.bottom + pad
        )


@dataclass(frozen=True)
class Bar:
    box: Box
    kind: str
    merged: int  # how many events the bar stands for; above 1 it is drawn hatched (or, see busy)
    label: str  # drawn inside the bar; '' where it does not fit
    tooltip: str
    # Merged GPU work: the share of its stretch that is busy, drawn as the height of a solid fill
    # over a pale block, so that many tiny kernels with gaps between them do not look like one.
    busy: float | None = None


@dataclass(frozen=True)
class Link:
    """A launch call (its end) to the GPU activity it launched (its start)."""

    x1: float
    y1: float
    x2: float
    y2: float
    # '' when both ends are in the window; 'before' (launched before it: starts at its left edge) or
    # 'after' (the activity runs after it: ends at its right edge), drawn dashed.
    outside: str = ""


@dataclass(frozen=True)
class LabelRequest:
    """A label that wants a place: the (text, box) options in order of preference."""

    priority: float  # higher is placed first
    options: tuple[tuple[str, Box], ...]
    role: str  # 'gap' or 'step'
    tooltip: str = ""
    target: Box | None = None  # what the label is about (a gap's shade)


@dataclass(frozen=True)
class PlacedLabel:
    text: str
    box: Box
    role: str
    tooltip: str = ""
    target: Box | None = None


@dataclass(frozen=True)
class Heading:
    """Text in the gutter left of the lanes (or a note across the plot), on one line or more."""

    x: float
    baseline: float  # of the first line
    text: str  # what it says: its lines joined by spaces
    tooltip: str
    style: str  # css class: 'group', 'lane' or 'note'
    lines: tuple[str, ...] = ()  # where it wraps: the lines drawn, LINE_H apart


@dataclass(frozen=True)
class Tick:
    x: float
    text: str


@dataclass(frozen=True)
class StepBand:
    box: Box
    name: str
    shaded: bool  # every other step is tinted


@dataclass(frozen=True)
class LegendItem:
    swatch: Box
    css_class: str
    text: str


@dataclass
class TimelineLayout:
    height: int
    title: str
    subtitle: str
    headline: str  # facts from the analyzer ('' without facts)
    plot: Box  # the lanes' area right of the gutter
    axis_y: float
    ticks: list[Tick]
    step_bands: list[StepBand]
    step_lines: list[float]  # x of step boundaries inside the plot
    lane_backgrounds: list[Box]
    headings: list[Heading]
    gap_shades: list[Box]
    gap_brackets: list[Box]
    bars: list[Bar]
    links: list[Link]
    labels: list[PlacedLabel]
    legend: list[LegendItem]
    links_thinned: bool = False  # some links were left out where GPU activities crowd
    width: int = WIDTH
    window_end_x: float | None = None  # on a shared scale, where the window ends inside the plot


# ---------------------------------------------------------------------------------------------
# Time scale, spans, labels, ticks


@dataclass(frozen=True)
class TimeScale:
    """The window's times in plot x. The plot is `span_us` wide, the window's duration unless a
    longer one is asked for (two pictures on one scale): the window then ends before the plot."""

    start: float
    end: float
    px_per_us: float

    @classmethod
    def of(cls, window: Window, span_us: float | None = None) -> TimeScale:
        end = window.end if window.end > window.start else window.start + 1.0
        span = max(end - window.start, span_us or 0.0)
        return cls(window.start, end, (PLOT_RIGHT - PLOT_LEFT) / span)

    @property
    def span_us(self) -> float:
        """The time the plot's width stands for."""
        return (PLOT_RIGHT - PLOT_LEFT) / self.px_per_us

    @property
    def end_x(self) -> float:
        """Where the window ends: PLOT_RIGHT, or before it on a shared scale."""
        return self.x(self.end)

    def x(self, t: float) -> float:
        """Plot x of time `t`, clamped to the plot."""
        return PLOT_LEFT + (min(max(t, self.start), self.end) - self.start) * self.px_per_us

    def spans(self, events: list[Event], depths: list[int]) -> Iterator[Span]:
        """The events in pixels, one at a time: this loop sees every event in the window, and
        `merge_spans` keeps few of them."""
        start, end, scale = self.start, self.end, self.px_per_us
        for event, depth in zip(events, depths):
            t0 = event.ts
            t1 = t0 + event.dur
            t0 = start if t0 < start else end if t0 > end else t0
            t1 = start if t1 < start else end if t1 > end else t1
            yield Span(PLOT_LEFT + (t0 - start) * scale, PLOT_LEFT + (t1 - start) * scale, depth, (event,))


class Span(NamedTuple):
    """Events in pixels: one event, or a run of them merged because each was too narrow to see."""

    x0: float
    x1: float
    depth: int
    events: tuple[Event, ...]


def merge_spans(spans: Iterable[Span], min_px: float) -> list[Span]:
    """Runs of consecutive spans of one depth that are each narrower than `min_px` and closer than
    a drawn bar's minimum width (or `min_px`, if larger) become one span: drawn one by one, each
    widened to that minimum, they would overlap and look busier than they are.
    `spans` come in drawing order (by depth, then start); merging the result again with a larger
    `min_px` merges further."""
    join_px = max(min_px, MIN_DRAW_PX)
    merged: list[Span] = []
    run: list[Event] = []  # events of the open run of narrow spans; its extent and depth:
    run_x0 = run_x1 = 0.0
    run_depth = -1
    for span in spans:
        x0, x1, depth = span.x0, span.x1, span.depth
        if x1 - x0 < min_px and run and depth == run_depth and x0 - run_x1 < join_px:
            run.extend(span.events)
            if x1 > run_x1:
                run_x1 = x1
            continue
        if run:
            merged.append(Span(run_x0, run_x1, run_depth, tuple(run)))
            run = []
        if x1 - x0 >= min_px:
            merged.append(span)
        else:
            run = list(span.events)
            run_x0, run_x1, run_depth = x0, x1, depth
    if run:
        merged.append(Span(run_x0, run_x1, run_depth, tuple(run)))
    return merged


def place_labels(
    requests: list[LabelRequest], occupied: list[Box] = (), pad: float = 2.0
) -> list[PlacedLabel]:
    """Greedy placement: by priority, each label takes its first option that overlaps no placed
    label (nor `occupied`), or is dropped."""
    taken = list(occupied)
    placed = []
    for request in sorted(requests, key=lambda r: (-r.priority, r.options[0][1].x, r.options[0][1].y)):
        for text, box in request.options:
            if not any(box.overlaps(other, pad) for other in taken):
                taken.append(box)
                placed.append(PlacedLabel(text, box, request.role, request.tooltip, request.target))
                break
    return placed


def nice_ticks(span_us: float, target: int = 8) -> list[tuple[float, str]]:
    """Offsets 0, s, 2s, ... <= span with s = 1, 2 or 5 x 10^k, labelled in one unit."""
    if span_us <= 0:
        return [(0.0, "0")]
    raw = span_us / target
    magnitude = 10 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1, 2, 5, 10) if m * magnitude >= raw)
    # The unit of the span, so that the last label reads '3.0 ms' rather than '3000 µs'.
    divisor, unit = (1e6, "s") if span_us >= 2e6 else (1e3, "ms") if span_us >= 2e3 else (1.0, "µs")
    decimals = max(0, -math.floor(math.log10(step / divisor) + 1e-9))
    ticks = []
    for index in range(int(span_us / step + 1e-9) + 1):
        offset = index * step
        text = "0" if index == 0 else f"{offset / divisor:.{decimals}f} {unit}"
        ticks.append((offset, text))
    return ticks
