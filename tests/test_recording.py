"""The recording checked before the verdict (scripts/tracefacts/facts/recording.py): how a trace was
recorded, and each warning on a synthetic trace that has the problem and on one that does not; the
events Perfetto's JSON import drops, worked out by hand; the warnings in the summary (one line
each, naming the evidence), in --json and on the committed runs.
"""

from __future__ import annotations

import json

import pytest

from scripts.tracefacts.entry import cli as analyze
from scripts.tracefacts.facts.analysis import COLUMN_KINDS, facts, summary_text
from scripts.tracefacts.facts.recording import recording_facts, recording_lines
from scripts.tracefacts.model.trace import build_trace, load_trace
from tests.conftest import ROOT
from tests.fixtures.handmade import TraceWriter
from tests.fixtures.synth import RELATIVE_START_US, complete_event, memory_instant, synth_trace, write_trace


# Kernels shorter than the host's ops, and no step rows on the GPU: the synthetic trace rounds
# each time to the ns on its own, so back to back a kernel's written end can pass the next one's
# start, or the end of the GPU's step row, by 1 ns, which Perfetto's import would drop.
CLEAN = {"kernel_us": (2.0, 3.0)}


def clean_trace(**overrides) -> dict:
    trace = synth_trace(**CLEAN, **overrides)
    trace["traceEvents"] = [e for e in trace["traceEvents"] if e.get("cat") != "gpu_user_annotation"]
    return trace


def kinds(trace: dict, window=None) -> dict:
    found = recording_facts(build_trace(trace), window)
    return {w.kind: w for w in found.warnings}


def steps_from_zero(trace: dict) -> dict:
    """The synthetic steps #2-#4 renumbered #0-#2 (a schedule without wait and warm-up)."""
    for event in trace["traceEvents"]:
        name = event.get("name", "")
        if name.startswith("ProfilerStep#"):
            event["name"] = f"ProfilerStep#{int(name.rsplit('#', 1)[1]) - 2}"
    return trace


def step_time(trace: dict, name: str) -> tuple[float, float]:
    """The host ProfilerStep's start and end, in us after RELATIVE_START_US."""
    step = next(e for e in trace["traceEvents"] if e.get("name") == name and e.get("cat") == "user_annotation")
    return step["ts"] - RELATIVE_START_US, step["ts"] + step["dur"] - RELATIVE_START_US


# --- how it was recorded -------------------------------------------------------------------------


def test_a_plain_recording_says_how_and_warns_of_nothing():
    found = recording_facts(build_trace(clean_trace()))
    assert found.steps == [2, 3, 4] and not found.warnings
    assert found.schedule == "ProfilerSteps #2-#4 (#0-#1 not recorded: the schedule's wait and warm-up)"
    assert (found.shapes, found.stacks, found.memory, found.graph_launches) == (False, False, False, 0)
    assert found.perfetto.dropped == 0 and found.perfetto.checked > 0
    assert recording_lines(found) == [f"recorded: {found.schedule} · shapes no · Python stacks no · "
                                      "memory no · CUDA graphs none"]


def test_repeated_cycles_and_flags_are_told():
    trace = clean_trace(steps=2, with_stack=True, extra={"record_shapes": 1})
    for event in trace["traceEvents"]:
        if event.get("name") == "ProfilerStep#3":
            event["name"] = "ProfilerStep#7"
    found = recording_facts(build_trace(trace))
    assert found.steps == [2, 7] and found.shapes and found.stacks
    assert "#2, #7" in found.schedule and "2 recording cycles" in found.schedule


# --- each warning, with and without the problem --------------------------------------------------


def test_step_zero_is_warm_up_in_the_window():
    assert "warm-up" not in kinds(clean_trace())
    trace = steps_from_zero(clean_trace())
    warning = kinds(trace)["warm-up"]
    assert "ProfilerStep#0 is recorded" in warning.text
    start, end = step_time(trace, "ProfilerStep#0")
    assert warning.span.ts_us == pytest.approx(start + RELATIVE_START_US)
    # A window after step 0 has none.
    assert "warm-up" not in kinds(trace, build_trace(trace).steps[1] and _window(trace, "ProfilerStep#1"))


def _window(trace: dict, name: str):
    from scripts.tracefacts.model.trace import select_window

    loaded = build_trace(trace)
    return select_window(loaded, step=int(name.rsplit("#", 1)[1]))


def test_compilation_and_lazy_loading_are_warm_up():
    trace = clean_trace()
    start, _ = step_time(trace, "ProfilerStep#3")
    trace["traceEvents"] += [
        complete_event("user_annotation", "compile_fx.<locals>.fw_compiler_base (dynamo_timed)", start + 1, 1500.0),
        complete_event("overhead", "Lazy Function Loading", start + 2, 3.0, tid=4243),
    ]
    warning = kinds(trace)["warm-up"]
    assert '"compile_fx.<locals>.fw_compiler_base (dynamo_timed)"' in warning.text and "1.5 ms" in warning.text
    assert 'CUDA loaded kernels lazily 1 time ("Lazy Function Loading")' in warning.text
    assert warning.count == 2 and warning.span.ts_us == pytest.approx(start + 1 + RELATIVE_START_US)


def test_the_profiler_s_own_work_in_a_step():
    assert "profiler-work" not in kinds(clean_trace())
    trace = clean_trace()
    start, _ = step_time(trace, "ProfilerStep#3")
    trace["traceEvents"].append(complete_event("overhead", "Activity Buffer Request", start + 3, 250.0, tid=9))
    trace["traceEvents"].append(complete_event("overhead", "Buffer Flush", start + 400, 50.0, tid=9))
    warning = kinds(trace)["profiler-work"]
    assert '"Activity Buffer Request", "Buffer Flush" (300 us, inside ProfilerStep#3)' in warning.text
    assert warning.count == 2 and (warning.span.pid, warning.span.tid) == (4242, 9)


def test_graph_launches_without_their_kernels():
    trace = clean_trace(graph_every=5)
    found = recording_facts(build_trace(trace))
    assert found.graph_launches == 24 and found.graph_launches_without_activity == 0
    assert "graph-kernels-missing" not in kinds(trace)
    trace["traceEvents"] = [e for e in trace["traceEvents"] if not str(e.get("name")).startswith("graph_kernel")]
    warning = kinds(trace)["graph-kernels-missing"]
    assert warning.count == 24 and warning.text.startswith("24 of 24 CUDA graph launches have no GPU activity")
    first = min(e["ts"] for e in trace["traceEvents"] if e.get("name") == "cudaGraphLaunch")
    assert warning.span.ts_us == first


def test_python_stacks_while_timing():
    assert "python-stacks" not in kinds(clean_trace())
    trace = clean_trace(with_stack=True)
    frames = sum(e.get("cat") == "python_function" for e in trace["traceEvents"])
    warning = kinds(trace)["python-stacks"]
    assert warning.count == frames and f"{frames:,} Python frames" in warning.text
    # The analyzer's own lean load (frames as columns, with their threads) says the same.
    assert [w.text for w in recording_facts(build_trace(trace, skip_kinds=COLUMN_KINDS)).warnings] == \
        [w.text for w in recording_facts(build_trace(trace)).warnings]


def test_memory_profiling_while_timing():
    assert "memory-profiling" not in kinds(clean_trace())
    trace = clean_trace()
    trace["traceEvents"] += [memory_instant(10.0, 512, 512), memory_instant(20.0, -512, 0)]
    warning = kinds(trace)["memory-profiling"]
    assert warning.count == 2 and "2 [memory] events" in warning.text
    assert warning.span.ts_us == RELATIVE_START_US + 10.0 and warning.span.dur_us == 0


# --- what Perfetto's JSON import drops -----------------------------------------------------------


def perfetto_case() -> dict:
    """Stream 7 of GPU 0, by hand: an annotation [20, 90) and K1 [20, 50] start together (the
    longer first: K1 nests), K2 [45, 60] starts inside K1 and ends after it (dropped), K3 [60, 70]
    starts where K2 would end (nests in the annotation), K4 [80, 95] crosses the annotation's end
    (dropped); on the host, an op [10, 20.0] and a call [15, 20.0004] that ends after it by less
    than Perfetto's nanosecond (kept), and an instant [30, 30] at the end of a call [25, 30]."""
    w = TraceWriter()
    w.events.append({"ph": "X", "cat": "gpu_user_annotation", "name": "ProfilerStep#1", "pid": 0, "tid": 7,
                     "ts": 20, "dur": 70, "args": {}})
    w.launch(1, 2, [("kernel", "K1", 20, 30, 7)])
    w.launch(3, 2, [("kernel", "K2", 45, 15, 7)])
    w.launch(5, 2, [("kernel", "K3", 60, 10, 7)])
    w.launch(7, 2, [("kernel", "K4", 80, 15, 7)])
    w.host_event("cpu_op", "aten::mm", 10, 10.0)
    w.host_event("cpu_op", "aten::addmm", 15, 5.0004)
    w.host_event("cpu_op", "aten::add", 25, 5.0)
    w.host_event("cpu_op", "aten::zero_length", 30, 0.0)
    return w.trace()


def test_perfetto_drops_what_crosses_an_open_event_s_end():
    found = recording_facts(build_trace(perfetto_case()))
    assert found.perfetto.dropped == 2 and found.perfetto.dropped_by_kind == {"kernel": 2}
    assert found.perfetto.checked == 13 and found.perfetto.unchecked == []
    (warning,) = found.warnings
    assert warning.kind == "perfetto-drops" and warning.count == 2
    assert 'the kernel "K2" (pid 0 tid 7), starts inside "K1" and ends 10 us after it' in warning.text
    assert (warning.span.ts_us, warning.span.dur_us, warning.span.pid, warning.span.tid) == (45, 15, 0, 7)


def test_back_to_back_kernels_rounded_past_each_other_are_dropped():
    """The synthetic trace rounds each time to the ns on its own: back to back on a busy GPU, a
    kernel's written end can pass the next one's start, as Perfetto then sees it."""
    busy = recording_facts(build_trace(synth_trace(kernel_us=(20.0, 30.0))))
    assert busy.perfetto.dropped > 0 and busy.warnings[-1].kind == "perfetto-drops"


def test_nested_and_touching_events_are_kept():
    trace = perfetto_case()
    trace["traceEvents"] = [e for e in trace["traceEvents"] if e.get("name") not in ("K2", "K4")]
    found = recording_facts(build_trace(trace))
    assert found.perfetto.dropped == 0 and not found.warnings


def test_a_lean_load_checks_what_it_kept_and_names_what_it_did_not(tmp_path):
    path = write_trace(perfetto_case(), tmp_path / "case.json")
    lean = recording_facts(load_trace(path, skip_kinds=COLUMN_KINDS))
    assert lean.perfetto.unchecked == ["cpu_op"] and lean.perfetto.dropped == 2
    assert lean.warnings[0].text == recording_facts(load_trace(path)).warnings[0].text


# --- in the summary and --json -------------------------------------------------------------------


def test_the_summary_gives_one_line_per_warning_before_the_verdict(tmp_path, capsys):
    trace = steps_from_zero(clean_trace(with_stack=True))
    trace["traceEvents"] += [memory_instant(10.0, 512, 512)]
    path = write_trace(trace, tmp_path / "t.json")
    assert analyze.main([str(path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    warnings = [i for i, line in enumerate(lines) if line.startswith("warning: ")]
    verdict = next(i for i, line in enumerate(lines) if line.startswith("  verdict: "))
    assert len(warnings) == 3 and max(warnings) < verdict and lines[warnings[0] - 1].startswith("recorded: ")
    assert "ProfilerStep#0" in lines[warnings[0]] and "Python frames" in lines[warnings[1]]
    assert "[memory] events" in lines[warnings[2]]
    assert analyze.main([str(path), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert [w["kind"] for w in out["recording"]["warnings"]] == ["warm-up", "python-stacks", "memory-profiling"]
    assert out["recording"]["warnings"][0]["span"]["ts_us"] is not None


def test_names_in_warnings_are_escaped_for_a_terminal():
    trace = perfetto_case()
    for event in trace["traceEvents"]:
        if event.get("name") == "K2":
            event["name"] = "K2\x1b[31m\nnext"
    (warning,) = recording_facts(build_trace(trace)).warnings
    assert "\x1b" not in warning.text and "\n" not in warning.text and "\\x1b" in warning.text


# --- the committed runs --------------------------------------------------------------------------


@pytest.mark.parametrize("path, expected", [
    ("01_matmul_add/64_bf16_warm_eager.json.gz", set()),
    ("01_matmul_add/64_bf16_cold_eager_s0-0-3.json.gz", {"warm-up", "profiler-work"}),
    ("05_llm_inference/decode_b1_p512_static_eager.json.gz", {"perfetto-drops"}),
    ("07_shapes_stacks/stacks_b16_s3_fused.json.gz", {"python-stacks", "perfetto-drops"}),
    ("06_memory/train_b16_s512_l8_d512_fp32_baseline.json.gz", {"python-stacks", "memory-profiling", "perfetto-drops"}),
], ids=lambda v: v.split("/")[-1].split(".")[0] if isinstance(v, str) else None)
def test_committed_runs_warn_of_what_they_hold(path, expected):
    found = recording_facts(load_trace(ROOT / "traces" / path))
    assert {w.kind for w in found.warnings} == expected
    assert all(w.span is not None for w in found.warnings)
    summary = summary_text(facts(load_trace(ROOT / "traces" / path)), found).splitlines()
    assert sum(line.startswith("warning: ") for line in summary) == len(expected)
