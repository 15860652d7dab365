"""Part 3 (attention): the strict build holds its tables, pictures, links and the refused rows."""

from __future__ import annotations

import re

import pytest

from scripts import catalog
from tests.conftest import ROOT
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
