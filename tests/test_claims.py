"""Claims held to the data: claims that fail the strict build with one message, samples digested
from a trace, and the listing command (how comparisons decide: tests/test_compare.py)."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from scripts.series.pages import claims
from scripts.series.pages.claims import LEDGER, SPREAD_PERCENTILES_FROM, claim, compare, samples, us, worded
from scripts.series.runs.samples import first_step_values, op_values, read_extra_runs, samples_of, step_values
from scripts.tracefacts.model.trace import build_trace
from tests.conftest import ROOT
from tests.fixtures.handmade import GEMM, TraceWriter


@pytest.fixture(autouse=True)
def fresh_ledger():
    LEDGER.clear()
    LEDGER.page = "docs/blog/posts/test.md"
    yield
    LEDGER.clear()


# --- comparisons: tests/test_compare.py ----------------------------------------------------------


def test_the_spread_is_the_range_below_ten_samples_and_p10_p90_from_there():
    few = samples([1.0, 2.0, 3.0, 100.0])
    assert (few.kind, few.low, few.high) == ("min–max", 1.0, 100.0)
    many = samples([10.0 + i * 0.1 for i in range(19)] + [100.0])
    assert many.n >= SPREAD_PERCENTILES_FROM and many.kind == "p10–p90" and many.high < 100.0


def test_spread_text_goes_through_the_one_formatter():
    assert samples([1500.0, 1000.0, 2000.0]).text() == "median 1.5 ms (1 ms to 2 ms, 3 samples)"
    assert samples([40.0]).text() == "40 us (one sample)"


# --- claims --------------------------------------------------------------------------------------


def test_a_claim_that_holds_is_printed_as_written():
    text = claim("A is **larger** than B.", True, runs=["x/a"], numbers={"A": us(5), "B": 3})
    assert text == "A is **larger** than B."
    (made,) = LEDGER.claims
    assert made.holds and made.runs == ("x/a",) and [n.text for n in made.numbers] == ["5 us", "3"]


def test_a_failing_claim_is_marked_and_its_message_names_page_claim_numbers_and_runs():
    text = claim("The GPU is **the bottleneck** here.", False, runs=["01_matmul_add/4096_bf16_cold_eager"],
                 numbers={"verdict": "mixed", "GPU busy": claims.pct(28.0)})
    assert text.startswith(claims.FAILS_MARK)
    (message,) = LEDGER.page_problems("docs/blog/posts/test.md")
    assert "\n" not in message
    for part in ("docs/blog/posts/test.md", "The GPU is the bottleneck here.", "verdict = mixed",
                 "GPU busy = 28%", "01_matmul_add/4096_bf16_cold_eager"):
        assert part in message


def test_worded_records_which_way_the_data_went():
    result = compare([1.0, 2.0, 3.0] * 4, [5.0, 6.0, 7.0] * 4, what="time", names=("warm", "cold"))
    text = worded(result, lower="warm was faster", higher="cold was faster", same="a tie")
    assert text.startswith("warm was faster<sup") and 'href="#numbers-a"' in text  # the marker of its note
    (made,) = LEDGER.claims
    assert made.holds and made.outcome == "lower" and made.statement == "warm was faster"
    assert {n.name for n in made.numbers} == {"time, warm", "time, cold", "time, warm / cold"}


def test_an_outcome_the_page_has_no_wording_for_fails_saying_what_it_expected():
    result = compare([5.0, 6.0, 7.0] * 4, [1.0, 2.0, 3.0] * 4, what="time", names=("compiled", "eager"))
    worded(result, lower="compiled was faster", same="a tie")
    (made,) = LEDGER.failing()
    message = made.message()
    assert made.outcome == "higher" and "the data says higher" in message
    assert "expects compiled's time below eager's or compiled's time about the same as eager's" in message
    assert "the data says compiled's time above eager's, 3×" in message


def test_one_claim_rendered_twice_is_recorded_once():
    for _ in range(2):
        claim("Once.", True, runs=[])
    assert len(LEDGER.claims) == 1


# --- samples ------------------------------------------------------------------------------------


def spilling_trace():
    """Two steps; the kernel launched in step 1 runs past its end, into step 2.

    host  ProfilerStep#1 [0, 100): aten::mm [8, 18], launch [10, 14] -> K [90, 130]
          ProfilerStep#2 [100, 200): aten::mm [105, 115], launch [107, 110] -> K [135, 145],
                                     aten::mm [150, 155]
    """
    w = TraceWriter()
    w.host_event("user_annotation", "ProfilerStep#1", 0, 100)
    w.host_event("cpu_op", "aten::mm", 8, 10)
    w.launch(10, 4, [("kernel", GEMM, 90, 40, 7)])
    w.host_event("user_annotation", "ProfilerStep#2", 100, 100)
    w.host_event("cpu_op", "aten::mm", 105, 10)
    w.launch(107, 3, [("kernel", GEMM, 135, 10, 7)])
    w.host_event("cpu_op", "aten::mm", 150, 5)
    return build_trace(w.trace())


def test_samples_attribute_gpu_work_to_the_step_that_launched_it():
    (one, two) = samples_of(spilling_trace())["steps"]
    assert (one["name"], one["dur_us"], two["dur_us"]) == ("ProfilerStep#1", 100, 100)
    assert one["gpu"] == {"busy_us": 40, "kernels": 1}  # all of it, though 30 us ran in step 2's time
    assert two["gpu"] == {"busy_us": 10, "kernels": 1}
    assert one["ops"]["aten::mm"] == {"first_us": 8, "total_us": 10, "count": 1}
    assert two["ops"]["aten::mm"] == {"first_us": 5, "total_us": 15, "count": 2}
    assert one["ops"]["cudaLaunchKernel"]["first_us"] == 10
    assert "ProfilerStep#1" not in one["ops"]


def test_values_across_runs_include_or_skip_each_runs_first_step_explicitly():
    digest = samples_of(spilling_trace())
    runs = [digest, digest]
    assert op_values(runs, "aten::mm", "first_us", skip_first=False) == [8, 5, 8, 5]
    assert op_values(runs, "aten::mm", "first_us", skip_first=True) == [5, 5]
    assert step_values(runs, "gpu.busy_us", skip_first=False) == [40, 10, 40, 10]
    assert first_step_values(runs, "dur_us") == [100, 100]
    assert op_values(runs, "aten::nothing", "count", skip_first=False) == []


def test_extra_runs_file_missing_good_and_malformed(tmp_path):
    path = tmp_path / "tag.samples.json"
    assert read_extra_runs(path) == []
    path.write_text(json.dumps({"format": 1, "runs": [samples_of(spilling_trace())]}))
    assert len(read_extra_runs(path)) == 1
    for bad in ("{not json", json.dumps({"format": 2, "runs": []}), json.dumps({"format": 1, "runs": [{"x": 1}]})):
        path.write_text(bad)
        with pytest.raises(ValueError) as err:
            read_extra_runs(path)
        assert str(err.value).startswith("tag.samples.json: ") and "\n" not in str(err.value)


def test_a_run_reads_the_shown_trace_and_the_extra_runs(tmp_path, monkeypatch):
    from scripts.series.pages import cache
    from scripts.series.runs import catalog
    from scripts.series.pages.helpers import Run

    monkeypatch.setattr(catalog, "TRACES", tmp_path / "traces")
    monkeypatch.setattr(cache, "CACHE_DIR", tmp_path / "cache")
    item = catalog.Example("snip", "tag")
    item.folder.mkdir(parents=True)
    w = TraceWriter()
    w.host_event("user_annotation", "ProfilerStep#1", 0, 100)
    w.host_event("cpu_op", "aten::mm", 8, 10)
    w.host_event("user_annotation", "ProfilerStep#2", 100, 100)
    w.host_event("cpu_op", "aten::mm", 112, 10)
    item.trace_path.write_bytes(gzip.compress(json.dumps(w.trace()).encode()))
    run = Run(item)
    assert run.op_samples("aten::mm", "first_us", skip_first=False).values == (8.0, 12.0)
    extra = samples_of(spilling_trace())
    (item.folder / "tag.samples.json").write_text(json.dumps({"format": 1, "runs": [extra, extra]}))
    run = Run(item)  # a new Run: the refresh wrote new artifacts
    spread = run.op_samples("aten::mm", "first_us", skip_first=True)
    assert spread.values == (12.0, 5.0, 5.0) and spread.runs == ("snip/tag",)


# --- the build -----------------------------------------------------------------------------------

PLANTED = '''# A page

```python exec="true"
from scripts.series.pages.claims import claim, us
print(claim("The compiled step is **cheaper** than the eager one.", {holds},
            runs=["01_matmul_add/4096_bf16_warm_compile", "01_matmul_add/4096_bf16_warm_eager"],
            numbers={{"compiled step": us(205.0), "eager step": us(75.5)}}))
```
'''


def tiny_project(tmp_path: Path, page: str) -> Path:
    """A project with the real claims hook and markdown-exec, and one page."""
    (tmp_path / "docs").mkdir(parents=True)
    (tmp_path / "docs" / "index.md").write_text(page)
    (tmp_path / "mkdocs.yml").write_text(
        "site_name: t\nhooks:\n  - " + (ROOT / "scripts" / "series" / "mkdocs_glue" / "ledger.py").as_posix()
        + "\nplugins:\n  - markdown-exec:\n      languages: [python]\n"
        "markdown_extensions:\n  - pymdownx.superfences\n")
    return tmp_path


def build(project: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mkdocs", "build", *args], cwd=project, capture_output=True,
                          text=True, env=dict(os.environ, NO_MKDOCS_2_WARNING="1"), timeout=300)


def test_a_contradicted_claim_fails_the_strict_build_with_one_message(tmp_path):
    project = tiny_project(tmp_path, PLANTED.format(holds="205.0 < 75.5"))
    done = build(project, "--strict", "--quiet")  # --quiet drops warnings: the failure is not one
    assert done.returncode != 0
    lines = [line for line in done.stderr.splitlines() if "claim does not hold" in line]
    assert len(lines) == 1, done.stderr
    for part in ("docs/index.md", "The compiled step is cheaper than the eager one.",
                 "compiled step = 205 us", "eager step = 75.5 us",
                 "01_matmul_add/4096_bf16_warm_compile, 01_matmul_add/4096_bf16_warm_eager"):
        assert part in lines[0]
    assert "Traceback" not in done.stderr and "exited with errors" not in done.stderr
    # the listing is written all the same, for `python -m scripts claims`
    assert [c.status for c in claims.read_listing(project / "site" / "claims.json")[0]] == ["fails"]


def test_without_strict_the_claim_only_warns_and_the_listing_says_it_fails(tmp_path):
    project = tiny_project(tmp_path, PLANTED.format(holds="205.0 < 75.5"))
    done = build(project)
    assert done.returncode == 0, done.stderr
    assert "WARNING" in done.stderr and "claim does not hold" in done.stderr
    listed, problems = claims.read_listing(project / "site" / "claims.json")
    assert [c.status for c in listed] == ["fails"] and listed[0].page == "docs/index.md"
    html = (project / "site" / "index.html").read_text()
    assert "Claim not supported by this run" in html


def test_a_claim_that_holds_builds_strict(tmp_path):
    project = tiny_project(tmp_path, PLANTED.format(holds="205.0 > 75.5"))
    done = build(project, "--strict")
    assert done.returncode == 0, done.stderr
    listed, problems = claims.read_listing(project / "site" / "claims.json")
    assert [c.status for c in listed] == ["holds"] and problems == []


def test_a_run_whose_numbers_a_page_uses_without_its_buttons_fails_the_strict_build(tmp_path):
    page = '''```python exec="true" html="true"
from scripts.series.pages.helpers import example
run = example("01_matmul_add/64_bf16_cold_eager")
print(run.total_us("Self CPU time total"))
{links}
```
'''
    done = build(tiny_project(tmp_path / "a", page.format(links="")), "--strict", "--quiet")
    assert done.returncode != 0
    (line,) = [line for line in done.stderr.splitlines() if "no download or Perfetto button" in line]
    assert "docs/index.md" in line and "01_matmul_add/64_bf16_cold_eager" in line
    done = build(tiny_project(tmp_path / "b", page.format(links="print(run.links())")), "--strict")
    assert done.returncode == 0, done.stderr


# --- the listing --------------------------------------------------------------------------------


def listing_site(tmp_path: Path, *holds: bool) -> Path:
    for n, ok in enumerate(holds):
        claim(f"claim {n}", ok, runs=["a/b"], numbers={"x": us(1.0)})
    tmp_path.mkdir()
    (tmp_path / "claims.json").write_text(json.dumps(LEDGER.to_json()))
    return tmp_path


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "scripts", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)


def test_claims_command_lists_each_claim_and_fails_if_one_does(tmp_path):
    done = run_cli("claims", "--site", str(listing_site(tmp_path / "ok", True, True)))
    assert done.returncode == 0, done.stderr
    assert "holds  docs/blog/posts/test.md: claim 0" in done.stdout and "x = 1 us" in done.stdout
    assert "runs: a/b" in done.stdout and "2 claim(s), 0 failing" in done.stdout
    LEDGER.claims.clear()
    done = run_cli("claims", "--site", str(listing_site(tmp_path / "bad", True, False)))
    assert done.returncode == 1 and "fails  docs/blog/posts/test.md: claim 1" in done.stdout


def test_claims_command_says_in_one_line_what_it_cannot_read(tmp_path):
    (tmp_path / "claims.json").write_text("{broken")
    done = run_cli("claims", "--site", str(tmp_path))
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1
    assert "Traceback" not in done.stderr


def test_the_refresh_path_does_not_import_the_claims_machinery():
    code = "import sys, scripts.series.cli; sys.exit(bool({'scripts.series.pages.claims', 'scripts.series.pages.helpers'} & set(sys.modules)))"
    assert subprocess.run([sys.executable, "-c", code], cwd=ROOT).returncode == 0
