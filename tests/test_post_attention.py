"""Part 3 (attention): the strict build holds its tables, pictures, links and the refused rows."""

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


def test_profiler_tables_of_every_run(page):
    html, _ = page
    tables = re.findall(r'<table class="prof"><caption>uv run .*?</table>', html, flags=re.S)
    assert len(tables) == len(RAN)
    text = "\n".join(tables)
    for row in (">aten::masked_fill<", ">aten::clone<", ">aten::masked_fill_<",
                ">aten::_scaled_dot_product_attention_math<", ">aten::_safe_softmax<",
                ">aten::_efficient_attention_forward<", ">aten::_flash_attention_forward<",
                ">aten::_cudnn_attention_forward<", ">cuLaunchKernelEx<"):
        assert row in text, row


def test_per_call_tables_show_the_hidden_copy_and_the_math_kernels(page):
    html, _ = page
    calls = re.findall(r"<caption>(?:Naive|In-place|SDPA, math)[^<]*</caption>.*?</table>", html, flags=re.S)
    assert len(calls) == 3
    naive, inplace, math = calls
    assert "Memcpy DtoD" in naive and "cudaMemcpyAsync" in naive
    assert "Memcpy DtoD" not in inplace
    assert naive.count("<tr>") == inplace.count("<tr>") + 1
    assert math.count("<tr>") == 21  # the head row and twenty kernels
    for op in ("aten::ones", "aten::tril", "aten::_safe_softmax", "aten::to"):
        assert op in math, op
    assert "sm80_xmma_gemm_f32f32" in math


def test_backend_comparison_keeps_the_refused_rows_with_their_reason(page):
    html, _ = page
    table = re.search(r"<caption>Causal attention,.*?</table>", html, flags=re.S).group(0)
    for name in ("naive", "in place", "SDPA, <code>math</code>", "SDPA, <code>efficient</code>",
                 "SDPA, <code>flash</code>", "SDPA, <code>cudnn</code>"):
        assert name in table, name
    for example in REFUSED:
        reason = example.unavailable_path.read_text().strip()
        assert "unavailable:" in table
        # the reason is shown escaped, word for word
        assert reason.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;") in table
    assert table.count("<!-- quoted -->") == 6
    assert "13%" in table  # flash's occupancy estimate, from the trace


def test_timelines_exist_for_every_run_and_none_for_refused(built_site, page):
    _, elements = page
    images = [a["src"] for a in elements.find("img") if "timelines/04_attention/" in a.get("src", "")]
    assert len(images) == len(RAN)
    for src in images:
        svg = resolve(built_site, PAGE, src)
        assert svg.is_file() and svg.read_text().lstrip().startswith(("<svg", "<?xml"))
    assert not any("fp32" in src for src in images)


def test_download_links_and_perfetto_buttons_serve_the_frozen_traces(built_site, page):
    _, elements = page
    # Trace downloads (the companion notebook's download is tests/test_notebooks.py's)
    downloads = [a for a in elements.find("a") if "download" in a and a["href"].endswith(".json.gz")]
    assert len(downloads) == len(RAN)
    for link in downloads:
        served = resolve(built_site, PAGE, link["href"])
        frozen = ROOT / "traces" / served.relative_to(built_site / "traces")
        assert served.read_bytes() == frozen.read_bytes()
    buttons = elements.find("button", **{"class": "perfetto-open"})
    assert len(buttons) == len(RAN)
    for button in buttons:
        assert resolve(built_site, PAGE, button["data-trace"]).is_file()


def test_kernel_names_are_escaped(page):
    html, _ = page
    assert "masked_fill_kernel(at::TensorIterator&amp;" in html
    assert "elementwise_kernel&lt;128, 4" in html
    assert "elementwise_kernel<128" not in html
    assert "flash_fwd_kernel<Flash" not in html


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
    assert "Five ways to compute the same thing" not in index


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
    for finding in ("Memcpy DtoD", "The GPU time per call", "the gap", "It draws ProfilerStep#"):
        assert finding in said, finding
    outcomes = {c.outcome for c in ours}
    # findings that could go either way are worded from the data, whichever way it went
    for either in ({"ordered", "not ordered"}, {"every shorter", "not every shorter"}):
        assert outcomes & either, either
    # comparisons, and the gap against the series' ratio, are worded from the ratio of the medians
    from scripts.series.pages.claims import OUTCOMES
    assert set(OUTCOMES) & outcomes
    # every fused backend's verdict is its own claim, worded from the data
    for backend in ("efficient", "flash", "cudnn"):
        assert any(c.statement.startswith(f"{backend} ") and c.outcome for c in ours), backend


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


def attention_like_trace() -> FakeRun:
    """Two recorded steps of one `attention` call each (a GEMM, a copy, a second GEMM), the GPU far
    behind the host, and a kernel spilled in from before the recording (no launch in the trace)."""
    emit = _Launcher(HOST_PID)
    emit.events.append({"ph": "X", "cat": "kernel", "name": "nvjet_spilled", "pid": 0, "tid": STREAM, "ts": 5.0,
                        "dur": 300.0, "args": {"device": 0, "stream": STREAM, "correlation": 1}})
    for step, t in enumerate((0.0, 200.0)):
        emit.op(f"ProfilerStep#{step + 2}", t, 190.0, cat="user_annotation")
        emit.op("attention", t + 5, 180.0, cat="user_annotation")
        gpu_at = 400.0 + 500.0 * step
        emit.launch("aten::bmm", t + 10, gpu_at, 100.0, kernel="nvjet_sm90_a")
        emit.launch("aten::copy_", t + 40, gpu_at + 100, 50.0, kernel="Memcpy DtoD (Device -> Device)",
                    cat="gpu_memcpy", call="cudaMemcpyAsync")
        emit.launch("aten::bmm", t + 70, gpu_at + 200, 100.0, kernel="nvjet_sm90_b")
    return FakeRun(build_trace(_top_level(_metadata() + emit.events)))


def test_calls_count_only_what_their_launches_started():
    run = attention_like_trace()
    cs = Q.calls(run)
    assert len(cs) == 2 and [c.count("kernel") for c in cs] == [2, 2] and [c.count("memcpy") for c in cs] == [1, 1]
    stats = Q.call_stats(run)
    assert (stats.kernels, stats.memcpy, stats.memset, stats.n_calls) == ([2], [1], [0], 2)
    assert "nvjet_spilled" not in {k.name for k in stats.kernels_run}  # no launch in the trace: not counted
    assert Q.gpu_samples(run).values == (250.0, 250.0)  # the union of its three activities, not their span
    assert Q.activity_samples(run, lambda a: a.kind == "memcpy").values == (50.0, 50.0)


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


def test_earlier_work_counts_spilled_and_earlier_launches():
    run = attention_like_trace()
    # the second step's window [200, 390]: the spilled kernel runs to 305, nothing else
    assert Q.earlier_work_pct(run, Q.step_window(run, 3)) == pytest.approx(100.0 * 105.0 / 190.0)
    # from 400 to 700 the GPU runs the first call's work, launched before 400: busy but for 550 to 600
    assert Q.earlier_work_pct(run, Window(400.0, 700.0, "w")) == pytest.approx(100.0 * 250.0 / 300.0)


def test_frozen_naive_run_copy_window_contains_a_copy_of_its_step():
    run = example(NAIVE)
    window = Q.copy_window(run, 4)
    step = Q.step_window(run, 4)
    copies = Q.activities_within(run, window, "memcpy")
    launched_here = [a for a in copies if step.start <= run.trace.launch_of(a).ts < step.end]
    assert launched_here
    # the window reaches the end of the copies the step launched, wherever the GPU ran them
    assert window.end >= max(a.end for a in launched_here)


def test_fractions():
    a = samples([4.0, 5.0, 6.0])
    assert Q.fractions_of(a, 2.0).values == (2.0, 2.5, 3.0)


def test_arch_of_reads_the_sm_tag():
    assert Q.arch_of("sm80_xmma_gemm_f32f32") == "sm80"
    assert Q.arch_of("fmha_cutlassF_bf16_aligned_64x64_rf_sm80(PyTorchMemEffAttention::AttentionKernel<"
                     "cutlass::arch::Sm80>)") == "sm80"
    assert Q.arch_of("cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma") == "sm90"
    assert Q.arch_of("void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<64>>") is None
    assert Q.arch_of("asm900_kernel") is None


def test_occupancy_from_the_register_limit():
    # 255 registers round up to 256; 65536 / (256 * 128) = 2 blocks; 2 * 128 / 2048 = 12.5%, printed 13
    flash = Q.KernelResources("flash", 128, 255, 49152, (16, 16, 8), 15.5, 13)
    assert Q.blocks_by_registers(flash, 65536) == 2
    assert Q.explained_by_registers(flash, 65536, 2048)
    assert not Q.explained_by_registers(Q.KernelResources("x", 128, 255, 0, (1, 1, 1), 15.5, 25), 65536, 2048)
    # the grid caps it: one block per SM in the grid gives 128 / 2048 = 6.25%, printed 6
    assert Q.explained_by_registers(Q.KernelResources("y", 128, 64, 0, (132, 1, 1), 1.0, 6), 65536, 2048)
