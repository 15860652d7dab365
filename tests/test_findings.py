"""Findings you can open: each finding's span in the file's own time (scripts/tracefacts/facts/places.py),
the deep link that opens Perfetto there (scripts/tracefacts/pictures/perfetto_links.py,
scripts/tracefacts/model/perfetto.py), and the links beside the facts box's rows.

Spans are worked out by hand on the hand-made trace (tests/fixtures/handmade.py), moved to the
large timestamps torch writes, and checked on the committed runs against the raw JSON: every span
lies in the trace, in microseconds as the file writes them, and every event a span names is an
event of the file, which the deep link selects by the nanoseconds Perfetto makes of it.
"""

from __future__ import annotations

import gzip
import json
from collections import Counter
from decimal import ROUND_DOWN, Decimal
from pathlib import Path
from urllib.parse import parse_qsl, urlsplit

import pytest

from scripts.tracefacts.facts.analysis import COLUMN_KINDS, facts
from scripts.tracefacts.facts.memory import memory_facts
from scripts.tracefacts.facts.places import event_span
from scripts.tracefacts.facts.recording import recording_facts
from scripts.tracefacts.facts.terms import Span
from scripts.tracefacts.model.perfetto import link_thread, ns_agree, perfetto_ns, track_of
from scripts.tracefacts.model.trace import build_trace, load_trace
from scripts.tracefacts.model.units import format_us
from scripts.tracefacts.pictures.facts_box import render_facts_box
from scripts.tracefacts.pictures.perfetto_links import (PAD_MIN_US, TraceTarget, deep_link, findings,
                                                        open_at, perfetto_url)
from tests.conftest import ROOT
from tests.fixtures.handmade import TRITON, two_steps
from tests.fixtures.synth import memory_instant, synth_trace, write_trace

OFFSET = 5_318_963_570_888.983  # where torch's timestamps are: the file's time is not ours
TRACES = ROOT / "traces"
COMMITTED = [TRACES / p for p in (
    "01_matmul_add/4096_bf16_warm_compile.json.gz",
    "04_attention/naive_b8_h16_s1024_d64_bf16_warm.json.gz",
    "05_llm_inference/decode_b1_p512_dynamic_eager.json.gz",
    "06_memory/train_b16_s512_l8_d512_fp32_baseline.json.gz",
)]


def shifted(trace: dict, by: float) -> dict:
    """The trace with every timestamp moved by `by` us (as the profiler writes them: large)."""
    for event in trace["traceEvents"]:
        if "ts" in event:
            event["ts"] = event["ts"] + by
    return trace


def at(us: float) -> float:
    """A hand-made time as the shifted file writes it."""
    return us + OFFSET


@pytest.fixture(scope="module")
def moved():
    trace = build_trace(shifted(two_steps(), OFFSET), source="two_steps.json")
    return trace, facts(trace)


# --- spans worked out by hand -------------------------------------------------------------------


def test_the_hand_made_findings_lie_where_the_trace_puts_them(moved):
    """two_steps, moved by OFFSET: the whole trace [0, 200], ProfilerStep#1 [0, 100) (its event,
    on host thread 1), the widest gaps before K4 [90, 120], K2 [50, 70] and K1 [10, 20] (GPU 0's
    idle time from its first launch call at 10), the top activity (the Triton kernel, 40 us) first
    run [120, 160] on stream 7, and the longest blocking call, cudaDeviceSynchronize [170, 195]."""
    trace, found = moved
    assert trace.origin_us == at(0)
    assert found.span == Span(at(0), at(200))
    assert found.window.span == Span(at(0), at(200))
    assert found.steps[0].span == Span(at(0), at(100), 1, 1, at(0), 100)
    assert found.steps[1].span == Span(at(100), at(200), 1, 1, at(100), 100)
    gaps = found.window.launched.widest_gaps
    assert [(g.span.start_us, g.span.end_us) for g in gaps] == [(at(90), at(120)), (at(50), at(70)),
                                                                (at(10), at(20))]
    assert all(g.span.pid is None and g.span.ts_us is None for g in gaps)  # a gap is no event
    top = found.window.top_kernels[0]
    assert top.name == TRITON and top.first_run == Span(at(120), at(160), 0, 7, at(120), 40)
    wait = found.window.host_wait
    assert (wait.name, wait.dur_us) == ("cudaDeviceSynchronize", 25)
    assert wait.span == Span(at(170), at(195), 1, 1, at(170), 25)
    # In a step: its own findings (steps list no kernels).
    assert found.steps[1].host_wait.span.start_us == at(170) and found.steps[0].host_wait is None


def test_a_lean_load_places_the_findings_where_a_full_one_does(tmp_path):
    path = write_trace(shifted(two_steps(), OFFSET), tmp_path / "two.json")
    assert facts(load_trace(path, skip_kinds=COLUMN_KINDS)).to_dict() == facts(load_trace(path)).to_dict()


def test_the_json_gives_each_finding_its_span(moved):
    window = moved[1].to_dict()["window"]
    assert window["top_kernels"][0]["first_run"] == {"start_us": round(at(120), 3), "end_us": round(at(160), 3),
                                                     "pid": 0, "tid": 7, "ts_us": round(at(120), 3), "dur_us": 40}
    assert window["launched"]["widest_gaps"][0]["span"]["start_us"] == round(at(90), 3)
    assert window["host_wait"]["span"]["ts_us"] == round(at(170), 3)


def test_the_memory_peak_is_its_event():
    trace = synth_trace(steps=1, ops_per_step=2)
    trace["traceEvents"] += [memory_instant(1.0, 100, 100), memory_instant(2.0, 300, 400, tid=7),
                             memory_instant(3.0, -300, 100)]
    loaded = build_trace(trace)
    (device,) = memory_facts(loaded).devices
    ts = next(e["ts"] for e in trace["traceEvents"] if e.get("name") == "[memory]" and e["args"]["Bytes"] == 300)
    assert device.peak_span == Span(ts, ts, 4242, 7, ts, 0.0)


# --- the deep link ------------------------------------------------------------------------------


def test_the_deep_link_zooms_around_the_finding_and_selects_its_event(moved):
    trace, found = moved
    run = found.window.top_kernels[0].first_run
    args = deep_link(run, found.span)
    # Perfetto's nanoseconds: the file's microseconds times 1000, no offset (model/perfetto.py).
    assert args["ts"] == str(int(at(120) * 1000.0)) == str(_shifted_ns(repr(at(120))))
    assert args["dur"] == "40000" and (args["pid"], args["tid"]) == ("0", "7")
    pad = max(40 * 0.25, PAD_MIN_US)
    assert (int(args["visStart"]), int(args["visEnd"])) == (perfetto_ns(at(120) - pad), perfetto_ns(at(160) + pad))
    assert int(args["visStart"]) < int(args["ts"]) < int(args["ts"]) + 40_000 < int(args["visEnd"])
    url = perfetto_url(args)
    parts = urlsplit(url)
    assert (parts.scheme, parts.netloc, parts.path) == ("https", "ui.perfetto.dev", "/")
    assert parts.fragment.startswith("!/?") and dict(parse_qsl(parts.fragment[3:])) == args


def test_the_deep_link_stays_inside_the_trace(moved):
    """Perfetto ignores a visible window that reaches past the trace: the first step's starts
    with the trace, so its window is cut there; a gap is no event, so nothing is selected."""
    _, found = moved
    step = deep_link(found.steps[0].span, found.span)
    assert int(step["visStart"]) == perfetto_ns(found.span.start_us)
    last = deep_link(found.steps[1].span, found.span)
    assert int(last["visEnd"]) == perfetto_ns(found.span.end_us) - 1
    gap = deep_link(found.window.launched.widest_gaps[0].span, found.span)
    assert set(gap) == {"visStart", "visEnd"}
    assert deep_link(Span(float("nan"), 1.0)) == {} and perfetto_url({}) == "https://ui.perfetto.dev/"


def _shifted_ns(text: str) -> int:
    """Older importers' nanoseconds: the number's text shifted three decimal places, truncated."""
    return int((Decimal(text) * 1000).to_integral_value(rounding=ROUND_DOWN))


def test_an_event_is_selected_only_where_both_ways_of_reading_its_times_agree():
    assert perfetto_ns(32.541) == 32540 and _shifted_ns("32.541") == 32541 and not ns_agree(32.541)
    assert ns_agree(176.736) and perfetto_ns(176.736) == 176736
    assert perfetto_ns(1_700_000_000_000_007.0) == 1_700_000_000_000_007_000  # an integral one: exact
    span = Span(at(0), at(32.541), 1, 1, at(0), 32.541)
    assert set(deep_link(span)) == {"visStart", "visEnd"}


def test_perfetto_threads():
    """Numbers as uint32 (out of range: absent), names as names; a link names numbers only."""
    assert track_of(0, 7) == (0, 7)
    assert track_of(-1, 5) == (0, 5) and track_of(3, 1 << 32) == (3, 3)
    assert track_of("Spans", "PyTorch Profiler") == (("name", "Spans"), ("name", "PyTorch Profiler"))
    assert link_thread(680) == 680 and link_thread("Spans") is None and link_thread(-1) is None


# --- on the committed runs ----------------------------------------------------------------------


def raw_events(path: Path) -> list[dict]:
    return [e for e in json.load(gzip.open(path))["traceEvents"] if e.get("ph") in ("X", "i")]


@pytest.mark.parametrize("path", COMMITTED, ids=lambda p: p.name.split(".")[0])
def test_committed_findings_are_events_of_the_file_in_its_microseconds(path):
    trace = load_trace(path)
    found = facts(trace)
    spans = findings(found, memory_facts(trace), recording_facts(trace))
    assert len(spans) >= 4
    raw = raw_events(path)
    complete = [e for e in raw if e["ph"] == "X"]
    first = min(e["ts"] for e in complete)
    last = max(e["ts"] + e.get("dur", 0) for e in complete)
    assert (found.span.start_us, found.span.end_us) == (first, pytest.approx(last, abs=1e-3))
    events = {(e.get("pid"), e.get("tid"), e["ts"], e.get("dur", 0.0)) for e in raw}
    for label, span in spans:
        # In the file's microseconds: inside the trace as written, not relative to its start.
        assert first <= span.start_us <= span.end_us <= last + 1e-3, label
        if span.ts_us is None:
            continue
        assert (span.pid, span.tid, span.ts_us, span.dur_us) in events, label
        args = deep_link(span, found.span)
        assert int(args["visStart"]) <= perfetto_ns(span.ts_us) and \
            perfetto_ns(span.ts_us + span.dur_us) <= int(args["visEnd"]) + 1, label
        if "ts" in args:  # what Perfetto makes of the event's own numbers
            assert args["ts"] == str(perfetto_ns(span.ts_us)) and args["dur"] == str(perfetto_ns(span.dur_us))


@pytest.mark.parametrize("path", COMMITTED, ids=lambda p: p.name.split(".")[0])
def test_our_times_give_back_perfetto_s_nanoseconds_of_the_file(path):
    """Times since the first event, plus the origin, are the file's numbers again (Sterbenz): the
    nanoseconds Perfetto makes of every complete event's start are ours. And both ways Perfetto
    has read numbers agree on every start of these files (short durations may differ)."""
    trace = load_trace(path)
    texts = json.load(gzip.open(path), parse_float=str, parse_int=str)["traceEvents"]
    starts = [e["ts"] for e in texts if e.get("ph") == "X"]
    assert Counter(perfetto_ns(float(t)) for t in starts) == Counter(
        perfetto_ns(e.ts + trace.origin_us) for e in trace.events)
    assert all(perfetto_ns(float(t)) == _shifted_ns(t) for t in starts)


# --- the facts box ------------------------------------------------------------------------------


TARGET = TraceTarget("run/key", "trace.json.gz", "traces/run/trace.json.gz")


def test_the_facts_box_links_each_finding_and_is_unchanged_without_a_target(moved):
    trace, found = moved
    plain = render_facts_box(found, "guide/")
    assert "perfetto-at" not in plain
    linked = render_facts_box(found, "guide/", perfetto=TARGET)
    urls = [dict(parse_qsl(urlsplit(u).fragment[3:])) for u in _attribute(linked, "data-perfetto-url")]
    # the three gaps, the first run, the longest wait, two steps
    assert len(urls) == 7
    assert {u.get("ts") for u in urls} >= {str(perfetto_ns(at(120))), str(perfetto_ns(at(170))),
                                          str(perfetto_ns(at(0))), str(perfetto_ns(at(100)))}
    assert set(_attribute(linked, "data-trace")) == {TARGET.href}
    assert f"longest wait on the GPU <code>cudaDeviceSynchronize</code> {format_us(25)}" in linked


def test_the_analyzer_s_links_name_the_trace_in_memory_and_escape_its_name(moved):
    _, found = moved
    name = 'x"><img src=y onerror=alert(1)>.json'
    linked = open_at(TraceTarget(name, name, source="analyzer"), found.window.top_kernels[0].first_run, "the run")
    assert "<img" not in linked and 'data-source="analyzer"' in linked and "data-trace" not in linked


def _attribute(html: str, name: str) -> list[str]:
    import html as html_module
    import re

    return [html_module.unescape(v) for v in re.findall(rf'{name}="([^"]*)"', html)]


def test_events_give_their_own_span(moved):
    trace, _ = moved
    sync = next(e for e in trace.events if e.name == "cudaDeviceSynchronize")
    assert event_span(trace, sync) == Span(at(170), at(195), 1, 1, at(170), 25)
