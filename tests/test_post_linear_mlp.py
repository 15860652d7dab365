"""Part 2 (nn.Linear to a fused MLP), as the strict build renders it from the frozen traces."""

from __future__ import annotations

import re
from html import unescape

import pytest

from scripts.series.runs import catalog
from tests.conftest import ROOT
from tests.post_helpers import FakeRun, gpu_names_typed
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
        # the default picture is named after the run; a chosen step or window adds a suffix
        svg = next(src for src in images if re.search(rf"timelines/{example.snippet}/{example.tag}(_[^/]*)?\.svg$", src))
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
    # each fused kernel against the others, worded from the ratio of the per-step medians, or not
    # enough samples to say (scripts/series/pages/claims.py)
    assert re.search(r"Inductor's kernel (takes .+ (the time of )?eager's two kernels|against eager's two: not enough "
                     r"samples)", text)
    assert re.search(r"Ours (is (faster|slower) than Inductor's|and Inductor's take about the same|against "
                     r"Inductor's: )", text)
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


# --- held to its data -----------------------------------------------------------------------------

SOURCE = ROOT / "docs/blog/posts/part-2-linear-mlp.md"


def test_page_claims_all_hold_and_cover_the_findings(built_site):
    from scripts.series.pages.claims import read_listing

    claims, _ = read_listing(built_site / "claims.json")
    ours = [c for c in claims if c.page.endswith("part-2-linear-mlp.md")]
    assert ours and all(c.holds for c in ours)
    said = " ".join(c.statement for c in ours)  # each statement's start, without Markdown
    # the sentences the page used to print whatever the data said are claims now
    for finding in ("every recorded step launches the same activities", "small memsets in every variant",
                    "Inductor's kernel", "no separate kernel for the bias"):
        assert finding in said, finding
    assert any(c.statement.startswith("Ours ") for c in ours)  # ours against Inductor's
    # who keeps ahead of the GPU is worded from the three verdicts, whichever way they went
    assert any("keeps ahead of the GPU" in c.statement or "keep clearly ahead of the GPU" in c.statement
               for c in ours)
    # comparisons of timings are worded from the ratio of their medians, whichever way it went
    from scripts.series.pages.claims import OUTCOMES
    assert any(c.outcome in OUTCOMES for c in ours)


def test_the_two_host_wait_shares_are_named_apart(page):
    html, _ = page
    text = text_of(html)
    assert "Waiting for the CPU, of the same time" in text and "Stalled, of the same time" in text
    assert "of which the CPU caused" in text and "of that idle time" in text
    assert "only the first decides the verdict" in text


def test_no_gpu_name_typed_in_the_prose():
    assert not gpu_names_typed(SOURCE)


def test_a_typed_gpu_name_is_found_in_prose_only(tmp_path):
    post = tmp_path / "post.md"
    post.write_text("Run on an H100.\n```python\nprint('B200')\n```\nThe H200 series <!-- quoted -->\n")
    assert gpu_names_typed(post) == ["Run on an H100."]


# --- the helpers (scripts/series/pages/posts/part2.py) on hand-made inputs --------------------------------------

from scripts.series.pages.claims import samples  # noqa: E402
from scripts.series.pages.posts import lowest, pairwise, pooled  # noqa: E402
from scripts.series.pages.posts import part2 as P  # noqa: E402
from scripts.tracefacts.model.trace import build_trace  # noqa: E402
from tests.timeline_traces import HOST_PID, _Launcher, _metadata, _top_level  # noqa: E402


def mlp_like_trace() -> FakeRun:
    """Two steps, each: a GEMM, then a `gelu_mul` label that launches our kernel late, then a GEMM."""
    emit = _Launcher(HOST_PID)
    for step, t in enumerate((0.0, 1000.0)):
        emit.op(f"ProfilerStep#{step + 2}", t, 900.0, cat="user_annotation")
        emit.launch("aten::mm", t + 10, t + 20, 100.0, kernel="nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_TNT")
        emit.op("gelu_mul", t + 100, 300.0, cat="user_annotation")
        # host work inside the label first: the launch call comes 40 + 5 us after the label starts
        emit.launch("gelu_mul_launch", t + 140, t + 200, 30.0, kernel="gelu_tanh_mul_kernel", call="cuLaunchKernel")
        emit.launch("aten::mm", t + 420, t + 440, 50.0, kernel="nvjet_sm90_tst_192x128_64x5_1x2_h_bz_coopB_TNT")
    return FakeRun(build_trace(_top_level(_metadata() + emit.events)))


def test_nvjet_names_split_into_typed_fields():
    name = P.NvjetName.of("nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_TNT")
    assert (name.arch, name.tile_mn, name.tk_stages, name.cluster, name.epilogue, name.layout) == \
        ("sm90", (256, 128), (64, 4), "1x2", "bz_coopA", "TNT")
    assert name.schedule == "coopA"
    with pytest.raises(ValueError):
        P.NvjetName.of("sm80_xmma_gemm_f32f32")


def test_tile_check_predicts_shared_memory_and_a_persistent_grid():
    # 4 stages of a 256x64 and a 128x64 bf16 slice: 4 * (256 + 128) * 64 * 2 bytes
    check = P.TileCheck("nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_TNT",
                        P.NvjetName.of("nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_TNT"),
                        m=3072, n=8192, k=768, shared_memory=196608 + 1000, grid=(2, 66, 1), sms=132)
    assert check.predicted_smem == 4 * 384 * 64 * 2 and check.leftover == 1000
    assert check.tiles == 12 * 64 and check.grid_fits and check.cluster_fits
    fewer = P.TileCheck(check.name, check.fields, m=256, n=256, k=64, shared_memory=0, grid=(2, 1, 1), sms=132)
    assert fewer.tiles == 2 and fewer.grid_fits  # fewer tiles than SMs: one block per tile


def test_leftovers_are_nearly_constant_only_within_one_stage_buffer():
    def check(leftover):
        f = P.NvjetName.of("nvjet_sm90_tst_64x8_64x16_1x2_h_bz_bias_TNT")
        return P.TileCheck("k", f, 1, 1, 1, f.tk_stages[1] * (64 + 8) * 64 * 2 + leftover, (1, 1, 1), 1)

    stage = (64 + 8) * 64 * 2
    assert P.leftovers([check(16000), check(16300)]).nearly_constant
    assert not P.leftovers([check(16000), check(16000 + stage)]).nearly_constant  # one stage off


def test_coop_split_guess():
    fits = P.coop_split_fits(["nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_TNT",  # 128 rows per half: whole wgmmas
                              "nvjet_sm90_tst_192x128_64x5_1x2_h_bz_coopB_TNT",  # 96: not, so split the columns
                              "nvjet_sm90_tst_64x8_64x16_1x2_h_bz_bias_TNT"])  # no coop: not judged
    assert list(fits.values()) == [True, True] and len(fits) == 2
    assert P.coop_split_fits(["nvjet_sm90_tst_192x128_64x5_1x2_h_bz_coopA_TNT"]) == {
        "nvjet_sm90_tst_192x128_64x5_1x2_h_bz_coopA_TNT": False}


def test_per_step_samples_of_a_synthetic_mlp():
    run = mlp_like_trace()
    assert [len(acts) for acts in P.per_step(run).values()] == [3, 3]
    assert P.gelu_mul_samples(run, "our Triton kernel").values == (30.0, 30.0)
    # from entering the label to the launch call: 40 us of op, then the call 5 us into it
    assert P.launch_lead_samples(run, "gelu_mul").values == (45.0, 45.0)
    # the GPU idles from the GEMM's end (t + 120) to our kernel (t + 200)
    assert P.gap_samples(run, "gelu_tanh_mul").values == (80.0, 80.0)
    assert P.launch_apis([run]) == {"cuBLAS": {"cudaLaunchKernel"}, "our Triton": {"cuLaunchKernel"}}


def test_enclosing_ops_outermost_first():
    run = mlp_like_trace()
    launch = run.trace.launch_of(next(k for k in run.trace.kernels if k.name == "gelu_tanh_mul_kernel"))
    assert P.enclosing_ops(run, launch) == ["gelu_mul_launch"]


def test_pooled_pairwise_and_lowest():
    a = samples([1.0, 1.1, 1.2] * 4, runs=["a"])
    b = samples([2.0, 2.1, 2.2] * 4, runs=["b"])
    c = samples([1.0, 1.5, 2.2] * 4, runs=["c"])  # as wide as a and b together: settles nothing
    both = pooled(a, b)
    assert both.values == a.values + b.values and both.runs == ("a", "b")
    comparisons = pairwise({"a": a, "b": b, "c": c}, "time")
    assert [x.outcome for x in comparisons] == ["lower", "unclear", "unclear"]
    assert lowest(comparisons) is None  # a is below b, but not below c
    assert lowest(pairwise({"a": a, "b": b}, "time")) == "a"
    assert lowest(pairwise({"a": samples([1.0] * 3), "b": samples([2.0] * 3)}, "time")) is None  # too few
