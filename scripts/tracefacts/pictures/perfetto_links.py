"""Links that open a trace in Perfetto at a finding: zoomed to its span, its event selected where it
is one. A link is a button (docs/javascripts/perfetto.js hands the trace to ui.perfetto.dev by
postMessage, as the "Open in Perfetto" button does, and opens the UI at the URL built here); this
module builds that URL from a finding's `Span` (scripts/tracefacts/facts/terms.py) and the button
around it. Everything it writes is numbers and our own words, set by the markup builder.

The deep link's arguments (scripts/tracefacts/model/perfetto.py says what Perfetto does with them):
`visStart`/`visEnd`, the span widened by a quarter of its length on each side (at least
PAD_MIN_US) so that what comes before and after it shows, kept inside the trace (Perfetto ignores
a window that reaches past its ends); `ts` and `dur` of the finding's event, to select it, where
both ways Perfetto has read times agree on them; `pid` and `tid`, where they are numbers.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from urllib.parse import urlencode

from ..model.perfetto import PERFETTO_UI, link_thread, ns_agree, perfetto_ns
from .markup import Markup, h

PAD = 0.25  # of the span's length, on each side
PAD_MIN_US = 5.0
LINK_CLASS = "perfetto-at"


@dataclass(frozen=True)
class TraceTarget:
    """The trace a link opens: `href`, the URL of a published trace file; or, without one, the
    trace the page holds in memory under `source` (the in-browser analyzer's dropped file,
    which docs/javascripts/analyzer.js hands to perfetto.js: nothing is uploaded)."""

    title: str
    file: str
    href: str | None = None
    source: str | None = None


def deep_link(span, trace_span=None) -> dict[str, str]:
    """Perfetto's deep-link arguments for a finding's span (see the module's docstring), inside
    `trace_span` (the trace's own, TraceFacts.span) where given; {} for a span of no finite time."""
    start, end = span.start_us, span.end_us
    if not (math.isfinite(start) and math.isfinite(end)) or end < start:
        return {}
    pad = max((end - start) * PAD, PAD_MIN_US)
    vis_start, vis_end = perfetto_ns(start - pad), perfetto_ns(end + pad)
    if trace_span is not None and math.isfinite(trace_span.start_us) and math.isfinite(trace_span.end_us):
        # Its first event's own nanoseconds, and 1 ns short of its end (a sum of two times may
        # round past Perfetto's).
        vis_start = max(vis_start, perfetto_ns(trace_span.start_us))
        vis_end = min(vis_end, perfetto_ns(trace_span.end_us) - 1)
    args: dict[str, str] = {}
    if vis_start < vis_end:
        args.update(visStart=str(vis_start), visEnd=str(vis_end))
    ts, dur = span.ts_us, span.dur_us
    if ts is not None and dur is not None and ns_agree(ts) and ns_agree(dur):
        args.update(ts=str(perfetto_ns(ts)), dur=str(perfetto_ns(dur)))
        for key, value in (("pid", span.pid), ("tid", span.tid)):
            number = link_thread(value)
            if number is not None:
                args[key] = str(number)
    return args


def perfetto_url(args: dict[str, str]) -> str:
    """The Perfetto UI's address with these route arguments (in the fragment, which stays in the
    browser: the UI reads its arguments from there and from the query alike)."""
    return f"{PERFETTO_UI}/#!/?{urlencode(args)}" if args else f"{PERFETTO_UI}/"


def open_at(target: TraceTarget, span, label: str, trace_span=None, text: str = "in Perfetto") -> Markup:
    """A small button that opens `target` in Perfetto at `span`; `label` names the finding for
    those who cannot see where the button sits (its accessible name and tooltip)."""
    args = deep_link(span, trace_span)
    attrs = {"type": "button", "class": LINK_CLASS, "data-perfetto-url": perfetto_url(args),
             "data-title": target.title, "data-file": target.file,
             "aria-label": f"Open {label} in Perfetto", "title": f"Open {label} in Perfetto"}
    if target.href is not None:
        attrs["data-trace"] = target.href
    else:
        attrs["data-source"] = target.source or "page"
    return h("button", attrs, text)


def findings(facts, memory=None, recording=None) -> list[tuple[str, object]]:
    """Every finding of these facts with a place in time, as (what it is, its span), in the
    order a reader meets them: the window (its verdict), the widest gaps, the top activity's first
    run, the longest blocking host call, the memory peaks, the steps, the recording's warnings."""
    from ..facts.analysis import short_name
    from ..model.units import format_us

    w = facts.window
    found = []
    if w.span is not None:
        found.append((w.label if w.label != "whole trace" else "the whole trace", w.span))
    for gap in (w.launched.widest_gaps if w.launched else []):
        if gap.span is not None:
            found.append((f"the GPU idle {format_us(gap.dur_us)} before {short_name(gap.next_activity, 40)}",
                          gap.span))
    if w.top_kernels and w.top_kernels[0].first_run is not None:
        found.append((f"the first run of {short_name(w.top_kernels[0].name, 40)}", w.top_kernels[0].first_run))
    if w.host_wait is not None:
        found.append((f"the longest {w.host_wait.name} ({format_us(w.host_wait.dur_us)})", w.host_wait.span))
    for device in (memory.devices if memory is not None else []):
        if device.peak_span is not None:
            found.append((f"the memory peak of {device.device}", device.peak_span))
    for step in facts.steps:
        if step.span is not None:
            found.append((step.label, step.span))
    for warning in (recording.warnings if recording is not None else []):
        if warning.span is not None:
            found.append((f"the first evidence of the {warning.kind} warning", warning.span))
    return found
