"""Hostile files in the in-browser analyzer (docs/guide/analyze-in-browser.md; issue 29): a gzip
bomb is refused without the tab holding what it decompresses to, a long analysis can be stopped from
the page, every failure is one line naming the file (one while the answer is serialized too), and a
name of megabytes neither freezes the page nor fills it.

The memory measured is the resident memory of the browser's renderer processes (the page and its
worker, Pyodide's WebAssembly memory and its in-memory file system included, run in one), read from
Linux's /proc: what the tab costs the machine. Its peak (VmHWM) is reset before the drop.
"""

from __future__ import annotations

import gzip
import json
import time
import tracemalloc
from pathlib import Path

import pytest

from scripts.tracefacts.entry import browser as reader  # `browser` is the Chromium fixture here
from scripts.tracefacts.model.trace import TraceError
from tests.test_browser import base_url, browser, visit  # noqa: F401 (fixtures)
from tests.test_browser_analyzer import (DONE, MATMUL, PAGE, analyzed, cli_facts, session,  # noqa: F401
                                         without_source)
from tests.timeline_traces import GEMM_KERNEL, gpu_trace

INPUT = ".trace-analyzer .analyzer-input"
MiB = 1 << 20
# The page's own bound on a text node or attribute (docs/javascripts/analyzer.js MAX_CHARS), and
# what its clip adds ("… [cut: N characters]").
MAX_CHARS = 10000
CLIP_MARK = 40


def bomb(path: Path, text_bytes: int, member_bytes: int = 64 * MiB) -> Path:
    """A gzip bomb: a trace's start, then one member of events repeated (several members are
    valid gzip) until it decompresses to `text_bytes`; a few megabytes for a gigabyte."""
    event = b'{"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 1, "tid": 1, "ts": 1, "dur": 1},'
    member = gzip.compress(event * (member_bytes // len(event)), compresslevel=9)
    with path.open("wb") as out:
        out.write(gzip.compress(b'{"traceEvents": ['))
        for _ in range(-(-text_bytes // member_bytes)):
            out.write(member)
    return path


def many_events(path: Path, count: int) -> Path:
    """A valid trace of `count` host ops in one ProfilerStep: tens of seconds to analyze in a tab."""
    parts = ['{"traceEvents": [{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", '
             f'"pid": 1, "tid": 1, "ts": 0, "dur": {2 * count}}}']
    parts += [f',{{"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 1, "tid": 1, "ts": {2 * i}, "dur": 1}}'
              for i in range(count)]
    parts.append("]}")
    path.write_bytes(gzip.compress("".join(parts).encode(), compresslevel=1))
    return path


def named_trace(path: Path, old: str, new: str) -> Path:
    """The timeline tests' GPU trace with the event named `old` renamed `new`, gzipped."""
    data = gpu_trace(steps=2)
    event = next(e for e in data["traceEvents"] if e.get("name") == old)
    event["name"] = new
    with gzip.open(path, "wt", encoding="utf-8", compresslevel=6) as out:
        json.dump(data, out, ensure_ascii=False)
    return path


# --- the Python side, without a browser ----------------------------------------------------------


def test_a_gzip_bomb_is_refused_a_chunk_at_a_time_and_nothing_is_written(tmp_path):
    upload = bomb(tmp_path / "upload", 512 * MiB, member_bytes=16 * MiB)
    assert upload.stat().st_size * reader.DEFLATE_MAX_RATIO > 256 * MiB  # so it is measured first
    tracemalloc.start()
    try:
        with pytest.raises(TraceError) as refused:
            reader.read(upload, "bomb.json.gz", limit=256 * MiB)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert str(refused.value) == ("bomb.json.gz: decompresses to more than 256 MB, more than a "
                                  "browser tab can analyze: use the command line")
    # A few chunks of at most 8 MiB (the one counted, the next, zlib's own buffer), not the text.
    assert peak < 32 * MiB, f"{peak / MiB:.0f} MiB held to refuse 512 MiB"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["upload"]


def test_a_gzip_file_within_the_limit_is_read_whole_once_measured(tmp_path):
    data = gzip.decompress(MATMUL.read_bytes())
    upload = tmp_path / "upload"
    upload.write_bytes(gzip.compress(data))
    limit = len(data)  # measured first (the file is larger than limit / 1032), and not refused
    assert upload.stat().st_size * reader.DEFLATE_MAX_RATIO > limit
    shown = reader.read(upload, "m.json.gz", limit=limit)
    assert without_source(shown.facts.to_dict()) == without_source(reader.read(MATMUL, "m").facts.to_dict())
    with pytest.raises(TraceError, match=r"^m\.json\.gz: decompresses to more than"):
        reader.read(upload, "m.json.gz", limit=limit - 1)


def test_a_plain_file_larger_than_the_limit_is_refused_before_it_is_read(tmp_path):
    upload = tmp_path / "upload"
    upload.write_bytes(b"[" + b" " * 5000 + b"]")
    with pytest.raises(TraceError, match=r"^big\.json: holds more than 0 MB, more than a browser tab"):
        reader.read(upload, "big.json", limit=4000)


@pytest.mark.parametrize("failure", [MemoryError(), RecursionError("maximum recursion depth exceeded"),
                                     ValueError("x" * 10_000_000)], ids=["memory", "recursion", "huge-message"])
def test_a_failure_while_the_answer_is_made_is_one_line_naming_the_file(failure, tmp_path, monkeypatch):
    upload = tmp_path / "upload"
    upload.write_bytes(MATMUL.read_bytes())

    def fails(self, guide_href):
        raise failure

    monkeypatch.setattr(reader.Report, "facts_box", fails)
    out = json.loads(reader.read_json(str(upload), "m.json.gz"))
    assert list(out) == ["error"]
    line = out["error"]
    assert line.startswith("m.json.gz: ") and "\n" not in line and len(line) <= reader.MAX_ERROR_CHARS
    assert json.loads(reader.timeline_json()) == {"error": "no trace has been read"}  # nothing half-shown


def test_an_answer_longer_than_the_page_takes_is_refused_in_one_line(tmp_path, monkeypatch):
    upload = tmp_path / "upload"
    upload.write_bytes(MATMUL.read_bytes())
    whole = reader.read_json(str(upload), "m.json.gz")
    assert json.loads(whole)["facts"]["source"] == "m.json.gz"
    monkeypatch.setattr(reader, "MAX_ANSWER_CHARS", len(whole) - 1)
    out = json.loads(reader.read_json(str(upload), "m.json.gz"))
    assert out["error"].startswith("m.json.gz: too long to show on this page (its results would be more than")


# --- in Chromium, on the built site -------------------------------------------------------------


def _status_mib(pid: int, key: str) -> float:
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith(f"{key}:"):
                    return int(line.split()[1]) / 1024
    except OSError:  # it ended
        pass
    return 0.0


class Renderers:
    """The browser's renderer processes (a page and its dedicated workers run in one): their
    resident memory in MiB, now (VmRSS) and the peak since `reset_peaks` (VmHWM); their CPU time."""

    def __init__(self, browser):  # noqa: F811 (the fixture's value)
        self.cdp = browser.new_browser_cdp_session()

    def pids(self) -> list[int]:
        found = self.cdp.send("SystemInfo.getProcessInfo")["processInfo"]
        return [p["id"] for p in found if p["type"] == "renderer"]

    def now(self) -> float:
        return sum(_status_mib(pid, "VmRSS") for pid in self.pids())

    def cpu_seconds(self, seconds: float) -> float:
        """The CPU time they take in the next `seconds`."""
        def total():
            return sum(p["cpuTime"] for p in self.cdp.send("SystemInfo.getProcessInfo")["processInfo"]
                       if p["type"] == "renderer")
        start = total()
        time.sleep(seconds)
        return total() - start

    def peak(self) -> float:
        return sum(_status_mib(pid, "VmHWM") for pid in self.pids())

    def reset_peaks(self) -> None:
        for pid in self.pids():
            try:
                with open(f"/proc/{pid}/clear_refs", "w") as clear:
                    clear.write("5")  # VmHWM back to VmRSS (Linux)
            except PermissionError:
                pytest.skip("cannot reset the renderers' peak memory (/proc/PID/clear_refs): not root")


def test_a_refused_gzip_bomb_costs_the_tab_no_more_than_a_chunk(session, browser, tmp_path):  # noqa: F811
    path = bomb(tmp_path / "bomb.json.gz", 1200 * MiB)  # 4 MB
    assert path.stat().st_size < 8 * MiB
    renderers = Renderers(browser)
    page = session.open(PAGE)
    page.click(".trace-analyzer .analyzer-preload")
    page.wait_for_function("document.querySelector('.trace-analyzer').dataset.loadSeconds", timeout=120_000)
    page.wait_for_timeout(500)
    before = renderers.now()
    renderers.reset_peaks()
    page.set_input_files(INPUT, str(path))
    page.wait_for_function(DONE, timeout=120_000)
    peak, after = renderers.peak(), renderers.now()
    error = page.locator(".trace-analyzer .analyzer-error").inner_text()
    assert error == ("bomb.json.gz: decompresses to more than 1024 MB, more than a browser tab can "
                     "analyze: use the command line")
    # 1200 MiB decompressed: the tab held a chunk of it at a time (it grew by 4.8 GB, and kept 2 GB,
    # when the text was written to Pyodide's file system), and kept none of it.
    assert peak - before < 200, f"the tab grew from {before:.0f} MiB to {peak:.0f} MiB"
    assert after - before < 100, f"the tab kept {after - before:.0f} MiB"
    shown = analyzed(page, MATMUL)  # and the next file is read
    assert without_source(shown["facts"]) == without_source(cli_facts(MATMUL))
    assert not session.problems, "\n".join(session.problems)


def analyzers(page) -> list:
    """The page's analyzer workers (the site's search has one of its own)."""
    return [w for w in page.workers if w.url.endswith("/analyzer-worker.js")]


def test_stop_ends_a_long_analysis_and_the_next_drop_is_read(session, browser, tmp_path):  # noqa: F811
    slow = many_events(tmp_path / "slow.json.gz", 1_000_000)  # most of a minute in a tab
    renderers = Renderers(browser)
    page = session.open(PAGE)
    root = page.locator(".trace-analyzer")
    stop = root.locator(".analyzer-stop")
    assert stop.is_hidden()
    page.set_input_files(INPUT, str(slow))
    # Python at work on it: measuring it (what only the worker says), or reading past the start
    page.wait_for_function("/^(Measuring slow|Reading slow\\.json\\.gz: [1-9])/.test("
                           "document.querySelector('.trace-analyzer .analyzer-stage').textContent)",
                           timeout=120_000, polling=50)
    assert stop.is_visible() and len(analyzers(page)) == 1
    closed = []
    analyzers(page)[0].on("close", lambda worker: closed.append(time.monotonic()))
    working = renderers.cpu_seconds(2)
    reading = root.locator(".analyzer-stage").inner_text()
    began = time.monotonic()
    stop.click()
    page.wait_for_function(DONE, timeout=2_000)  # the page is free at once
    while not closed and time.monotonic() - began < 10:
        page.wait_for_timeout(100)
    # Ending a worker busy in WebAssembly takes a moment (a second or two here).
    assert closed and closed[0] - began < 5, f"the worker still runs (it was at {reading!r})"
    assert analyzers(page) == []
    idle = renderers.cpu_seconds(2)  # and anything still coming from it would show by now
    assert idle < working / 3, f"{idle:.2f} s of CPU in 2 s once stopped, {working:.2f} s before"
    assert root.locator(".analyzer-stage").inner_text() == \
        "Stopped: slow.json.gz was not analyzed. Drop or choose a trace to start again."
    assert root.locator(".analyzer-error").is_hidden() and root.locator(".analyzer-output").is_hidden()
    assert stop.is_hidden() and root.locator(".analyzer-input").is_enabled()
    assert root.evaluate("(r) => r.analyzerFacts") is None
    shown = analyzed(page, MATMUL)  # a fresh worker reads the next one
    assert without_source(shown["facts"]) == without_source(cli_facts(MATMUL))
    assert f"{MATMUL.name}: analyzed on this machine" in shown["status"]
    assert not session.problems, "\n".join(session.problems)


# The longest task of the page's main thread (ms), from the time it opens.
LONGEST_TASK = """window.longestTask = 0;
new PerformanceObserver((list) => {
  for (const entry of list.getEntries()) window.longestTask = Math.max(window.longestTask, entry.duration);
}).observe({type: "longtask", buffered: true});"""

# What the page holds as text: in all, and its longest line of a text node or an attribute.
TEXT_OF_THE_PAGE = """(root) => {
  const texts = [];
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_ELEMENT | NodeFilter.SHOW_TEXT);
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    if (n.nodeType === Node.TEXT_NODE) texts.push(n.data);
    else for (const a of n.attributes) texts.push(a.value);
  }
  return {total: texts.reduce((sum, t) => sum + t.length, 0),
          longest: Math.max(...texts.flatMap((t) => t.split("\\n").map((line) => line.length)))};
}"""


def test_a_name_of_megabytes_neither_freezes_the_page_nor_fills_it(session, tmp_path):
    # A ProfilerStep's name: the summary, the per-step table, the facts box and the timeline's
    # caption all name the step.
    path = named_trace(tmp_path / "long-name.json.gz", "ProfilerStep#2", "ProfilerStep#2" + "x" * 4_000_000)
    assert path.stat().st_size < 100_000
    session.context.add_init_script(LONGEST_TASK)
    page = session.open(PAGE)
    started = time.monotonic()
    page.set_input_files(INPUT, str(path))
    page.wait_for_function(DONE, timeout=240_000)
    took = time.monotonic() - started
    root = page.locator(".trace-analyzer")
    error = root.locator(".analyzer-error")
    if error.is_visible():  # refused: in one line naming the file
        assert error.inner_text().startswith(f"{path.name}: ") and "\n" not in error.inner_text()
    else:
        assert root.locator(".analyzer-output").is_visible()
        assert root.evaluate("(r) => r.analyzerFacts.steps.length") == 2
    text = root.evaluate(TEXT_OF_THE_PAGE)
    assert text["longest"] <= MAX_CHARS + CLIP_MARK, text
    assert text["total"] < 200_000, text  # 4 MB in each place that names the step, unbounded
    longest = page.evaluate("window.longestTask")
    assert longest < 1_500, f"the page froze for {longest / 1000:.1f} s (analysis: {took:.0f} s)"
    assert not session.problems, "\n".join(session.problems)


def test_a_failure_while_the_answer_is_serialized_is_one_line_naming_the_file(session, tmp_path):
    # The case: a kernel's name of 100 million "é" (600 million characters as the JSON
    # the worker hands on) once stopped the worker with "when serializing dict item 'facts_box'".
    path = named_trace(tmp_path / "kernel-name.json.gz", GEMM_KERNEL, "é" * 100_000_000)
    assert path.stat().st_size < 1 * MiB
    page = session.open(PAGE)
    page.set_input_files(INPUT, str(path))
    page.wait_for_function(DONE, timeout=240_000)
    root = page.locator(".trace-analyzer")
    error = root.locator(".analyzer-error")
    if error.is_visible():
        line = error.inner_text()
        assert line.startswith(f"{path.name}: ") and "\n" not in line and len(line) < 1000, line
        assert "serializ" not in line and "Traceback" not in line and "analyzer stopped" not in line, line
    else:  # shown, bounded
        assert root.evaluate(TEXT_OF_THE_PAGE)["longest"] <= MAX_CHARS + CLIP_MARK
    shown = analyzed(page, MATMUL)  # and the page carries on
    assert without_source(shown["facts"]) == without_source(cli_facts(MATMUL))
    assert not session.problems, "\n".join(session.problems)
