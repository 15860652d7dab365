"""The training steps' phases (scripts/tracefacts/facts/training.py): worked out by hand on a tiny
trace, held to invariants on a synthetic one, against the labels the guide's own training step
wrote around its forward, backward and optimizer (frozen GPU runs), and in analyze.py's output."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from scripts.tracefacts.entry import cli as analyze
from scripts.tracefacts.facts.recording import recording_facts
from scripts.tracefacts.facts.analysis import COLUMN_KINDS, facts, summary_text
from scripts.tracefacts.facts.details import details
from scripts.tracefacts.facts.training import PHASES, training_facts
from scripts.tracefacts.model.trace import Window, build_trace, load_trace
from tests.fixtures.handmade import training_steps, two_steps
from tests.fixtures.synth import autograd_tid, synth_trace, write_trace

ROOT = Path(__file__).resolve().parents[1]
TRAIN = ROOT / "traces" / "train_step"
LABELLED = sorted(TRAIN.glob("train_b16_*.json.gz"))  # forward / backward / optimizer labels
PLAIN = ROOT / "traces" / "01_matmul_add" / "64_bf16_warm_eager.json.gz"


def by_phase(phases) -> dict:
    return {p.phase: p for p in phases}


@pytest.mark.parametrize("named_last", [True, False], ids=["autograd-named-last", "autograd-named-first"])
def test_hand_made_step_phase_by_phase(named_last):
    trace = build_trace(training_steps(named_last))
    assert trace.thread_names[(1, 2)] == "thread 2 (pt_autograd_0)"  # whichever order Kineto lists
    found = training_facts(trace)
    assert [s.label for s in found.steps] == ["ProfilerStep#1"]  # step 2 has no backward
    assert found.backward_threads == ["thread 2 (pt_autograd_0)"]
    assert found.optimizers == ["Optimizer.step#AdamW.step"]
    phases = by_phase(found.phases)
    assert {p: phases[p].host_us for p in PHASES} == {
        "data": 10.0, "forward": 30.0, "backward": 23.0, "optimizer": 20.0, "other": 17.0}
    assert {p: phases[p].gpu_busy_us for p in PHASES} == {
        "data": 0.0, "forward": 18.0, "backward": 24.0, "optimizer": 9.0, "other": 3.0}
    assert {p: phases[p].launches for p in PHASES} == {
        "data": 0, "forward": 2, "backward": 2, "optimizer": 3, "other": 2}
    assert phases["backward"].host_pct == 23.0 and phases["optimizer"].gpu_pct == pytest.approx(100 * 9 / 54)
    assert found.steps[0].phases == found.phases  # one step: its phases are the sum


def test_windows_pick_the_steps_that_start_in_them():
    trace = build_trace(training_steps())
    assert training_facts(trace, Window(100.0, 200.0, "ProfilerStep#2")) is None  # no backward
    step1 = training_facts(trace, Window(0.0, 100.0, "ProfilerStep#1"))
    assert step1.label == "ProfilerStep#1" and step1.phases == training_facts(trace).phases


def test_no_training_facts_without_an_autograd_thread():
    assert training_facts(build_trace(two_steps())) is None
    assert training_facts(build_trace(synth_trace())) is None
    data = training_steps()
    for event in data["traceEvents"]:
        if event["ph"] == "M" and event["tid"] == 2:
            event["args"]["name"] = "thread 2 (python)"
    assert training_facts(build_trace(data)) is None  # a CPU-only profile's backward looks so


def test_synthetic_loop_keeps_its_invariants():
    spec = dict(steps=4, ops_per_step=50, backward_ops=25, optimizer_ops=10, streams=(7, 20), seed=3)
    trace = build_trace(synth_trace(**spec))
    found = training_facts(trace)
    assert len(found.steps) == 4
    whole = facts(trace)
    for step, step_facts in zip(found.steps, whole.steps):
        phases = by_phase(step.phases)
        assert sum(p.host_us for p in step.phases) == pytest.approx(step.dur_us)
        # Every activity launched in the step is in one phase, and in the facts' launched work.
        assert sum(p.activities for p in step.phases) == step_facts.launched.activities
        assert phases["backward"].launches == 25 and phases["optimizer"].launches == 10
        assert phases["forward"].launches == 50 - 25 - 10 and phases["data"].launches == 0
        assert sum(p.gpu_busy_us for p in step.phases) >= step_facts.launched.busy_us - 1e-6
    assert found.backward_threads == [f"thread {autograd_tid_of(spec)} (pt_autograd_0)"]


def autograd_tid_of(spec: dict) -> int:
    from tests.fixtures.synth import Spec

    return autograd_tid(Spec(**spec))


def _labels(trace, name):
    return [a for a in trace.by_kind["annotation"] if a.name == name]


@pytest.mark.parametrize("path", LABELLED, ids=lambda p: p.name.split(".")[0])
def test_phases_agree_with_the_labels_the_snippet_wrote(path):
    """snippets/train_step.py labels its forward, backward and optimizer; the analyzer reads the
    trace without them: its backward lies inside the `backward` label and fills most of it, its
    optimizer is torch.optim's own label inside `optimizer`, its forward covers `forward`."""
    trace = load_trace(path)
    found = training_facts(trace)
    assert found is not None and len(found.steps) == len(trace.steps)
    for step in found.steps:
        inside = [a for a in trace.by_kind["annotation"] if step.start_us <= a.ts < step.end_us]
        label = {a.name: a for a in inside}
        phases = by_phase(step.phases)
        assert sum(p.host_us for p in step.phases) == pytest.approx(step.dur_us)
        assert 0.9 * label["backward"].dur <= phases["backward"].host_us <= label["backward"].dur
        assert phases["optimizer"].host_us == pytest.approx(label["Optimizer.step#AdamW.step"].dur)
        assert label["forward"].dur <= phases["forward"].host_us <= label["backward"].end - step.start_us
        # The optimizer's GPU work is what was launched inside the snippet's `optimizer` label
        # (zero_grad(set_to_none=True) launches nothing), counted here from the events.
        spans = [(a.ts, a.end) for a in inside if a.name == "optimizer"]
        launched = [act for act in trace.gpu_activities if (call := trace.launch_of(act)) is not None
                    and any(s <= call.ts <= e for s, e in spans)]
        assert phases["optimizer"].activities == len(launched) > 0
        assert phases["data"].host_us == 0 and phases["other"].host_us < 0.1 * step.dur_us


@pytest.mark.parametrize("path", LABELLED, ids=lambda p: p.name.split(".")[0])
def test_the_analyzers_one_pass_gives_the_same_phases(path):
    lean, full = details(load_trace(path, skip_kinds=COLUMN_KINDS)), details(load_trace(path))
    assert lean.training == full.training and lean.syncs == full.syncs


def cli(capsys, *args) -> str:
    assert analyze.main([str(a) for a in args]) == 0
    return capsys.readouterr().out


def test_cli_prints_the_phases_of_a_training_trace(capsys, tmp_path):
    path = write_trace(training_steps(), tmp_path / "train.json")
    text = cli(capsys, path)
    assert "training steps (1 ProfilerStep with a backward on thread 2 (pt_autograd_0); " \
           "Optimizer.step#AdamW.step), in whole trace:" in text
    assert "  optimizer        20 us     20.0%        9 us    16.7%         3           3" in text
    out = json.loads(cli(capsys, path, "--json"))
    assert [p["phase"] for p in out["training"]["phases"]] == list(PHASES)
    assert out["training"]["phases"][2]["host_us"] == 23.0
    step2 = json.loads(cli(capsys, path, "--json", "--step", "2"))
    assert "training" not in step2


def test_names_from_the_trace_are_escaped(capsys, tmp_path):
    data = training_steps()
    for event in data["traceEvents"]:
        if event["ph"] == "M" and event["tid"] == 2:
            event["args"]["name"] = "thread 2 (pt_autograd_0)\x1b[31m\nfake"
        if event.get("name") == "Optimizer.step#AdamW.step":
            event["name"] = "Optimizer.step#Evil\x07.step"
    text = cli(capsys, write_trace(data, tmp_path / "evil.json"))
    assert "pt_autograd_0)\\x1b[31m\\x0afake" in text and "Optimizer.step#Evil\\x07.step" in text
    assert "\x1b" not in text and "\x07" not in text


@pytest.mark.skipif(not PLAIN.exists(), reason="a frozen trace without training")
def test_a_trace_without_training_prints_what_it_printed(capsys):
    trace = load_trace(PLAIN)
    trace.source = str(PLAIN)
    assert cli(capsys, PLAIN) == summary_text(facts(trace), recording_facts(trace)) + "\n"
