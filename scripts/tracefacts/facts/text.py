"""The facts as readable lines (`summary_text`), and the one name shortener (`short_name`).
Every name from the trace in a line is shown bounded (scripts/tracefacts/model/names.py), and
each line is made printable as the lines are joined: no name can start a line of its own."""

from __future__ import annotations

from ..model.names import shown, text_lines
from .terms import NO_GPU, LaunchStats, TemporalBreakdown, TraceFacts, WindowFacts

STEP_NUMBER_SHOWN = 24  # characters of a step's number in the per-step table


def summary_text(trace_facts: TraceFacts, recording=None) -> str:
    """The facts as readable lines; with `recording` (scripts.tracefacts.facts.recording's
    RecordingFacts), how the trace was recorded and its warnings come before the verdict."""
    f = trace_facts
    lines = [f"trace: {shown(f.source or 'trace')}" + _trace_tags(f)]
    lines.append(f"events: {f.events:,} over {_ms(f.duration_us)}; {len(f.steps)} ProfilerSteps")
    if recording is not None:
        from .recording import recording_lines

        lines += recording_lines(recording)
    lines += _window_lines(f.window)
    if f.temporal_breakdown is not None:
        lines.append("temporal breakdown, HTA's definitions, per trace "
                     f"({f.temporal_breakdown.scope}):")
        lines.append("  " + _breakdown_line(f.temporal_breakdown))
    if f.steps:
        lines += _steps_table(f.steps)
    lines += [f"note: {note}" for note in f.notes]
    return text_lines(lines)


def _trace_tags(f: TraceFacts) -> str:
    tags = [f"rank {f.rank}"] if f.rank is not None else []
    tags += sorted(set(map(shown, f.gpus)))
    return f" ({', '.join(tags)})" if tags else ""


def _ms(us: float) -> str:
    from ..model.units import format_us

    return format_us(us)


def _window_lines(w: WindowFacts) -> list[str]:
    lines = [f"window: {shown(w.label)} ({_ms(w.start_us)} to {_ms(w.end_us)}, {_ms(w.dur_us)})"]
    lines.append(f"  verdict: {w.verdict.label}: {w.verdict.reason}")
    s = w.time_split
    if s is None:
        lines.append(f"  GPU: {NO_GPU}")
    else:
        lines.append(f"  GPU busy: {_ms(w.window_busy_us)} = {w.window_busy_pct:.1f}% of the window")
        lines.append(f"  GPU idle: waiting for the host {s.host_wait_pct:.1f}% · stalled "
                     f"{s.stalled_pct:.1f}%" + (f" · before activities with no launch call "
                                                 f"{s.unattributed_pct:.1f}%" if s.unattributed_us else "")
                     + " of the window")
    if w.work_classes:
        lines.append("  GPU work by class: " + " · ".join(
            f"{c.work_class} {c.share_pct:.1f}%" for c in w.work_classes))
    if w.launched is not None:
        x = w.launched
        lines.append(f"  launched-work view: {x.activities:,} activities launched in the window, "
                     f"span {_ms(x.start_us)} to {_ms(x.end_us)}; busy {_ms(x.busy_us)} = "
                     f"{x.busy_pct:.1f}% of their GPU time {_ms(x.active_us)}; idle before them "
                     f"waiting for the host {x.host_wait_pct:.1f}% · stalled {x.queued_pct:.1f}% · "
                     f"no launch call {x.other_pct:.1f}%")
    lines.append(f"  CPU busy: {_ms(w.cpu_busy_us)} = {w.cpu_busy_pct:.1f}% of the window"
                 f" (blocked on the GPU: {_ms(w.cpu_wait_us)})")
    if w.temporal_breakdown is not None:
        lines.append("  temporal breakdown (HTA's definitions): " + _breakdown_line(w.temporal_breakdown))
    for s in w.idle_by_stream:
        lines.append(f"  idle on GPU {s.device} stream {s.stream}: {_ms(s.idle_us)} = host wait "
                     f"{s.host_wait_pct:.1f}% · kernel wait {s.kernel_wait_pct:.1f}% · other "
                     f"{s.other_pct:.1f}%")
    lines += _launch_lines(w.launches)
    if w.activities_by_kind:
        counts = " · ".join(f"{n:,} {k}" for k, n in sorted(w.activities_by_kind.items()))
        kinds = " · ".join(f"{k} {n:,}" for k, n in sorted(w.kernels_by_kind.items()))
        lines.append(f"  GPU activities: {counts} (by kind: {kinds})")
    if w.top_kernels:
        lines.append("  top GPU activities by total time:")
        lines.append(f"    {'share':>6}  {'total':>10}  {'count':>6}  {'mean us':>9}  "
                     f"{'class':<20}  name")
        for k in w.top_kernels:
            lines.append(f"    {k.share_pct:5.1f}%  {_ms(k.total_us):>10}  {k.count:6,}  "
                         f"{k.mean_us:9.1f}  {k.work_class:<20}  {short_name(k.name)}")
    return lines


def _launch_lines(launches: LaunchStats) -> list[str]:
    if not launches.launches:
        return []
    apis = ", ".join(f"{shown(api)} {n:,}" for api, n in launches.by_api.items())
    return [
        f"  launches: {launches.launches:,} ({apis}); HTA's launch statistics see "
        f"{launches.hta_counts:,} of them",
        f"  launch delay: median {launches.delay_p50_us:.1f} us, p90 {launches.delay_p90_us:.1f} us, "
        f"max {launches.delay_max_us:,.1f} us; launch call median {launches.call_p50_us:.1f} us",
    ]


def _breakdown_line(b: TemporalBreakdown) -> str:
    return (f"idle {b.idle_pct:.2f}% · compute {b.compute_pct:.2f}% · non-compute "
            f"{b.non_compute_pct:.2f}% of {_ms(b.kernel_time_us)}")


def _steps_table(steps: list[WindowFacts]) -> list[str]:
    lines = ["per ProfilerStep: (GPU busy, waiting for the host and stalled: shares of the step's window)",
             f"  {'step':>6}  {'duration':>10}  {'CPU busy':>8}  {'GPU busy':>8}  "
             f"{'host wait':>9}  {'stalled':>7}  {'launches':>8}  {'delay p50':>9}  verdict"]
    for s in steps:
        number = shown(s.label.rsplit("#", 1)[-1], STEP_NUMBER_SHOWN)
        x = s.time_split
        idle = (f"{x.host_wait_pct:8.1f}%  {x.stalled_pct:6.1f}%" if x else
                f"{'-':>9}  {'-':>7}")
        delay = f"{s.launches.delay_p50_us:6.1f} us" if s.launches.launches else f"{'-':>9}"
        lines.append(f"  {number:>6}  {_ms(s.dur_us):>10}  {s.cpu_busy_pct:7.1f}%  "
                     f"{s.window_busy_pct:7.1f}%  {idle}  {s.launches.launches:8,}  {delay}  "
                     f"{s.verdict.label}")
    return lines


# A name longer than this is shortened from its start only: shortening reads it a character
# at a time, and a trace may hold a name of megabytes.
SHORTENED_MAX = 4096


def short_name(name: str, width: int = 80) -> str:
    """A C++ kernel name without template and function arguments, as HTA shortens names; at
    most `width` characters (what is cut: an ellipsis)."""
    name = name[:SHORTENED_MAX]
    if "<" in name or "(" in name:
        depth, kept = 0, []
        for char in name.replace("->", ""):
            if char in "<(":
                depth += 1
            elif char in ">)":
                depth = max(depth - 1, 0)
            elif depth == 0:
                kept.append(char)
        name = "".join(kept).split(" ")[-1] or name
    return name if len(name) <= width else name[: width - 1] + "…"

