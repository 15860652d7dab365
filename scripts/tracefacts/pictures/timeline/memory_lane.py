"""The memory lane under the timeline: each device's allocated bytes over the window, as steps,
its peak marked and labelled (scripts/tracefacts/facts/memory.py computes; this only draws).

`add_memory_lane(svg, trace, window)` takes the timeline's SVG (scripts/tracefacts/pictures/timeline/draw.py) and returns
it taller by one lane per device with memory events in the window, on the timeline's own time
scale; without memory events it returns the SVG unchanged. Names from the trace go through
scripts/tracefacts/pictures/markup.py, which escapes them.
"""

from __future__ import annotations

import re

from ..markup import h
from ...facts.memory import format_bytes, memory_facts, memory_series
from .geometry import TimeScale
from .style import MARGIN, PLOT_LEFT, PLOT_RIGHT
from ...model.names import bounded
from ...model.trace import Trace, Window

LANE_H = 56  # px of one device's lane
PAD = 8
_SIZE = re.compile(r'viewBox="0 0 ([\d.]+) ([\d.]+)" width="([\d.]+)" height="([\d.]+)"')
_CARD = re.compile(r'(<rect class="card" [^>]*height=")([\d.]+)(")')


def add_memory_lane(svg: str, trace: Trace, window: Window, span_us: float | None = None) -> str:
    """`svg` with a memory lane per device under it (unchanged without memory events)."""
    series = memory_series(trace, window)
    found = memory_facts(trace, window)
    size = _SIZE.search(svg)
    if not series or found is None or size is None:
        return svg
    width, height = float(size.group(1)), float(size.group(2))
    scale = TimeScale.of(window, span_us)
    parts, top = [], height
    by_name: dict = {}  # as found.device(name), without a search of the devices for each lane
    for d in found.devices:
        by_name.setdefault(d.device, d)
    for s in series:
        device = by_name.get(s.device)
        parts.append(_lane(s, device, scale, top))
        top += LANE_H + PAD
    grown = top + PAD
    svg = svg.replace(size.group(0), f'viewBox="0 0 {size.group(1)} {grown:g}" width="{size.group(3)}" '
                                     f'height="{grown:g}"', 1)
    svg = _CARD.sub(lambda m: f"{m.group(1)}{grown - 1:g}{m.group(3)}", svg, count=1)
    lane = h("g", {"class": "memory-lane"}, *parts)
    return svg.replace("</svg>", f"{lane}</svg>", 1) if width else svg


def _lane(series, device, scale: TimeScale, top: float):
    peak = max(max(series.allocated), 1)
    bottom, span = top + LANE_H - 4, LANE_H - 18

    def y(level: int) -> float:
        return bottom - span * max(level, 0) / peak

    points, last = [], None
    for t, level in zip(series.times_us, series.allocated):
        x = scale.x(t)
        if last is not None:
            points.append(f"{x:.1f},{y(last):.1f}")
        points.append(f"{x:.1f},{y(level):.1f}")
        last = level
    points.append(f"{scale.end_x:.1f},{y(last):.1f}")
    children = [
        h("rect", {"x": PLOT_LEFT, "y": top, "width": PLOT_RIGHT - PLOT_LEFT, "height": LANE_H,
                   "fill": "#f4f1fa"}),
        h("text", {"x": MARGIN, "y": top + LANE_H / 2 + 4, "font-size": 11},
          f"memory {series.device}"),
        h("polyline", {"points": " ".join(points), "fill": "none", "stroke": "#6a3d9a",
                       "stroke-width": 1.5}),
    ]
    if device is not None:
        px, py = scale.x(device.peak_us), y(device.peak_allocated)
        where = f", in {bounded(device.peak_op)}" if device.peak_op else ""
        label = f"peak {format_bytes(device.peak_allocated)}{where}"
        anchor = "end" if px > (PLOT_LEFT + PLOT_RIGHT) / 2 else "start"
        children += [
            h("circle", {"cx": f"{px:.1f}", "cy": f"{py:.1f}", "r": 3, "fill": "#6a3d9a"}),
            h("text", {"x": f"{px + (-5 if anchor == 'end' else 5):.1f}", "y": f"{top + 12:.1f}",
                       "font-size": 10, "text-anchor": anchor}, label),
        ]
    return h("g", None, *children)
