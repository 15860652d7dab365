"""Memory facts (scripts/tracefacts/facts/memory.py) on hand-made `[memory]` events whose peaks are worked out by
hand: two CUDA devices and the CPU, frees before any allocation, windows that cut the peak."""

from __future__ import annotations

from scripts.tracefacts.facts.memory import format_bytes, memory_facts, memory_series, memory_text
from scripts.tracefacts.model.trace import Window, build_trace
from tests.fixtures.synth import complete_event as x
from tests.fixtures.synth import memory_instant as mem


def memory_trace() -> dict:
    """Times in us from the first event (the first step's start):

        host   ProfilerStep#1 [0, 100)                  ProfilerStep#2 [100, 200)
               aten::empty [10, 20]  aten::mm [30, 60]   aten::add [105, 115]
                                     aten::empty_strided [35, 40] (inside aten::mm)
        cuda:0 +100 @12 (=100)  +300 @36 (=400)  -100 @50 (=300)  +200 @110 (=500)  -300 @150 (=200)
               reserved 1024 until 110, then 2048
        cuda:1 +64 @20 (=64)
        cpu    -50 @5 (=1000: 1050 were held before)  +20 @60 (=1020)
    """
    events = [
        x("user_annotation", "ProfilerStep#1", 0, 100), x("user_annotation", "ProfilerStep#2", 100, 100),
        x("cpu_op", "aten::empty", 10, 10), x("cpu_op", "aten::mm", 30, 30),
        x("cpu_op", "aten::empty_strided", 35, 5), x("cpu_op", "aten::add", 105, 10),
        mem(12, 100, 100, 1024, addr=1), mem(36, 300, 400, 1024, addr=2),
        mem(50, -100, 300, 1024, addr=1), mem(110, 200, 500, 2048, addr=3),
        mem(150, -300, 200, 2048, addr=2),
        mem(20, 64, 64, 2048, device_id=1, addr=9),
        mem(5, -50, 1000, device_type=0, device_id=-1, addr=7),
        mem(60, 20, 1020, device_type=0, device_id=-1, addr=8),
    ]
    return {"traceEvents": events}


def trace():
    return build_trace(memory_trace())


def test_whole_trace_per_device():
    m = memory_facts(trace())
    assert [d.device for d in m.devices] == ["cuda:0", "cuda:1", "cpu"]
    cuda = m.device("cuda:0")
    assert (cuda.allocations, cuda.allocated_bytes, cuda.frees, cuda.freed_bytes) == (3, 600, 2, 400)
    assert (cuda.start_allocated, cuda.end_allocated, cuda.net_bytes) == (0, 200, 200)
    assert (cuda.peak_allocated, cuda.peak_us, cuda.peak_from_before) == (500, 110.0, False)
    assert cuda.peak_op == "aten::add"
    assert (cuda.peak_reserved, cuda.peak_reserved_us) == (2048, 110.0)
    # Largest first; each with the op around it and when its address was freed.
    assert [(a.bytes, a.ts_us, a.op, a.freed_us) for a in cuda.largest] == [
        (300, 36.0, "aten::empty_strided", 150.0), (200, 110.0, "aten::add", None),
        (100, 12.0, "aten::empty", 50.0)]
    assert cuda.largest[0].lifetime_us == 114.0
    assert m.device("cuda:1").peak_allocated == 64


def test_frees_before_allocations_reveal_memory_held_before():
    cpu = memory_facts(trace()).device("cpu")
    assert (cpu.start_allocated, cpu.peak_allocated, cpu.peak_from_before) == (1050, 1050, True)
    assert cpu.peak_us == 0.0 and cpu.peak_op is None
    assert (cpu.allocations, cpu.frees, cpu.freed_bytes, cpu.net_bytes) == (1, 1, 50, -30)
    assert cpu.peak_reserved == 0  # the CPU allocator reserves nothing: no reserved line
    lines = memory_text(memory_facts(trace()))
    cpu_peak = lines[lines.index(next(line for line in lines if line.startswith("  cpu:"))) + 1]
    assert cpu_peak.startswith("    peak allocated 1.03 KiB held from before") and "reserved" not in cpu_peak
    cuda_peak = lines[2]
    assert "peak reserved 2.00 KiB" in cuda_peak and "in aten::add" in cuda_peak


def test_windows_carry_the_level_in():
    t = trace()
    first = memory_facts(t, Window(0, 100, "ProfilerStep#1")).device("cuda:0")
    assert (first.peak_allocated, first.peak_us, first.peak_op) == (400, 36.0, "aten::empty_strided")
    assert (first.start_allocated, first.end_allocated) == (0, 300)
    second = memory_facts(t, Window(100, 200, "ProfilerStep#2"))
    assert [d.device for d in second.devices] == ["cuda:0"]  # the others had no event in it
    cuda = second.device("cuda:0")
    assert (cuda.start_allocated, cuda.peak_allocated, cuda.end_allocated, cuda.net_bytes) == \
        (300, 500, 200, -100)


def test_a_window_that_cuts_the_peak():
    cuda = memory_facts(trace(), Window(120, 200, "after the peak")).device("cuda:0")
    # The level was 500 when the window began (reached at 110): the peak is held from before.
    assert (cuda.peak_allocated, cuda.peak_us, cuda.peak_from_before, cuda.peak_op) == \
        (500, 120.0, True, None)
    assert (cuda.allocations, cuda.frees, cuda.end_allocated) == (0, 1, 200)
    assert (cuda.peak_reserved, cuda.peak_reserved_us) == (2048, 120.0)
    before = memory_facts(trace(), Window(0, 105, "before")).device("cuda:0")
    assert (before.peak_allocated, before.peak_us) == (400, 36.0)


def test_series_steps_from_the_level_the_window_starts_with():
    (cuda0, *_), = [memory_series(trace(), Window(100, 200, "ProfilerStep#2"))]
    assert cuda0.device == "cuda:0"
    assert cuda0.times_us == [100, 110.0, 150.0]
    assert cuda0.allocated == [300, 500, 200]
    assert cuda0.reserved == [1024, 2048, 2048]


def test_no_memory_events_no_facts():
    events = [e for e in memory_trace()["traceEvents"] if e["ph"] != "i"]
    assert memory_facts(build_trace({"traceEvents": events})) is None


def test_unreadable_args_are_skipped_not_fatal():
    data = memory_trace()
    bad = mem(70, 10, 10)
    bad["args"]["Bytes"] = "ten"
    nan = mem(71, 10, 10)
    nan["args"]["Bytes"] = float("nan")
    data["traceEvents"] += [bad, nan, {**mem(72, 1, 1), "args": None}]
    assert memory_facts(build_trace(data)).device("cuda:0").allocations == 3


def test_format_bytes():
    assert [format_bytes(n) for n in (0, 512, 1536, 3 * 2**30 + 2**29, -2048)] == \
        ["0 B", "512 B", "1.50 KiB", "3.50 GiB", "-2.00 KiB"]


def test_facts_box_shows_the_peak_escaped():
    from scripts.tracefacts.facts.analysis import facts
    from scripts.series.pages.helpers import render_facts_box

    t = trace()
    t.by_kind["cpu_op"][-1].name = "aten::<b>add"
    box = str(render_facts_box(facts(t, step=2), "#", memory_facts(t, Window(100, 200, "ProfilerStep#2"))))
    assert "cuda:0: 500 B allocated at 110 us, in <code>aten::&lt;b&gt;add</code> (reserved 2.00 KiB)" in box
    assert "Memory peak" not in str(render_facts_box(facts(t, step=2), "#"))


def test_memory_lane_under_the_timeline():
    import xml.dom.minidom

    from scripts.tracefacts.pictures.timeline.memory_lane import LANE_H, add_memory_lane
    from scripts.tracefacts.pictures.timeline.draw import render_timeline

    t = trace()
    t.by_kind["cpu_op"][-1].name = "aten::<b>add"
    window = Window(100, 200, "ProfilerStep#2")
    plain = render_timeline(t, window)
    drawn = add_memory_lane(plain, t, window)
    xml.dom.minidom.parseString(drawn)  # still well-formed: the name is escaped
    assert "peak 500 B, in aten::&lt;b&gt;add" in drawn and drawn.count("memory cuda:0") == 1
    assert len(drawn) > len(plain) and f'height="{LANE_H}"' in drawn
    no_memory = build_trace({"traceEvents": [e for e in memory_trace()["traceEvents"] if e["ph"] != "i"]})
    assert add_memory_lane(plain, no_memory, window) == plain
