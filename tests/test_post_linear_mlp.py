"""Part 2 (nn.Linear to a fused MLP), as the strict build renders it from the frozen traces."""

from __future__ import annotations

import re
from html import unescape

import pytest

from scripts import catalog
from tests.conftest import ROOT
from tests.test_site import parse, resolve

PAGE = "blog/linear-mlp/index.html"
EXAMPLES = [example for example in catalog.PART2]


@pytest.fixture(scope="module")
def page(built_site):
    html = (built_site / PAGE).read_text(encoding="utf-8")
    return html, parse(html)


def text_of(html: str) -> str:
    return re.sub(r"\s+", " ", unescape(re.sub(r"<[^>]+>", " ", html)))


def test_page_exists_without_execution_errors(page):
    html, _ = page
    assert "Part 2: from" in html
    assert "Traceback" not in html
    assert "exited with errors" not in html


def test_every_part2_example_has_table_timeline_download_and_perfetto(built_site, page):
    html, elements = page
    tables = re.findall(r'<div class="prof-table".*?</table></div>', html, flags=re.S)
    assert len(tables) == len(EXAMPLES)
    images = [a["src"] for a in elements.find("img") if "timelines/" in a.get("src", "")]
    downloads = [a["href"] for a in elements.find("a") if "download" in a]
    buttons = elements.find("button", **{"class": "perfetto-open"})
    for example in EXAMPLES:
        svg = next(src for src in images if src.endswith(f"timelines/{example.snippet}/{example.tag}.svg"))
        assert resolve(built_site, PAGE, svg).read_text().lstrip().startswith(("<svg", "<?xml"))
        href = next(h for h in downloads if h.endswith(f"{example.snippet}/{example.trace_path.name}"))
        assert resolve(built_site, PAGE, href).read_bytes() == example.trace_path.read_bytes()
        button = next(b for b in buttons if b["data-title"] == example.key)
        assert resolve(built_site, PAGE, button["data-trace"]).is_file()
        assert example.command in html  # the table's caption says how to reproduce it
    # one facts box per example
    assert html.count('class="admonition abstract facts"') == len(EXAMPLES)


def test_tables_hold_the_rows_the_post_talks_about(page):
    html, _ = page
    tables = re.findall(r'<div class="prof-table".*?</table></div>', html, flags=re.S)
    linear = [t for t in tables if "snippets/02_linear.py" in t]
    assert len(linear) == 4 and all(">aten::addmm<" in t for t in linear)
    eager = [t for t in linear if "--compile" not in t]
    compiled = [t for t in linear if "--compile" in t]
    assert all(">aten::linear<" in t and ">aten::t<" in t for t in eager)
    assert all(">Torch-Compiled Region: 0/0<" in t and ">aten::t<" not in t for t in compiled)
    assert any(">triton_poi_fused__unsafe_view_gelu_mul_0<" in t for t in tables)
    assert any(">gelu_tanh_mul_kernel<" in t for t in tables)
    assert any(">aten::gelu<" in t and ">aten::mul<" in t for t in tables)


def test_dispatch_chain_shows_the_view_launches_nothing(page):
    html, _ = page
    text = text_of(html)
    assert re.search(r"aten::t\s+cpu_op\s+[\d.]+ [nuµm]?s\s+0\b", text)
    assert re.search(r"aten::addmm\s+cpu_op\s+[\d.]+ [nuµm]?s\s+1\b", text)
    assert "nvjet_sm90_tst_64x8_64x16_1x2_h_bz_bias_TNT" in text


def test_kernel_counts_per_variant(page):
    html, _ = page
    text = text_of(html)
    assert re.search(r"eager\s+5\s+2\s+nvjet", text)
    assert re.search(r"Inductor\s+4\s+2\s+nvjet", text)
    assert re.search(r"our Triton kernel\s+4\s+2\s+nvjet", text)


def test_gelu_mul_comparison_and_quoted_series_numbers(page):
    html, _ = page
    text = text_of(html)
    assert re.search(r"Inductor's kernel takes [\d.]+ of the time of eager's two", text)
    assert re.search(r"so ours is (faster|slower) by [\d.]+%", text)
    assert "92.8 us" in text and "89.4 us" in text  # the series' A100 numbers, quoted
    assert "Liger" in text and "Nothing can be downloaded" in text


def test_nvjet_reading_is_checked_and_marked_as_inference(page):
    html, _ = page
    text = text_of(html)
    assert text.count("inference") >= 4
    assert "equal min(tiles, SMs) in every row" in text
    assert "first dimension equals the cluster's second number" in text


def test_kernel_names_are_escaped(page):
    html, _ = page
    assert "vectorized_elementwise_kernel&lt;" in html
    assert not re.search(r"vectorized_elementwise_kernel<(?!/)", html)  # a raw template, not an end tag
    assert "AttentionKernel<cutlass" not in html


def test_kernel_snippet_is_included(page):
    html, _ = page
    code = unescape(re.sub(r"<[^>]+>", "", html))
    assert "def gelu_tanh_mul_kernel(" in code and "tl.sigmoid(2.0 * inner)" in code


def test_previous_and_next_links_resolve(built_site, page):
    _, elements = page
    links = {a.get("href", "") for a in elements.find("a")}
    previous = [h for h in links if h.rstrip("/").endswith("matmul-add")]
    following = [h for h in links if h.rstrip("/").endswith("attention")]
    assert previous and following
    for href in previous + following:
        assert resolve(built_site, PAGE, href).is_file()


def test_part1_links_forward_to_part2(built_site):
    part1 = parse((built_site / "blog/matmul-add/index.html").read_text(encoding="utf-8"))
    hrefs = [a["href"] for a in part1.find("a") if a.get("href", "").rstrip("/").endswith("linear-mlp")]
    assert hrefs  # the post's link, and the nav's to Part 2's notebook (notebooks/part-2-linear-mlp/)
    assert built_site / PAGE in {resolve(built_site, "blog/matmul-add/index.html", h) for h in hrefs}


def test_no_typed_numbers_with_units_outside_code():
    """Numbers about our runs are printed from the traces; typed ones must be the series' (quoted)."""
    source = (ROOT / "docs/blog/posts/part-2-linear-mlp.md").read_text(encoding="utf-8")
    fenced, offenders = False, []
    for line in source.splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        if not fenced and re.search(r"\d\s*(us|ms|%|TFLOP/s|GB/s|TB/s)\b", line) and "<!-- quoted -->" not in line:
            offenders.append(line)
    assert not offenders
