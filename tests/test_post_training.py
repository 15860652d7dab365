"""The training step post and the guide's common mistakes: their helpers on hand-made traces whose
answers are worked out in tests/fixtures/handmade.py, and what the strict build puts on the pages
(which needs the frozen runs of scripts/series/runs/catalog.py's TRAINING and MISTAKES)."""

from __future__ import annotations

import gzip
import json
import re
from types import SimpleNamespace

import pytest

from scripts.series.pages import cache, claims
from scripts.series.pages.helpers import example
from scripts.series.pages.posts import training as P
from scripts.series.runs import catalog
from scripts.tracefacts.facts.analysis import facts
from scripts.tracefacts.model.trace import load_trace
from tests.conftest import ROOT
from tests.fixtures.handmade import ADD, GEMM, TraceWriter, host_syncs, training_steps, two_steps
from tests.fixtures.synth import write_trace

POST = "docs/blog/posts/training-step.md"
POST_URL = "blog/training-step/index.html"
GUIDE = "docs/guide/common-mistakes.md"
GUIDE_URL = "guide/common-mistakes/index.html"


class Fake:
    """What the helpers read of a scripts.series.pages.helpers.Run, over a hand-made trace."""

    def __init__(self, path, extra: dict | None = None):
        self.trace = load_trace(path)
        self.trace_input = cache.FileInput(path, lambda: self.trace)
        self.example = SimpleNamespace(key="synthetic/run", trace_path=path, extra_paths=extra or {})

    def trace_facts(self, window=None):
        return facts(self.trace, window=window)


def fake(tmp_path, data: dict, name: str = "t.json.gz", **kwargs) -> Fake:
    return Fake(write_trace(data, tmp_path / name), **kwargs)


def test_phases_per_step_are_the_analyzers(tmp_path):
    run = fake(tmp_path, training_steps())
    assert P.phase_samples(run, "backward", "host_us").values == (23.0,)
    assert P.phase_samples(run, "optimizer", "launches").values == (3.0,)
    assert P.phase_samples(run, "forward", "gpu_pct").unit == "%"
    assert P.largest_phase(run) == "backward" and P.largest_phase(run, "host_us") == "forward"
    html = str(P.phase_table(run, "caption"))
    assert html.count("<tr>") == 1 + 5 and ">backward<" in html


def test_a_phase_with_nothing_in_it_can_be_left_out_of_the_table(tmp_path):
    data = training_steps()
    data["traceEvents"] = [e for e in data["traceEvents"] if not e["name"].startswith("enumerate(DataLoader)")]
    run = fake(tmp_path, data)
    assert P.phase_samples(run, "data", "host_us").values == (0.0,)
    assert ">data<" in str(P.phase_table(run, "caption"))
    html = str(P.phase_table(run, "caption", empty=False))
    assert html.count("<tr>") == 1 + 4 and ">data<" not in html and ">other<" in html


def test_a_trace_without_training_says_so(tmp_path):
    with pytest.raises(ValueError, match="no training step"):
        P.training(fake(tmp_path, two_steps()))


def test_drains_idle_time_and_the_analyzers_words(tmp_path):
    run = fake(tmp_path, host_syncs())
    assert P.drains_per_step(run).values == (1.0, 1.0)
    assert P.drains_per_step(run, skip_last=True).values == (1.0,)  # the last step's sync may drain nothing
    assert P.drain_calls(run) == {"cudaMemcpyAsync": 1, "cudaDeviceSynchronize": 1}
    assert P.copies_back(run) == ["Memcpy DtoH (Device -> Pageable)"]
    assert P.idle_after_drains(run).values == (35.0, 15.0)
    section = P.sync_section(run)
    assert section.startswith("```text\nhost syncs") and section.endswith("\n```")
    assert "waiting for Memcpy DtoH (Device -> Pageable)" in section


def test_a_name_with_backticks_cannot_close_the_section(tmp_path):
    data = host_syncs()
    for event in data["traceEvents"]:
        if event["name"] == "log loss":
            event["name"] = "log ```` loss"
    section = P.sync_section(fake(tmp_path, data))
    assert section.startswith("`````text\n") and section.endswith("\n`````")


def test_gpu_period_and_the_gap_before_each_steps_first_kernel(tmp_path):
    # host_syncs: step 1 launches K1 (starts at 10) and ends with K2 at 96; step 2 launches K3 and
    # K5 (the first starts at 105) and ends with K4 at 190.
    run = fake(tmp_path, host_syncs())
    assert P.gpu_period(run).values == (94.0,)
    assert P.first_kernel_gap(run).values == (10.0, 5.0)


def side_stream_steps() -> dict:
    """Three host steps of 10 us, each launching the next batch's 10 us copy on stream 13 and a 20 us
    product on stream 7: the GPU runs behind, the copies back to back from 10, the products back to
    back from 20, so each copy runs ahead, under an earlier product. A kernel launched before the
    recording runs at [0, 5] with no launch call in the trace."""
    w = TraceWriter()
    w.events.append({"ph": "X", "cat": "kernel", "name": ADD, "pid": 0, "tid": 7, "ts": 0, "dur": 5,
                     "args": {"device": 0, "stream": 7, "correlation": 999}})
    for k in range(3):
        w.host_event("user_annotation", f"ProfilerStep#{k}", 10 * k, 10)
        w.launch(10 * k, 1, [("gpu_memcpy", "Memcpy HtoD (Pinned -> Device)", 10 + 10 * k, 10, 13)],
                 api="cudaMemcpyAsync")
        w.launch(10 * k + 2, 1, [("kernel", GEMM, 20 + 20 * k, 20, 7)])
    return w.trace()


def test_a_side_stream_running_ahead_neither_shortens_the_period_nor_counts_twice(tmp_path):
    run = fake(tmp_path, side_stream_steps())
    # Each step's work ends with its product, 20 us after the last one's; the copies start 10 us
    # apart, running ahead, and do not make the step look shorter.
    assert P.gpu_period(run).values == (20.0, 20.0)
    # The kernel with no launch call (from before the recording) is no step's: step 0's gap is 10, not 0.
    assert P.first_kernel_gap(run).values == (10.0, 10.0, 10.0)
    found = P.overlap(run)  # copies [10, 40], products [20, 80]: 90 added up, 70 busy
    assert (found.summed_us, found.busy_us, found.overlapped_us, found.streams) == (90.0, 70.0, 20.0, 2)


def test_overlap_counts_two_streams_once(tmp_path):
    # two_steps: step 1 runs K1 30, K2 10 and a 5 us copy on stream 7; step 2 runs K4 [120, 160]
    # on stream 7 and the NCCL kernel [130, 150] on stream 20, inside it.
    found = P.overlap(fake(tmp_path, two_steps()))
    assert (found.summed_us, found.busy_us, found.overlapped_us, found.streams) == (105.0, 85.0, 20.0, 2)


def test_arrows_are_counted_by_category(tmp_path):
    data = training_steps()
    data["traceEvents"] += [{"ph": "s", "cat": "fwdbwd", "id": 1, "pid": 1, "tid": 1, "ts": 15},
                            {"ph": "f", "cat": "fwdbwd", "id": 1, "pid": 1, "tid": 2, "ts": 40, "bp": "e"},
                            {"ph": "s", "cat": "ac2g", "id": 2, "pid": 1, "tid": 1, "ts": 15}]
    run = fake(tmp_path, data)
    assert P.arrows(run) == 1 and P.arrows(run, "ac2g") == 1


def write_extra(path, doc: dict):
    path.write_bytes(gzip.compress(json.dumps(doc).encode()))
    return path


def test_ncu_rows_become_numbers(tmp_path):
    columns = ["Kernel Name", "Block Size", "Grid Size", "CC", "Section Name", "Metric Name", "Metric Unit",
               "Metric Value"]
    rows = [["k", "(128, 1, 1)", "(264, 1, 1)", "9.0", "GPU Speed Of Light Throughput", "Duration", "us", "1,234.5"],
            ["k", "(128, 1, 1)", "(264, 1, 1)", "9.0", "Occupancy", "Achieved Occupancy", "%", "40.12"],
            ["k", "(128, 1, 1)", "(264, 1, 1)", "9.0", "Occupancy", "Limiting", "", "Registers"]]
    extra = write_extra(tmp_path / "x.ncu.json.gz", {"kernel": "k", "command": "ncu ...", "columns": columns,
                                                     "rows": rows})
    run = fake(tmp_path, two_steps(), extra={"ncu": extra})
    measured = P.ncu(run)
    assert measured.error is None and measured.value("GPU Speed Of Light Throughput", "Duration") == 1234.5
    assert measured.unit("Occupancy", "Achieved Occupancy") == "%"
    with pytest.raises(ValueError, match="not a number"):
        measured.value("Occupancy", "Limiting")
    html = str(P.ncu_table(measured, "caption"))
    assert "1,234.5" in html and "40.12" in html and "Registers" in html
    assert measured.outcome == "measured"
    failed = write_extra(tmp_path / "y.ncu.json.gz", {"kernel": "k", "command": "ncu ...", "error": "ncu not found"})
    not_run = P.ncu(fake(tmp_path, two_steps(), "u.json.gz", extra={"ncu": failed}))
    assert not_run.error == "ncu not found" and not_run.outcome == "not run" and not_run.listed_form() is None


KERNEL = ("void at::native::reduce_kernel<128, 4, at::native::ReduceOp<c10::BFloat16, float, unsigned int, "
          "c10::BFloat16, 4, 8> >(at::native::ReduceOp<c10::BFloat16, float, unsigned int, c10::BFloat16, 4, 8>)")


@pytest.mark.parametrize("error, outcome", [
    # ncu's list of the kernels it saw, when its filter matched none (the snippet keeps the last line)
    ("ncu failed: 56. void cudnn::fusion::convert_dq_to_16bits<(bool)1>(const void *, void *, ", "no match"),
    ("ncu measured no launch of the kernel: ==WARNING== No kernels were profiled.", "no match"),
    ("ncu failed: ==ERROR== ERR_NVGPUCTRPERM - The user does not have permission", "not run"),
    ("ncu did not finish in 240 s", "not run"),
])
def test_what_an_ncu_error_says_happened(tmp_path, error, outcome):
    doc = {"kernel": KERNEL, "command": "ncu --clock-control none --kernel-name-base demangled ...", "error": error}
    measured = P.ncu(fake(tmp_path, two_steps(), extra={"ncu": write_extra(tmp_path / "e.ncu.json.gz", doc)}))
    assert measured.outcome == outcome and measured.name_base == "demangled"
    assert measured.listed_form() == (("convert_dq_to_16bits", "(bool)1") if "(bool)1" in error else None)


def test_the_kernel_is_named_as_ncus_function_filter_names_it():
    assert P.function_name(KERNEL) == "reduce_kernel"
    assert P.template_head(KERNEL) == "reduce_kernel<128, …>"
    assert P.function_name(GEMM) == P.template_head(GEMM) == GEMM
    assert P.function_name("void at::native::(anonymous namespace)::k<float>(long)") == "k"
    assert P.template_head("void cutlass::Kernel2<cutlass_80_wmma>(Params)") == "Kernel2<cutlass_80_wmma>"
    command = P.ncu_command(KERNEL)
    assert "--kernel-name-base function --kernel-name regex:^reduce_kernel$" in command
    assert "--clock-control none" in command and "--launch-skip SKIP --launch-count 1" in command


def test_the_post_shows_ncus_numbers_once_a_run_has_them(monkeypatch, capsys):
    """The frozen run's ncu step measured nothing; a run that measures must put its numbers on the
    same page: the post's Nsight blocks, run on a measurement, print the table and the claims."""
    source = (ROOT / POST).read_text()
    blocks = re.findall(r'```python exec="true"[^\n]*session="training"\n(.*?)```', source, re.S)
    found = P.ncu(example("14_ncu_top_kernel/ncu_b16_s256_l6_d512"))
    sol, occupancy = "GPU Speed Of Light Throughput", "Occupancy"
    measured = P.Measured(found.kernel, "ncu --kernel-name-base function ...", None, {
        f"{sol}: Compute (SM) Throughput": (31.2, "%"), f"{sol}: Memory Throughput": (78.5, "%"),
        f"{occupancy}: Achieved Occupancy": (61.0, "%"), f"{occupancy}: Theoretical Occupancy": (100.0, "%")})
    monkeypatch.setattr(P, "ncu", lambda run: measured)
    monkeypatch.setattr(claims, "LEDGER", claims.Ledger())  # the claims of this rehearsal stay here
    names = {}
    exec(blocks[0], names)
    nsight = [b for b in blocks if "m = P.ncu(top)" in b or " m." in b or "(m." in b]
    assert len(nsight) == 5
    for block in nsight:
        exec(block, names)
    shown = capsys.readouterr().out
    assert "ncu measured one launch of it" in shown and "measured nothing" not in shown
    assert ">Achieved Occupancy<" in shown and "**78%**" in shown
    assert "The memory system is the nearer to its peak" in shown
    assert all(c.holds for c in claims.LEDGER.claims) and len(claims.LEDGER.claims) == 4


# --- the built pages (they need the frozen runs) -------------------------------------------------------


def page_claims(built_site, page):
    listed, problems = claims.read_listing(built_site / "claims.json")
    return [c for c in listed if c.page == page], [p for p in problems if page in p]


def test_the_post_states_its_findings_as_claims_that_hold(built_site):
    mine, problems = page_claims(built_site, POST)
    assert len(mine) >= 15 and all(c.holds and c.runs for c in mine), [c.short for c in mine if not c.holds]
    assert not problems


def test_the_post_reads_in_fifteen_minutes_with_at_most_two_facts_boxes_open_and_every_run_to_open(built_site):
    html = (built_site / POST_URL).read_text()
    assert "Traceback" not in html
    # A post a learner finishes: at most 15 minutes by Material's estimate, at most two open facts boxes.
    minutes = int(re.search(r"(\d+) min read", html).group(1))
    assert minutes <= 15
    assert html.count('class="admonition abstract facts"') <= 2
    files = set(re.findall(r'data-file="([^"]+)"', html))
    assert {e.trace_path.name for e in catalog.TRAINING} <= files


def test_the_post_says_what_ncu_did_in_its_own_words(built_site):
    html = (built_site / POST_URL).read_text()
    measured = P.ncu(example("14_ncu_top_kernel/ncu_b16_s256_l6_d512"))
    assert "--kernel-name-base function" in html  # the command a reader can run
    assert "ncu failed" not in html  # the frozen error line is not printed
    if measured.outcome == "measured":
        assert ">Achieved Occupancy<" in html and "measured nothing" not in html
    else:
        assert "measured nothing" in html and ">Achieved Occupancy<" not in html


def test_the_guide_shows_each_mistake_on_a_run(built_site):
    mine, problems = page_claims(built_site, GUIDE)
    assert len(mine) >= 6 and all(c.holds for c in mine), [c.short for c in mine if not c.holds]
    assert not problems
    html = (built_site / GUIDE_URL).read_text()
    assert "Traceback" not in html
    assert {e.trace_path.name for e in catalog.MISTAKES} <= set(re.findall(r'data-file="([^"]+)"', html))


def test_a_table_cut_to_some_rows_keeps_their_order_and_the_foot():
    run = example("train_step/train_b16_s3")
    html = str(P.table_rows(run, ("aten::mm", "ProfilerStep*", "forward", "no such op"), "caption"))
    shown = html.split("<template")[0]  # the view a reader sees first
    assert shown.index(">ProfilerStep*<") < shown.index(">aten::mm<")  # the table's order
    assert "Self CPU time total" in shown and ">aten::copy_<" not in html
    # `forward` has two rows, the label's and its copy on the GPU's row: the first is kept
    assert shown.count('scope="row"><code>') == 3 and shown.count(">forward<") == 1
