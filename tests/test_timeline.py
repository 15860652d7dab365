"""The timeline picture: valid, escaped, deterministic SVG; lanes, links, gaps and labels as the
trace says; small and fast on a 200k-event trace."""

from __future__ import annotations

import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

import pytest

from scripts.tracefacts.pictures.timeline import style as style
from scripts.tracefacts.pictures.timeline.draw import render_timeline, render_timeline_file
from scripts.tracefacts.pictures.timeline.geometry import Box, LabelRequest, Link, Span, merge_spans, nice_ticks, place_labels
from scripts.tracefacts.pictures.timeline.headline import facts_headline
from scripts.tracefacts.pictures.timeline.layout import layout_timeline, thin_links
from scripts.tracefacts.pictures.timeline.style import KIND_STYLES
from scripts.tracefacts.pictures.timeline.svg import svg_of
from scripts.tracefacts.model.trace import Window, build_trace, select_window
from scripts.tracefacts.model.units import format_us
from tests.timeline_traces import GEMM_KERNEL, TEMPLATE_KERNEL, cpu_trace, gpu_trace, large_gpu_trace

ROOT = Path(__file__).resolve().parents[1]
SVG = "{http://www.w3.org/2000/svg}"


def parse(svg: str) -> ET.Element:
    return ET.fromstring(svg)


def elements(root: ET.Element, tag: str, css_class: str) -> list[ET.Element]:
    return [e for e in root.iter(SVG + tag) if css_class in (e.get("class") or "").split()]


def texts(root: ET.Element, css_class: str) -> list[str]:
    return ["".join(e.itertext()) for e in elements(root, "text", css_class)]


def box_of(rect: ET.Element) -> Box:
    return Box(*(float(rect.get(k)) for k in ("x", "y", "width", "height")))


@pytest.fixture(scope="module")
def gpu():
    return build_trace(gpu_trace(), source="/home/someone/private/runs/synthetic.json")


@pytest.fixture(scope="module")
def gpu_svg(gpu):
    return render_timeline(gpu)


@pytest.fixture(scope="module")
def large():
    return build_trace(large_gpu_trace(200_000))


def test_valid_xml_with_escaped_template_kernel_names(gpu_svg):
    root = parse(gpu_svg)
    assert root.tag == SVG + "svg"
    assert "vectorized_elementwise_kernel<8," not in gpu_svg  # raw '<' would not even parse
    assert "vectorized_elementwise_kernel&lt;8, at::native::CUDAFunctor_add&lt;c10::BFloat16&gt;" in gpu_svg
    tooltips = ["".join(t.itertext()) for t in root.iter(SVG + "title")]
    assert any(t.startswith(TEMPLATE_KERNEL) for t in tooltips), "the full kernel name is in a tooltip"


def test_same_trace_same_bytes(gpu_svg):
    again = render_timeline(build_trace(gpu_trace(), source="/home/someone/private/runs/synthetic.json"))
    assert again == gpu_svg


def test_large_trace_is_small_and_merged(large):
    """Its drawing time is tests/benchmarks' business (a timed test fails on a busy machine)."""
    svg = render_timeline(large)
    assert len(svg.encode()) < 300_000
    root = parse(svg)
    merged = [r for r in root.iter(SVG + "rect") if (r.get("class") or "").startswith("m-")]
    assert merged, "200k events in one step must merge"
    assert any(t == "+4 deeper levels folded in" for t in texts(root, "note"))


def test_lanes_for_processes_threads_and_streams(gpu_svg):
    root = parse(gpu_svg)
    assert texts(root, "group") == ["python · pid 4242", "GPU 0 · NVIDIA H200"]
    assert texts(root, "lane") == ["thread 4242 (python)", "stream 7", "stream 20"]


def test_lane_groups_for_several_processes_and_gpus():
    trace = build_trace(gpu_trace(host_pids=(11, 22), devices=(0, 1)))
    root = parse(render_timeline(trace))
    assert texts(root, "group") == [
        "python · pid 11",
        "python · pid 22",
        "GPU 0 · NVIDIA H200",
        "GPU 1 · NVIDIA H200",
    ]
    assert texts(root, "lane").count("stream 7") == 2


def test_cpu_rows_follow_nesting_depth():
    trace = build_trace(cpu_trace(depth=3))
    layout = layout_timeline(trace)
    rows = sorted({bar.box.y for bar in layout.bars})
    assert len(rows) == 4  # the step annotation and three nested ops
    by_name = {bar.label: bar.box.y for bar in layout.bars}
    assert (
        by_name["ProfilerStep#0"]
        < by_name["aten::level0"]
        < by_name["aten::level1"]
        < by_name["aten::level2"]
    )


def test_deep_nesting_folds_into_the_last_row():
    trace = build_trace(cpu_trace(depth=12))
    layout = layout_timeline(trace)
    assert len({bar.box.y for bar in layout.bars}) == style.MAX_CPU_ROWS
    assert any(h.text == "+5 deeper levels folded in" for h in layout.headings)


def test_gap_labels_present_and_never_overlapping(gpu, gpu_svg):
    root = parse(gpu_svg)
    labels = texts(root, "gaptext")
    assert "558 us idle" in labels  # host-only stretch on the main stream
    assert any("before the first kernel" in label or label == "120 us idle" for label in labels)
    boxes = [box_of(r) for r in elements(root, "rect", "gl")]
    assert len(boxes) == len(labels) >= 4
    for i, a in enumerate(boxes):
        for b in boxes[i + 1 :]:
            assert not a.overlaps(b), (a, b)
    shades = elements(root, "rect", "gap")
    assert len(shades) >= len(labels)


def test_gap_labels_stay_apart_when_gaps_crowd():
    """Twenty short, equal gaps side by side: labels may be dropped, never overlap."""
    events = [
        {
            "ph": "X",
            "cat": "kernel",
            "name": "k",
            "pid": 0,
            "tid": 7,
            "ts": 10.0 * i,
            "dur": 6.0,
            "args": {"correlation": i},
        }
        for i in range(20)
    ]
    trace = build_trace({"traceEvents": events})
    layout = layout_timeline(trace)
    boxes = [label.box for label in layout.labels if label.role == "gap"]
    assert 0 < len(boxes) < 20
    for i, a in enumerate(boxes):
        for b in boxes[i + 1 :]:
            assert not a.overlaps(b)


def test_place_labels_prefers_priority_and_falls_back():
    wide = Box(0, 0, 100, 10)
    requests = [
        LabelRequest(1.0, (("small", wide), ("small below", Box(0, 20, 100, 10))), "gap"),
        LabelRequest(5.0, (("big", Box(50, 0, 100, 10)),), "gap"),
        LabelRequest(0.5, (("dropped", Box(40, 0, 20, 10)), ("dropped too", Box(40, 22, 20, 10))), "gap"),
    ]
    placed = {label.text: label.box for label in place_labels(requests)}
    assert set(placed) == {"big", "small below"}


def test_launch_links_one_per_launched_activity_in_the_window(gpu, gpu_svg):
    window = select_window(gpu)
    launched = [
        a for a in gpu.gpu_activities if a.ts < window.end and a.end > window.start and gpu.launch_of(a)
    ]
    assert len(launched) == 4  # GEMM, add, memcpy, relu
    links = elements(parse(gpu_svg), "line", "link")
    legend_swatches = 1
    assert len(links) - legend_swatches == len(launched)


def test_links_from_launches_before_the_window_start_at_its_edge(gpu):
    layout = layout_timeline(gpu, Window(250.0, 1250.0, "250-1250"))
    before = [link for link in layout.links if link.outside == "before"]
    assert len(before) == 2  # the add kernel and the memcpy of step 2 ran after 250 us
    assert all(link.x1 == style.PLOT_LEFT for link in before)


def test_links_to_activities_after_the_window_end_at_its_edge(gpu):
    """Cut at 130 us: the GEMM (120 us) runs inside, the add kernel launched at 65 us runs at
    300 us, after the window, on the same stream; the memcpy's stream has nothing in the window."""
    layout = layout_timeline(gpu, Window(0.0, 130.0, "0-130"))
    after = [link for link in layout.links if link.outside == "after"]
    assert len(after) == 1
    assert after[0].x2 == style.PLOT_RIGHT
    assert len([link for link in layout.links if not link.outside]) == 1
    assert any("dashed: one end outside the window" in item.text for item in layout.legend)


def test_links_of_merged_bars_are_not_repeated(large):
    layout = layout_timeline(large)

    def bar_at(x: float, y: float) -> int:
        """The topmost drawn bar under the point."""
        hits = [
            i
            for i, bar in enumerate(layout.bars)
            if bar.box.x - 0.01 <= x <= bar.box.right + 0.01
            and bar.box.y - 0.01 <= y <= bar.box.bottom + 0.01
        ]
        return hits[-1]

    inside = [link for link in layout.links if not link.outside]
    pairs = {(bar_at(link.x1, link.y1), bar_at(link.x2, link.y2)) for link in inside}
    assert len(layout.links) < 1000 < len(large.kernels)
    assert len(pairs) == len(inside)


def test_cpu_only_trace_says_there_is_no_gpu_activity():
    svg = render_timeline(build_trace(cpu_trace()))
    root = parse(svg)
    assert texts(root, "lane") == ["thread 4242 (python)"]
    assert "No GPU activity in this trace: a CPU-only profile" in texts(root, "note")
    assert not elements(root, "rect", "gap") and not elements(root, "line", "link")


@pytest.fixture(scope="module")
def real_cpu_trace(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("cpu_trace")
    subprocess.run(
        [
            sys.executable,
            str(ROOT / "snippets" / "01_matmul_add.py"),
            "--device",
            "cpu",
            "--size",
            "32",
            "--trace_dir",
            str(out),
        ],
        check=True,
        capture_output=True,
    )
    return next(out.glob("*.json"))


def test_real_cpu_trace_renders(real_cpu_trace, tmp_path):
    out = tmp_path / "timeline.svg"
    window = render_timeline_file(real_cpu_trace, out, step=3)
    assert window.label == "ProfilerStep#3"
    root = parse(out.read_text(encoding="utf-8"))
    assert "aten::matmul" in texts(root, "bar")
    assert "No GPU activity in this trace: a CPU-only profile" in texts(root, "note")


def test_no_host_names_or_absolute_paths(gpu_svg):
    assert "secret-host-name" not in gpu_svg
    assert "/home/someone" not in gpu_svg and "private" not in gpu_svg
    assert "Timeline of synthetic.json" in gpu_svg
    assert style.clean_text("/home/me/proj/train.py(80): step") == "train.py(80): step"
    assert (
        style.clean_text("torch/nn/modules/module.py(1739): _call_impl")
        == "torch/nn/modules/module.py(1739): _call_impl"
    )
    assert style.clean_text("Memcpy HtoD (Pageable -> Device)") == "Memcpy HtoD (Pageable -> Device)"


def test_step_bands_and_axis(gpu):
    layout = layout_timeline(gpu, Window(0.0, 2000.0, "two steps"))
    assert [band.name for band in layout.step_bands] == ["ProfilerStep#2", "ProfilerStep#3"]
    assert [label.text for label in layout.labels if label.role == "step"] == [
        "ProfilerStep#2",
        "ProfilerStep#3",
    ]
    assert len(layout.step_lines) == 1  # the boundary between them; the window edges need none
    assert [tick.text for tick in layout.ticks][-1] == "2.0 ms"


def test_bar_labels_fit_their_bars_and_shorten_kernel_names(gpu):
    layout = layout_timeline(gpu)
    for bar in layout.bars:
        if bar.label:
            room = bar.box.w - 2 * style.BAR_TEXT_PAD
            assert style.text_width(bar.label, style.font_px("bar")) <= room
    labels = [bar.label for bar in layout.bars if bar.kind == "kernel" and bar.label]
    assert labels and all("<" not in label and "void" not in label for label in labels)
    assert any(label.startswith(GEMM_KERNEL[:8]) for label in labels)


def test_merge_spans_merges_runs_of_narrow_events_only():
    def span(x0, x1, depth=0):
        return Span(x0, x1, depth, (f"e{x0}",))

    spans = [
        span(0, 0.1),
        span(0.2, 0.3),
        span(0.4, 0.45),
        span(5, 20),
        span(20.2, 20.3),
        span(30, 30.1),
        span(30.1, 30.2, 1),
    ]
    merged = merge_spans(spans, 0.5)
    assert [len(s.events) for s in merged] == [3, 1, 1, 1, 1]
    assert (merged[0].x0, merged[0].x1) == (0, 0.45)
    assert len(merge_spans(merged, 16)) < len(merged)


def test_text_contrast_at_least_4_5_to_1():
    def luminance(hex_colour: str) -> float:
        channels = [int(hex_colour[i : i + 2], 16) / 255 for i in (1, 3, 5)]
        linear = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
        return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]

    def contrast(a: str, b: str) -> float:
        la, lb = sorted((luminance(a), luminance(b)), reverse=True)
        return (la + 0.05) / (lb + 0.05)

    for kind, (fill, _) in KIND_STYLES.items():
        assert contrast(style.INK, fill) >= 4.5, kind
    for ink in (style.INK, style.MUTED, style.GAP_INK):
        for background in (style.CARD, style.LANE_TINT, style.STEP_TINT):
            assert contrast(ink, background) >= 4.5, (ink, background)


def test_svg_has_its_own_opaque_background_and_fixed_width(gpu_svg):
    root = parse(gpu_svg)
    assert root.get("viewBox").startswith(f"0 0 {style.WIDTH} ")
    card = elements(root, "rect", "card")[0]
    assert float(card.get("width")) >= style.WIDTH - 1
    assert re.search(r"\.card\{fill:#ffffff", gpu_svg)


def test_coordinates_have_at_most_one_decimal(gpu_svg):
    numbers = re.findall(r'(?:x|y|x1|x2|y1|y2|width|height)="(-?[0-9.]+)"', gpu_svg)
    assert numbers and all(re.fullmatch(r"-?\d+(\.\d)?", n) for n in numbers)


def test_facts_headline_is_optional_and_defensive(gpu):
    @dataclass
    class Facts:
        verdict: str

        def to_dict(self):
            return {
                "window": {"window_busy_pct": 12.0, "launched": {"busy_pct": 37.6}, "verdict": self.verdict},
                "steps": [{"launched": {"busy_pct": 1.0}}],
            }

    svg = render_timeline(gpu, facts=Facts("GPU-bound"))
    # The time-window share, as the facts box gives it (the launched work's is not the badge's).
    assert "GPU busy 12.0% of the window · GPU-bound" in texts(parse(svg), "headline")
    assert facts_headline({"window_busy_pct": 12.04}) == "GPU busy 12.0% of the window"
    assert facts_headline({"launched": {"busy_pct": 37.6}}) == ""
    assert facts_headline({"verdict": {"label": "overhead-bound"}}) == "overhead-bound"
    assert facts_headline(object()) == ""
    assert facts_headline(None) == ""
    assert not texts(parse(render_timeline(gpu)), "headline")


def test_labels_spell_durations_with_the_pages_one_formatter():
    """Gap labels and tooltips go through scripts.series.pages.helpers.format_us, as the prose around the picture
    does: a 59 ms gap reads '59 ms' there and here, never '59.0 ms'."""
    raw = gpu_trace()
    scale = 59_000 / 558  # the 558 us host-only stretch becomes 59 ms
    for event in raw["traceEvents"]:
        for key in ("ts", "dur"):
            if key in event:
                event[key] *= scale
    root = parse(render_timeline(build_trace(raw)))
    labels = texts(root, "gaptext")
    assert "59 ms idle" in labels
    said = labels + ["".join(t.itertext()) for t in root.iter(SVG + "title")]
    assert not [text for text in said if re.search(r"\d\.0 (?:ns|us|ms|s)\b", text)]
    assert format_us(59_000) == "59 ms" and format_us(51_200) == "51.2 ms"
    assert [text for _, text in nice_ticks(108.8)] == ["0", "20 µs", "40 µs", "60 µs", "80 µs", "100 µs"]


def test_empty_window_between_events_still_renders(gpu):
    root = parse(render_timeline(gpu, Window(5000.0, 6000.0, "after the end")))
    assert any(note.startswith("No GPU activity in this window") for note in texts(root, "note"))


def test_crowded_tiny_kernels_merge_and_show_their_busy_share():
    """1000 kernels of 1 us, one every 4 us: each under a pixel, their gaps under a pixel too.
    Drawn one by one they would look 100% busy; merged, the block says 25%."""
    events = [
        {
            "ph": "X",
            "cat": "kernel",
            "name": "tiny",
            "pid": 0,
            "tid": 7,
            "ts": 4.0 * i,
            "dur": 1.0,
            "args": {},
        }
        for i in range(1000)
    ]
    layout = layout_timeline(build_trace({"traceEvents": events}))
    (block,) = [bar for bar in layout.bars if bar.kind == "kernel"]
    assert block.merged == 1000
    assert block.busy == pytest.approx(1000 / 3997, rel=1e-6)
    assert block.label == "1,000 kernels, 25% busy"
    assert "merged GPU work, filled to its busy share" in [item.text for item in layout.legend]


def test_thin_links_keeps_one_per_spacing_on_each_row():
    links = [Link(0, 0, x, y, False) for y in (100, 200) for x in (10, 12, 17, 18.5, 30)]
    kept = thin_links(links, min_spacing=8)
    assert [(link.x2, link.y2) for link in kept] == [
        (10, 100),
        (18.5, 100),
        (30, 100),
        (10, 200),
        (18.5, 200),
        (30, 200),
    ]


def test_profiler_overhead_gets_a_lane_of_its_own_after_the_program():
    data = cpu_trace()
    data["traceEvents"].append(
        {
            "ph": "X",
            "cat": "overhead",
            "name": "Activity Buffer Request",
            "pid": -1,
            "tid": 0,
            "ts": 20.0,
            "dur": 30.0,
            "args": {},
        }
    )
    root = parse(render_timeline(build_trace(data)))
    assert texts(root, "group") == ["python · pid 4242", "Profiler and CUDA overhead", "GPU"]
    assert texts(root, "lane") == ["thread 4242 (python)", "overhead"]


def test_headline_uses_the_facts_of_the_drawn_window(gpu):
    facts = {
        "window": {"label": "whole trace", "window_busy_pct": 10.0, "verdict": {"label": "mixed"}},
        "steps": [{"label": "ProfilerStep#2", "window_busy_pct": 20.74,
                   "verdict": {"label": "overhead-bound"}}],
    }
    assert facts_headline(facts, "ProfilerStep#2") == "GPU busy 20.7% of the window · overhead-bound"
    assert facts_headline(facts, "250-1250 us") == "whole trace: GPU busy 10.0% of the window · mixed"


def test_headline_from_the_analyzer_when_it_is_there(gpu):
    analysis = pytest.importorskip("scripts.tracefacts.facts.analysis")
    window = select_window(gpu)
    drawn = analysis.facts(gpu, window=window).window
    svg = render_timeline(gpu, window, facts=analysis.facts(gpu, window=window))
    (headline,) = texts(parse(svg), "headline")
    # The badge shows the drawn window's verdict and the busy share it is made of, named, as the
    # facts box of the same window gives it.
    assert headline == f"GPU busy {drawn.window_busy_pct:.1f}% of the window · {drawn.verdict.label}"
    from scripts.tracefacts.pictures.facts_box import render_facts_box

    box = str(render_facts_box(analysis.facts(gpu, window=window), "guide/"))
    assert f"{drawn.window_busy_pct:.1f}% of {drawn.label}" in box


def test_same_bytes_under_any_hash_seed(gpu_svg):
    """String hashing differs between processes: no set or dict order may leak into the output."""
    code = (
        "import sys; from scripts.tracefacts.model.trace import build_trace; from scripts.tracefacts.pictures.timeline.draw import render_timeline; "
        "from tests.timeline_traces import gpu_trace; "
        "source = '/home/someone/private/runs/synthetic.json'; "
        "sys.stdout.write(render_timeline(build_trace(gpu_trace(), source=source)))"
    )
    for seed in ("1", "2"):
        out = subprocess.run(
            [sys.executable, "-c", code],
            cwd=ROOT,
            capture_output=True,
            check=True,
            env={"PYTHONHASHSEED": seed, "PATH": "/usr/bin:/bin"},
            text=True,
            encoding="utf-8",
        )
        assert out.stdout == gpu_svg


COLUMN_PX = 720  # the post's content column on a desktop screen: the picture is scaled to it


def test_text_reads_at_10_px_or_more_in_the_column(gpu_svg):
    """Every text element has a class with a type size; scaled to the column, none is under 10 px,
    the title not under 13 px."""
    scale = COLUMN_PX / style.WIDTH
    sizes = {c: float(px) for c, px in re.findall(r"\.([a-z]+)\{font-size:([0-9.]+)px\}", gpu_svg)}
    assert sizes == style.FONT_PX
    for text in parse(gpu_svg).iter(SVG + "text"):
        assert sizes[text.get("class")] * scale >= 10.0, text.get("class")
    assert sizes["title"] * scale >= 13.0


def test_gutter_names_fit_the_gutter_and_wrap_when_long():
    data = gpu_trace()
    for event in data["traceEvents"]:
        if event.get("name") == "thread_name" and event["pid"] == 4242:
            event["args"]["name"] = "thread 4242 (pt_autograd_0)"
        if event.get("name") == "process_name" and event["pid"] == 4242:
            event["args"]["name"] = "python3 -m torch.distributed.run --nproc-per-node 8 train.py --cfg big"
    layout = layout_timeline(build_trace(data))
    lane = next(h for h in layout.headings if h.style == "lane" and h.tooltip.startswith("thread"))
    assert lane.lines == ("thread 4242", "(pt_autograd_0)")
    for heading in layout.headings:
        size = style.font_px(heading.style)
        right = style.PLOT_LEFT if heading.style != "group" else style.WIDTH / 2
        for line in heading.lines or [heading.text]:
            assert heading.x + style.text_width(line, size) <= right
    group = next(h for h in layout.headings if h.style == "group")
    assert group.text.startswith("python3 -m torch.distributed.run")
    assert group.text.endswith("… · pid 4242")
    assert "thread 4242 (pt_autograd_0)" in texts(parse(svg_of(layout)), "lane")  # one element


def test_legend_and_ticks_stay_on_the_card_and_apart(gpu):
    layout = layout_timeline(gpu, Window(0.0, 130.0, "0-130"))  # every legend entry but two
    size = style.font_px("legend")
    extents = [
        (item.swatch.x, item.swatch.right + style.LEGEND_TEXT_GAP + style.text_width(item.text, size),
         item.swatch.y)
        for item in layout.legend
    ]
    assert len({y for *_, y in extents}) >= 2, "the legend wraps"
    for x0, x1, y in extents:
        assert style.MARGIN <= x0 and x1 <= style.WIDTH - style.MARGIN
    for (a0, a1, ay), (b0, b1, by) in zip(extents, extents[1:]):
        assert ay != by or a1 < b0
    assert layout.legend[-1].swatch.bottom < layout.height - style.MARGIN
    tick_size = style.font_px("tick")
    centres = [tick.x for tick in layout.ticks[1:-1]]
    assert all(b - a > style.text_width("0000 µs", tick_size) for a, b in zip(centres, centres[1:]))


# --- a gap the window's edge cuts: labelled whole, as the analyzer measures it ---------------------


def gap_labels(trace, window) -> dict[str, str]:
    """The gap labels of the picture of `window`: tooltip (the words in full) -> the text shown
    (shortened where the long one does not fit)."""
    return {label.tooltip: label.text for label in layout_timeline(trace, window).labels if label.role == "gap"}


def test_a_gap_the_step_cuts_is_labelled_whole_as_the_facts_box_measures_it():
    """tests/fixtures/handmade.py two_steps, worked by hand: stream 7 is idle from the memcpy's end
    (90 us) to the triton kernel (120 us), across the boundary of ProfilerStep#1 and #2 (100 us).
    The analyzer gives that gap 30 us, from the end of the GPU's earlier work; each step's picture
    draws its part (10 us, 20 us) and names the whole 30 us, with an arrow to where it goes on."""
    from scripts.tracefacts.facts.analysis import facts
    from tests.fixtures.handmade import two_steps

    trace = build_trace(two_steps())
    step1, step2 = (select_window(trace, step=n) for n in (1, 2))
    box = facts(trace, step=2).window.launched.widest_gaps
    assert (box[0].start_us, box[0].end_us, format_us(box[0].dur_us)) == (90, 120, "30 us")
    assert gap_labels(trace, step2)["GPU idle for 30 us, from before the step"].startswith("← 30 us idle")
    assert gap_labels(trace, step1)["GPU idle for 30 us, on past the step"].endswith(" →")
    # Gaps inside a step keep their length; so does one with no GPU work after it on its stream:
    # stream 7 after the triton kernel [160, 200], stream 20 after the NCCL kernel [150, 200].
    assert set(gap_labels(trace, step1)) == {  # [0, 20], [50, 70], [80, 85], [90, 100]
        "GPU idle for 20 us before the first kernel", "GPU idle for 20 us", "GPU idle for 5 us",
        "GPU idle for 30 us, on past the step"}
    assert {"GPU idle for 40 us", "GPU idle for 50 us"} <= set(gap_labels(trace, step2))
    # Stream 20 has no earlier work: its wait [100, 130] is the window's own, and says so.
    assert "GPU idle for 30 us before the first kernel" in gap_labels(trace, step2)
    # The whole trace cuts nothing.
    whole = gap_labels(trace, Window(0.0, 200.0, "whole trace"))
    assert whole and not [text for text in whole.values() if "←" in text or "→" in text]


def test_a_window_that_is_not_a_step_names_its_edges_as_the_windows():
    """Kernels at [5, 10], [55, 60] and [125, 130] on one stream, drawn over [40, 70): the gaps
    on either side of the middle kernel are 45 us and 65 us long, each cut by an edge."""
    from tests.fixtures.handmade import GEMM, TraceWriter

    w = TraceWriter()
    w.host_event("cpu_op", "aten::mm", 0, 200)
    for start in (0, 50, 120):
        w.launch(start, 1, [("kernel", GEMM, start + 5, 5, 7)])
    labels = gap_labels(build_trace(w.trace()), Window(40.0, 70.0, "40-70"))
    assert set(labels) == {"GPU idle for 45 us, from before the window", "GPU idle for 65 us, on past the window"}
    assert labels["GPU idle for 45 us, from before the window"].startswith("← 45 us idle")


def test_every_gap_label_of_a_step_is_an_analyzer_gap_on_a_synthetic_run():
    """tests/fixtures/synth.py, one stream, steps that end with a synchronize (the GPU idles
    across each step boundary): each step's picture labels every gap it names with the length of
    a gap the analyzer finds, the idle time before some activity, whichever edge cuts it; and a
    gap the step's start cuts is one of the step's own, as its facts box lists them."""
    from scripts.tracefacts.facts.analysis import facts
    from scripts.tracefacts.facts.index import TraceIndex
    from tests.fixtures.synth import synth_trace

    trace = build_trace(synth_trace(steps=4, ops_per_step=6, gap_after_op_us=15.0, seed=3))
    index = TraceIndex(trace)
    analyzer = {format_us(a + b + c) for a, b, c in zip(index.idle_host_wait, index.idle_queued, index.idle_other)}
    cut = 0
    for step in trace.steps[:-1]:  # the last one ends in a wait that no GPU work ends
        window = select_window(trace, step=int(step.name.split("#")[1]))
        labels = gap_labels(trace, window)
        box = {format_us(g.dur_us) for g in facts(trace, window=window).window.launched.widest_gaps}
        for tooltip in labels:
            if tooltip.endswith("before the first kernel"):  # the trace's first: not a gap to the analyzer
                assert step is trace.steps[0], tooltip
                continue
            length = tooltip.removeprefix("GPU idle for ").split(",")[0]
            assert length in analyzer, (step.name, tooltip)
            if tooltip.endswith("from before the step"):
                cut += 1
                assert length in box, (step.name, tooltip, box)
    assert cut >= 2  # steps after the first each begin in a gap
