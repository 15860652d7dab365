"""The timeline's layout finished: a skeleton (scripts/tracefacts/pictures/timeline/plan.py) with bars for its rows'
spans, merged as far as asked, the launch links between them, the legend and the final height.
`layout_timeline` runs both stages; scripts/tracefacts/pictures/timeline/svg.py draws the result.
"""

from __future__ import annotations

import bisect
import dataclasses
import math
from collections import Counter

from ...model.intervals import total, union
from .geometry import Bar, Box, LegendItem, Link, Span, TimelineLayout, merge_spans
from .plan import Skeleton, as_window, plan_timeline
from .style import (BAR_TEXT_PAD, KIND_STYLES, LEGEND_COLUMNS, LEGEND_ITEM_GAP, LEGEND_ROW_H,
                             LEGEND_SWATCH, LEGEND_TEXT_GAP, LINK_MIN_SPACING_PX, MARGIN, MERGE_THRESHOLDS_PX,
                             MIN_DRAW_PX, MIN_LABELLED_BAR_PX, PLOT_LEFT, WIDTH, display_name, fit_text,
                             font_px, text_width, tooltip_name)
from ...model.trace import LAUNCH_KINDS, Event, Trace, Window
from ...model.units import format_us


def _bar(span: Span, y: float, h: float, on_gpu_row: bool) -> Bar:
    width = max(span.x1 - span.x0, MIN_DRAW_PX)
    box = Box(span.x0, y, width, h)
    if len(span.events) == 1:
        event = span.events[0]
        kind = event.kind if event.kind in KIND_STYLES else "other"
        room = width - 2 * BAR_TEXT_PAD
        label = fit_text(display_name(event), room, font_px("bar")) if width >= MIN_LABELLED_BAR_PX else ""
        tooltip = f"{tooltip_name(event.name)}\n{format_us(event.dur)} · {KIND_STYLES[kind][1]}"
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
    lines += [f"{count:,} × {tooltip_name(name)}" for name, count in top]
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
    skeleton = plan_timeline(trace, as_window(trace, window), facts, title, span_us)
    scale = skeleton.scale
    return finish_layout(
        skeleton, trace, [merge_spans(scale.spans(row.events, row.depths), min_px) for row in skeleton.rows]
    )
