"""The facts box: the analyzer's headline facts about one window as an HTML block, as the posts
and the in-browser analyzer show them. Every name from the trace is escaped by the builder.
"""

from __future__ import annotations

from ..model.units import format_us
from .markup import Markup, concat, h, join

FACTS_GUIDE = "guide/analyze-your-trace/"


def render_facts_box(facts, guide_href: str, memory=None, perfetto=None, recording=None) -> Markup:
    """A compact box of the analyzer's headline facts (scripts.tracefacts.facts.analysis.TraceFacts) about the
    window they describe (the whole trace, by default), which its title names. "GPU busy" gives
    both views of that window, each named: the time window's share, and the launched work's.
    `memory` (scripts.tracefacts.facts.memory.MemoryFacts of the same window) adds each device's peak.
    `perfetto` (perfetto_links.TraceTarget: the trace the box is about) puts beside the rows a link
    that opens the trace in Perfetto at each finding; `recording`
    (scripts.tracefacts.facts.recording.RecordingFacts) adds its warnings, where it has any."""
    from ..facts.analysis import short_name

    w = facts.window
    scope = "the whole trace" if w.label == "whole trace" else w.label
    at = _linker(perfetto, facts.span)
    # The whole trace is what "Open in Perfetto" opens: a window of it gets a link of its own.
    rows = [("Verdict", concat(h("strong", None, w.verdict.label), ": ", w.verdict.reason,
                               at(w.span, scope) if w.label != "whole trace" else ""))]
    if facts.has_gpu_activity:
        busy = [f"time window: {w.window_busy_pct:.1f}% of {scope}'s time ({format_us(w.window_busy_us)})"]
        if w.launched is not None:
            busy.append(f"launched work: {w.launched.busy_pct:.1f}% of the GPU time of the work launched in it "
                        f"({format_us(w.launched.active_us)})")
        gaps = [concat(format_us(g.dur_us), at(g.span, f"the GPU idle {format_us(g.dur_us)}"))
                for g in (w.launched.widest_gaps if w.launched and perfetto else []) if g.span is not None]
        rows.append(("GPU busy", concat("; ".join(busy), *((
            "; widest gaps ", join(", ", gaps)) if gaps else ()))))
        idle = w.temporal_breakdown
        if idle is not None:
            rows.append(("Idle (HTA's breakdown)", f"{idle.idle_pct:.1f}% idle · {idle.compute_pct:.1f}% compute · "
                                                   f"{idle.non_compute_pct:.1f}% non-compute"))
        launches = w.launches
        apis = join(", ", (concat(h("code", None, api), f" {n}") for api, n in launches.by_api.items()))
        delay = launches.delay_p50_us
        rows.append(("Launches", concat(f"{launches.launches} (", apis, ")",
                                        f"; median launch-to-start {format_us(delay)}" if delay is not None else "")))
        kinds = join(", ", (f"{n} {kind}" for kind, n in w.activities_by_kind.items()))
        rows.append(("GPU activities", kinds))
        if w.top_kernels:
            top = w.top_kernels[0]
            # A demangled name can run to a thousand characters: shortened, the full one on hover.
            name = short_name(top.name)
            rows.append(("Top kernel", concat(h("code", {"title": top.name if name != top.name else None}, name),
                                              f", {top.share_pct:.0f}% of GPU time",
                                              at(top.first_run, f"the first run of {name}"))))
    else:
        rows.append(("GPU", "no GPU activity in this trace"))
    wait = w.host_wait if perfetto else None
    rows.append(("CPU busy", concat(f"{w.cpu_busy_pct:.1f}% of {scope}'s time ({format_us(w.cpu_busy_us)})", *((
        "; longest wait on the GPU ", h("code", None, wait.name), f" {format_us(wait.dur_us)}",
        at(wait.span, f"the longest {wait.name}")) if wait else ()))))
    if memory is not None and memory.devices:
        rows.append(("Memory peak", _memory_peaks(memory, at)))
    if facts.steps:
        steps = join("; ", (
            concat(f"#{step.label.split('#')[-1]} {step.verdict.label}"
                   + (f" ({step.launched.busy_pct:.0f}% GPU busy of launched work)" if step.launched else ""),
                   at(step.span, step.label))
            for step in facts.steps
        ))
        rows.append(("Per ProfilerStep", steps))
    if recording is not None and recording.warnings:
        rows.append(("Recording", h("ul", {"class": "facts-warnings"}, [
            h("li", None, warning.text, at(warning.span, f"the evidence of the {warning.kind} warning"))
            for warning in recording.warnings])))
    title = h("p", {"class": "admonition-title"},
              f"What the analyzer says about {scope} (", h("a", {"href": guide_href}, "how to read this"), ")")
    body = h("dl", None, [(h("dt", None, name), h("dd", None, value)) for name, value in rows])
    return h("div", {"class": "admonition abstract facts", "data-search-exclude": True}, title, body)


def _linker(target, trace_span):
    """A function (span, label) -> a link to that span in Perfetto, beside a row's value (nothing
    without a target or a span)."""
    from .perfetto_links import open_at

    def at(span, label: str):
        if target is None or span is None:
            return ""
        return concat(" ", open_at(target, span, label, trace_span))

    return at


def _memory_peaks(memory, at=lambda span, label: "") -> Markup:
    """Each device's peak allocated bytes, when, and the op running then (escaped by `h`)."""
    from ..facts.memory import format_bytes

    def one(d):
        when = "held from before the window" if d.peak_from_before else f"at {format_us(d.peak_us)}"
        op = (", in ", h("code", None, d.peak_op)) if d.peak_op and not d.peak_from_before else ()
        reserved = f" (reserved {format_bytes(d.peak_reserved)})" if d.peak_reserved else ""
        return concat(f"{d.device}: {format_bytes(d.peak_allocated)} allocated {when}", *op, reserved,
                      at(d.peak_span, f"the memory peak of {d.device}"))

    return join("; ", (one(d) for d in memory.devices))
