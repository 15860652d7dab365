"""Part 5 (memory, shapes, stacks, roofline): its helpers on hand-made traces, its findings on the
committed H200 artifacts recomputed from the raw JSON, and what the strict build puts on the page."""

from __future__ import annotations

import gzip
import json
import re
from statistics import median

import pytest

from scripts.series.runs import catalog
from scripts.series.pages import claims
from scripts.series.pages.helpers import example
from scripts.series.pages.posts import part5 as P
from scripts.series.pages.sweeps import llama_modules, llama_parameters, snippet_defaults
from tests.test_blocks import gpu, launch, write_trace

PAGE = "docs/blog/posts/part-5-memory-shapes-stacks-roofline.md"
URL = "blog/memory-shapes-stacks-roofline/index.html"
MEM = {v: catalog.get(f"06_memory/train_b16_s512_l8_d512_fp32_{v}") for v in ("baseline", "checkpoint")}
ROOF = catalog.get("08_roofline/roofline_bf16_t8192_d4096_h14336")
STACKS = {o: catalog.get(f"07_shapes_stacks/stacks_b16_s3_{o}") for o in ("foreach_false", "fused")}
SHAPES = "07_shapes_stacks/shapes_b16_s64-256-1024-4096_1024x4096_bf16"


def raw(example_) -> list[dict]:
    return json.loads(gzip.decompress(example_.trace_path.read_bytes()))["traceEvents"]


# --- the helpers, on traces whose answers are worked by hand ---------------------------------------


def test_labelled_calls_take_the_gpu_time_of_the_kernels_launched_inside_each_label(tmp_path):
    label = "kernel: add_4 flops=4 bytes=24"
    events = [{"cat": "user_annotation", "name": label, "ts": 0, "dur": 10},
              {"cat": "user_annotation", "name": label, "ts": 100, "dur": 10},
              {"cat": "user_annotation", "name": "not a label", "ts": 200, "dur": 10},
              launch(2, 1), gpu(20, 5, 1), launch(4, 2), gpu(22, 6, 2),  # overlapping: 8 us of GPU busy
              launch(102, 3), gpu(120, 3, 3), launch(202, 4), gpu(220, 50, 4)]
    (found,) = P.labelled_calls(write_trace(tmp_path, events))
    assert (found.role, found.name, found.flops, found.bytes) == ("kernel", "add_4", 4, 24)
    assert sorted(found.calls_us.values) == [3.0, 8.0]


def test_the_roofs_are_the_matmul_rate_and_the_faster_read_write_rate(tmp_path):
    """The bandwidth roof is the faster of the copy and the triad, which read and write; the sum only
    reads, and is left out even when it is the fastest (here 3 TB/s against the triad's 2)."""
    events = [{"cat": "user_annotation", "name": "peak compute: mm flops=2000000 bytes=1", "ts": 0, "dur": 5},
              {"cat": "user_annotation", "name": "peak memory: copy_1MiB flops=0 bytes=1000000", "ts": 10, "dur": 5},
              {"cat": "user_annotation", "name": "peak memory: sum_1MiB flops=1 bytes=3000000", "ts": 20, "dur": 5},
              {"cat": "user_annotation", "name": "kernel: k flops=100 bytes=1000", "ts": 30, "dur": 5},
              {"cat": "user_annotation", "name": "peak memory: triad_1MiB flops=1 bytes=2000000", "ts": 80, "dur": 5},
              launch(1, 1), gpu(40, 2, 1), launch(11, 2), gpu(50, 1, 2), launch(21, 3), gpu(60, 1, 3),
              launch(31, 4), gpu(70, 1, 4), launch(81, 5), gpu(90, 1, 5)]
    trace = write_trace(tmp_path, events)
    run = type("R", (), {"trace": trace, "example": catalog.Example("x", "y")})()
    r = P.roofs(run)
    assert r.roof.peak_flops == pytest.approx(1e12) and r.roof.bandwidth == pytest.approx(2e12)
    assert r.bandwidth_from == "triad_1MiB" and set(r.memory) == {"copy_1MiB", "triad_1MiB", "sum_1MiB"}
    ((_, placed),) = P.placements(run)
    assert placed.bound == "memory" and placed.intensity == pytest.approx(0.1)
    assert placed.roof_fraction == pytest.approx((100 / 1e-6) / (2e12 * 0.1))


def test_timeline_peak_is_the_highest_total_and_its_categories():
    timeline = {"times_us": [0, 1, 2], "bytes": {"parameter": [4, 4, 4], "activation": [0, 9, 3]}}
    assert P.timeline_peak(timeline) == (1, 13, {"parameter": 4, "activation": 9})


def test_decode_reads_the_weights_it_needs_and_the_cache():
    assert P.decode_bytes_per_token(10, layers=2, kv_heads=1, head_dim=4, context=3) == 10 * 2 + 2 * 2 * 4 * 3 * 2


def test_decode_reads_one_embedding_row_and_the_whole_head_tied_or_not():
    # hidden 4, vocab 10: the embedding is 40 weights, of which a token reads its row of 4.
    config = dict(hidden=4, intermediate=8, layers=2, heads=2, kv_heads=1, vocab=10)
    untied, tied = llama_modules(**config), llama_modules(**config, tied=True)
    layer = 2 * 4 * 4 + 2 * 4 * 1 * 2 + 3 * 4 * 8 + 2 * 4
    assert untied == {"embed_tokens": 40, "layers": 2 * layer, "norm": 4, "lm_head": 40}
    assert tied["lm_head"] == 0 and sum(tied.values()) == sum(untied.values()) - 40
    assert P.decode_weights_read(untied, hidden=4) == 4 + 2 * layer + 4 + 40
    assert P.decode_weights_read(tied, hidden=4) == P.decode_weights_read(untied, hidden=4)
    assert P.decode_weights_read(untied, hidden=4) < llama_parameters(**config)


def test_decode_floor_of_parts_4_model_leaves_out_all_but_one_row_of_the_embedding():
    model = snippet_defaults("05_llm_inference")
    modules = llama_modules(**model)
    read = P.decode_weights_read(modules, model["hidden"])
    assert llama_parameters(**model) - read == (model["vocab"] - 1) * model["hidden"]


# --- the committed runs, recomputed from the raw JSON ------------------------------------------------


@pytest.mark.parametrize("variant", ["baseline", "checkpoint"])
def test_memory_peak_is_the_highest_total_allocated_of_the_memory_events(variant):
    """The analyzer's peak (scripts.tracefacts.facts.memory, through the post's helper) against a plain loop over the
    trace's [memory] instants on the GPU."""
    events = [e for e in raw(MEM[variant]) if e.get("name") == "[memory]" and e["args"].get("Device Type") == 1]
    assert events, "the memory run's trace has [memory] events on the GPU"
    assert P.memory_run(example(MEM[variant].key)).trace_peak == max(e["args"]["Total Allocated"] for e in events)


def test_checkpointing_lowers_the_allocators_peak_and_the_activations():
    base, ckpt = (P.memory_run(example(e.key)) for e in MEM.values())
    assert max(ckpt.max_allocated) < min(base.max_allocated)
    assert ckpt.at_peak["activation"] < base.at_peak["activation"]
    assert all(r >= a for a, r in zip(base.max_allocated, base.max_reserved))


def test_a_kernels_bound_follows_from_its_label_and_the_roofs():
    """Every placed kernel's side of the ridge, recomputed from its label's FLOPs and bytes and the
    roofs' labels, with GPU times summed from the raw events by correlation."""
    events = raw(ROOF)
    launches = {e["args"]["correlation"]: e for e in events
                if e.get("cat") in ("cuda_runtime", "cuda_driver") and "correlation" in e.get("args", {})}
    kernels = [e for e in events if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]  # a roof may be a copy
    labels = [e for e in events if e.get("cat") == "user_annotation" and P.LABEL.match(e["name"])]

    def call_us(label):
        inside = [k for k in kernels if (l := launches.get(k["args"]["correlation"])) is not None
                  and l["tid"] == label["tid"] and label["ts"] <= l["ts"] <= label["ts"] + label["dur"]]
        return sum(k["dur"] for k in inside)  # one kernel per call in this snippet, or back to back

    per_name: dict[str, list[float]] = {}
    for label in labels:
        per_name.setdefault(label["name"], []).append(call_us(label))
    parsed = {P.LABEL.match(n)["name"]: (P.LABEL.match(n), median(t)) for n, t in per_name.items()}
    peak = next(int(m["flops"]) / t for m, t in parsed.values() if m["role"] == "peak compute")
    bandwidth = max(int(m["bytes"]) / t for m, t in parsed.values()  # the sum reads only: no roof
                    if m["role"] == "peak memory" and not m["name"].startswith("sum_"))
    placed = {p.name: p for _, p in P.placements(example(ROOF.key))}
    assert set(placed) == {name for name, (m, _) in parsed.items() if m["role"] == "kernel"}
    for name, (m, t) in parsed.items():
        if m["role"] == "kernel":
            side = "memory" if int(m["flops"]) / int(m["bytes"]) < peak / bandwidth else "compute"
            assert placed[name].bound == side, name
            assert placed[name].time_us == pytest.approx(t, rel=0.02), name


def test_foreach_false_launches_more_in_the_optimizer_than_fused():
    loop, fused = (P.launches_in(example(e.key), "optimizer") for e in STACKS.values())
    assert loop.low > fused.high


def test_stack_cost_samples_are_the_snippets():
    cost = P.stack_cost(example(STACKS["foreach_false"].key))
    assert set(cost.steps) == {"no profiler", "profiler", "profiler + with_stack"}
    assert all(s.n >= claims.MIN_SAMPLES for s in cost.steps.values())


# --- the built page -------------------------------------------------------------------------------


def test_the_page_states_its_findings_as_claims_that_hold(built_site):
    listed, problems = claims.read_listing(built_site / "claims.json")
    mine = [c for c in listed if c.page == PAGE]
    assert len(mine) >= 20 and all(c.holds and c.runs for c in mine), [c.short for c in mine if not c.holds]
    assert not [p for p in problems if PAGE in p]


def test_the_page_shows_every_run_its_plots_and_the_snapshot(built_site):
    html = (built_site / URL).read_text()
    assert "Traceback" not in html
    files = set(re.findall(r'data-file="([^"]+)"', html))
    shown = catalog.PART5
    assert {e.trace_path.name for e in shown} <= files
    for plot in ("plots/06_memory/memory_timeline.svg", "plots/08_roofline/roofline.svg"):
        assert (built_site / plot).read_text().lstrip().startswith(("<svg", "<?xml")), plot
    snapshot = built_site / "traces/06_memory/train_b16_s512_l8_d512_fp32_baseline.snapshot.pickle"
    assert snapshot.read_bytes()[:1] == b"\x80"  # a pickle, as the memory viewer takes it
    assert html.count('<details class="question"') == 2
    # A post a learner finishes: at most 15 minutes by Material's estimate, at most two open facts boxes.
    assert int(re.search(r"(\d+) min read", html)[1]) <= 15
    assert html.count('<div class="admonition abstract facts"') <= 2


def test_llama_modules_match_transformers_module_by_module():
    transformers = pytest.importorskip("transformers")
    torch = pytest.importorskip("torch")
    d = snippet_defaults("05_llm_inference")
    config = transformers.LlamaConfig(
        hidden_size=d["hidden"], intermediate_size=d["intermediate"], num_hidden_layers=d["layers"],
        num_attention_heads=d["heads"], num_key_value_heads=d["kv_heads"], vocab_size=d["vocab"])
    with torch.device("meta"):
        model = transformers.LlamaForCausalLM(config)
    counted = {name: sum(p.numel() for p in module.parameters()) for name, module in (
        ("embed_tokens", model.model.embed_tokens), ("layers", model.model.layers), ("norm", model.model.norm),
        ("lm_head", model.lm_head))}
    assert counted == llama_modules(**d)


def test_extra_time_is_split_into_gpu_work_and_host_wait():
    before, after = P.StepSplit(100.0, 80.0, 10.0), P.StepSplit(170.0, 90.0, 60.0)
    extra = P.extra_time(before, after)
    assert (extra.total_us, extra.busy_us, extra.host_wait_us) == (70.0, 10.0, 50.0) and extra.mostly == "host wait"
    assert P.extra_time(before, P.StepSplit(150.0, 140.0, 10.0)).mostly == "GPU work"


@pytest.mark.parametrize("variant", ["baseline", "checkpoint"])
def test_step_split_busy_time_agrees_with_the_samples_of_the_shown_trace(variant):
    """The analyzer's busy time per step against the refresh's digest of the same steps (a separate
    union of the GPU work each step launched); both parts fit inside the step."""
    run = example(MEM[variant].key)
    split = P.step_split(run)
    digest = [s["gpu"]["busy_us"] for s in run.samples()[0]["steps"]]
    assert split.busy_us == pytest.approx(median(digest), rel=0.02)
    assert 0 < split.busy_us + split.host_wait_us <= split.dur_us


def test_profiler_overhead_is_the_stacks_runs_rotated_timing_and_part2_can_quote_it():
    o = P.profiler_overhead()
    steps = P.stack_cost(example(STACKS["foreach_false"].key)).steps
    assert o.key == STACKS["foreach_false"].key
    assert (o.none, o.profiled, o.stacks) == (steps["no profiler"], steps["profiler"], steps["profiler + with_stack"])
    assert o.slowdown == pytest.approx(o.profiled.median / o.none.median)
    sentence = P.profiler_overhead_sentence()
    assert claims.compare(o.profiled, o.none, what="training step").words in sentence
    assert "a little" not in sentence


def test_the_table_grouped_by_shape_shows_each_rows_shapes(built_site):
    """The grouped table's rows of aten::linear differ only by their input shapes: the page's short
    view shows them, one distinct shape under each row's name (before, it folded the column away,
    and the rows read alike)."""
    from html import unescape

    html = (built_site / URL).read_text()
    caption = "grouped by input shape"
    start = html.index(caption)
    table = html[html.rfind('<table class="prof">', 0, start):html.index("</table>", start)]
    assert '<span class="prof-group">Input Shapes</span>' in table.split("</thead>")[0]
    shapes = [unescape(s) for s in re.findall(r'<span class="prof-group">(.*?)</span></th>', table.split("</thead>")[1])]
    rows = re.findall(r"<tbody>.*?</tbody>", table, re.S)[0].count("<tr>")
    assert len(shapes) == rows == len(set(shapes)) == P.rows_named(P.tables_of(example(SHAPES))[1], "aten::linear")
