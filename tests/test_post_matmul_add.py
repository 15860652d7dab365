"""Part 1 (docs/blog/posts/part-1-matmul-add.md): the helpers its prose quotes, held to hand-worked
traces and to the raw JSON and table text of its frozen runs; and the page, held to one number per
question (the prose's GPU busy is the facts box's)."""

from __future__ import annotations

import gzip
import json
import re

import pytest

from scripts.series.pages.helpers import example
from scripts.series.pages.posts import part1 as P
from scripts.series.pages.posts.exercises import host_time_before_gpu
from scripts.tracefacts.model.trace import load_trace
from scripts.tracefacts.pictures.profiler_table import parse_table, to_us
from tests.fixtures.handmade import GEMM, TraceWriter
from tests.fixtures.synth import write_trace
from tests.post_helpers import FakeRun

PAGE = "blog/matmul-add/index.html"
COLD64 = "01_matmul_add/64_bf16_cold_eager"
FROM_STEP_0 = "01_matmul_add/64_bf16_cold_eager_s0-0-3"


def before_gpu_trace() -> dict:
    """One host thread and the profiler's own (pid -1, tid 0); times in us:

        host      ProfilerStep#0 [0, 100)
                    matmul_add [5, 95)
                      aten::mm [10, 80)
                        cudaMalloc [20, 30)         launch [70, 75) -> GEMM [90, 95)
        profiler  Activity Buffer Request [15, 40)

    From the step's start to the GPU's first activity, [0, 90): the step itself runs alone for 5,
    matmul_add for 5 + 10, aten::mm for 70 - 10 - 5 = 55, cudaMalloc 10, the launch 5; the
    request covers 25 of it, on the other thread."""
    w = TraceWriter()
    w.host_event("user_annotation", "ProfilerStep#0", 0, 100)
    w.host_event("user_annotation", "matmul_add", 5, 90)
    w.host_event("cpu_op", "aten::mm", 10, 70)
    w.host_event("cuda_runtime", "cudaMalloc", 20, 10)
    w.launch(70, 5, [("kernel", GEMM, 90, 5, 7)])
    w.events.append({"ph": "X", "cat": "overhead", "name": "Activity Buffer Request", "pid": -1, "tid": 0,
                     "ts": 15, "dur": 25})
    return w.trace()


def test_host_time_before_the_gpu_starts_by_innermost_event(tmp_path):
    run = FakeRun(load_trace(write_trace(before_gpu_trace(), tmp_path / "t.json")))
    found = host_time_before_gpu(run)
    assert (found.step, found.first_kind, found.interval_us) == ("ProfilerStep#0", "kernel", 90.0)
    own = {s.name: s.us for s in found.on_thread}
    assert own == pytest.approx({"aten::mm": 55, "matmul_add": 15, "cudaMalloc": 10, "ProfilerStep#0": 5,
                                 "cudaLaunchKernel": 5})
    assert [s.name for s in found.on_thread][0] == "aten::mm"
    assert sum(s.pct for s in found.on_thread) == pytest.approx(100)
    assert [(s.name, s.us) for s in found.elsewhere] == [("Activity Buffer Request", 25)]
    assert found.share("Activity Buffer Request") == pytest.approx(100 * 25 / 90)
    assert found.share("absent") == 0


def raw(key: str) -> list[dict]:
    return json.loads(gzip.decompress(example(key).example.trace_path.read_bytes()))["traceEvents"]


def test_host_time_before_the_gpu_from_the_raw_trace():
    """Exercise 3's answer: aten::mm's own time (its span less its children's, all clipped to the
    interval) from the first step's start to the first GPU activity, from the raw JSON."""
    events = raw(FROM_STEP_0)
    step = min((e for e in events if str(e.get("name", "")).startswith("ProfilerStep#")), key=lambda e: e["ts"])
    lo = float(step["ts"])
    hi = min(float(e["ts"]) for e in events if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset"))

    def clipped(e):
        return max(0.0, min(float(e["ts"]) + float(e["dur"]), hi) - max(float(e["ts"]), lo))

    thread = [e for e in events if (e.get("pid"), e.get("tid")) == (step["pid"], step["tid"]) and e.get("ph") == "X"]
    mm = next(e for e in thread if e["name"] == "aten::mm")
    mm_end = float(mm["ts"]) + float(mm["dur"])
    inside = [e for e in thread if e is not mm and float(mm["ts"]) <= float(e["ts"])
              and float(e["ts"]) + float(e["dur"]) <= mm_end]
    children = [e for e in inside if not any(o is not e and float(o["ts"]) <= float(e["ts"])
                                             and float(e["ts"]) + float(e["dur"]) <= float(o["ts"]) + float(o["dur"])
                                             for o in inside)]
    own = clipped(mm) - sum(clipped(c) for c in children)
    found = host_time_before_gpu(example(FROM_STEP_0))
    assert found.interval_us == pytest.approx(hi - lo, abs=1e-3)
    assert found.on_thread[0].name == "aten::mm"
    assert found.on_thread[0].us == pytest.approx(own, abs=1e-3)


def test_cpu_busy_and_the_table_total_from_the_raw_artifacts():
    """The labels' self time is the table's rows of the trace's annotations (ProfilerStep#N folded
    into ProfilerStep*); CPU busy, the union of the ops and launch calls less the synchronize."""
    run = example(COLD64)
    table = parse_table(run.example.table_path.read_text())
    labels = sum(to_us(row[table.columns.index("Self CPU")]) for row in table.rows
                 if row[0] in ("ProfilerStep*", "matmul_add"))
    events = raw(COLD64)
    spans = sorted((float(e["ts"]), float(e["ts"]) + float(e["dur"])) for e in events
                   if e.get("cat") in ("cpu_op", "cuda_runtime", "cuda_driver"))
    union, end = 0.0, float("-inf")
    for start, stop in spans:
        if stop > end:
            union += stop - max(start, end)
            end = stop
    sync = sum(float(e["dur"]) for e in events if e.get("name") == "cudaDeviceSynchronize")
    found = P.cpu_time(run)
    assert found.labels_us == pytest.approx(labels)
    assert found.waits_us == pytest.approx(sync, abs=1e-3)
    # The trace's times are in us with ns digits; the analyzer reads them to whole ns, so the two
    # unions may part by a few ns over a few hundred events.
    assert found.cpu_busy_us == pytest.approx(union - sync, abs=1e-2)
    assert found.self_total_us == to_us(table.total("Self CPU time total"))


def test_the_prose_the_box_and_the_badge_give_one_busy_number(built_site):
    """One number per question: how busy the GPU was in the step the 64x64 picture draws is one
    number in the prose, the facts box's headline and the picture's badge; and the table's ratio
    of totals is not offered as a busy share."""
    run = example(COLD64)
    busy = f"{run.trace_facts(P.step_window(run, 3)).window.window_busy_pct:.1f}%"
    html = (built_site / PAGE).read_text(encoding="utf-8")
    text = re.sub(r"<[^>]+>", "", html)
    assert f"GPU busy {busy}" in text
    box = re.search(r'<div class="admonition abstract facts".*?</details>', html, re.S).group(0)
    assert "ProfilerStep#3" in box and busy in box.split("<details>")[0]
    badge = (built_site / "timelines" / "01_matmul_add" / "64_bf16_cold_eager_step3.svg").read_text()
    assert f"GPU busy {busy}" in badge
    assert "of the CPU's time" not in text


def test_the_picture_the_box_and_the_caption_give_one_length_for_each_gap():
    """One number per gap: the 64x64 step's picture cuts the GPU's wait for the step's first kernel
    at the step's start, yet labels it by its whole length, from the end of the previous step's
    GPU work, as the facts box and the links under the picture measure it (the analyzer's gap);
    the wait it cuts at the step's end is labelled as the next step's box names it."""
    import xml.etree.ElementTree as ET

    from scripts.series.pages import render
    from scripts.tracefacts.model.units import format_us

    run = example(COLD64)
    step3, step4 = P.step_window(run, 3), P.step_window(run, 4)
    box = [format_us(g.dur_us) for g in run.trace_facts(step3).window.launched.widest_gaps]
    next_box = [format_us(g.dur_us) for g in run.trace_facts(step4).window.launched.widest_gaps]
    assert len(box) == 2  # the step's two kernels, each after a gap: every gap of the step is listed
    svg = ET.fromstring(render.timeline_svg(run.trace, 3, None, None))
    said = [t.text for t in svg.iter("{http://www.w3.org/2000/svg}title") if t.text and t.text.startswith("GPU idle for ")]
    length = lambda text: text.removeprefix("GPU idle for ").split(",")[0]
    lead = [text for text in said if text.endswith("from before the step")]
    trail = [text for text in said if text.endswith("on past the step")]
    assert len(said) == 3 and len(lead) == len(trail) == 1
    assert sorted(length(text) for text in said if text not in trail) == sorted(box)
    assert length(trail[0]) in next_box
    captions = str(run._picture_links(3, None, None))
    assert all(f"GPU idle for {length}" in captions for length in box)
