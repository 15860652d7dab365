"""The timeline picture's measures: the geometry of its viewBox, its type sizes and colours, the
style of each kind of event, and the text measuring that the layout and the drawing share
(scripts/tracefacts/pictures/timeline/draw.py draws with them). Standard library only.
"""

from __future__ import annotations

import re
from functools import lru_cache

from ...model.names import FULL_NAME_MAX, bounded
from ...model.trace import GPU_ACTIVITY_KINDS, Event


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


# ---------------------------------------------------------------------------------------------
# Text: cleaning, formatting, measuring


_XML_INVALID = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")
# The directories of an absolute path ('/home/me/x/', 'C:\\Users\\me\\'): dropped, the file name kept.
_ABSOLUTE_DIRS = re.compile(r"(?<![\w.~])(?:[A-Za-z]:)?[\\/](?:[^\\/\s():'\"]+[\\/])+")


def clean_text(text: str) -> str:
    """Text fit for the picture: at most FULL_NAME_MAX characters (and its length: a trace's name
    may be megabytes), no characters XML forbids, no directories of absolute paths, no spaces
    around it."""
    return _ABSOLUTE_DIRS.sub("", _XML_INVALID.sub("", bounded(str(text), FULL_NAME_MAX))).strip()


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


# The narrowest character's advance, in em (_char_em): more characters than fill a width with
# it never fit there, so that fitting reads at most those of any text, however long.
_NARROWEST_EM = 0.30


def fit_text(text: str, width: float, size: float, min_chars: int = 3) -> str:
    """`text`, or its start with an ellipsis, whichever fits `width`; '' if not even `min_chars`
    fit. In time linear in what fits, not in the text's length."""
    most = int(width / (_NARROWEST_EM * size)) + 2  # more than this many characters never fit
    if len(text) <= most and text_width(text, size) <= width:
        return text
    room = width - text_width("…", size)
    used = 0.0
    for count, char in enumerate(text[:most]):
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


def tooltip_name(name: str) -> str:
    name = clean_text(name)
    return name if len(name) <= TOOLTIP_NAME_MAX else name[: TOOLTIP_NAME_MAX - 1] + "…"


def centred_baseline(top: float, height: float, css_class: str) -> float:
    """The baseline that centres a line of `css_class` text on a row."""
    return top + height / 2 + 0.35 * FONT_PX[css_class]
