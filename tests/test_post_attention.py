"""Part 3 (attention): the strict build holds its story (the naive table and call, the hidden
copy's picture, the side-by-side table, the fused run's picture), every run's links, its reading
time and its open facts boxes."""

from __future__ import annotations

import re

import pytest

from scripts.series.runs import catalog
from tests.conftest import ROOT
from tests.post_helpers import FakeRun, gpu_names_typed
from tests.test_site import parse, resolve

PAGE = "blog/attention/index.html"
RAN = [e for e in catalog.PART3 if e.trace_path.exists()]
REFUSED = [e for e in catalog.PART3 if e.unavailable_path.exists()]
TRITON = catalog.get("04_attention/triton_b8_h16_s1024_d64_bf16_warm")  # Part 5's example, shown here too
SHOWN = RAN + [TRITON]  # every run whose trace the page offers


@pytest.fixture(scope="module")
def page(built_site):
    html = (built_site / PAGE).read_text()
    return html, parse(html)


def test_every_part3_example_is_frozen_one_way_or_the_other():
    assert len(RAN) == 6 and len(REFUSED) == 2
    assert {e.key for e in RAN} | {e.key for e in REFUSED} == {e.key for e in catalog.PART3}


def test_page_has_no_execution_errors(page):
    html, _ = page
    assert "Traceback" not in html
    assert "exited with errors" not in html


def test_a_learner_finishes_it(page):
    """At most 15 minutes by Material's estimate, and at most two facts boxes open (none folded
    away here: the post keeps two and drops the rest)."""
    html, _ = page
    assert int(re.search(r"(\d+) min read", html)[1]) <= 15
    assert 1 <= html.count('<div class="admonition abstract facts"') <= 2
    assert "compute-bound" not in html  # naive attention is GPU-bound with memory-bound kernels


def test_the_naive_table_and_one_call_show_the_hidden_copy(page):
    html, _ = page
    tables = re.findall(r'<table class="prof"><caption>uv run .*?</table>', html, flags=re.S)
    assert len(tables) == 1  # the naive run's: the others are in the companion notebook
    for row in (">aten::masked_fill<", ">aten::clone<", ">aten::copy_<", ">aten::_softmax<"):
        assert row in tables[0], row
    (call,) = re.findall(r"<caption>Naive attention: the GPU activities[^<]*</caption>.*?</table>", html, flags=re.S)
    assert "Memcpy DtoD" in call and "cudaMemcpyAsync" in call
    assert call.count("<tr>") == 8  # the head row, five kernels, the copy and the memset
    for work in ("matrix math", "memory-bound kernels", "copies and memsets"):  # the analyzer's work classes
        assert work in call, work


def test_side_by_side_table_has_one_row_per_variant_and_no_spreads(page):
    html, _ = page
    table = re.search(r"<caption>Causal attention,.*?</table>", html, flags=re.S).group(0)
    for name in ("naive", "in place", "SDPA, <code>math</code>", "SDPA, <code>efficient</code>",
                 "SDPA, <code>flash</code>", "SDPA, <code>cudnn</code>", "our Triton kernel"):
        assert name in table, name
    assert table.count("<tr>") == 8  # the head row and seven variants
    assert table.count("<!-- quoted -->") == 5  # the series' GPU times, where it gave one
    assert "samples" not in table and " to " not in table  # the spreads are in a note at the foot
    assert 'class="numbers-ref"' in table
    # the slow variants are GPU-bound; the quickest fused ones hand some of the pace to the host
    # (overhead-bound or mixed, by the GPU's run)
    verdicts = set(re.findall(r"<td>(GPU-bound|overhead-bound|mixed|stalled)</td>", table))
    assert "GPU-bound" in verdicts and verdicts & {"overhead-bound", "mixed"}, verdicts


def test_refused_runs_are_said_and_their_reasons_are_in_the_notebook(page):
    html, _ = page
    assert "In fp32, <code>flash</code> and <code>cudnn</code> refuse" in html
    notebook = (ROOT / "docs/notebooks/part-3-attention.ipynb").read_text()
    for example in REFUSED:
        assert example.key in notebook


def test_timelines_of_the_naive_and_the_quickest_fused_run(built_site, page):
    _, elements = page
    images = [a["src"] for a in elements.find("img") if "timelines/04_attention/" in a.get("src", "")]
    assert len(images) == 2
    for src in images:
        svg = resolve(built_site, PAGE, src)
        assert svg.is_file() and svg.read_text().lstrip().startswith(("<svg", "<?xml"))
    assert not any("fp32" in src for src in images)


def test_download_links_and_perfetto_buttons_serve_the_frozen_traces(built_site, page):
    _, elements = page
    # Trace downloads (the companion notebook's download is tests/test_notebooks.py's)
    downloads = [a for a in elements.find("a") if "download" in a and a["href"].endswith(".json.gz")]
    assert len(downloads) == len(SHOWN)
    for link in downloads:
        served = resolve(built_site, PAGE, link["href"])
        frozen = ROOT / "traces" / served.relative_to(built_site / "traces")
        assert served.read_bytes() == frozen.read_bytes()
    buttons = elements.find("button", **{"class": "perfetto-open"})
    assert len(buttons) == len(SHOWN)
    for button in buttons:
        assert resolve(built_site, PAGE, button["data-trace"]).is_file()


def test_kernel_names_are_escaped(page):
    html, _ = page
    assert "masked_fill_kernel(at::TensorIterator&amp;" in html
    assert "elementwise_kernel&lt;128, 4" in html
    assert "elementwise_kernel<128" not in html


def test_previous_and_next_links(built_site, page):
    html, elements = page
    previous = [a["href"] for a in elements.find("a") if "linear-mlp" in a.get("href", "")]
    assert previous, "no link to Part 2"
    for href in previous:
        assert resolve(built_site, PAGE, href).is_file(), href
    following = [a["href"] for a in elements.find("a") if "llm-inference" in a.get("href", "")]
    assert following, "no link to Part 4"
    for href in following:
        assert resolve(built_site, PAGE, href).is_file(), href


def test_blog_index_shows_only_the_excerpt(built_site):
    index = (built_site / "blog" / "index.html").read_text()
    assert "attention/" in index
    assert "Naive attention: where the GPU time goes" not in index


# --- held to its data -----------------------------------------------------------------------------

SOURCE = ROOT / "docs/blog/posts/part-3-attention.md"
NAIVE = "04_attention/naive_b8_h16_s1024_d64_bf16_warm"


def test_page_claims_all_hold_and_cover_the_findings(built_site):
    from scripts.series.pages.claims import read_listing

    claims, _ = read_listing(built_site / "claims.json")
    ours = [c for c in claims if c.page.endswith("part-3-attention.md")]
    assert ours and all(c.holds for c in ours)
    said = " ".join(c.statement for c in ours)
    # (the listing keeps each statement's start, without Markdown)
    for finding in ("Memcpy DtoD", "naive attention is GPU-bound", "memory-bound kernels", "matrix math",
                    "refuse on the first call", "checks its output against SDPA"):
        assert finding in said, finding
    outcomes = {c.outcome for c in ours}
    # findings that could go either way are worded from the data, whichever way it went
    assert outcomes & {"quicker", "not by speed", "none"}
    # comparisons are worded from the ratio of the medians (or say there are too few samples)
    from scripts.series.pages.claims import OUTCOMES
    assert set(OUTCOMES) & outcomes
    # every run the side-by-side table reads is named by the claim about the verdicts
    verdicts = next(c for c in ours if c.outcome in {"quicker", "not by speed", "none"})
    assert {r.split("/")[1].split("_b8")[0] for r in verdicts.runs} == {
        "sdpa_efficient", "sdpa_flash", "sdpa_cudnn", "triton"}


def test_naive_picture_draws_the_hidden_copy(built_site, page):
    """The naive attention timeline reaches past its step's host side to the copy the step launched."""
    _, elements = page
    naive = catalog.get(NAIVE)
    src = next(a["src"] for a in elements.find("img")
               if re.search(rf"timelines/04_attention/{naive.tag}_[^/]*us\.svg$", a.get("src", "")))
    assert "Memcpy DtoD" in resolve(built_site, PAGE, src).read_text()


def test_no_gpu_name_typed_in_the_prose():
    assert not gpu_names_typed(SOURCE)


# --- the helpers (scripts/series/pages/posts/part3.py) ---------------------------------------------------------

from scripts.series.pages.claims import samples  # noqa: E402
from scripts.series.pages.helpers import example  # noqa: E402
from scripts.series.pages.posts import part3 as Q  # noqa: E402
from scripts.tracefacts.model.trace import Window, build_trace  # noqa: E402
from tests.timeline_traces import HOST_PID, STREAM, _Launcher, _metadata, _top_level  # noqa: E402


def attention_like_trace(second: str = "nvjet_sm90_b") -> FakeRun:
    """Two recorded steps of one `attention` call each (a GEMM, a copy, a second GEMM named
    `second`), the GPU far behind the host, and a kernel spilled in from before the recording (no
    launch in the trace)."""
    emit = _Launcher(HOST_PID)
    emit.events.append({"ph": "X", "cat": "kernel", "name": "nvjet_spilled", "pid": 0, "tid": STREAM, "ts": 5.0,
                        "dur": 300.0, "args": {"device": 0, "stream": STREAM, "correlation": 1}})
    for step, t in enumerate((0.0, 200.0)):
        emit.op(f"ProfilerStep#{step + 2}", t, 190.0, cat="user_annotation")
        emit.op("attention", t + 5, 180.0, cat="user_annotation")
        gpu_at = 400.0 + 500.0 * step
        emit.launch("aten::bmm", t + 10, gpu_at, 100.0, kernel="nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_TNT")
        emit.launch("aten::copy_", t + 40, gpu_at + 100, 50.0, kernel="Memcpy DtoD (Device -> Device)",
                    cat="gpu_memcpy", call="cudaMemcpyAsync")
        emit.launch("aten::bmm", t + 70, gpu_at + 200, 100.0, kernel=second)
    return FakeRun(build_trace(_top_level(_metadata() + emit.events)))


def test_calls_count_only_what_their_launches_started():
    run = attention_like_trace()
    cs = Q.calls(run)
    assert len(cs) == 2 and [c.count("kernel") for c in cs] == [2, 2] and [c.count("memcpy") for c in cs] == [1, 1]
    stats = Q.call_stats(run)
    assert (stats.kernels, stats.memcpy, stats.memset, stats.n_calls) == ([2], [1], [0], 2)
    assert "nvjet_spilled" not in {k.name for k in stats.kernels_run}  # no launch in the trace: not counted
    assert Q.gpu_samples(run).values == (250.0, 250.0)  # the union of its three activities, not their span


def test_gpu_time_per_call_takes_the_extra_runs_only_where_steps_and_calls_agree():
    run = attention_like_trace()
    # the shown trace's steps as the digests give them: the first holds the spilled kernel's 300 us
    spilled = [{"steps": [{"gpu": {"busy_us": 550.0}}, {"gpu": {"busy_us": 250.0}}]}]
    extra = [{"steps": [{"gpu": {"busy_us": 240.0}}, {"gpu": {"busy_us": 260.0}}]}]
    run.samples = lambda: spilled + extra
    assert Q.gpu_samples(run).values == (250.0, 250.0)  # a step is not its call here: the calls alone
    run.samples = lambda: [{"steps": [{"gpu": {"busy_us": 250.0}}, {"gpu": {"busy_us": 250.0}}]}] + extra
    assert Q.gpu_samples(run).values == (250.0, 250.0, 240.0, 260.0)
    run.samples = lambda: [{"steps": [{"gpu": {"busy_us": 250.0}}, {"gpu": {"busy_us": 250.0}}]}]
    assert Q.gpu_samples(run).values == (250.0, 250.0)  # no extra runs


def test_frozen_runs_samples_are_their_calls_and_steps_only_where_no_work_spilled_in():
    """GPU time per call starts with the shown trace's calls; a run whose recorded steps hold
    earlier work too (its GPU ran behind: the math backend on our GPUs, sometimes the naive run's
    first step) adds no step of its extra runs."""
    from scripts.series.runs.samples import step_values

    for key in ("naive", "sdpa_math", "sdpa_cudnn"):
        run = example(f"04_attention/{key}_b8_h16_s1024_d64_bf16_warm")
        calls = [c.gpu_busy_us for c in Q.calls(run)]
        steps = step_values(run.samples()[:1], "gpu.busy_us", skip_first=False)
        found = Q.gpu_samples(run).values
        assert found[:len(calls)] == tuple(calls), key
        if steps != pytest.approx(calls, abs=1e-3):
            assert len(found) == len(calls), key


def test_copy_window_reaches_the_copy_its_step_launched():
    run = attention_like_trace()
    window = Q.copy_window(run, 3)
    assert window.start == 200.0 and window.end > 1050.0  # the copy of the second call ends at 1050
    assert [a.ts for a in Q.activities_within(run, window, "memcpy")] == [500.0, 1000.0]
    with pytest.raises(LookupError):
        Q.copy_window(FakeRun(build_trace(_top_level(_metadata() + _no_copy_events()))), 2)


def _no_copy_events():
    emit = _Launcher(HOST_PID)
    emit.op("ProfilerStep#2", 0.0, 100.0, cat="user_annotation")
    emit.op("attention", 5.0, 90.0, cat="user_annotation")
    emit.launch("aten::bmm", 10.0, 20.0, 10.0)
    return emit.events


def test_frozen_naive_run_copy_window_contains_a_copy_of_its_step():
    run = example(NAIVE)
    window = Q.copy_window(run, 4)
    step = Q.step_window(run, 4)
    copies = Q.activities_within(run, window, "memcpy")
    launched_here = [a for a in copies if step.start <= run.trace.launch_of(a).ts < step.end]
    assert launched_here
    # the window reaches the end of the copies the step launched, wherever the GPU ran them
    assert window.end >= max(a.end for a in launched_here)


def test_spreads_note_says_the_kind_and_count_once_when_every_row_shares_them():
    a, b = samples([4.0, 5.0, 6.0]), samples([1.0, 2.0, 3.0])
    assert Q.spreads_note("GPU time per call", {"x": a, "y": b}) == (
        "GPU time per call, min–max of 3 samples each: x 4 us to 6 us; y 1 us to 3 us.")
    c = samples([1.0, 2.0])
    assert Q.spreads_note("t", {"x": a, "z": c}) == (
        "t, spreads: x 4 us to 6 us (min–max, 3 samples); z 1 us to 2 us (min–max, 2 samples).")


def test_sdpa_check_reads_the_line_the_triton_run_prints_under_its_table(tmp_path):
    from types import SimpleNamespace

    printed = tmp_path / "run.txt"
    printed.write_text("--- table ---\nSelf CUDA time total: 1us\n\nmatches SDPA (is_causal=True): max abs difference 0.004\n")
    run = SimpleNamespace(example=SimpleNamespace(table_path=printed))
    assert Q.sdpa_check(run) == "matches SDPA (is_causal=True): max abs difference 0.004"
    printed.write_text("--- table ---\n")
    assert Q.sdpa_check(run) is None
    assert Q.sdpa_check(example(TRITON.key)).startswith("matches SDPA")


def test_rows_table_names_each_activitys_work_class_and_escapes_names():
    html = str(Q.rows_table(attention_like_trace("<script>alert(1)</script>"), "caption"))
    assert html.count("<tr>") == 4  # the head row and the call's three activities
    # the analyzer's classes: a name it reads, a copy whatever its name, a name it does not read
    assert [html.count(f">{w}<") for w in ("matrix math", "copies and memsets", "unknown")] == [1, 1, 1]
    assert "&lt;script&gt;" in html and "<script>" not in html


def test_arch_of_reads_the_sm_tag():
    assert Q.arch_of("sm80_xmma_gemm_f32f32") == "sm80"
    assert Q.arch_of("fmha_cutlassF_bf16_aligned_64x64_rf_sm80(PyTorchMemEffAttention::AttentionKernel<"
                     "cutlass::arch::Sm80>)") == "sm80"
    assert Q.arch_of("cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma") == "sm90"
    assert Q.arch_of("void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<64>>") is None
    assert Q.arch_of("asm900_kernel") is None
