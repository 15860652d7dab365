"""Before and after (scripts/tracefacts/facts/diff.py, analyze.py --diff, timelines on one scale, the page's
table) on two traces written out by hand, with their deltas worked out by hand.

    before: ProfilerStep#0 [0, 100), #1 [100, 200); per step k (offset 100 k):
            call [10, 15] -> GEMM [17, 22];  call [40, 45] -> ADD [60, 70]
    after:  ProfilerStep#0 [0, 40), #1 [40, 80); per step k (offset 40 k):
            call [10, 12] -> TRITON [14, 34];  call [12, 14] -> GEMM [34, 44]

The GPU's idle time before each activity (from the end of its earlier work, or from the first
launch call's start), split at the moment its launch call returned:

    before: GEMM [10, 17] 7 (host 15 - 10 = 5, queued 2); ADD [22, 60] 38 (host 45 - 22 = 23,
            queued 15); GEMM [70, 117] 47 (host 115 - 70 = 45, queued 2); ADD [122, 160] 38 (23, 15)
            busy 5 + 10 + 5 + 10 = 30; host wait 96, queued 34: GPU time 160
    after:  TRITON [10, 14] 4 (host 2, queued 2); GEMM 0; TRITON [44, 54] 10 (host 52 - 44 = 8,
            queued 2); GEMM 0. busy 20 + 10 + 20 + 10 = 60; host wait 10, queued 4: GPU time 74
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from scripts.tracefacts.facts.analysis import facts
from scripts.tracefacts.facts.diff import delta, diff, diff_text
from scripts.series.pages.diff import comparison_html
from scripts.tracefacts.pictures.timeline.draw import render_timeline, shared_span_us
from scripts.tracefacts.pictures.timeline.style import PLOT_LEFT, PLOT_RIGHT
from scripts.tracefacts.model.trace import build_trace, select_window
from tests.fixtures.handmade import ADD, GEMM, TRITON, TraceWriter

ROOT = Path(__file__).resolve().parents[1]


def before_trace() -> dict:
    w = TraceWriter()
    for k in range(2):
        t = 100 * k
        w.host_event("user_annotation", f"ProfilerStep#{k}", t, 100)
        w.launch(t + 10, 5, [("kernel", GEMM, t + 17, 5, 7)])
        w.launch(t + 40, 5, [("kernel", ADD, t + 60, 10, 7)])
    return w.trace()


def after_trace(fused: str = TRITON) -> dict:
    w = TraceWriter()
    for k in range(2):
        t = 40 * k
        w.host_event("user_annotation", f"ProfilerStep#{k}", t, 40)
        w.launch(t + 10, 2, [("kernel", fused, t + 14, 20, 7)], api="cuLaunchKernel", cat="cuda_driver")
        w.launch(t + 12, 2, [("kernel", GEMM, t + 34, 10, 7)])
    return w.trace()


def facts_of(data: dict, **options):
    return facts(build_trace(data), top=None, **options)


@pytest.fixture(scope="module")
def whole():
    return diff(facts_of(before_trace()), facts_of(after_trace()))


def test_delta_change_and_ratio():
    assert delta(4, 1) == delta(4.0, 1.0)
    x = delta(4, 1)
    assert (x.change, x.ratio) == (-3, 0.25)
    assert delta(0, 5).ratio is None and delta(0, 5).change == 5  # no ratio to nothing
    assert delta(None, 5).change is None


def test_gpu_busy_in_both_views(whole):
    # Launched work: 30 of 160 before, 60 of 74 after. Time window: the whole traces, [0, 200]
    # (the last step's end) and [0, 84] (the last kernel's end).
    assert (whole.launched_busy_pct.before, whole.launched_busy_pct.after) == pytest.approx(
        (100 * 30 / 160, 100 * 60 / 74))
    assert whole.launched_busy_pct.change == pytest.approx(100 * 60 / 74 - 100 * 30 / 160)
    assert (whole.window_busy_pct.before, whole.window_busy_pct.after) == pytest.approx(
        (100 * 30 / 200, 100 * 60 / 84))
    assert (whole.gpu_time_us.before, whole.gpu_time_us.after) == pytest.approx((160, 74))
    assert whole.busy_us.ratio == pytest.approx(2)


def test_idle_by_cause(whole):
    assert (whole.host_wait_us.before, whole.host_wait_us.after) == pytest.approx((96, 10))
    assert (whole.queued_us.before, whole.queued_us.after) == pytest.approx((34, 4))
    assert (whole.other_us.before, whole.other_us.after) == (0, 0)
    assert whole.other_us.ratio is None
    assert whole.host_wait_pct.after == pytest.approx(100 * 10 / 74)
    assert whole.queued_pct.before == pytest.approx(100 * 34 / 160)


def test_gaps_totals_and_widest(whole):
    assert (whole.gap_us.before, whole.gap_us.after) == pytest.approx((130, 14))
    assert (whole.gaps.before, whole.gaps.after) == (4, 1)  # 7, 38, 47, 38 against 4, 0, 10, 0
    widest = whole.before.widest_gaps[0]
    assert (widest.start_us, widest.end_us, widest.dur_us) == pytest.approx((70, 117, 47))
    assert (widest.host_wait_us, widest.queued_us, widest.next_activity) == (
        pytest.approx(45), pytest.approx(2), GEMM)
    # Of equal length, the earlier one first.
    assert [g.start_us for g in whole.before.widest_gaps] == pytest.approx([70, 22, 122])
    # No zero-length gaps listed: two of the four are 0.
    assert [(g.dur_us, g.next_activity) for g in whole.after.widest_gaps] == [
        (pytest.approx(10), TRITON), (pytest.approx(4), TRITON)]


def test_steps_launches_kernels_and_wall_time(whole):
    assert (whole.steps.before, whole.steps.after) == (2, 2)
    assert (whole.wall_us_per_step.before, whole.wall_us_per_step.after) == (100, 40)
    assert whole.wall_us_per_step.ratio == pytest.approx(0.4)
    assert (whole.launches_per_step.before, whole.launches_per_step.after) == (2, 2)
    assert (whole.kernels_per_step.before, whole.kernels_per_step.after) == (2, 2)
    assert (whole.launches.before, whole.kernels.after) == (4, 4)
    assert whole.notes == []


def test_kernels_added_removed_and_changed(whole):
    (added,), (removed,), (changed,) = whole.kernels_added, whole.kernels_removed, whole.kernels_changed
    assert (added.name, added.count.after, added.total_us.after, added.total_us.before) == (
        TRITON, 2, 40, 0)
    assert (removed.name, removed.count.before, removed.total_us.before) == (ADD, 2, 20)
    assert (changed.name, changed.count.change, changed.total_us.change, changed.total_us.ratio) == (
        GEMM, 0, 10, 2)


def test_verdict_change(whole):
    # The verdict reads the time windows. Before, [0, 200]: busy 30, stalled 2 + 15 + 2 + 15,
    # waiting for the host the rest, 136 = 68% >= 50%. After, [0, 84]: busy 60 = 71.4% < 80%,
    # stalled [12, 14] and [52, 54] (TRITON's calls returned, TRITON not started), waiting for
    # the host [0, 12] and [44, 52], 20 = 23.8%: neither dominates.
    assert (whole.before.verdict.label, whole.after.verdict.label) == ("overhead-bound", "mixed")
    assert whole.after.verdict.reason.startswith(
        "the GPU was busy 71.4% of the window (84 us), idle waiting for the host 23.8%, stalled 4.8%")
    assert whole.verdict_changed
    same = diff(facts_of(before_trace()), facts_of(before_trace()))
    assert not same.verdict_changed
    assert all(getattr(same, name).change == 0 for name in ("gap_us", "launched_busy_pct", "gaps"))
    assert same.kernels_added == same.kernels_removed == same.kernels_changed == []


def test_one_step_of_each():
    d = diff(facts_of(before_trace(), step=1), facts_of(after_trace(), step=1))
    # Before, step 1: GEMM idle 47 (45, 2), ADD 38 (23, 15). After: TRITON 10 (8, 2), GEMM 0.
    assert (d.before.window, d.after.window) == ("ProfilerStep#1", "ProfilerStep#1")
    assert (d.host_wait_us.before, d.host_wait_us.after) == pytest.approx((68, 8))
    assert (d.gpu_time_us.before, d.gpu_time_us.after) == pytest.approx((15 + 85, 30 + 10))
    assert (d.wall_us_per_step.before, d.wall_us_per_step.after, d.steps.after) == (100, 40, 1)


def test_truncated_kernel_lists_are_noted():
    d = diff(facts(build_trace(before_trace()), top=1), facts_of(after_trace()))
    assert any("list only 1 GPU activity names" in note for note in d.notes)


def test_uneven_comparisons_are_noted():
    shorter = before_trace()
    shorter["traceEvents"] = [e for e in shorter["traceEvents"] if e["name"] != "ProfilerStep#1"]
    d = diff(facts_of(shorter), facts_of(after_trace()))
    assert ("the windows hold 1 and 2 ProfilerSteps: compare the per-step values, not the window "
            "totals") in d.notes


def test_text_names_every_delta(whole):
    text = diff_text(whole)
    assert "verdict: overhead-bound → mixed (changed)" in text
    rows = {line[:46].strip(): line[46:].split() for line in text.splitlines() if line.startswith("  ")}
    assert rows["wall time per ProfilerStep"] == ["100", "us", "40", "us", "-60", "us", "(×0.40)"]
    assert rows["GPU gaps of 5 us or more"] == ["4", "1", "-3", "(×0.25)"]
    assert rows["GPU busy, of the launched work's GPU time"][-2:] == [
        f"+{100 * 60 / 74 - 100 * 30 / 160:.1f}", "pp"]
    assert "idle, other (no launch call)" not in text  # nothing without a launch call on either side
    assert "at::native::vectorized_elementwise_kernel" in text  # the removed ADD, shortened


# --- the command line ----------------------------------------------------------------------------


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(ROOT / "scripts" / "analyze.py"), *args], cwd=cwd,
                          capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="module")
def traces(tmp_path_factory) -> tuple[Path, Path]:
    folder = tmp_path_factory.mktemp("diff")
    paths = folder / "before.json", folder / "after.json"
    for path, data in zip(paths, (before_trace(), after_trace())):
        path.write_text(json.dumps(data))
    return paths


def _no_constants(name: str):
    raise ValueError(f"not strict JSON: {name}")


def test_cli_json_is_one_strict_object(traces, tmp_path):
    done = run(*map(str, traces), "--diff", "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    (line,) = done.stdout.splitlines()
    d = json.loads(line, parse_constant=_no_constants)
    assert d["before"]["source"] == str(traces[0]) and d["after"]["window"] == "whole trace"
    assert d["wall_us_per_step"] == {"before": 100, "after": 40, "change": -60, "ratio": 0.4}
    assert d["other_us"]["ratio"] is None  # 0 before: null, not NaN
    assert d["verdict_changed"] is True
    assert [k["name"] for k in d["kernels_added"]] == [TRITON]


@pytest.mark.parametrize("count", [1, 3])
def test_cli_diff_needs_exactly_two_traces(count, traces, tmp_path):
    done = run(*[str(traces[0])] * count, "--diff", cwd=tmp_path)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.count("\n") == 1
    assert f"--diff compares exactly two traces, BEFORE AFTER (got {count})" in done.stderr


def test_cli_missing_step_in_one_trace_is_one_line(traces, tmp_path):
    done = run(*map(str, traces), "--diff", "--step", "5", cwd=tmp_path)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr == f"error: {traces[0]}: no ProfilerStep#5 (steps: 0, 1)\n"


def test_cli_steady_step_without_steps_is_one_line(traces, tmp_path):
    bare = tmp_path / "bare.json"
    data = after_trace()
    data["traceEvents"] = [e for e in data["traceEvents"] if not e["name"].startswith("ProfilerStep")]
    bare.write_text(json.dumps(data))
    done = run(str(traces[0]), str(bare), "--diff", "--step", "steady", cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr == (f"error: {bare}: --step steady needs numbered ProfilerSteps, and the "
                           "trace has none\n")


def test_cli_steady_step_compares_each_traces_typical_step(traces, tmp_path):
    done = run(*map(str, traces), "--diff", "--json", "--step", "steady", cwd=tmp_path)
    d = json.loads(done.stdout)
    # Of the steps after the first, the median one: #1 in both.
    assert (d["before"]["window"], d["after"]["window"]) == ("ProfilerStep#1", "ProfilerStep#1")


# --- one time scale ------------------------------------------------------------------------------

TICK = re.compile(r'<text class="tick" x="([\d.]+)"[^>]*>([^<]+)</text>')


def ticks(svg: str) -> list[tuple[float, str]]:
    return [(float(x), text) for x, text in TICK.findall(svg)]


def view_box(svg: str) -> tuple[float, float]:
    width, height = re.search(r'viewBox="0 0 ([\d.]+) ([\d.]+)"', svg).groups()
    return float(width), float(height)


def test_cli_svg_writes_both_timelines_on_one_scale(traces, tmp_path):
    out = tmp_path / "pictures"
    done = run(*map(str, traces), "--diff", "--svg", str(out), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    before, after = ((out / name).read_text() for name in ("before.svg", "after.svg"))
    assert view_box(before)[0] == view_box(after)[0]
    # Steady steps: 100 us and 40 us, both drawn on a 100 us axis: ticks every 20 us, the last
    # one at the plot's right edge, at the same x in both pictures.
    assert ticks(before) == ticks(after)
    assert [text for _, text in ticks(after)] == ["0", "20 µs", "40 µs", "60 µs", "80 µs", "100 µs"]
    assert ticks(after)[-1][0] == PLOT_RIGHT
    # The shorter window ends at 40 / 100 of the plot, and says so.
    end_x = PLOT_LEFT + 0.4 * (PLOT_RIGHT - PLOT_LEFT)
    assert f'x1="{end_x:.1f}"' in after and "same time scale as its pair" in after
    assert "same time scale as its pair" not in before
    assert "Before: before.json" in before and "After: after.json" in after


def test_without_a_shared_span_each_picture_has_its_own_scale():
    trace = build_trace(after_trace())
    window = select_window(trace, step=1)
    own = ticks(render_timeline(trace, window))
    assert own[-1] == (PLOT_RIGHT, "40 µs")  # the window fills the plot
    longer = select_window(build_trace(before_trace()), step=1)
    assert shared_span_us(window, longer) == 100
    shared = ticks(render_timeline(trace, window, span_us=shared_span_us(window, longer)))
    assert dict((text, x) for x, text in shared)["40 µs"] == pytest.approx(
        PLOT_LEFT + 0.4 * (PLOT_RIGHT - PLOT_LEFT), abs=0.05)


# --- the page --------------------------------------------------------------------------------------


def test_page_table_escapes_names_and_prints_the_deltas():
    hostile = "<img src=x onerror=alert(1)>"
    d = diff(facts_of(before_trace()), facts_of(after_trace(fused=hostile)))
    html = comparison_html(d, "before → after", "../guide/")
    assert hostile not in html and "&lt;img src=x onerror=alert(1)&gt;" in html
    rows = dict(re.findall(r'<th scope="row">([^<]+)</th>(.*?)</tr>', html))
    assert rows["verdict"] == "<td>overhead-bound</td><td>mixed</td><td>changed</td>"
    cells = re.findall(r'<td class="num">([^<]*)</td>', rows["wall time per ProfilerStep"])
    assert cells == ["100 us", "40 us", "-60 us (×0.40)"]
    assert rows["GPU gaps of 5 us or more"].count("<td") == 3


def test_compare_runs_shows_every_name_from_the_traces_as_text(tmp_path, monkeypatch):
    """The whole page helper on the injected example of the escaping tests: names, step labels,
    the example's tag (in the pictures' file names) and the metadata stay text."""
    from scripts.series.pages import cache, helpers as pages
    from scripts.series.runs import catalog
    from scripts.series.pages.diff import compare_runs
    from tests.injected_trace import IMG, SCRIPT, write_example
    from tests.test_escaping import assert_inert

    monkeypatch.setattr(cache, "CACHE_DIR", tmp_path / "cache")
    monkeypatch.setattr(catalog, "ROOT", tmp_path)
    monkeypatch.setattr(pages, "SITE", pages.SiteState(page_url="blog/post/"))
    run = pages.Run(write_example(tmp_path / "traces"))
    parsed = assert_inert(compare_runs(run, run))
    assert [attrs["src"].rsplit("_", 1)[-1] for tag, attrs in parsed.tags if tag == "img"] == [
        "before.svg", "after.svg"]
    assert "unchanged" in parsed.text and f"H200{IMG}{SCRIPT}" in parsed.text
    for svg in (path for site_path, path in pages.SITE.assets.items() if site_path.endswith(".svg")):
        assert_inert(svg.read_text(encoding="utf-8"))
