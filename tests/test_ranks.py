"""Several ranks of one run (scripts/tracefacts/facts/ranks.py, `analyze.py DIR`): hand-worked NCCL traces of two
ranks, one late on purpose (tests/fixtures/synth.ddp_rank_trace's docstring works out every
number), agreement with HTA's communication-computation overlap on the same traces, the process
pool against the in-process path, and real gloo traces from snippets/09_ddp.py on the CPU."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from scripts.tracefacts.entry import cli as analyze
from scripts.tracefacts.facts.ranks import cross_rank, facts_of_rank, rank_facts, rank_files, read_ranks
from scripts.tracefacts.model.trace import build_trace
from tests.conftest import ROOT
from tests.fixtures.synth import Spec, ddp_rank_trace, synth_trace, write_trace

LATE_US = (0.0, 100.0)  # rank 1 a straggler by 100 us
STEPS = 3


def write_ranks(folder: Path, late=LATE_US, shift_us=(0.0, 0.0), base=True) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for rank in range(len(late)):
        trace = ddp_rank_trace(rank, late, steps=STEPS, clock_shift_us=shift_us[rank])
        if not base:
            del trace["baseTimeNanoseconds"]
        write_trace(trace, folder / f"ddp_rank{rank}.json.gz")
    return folder


@pytest.fixture(scope="module")
def ranks_dir(tmp_path_factory) -> Path:
    return write_ranks(tmp_path_factory.mktemp("ranks") / "run")


def test_hand_worked_numbers_of_a_straggler(ranks_dir):
    report = cross_rank(read_ranks(rank_files([ranks_dir]), workers=1))
    fast, slow = report.ranks
    assert (fast.rank, slow.rank) == (0, 1)
    # Per step (the fixture's docstring), times STEPS.
    assert fast.comm_us == pytest.approx(STEPS * 380) and slow.comm_us == pytest.approx(STEPS * 180)
    assert fast.compute_us == pytest.approx(STEPS * 750) == slow.compute_us
    assert fast.overlap_us == pytest.approx(STEPS * 200) and slow.overlap_us == pytest.approx(STEPS * 100)
    assert fast.overlap_pct == pytest.approx(100 * 200 / 380)
    assert slow.overlap_pct == pytest.approx(100 * 100 / 180)
    assert fast.wait_us == pytest.approx(STEPS * 200) and slow.wait_us == pytest.approx(0)
    assert report.matched_collectives == STEPS * 2 and not report.notes
    assert [s.name for s in report.steps] == [f"ProfilerStep#{n}" for n in range(2, 2 + STEPS)]
    for step in report.steps:
        assert (step.slowest, step.by) == (1, "last collective")
        assert step.behind_us == pytest.approx(100)
        assert step.wait_us[0] == pytest.approx(200) and step.wait_us[1] == pytest.approx(0)


def test_without_a_straggler_nobody_waits(tmp_path):
    report = cross_rank(read_ranks(rank_files([write_ranks(tmp_path, late=(0.0, 0.0))]), workers=1))
    assert all(row.wait_us == pytest.approx(0) for row in report.ranks)
    assert all(step.behind_us == pytest.approx(0) for step in report.steps)
    # Bucket 1 [510, 610] under backward B; bucket 2 [710, 790] after all compute but the optimizer.
    assert report.ranks[0].overlap_pct == pytest.approx(100 * 100 / 180)


def test_ranks_on_other_clocks_are_aligned_by_base_time(tmp_path):
    shifted = write_ranks(tmp_path / "shifted", shift_us=(0.0, 5e6))  # rank 1's clock 5 s behind
    same = cross_rank(read_ranks(rank_files([shifted]), workers=1))
    assert "baseTimeNanoseconds" in same.alignment
    assert [row.offset_us for row in same.ranks] == [pytest.approx(0), pytest.approx(0)]
    assert [s.behind_us for s in same.steps] == [pytest.approx(100)] * STEPS
    # Without baseTimeNanoseconds the raw clocks are taken as one: rank 1 seems 5 s early.
    blind = cross_rank(read_ranks(rank_files([write_ranks(tmp_path / "blind", shift_us=(0.0, 5e6),
                                                          base=False)]), workers=1))
    assert "own timestamps" in blind.alignment
    assert blind.ranks[0].offset_us == pytest.approx(5e6)


def test_process_pool_gives_what_the_single_process_gives(ranks_dir):
    files = rank_files([ranks_dir])
    assert len(files) == 2
    assert read_ranks(files, workers=2) == read_ranks(files, workers=1)


def test_ranks_named_only_by_file_or_not_at_all(tmp_path):
    trace = ddp_rank_trace(0, LATE_US)
    del trace["distributedInfo"]
    facts = facts_of_rank(build_trace(trace, source="run/trace_rank_7.json"))
    assert facts.rank == 7
    anonymous = replace(facts, rank=None)
    report = cross_rank([anonymous, anonymous])
    assert [row.rank for row in report.ranks] == [0, 1] and report.notes


def test_a_directory_without_traces_is_one_line(tmp_path, capsys):
    (tmp_path / "notes.txt").write_text("no trace here")
    assert analyze.main([str(tmp_path)]) == 2
    assert capsys.readouterr().err.count("\n") == 1


def test_analyze_reads_a_directory_as_text_and_json(ranks_dir, capsys):
    assert analyze.main([str(ranks_dir)]) == 0
    text = capsys.readouterr().out
    assert "2 ranks" in text and "ProfilerStep#2: rank 1" in text
    files = [str(p) for p in rank_files([ranks_dir])]
    assert analyze.main(["--ranks", *files, "--json", "--workers", "2"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert [r["rank"] for r in report["ranks"]] == [0, 1]
    assert {s["slowest"] for s in report["steps"]} == {1}


def test_ranks_refuse_single_trace_options(ranks_dir, capsys):
    with pytest.raises(SystemExit) as exit_info:
        analyze.main([str(ranks_dir), "--step", "2"])
    assert exit_info.value.code == 2 and "--step" in capsys.readouterr().err


def test_one_file_without_ranks_keeps_the_single_trace_report(ranks_dir, capsys):
    one = str(rank_files([ranks_dir])[0])
    assert analyze.main([one]) == 0
    assert "ranks, aligned" not in capsys.readouterr().out


# --- against HTA ------------------------------------------------------------------------------

def hta_overlap_pct(folder: Path, monkeypatch) -> dict[int, float]:
    """HTA's get_comm_comp_overlap per rank, at the traces' nanoseconds (no rounding)."""
    hta = pytest.importorskip("hta.trace_analysis")
    monkeypatch.setenv("HTA_DISABLE_NS_ROUNDING", "1")
    table = hta.TraceAnalysis(trace_dir=str(folder)).get_comm_comp_overlap(visualize=False)
    return dict(zip(table["rank"], table["comp_comm_overlap_pctg"]))


def ours_in_hta_scope(facts) -> float:
    """HTA leaves out the work of the last ProfilerStep (its default filter)."""
    kept = facts.steps[:-1]
    return 100 * sum(s.overlap_us for s in kept) / sum(s.comm_us for s in kept)


def test_overlap_agrees_with_hta_on_the_hand_worked_ranks(ranks_dir, monkeypatch):
    theirs = hta_overlap_pct(ranks_dir, monkeypatch)
    mine = {f.rank: ours_in_hta_scope(f) for f in read_ranks(rank_files([ranks_dir]), workers=1)}
    assert theirs.keys() == mine.keys() == {0, 1}
    for rank in mine:  # HTA rounds its percentage to 0.01
        assert mine[rank] == pytest.approx(theirs[rank], abs=0.006), (rank, mine, theirs)


@pytest.mark.parametrize("seed", [1, 2])
def test_overlap_agrees_with_hta_on_random_nccl_traces(tmp_path, monkeypatch, seed):
    spec = Spec(steps=3, ops_per_step=300, streams=(7, 20), nccl_every=7, seed=seed)
    write_trace(synth_trace(spec), tmp_path / "rank0.json.gz")
    mine = ours_in_hta_scope(rank_facts(tmp_path / "rank0.json.gz"))
    assert 0 < mine < 100
    assert mine == pytest.approx(hta_overlap_pct(tmp_path, monkeypatch)[0], abs=0.006)


# --- real ranks on the CPU --------------------------------------------------------------------


@pytest.mark.slow
def test_snippet_runs_two_gloo_ranks_and_the_straggler_is_found(tmp_path):
    """snippets/09_ddp.py on the CPU: two processes, gloo; rank 1 given 300 ms of host work per
    step, far above the noise of a loaded machine, so rank 0 waits for it in every step."""
    out = tmp_path / "traces"
    done = subprocess.run(
        [sys.executable, str(ROOT / "snippets" / "09_ddp.py"), "--device", "cpu", "--world_size", "2",
         "--layers", "2", "--d_model", "32", "--batch", "8", "--steps", "2", "--bucket_cap_mb", "0.005",
         "--straggler", "1", "--straggler_ms", "300", "--start_method", "fork", "--trace_dir", str(out)],
        capture_output=True, text=True, timeout=240, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    stem = "ddp_w2_bucket0p005_straggler1"
    assert sorted(p.name for p in out.iterdir()) == [f"{stem}_rank{r}.{ext}" for r in (0, 1)
                                                     for ext in ("json", "txt")]
    report = cross_rank(read_ranks(rank_files([out]), workers=2))
    assert "baseTimeNanoseconds" in report.alignment and not report.notes
    assert [row.rank for row in report.ranks] == [0, 1]
    assert all(row.measured == "host collectives" and row.comm_us > 0 for row in report.ranks)
    assert report.matched_collectives >= 2 * len(report.steps) == 4  # two buckets a step at least
    assert all(step.slowest == 1 and step.behind_us > 150_000 for step in report.steps)
    assert report.ranks[0].wait_us > report.ranks[1].wait_us
