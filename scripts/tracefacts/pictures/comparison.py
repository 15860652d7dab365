"""Before and after as the pages and the in-browser analyzer show a pair: the table of deltas with
both verdicts (`comparison_html`), and one side's timeline on the time scale both share.
"""

from __future__ import annotations

from ..facts.analysis import facts, short_name
from ..facts.diff import Delta, TraceDiff, change_text, kernel_lists, rows, value_text
from ..model.names import FULL_NAME_MAX, bounded
from ..model.trace import Trace, Window
from ..model.units import format_us
from .kernel_tips import KernelTips
from .markup import Markup, concat, h, join, table, td, th
from .profiler_table import scrolling_table

LISTED_KERNELS = 3  # per list (added, removed, changed) on a page


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
    tips = KernelTips(caption)
    lists = [h("li", None, f"{title}: ",
               join(", ", (_kernel(k.name, k.total_us, tips) for k in kernels[:LISTED_KERNELS])))
             for title, kernels in kernel_lists(d)]
    notes = [h("li", None, f"Note: {note}.") for note in d.notes]
    after = concat(reasons, h("ul", None, lists, notes) if lists or notes else None, tips.notes())
    return scrolling_table(grid, caption, after=after, searchable=False)


def _kernel(name: str, total: Delta, tips: KernelTips) -> Markup:
    """A GPU activity's short name (its full name on hover, what it says on tap, focus or hover)
    and its total time on each side."""
    times = (f"{format_us(total.after)} after" if not total.before else
             f"{format_us(total.before)} before" if not total.after else
             f"{format_us(total.before)} → {format_us(total.after)}")
    return concat(tips.name(name, short_name(name, 60), code_attrs={"title": bounded(name, FULL_NAME_MAX)}),
                  f" ({times})")


def diff_timeline_svg(trace: Trace, window: Window, span_us: float, title: str) -> str:
    """One side of a before/after pair: the window drawn on the time scale both sides share."""
    from .timeline.draw import render_timeline

    return render_timeline(trace, window=window, facts=facts(trace, window=window), span_us=span_us, title=title)
