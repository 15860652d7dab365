"""Before and after in the in-browser analyzer (docs/guide/analyze-in-browser.md,
scripts/tracefacts/entry/browser.py's compare_json and compare_timelines_json).

Two traces, dropped at once or one after the other, give the deltas that
`python scripts/analyze.py BEFORE AFTER --diff --json` prints, the posts' before/after table and
both timelines on one time scale, the ones `--diff --svg OUT` draws; a second file that cannot be
read gets the command line's one line and leaves the first's results; nothing leaves the site; and
the first drop does not load the diff's modules.
"""

from __future__ import annotations

import html
import json
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from scripts.tracefacts.entry import browser as reader  # `browser` is the Chromium fixture here
from scripts.series.pages import analyzer_page as pages_browser
from tests.conftest import ROOT
from tests.test_browser import base_url, browser, visit  # noqa: F401 (fixtures)
from tests.test_browser_analyzer import (DONE, PAGE, SHOWN, TIMELINE_LOADED, cli_error, cli_facts,  # noqa: F401
                                         malformed, refuse_threads, session, without_source)

# Part 1's 64x64 eager vs compiled, Part 4's decode with a static cache, eager vs CUDA graphs.
PART1 = (ROOT / "traces/01_matmul_add/64_bf16_warm_eager.json.gz",
         ROOT / "traces/01_matmul_add/64_bf16_warm_compile.json.gz")
PART4 = (ROOT / "traces/05_llm_inference/decode_b1_p512_static_eager.json.gz",
         ROOT / "traces/05_llm_inference/decode_b1_p512_static_compile.json.gz")
DIFF_MODULES = {"tracefacts/facts/diff", "tracefacts/pictures/comparison"}


def cli_diff(before: Path, after: Path, svg_dir: Path | None = None) -> dict:
    """What `python scripts/analyze.py BEFORE AFTER --diff --json [--svg OUT]` prints."""
    svg = ["--svg", str(svg_dir)] if svg_dir else []
    done = subprocess.run([sys.executable, "scripts/analyze.py", str(before), str(after), "--diff", "--json", *svg],
                          cwd=ROOT, capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


def without_sources(d: dict) -> dict:
    return {**d, "before": without_source(d["before"]), "after": without_source(d["after"])}


def upload(tmp_path: Path, trace: Path, name: str = "upload") -> str:
    """The dropped file, where the worker writes it (one path for both, as there)."""
    path = tmp_path / name
    path.write_bytes(trace.read_bytes())
    return str(path)


# --- the Python side, without a browser ----------------------------------------------------------


@pytest.mark.parametrize("pair", [PART1, PART4], ids=["part1", "part4"])
def test_two_traces_give_the_cli_diff_and_its_timelines(pair, tmp_path, monkeypatch):
    before, after = pair
    expected = cli_diff(before, after, svg_dir=tmp_path / "cli")
    monkeypatch.setattr(threading.Thread, "start", refuse_threads)
    assert "error" not in json.loads(reader.read_json(upload(tmp_path, before), before.name))
    out = json.loads(reader.compare_json(upload(tmp_path, after), after.name))
    assert "error" not in out, out
    assert (out["diff"]["before"]["source"], out["diff"]["after"]["source"]) == (before.name, after.name)
    assert without_sources(out["diff"]) == without_sources(expected)
    assert out["diff"]["before"]["verdict"]["reason"] in html.unescape(out["table"])
    assert out["diff"]["after"]["verdict"]["reason"] in html.unescape(out["table"])
    pictures = json.loads(reader.compare_timelines_json())
    # The pictures the command line draws for the pair, on one time scale, byte for byte.
    assert pictures["before"]["svg"] == (tmp_path / "cli/before.svg").read_text(encoding="utf-8")
    assert pictures["after"]["svg"] == (tmp_path / "cli/after.svg").read_text(encoding="utf-8")


def test_a_second_file_it_cannot_read_leaves_the_first(tmp_path):
    before, after = PART1
    first = json.loads(reader.read_json(upload(tmp_path, before), before.name))
    for bad in malformed(tmp_path):
        out = json.loads(reader.compare_json(str(bad), bad.name))
        assert out == {"error": f"{bad.name}: {cli_error(bad)}"}
        assert "error" in json.loads(reader.compare_timelines_json())
    assert json.loads(reader.timeline_json())["window"] == first["facts"]["steps"][0]["label"]
    out = json.loads(reader.compare_json(upload(tmp_path, after), after.name))  # the next one is read
    assert without_sources(out["diff"]) == without_sources(cli_diff(before, after))


def test_nothing_to_compare_with_is_one_line(tmp_path):
    reader.read_json(str(tmp_path / "missing"), "missing.json")
    out = json.loads(reader.compare_json(upload(tmp_path, PART1[1]), PART1[1].name))
    assert list(out) == ["error"] and "\n" not in out["error"]


def test_the_first_drop_does_not_load_the_diff_and_the_page_ships_what_it_does(tmp_path):
    # A fresh interpreter does what the worker does, listing what it has imported after each drop.
    code = f"""
import json, sys
from pathlib import Path
top = Path({str(ROOT / "scripts")!r})
sys.path.insert(0, str(top))
from tracefacts.entry import browser
ours = lambda: sorted(Path(m.__file__).relative_to(top).with_suffix("").as_posix()
                      for name, m in list(sys.modules.items()) if name.split(".")[0] == "tracefacts")
assert "error" not in json.loads(browser.read_json({upload(tmp_path, PART1[0])!r}, "b.json.gz"))
assert "svg" in json.loads(browser.timeline_json())
first = ours()
assert "error" not in json.loads(browser.compare_json({upload(tmp_path, PART1[1], "second")!r}, "a.json.gz"))
assert "after" in json.loads(browser.compare_timelines_json())
print(json.dumps([first, ours()]))
"""
    done = subprocess.run([sys.executable, "-I", "-S", "-c", code], capture_output=True, text=True, check=True)
    first, both = json.loads(done.stdout)
    assert not DIFF_MODULES & set(first)
    assert DIFF_MODULES <= set(both) <= set(pages_browser.shipped_modules())


# --- in Chromium, on the built site -------------------------------------------------------------


DIFF_SHOWN = """(root) => ({
  diff: root.analyzerDiff,
  facts: root.analyzerFacts,
  title: root.querySelector('.analyzer-diff-title').textContent,
  table: root.querySelector('.analyzer-diff-table').innerText,
  rows: root.querySelectorAll('.analyzer-diff-table tbody tr').length,
  pictures: Array.from(root.querySelectorAll('.analyzer-diff-timeline img'), (i) => i.naturalWidth),
  captions: Array.from(root.querySelectorAll('.analyzer-diff-timeline figcaption'), (c) => c.textContent),
  status: root.querySelector('.analyzer-stage').textContent,
  error: root.querySelector('.analyzer-error').hidden ? null : root.querySelector('.analyzer-error').textContent,
  single: !root.querySelector('.analyzer-output').hidden,
})"""
PAIR_LOADED = """() => { const imgs = document.querySelectorAll('.trace-analyzer .analyzer-diff-timeline img');
                        return imgs.length === 2 && Array.from(imgs).every((i) => i.complete); }"""
# Every text the progress line shows, kept as it changes.
WATCH_STAGES = """() => { window.stages = [];
  new MutationObserver(() => window.stages.push(document.querySelector('.analyzer-stage').textContent))
    .observe(document.querySelector('.analyzer-stage'), {childList: true, characterData: true, subtree: true}); }"""


def compared(page, timeout: int = 180_000) -> dict:
    page.wait_for_function(DONE, timeout=timeout)
    page.wait_for_function(PAIR_LOADED)
    return page.locator(".trace-analyzer").evaluate(DIFF_SHOWN)


def check_pair(shown: dict, before: Path, after: Path) -> None:
    expected = cli_diff(before, after)
    assert shown["error"] is None
    assert without_sources(shown["diff"]) == without_sources(expected)
    assert (shown["diff"]["before"]["source"], shown["diff"]["after"]["source"]) == (before.name, after.name)
    for side in ("before", "after"):
        assert expected[side]["verdict"]["label"] in shown["title"]
        assert expected[side]["verdict"]["reason"] in shown["table"]
    assert shown["rows"] > 5 and "GPU busy, of the time window" in shown["table"]
    assert all(width > 0 for width in shown["pictures"]) and len(shown["pictures"]) == 2
    assert all("share one time scale" in caption for caption in shown["captions"])
    assert shown["single"] and without_source(shown["facts"]) == without_source(cli_facts(before))
    assert f"{before.name} → {after.name}: read and compared on this machine" in shown["status"]


def test_two_traces_chosen_at_once_then_a_second_after_the_first(session):
    page = session.open(PAGE)
    page.evaluate(WATCH_STAGES)
    page.set_input_files(".trace-analyzer .analyzer-input", [str(p) for p in PART1])
    check_pair(compared(page), *PART1)
    stages = page.evaluate("window.stages")
    assert any(s.startswith(f"Reading {PART1[1].name}") for s in stages), stages
    assert "Comparing the two traces…" in stages and "Drawing the timeline…" in stages
    # One trace, then the one after it on the second zone.
    page.set_input_files(".trace-analyzer .analyzer-input", str(PART4[0]))
    page.wait_for_function(DONE, timeout=120_000)
    page.wait_for_function(TIMELINE_LOADED)
    assert page.locator(".trace-analyzer .analyzer-diff").is_hidden()
    assert page.locator(".trace-analyzer .analyzer-before-name").inner_text() == PART4[0].name
    page.set_input_files(".trace-analyzer .analyzer-input-after", str(PART4[1]))
    check_pair(compared(page), *PART4)
    assert not session.external, session.external
    assert not session.problems, "\n".join(session.problems)


DROP_ON_SECOND = """([name, text]) => {
  const transfer = new DataTransfer();
  transfer.items.add(new File([text], name, {type: "application/json"}));
  const where = document.querySelector(".trace-analyzer .analyzer-compare");
  for (const type of ["dragover", "drop"]) {
    where.dispatchEvent(new DragEvent(type, {dataTransfer: transfer, bubbles: true, cancelable: true}));
  }
}"""


def test_a_second_file_it_cannot_read_gets_one_line_and_the_first_stays(session, tmp_path):
    before, after = PART1
    page = session.open(PAGE)
    assert page.locator(".trace-analyzer .analyzer-compare").is_hidden()  # nothing to compare with yet
    page.set_input_files(".trace-analyzer .analyzer-input", str(before))
    page.wait_for_function(DONE, timeout=120_000)
    page.wait_for_function(TIMELINE_LOADED)
    first = page.locator(".trace-analyzer").evaluate(SHOWN)
    error = page.locator(".trace-analyzer .analyzer-error")
    for path in malformed(tmp_path):
        page.set_input_files(".trace-analyzer .analyzer-input-after", str(path))
        page.wait_for_function(DONE, timeout=120_000)
        assert error.inner_text() == f"{path.name}: {cli_error(path)}"
        assert page.locator(".trace-analyzer .analyzer-diff").is_hidden()
        now = page.locator(".trace-analyzer").evaluate(SHOWN)
        assert {**now, "status": None} == {**first, "status": None}
        assert page.locator(".trace-analyzer .analyzer-output").is_visible()
        assert page.locator(".trace-analyzer .analyzer-input-after").is_enabled()
    bad = tmp_path / "dropped.json"  # dropped on the second zone, not read as a first trace
    bad.write_text('{"traceEvents": [{"ph": "X", "ts": 1}', encoding="utf-8")
    page.evaluate(DROP_ON_SECOND, [bad.name, bad.read_text()])
    page.wait_for_function(DONE, timeout=120_000)
    assert error.inner_text() == f"{bad.name}: {cli_error(bad)}"
    assert page.locator(".trace-analyzer").evaluate("(root) => root.analyzerFacts.events") == first["facts"]["events"]
    page.set_input_files(".trace-analyzer .analyzer-input-after", str(after))  # and the next good one is read
    check_pair(compared(page), before, after)
    assert error.is_hidden()
    assert not session.external, session.external
    assert not session.problems, "\n".join(session.problems)
