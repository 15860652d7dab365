"""The facts box: the analyzer's headline facts about one window as an HTML block, as the posts
and the in-browser analyzer show them. Every name from the trace is escaped by the builder.
"""

from __future__ import annotations

from ..model.names import FULL_NAME_MAX, bounded
from ..model.units import format_us
from .markup import Markup, concat, h, join

FACTS_GUIDE = "guide/analyze-your-trace/"


def render_facts_box(facts, guide_href: str, memory=None) -> Markup:
    """A compact box of the analyzer's headline facts (scripts.tracefacts.facts.analysis.TraceFacts) about the
    window they describe (the whole trace, by default), which its title names. "GPU busy" gives
    both views of that window, each named: the time window's share, and the launched work's.
    `memory` (scripts.tracefacts.facts.memory.MemoryFacts of the same window) adds each device's peak."""
    from ..facts.analysis import short_name

    w = facts.window
    scope = "the whole trace" if w.label == "whole trace" else bounded(w.label)
    rows = [("Verdict", concat(h("strong", None, w.verdict.label), ": ", w.verdict.reason))]
    if facts.has_gpu_activity:
        busy = [f"time window: {w.window_busy_pct:.1f}% of {scope}'s time ({format_us(w.window_busy_us)})"]
        if w.launched is not None:
            busy.append(f"launched work: {w.launched.busy_pct:.1f}% of the GPU time of the work launched in it "
                        f"({format_us(w.launched.active_us)})")
        rows.append(("GPU busy", "; ".join(busy)))
        idle = w.temporal_breakdown
        if idle is not None:
            rows.append(("Idle (HTA's breakdown)", f"{idle.idle_pct:.1f}% idle · {idle.compute_pct:.1f}% compute · "
                                                   f"{idle.non_compute_pct:.1f}% non-compute"))
        launches = w.launches
        apis = join(", ", (concat(h("code", None, bounded(api)), f" {n}") for api, n in launches.by_api.items()))
        delay = launches.delay_p50_us
        rows.append(("Launches", concat(f"{launches.launches} (", apis, ")",
                                        f"; median launch-to-start {format_us(delay)}" if delay is not None else "")))
        kinds = join(", ", (f"{n} {kind}" for kind, n in w.activities_by_kind.items()))
        rows.append(("GPU activities", kinds))
        if w.top_kernels:
            top = w.top_kernels[0]
            # A demangled name can run to a thousand characters: shortened, the full one on hover.
            name = short_name(top.name)
            full = bounded(top.name, FULL_NAME_MAX)
            rows.append(("Top kernel", concat(h("code", {"title": full if name != top.name else None}, name),
                                              f", {top.share_pct:.0f}% of GPU time")))
    else:
        rows.append(("GPU", "no GPU activity in this trace"))
    rows.append(("CPU busy", f"{w.cpu_busy_pct:.1f}% of {scope}'s time ({format_us(w.cpu_busy_us)})"))
    if memory is not None and memory.devices:
        rows.append(("Memory peak", _memory_peaks(memory)))
    if facts.steps:
        steps = join("; ", (
            f"#{bounded(step.label.split('#')[-1])} {step.verdict.label}"
            + (f" ({step.launched.busy_pct:.0f}% GPU busy of launched work)" if step.launched else "")
            for step in facts.steps
        ))
        rows.append(("Per ProfilerStep", steps))
    title = h("p", {"class": "admonition-title"},
              f"What the analyzer says about {scope} (", h("a", {"href": guide_href}, "how to read this"), ")")
    body = h("dl", None, [(h("dt", None, name), h("dd", None, value)) for name, value in rows])
    return h("div", {"class": "admonition abstract facts", "data-search-exclude": True}, title, body)


def _memory_peaks(memory) -> Markup:
    """Each device's peak allocated bytes, when, and the op running then (escaped by `h`)."""
    from ..facts.memory import format_bytes

    def one(d):
        when = "held from before the window" if d.peak_from_before else f"at {format_us(d.peak_us)}"
        op = (", in ", h("code", None, bounded(d.peak_op))) if d.peak_op and not d.peak_from_before else ()
        reserved = f" (reserved {format_bytes(d.peak_reserved)})" if d.peak_reserved else ""
        return concat(f"{d.device}: {format_bytes(d.peak_allocated)} allocated {when}", *op, reserved)

    return join("; ", (one(d) for d in memory.devices))
