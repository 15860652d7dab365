"""The timeline's first two stages: which events each lane holds, then the skeleton of the picture.

- `collect_lanes`: one pass over the trace -> the events of each lane that overlap the window, with
  their nesting depth (the only stage whose cost grows with the whole trace);
- `plan_timeline`: lanes -> `Skeleton`, everything in pixels that does not depend on how far
  events merge: header, step strip, axis, lane rows and names, GPU idle gaps and their labels.
  scripts/tracefacts/pictures/timeline/layout.py puts the bars, links and legend on it.
"""

from __future__ import annotations

import dataclasses
import math
from bisect import bisect_left
from dataclasses import dataclass, field
from pathlib import Path

from ...model.intervals import gaps as uncovered
from .geometry import (Box, Heading, LabelRequest, PlacedLabel, StepBand, Tick, TimelineLayout,
                                TimeScale, nice_ticks, place_labels)
from .headline import facts_headline
from .style import (AXIS_H, BRACKET_H, CPU_ROW_H, GAP_LABEL_TIERS, GPU_ROW_H, GROUP_BASELINE, GROUP_H,
                             GROUP_NAME_MAX_W, HEADER_H, LABEL_H, LANE_GAP, LANE_INDENT, LINE_H, MARGIN,
                             MARKER_ROW_H, MAX_CPU_ROWS, MAX_HEADING_LINES, MAX_MARKER_ROWS, MIN_DRAW_PX,
                             MIN_LABELLED_GAP_PX, PLOT_LEFT, PLOT_RIGHT, STEP_STRIP_H, TIER_H, WIDTH,
                             centred_baseline, clean_text, fit_text, font_px, text_width, wrap_text)
from ...model.trace import GPU_ACTIVITY_KINDS, LAUNCH_KINDS, Event, Trace, Window, select_window
from ...model.units import format_us


NEST_SLACK_US = 0.01  # a child may end this much after its parent (rounding) and still nest
NOT_DRAWN_KINDS = frozenset({"trace", "instant"})  # the profiler's own span; zero-width instants


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
    # A GPU lane's work just outside the window: when its last activity before the window ended,
    # and when its first one after the window starts (None: there is none). A gap the window's
    # edge cuts is labelled by its whole length, from one to the other.
    idle_since: float | None = None
    idle_until: float | None = None

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
    ended_before: dict[tuple, float] = {}  # each stream: where its work before the window ended
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
            elif event_end <= start and event_end > ended_before.get(key, -math.inf):
                ended_before[key] = event_end
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
    _work_outside(trace, window, lanes, ended_before)
    ordered = sorted(lanes.values(), key=lambda lane: (lane.on_gpu, _id_order(lane.pid), _id_order(lane.tid)))
    return CollectedLanes(ordered, launch_depths)


def _work_outside(trace: Trace, window: Window, lanes: dict, ended_before: dict) -> None:
    """Each GPU lane with activities in the window: where its work before the window ended, and
    where its next activity after the window starts (the activities after it, in start order,
    until each such lane has found one)."""
    waiting = {}
    for key, lane in lanes.items():
        if lane.activities:
            lane.idle_since = ended_before.get(key)
            waiting[key] = lane
    activities = trace.gpu_activities
    for event in activities[bisect_left(activities, window.end, key=lambda e: e.ts):]:
        if not waiting:
            break
        lane = waiting.pop((event.pid, event.tid), None)
        if lane is not None and event.ts > window.end:
            lane.idle_until = event.ts


def _new_lane(lanes: dict, key: tuple, on_gpu: bool) -> LaneEvents:
    lane = lanes[key] = LaneEvents(key[0], key[1], on_gpu)
    return lane


# ---------------------------------------------------------------------------------------------
# Stage 2: the skeleton (pure: lanes in, boxes out)


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
    plan.heading(_host_lane_name(trace, lane), centred_baseline(top, CPU_ROW_H, "lane"), room=height)
    if folded:  # at the lane's foot, clear of its name: folding needs MAX_CPU_ROWS rows
        levels = f"+{folded} deeper level{'s' if folded > 1 else ''}"
        note = f"{levels} folded in"
        width = PLOT_LEFT - MARGIN - LANE_INDENT - 8
        lines = (note,) if text_width(note, font_px("note")) <= width else (levels, "folded in")
        baseline = top + height - 6 - (len(lines) - 1) * LINE_H
        plan.headings.append(Heading(MARGIN + LANE_INDENT, baseline, " ".join(lines), note, "note", lines))
    return top + height


def _plan_gpu_lane(plan: _Plan, lane: LaneEvents, trace: Trace, top: float, scale: TimeScale,
                   edge: str = "window") -> float:
    """GPU-side annotations (if any), the activity row with its idle gaps shaded, and under it
    the gap labels that do not fit inside their gaps. `edge`: what the window is, as a label of
    a gap its edge cuts names it ('step')."""
    lane_top = top
    if lane.calls:
        n_rows, _ = _stack_rows(plan, lane, top, MARKER_ROW_H, MAX_MARKER_ROWS)
        top += n_rows * MARKER_ROW_H
    first_row_h = MARKER_ROW_H if lane.calls else GPU_ROW_H
    plan.heading(
        clean_text(trace.thread_names.get(lane.key) or f"stream {lane.tid}"),
        centred_baseline(lane_top, first_row_h, "lane"),
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
        [_whole_gap(gap, lane, scale) for gap in visible], shades, bool(lane.activities),
        first_gap_starts_window, top, strip_top, edge
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


def _whole_gap(gap: tuple[float, float], lane: LaneEvents, scale: TimeScale) -> tuple[float, float, bool, bool]:
    """A drawn gap (start, end) as the analyzer measures it, and whether the window's edges cut
    it: (start, end, began before the window, goes on after it). The analyzer's gap is the GPU's
    idle time before an activity, from where its earlier work ended (facts/index.py
    `_idle_before`): a property of the activity, the same in every window that holds it. So a gap
    the window's edge cuts is drawn clipped but labelled whole, as the facts box, the links under
    a picture and the JSON's `widest_gaps` name it; clipping the analyzer's gap to the window
    instead would give one gap a length per window. The picture's gaps are a stream's (its legend
    says so): on a GPU of one stream, the analyzer's exactly."""
    start, end = gap
    before = lane.idle_since is not None and start <= scale.start and lane.idle_since < start
    after = lane.idle_until is not None and end >= scale.end and lane.idle_until > end
    return (lane.idle_since if before else start, lane.idle_until if after else end, before, after)


def _cut(before: bool, after: bool, edge: str) -> str:
    """Where a gap the window's edge cuts goes on: 'from before the step', 'on past the step'."""
    return " and ".join([*([f"from before the {edge}"] if before else []), *([f"on past the {edge}"] if after else [])])


def _gap_label_requests(
    gaps, shades: list[Box], has_activity: bool, first_is_lead: bool, row_top: float, strip_top: float,
    edge: str = "window",
) -> list[LabelRequest]:
    """Each gap ((start, end, began before the window, goes on after it): its whole extent, in
    us, with its shade) wants its length written inside it, or else under the stream in one of
    the tiers, centred on the gap; a gap the window's edge cuts says so, with an arrow to where
    it goes on. `first_is_lead`: the first gap is the wait before the stream's first activity in
    the window."""
    requests = []
    size = font_px("gaptext")
    for index, ((start, end, before, after), shade) in enumerate(zip(gaps, shades)):
        if shade.w < MIN_LABELLED_GAP_PX:
            continue
        length = format_us(end - start)
        texts, words = [f"{length} idle"], ""  # `words`: what the tooltip adds to the length
        if not has_activity:
            texts = [f"{length} idle: no GPU work in this window", f"{length} idle"]
        elif before or after:
            arrow, note = "← " if before else "", " →" if after else ""
            words = f", {_cut(before, after, edge)}"
            texts = [f"{arrow}{length} idle{words}{note}", f"{arrow}{length} idle{note}"]
        elif index == 0 and first_is_lead and shade.x <= PLOT_LEFT:
            # Nothing earlier on the stream that the window cuts off: the wait from the window's
            # start (where the stream has no earlier work at all, the analyzer counts only the
            # time from the first launch call), and the tooltip says which wait it is.
            words = " before the first kernel"
            texts = [f"{length} idle{words}", f"{length} idle"]
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
        requests.append(LabelRequest(end - start, tuple(options), "gap", f"GPU idle for {length}{words}", shade))
    return requests


def _by_pid(lanes: list[LaneEvents]) -> dict:
    """pid -> its lanes, in their order."""
    found: dict = {}
    for lane in lanes:
        found.setdefault(lane.pid, []).append(lane)
    return found


def _gpu_models(trace: Trace) -> dict:
    """deviceProperties' `id` -> the names given for it, in order (read once, not per GPU)."""
    found: dict = {}
    for device in trace.gpus:
        if isinstance(device, dict) and device.get("name"):
            try:
                found.setdefault(device.get("id"), []).append(device["name"])
            except TypeError:  # an id that is a list or an object: no pid equals it
                pass
    return found


def _gpu_group_name(trace: Trace, pid, models: dict) -> str:
    # Kineto names a GPU's process after the host process ('python3'); its label says 'GPU 0'.
    given = clean_text(trace.process_names.get(pid) or "")
    name = given if given.upper().startswith("GPU") else f"GPU {pid}"
    for model in models.get(pid, ()):
        model = clean_text(model)
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
    # The lanes of each process, grouped in one pass (a trace may hold a GPU per kernel).
    groups = _by_pid(host_lanes)
    # The program's processes first; the profiler's own overhead after them.
    for pid in sorted(groups, key=lambda pid: (all(map(_only_overhead, groups[pid])), _id_order(pid))):
        group = groups[pid]
        plan.heading(_host_group_name(trace, pid, group), y + GROUP_BASELINE, "group")
        y += GROUP_H
        for lane in group:
            y = _plan_host_lane(plan, lane, trace, y) + LANE_GAP
    gpu_groups = _by_pid(gpu_lanes)
    models = _gpu_models(trace)
    edge = "step" if window.label.startswith("ProfilerStep#") else "window"
    for pid in sorted(gpu_groups, key=_id_order):
        plan.heading(_gpu_group_name(trace, pid, models), y + GROUP_BASELINE, "group")
        y += GROUP_H
        for lane in gpu_groups[pid]:
            y = _plan_gpu_lane(plan, lane, trace, y, scale, edge) + LANE_GAP
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


def as_window(trace: Trace, window) -> Window:
    if window is None:
        return select_window(trace)
    if isinstance(window, Window):
        return window
    return select_window(trace, window=tuple(window))
