"""The facts box: the analyzer's headline facts about one window as an HTML block, as the posts
and the in-browser analyzer show them. Every name from the trace is escaped by the builder.
"""

from __future__ import annotations

from ..model.names import FULL_NAME_MAX, bounded
from ..model.units import format_us
from .kernel_tips import KernelTips
from .markup import Markup, concat, h, join

FACTS_GUIDE = "guide/analyze-your-trace/"


def render_facts_box(facts, guide_href: str, memory=None, perfetto=None, recording=None) -> Markup:
    """A compact box of the analyzer's facts (scripts.tracefacts.facts.analysis.TraceFacts) about
    the window they describe (the whole trace, by default), which its title names: four
    questions, each answered by one number whose term links to its definition in the glossary
    (beside the guide at `guide_href`), and the rest folded under them in a <details> element.
    `memory` (scripts.tracefacts.facts.memory.MemoryFacts of the same window) adds each
    device's peak there. `perfetto` (perfetto_links.TraceTarget: the trace the box is about) puts
    beside the findings a link that opens the trace in Perfetto at each; `recording`
    (scripts.tracefacts.facts.recording.RecordingFacts) adds its warnings, where it has any."""
    from ..facts.analysis import short_name

    w = facts.window
    scope = "the whole trace" if w.label == "whole trace" else bounded(w.label)
    glossary = _beside(guide_href, "glossary/")
    at = _linker(perfetto, facts.span)
    tips = KernelTips(f"{facts.source} {w.label} {w.start_us}")

    def term(text: str, entry: str) -> Markup:
        return h("a", {"href": f"{glossary}#{entry}"}, text)

    # The whole trace is what "Open in Perfetto" opens: a window of it gets a link of its own.
    rows = [(term("Who set the pace", "verdict"), concat(h("strong", None, w.verdict.label),
                                                         at(w.span, scope) if w.label != "whole trace" else ""))]
    more = [("Why", w.verdict.reason)]
    split = w.time_split
    if facts.has_gpu_activity and split is not None:
        rows.append((term("GPU busy", "gpu-busy"),
                     f"{w.window_busy_pct:.1f}% of {scope}'s time ({format_us(w.window_busy_us)})"))
        if w.work_classes:
            top = w.top_kernels[0] if w.top_kernels else None
            # A demangled name can run to a thousand characters: shortened, the full one on hover;
            # what the name says on tap, focus or hover (kernel_tips.py).
            name = short_name(top.name) if top else ""
            rows.append((term("Where its busy time went", "work-class"), concat(
                join(" · ", (f"{c.work_class} {c.share_pct:.0f}%" for c in w.work_classes)),
                *(("; top kernel ", tips.name(top.name, name, code_attrs={
                    "title": bounded(top.name, FULL_NAME_MAX) if name != top.name else None}),
                   f" {top.share_pct:.0f}%", at(top.first_run, f"the first run of {name}")) if top else ()))))
        idle = [f"waiting for the host {split.host_wait_pct:.1f}%", f"stalled {split.stalled_pct:.1f}%"]
        if split.unattributed_us:
            idle.append(f"before activities with no launch call {split.unattributed_pct:.1f}%")
        gaps = [concat(format_us(g.dur_us), at(g.span, f"the GPU idle {format_us(g.dur_us)}"))
                for g in (w.launched.widest_gaps if w.launched and perfetto else []) if g.span is not None]
        rows.append((concat(term("Where its idle time went", "host-wait")),
                     concat(" · ".join(idle) + f" of {scope}'s time",
                            *(("; widest gaps ", join(", ", gaps)) if gaps else ()))))
        more += _gpu_details(w)
    else:
        rows.append(("GPU", "no GPU activity in this trace"))
    wait = w.host_wait if perfetto else None
    more.append(("CPU busy", concat(f"{w.cpu_busy_pct:.1f}% of {scope}'s time ({format_us(w.cpu_busy_us)})", *((
        "; longest wait on the GPU ", h("code", None, bounded(wait.name)), f" {format_us(wait.dur_us)}",
        at(wait.span, f"the longest {bounded(wait.name)}")) if wait else ()), "; " + SELF_CPU_NOTE)))
    if memory is not None and memory.devices:
        more.append(("Memory peak", _memory_peaks(memory, at)))
    if facts.steps:
        more.append(("Per ProfilerStep", join("; ", (
            concat(f"#{bounded(step.label.split('#')[-1])} {step.verdict.label}"
                   + (f" (GPU busy {step.window_busy_pct:.1f}%)" if step.time_split is not None else ""),
                   at(step.span, bounded(step.label)))
            for step in facts.steps))))
    if recording is not None and recording.warnings:
        rows.append(("Recording", h("ul", {"class": "facts-warnings"}, [
            h("li", None, warning.text, at(warning.span, f"the evidence of the {warning.kind} warning"))
            for warning in recording.warnings])))
    title = h("p", {"class": "admonition-title"},
              f"What the analyzer says about {scope} (", h("a", {"href": guide_href}, "how to read this"), ")")
    details = h("details", None, h("summary", None, "More facts"), _list(more))
    return h("div", {"class": "admonition abstract facts", "data-search-exclude": True},
             title, _list(rows), details, tips.notes())


# Why the profiler table's `Self CPU time total` and the box's CPU busy differ (the posts quote
# both): what one counts and the other does not.
SELF_CPU_NOTE = ("the profiler table's Self CPU total differs: it also counts the self time of the "
                 "ProfilerStep rows and record_function labels (the Python between ops) and of "
                 "synchronizing calls (waiting), and adds up threads; CPU busy is the union over "
                 "host threads of ops and launch calls, less the time blocked on the GPU")


def _gpu_details(w) -> list[tuple]:
    """The GPU facts behind the four answers: the launched-work view, HTA's breakdown, launches
    and activities."""
    rows = []
    if w.launched is not None:
        x = w.launched
        rows.append(("Launched-work view", f"{x.activities} activities launched in the window: busy "
                     f"{x.busy_pct:.1f}% of their GPU time ({format_us(x.active_us)}); before them the GPU "
                     f"waited for the host {x.host_wait_pct:.1f}%, stalled {x.queued_pct:.1f}%"))
    breakdown = w.temporal_breakdown
    if breakdown is not None:
        rows.append(("Idle (HTA's breakdown)", f"{breakdown.idle_pct:.1f}% idle · {breakdown.compute_pct:.1f}% compute · "
                                               f"{breakdown.non_compute_pct:.1f}% non-compute of the kernel span"))
    launches = w.launches
    apis = join(", ", (concat(h("code", None, bounded(api)), f" {n}") for api, n in launches.by_api.items()))
    delay = launches.delay_p50_us
    rows.append(("Launches", concat(f"{launches.launches} (", apis, ")",
                                    f"; median launch-to-start {format_us(delay)}" if delay is not None else "")))
    rows.append(("GPU activities", join(", ", (f"{n} {kind}" for kind, n in w.activities_by_kind.items()))))
    return rows


def _list(rows) -> Markup:
    return h("dl", None, [(h("dt", None, name), h("dd", None, value)) for name, value in rows])


def _beside(href: str, page: str) -> str:
    """The link to `page`, a sibling of the page `href` links to."""
    head, _, last = href.rstrip("/").rpartition("/")
    if last in ("", "."):  # the guide's own page links to itself: its sibling is one folder up
        return f"{head}/../{page}" if head else f"../{page}"
    return f"{head}/{page}" if head else page


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
        op = (", in ", h("code", None, bounded(d.peak_op))) if d.peak_op and not d.peak_from_before else ()
        reserved = f" (reserved {format_bytes(d.peak_reserved)})" if d.peak_reserved else ""
        return concat(f"{d.device}: {format_bytes(d.peak_allocated)} allocated {when}", *op, reserved,
                      at(d.peak_span, f"the memory peak of {d.device}"))

    return join("; ", (one(d) for d in memory.devices))
