"""Before and after: what changed between two traces, read off their facts.

`diff(before, after)` takes two `TraceFacts` (from `scripts.tracefacts.facts.analysis.facts`, ideally with
`top=None` so that every GPU activity's name is known) and compares the windows they describe;
`diff_text` reads the result out. Nothing here reads a trace: every number is a fact that
scripts/tracefacts/facts/analysis.py defines, and the diff only subtracts and divides.

The deltas: the verdict on each side; GPU busy in both views (of the time window, with the
window's idle time waiting for the host and stalled, which the verdict is made of, and of the work
launched in the window); the idle time before that work by cause (waiting for the host, stalled,
other) and as gaps (their total, how many of GAP_MIN_US or more, the widest); wall time, launches
and kernels per ProfilerStep; and the GPU activities added, removed and changed, by full name.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from statistics import mean

from ..model.names import bounded, shown, text_lines
from .analysis import (GAP_MIN_US, Gap, TraceFacts, Verdict, WindowFacts, _ms, rounded,
                       short_name)

TOP_CHANGES = 5  # GPU activities listed as added, as removed and as changed


@dataclass
class Delta:
    """One fact on both sides. `change` is after - before (percentage points for a share);
    `ratio` is after / before. Either is None where a side lacks the fact, and `ratio` where
    before is 0."""

    before: float | None
    after: float | None
    change: float | None
    ratio: float | None


def delta(before: float | None, after: float | None) -> Delta:
    if before is None or after is None:
        return Delta(before, after, None, None)
    return Delta(before, after, after - before, after / before if before else None)


@dataclass
class KernelDelta:
    """One GPU activity name (in full: two template instances are two names) on both sides."""

    name: str
    kind: str  # compute / communication / memory / other
    count: Delta
    total_us: Delta


@dataclass
class Side:
    """What one side is: its trace, the window compared, and what the analyzer made of it."""

    source: str
    window: str  # the window's label: "whole trace", "ProfilerStep#3", ...
    gpus: list[str]
    verdict: Verdict
    widest_gaps: list[Gap]


@dataclass
class PerStep:
    """Means over the ProfilerSteps inside a window (None without any)."""

    steps: int
    wall_us: float | None  # the step's duration on the host
    launches: float | None
    kernels: float | None


@dataclass
class TraceDiff:
    before: Side
    after: Side
    verdict_changed: bool
    window_us: Delta  # the compared windows' durations
    steps: Delta  # ProfilerSteps inside the windows
    wall_us_per_step: Delta
    launched_busy_pct: Delta  # GPU busy of the launched work's GPU time
    window_busy_pct: Delta  # GPU busy in the time window: what the verdict reads, with the two below
    window_host_wait_pct: Delta  # the time window's idle time waiting for the host
    window_stalled_pct: Delta  # ...and stalled (work launched, not started)
    gpu_time_us: Delta  # the launched work's GPU time: its busy time and the idle time before it
    busy_us: Delta
    host_wait_pct: Delta  # the idle time by cause, as shares of the GPU time...
    queued_pct: Delta  # stalled: after the launch call returned
    other_pct: Delta
    host_wait_us: Delta  # ...and in us
    queued_us: Delta
    other_us: Delta
    gap_us: Delta  # all idle time before the launched work: host wait + stalled + other
    gaps: Delta  # idle times of GAP_MIN_US or more
    launches: Delta  # in the window
    kernels: Delta
    launches_per_step: Delta
    kernels_per_step: Delta
    kernels_added: list[KernelDelta] = field(default_factory=list)  # by time after
    kernels_removed: list[KernelDelta] = field(default_factory=list)  # by time before
    kernels_changed: list[KernelDelta] = field(default_factory=list)  # by the size of the change
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        """JSON-ready, rounded as TraceFacts.to_dict rounds (NaN stays NaN: print it strictly)."""
        return rounded(asdict(self))


def per_step(f: TraceFacts) -> PerStep:
    """The means over the ProfilerSteps that lie inside the window the facts describe."""
    w = f.window
    inside = [s for s in f.steps if w.start_us <= s.start_us and s.end_us <= w.end_us]
    if not inside:
        return PerStep(0, None, None, None)
    return PerStep(
        steps=len(inside),
        wall_us=mean(s.dur_us for s in inside),
        launches=mean(s.launches.launches for s in inside),
        kernels=mean(s.activities_by_kind.get("kernel", 0) for s in inside),
    )


def _side(f: TraceFacts) -> Side:
    launched = f.window.launched
    return Side(f.source, f.window.label, list(f.gpus), f.window.verdict,
                list(launched.widest_gaps) if launched else [])


def _launched(w: WindowFacts, name: str) -> float | None:
    return getattr(w.launched, name) if w.launched is not None else None


def _split(w: WindowFacts, name: str) -> float | None:
    return getattr(w.time_split, name) if w.time_split is not None else None


def diff(before: TraceFacts, after: TraceFacts, top: int = TOP_CHANGES) -> TraceDiff:
    """What changed from `before` to `after`, in the windows their facts describe."""
    b, a = before.window, after.window
    steps_b, steps_a = per_step(before), per_step(after)

    def launched(name: str) -> Delta:
        return delta(_launched(b, name), _launched(a, name))

    gap_b = None if b.launched is None else b.launched.active_us - b.launched.busy_us
    gap_a = None if a.launched is None else a.launched.active_us - a.launched.busy_us
    added, removed, changed = _kernel_changes(b, a, top)
    return TraceDiff(
        before=_side(before),
        after=_side(after),
        verdict_changed=b.verdict.label != a.verdict.label,
        window_us=delta(b.dur_us, a.dur_us),
        steps=delta(steps_b.steps, steps_a.steps),
        wall_us_per_step=delta(steps_b.wall_us, steps_a.wall_us),
        launched_busy_pct=launched("busy_pct"),
        window_busy_pct=delta(b.window_busy_pct, a.window_busy_pct),
        window_host_wait_pct=delta(_split(b, "host_wait_pct"), _split(a, "host_wait_pct")),
        window_stalled_pct=delta(_split(b, "stalled_pct"), _split(a, "stalled_pct")),
        gpu_time_us=launched("active_us"),
        busy_us=launched("busy_us"),
        host_wait_pct=launched("host_wait_pct"),
        queued_pct=launched("queued_pct"),
        other_pct=launched("other_pct"),
        host_wait_us=launched("host_wait_us"),
        queued_us=launched("queued_us"),
        other_us=launched("other_us"),
        gap_us=delta(gap_b, gap_a),
        gaps=launched("gaps"),
        launches=delta(b.launches.launches, a.launches.launches),
        kernels=delta(b.activities_by_kind.get("kernel", 0), a.activities_by_kind.get("kernel", 0)),
        launches_per_step=delta(steps_b.launches, steps_a.launches),
        kernels_per_step=delta(steps_b.kernels, steps_a.kernels),
        kernels_added=added,
        kernels_removed=removed,
        kernels_changed=changed,
        notes=_notes(before, after, steps_b, steps_a),
    )


def _kernel_changes(b: WindowFacts, a: WindowFacts, top: int
                    ) -> tuple[list[KernelDelta], list[KernelDelta], list[KernelDelta]]:
    """GPU activities only after, only before, and on both sides with another total time."""
    before = {k.name: k for k in b.top_kernels}
    after = {k.name: k for k in a.top_kernels}

    def of(name: str) -> KernelDelta:
        kb, ka = before.get(name), after.get(name)
        return KernelDelta(name, (ka or kb).kind,
                           delta(kb.count if kb else 0, ka.count if ka else 0),
                           delta(kb.total_us if kb else 0.0, ka.total_us if ka else 0.0))

    added = sorted(after.keys() - before.keys(), key=lambda n: (-after[n].total_us, n))
    removed = sorted(before.keys() - after.keys(), key=lambda n: (-before[n].total_us, n))
    both = [of(n) for n in before.keys() & after.keys()]
    changed = sorted((k for k in both if k.total_us.change or k.count.change),
                     key=lambda k: (-abs(k.total_us.change), k.name))
    return [of(n) for n in added[:top]], [of(n) for n in removed[:top]], changed[:top]


def _gpus(names: list[str]) -> str:
    return ", ".join(map(bounded, names)) or "none named"


def _notes(before: TraceFacts, after: TraceFacts, steps_b: PerStep, steps_a: PerStep) -> list[str]:
    notes = []
    if sorted(before.gpus) != sorted(after.gpus):
        notes.append(f"the traces ran on different GPUs ({_gpus(before.gpus)}; {_gpus(after.gpus)})")
    if not (steps_b.steps and steps_a.steps):
        notes.append("per-step values need ProfilerSteps inside both windows")
    elif steps_b.steps != steps_a.steps:
        notes.append(f"the windows hold {steps_b.steps} and {steps_a.steps} ProfilerSteps: "
                     "compare the per-step values, not the window totals")
    for label, f in (("before", before), ("after", after)):
        listed = sum(k.count for k in f.window.top_kernels)
        if listed < sum(f.window.activities_by_kind.values()):
            notes.append(f"the {label} facts list only {len(f.window.top_kernels)} GPU activity "
                         "names: added and removed are among those (compute the facts with "
                         "top=None)")
    return notes


# --- the text ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Row:
    """One line of the comparison: a fact's name, its Delta, and its unit (us, pct, count)."""

    label: str
    delta: Delta
    unit: str


def rows(d: TraceDiff, brief: bool = False, us=_ms) -> list[Row]:
    """The facts compared, in reading order; `brief` leaves out the shares that repeat the times
    and what a page has no room for. Window totals that repeat the per-step values (each window
    is one step) are left out."""
    one_step = all(side.window.startswith("ProfilerStep") for side in (d.before, d.after))
    other = bool(d.other_us.before or d.other_us.after)  # activities without a launch call
    found = [
        Row("wall time per ProfilerStep", d.wall_us_per_step, "us"),
        None if one_step or brief else Row("ProfilerSteps", d.steps, "count"),
        Row("GPU busy, of the time window", d.window_busy_pct, "pct"),
        Row("GPU idle waiting for the host, of the time window", d.window_host_wait_pct, "pct"),
        Row("GPU stalled, of the time window", d.window_stalled_pct, "pct"),
        None if brief else Row("GPU busy, of the launched work's GPU time", d.launched_busy_pct, "pct"),
        None if brief else Row("GPU time of the launched work", d.gpu_time_us, "us"),
        None if brief else Row("  busy", d.busy_us, "us"),
        Row("  idle waiting for the host" if not brief else "GPU idle waiting for the host",
            d.host_wait_us, "us"),
        Row("  idle stalled (launched, not started)" if not brief
            else "GPU stalled before the launched work", d.queued_us, "us"),
        Row("  idle, other (no launch call)" if not brief else "GPU idle, other (no launch call)",
            d.other_us, "us") if other else None,
        None if brief else Row("idle waiting for the host, share", d.host_wait_pct, "pct"),
        None if brief else Row("idle stalled, share", d.queued_pct, "pct"),
        None if brief or not other else Row("idle other, share", d.other_pct, "pct"),
        Row("GPU gaps before the launched work, total", d.gap_us, "us"),
        Row(f"GPU gaps of {us(GAP_MIN_US)} or more", d.gaps, "count"),
        Row("widest GPU gap", delta(_widest(d.before), _widest(d.after)), "us"),
        Row("launches per ProfilerStep", d.launches_per_step, "count"),
        Row("kernels per ProfilerStep", d.kernels_per_step, "count"),
        None if one_step or brief else Row("launches in the window", d.launches, "count"),
        None if one_step or brief else Row("kernels in the window", d.kernels, "count"),
    ]
    return [row for row in found if row is not None]


def _widest(side: Side) -> float | None:
    return side.widest_gaps[0].dur_us if side.widest_gaps else None


def value_text(value: float | None, unit: str, us=_ms) -> str:
    """A value as the comparison shows it; `us` formats durations (the page's own formatter on
    a page, the summary's on a terminal)."""
    if value is None:
        return "-"
    if unit == "pct":
        return f"{value:.1f}%"
    if unit == "us":
        return us(value)
    return f"{value:,.0f}" if value == int(value) else f"{value:,.1f}"


def change_text(x: Delta, unit: str, us=_ms) -> str:
    """The change: signed, in percentage points for a share, with the ratio for the others."""
    if x.change is None:
        return "-"
    sign = "+" if x.change > 0 else "-" if x.change < 0 else ""
    if unit == "pct":
        return f"{sign}{abs(x.change):.1f} pp"
    text = sign + value_text(abs(x.change), unit, us)
    return text + (f" (×{x.ratio:.2f})" if x.ratio is not None and x.change else "")


def diff_text(d: TraceDiff) -> str:
    """The diff as readable lines: one row per fact, before, after and the change."""
    lines = [f"before: {shown(d.before.source or 'trace')} ({shown(d.before.window)})",
             f"after:  {shown(d.after.source or 'trace')} ({shown(d.after.window)})",
             f"verdict: {d.before.verdict.label} → {d.after.verdict.label}"
             + (" (changed)" if d.verdict_changed else " (unchanged)"),
             f"  before: {d.before.verdict.reason}",
             f"  after:  {d.after.verdict.reason}",
             f"  {'':<44} {'before':>10} {'after':>10}  change"]
    lines += [f"  {row.label:<44} {value_text(row.delta.before, row.unit):>10} "
              f"{value_text(row.delta.after, row.unit):>10}  {change_text(row.delta, row.unit)}"
              for row in rows(d)]
    for label, side in (("before", d.before), ("after", d.after)):
        if side.widest_gaps:
            lines.append(f"widest GPU gaps {label}:")
            lines += [f"  {_gap_line(gap)}" for gap in side.widest_gaps]
    for title, kernels in kernel_lists(d):
        lines.append(f"{title} (total time before → after, count before → after):")
        lines += [f"  {_ms(k.total_us.before):>10} → {_ms(k.total_us.after):>10}  "
                  f"{k.count.before:6,.0f} → {k.count.after:<6,.0f}  {short_name(k.name)}"
                  for k in kernels]
    lines += [f"note: {note}" for note in d.notes]
    return text_lines(lines)


def kernel_lists(d: TraceDiff) -> list[tuple[str, list[KernelDelta]]]:
    """The non-empty lists of GPU activities added, removed and changed, with their titles."""
    return [(title, kernels) for title, kernels in (("GPU activities added", d.kernels_added),
                                                    ("GPU activities removed", d.kernels_removed),
                                                    ("GPU activities changed", d.kernels_changed))
            if kernels]


def _gap_line(gap: Gap) -> str:
    causes = [f"{name} {_ms(us)}" for name, us in (("host wait", gap.host_wait_us),
                                                   ("stalled", gap.queued_us),
                                                   ("other", gap.other_us)) if us > 0]
    return (f"{_ms(gap.dur_us):>10} at {_ms(gap.start_us)} on GPU {gap.device}, before "
            f"{short_name(gap.next_activity)} ({', '.join(causes)})")
