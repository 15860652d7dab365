"""The facts as readable lines (`summary_text`), and the one name shortener (`short_name`)."""

from __future__ import annotations

from .terms import NO_GPU, LaunchStats, TemporalBreakdown, TraceFacts, WindowFacts

def summary_text(trace_facts: TraceFacts, recording=None) -> str:
    """The facts as readable lines; with `recording` (scripts.tracefacts.facts.recording's
    RecordingFacts), how the trace was recorded and its warnings come before the verdict."""
    f = trace_facts
    lines = [f"trace: {f.source or 'trace'}" + _trace_tags(f)]
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
    return "\n".join(lines)


def _trace_tags(f: TraceFacts) -> str:
    tags = [f"rank {f.rank}"] if f.rank is not None else []
    tags += sorted(set(f.gpus))
    return f" ({', '.join(tags)})" if tags else ""


def _ms(us: float) -> str:
    from ..model.units import format_us

    return format_us(us)


def _window_lines(w: WindowFacts) -> list[str]:
    lines = [f"window: {w.label} ({_ms(w.start_us)} to {_ms(w.end_us)}, {_ms(w.dur_us)})"]
    if w.verdict.label == NO_GPU and not w.window_busy_us:
        lines.append(f"  GPU: {NO_GPU}")
    else:
        lines.append(f"  GPU busy in the window: {_ms(w.window_busy_us)} = {w.window_busy_pct:.1f}% "
                     "of the window")
    if w.launched is not None:
        x = w.launched
        lines.append(f"  GPU work launched in the window: {x.activities:,} activities, span "
                     f"{_ms(x.start_us)} to {_ms(x.end_us)}; busy {_ms(x.busy_us)} = "
                     f"{x.busy_pct:.1f}% of its GPU time {_ms(x.active_us)}; idle waiting for the "
                     f"host {x.host_wait_pct:.1f}% · queued {x.queued_pct:.1f}% · other "
                     f"{x.other_pct:.1f}%")
    lines.append(f"  CPU busy: {_ms(w.cpu_busy_us)} = {w.cpu_busy_pct:.1f}% of the window"
                 f" (blocked on the GPU: {_ms(w.cpu_wait_us)})")
    lines.append(f"  verdict: {w.verdict.label}: {w.verdict.reason}")
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
        lines.append(f"    {'share':>6}  {'total':>10}  {'count':>6}  {'mean us':>9}  name")
        for k in w.top_kernels:
            lines.append(f"    {k.share_pct:5.1f}%  {_ms(k.total_us):>10}  {k.count:6,}  "
                         f"{k.mean_us:9.1f}  {short_name(k.name)}")
    return lines


def _launch_lines(launches: LaunchStats) -> list[str]:
    if not launches.launches:
        return []
    apis = ", ".join(f"{api} {n:,}" for api, n in launches.by_api.items())
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
    lines = ["per ProfilerStep: (GPU busy in the step's window, and of the work it launched)",
             f"  {'step':>6}  {'duration':>10}  {'CPU busy':>8}  {'GPU busy':>8}  {'launched':>8}  "
             f"{'host wait':>9}  {'queued':>6}  {'launches':>8}  {'delay p50':>9}  verdict"]
    for s in steps:
        number = s.label.rsplit("#", 1)[-1]
        x = s.launched
        launched = (f"{x.busy_pct:7.1f}%  {x.host_wait_pct:8.1f}%  {x.queued_pct:5.1f}%" if x else
                    f"{'-':>8}  {'-':>9}  {'-':>6}")
        delay = f"{s.launches.delay_p50_us:6.1f} us" if s.launches.launches else f"{'-':>9}"
        lines.append(f"  {number:>6}  {_ms(s.dur_us):>10}  {s.cpu_busy_pct:7.1f}%  "
                     f"{s.window_busy_pct:7.1f}%  {launched}  {s.launches.launches:8,}  {delay}  "
                     f"{s.verdict.label}")
    return lines


def short_name(name: str, width: int = 80) -> str:
    """A C++ kernel name without template and function arguments, as HTA shortens names."""
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

