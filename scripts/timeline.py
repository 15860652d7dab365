"""Annotated timeline pictures: one window of a trace drawn as a standalone SVG.

`render_timeline(trace, window)` returns SVG text that a post embeds as an image: CPU thread lanes
(one row per nesting depth), GPU stream lanes, launch-to-kernel links, GPU idle gaps labelled with
their length, ProfilerStep bands, a time axis and a legend. Standard library only.

Three stages, each a plain function:
- `collect_lanes`: one pass over the trace -> the events of each lane that overlap the window, with
  their nesting depth (the only stage whose cost grows with the whole trace);
- `layout_timeline`: lanes -> `TimelineLayout`, boxes in pixels; events too narrow to see merge
  into one block, and labels are placed so that they never overlap;
- `svg_of`: `TimelineLayout` -> SVG text.

The picture is shown as an <img>, so it cannot follow the site's light/dark toggle: it carries its
own opaque light card, and all text has at least 4.5:1 contrast against what it sits on.
"""

from __future__ import annotations

import bisect
import dataclasses
import math
import re
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import NamedTuple

from .intervals import gaps as uncovered
from .intervals import total, union
from .markup import escape
from .units import format_us
from .trace import GPU_ACTIVITY_KINDS, LAUNCH_KINDS, Event, Trace, Window, load_trace, select_window

# Geometry in px of the viewBox. The picture is shown scaled to the width of the post's column,
# about 720 px on a desktop, so one viewBox px is drawn as 720 / WIDTH = 0.8 screen px there: the
# 13 px text reads at 10.4 px, the 17 px title at 13.6 px. WIDTH and the type sizes go together.
WIDTH = 900
MARGIN = 14
PLOT_LEFT = 176  # left of it: the gutter with process, thread and stream names
PLOT_RIGHT = WIDTH - 16
HEADER_H = 66
TITLE_BASELINE = 29
SUBTITLE_BASELINE = 50
STEP_STRIP_H = 21
AXIS_H = 22
GROUP_H = 26
LANE_GAP = 6
CPU_ROW_H = 20
MARKER_ROW_H = 19  # GPU-side annotations above a stream's activity row
GPU_ROW_H = 26
BRACKET_H = 6  # under a stream: the bracket that ties a gap label to its gap
LABEL_H = 17  # a gap or step label's box
TIER_H = LABEL_H + 2  # one line of gap labels under a stream
LINE_H = 16  # between the lines of a heading that wraps
LEGEND_ROW_H = 22
LEGEND_SWATCH = (16, 12)
LEGEND_TEXT_GAP = 6  # swatch to text
LEGEND_ITEM_GAP = 16  # at least, from text to the next swatch
LEGEND_COLUMNS = 5
GROUP_BASELINE = 19  # of a group's name, from the top of its row
LANE_INDENT = 8  # lane names sit this much right of their group's name
MAX_HEADING_LINES = 2
GROUP_NAME_MAX_W = WIDTH / 2 - MARGIN

# Type sizes in px, by css class; measured text uses the same ones. Bold text is measured wider.
FONT_PX = {
    "title": 17.0,
    "headline": 14.0,
    "sub": 13.0,
    "group": 14.0,
    "lane": 13.0,
    "note": 13.0,
    "tick": 13.0,
    "steplabel": 13.0,
    "bar": 13.0,
    "gaptext": 13.0,
    "legend": 13.0,
}
BOLD = frozenset({"title", "headline", "group", "steplabel", "gaptext"})
BOLD_WIDTH = 1.08  # bold glyphs are about this much wider than regular ones

MAX_CPU_ROWS = 8  # deeper calls fold into the last row, the deepest drawn on top
MAX_MARKER_ROWS = 2
GAP_LABEL_TIERS = 2
MIN_DRAW_PX = 1.0  # narrower bars are widened to this, so that they stay visible
MIN_LABELLED_GAP_PX = 4.0
MIN_LABELLED_BAR_PX = 24.0
BAR_TEXT_PAD = 4.0  # between a bar's left edge and its label; as much is kept free on the right
LINK_MIN_SPACING_PX = 8.0
MERGE_THRESHOLDS_PX = (0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0)  # tried in turn until the SVG fits
SIZE_BUDGET_BYTES = 290_000
TOOLTIP_NAME_MAX = 300

FONT = "Roboto, 'Helvetica Neue', Arial, sans-serif"
INK = "#1b1f24"
MUTED = "#57606a"
CARD = "#ffffff"
BORDER = "#d0d7de"
LANE_TINT = "#f6f8fa"
GRID = "#e1e6eb"
STEP_TINT = "#e8eef6"
STEP_LINE = "#8c959f"
GAP_FILL = "#fdecea"
GAP_HATCH = "#f3b2ab"
GAP_INK = "#a4161a"
LINK = "#3949ab"

# Fill and legend text per kind. All fills are light enough for INK text at >= 4.5:1.
KIND_STYLES: dict[str, tuple[str, str]] = {
    "annotation": ("#cbbdf2", "user annotation"),
    "cpu_op": ("#9fcdf5", "CPU op"),
    "python": ("#c8e4a6", "Python function"),
    "runtime": ("#ffc978", "runtime call (launch)"),
    "driver": ("#ffad8c", "driver call (launch)"),
    "sync": ("#dcc7b9", "synchronization"),
    "event": ("#d9dde3", "CUDA event"),
    "overhead": ("#e2e2e2", "profiler overhead"),
    "other": ("#e2e2e2", "other"),
    "gpu_annotation": ("#c9d3de", "GPU annotation"),
    "kernel": ("#43b9a5", "kernel"),
    "memcpy": ("#f59cc3", "memcpy"),
    "memset": ("#d7a9e8", "memset"),
}
NEST_SLACK_US = 0.01  # a child may end this much after its parent (rounding) and still nest
NOT_DRAWN_KINDS = frozenset({"trace", "instant"})  # the profiler's own span; zero-width instants


# ---------------------------------------------------------------------------------------------
# Text: cleaning, formatting, measuring


_XML_INVALID = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")
# The directories of an absolute path ('/home/me/x/', 'C:\\Users\\me\\'): dropped, the file name kept.
_ABSOLUTE_DIRS = re.compile(r"(?<![\w.~])(?:[A-Za-z]:)?[\\/](?:[^\\/\s():'\"]+[\\/])+")


def clean_text(text: str) -> str:
    """Text fit for the picture: no characters XML forbids, no directories of absolute paths, no
    spaces around it."""
    return _ABSOLUTE_DIRS.sub("", _XML_INVALID.sub("", str(text))).strip()


def _char_em(char: str) -> float:
    """Approximate advance width of a character in em for a Roboto/Arial-like sans-serif; errs wide."""
    if char in "il.,:;|!'`ïíì":
        return 0.30
    if char in "fjtrI()[]{}/\\- ":
        return 0.38
    if char in "mwMW@%":
        return 0.90
    if char == "…":
        return 1.0
    if char.isupper() or char in "#&+<>=~_":
        return 0.70
    return 0.58


@lru_cache(maxsize=8192)
def text_width(text: str, size: float) -> float:
    return sum(_char_em(c) for c in text) * size


def fit_text(text: str, width: float, size: float, min_chars: int = 3) -> str:
    """`text`, or its start with an ellipsis, whichever fits `width`; '' if not even `min_chars` fit."""
    if text_width(text, size) <= width:
        return text
    room = width - text_width("…", size)
    used = 0.0
    for count, char in enumerate(text):
        used += _char_em(char) * size
        if used > room:
            return text[:count].rstrip() + "…" if count >= min_chars else ""
    return text


def font_px(css_class: str) -> float:
    """The size to measure text of `css_class` at: its type size, widened for bold type."""
    return FONT_PX[css_class] * (BOLD_WIDTH if css_class in BOLD else 1.0)


def wrap_text(text: str, width: float, size: float, max_lines: int) -> tuple[str, ...]:
    """`text` broken at spaces into at most `max_lines` lines that fit `width`; the last line (or a
    word wider than `width`) ends in an ellipsis where the text does not fit."""
    lines: list[str] = []
    words = text.split(" ")
    while words and len(lines) < max_lines:
        if len(lines) == max_lines - 1:
            lines.append(fit_text(" ".join(words), width, size))
            break
        count = 1
        while count < len(words) and text_width(" ".join(words[: count + 1]), size) <= width:
            count += 1
        lines.append(fit_text(" ".join(words[:count]), width, size))
        words = words[count:]
    return tuple(line for line in lines if line)


def display_name(event: Event) -> str:
    """The short name drawn inside a bar. GPU kernels lose return type, namespaces, template
    arguments and parameters: 'void at::native::foo<8, ...>(...)' -> 'foo'."""
    name = clean_text(event.name)
    if event.kind not in GPU_ACTIVITY_KINDS:
        return name
    short = name.removeprefix("void ")
    cut = min((i for i in (short.find("<"), short.find("(")) if i > 0), default=len(short))
    short = short[:cut].strip().rsplit("::", 1)[-1]
    return short or name


def _tooltip_name(name: str) -> str:
    name = clean_text(name)
    return name if len(name) <= TOOLTIP_NAME_MAX else name[: TOOLTIP_NAME_MAX - 1] + "…"


def _num(value: float) -> str:
    """Coordinates with one decimal and no '-0' or trailing '.0', so output bytes are stable."""
    rounded = round(value, 1)
    if rounded == int(rounded):
        return str(int(rounded))
    return f"{rounded:.1f}"


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
# Stage 1: the events of each lane in the window


@dataclass
class LaneEvents:
    pid: int | str
    tid: int | str
    on_gpu: bool
    # Host calls, or GPU-side markers, and their nesting depths. Two flat lists rather than a list
    # of pairs: a large window holds 10^5 of them, and fewer live objects keep the GC cheap.
    calls: list[Event] = field(default_factory=list)
    depths: list[int] = field(default_factory=list)
    activities: list[Event] = field(default_factory=list)  # kernels, memcpys, memsets on a GPU lane

    @property
    def key(self) -> tuple:
        return (self.pid, self.tid)


@dataclass
class CollectedLanes:
    lanes: list[LaneEvents]  # host lanes first, then GPU lanes; by pid, then tid
    launch_depths: dict  # correlation id -> nesting depth of the launch call (in or before the window)


def _id_order(value) -> tuple:
    """Sort key for pids/tids, which are ints in most traces and strings in some."""
    return (0, value, "") if isinstance(value, int) else (1, 0, str(value))


def collect_lanes(trace: Trace, window: Window) -> CollectedLanes:
    """Group the events that overlap `window` by lane, with their nesting depth.

    Depth is computed from the trace's start (parents sort before children), so the launch of a
    kernel that ran in the window knows its row even when the launch itself came earlier."""
    gpu_pids = {e.pid for e in trace.gpu_activities}
    gpu_pids.update(e.pid for e in trace.events if e.kind == "gpu_annotation")
    start, end = window.start, window.end
    lanes: dict[tuple, LaneEvents] = {}
    open_ends: dict[tuple, list[float]] = {}
    launch_depths: dict = {}
    for event in trace.events:
        if event.ts >= end and end > start:
            break  # sorted by start: nothing later overlaps
        kind = event.kind
        if kind in NOT_DRAWN_KINDS:
            continue
        key = (event.pid, event.tid)
        event_end = event.ts + event.dur
        inside = event.ts < end and (event_end > start or event.ts >= start)  # zero-length events count
        if kind in GPU_ACTIVITY_KINDS:
            if inside:
                (lanes.get(key) or _new_lane(lanes, key, True)).activities.append(event)
            continue
        stack = open_ends.setdefault(key, [])
        # Pop what ended, and what ends before this event does: a call that outlives the one it
        # started in (ProfilerStep#N starts inside `prof.step()`) becomes its sibling, not its child.
        while stack and (stack[-1] <= event.ts or stack[-1] < event_end - NEST_SLACK_US):
            stack.pop()
        depth = len(stack)
        stack.append(event_end)
        if kind in LAUNCH_KINDS:
            correlation = event.args.get("correlation")
            if correlation is not None:
                launch_depths[correlation] = depth
        if inside:
            lane = lanes.get(key) or _new_lane(lanes, key, event.pid in gpu_pids)
            lane.calls.append(event)
            lane.depths.append(depth)
    ordered = sorted(lanes.values(), key=lambda lane: (lane.on_gpu, _id_order(lane.pid), _id_order(lane.tid)))
    return CollectedLanes(ordered, launch_depths)


def _new_lane(lanes: dict, key: tuple, on_gpu: bool) -> LaneEvents:
    lane = lanes[key] = LaneEvents(key[0], key[1], on_gpu)
    return lane


# ---------------------------------------------------------------------------------------------
# Stage 2: layout (pure: lanes in, boxes out)


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


@dataclass(frozen=True)
class Row:
    """One drawn row: where it is, and its events with their depths in drawing order."""

    y: float
    h: float
    events: list[Event]
    depths: list[int]
    folded: bool  # holds several depths; deeper bars are drawn over shallower ones
    gpu_activity: bool  # a stream's kernels, memcpys, memsets: where launch links end


@dataclass
class Skeleton:
    """The picture except its bars, links and legend: everything that does not depend on how far
    events are merged."""

    layout: TimelineLayout
    rows: list[Row]
    host_rows: dict  # (pid, tid) -> bottom y of each row: where links from before the window start
    activity_rows: dict  # (pid, tid) of a stream -> top y of its activity row: where links end
    launch_depths: dict  # correlation id -> nesting depth of the launch call
    scale: TimeScale


@dataclass
class _Plan:
    """What the lane layout accumulates while it walks down the picture."""

    rows: list[Row] = field(default_factory=list)
    headings: list[Heading] = field(default_factory=list)
    lane_backgrounds: list[Box] = field(default_factory=list)
    gap_shades: list[Box] = field(default_factory=list)
    gap_brackets: list[Box] = field(default_factory=list)
    labels: list[PlacedLabel] = field(default_factory=list)
    host_rows: dict = field(default_factory=dict)
    activity_rows: dict = field(default_factory=dict)

    def heading(self, text: str, baseline: float, style: str = "lane", room: float = 0.0) -> None:
        """A group's name (on one line, free to run on into the plot, where its row is empty), or a
        lane's (in the gutter, on as many lines as `room`, the lane's height, holds)."""
        if style == "group":
            indent, width, max_lines = MARGIN, GROUP_NAME_MAX_W, 1
        else:
            indent, width = MARGIN + LANE_INDENT, PLOT_LEFT - MARGIN - LANE_INDENT - 8
            max_lines = min(MAX_HEADING_LINES, 1 + max(0, int((room - CPU_ROW_H) // LINE_H)))
        lines = wrap_text(text, width, font_px(style), max_lines)
        self.headings.append(Heading(indent, baseline, " ".join(lines), text, style, lines))


def _stack_rows(plan: _Plan, lane: LaneEvents, top: float, row_h: float, max_rows: int) -> tuple[int, int]:
    """Rows by nesting depth, the ones below `max_rows` folded into the last; returns
    (rows, folded levels)."""
    max_depth = max(lane.depths)
    n_rows = min(max_depth + 1, max_rows)
    events: list[list[Event]] = [[] for _ in range(n_rows)]
    depths: list[list[int]] = [[] for _ in range(n_rows)]
    for event, depth in zip(lane.calls, lane.depths):
        row = depth if depth < n_rows else n_rows - 1
        events[row].append(event)
        depths[row].append(depth)
    folded = max_depth + 1 - n_rows
    if folded:  # by depth, then start (the sort is stable): the deepest are drawn last, on top
        order = sorted(range(len(depths[-1])), key=depths[-1].__getitem__)
        events[-1] = [events[-1][i] for i in order]
        depths[-1] = [depths[-1][i] for i in order]
    for index in range(n_rows):
        is_folded = folded > 0 and index == n_rows - 1
        plan.rows.append(
            Row(top + index * row_h + 1, row_h - 2, events[index], depths[index], is_folded, False)
        )
    return n_rows, folded


def _plan_host_lane(plan: _Plan, lane: LaneEvents, trace: Trace, top: float) -> float:
    n_rows, folded = _stack_rows(plan, lane, top, CPU_ROW_H, MAX_CPU_ROWS)
    height = n_rows * CPU_ROW_H
    plan.lane_backgrounds.append(Box(PLOT_LEFT, top, PLOT_RIGHT - PLOT_LEFT, height))
    plan.host_rows[lane.key] = [top + (i + 1) * CPU_ROW_H - 1 for i in range(n_rows)]
    plan.heading(_host_lane_name(trace, lane), _centred_baseline(top, CPU_ROW_H, "lane"), room=height)
    if folded:  # at the lane's foot, clear of its name: folding needs MAX_CPU_ROWS rows
        levels = f"+{folded} deeper level{'s' if folded > 1 else ''}"
        note = f"{levels} folded in"
        width = PLOT_LEFT - MARGIN - LANE_INDENT - 8
        lines = (note,) if text_width(note, font_px("note")) <= width else (levels, "folded in")
        baseline = top + height - 6 - (len(lines) - 1) * LINE_H
        plan.headings.append(Heading(MARGIN + LANE_INDENT, baseline, " ".join(lines), note, "note", lines))
    return top + height


def _centred_baseline(top: float, height: float, css_class: str) -> float:
    """The baseline that centres a line of `css_class` text on a row."""
    return top + height / 2 + 0.35 * FONT_PX[css_class]


def _plan_gpu_lane(plan: _Plan, lane: LaneEvents, trace: Trace, top: float, scale: TimeScale) -> float:
    """GPU-side annotations (if any), the activity row with its idle gaps shaded, and under it
    the gap labels that do not fit inside their gaps."""
    lane_top = top
    if lane.calls:
        n_rows, _ = _stack_rows(plan, lane, top, MARKER_ROW_H, MAX_MARKER_ROWS)
        top += n_rows * MARKER_ROW_H
    first_row_h = MARKER_ROW_H if lane.calls else GPU_ROW_H
    plan.heading(
        clean_text(trace.thread_names.get(lane.key) or f"stream {lane.tid}"),
        _centred_baseline(lane_top, first_row_h, "lane"),
        room=top + GPU_ROW_H - lane_top,
    )
    plan.lane_backgrounds.append(Box(PLOT_LEFT, lane_top, PLOT_RIGHT - PLOT_LEFT, top + GPU_ROW_H - lane_top))
    plan.rows.append(Row(top + 1, GPU_ROW_H - 2, lane.activities, [0] * len(lane.activities), False, True))
    plan.activity_rows[lane.key] = top + 1
    idle = uncovered([(e.ts, e.ts + e.dur) for e in lane.activities], scale.start, scale.end)
    visible = [(s, e) for s, e in idle if (e - s) * scale.px_per_us >= MIN_DRAW_PX]
    shades = [Box(scale.x(s), top, scale.x(e) - scale.x(s), GPU_ROW_H) for s, e in visible]
    plan.gap_shades.extend(shades)
    strip_top = top + GPU_ROW_H
    first_gap_starts_window = bool(idle) and idle[0][0] <= scale.start and len(idle) > 1
    requests = _gap_label_requests(
        visible, shades, bool(lane.activities), first_gap_starts_window, top, strip_top
    )
    placed = place_labels(requests)
    plan.labels.extend(placed)
    in_strip = [label for label in placed if label.box.y >= strip_top]
    for label in in_strip:
        plan.gap_brackets.append(Box(label.target.x, strip_top + 1, label.target.w, BRACKET_H - 2))
    tiers_used = max(
        (int((label.box.y - strip_top - BRACKET_H) // TIER_H) + 1 for label in in_strip), default=0
    )
    return strip_top + (BRACKET_H + tiers_used * TIER_H if tiers_used else 2)


def _gap_label_requests(
    gaps, shades: list[Box], has_activity: bool, first_is_lead: bool, row_top: float, strip_top: float
) -> list[LabelRequest]:
    """Each gap ((start, end) in us, with its shade) wants its length written inside it, or else
    under the stream in one of the tiers, centred on the gap. `first_is_lead`: the first gap is
    the wait before the stream's first activity in the window."""
    requests = []
    size = font_px("gaptext")
    for index, ((start, end), shade) in enumerate(zip(gaps, shades)):
        if shade.w < MIN_LABELLED_GAP_PX:
            continue
        length = format_us(end - start)
        texts = [f"{length} idle"]
        if not has_activity:
            texts = [f"{length} idle: no GPU work in this window", f"{length} idle"]
        elif index == 0 and first_is_lead and shade.x <= PLOT_LEFT:
            texts = [f"{length} idle before the first kernel", f"{length} idle"]
        options = []
        centre = shade.x + shade.w / 2
        for text in texts:
            width = text_width(text, size) + 10
            if width + 4 <= shade.w:
                options.append(
                    (text, Box(centre - width / 2, row_top + (GPU_ROW_H - LABEL_H) / 2, width, LABEL_H))
                )
        for tier in range(GAP_LABEL_TIERS):
            for text in texts:
                width = text_width(text, size) + 10
                x = min(max(centre - width / 2, PLOT_LEFT), PLOT_RIGHT - width)
                options.append((text, Box(x, strip_top + BRACKET_H + tier * TIER_H, width, LABEL_H)))
        requests.append(LabelRequest(end - start, tuple(options), "gap", f"GPU idle for {length}", shade))
    return requests


def _gpu_group_name(trace: Trace, pid) -> str:
    # Kineto names a GPU's process after the host process ('python3'); its label says 'GPU 0'.
    given = clean_text(trace.process_names.get(pid) or "")
    name = given if given.upper().startswith("GPU") else f"GPU {pid}"
    for device in trace.gpus:
        if isinstance(device, dict) and device.get("id") == pid and device.get("name"):
            model = clean_text(device["name"])
            if model not in name:
                name = f"{name} · {model}"
    return name


def _host_group_name(trace: Trace, pid, lanes: list[LaneEvents]) -> str:
    if pid not in trace.process_names and all(_only_overhead(lane) for lane in lanes):
        return "Profiler and CUDA overhead"  # Kineto puts CUPTI's own events on a pid of their own
    suffix = f" · pid {pid}"  # kept whole: a long command line is elided before it
    room = GROUP_NAME_MAX_W - text_width(suffix, font_px("group"))
    return fit_text(clean_text(trace.process_names.get(pid) or "process"), room, font_px("group")) + suffix


def _host_lane_name(trace: Trace, lane: LaneEvents) -> str:
    name = trace.thread_names.get(lane.key)
    if name:
        return clean_text(name)
    return "overhead" if _only_overhead(lane) else f"thread {lane.tid}"


def _only_overhead(lane: LaneEvents) -> bool:
    return all(event.kind == "overhead" for event in lane.calls)


def _step_layout(trace: Trace, scale: TimeScale, top: float, bottom: float):
    """Bands, boundary lines and name labels of the ProfilerSteps that overlap the window."""
    extents: dict[str, tuple[float, float]] = {}  # by name: the processes of one trace step together
    for step in trace.steps:
        if step.ts < scale.end and step.end > scale.start:
            start, end = extents.get(step.name, (step.ts, step.end))
            extents[step.name] = (min(start, step.ts), max(end, step.end))
    steps = sorted((start, end, name) for name, (start, end) in extents.items())
    bands, lines, requests = [], set(), []
    for index, (start, end, name) in enumerate(steps):
        x0, x1 = scale.x(start), scale.x(end)
        name = clean_text(name)
        bands.append(StepBand(Box(x0, top, x1 - x0, bottom - top), name, index % 2 == 1))
        lines.update(x for x in (x0, x1) if PLOT_LEFT + 0.5 < x < PLOT_RIGHT - 0.5)
        size = font_px("steplabel")
        text = fit_text(name, x1 - x0 - 8, size)
        if text:
            width = text_width(text, size) + 6
            box = Box((x0 + x1) / 2 - width / 2, top + (STEP_STRIP_H - LABEL_H) / 2, width, LABEL_H)
            requests.append(
                LabelRequest(end - start, ((text, box),), "step", f"{name}: {format_us(end - start)}")
            )
    return bands, sorted(lines), place_labels(requests)


def facts_headline(facts, window_label: str = "") -> str:
    """One line such as 'GPU busy 97% of launched work · compute-bound' from the analyzer's facts
    ('' without): the GPU busy share the verdict is made of (of the work launched in the window),
    named as such; without it, the time-window share, named so too.

    The facts object (a dataclass with `to_dict()`, or a dict) is read defensively: missing or
    renamed fields only shorten the line. Of its windows (`window`, `steps`), the one labelled
    like the picture's is used; another one is named in the line."""
    scope = _facts_of_window(_facts_dict(facts), window_label)
    figures = []
    launched = scope.get("launched")
    busy, of = (launched.get("busy_pct"), "of launched work") if isinstance(launched, dict) else (None, "")
    if busy is None:
        busy, of = scope.get("window_busy_pct"), "of the window"
    if isinstance(busy, (int, float)) and not isinstance(busy, bool):
        figures.append(f"GPU busy {busy:.0f}% {of}")
    verdict = _find_value(scope, ("verdict",))
    if isinstance(verdict, dict):
        verdict = next(
            (verdict[k] for k in ("label", "name", "verdict", "kind") if isinstance(verdict.get(k), str)),
            None,
        )
    if isinstance(verdict, str) and verdict:
        figures.append(clean_text(verdict))
    line = " · ".join(figures)
    scope_label = scope.get("label")
    if line and isinstance(scope_label, str) and scope_label and scope_label != window_label:
        line = f"{clean_text(scope_label)}: {line}"
    return line


def _facts_of_window(data: dict, window_label: str) -> dict:
    """The part of the facts that describes the window labelled `window_label`; else the facts'
    own main window; else all of them."""
    windows = [data.get("window")] + list(data.get("steps") or [])
    windows = [w for w in windows if isinstance(w, dict)]
    for candidate in windows:
        if window_label and candidate.get("label") == window_label:
            return candidate
    return windows[0] if windows else data


def _facts_dict(facts) -> dict:
    if facts is None:
        return {}
    if isinstance(facts, dict):
        return facts
    try:
        if hasattr(facts, "to_dict"):
            data = facts.to_dict()
        elif dataclasses.is_dataclass(facts):
            data = dataclasses.asdict(facts)
        else:
            data = vars(facts)
    except (TypeError, ValueError, AttributeError):  # an API in flux must not cost the picture
        return {}
    return data if isinstance(data, dict) else {}


def _find_value(data: dict, keys: tuple[str, ...]):
    """The first of `keys` found, breadth-first: top-level values win over per-step ones."""
    level = [data]
    while level:
        for key in keys:
            for node in level:
                if key in node and node[key] is not None:
                    return node[key]
        level = [v for node in level for v in node.values() if isinstance(v, dict)]
    return None


def _subtitle(window: Window, collected: CollectedLanes) -> str:
    host_lanes = [lane for lane in collected.lanes if not lane.on_gpu and not _only_overhead(lane)]
    gpu_lanes = [lane for lane in collected.lanes if lane.on_gpu and lane.activities]
    kernels = sum(1 for lane in gpu_lanes for e in lane.activities if e.kind == "kernel")
    parts = [
        f"{clean_text(window.label)}: {format_us(window.dur)}, "
        f"starting {format_us(window.start)} into the trace",
        f"{len(host_lanes)} CPU thread{'s' if len(host_lanes) != 1 else ''}",
    ]
    if gpu_lanes:
        parts.append(f"{len(gpu_lanes)} GPU stream{'s' if len(gpu_lanes) != 1 else ''}")
        parts.append(f"{kernels:,} kernel{'s' if kernels != 1 else ''}")
    else:
        parts.append("no GPU activity")
    return " · ".join(parts)


def _default_title(trace: Trace) -> str:
    name = Path(trace.source).name if trace.source else "trace"
    return f"Timeline of {clean_text(name)}"


def plan_timeline(trace: Trace, window: Window, facts=None, title: str | None = None,
                  span_us: float | None = None) -> Skeleton:
    """Walk down the picture: header, step strip, axis, then one group of lanes per process (host
    processes first, then GPUs). `span_us`: the time the plot's width stands for, when longer
    than the window (see render_timeline)."""
    collected = collect_lanes(trace, window)
    scale = TimeScale.of(window, span_us)
    plan = _Plan()
    has_steps = any(s.ts < scale.end and s.end > scale.start for s in trace.steps)
    step_top = float(HEADER_H)
    axis_y = step_top + (STEP_STRIP_H if has_steps else 0)
    plot_top = y = axis_y + AXIS_H

    host_lanes = [lane for lane in collected.lanes if not lane.on_gpu]
    gpu_lanes = [lane for lane in collected.lanes if lane.on_gpu]
    groups = {
        pid: [lane for lane in host_lanes if lane.pid == pid] for pid in {lane.pid for lane in host_lanes}
    }
    # The program's processes first; the profiler's own overhead after them.
    for pid in sorted(groups, key=lambda pid: (all(map(_only_overhead, groups[pid])), _id_order(pid))):
        group = groups[pid]
        plan.heading(_host_group_name(trace, pid, group), y + GROUP_BASELINE, "group")
        y += GROUP_H
        for lane in group:
            y = _plan_host_lane(plan, lane, trace, y) + LANE_GAP
    for pid in sorted({lane.pid for lane in gpu_lanes}, key=_id_order):
        plan.heading(_gpu_group_name(trace, pid), y + GROUP_BASELINE, "group")
        y += GROUP_H
        for lane in (lane for lane in gpu_lanes if lane.pid == pid):
            y = _plan_gpu_lane(plan, lane, trace, y, scale) + LANE_GAP
    if not any(lane.activities for lane in gpu_lanes):
        plan.heading("GPU", y + GROUP_BASELINE, "group")
        y += GROUP_H
        elsewhere = len(trace.gpu_activities)
        note = (
            f"No GPU activity in this window ({elsewhere:,} GPU activities elsewhere in the trace)"
            if elsewhere
            else "No GPU activity in this trace: a CPU-only profile"
        )
        plan.headings.append(Heading(PLOT_LEFT + 8, y + 15, note, note, "note"))
        y += 24

    bands, step_lines, step_labels = _step_layout(trace, scale, step_top, y) if has_steps else ([], [], [])
    window_end_x = None
    if scale.end_x < PLOT_RIGHT - 0.5:  # a shared scale: the lanes stop where the window does
        window_end_x = scale.end_x
        plan.lane_backgrounds = [dataclasses.replace(box, w=window_end_x - box.x)
                                 for box in plan.lane_backgrounds]
        note = fit_text(f"end of {clean_text(window.label)}: same time scale as its pair",
                        PLOT_RIGHT - window_end_x - 12, font_px("note"))
        if note:
            plan.headings.append(Heading(window_end_x + 8, plot_top + 15, note, note, "note"))
    headline = facts_headline(facts, window.label)
    title_room = WIDTH - 2 * MARGIN - (text_width(headline, font_px("headline")) + 24 if headline else 0)
    layout = TimelineLayout(
        height=0,  # set with the legend
        title=fit_text(clean_text(title) if title else _default_title(trace), title_room, font_px("title")),
        subtitle=fit_text(_subtitle(window, collected), WIDTH - 2 * MARGIN, font_px("sub")),
        headline=headline,
        plot=Box(PLOT_LEFT, plot_top, PLOT_RIGHT - PLOT_LEFT, y - plot_top),
        axis_y=axis_y,
        ticks=[
            Tick(PLOT_LEFT + offset * scale.px_per_us, text)
            for offset, text in nice_ticks(scale.span_us)
        ],
        step_bands=bands,
        step_lines=step_lines,
        lane_backgrounds=plan.lane_backgrounds,
        headings=plan.headings,
        gap_shades=plan.gap_shades,
        gap_brackets=plan.gap_brackets,
        bars=[],
        links=[],
        labels=step_labels + plan.labels,
        legend=[],
        window_end_x=window_end_x,
    )
    return Skeleton(layout, plan.rows, plan.host_rows, plan.activity_rows, collected.launch_depths, scale)


def _bar(span: Span, y: float, h: float, on_gpu_row: bool) -> Bar:
    width = max(span.x1 - span.x0, MIN_DRAW_PX)
    box = Box(span.x0, y, width, h)
    if len(span.events) == 1:
        event = span.events[0]
        kind = event.kind if event.kind in KIND_STYLES else "other"
        room = width - 2 * BAR_TEXT_PAD
        label = fit_text(display_name(event), room, font_px("bar")) if width >= MIN_LABELLED_BAR_PX else ""
        tooltip = f"{_tooltip_name(event.name)}\n{format_us(event.dur)} · {KIND_STYLES[kind][1]}"
        return Bar(box, kind, 1, label, tooltip)
    kinds = Counter(event.kind for event in span.events)
    kind = min(kinds, key=lambda k: (-kinds[k], k))
    count = len(span.events)
    texts = [f"{count:,} events"]
    busy = None
    if on_gpu_row:  # a merged block hides the GPU's gaps: say how much of its stretch is busy
        busy = _busy_share(span.events)
        noun = "kernels" if set(kinds) == {"kernel"} else "GPU activities"
        share = f"{100 * busy:.0f}% busy"
        texts = [f"{count:,} {noun}, {share}", f"{count:,} events, {share}", share]  # longest first
    label = next((t for t in texts if text_width(t, font_px("bar")) <= width - 2 * BAR_TEXT_PAD), "")
    tooltip = _merged_tooltip(span.events, texts[0])
    return Bar(box, kind if kind in KIND_STYLES else "other", count, label, tooltip, busy)


def _busy_share(events: tuple[Event, ...]) -> float:
    """Share of the stretch from the first start to the last end that the events cover."""
    start, end = min(e.ts for e in events), max(e.end for e in events)
    return total((e.ts, e.end) for e in events) / (end - start) if end > start else 1.0


def _merged_tooltip(events: tuple[Event, ...], summary: str) -> str:
    names = Counter(event.name for event in events)
    top = sorted(names.items(), key=lambda item: (-item[1], item[0]))[:3]
    lines = [f"{summary}: too narrow to draw one by one"]
    lines += [f"{count:,} × {_tooltip_name(name)}" for name, count in top]
    if len(names) > 3:
        lines.append(f"… and {len(names) - 3:,} more names")
    return "\n".join(lines)


def _without_covered_labels(bars: list[Bar], depths: list[int]) -> list[Bar]:
    """In a folded row deeper bars are drawn over shallower ones: keep a label only on a bar that
    no deeper bar overlaps."""
    extents: dict[int, list[tuple[float, float]]] = {}
    for bar, depth in zip(bars, depths):
        extents.setdefault(depth, []).append((bar.box.x, bar.box.right))
    covered_by_deeper: dict[int, list[tuple[float, float]]] = {}
    deeper: list[tuple[float, float]] = []
    for depth in sorted(extents, reverse=True):
        covered_by_deeper[depth] = union(deeper)
        deeper += extents[depth]
    result = []
    for bar, depth in zip(bars, depths):
        covered = covered_by_deeper[depth]
        i = bisect.bisect_left(covered, (bar.box.right,))
        hidden = i > 0 and covered[i - 1][1] > bar.box.x
        result.append(dataclasses.replace(bar, label="") if hidden and bar.label else bar)
    return result


def finish_layout(skeleton: Skeleton, trace: Trace, row_spans: list[list[Span]]) -> TimelineLayout:
    """The skeleton with bars for `row_spans` (one list per skeleton row, merged as wanted), the
    launch links between them, the legend and the final height."""
    bars: list[Bar] = []
    launch_ends: dict = {}  # correlation -> (x, y, bar index) of the end of the launch call
    activity_starts: list = []  # (correlation, x, y, bar index) of the start of GPU activities
    for row, spans in zip(skeleton.rows, row_spans):
        row_bars = [_bar(span, row.y, row.h, row.gpu_activity) for span in spans]
        if row.folded:
            row_bars = _without_covered_labels(row_bars, [span.depth for span in spans])
        for bar, span in zip(row_bars, spans):
            bars.append(bar)
            for event in span.events:
                correlation = event.args.get("correlation")
                if correlation is None:
                    continue
                if row.gpu_activity:
                    x = bar.box.x if bar.merged == 1 else skeleton.scale.x(event.ts)
                    activity_starts.append((correlation, x, bar.box.y, len(bars) - 1))
                elif event.kind in LAUNCH_KINDS:
                    x = bar.box.right if bar.merged == 1 else skeleton.scale.x(event.end)
                    launch_ends[correlation] = (x, bar.box.bottom, len(bars) - 1)
    links = _links(skeleton, trace, launch_ends, activity_starts)
    kept = thin_links(links)
    layout = dataclasses.replace(skeleton.layout, bars=bars, links=kept, links_thinned=len(kept) < len(links))
    layout.legend = _legend(layout, layout.plot.bottom + 16)
    layout.height = math.ceil(
        (layout.legend[-1].swatch.y if layout.legend else layout.plot.bottom) + LEGEND_ROW_H + MARGIN - 4
    )
    return layout


def _links(skeleton: Skeleton, trace: Trace, launch_ends: dict, activity_starts: list) -> list[Link]:
    """One link per pair of drawn bars (launch call, GPU activity): where bars stand for many
    merged events, the pair's first launch is drawn and the others would only repeat it."""
    seen = set()
    links = []
    for correlation, x2, y2, activity_bar in activity_starts:
        launch = trace.launches_by_correlation.get(correlation)
        if launch is None:
            continue
        if correlation in launch_ends:
            x1, y1, launch_bar = launch_ends[correlation]
            outside = ""
        else:
            rows = skeleton.host_rows.get((launch.pid, launch.tid))
            depth = skeleton.launch_depths.get(correlation)
            if rows is None or depth is None:
                continue
            x1, y1 = PLOT_LEFT, rows[min(depth, len(rows) - 1)]
            launch_bar, outside = ("before", y1), "before"
        if (launch_bar, activity_bar) not in seen:
            seen.add((launch_bar, activity_bar))
            links.append(Link(x1, y1, x2, y2, outside))
    return links + _links_after(skeleton, trace, launch_ends, {c for c, *_ in activity_starts})


def _links_after(skeleton: Skeleton, trace: Trace, launch_ends: dict, drawn: set) -> list[Link]:
    """Launches in the window whose GPU activity runs after it (the host ran ahead, as it should):
    a link to the window's right edge on the activity's stream, one per launch bar and stream."""
    waiting = launch_ends.keys() - drawn
    if not waiting:
        return []
    seen = set()
    links = []
    for activity in trace.gpu_activities:
        correlation = activity.args.get("correlation")
        if correlation not in waiting or activity.ts < skeleton.scale.end:
            continue
        y2 = skeleton.activity_rows.get((activity.pid, activity.tid))
        x1, y1, launch_bar = launch_ends[correlation]
        if y2 is not None and (launch_bar, y2) not in seen:
            seen.add((launch_bar, y2))
            links.append(Link(x1, y1, skeleton.scale.end_x, y2, "after"))
    return links


def thin_links(links: list[Link], min_spacing: float = LINK_MIN_SPACING_PX) -> list[Link]:
    """Where links end closer than `min_spacing` on a row, keep the first only: hundreds of lines
    would hide the lanes they cross, and a sample tells the same story. A link that ends at the
    window's right edge counts by its start instead."""
    kept = []
    last_x: dict[float, float] = {}  # row (y) -> x of the last kept link's end there
    for link in sorted(links, key=_inner_end):
        y, x = _inner_end(link)
        if x - last_x.get(y, -math.inf) >= min_spacing:
            kept.append(link)
            last_x[y] = x
    return kept


def _inner_end(link: Link) -> tuple[float, float]:
    """(y, x) of the end of the link that lies inside the window, the GPU end if both do."""
    return (link.y1, link.x1) if link.outside == "after" else (link.y2, link.x2)


def _legend(layout: TimelineLayout, top: float) -> list[LegendItem]:
    kinds_drawn = {bar.kind for bar in layout.bars}
    entries = [(kind, text) for kind, (_, text) in KIND_STYLES.items() if kind in kinds_drawn]
    if any(bar.merged > 1 and bar.busy is None for bar in layout.bars):
        entries.append(("merged", "merged: too narrow to draw one by one"))
    if any(bar.busy is not None for bar in layout.bars):
        entries.append(("dense", "merged GPU work, filled to its busy share"))
    if layout.gap_shades:
        entries.append(("gap", "GPU idle (per stream)"))
    if layout.links:
        notes = [f"where dense, one per {LINK_MIN_SPACING_PX:g} px"] if layout.links_thinned else []
        if any(link.outside for link in layout.links):
            notes.append("dashed: one end outside the window")
        entries.append(("link", "launch → GPU activity" + (f" ({'; '.join(notes)})" if notes else "")))
    if layout.step_bands:
        entries.append(("step", "ProfilerStep"))
    # On a grid of LEGEND_COLUMNS columns, so that the swatches line up; a long entry spans more.
    column_w = (WIDTH - 2 * MARGIN + LEGEND_ITEM_GAP) / LEGEND_COLUMNS
    swatch_w, swatch_h = LEGEND_SWATCH
    items, column, y = [], 0, top
    for css_class, text in entries:
        width = swatch_w + LEGEND_TEXT_GAP + text_width(text, font_px("legend")) + LEGEND_ITEM_GAP
        span = min(math.ceil(width / column_w), LEGEND_COLUMNS)
        if column and column + span > LEGEND_COLUMNS:
            column, y = 0, y + LEGEND_ROW_H
        items.append(LegendItem(Box(MARGIN + column * column_w, y, swatch_w, swatch_h), css_class, text))
        column += span
    return items


def layout_timeline(
    trace: Trace,
    window: Window | None = None,
    facts=None,
    *,
    title: str | None = None,
    min_px: float = MERGE_THRESHOLDS_PX[0],
    span_us: float | None = None,
) -> TimelineLayout:
    """Everything the picture shows, in pixels; events narrower than `min_px` merge."""
    skeleton = plan_timeline(trace, _as_window(trace, window), facts, title, span_us)
    scale = skeleton.scale
    return finish_layout(
        skeleton, trace, [merge_spans(scale.spans(row.events, row.depths), min_px) for row in skeleton.rows]
    )


def _as_window(trace: Trace, window) -> Window:
    if window is None:
        return select_window(trace)
    if isinstance(window, Window):
        return window
    return select_window(trace, window=tuple(window))


# ---------------------------------------------------------------------------------------------
# Stage 3: SVG text


def _style(kinds: list[str], merged_kinds: list[str], dense_kinds: list[str]) -> str:
    rules = [f"text{{font-family:{FONT};fill:{INK}}}"]
    rules += [f".{css_class}{{font-size:{size:g}px}}" for css_class, size in FONT_PX.items()]
    rules += [
        "." + ",.".join(css_class for css_class in FONT_PX if css_class in BOLD) + "{font-weight:600}",
        f".card{{fill:{CARD};stroke:{BORDER}}}",
        f".sub,.note,.tick,.steplabel{{fill:{MUTED}}}",
        ".note{font-style:italic}",
        # A group's name runs on into the plot, over grid and step lines: a halo of the card's colour.
        f".group{{paint-order:stroke;stroke:{CARD};stroke-width:4px;stroke-linejoin:round}}",
        f".grid{{stroke:{GRID};stroke-width:1}}",
        f".lanebg{{fill:{LANE_TINT}}}",
        f".band{{fill:{STEP_TINT};fill-opacity:.55}}",
        f".stepline{{stroke:{STEP_LINE};stroke-width:1;stroke-dasharray:4 3}}",
        ".gap{fill:url(#gap)}",
        f".bracket{{fill:none;stroke:{GAP_INK};stroke-width:1}}",
        f".gl{{fill:{CARD};stroke:{GAP_HATCH}}}",
        f".gaptext{{fill:{GAP_INK}}}",
        f".link{{stroke:{LINK};stroke-opacity:.6;stroke-width:.8;fill:none}}",
        ".link.outside{stroke-dasharray:3 2}",
        ".k-merged{fill:url(#m-other)}",
        f".k-step{{fill:{STEP_TINT};stroke:{STEP_LINE};stroke-dasharray:3 2}}",
        f".k-gap{{fill:url(#gap);stroke:{GAP_HATCH}}}",
    ]
    rules += [f".k-{kind}{{fill:{KIND_STYLES[kind][0]}}}" for kind in kinds]
    rules += [f".m-{kind}{{fill:url(#m-{kind})}}" for kind in merged_kinds]
    rules += [f".d-{kind}{{fill:{KIND_STYLES[kind][0]};fill-opacity:.3}}" for kind in dense_kinds]
    return "<style>" + "".join(rules) + "</style>"


def _defs(merged_kinds: list[str]) -> str:
    """Hatch patterns: light red stripes for GPU gaps, white stripes over merged events' colour."""
    patterns = [_hatch("gap", 6, GAP_FILL, GAP_HATCH, 2)]
    patterns += [
        _hatch(f"m-{kind}", 4, KIND_STYLES[kind][0], CARD, 1.5, ' fill-opacity=".6"') for kind in merged_kinds
    ]
    return "<defs>" + "".join(patterns) + "</defs>"


def _hatch(
    pattern_id: str, size: int, ground: str, stripe: str, stripe_w: float, stripe_attrs: str = ""
) -> str:
    return (
        f'<pattern id="{pattern_id}" width="{size}" height="{size}" patternUnits="userSpaceOnUse" '
        f'patternTransform="rotate(45)"><rect width="{size}" height="{size}" fill="{ground}"/>'
        f'<rect width="{stripe_w}" height="{size}" fill="{stripe}"{stripe_attrs}/></pattern>'
    )


def _text(x: float, y: float, text: str, css_class: str, anchor: str = "", tooltip: str = "") -> str:
    anchor_attr = f' text-anchor="{anchor}"' if anchor else ""
    title = f"<title>{escape(tooltip)}</title>" if tooltip and tooltip != text else ""
    body = f"{title}{escape(text)}"
    return f'<text class="{css_class}" x="{_num(x)}" y="{_num(y)}"{anchor_attr}>{body}</text>'


def _heading_svg(heading: Heading) -> str:
    """One <text>; each line after the first a <tspan> below it. A line keeps its trailing space, so
    that the element's text content reads as the heading does on one line."""
    if len(heading.lines) < 2:
        return _text(heading.x, heading.baseline, heading.text, heading.style, tooltip=heading.tooltip)
    title = f"<title>{escape(heading.tooltip)}</title>" if heading.tooltip != heading.text else ""
    first, *rest = heading.lines
    body = escape(first) + " " + " ".join(
        f'<tspan x="{_num(heading.x)}" dy="{LINE_H}">{escape(line)}</tspan>' for line in rest
    )
    geometry = f'x="{_num(heading.x)}" y="{_num(heading.baseline)}"'
    return f'<text class="{heading.style}" {geometry}>{title}{body}</text>'


def _rect(box: Box, css_class: str, tooltip: str = "") -> str:
    geometry = f'x="{_num(box.x)}" y="{_num(box.y)}" width="{_num(box.w)}" height="{_num(box.h)}"'
    if tooltip:
        return f'<rect class="{css_class}" {geometry}><title>{escape(tooltip)}</title></rect>'
    return f'<rect class="{css_class}" {geometry}/>'


def _line(css_class: str, x1: float, y1: float, x2: float, y2: float) -> str:
    ends = f'x1="{_num(x1)}" y1="{_num(y1)}" x2="{_num(x2)}" y2="{_num(y2)}"'
    return f'<line class="{css_class}" {ends}/>'


def _bar_svg(bar: Bar) -> list[str]:
    if bar.busy is None:
        return [_rect(bar.box, f"m-{bar.kind}" if bar.merged > 1 else f"k-{bar.kind}", bar.tooltip)]
    filled = max(bar.box.h * bar.busy, MIN_DRAW_PX)  # merged GPU work: pale block, solid busy share
    busy_box = dataclasses.replace(bar.box, y=bar.box.bottom - filled, h=filled)
    return [_rect(bar.box, f"d-{bar.kind}", bar.tooltip), _rect(busy_box, f"k-{bar.kind}")]


def _label_svg(label: PlacedLabel) -> str:
    css_class = "gaptext" if label.role == "gap" else "steplabel"
    centre, baseline = label.box.x + label.box.w / 2, _centred_baseline(label.box.y, label.box.h, css_class)
    if label.role == "gap":
        pill = _rect(label.box, "gl", label.tooltip)
        return f"<g>{pill}{_text(centre, baseline, label.text, 'gaptext', 'middle')}</g>"
    return _text(centre, baseline, label.text, "steplabel", "middle", label.tooltip)


def _legend_svg(item: LegendItem) -> list[str]:
    box = item.swatch
    if item.css_class == "link":
        swatch = [_line("link", box.x, box.y + box.h / 2, box.right, box.y + box.h / 2)]
    elif item.css_class == "dense":
        swatch = [
            _rect(box, "d-kernel"),
            _rect(dataclasses.replace(box, y=box.y + box.h * 0.6, h=box.h * 0.4), "k-kernel"),
        ]
    else:
        swatch = [_rect(box, "k-merged" if item.css_class == "merged" else f"k-{item.css_class}")]
    baseline = _centred_baseline(box.y, box.h, "legend")
    return swatch + [_text(box.right + LEGEND_TEXT_GAP, baseline, item.text, "legend")]


def svg_of(layout: TimelineLayout) -> str:
    """The layout as SVG, back to front: card, header, lanes, grid, gaps, bars, links, labels."""
    plot = layout.plot
    merged_kinds = {bar.kind for bar in layout.bars if bar.merged > 1 and bar.busy is None}
    merged_kinds = sorted(merged_kinds | {"other"}) if merged_kinds else []  # m-other: the legend's swatch
    dense_kinds = {bar.kind for bar in layout.bars if bar.busy is not None}
    dense_kinds = sorted(dense_kinds | {"kernel"}) if dense_kinds else []  # d-kernel: the legend's swatch
    drawn = {bar.kind for bar in layout.bars} | set(dense_kinds)
    kinds = [kind for kind in KIND_STYLES if kind in drawn]
    width, height = layout.width, layout.height
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" width="{width}" '
        f'height="{height}" role="img" aria-labelledby="timeline-title">',
        f'<title id="timeline-title">{escape(layout.title)}: {escape(layout.subtitle)}</title>',
        _style(kinds, merged_kinds, dense_kinds),
        _defs(merged_kinds),
        f'<rect class="card" x="0.5" y="0.5" width="{width - 1}" height="{height - 1}" rx="8"/>',
        _text(MARGIN, TITLE_BASELINE, layout.title, "title"),
        _text(MARGIN, SUBTITLE_BASELINE, layout.subtitle, "sub"),
    ]
    if layout.headline:
        out.append(_text(width - MARGIN, TITLE_BASELINE, layout.headline, "headline", "end"))
    out += [_rect(box, "lanebg") for box in layout.lane_backgrounds]
    out += [_rect(band.box, "band") for band in layout.step_bands if band.shaded]
    for tick in layout.ticks:
        out.append(_line("grid", tick.x, plot.y - 4, tick.x, plot.bottom))
        overhang = tick.x + text_width(tick.text, font_px("tick")) / 2 > width - MARGIN / 2
        anchor = "start" if tick.x < PLOT_LEFT + 1 else "end" if overhang else "middle"
        baseline = _centred_baseline(layout.axis_y, AXIS_H - 4, "tick")
        out.append(_text(tick.x, baseline, tick.text, "tick", anchor))
    out += [_line("stepline", x, layout.axis_y - STEP_STRIP_H, x, plot.bottom) for x in layout.step_lines]
    if layout.window_end_x is not None:
        out.append(_line("stepline", layout.window_end_x, plot.y - 4, layout.window_end_x, plot.bottom))
    out += [_rect(box, "gap") for box in layout.gap_shades]
    out += [part for bar in layout.bars for part in _bar_svg(bar)]
    for link in layout.links:  # over the bars, under their labels
        out.append(_line("link outside" if link.outside else "link", link.x1, link.y1, link.x2, link.y2))
    for bar in layout.bars:
        if bar.label:
            baseline = _centred_baseline(bar.box.y, bar.box.h, "bar")
            out.append(_text(bar.box.x + BAR_TEXT_PAD, baseline, bar.label, "bar"))
    for box in layout.gap_brackets:
        path = f"M{_num(box.x)} {_num(box.y)}v{_num(box.h)}H{_num(box.right)}v{_num(-box.h)}"
        out.append(f'<path class="bracket" d="{path}"/>')
    out += [_label_svg(label) for label in layout.labels]
    out += [_heading_svg(heading) for heading in layout.headings]
    out += [part for item in layout.legend for part in _legend_svg(item)]
    out.append("</svg>")
    return "\n".join(out) + "\n"


# ---------------------------------------------------------------------------------------------
# Entry points


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
    skeleton = plan_timeline(trace, _as_window(trace, window), facts, title, span_us)
    row_spans = [skeleton.scale.spans(row.events, row.depths) for row in skeleton.rows]
    svg = ""
    for min_px in MERGE_THRESHOLDS_PX:
        row_spans = [merge_spans(spans, min_px) for spans in row_spans]
        svg = svg_of(finish_layout(skeleton, trace, row_spans))
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
