"""The timeline's last stage: a finished `TimelineLayout` (scripts/tracefacts/pictures/timeline/layout.py) as SVG text.

The picture is shown as an <img>, so it cannot follow the site's light/dark toggle: it carries its
own opaque light card, and all text has at least 4.5:1 contrast against what it sits on.
"""

from __future__ import annotations

import dataclasses

from ..markup import escape
from .geometry import Bar, Box, Heading, LegendItem, PlacedLabel, TimelineLayout
from .style import (AXIS_H, BAR_TEXT_PAD, BOLD, BORDER, CARD, FONT, FONT_PX, GAP_FILL, GAP_HATCH, GAP_INK,
                             GRID, INK, KIND_STYLES, LANE_TINT, LEGEND_TEXT_GAP, LINE_H, LINK, MARGIN, MIN_DRAW_PX,
                             MUTED, PLOT_LEFT, STEP_LINE, STEP_STRIP_H, STEP_TINT, SUBTITLE_BASELINE,
                             TITLE_BASELINE, centred_baseline, font_px, text_width)


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


def _num(value: float) -> str:
    """Coordinates with one decimal and no '-0' or trailing '.0', so output bytes are stable."""
    rounded = round(value, 1)
    if rounded == int(rounded):
        return str(int(rounded))
    return f"{rounded:.1f}"


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
    centre, baseline = label.box.x + label.box.w / 2, centred_baseline(label.box.y, label.box.h, css_class)
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
    baseline = centred_baseline(box.y, box.h, "legend")
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
        baseline = centred_baseline(layout.axis_y, AXIS_H - 4, "tick")
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
            baseline = centred_baseline(bar.box.y, bar.box.h, "bar")
            out.append(_text(bar.box.x + BAR_TEXT_PAD, baseline, bar.label, "bar"))
    for box in layout.gap_brackets:
        path = f"M{_num(box.x)} {_num(box.y)}v{_num(box.h)}H{_num(box.right)}v{_num(-box.h)}"
        out.append(f'<path class="bracket" d="{path}"/>')
    out += [_label_svg(label) for label in layout.labels]
    out += [_heading_svg(heading) for heading in layout.headings]
    out += [part for item in layout.legend for part in _legend_svg(item)]
    out.append("</svg>")
    return "\n".join(out) + "\n"
