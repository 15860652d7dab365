"""Part 4 (LLM inference) and the matmul + add sweep: what the strict build puts on the pages,
checked against the facts the analyzer reads off the same frozen traces."""

from __future__ import annotations

import re
from html import unescape

import pytest

from scripts import blocks, catalog
from scripts.pages_sweeps import llama_parameters, snippet_defaults
from scripts.trace import load_trace
from tests.conftest import ROOT
from tests.test_site import parse, resolve

PART4 = "blog/llm-inference/index.html"
SWEEP = "blog/matmul-add-sweep/index.html"
SWEEP_EXAMPLE = catalog.get("01_matmul_add_sweep/sweep_bf16_16-8192")


def text_of(html: str) -> str:
    """The article's words, tags removed, whitespace collapsed."""
    article = html[html.index("<article"):html.index("</article>")]
    inline = re.sub(r"</?(strong|em|code|a|span)\b[^>]*>", "", article)  # words run on through these
    return " ".join(unescape(re.sub(r"<[^>]+>", " ", inline)).split())


@pytest.fixture(scope="module")
def part4(built_site):
    html = (built_site / PART4).read_text()
    return html, parse(html), text_of(html)


@pytest.fixture(scope="module")
def sweep_page(built_site):
    html = (built_site / SWEEP).read_text()
    return html, parse(html), text_of(html)


@pytest.mark.parametrize("page", [PART4, SWEEP])
def test_pages_build_without_execution_errors(built_site, page):
    html = (built_site / page).read_text()
    assert "Traceback" not in html and "exited with errors" not in html


def test_part4_shows_table_timeline_and_trace_of_every_single_batch_run(built_site, part4):
    html, elements, _ = part4
    singles = [e for e in catalog.PART4 if "-" not in e.tag.split("_")[1]]
    tables = [t for t in re.findall(r'<table class="prof"><caption>uv run snippets/05_llm_inference.py.*?</table>',
                                    html, flags=re.S) if "Self CPU %" in t]  # the profiler's own tables
    assert len(tables) == len(singles)
    images = [img["src"] for img in elements.find("img") if "timelines/05_llm_inference/" in img.get("src", "")]
    # one picture per decode variant at batch 1 (the post stays under its weight limit)
    assert {src.rsplit("/", 1)[-1] for src in images} == {
        f"decode_b1_p512_{run}_step3.svg" for run in ("dynamic_eager", "dynamic_eager_sdpa-flash", "static_compile")}
    for src in images:
        assert resolve(built_site, PART4, src).read_text().lstrip().startswith(("<svg", "<?xml"))
    buttons = elements.find("button", **{"class": "perfetto-open"})
    assert {b["data-file"] for b in buttons} == {e.trace_path.name for e in catalog.PART4}
    for button in buttons:
        served = resolve(built_site, PART4, button["data-trace"])
        assert served.read_bytes() == (ROOT / "traces" / served.relative_to(built_site / "traces")).read_bytes()


def test_part4_model_size_is_computed_from_the_snippet(part4):
    _, _, text = part4
    defaults = snippet_defaults("05_llm_inference")
    assert f"{llama_parameters(**defaults) / 1e9:.2f} billion weights" in text
    assert f"hidden size {defaults['hidden']}" in text


def test_llama_parameter_count_matches_transformers():
    transformers = pytest.importorskip("transformers")
    torch = pytest.importorskip("torch")
    defaults = snippet_defaults("05_llm_inference")
    config = transformers.LlamaConfig(
        hidden_size=defaults["hidden"], intermediate_size=defaults["intermediate"],
        num_hidden_layers=defaults["layers"], num_attention_heads=defaults["heads"],
        num_key_value_heads=defaults["kv_heads"], vocab_size=defaults["vocab"])
    with torch.device("meta"):
        model = transformers.LlamaForCausalLM(config)
    assert sum(p.numel() for p in model.parameters()) == llama_parameters(**defaults)


def test_part4_numbers_are_the_analyzers(part4):
    _, _, text = part4
    eager, = blocks.llm_steps(load_trace(catalog.get("05_llm_inference/decode_b1_p512_dynamic_eager").trace_path))
    graphs, = blocks.llm_steps(load_trace(catalog.get("05_llm_inference/decode_b1_p512_static_compile").trace_path))
    assert f"{eager.launches_per_step:.0f} launches per token" in text
    assert f"{graphs.tokens_per_s:.0f} tokens per second" in text
    assert f"GPU was busy {eager.gpu_busy_pct:.1f}% of the time" in text
    # the gap totals before and after, not only the step time
    assert "GPU idle time per token went from" in text
    assert f"{eager.gaps_per_step:.0f} per token to {graphs.gaps_per_step:.0f}" in text


@pytest.mark.parametrize("run", ["static_compile", "dynamic_eager_sdpa-flash"])
def test_part4_names_the_batch_where_decode_stops_being_overhead_bound(part4, run):
    _, _, text = part4
    sweep = blocks.llm_steps(load_trace(catalog.get(
        f"05_llm_inference/decode_b1-8-64-256-1024-2048_p128_{run}").trace_path))
    first = next(b for b in sweep if b.verdict == "compute-bound")
    assert f"compute-bound from batch {first.batch} on (GPU busy {first.gpu_busy_pct:.0f}%)" in text
    assert all(b.verdict != "overhead-bound" for b in sweep if b.batch >= first.batch)


def test_part4_shows_the_cudnn_hypothesis_tested(part4):
    _, _, text = part4
    auto, = blocks.llm_steps(load_trace(catalog.get("05_llm_inference/decode_b1_p512_dynamic_eager").trace_path))
    flash, = blocks.llm_steps(load_trace(catalog.get(
        "05_llm_inference/decode_b1_p512_dynamic_eager_sdpa-flash").trace_path))
    assert auto.longest_gap_ms > 10 * flash.longest_gap_ms  # the rebuild is the widest gap, and it goes
    assert "--attention flash" in text
    from scripts.posts import ratio_text  # the posts' one way of writing a ratio

    assert f"({ratio_text(auto.ms_per_step, flash.ms_per_step)} faster)" in text


def test_part4_comparison_and_batch_tables(part4):
    html, _, _ = part4
    compare = re.search(r"<caption>Decode at batch 1, one row per run.*?</table>", html, flags=re.S).group(0)
    for row in ("eager, dynamic cache (SDPA chose cuDNN)", "eager, dynamic cache, flash attention",
                "eager, static cache", "compiled + CUDA graph, static cache"):
        assert row in compare
    for column in ("GPU idle per step", "gaps per step", "launches per step"):
        assert column in compare
    sweeps = re.findall(r"<caption>uv run snippets/05_llm_inference.py --phase decode --batch 1,8.*?</table>", html, flags=re.S)
    assert len(sweeps) == 3
    for table in sweeps:
        assert [int(b) for b in re.findall(r"batch (\d+)</th>", table)] == [1, 8, 64, 256, 1024, 2048]


def test_part4_links_its_notebook_the_sweep_and_part3(built_site, part4):
    _, elements, _ = part4
    hrefs = [a.get("href", "") for a in elements.find("a")]
    for target in ("notebooks/part-4-llm-inference/", "attention/", "matmul-add-sweep/"):
        found = [h for h in hrefs if h.endswith(target)]
        assert found, target
        assert resolve(built_site, PART4, found[0]).is_file()


def test_sweep_crossover_and_peak_are_read_from_the_trace(sweep_page):
    _, _, text = sweep_page
    sweep = blocks.sweep(load_trace(SWEEP_EXAMPLE.trace_path))
    cross = sweep.crossover("eager")
    before = max(p.size for p in sweep.of_mode("eager") if p.size < cross)
    assert f"The lines cross between n = {before} and n = {cross}" in text
    assert f"The peak: {sweep.peak_tflops:.0f} TFLOP/s" in text
    graph, eager = sweep.point("graph", 64), sweep.point("eager", 64)
    assert f"per step, {eager.wall_us_per_step / graph.wall_us_per_step:.1f}× eager's speed" in text


def test_sweep_plots_are_published_zoomable_images(built_site, sweep_page):
    _, elements, _ = sweep_page
    links = [a for a in elements.find("a") if "svg-zoom" in a.get("class", "").split() and "/plots/" in "/" + a.get("href", "")]
    assert {a["href"].rsplit("/", 1)[-1] for a in links} == {"sweep_times.svg", "sweep_tflops.svg"}
    for link in links:
        svg = resolve(built_site, SWEEP, link["href"]).read_text()
        assert "<svg" in svg and "matrix side n" in svg
        assert "dc:date" not in svg  # no build date: the file only changes when the data does


def test_sweep_table_has_a_row_per_block(sweep_page):
    html, _, _ = sweep_page
    table = re.search(r"<caption>Every block of the sweep.*?</table>", html, flags=re.S).group(0)
    sweep = blocks.sweep(load_trace(SWEEP_EXAMPLE.trace_path))
    assert table.count('<th scope="row">') == len(sweep.points)


def test_plots_are_deterministic():
    from scripts.plots import sweep_times, tokens_per_second

    sweep = blocks.sweep(load_trace(SWEEP_EXAMPLE.trace_path))
    assert sweep_times(sweep) == sweep_times(sweep)
    facts = blocks.llm_steps(load_trace(catalog.get(
        "05_llm_inference/decode_b1-8-64-256-1024-2048_p128_static_compile").trace_path))
    assert tokens_per_second({"a": facts}) == tokens_per_second({"a": facts})


def test_landing_page_and_part3_lead_to_part4(built_site):
    index = (built_site / "index.html").read_text()
    assert "in preparation" not in index
    for page in ("index.html", "blog/attention/index.html"):
        hrefs = [a.get("href", "") for a in parse((built_site / page).read_text()).find("a")]
        assert any(h.rstrip("/").endswith("llm-inference") for h in hrefs), page


def test_sweep_refresh_fits_in_two_minutes_and_the_page_says_so(sweep_page):
    _, _, text = sweep_page
    wall = catalog.get("01_matmul_add_sweep/sweep_bf16_16-8192")
    seconds = __import__("scripts.freeze", fromlist=["read_meta"]).read_meta(wall).wall_time_s
    assert seconds < 120, "the sweep page's refresh must fit in two minutes on the GPU"
    assert f"it took {seconds:.0f} s from start to exit" in text


def test_sweep_page_links_part1_notebook_which_runs_the_sweep(built_site, sweep_page):
    from scripts import notebooks

    _, elements, _ = sweep_page
    hrefs = [a.get("href", "") for a in elements.find("a")]
    assert any(h.endswith("notebooks/part-1-matmul-add/") for h in hrefs)
    part1 = next(n for n in notebooks.NOTEBOOKS if n.part == 1)
    assert SWEEP_EXAMPLE.key in [run.key for run in part1.runs]


def test_sweep_page_draws_the_eager_and_graph_blocks(built_site, sweep_page):
    _, elements, _ = sweep_page
    images = {img["src"].rsplit("/", 1)[-1] for img in elements.find("img") if "timelines/01_matmul_add_sweep/" in img.get("src", "")}
    assert images == {"sweep_bf16_16-8192_eager-n-64.svg", "sweep_bf16_16-8192_graph-n-64.svg"}
    svg = (built_site / "timelines/01_matmul_add_sweep/sweep_bf16_16-8192_graph-n-64.svg").read_text()
    assert "graph n=64" in svg and "cudaGraphLaunch" in svg
