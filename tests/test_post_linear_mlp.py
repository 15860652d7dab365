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


def linear_kernel() -> str:
    """The GEMM the linear layer launched, read from its frozen run (the name changes with the GPU)."""
    from scripts.tracefacts.model.trace import load_trace

    trace = load_trace(ROOT / "traces/02_linear/linear_b1024_32x64_bf16_warm_eager.json.gz")
    return next(a.name for a in trace.gpu_activities if a.name.startswith("nvjet"))


def text_of(html: str) -> str:
    return re.sub(r"\s+", " ", unescape(re.sub(r"<[^>]+>", " ", html)))


def test_page_exists_without_execution_errors(page):
    html, _ = page
    assert "Part 2: from" in html
    assert "Traceback" not in html
    assert "exited with errors" not in html


def test_every_part2_example_has_its_download_and_perfetto_button(built_site, page):
    html, elements = page
    downloads = [a["href"] for a in elements.find("a") if "download" in a]
    buttons = elements.find("button", **{"class": "perfetto-open"})
    for example in EXAMPLES:
        href = next(h for h in downloads if h.endswith(f"{example.snippet}/{example.trace_path.name}"))
        assert resolve(built_site, PAGE, href).read_bytes() == example.trace_path.read_bytes()
        button = next(b for b in buttons if b["data-title"] == example.key)
        assert resolve(built_site, PAGE, button["data-trace"]).is_file()


def test_a_post_a_learner_finishes(page):
    """At most 15 minutes by Material's estimate and at most two facts boxes open: the rest of
    Part 2's runs are read in its companion notebook (scripts/series/notebooks/parts.py)."""
    html, _ = page
    assert int(re.search(r"(\d+) min read", html)[1]) <= 15
    assert html.count('<div class="admonition abstract facts"') <= 2


def test_the_one_table_and_the_two_timelines_the_story_reads(built_site, page):
    html, elements = page
    tables = re.findall(r'<div class="prof-table".*?</table></div>', html, flags=re.S)
    assert len(tables) == 1 and "snippets/03_simple_mlp.py" in tables[0]  # the eager MLP's
    assert all(f">{op}<" in tables[0] for op in ("aten::mm", "aten::gelu", "aten::mul"))
    assert mlp_eager_command() in html  # the table's caption says how to reproduce it
    images = [a["src"] for a in elements.find("img") if "timelines/" in a.get("src", "")]
    for key in ("03_simple_mlp/mlp_b64_s128_768x3072_bf16_warm_eager",
                "03_kernels_mlp/mlp_b64_s128_768x3072_bf16_warm_triton"):
        svg = next(src for src in images if re.search(rf"timelines/{key}(_[^/]*)?\.svg$", src))
        assert resolve(built_site, PAGE, svg).read_text().lstrip().startswith(("<svg", "<?xml"))


def mlp_eager_command() -> str:
    return catalog.get("03_simple_mlp/mlp_b64_s128_768x3072_bf16_warm_eager").command


def test_dispatch_chain_shows_the_view_launches_nothing(page):
    html, _ = page
    text = text_of(html)
    assert re.search(r"aten::t\s+cpu_op\s+[\d.]+ [nuµm]?s\s+0\b", text)
    assert re.search(r"aten::addmm\s+cpu_op\s+[\d.]+ [nuµm]?s\s+1\b", text)
    assert linear_kernel() in text


def test_kernel_counts_per_variant(page):
    html, _ = page
    text = text_of(html)
    # the side-by-side table: the variant, its kernels per step, then medians and spreads
    assert re.search(r"eager\s+5\s+median", text)
    assert re.search(r"Inductor\s+4\s+median", text)
    assert re.search(r"our Triton kernel\s+4\s+median", text)
    assert re.search(r"triton_poi_fused__unsafe_view_gelu_mul_0", text)


def test_gelu_mul_comparison_and_quoted_series_numbers(page):
    html, _ = page
    text = text_of(html)
    # each fused kernel against the others, worded from the ratio of the per-step medians, or not
    # enough samples to say (scripts/series/pages/claims.py)
    assert re.search(r"Inductor's kernel (takes .+ eager's two|against eager's two: not enough samples)", text)
    assert re.search(r"Ours (is (faster|slower) than Inductor's|and Inductor's take about the same|against "
                     r"Inductor's: )", text)
    assert "92.8 us" in text and "89.4 us" in text  # the series' A100 numbers, quoted
    assert "Liger" in text and "Nothing can be downloaded" in text


def test_nvjet_reading_is_checked_and_marked_as_inference(page):
    html, _ = page
    text = text_of(html)
    assert "our inference" in text
    # the linear's kernel, field by field, the fields the trace can check among them
    assert re.search(r"arch sm90 Hopper: the trace's device properties say compute capability 9\.0", text)
    assert re.search(r"epilogue bz_bias .*the bias, added in the epilogue", text)
    layout = linear_kernel().rsplit("_", 1)[1]
    assert re.search(rf"layout {layout} {layout[0]} first", text)


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
    for finding in ("in every recorded step", "Memset (Device)", "Inductor's kernel", "no separate kernel for the bias",
                    "nvjet", "gone from the trace"):
        assert finding in said, finding
    assert any(c.statement.startswith("Ours ") for c in ours)  # ours against Inductor's
    # which way fusion moved the verdict is worded from the verdicts, whichever way they went
    assert any(c.statement.startswith("The verdict ") for c in ours)
    # comparisons of timings are worded from the ratio of their medians, whichever way it went
    from scripts.series.pages.claims import OUTCOMES
    assert any(c.outcome in OUTCOMES for c in ours)


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


def test_per_step_samples_of_a_synthetic_mlp():
    run = mlp_like_trace()
    assert [len(acts) for acts in P.per_step(run).values()] == [3, 3]
    assert P.gelu_mul_samples(run, "our Triton kernel").values == (30.0, 30.0)
    # from entering the label to the launch call: 40 us of op, then the call 5 us into it
    assert P.launch_lead_samples(run, "gelu_mul").values == (45.0, 45.0)
    # the GPU idles from the GEMM's end (t + 120) to our kernel (t + 200)
    assert P.gap_samples(run, "gelu_tanh_mul").values == (80.0, 80.0)


def test_pace_shift_orders_the_verdicts_from_the_gpu_to_the_host():
    assert P.pace_shift("mixed", "overhead-bound") == "towards the host"
    assert P.pace_shift("overhead-bound", "GPU-bound") == "towards the GPU"
    assert P.pace_shift("mixed", "mixed") == "unchanged"
    # a verdict that says nothing of the pace has no direction, so the page has no wording for it
    assert P.pace_shift("stalled", "mixed") == "from stalled to mixed"


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
