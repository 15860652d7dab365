"""The posts' "find it in the trace" exercises: on every post, three or more questions whose
answers are collapsed and are each a claim the build checked; and the facts the answers name,
recomputed here from the trace's raw JSON rather than through the helpers' trace model."""

from __future__ import annotations

import gzip
import json
import re
from collections import Counter
from html import unescape

import pytest

from scripts.series.pages.helpers import example

# The built page of each post, and its Markdown source (the claims' page).
POSTS = {
    "blog/matmul-add/": "part-1-matmul-add.md",
    "blog/linear-mlp/": "part-2-linear-mlp.md",
    "blog/attention/": "part-3-attention.md",
    "blog/llm-inference/": "part-4-llm-inference.md",
    "blog/matmul-add-sweep/": "matmul-add-sweep.md",
}
GPU_CATS = ("kernel", "gpu_memcpy", "gpu_memset")
LAUNCH_CATS = ("cuda_runtime", "cuda_driver")


@pytest.mark.parametrize("page, source", POSTS.items())
def test_each_exercise_answer_is_a_claim_checked_at_build_time(built_site, page, source):
    """Three or more exercises at the end of every post, each answer collapsed, each answer a claim
    the build checked against the runs (site/claims.json) and found holding."""
    html = (built_site / page / "index.html").read_text(encoding="utf-8")
    section = html[html.index('id="exercises-find-it-in-the-trace"'):]
    answers = re.findall(r'<details class="question">\s*<summary>Answer</summary>(.*?)</details>', section, re.S)
    assert len(answers) >= 3, page
    claims = [c for c in json.loads((built_site / "claims.json").read_text())["claims"]
              if c["page"].endswith(source)]
    for answer in answers:
        text = unescape(re.sub(r"<[^>]+>", "", re.sub(r'<a class="glossary-term"[^>]*>|</a>', "", answer)))
        # The listing keeps a statement's text without anything in angle brackets (a kernel's
        # template included): the page's text, read the same way.
        text = " ".join(re.sub(r"<[^>]+>", "", text).split())
        matching = [c for c in claims if text.startswith(c["statement"].removesuffix("...").rstrip())]
        assert len(matching) == 1, f"{page}: an answer that is not one checked claim: {text[:80]!r}"
        assert matching[0]["status"] == "holds" and matching[0]["runs"], matching[0]


# --- the same facts from the raw JSON --------------------------------------------------------------


def raw_events(key: str) -> list[dict]:
    return json.loads(gzip.decompress(example(key).example.trace_path.read_bytes()))["traceEvents"]


def raw_launches(events: list[dict]) -> dict[int, dict]:
    """The runtime or driver call of each correlation id."""
    return {e["args"]["correlation"]: e for e in events
            if e.get("cat") in LAUNCH_CATS and "correlation" in e.get("args", {})}


def raw_span(e: dict) -> tuple[float, float]:
    return float(e["ts"]), float(e["ts"]) + float(e.get("dur", 0))


@pytest.mark.parametrize("key, module", [
    ("01_matmul_add/64_bf16_cold_eager", "part1"),
    ("01_matmul_add/4096_bf16_cold_eager", "part1"),
    ("03_simple_mlp/mlp_b64_s128_768x3072_bf16_warm_eager", "exercises"),
    ("04_attention/sdpa_math_b8_h16_s1024_d64_bf16_warm", "exercises"),
    ("01_matmul_add_sweep/sweep_bf16_16-8192", "exercises"),
])
def test_the_longest_launch_wait_is_the_one_the_raw_trace_gives(key, module):
    """A kernel's start minus the end of the runtime or driver call with its correlation id: the
    largest is the one the answers name (Part 1 reads it through part1, the others through
    exercises), and for the sweep, the block annotation holding its launch is the one named."""
    import importlib

    helper = importlib.import_module(f"scripts.series.pages.posts.{module}")
    events = raw_events(key)
    calls = raw_launches(events)
    waits = [(float(k["ts"]) - raw_span(calls[k["args"]["correlation"]])[1], k["name"], k["args"]["correlation"])
             for k in events if k.get("cat") == "kernel" and k.get("args", {}).get("correlation") in calls]
    delay, name, correlation = max(waits)
    found = helper.longest_launch_wait(example(key))
    assert found.kernel == name and found.delay_us == pytest.approx(delay, abs=1e-3), key
    # the answers say where the launch ran: the ProfilerStep whose span holds the launch call
    start = float(calls[correlation]["ts"])
    holding = [e["name"] for e in events if e.get("cat") == "user_annotation"
               and e["name"].startswith("ProfilerStep#") and raw_span(e)[0] <= start < raw_span(e)[1]]
    assert found.launch_step == (holding[0] if holding else None), key
    assert found.launched_in == (f"in `{holding[0]}`" if holding else "outside the recorded steps")
    if key.startswith("01_matmul_add_sweep"):
        start = float(calls[correlation]["ts"])
        blocks = [e for e in events if e.get("cat") == "user_annotation" and re.fullmatch(r"\w+ n=\d+", e["name"])
                  and raw_span(e)[0] <= start < raw_span(e)[1]]
        from scripts.series.pages.posts.exercises import annotation_at

        assert annotation_at(example(key), found.launch_ts, r"\w+ n=\d+") == min(blocks, key=lambda e: e["dur"])["name"]


def test_gpu_shares_by_name_from_the_raw_trace():
    """Part 2's and Part 3's answers: the GPU time of each activity name over the whole trace."""
    from scripts.series.pages.posts.exercises import gpu_time_by_name

    for key in ("03_simple_mlp/mlp_b64_s128_768x3072_bf16_warm_eager", "04_attention/naive_b8_h16_s1024_d64_bf16_warm"):
        time = Counter()
        for e in raw_events(key):
            if e.get("cat") in GPU_CATS:
                time[e["name"]] += float(e["dur"])
        whole = sum(time.values())
        found = gpu_time_by_name(example(key))
        assert [g.name for g in found[:3]] == [n for n, _ in time.most_common(3)], key
        assert found[0].pct == pytest.approx(100 * time.most_common(1)[0][1] / whole, abs=1e-6)


@pytest.mark.parametrize("key", ["05_llm_inference/decode_b1_p512_static_compile",
                                 "04_attention/sdpa_math_b8_h16_s1024_d64_bf16_warm"])
def test_what_one_step_launches_from_the_raw_trace(key):
    """Parts 3 and 4: per ProfilerStep, the GPU activities whose launch call began in it, and those
    calls by name (a CUDA graph's replay is one call for many kernels)."""
    from scripts.series.pages.posts.exercises import step_work

    events = raw_events(key)
    calls = raw_launches(events)
    steps = sorted((e for e in events if str(e.get("name", "")).startswith("ProfilerStep#")
                    and e.get("cat") == "user_annotation"), key=lambda e: float(e["ts"]))
    found = step_work(example(key))
    assert [w.step for w in found] == [s["name"] for s in steps]
    for step, work in zip(steps, found):
        start, end = raw_span(step)
        launched = [(a, calls[a["args"]["correlation"]]) for a in events if a.get("cat") in GPU_CATS
                    and a.get("args", {}).get("correlation") in calls
                    and start <= float(calls[a["args"]["correlation"]]["ts"]) < end]
        assert work.kernels == sum(a["cat"] == "kernel" for a, _ in launched)
        assert work.activities == len(launched)
        by_call = {c["args"]["correlation"]: c["name"] for _, c in launched}
        assert work.launches == dict(Counter(by_call.values()))


def test_the_compiled_region_around_addmm_from_the_raw_trace():
    """Part 2's third answer: the Torch-Compiled Region rows' host time in the recorded steps, and
    the aten::addmm inside them."""
    from scripts.series.pages.posts.part2 import compiled_region

    key = "02_linear/linear_b1024_32x64_bf16_warm_compile"
    events = raw_events(key)
    steps = [raw_span(e) for e in events if str(e.get("name", "")).startswith("ProfilerStep#")]
    ops = [e for e in events if e.get("cat") == "cpu_op"]
    regions = [e for e in ops if e["name"].startswith("Torch-Compiled Region")
               and any(s <= float(e["ts"]) < t for s, t in steps)]
    inner = [e for e in ops if e["name"] == "aten::addmm" and any(
        r["tid"] == e["tid"] and raw_span(r)[0] <= raw_span(e)[0] and raw_span(e)[1] <= raw_span(r)[1] for r in regions)]
    found = compiled_region(example(key))
    assert found.region_us == pytest.approx(sum(float(e["dur"]) for e in regions), abs=1e-3)
    assert found.op_us == pytest.approx(sum(float(e["dur"]) for e in inner), abs=1e-3) and found.op_us > 0
