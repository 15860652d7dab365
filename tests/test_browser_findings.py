"""Findings you can open, in Chromium on the built site (docs/javascripts/perfetto.js).

A finding's link opens ui.perfetto.dev (a fake one, tests/test_browser.py) at its deep link (the
URL window.open is given: zoom and selection, in Perfetto's nanoseconds of the trace's event) and
posts it the trace's exact bytes; from the in-browser analyzer, the bytes of the file the reader
dropped, from memory. When Perfetto does not answer (blocked), or the browser is offline, the page
says so within 5 s and offers the trace's download and the address to drop it on; the same when
the browser blocks the new tab twice.
"""

from __future__ import annotations

import gzip
import hashlib
import json
from urllib.parse import parse_qsl, urlsplit

import pytest

from scripts.tracefacts.model.perfetto import perfetto_ns
from tests.test_browser import assert_delivered, base_url, browser, served_file, visit  # noqa: F401 (fixtures)
from tests.test_browser_analyzer import MATMUL, PAGE, analyzed

ATTENTION_PAGE = "blog/attention/"
COPY_LINK = "p.perfetto-finding button.perfetto-at"  # Part 3's hidden copy
FINDING = ".facts button.perfetto-at"
FINDING_DATA = """(b) => ({url: b.dataset.perfettoUrl, trace: b.dataset.trace, file: b.dataset.file,
                         title: b.dataset.title, source: b.dataset.source})"""
RECORD_OPENS = """(() => {
  const open = window.open.bind(window);
  window.openedUrls = [];
  window.open = (...args) => { window.openedUrls.push(args[0]); return open(...args); };
})();"""
BLOCK_POPUPS = "window.open = () => null;"
# The page's own clock: when a Perfetto button was clicked, and when the help first showed (the
# test's wall clock would add Playwright's own latency on a busy machine).
TIME_THE_HELP = """(() => {
  window.helpTiming = {};
  document.addEventListener("click", (event) => {
    if (event.target.closest && event.target.closest("button.perfetto-at, button.perfetto-open")) {
      window.helpTiming = { clicked: performance.now() };
    }
  }, true);
  new MutationObserver(() => {
    if (window.helpTiming.clicked && !window.helpTiming.shown
        && document.querySelector(".perfetto-status[data-help]")) window.helpTiming.shown = performance.now();
  }).observe(document, { subtree: true, childList: true, attributes: true });
})();"""
HELP = ".perfetto-status[data-help]"


def route_args(url: str) -> dict[str, str]:
    parts = urlsplit(url)
    assert (parts.scheme, parts.netloc) == ("https", "ui.perfetto.dev") and parts.fragment.startswith("!/?")
    return dict(parse_qsl(parts.fragment[3:]))


def test_a_finding_opens_perfetto_at_its_event_with_the_trace(visit, built_site):
    v = visit()
    v.context.add_init_script(RECORD_OPENS)
    page = v.open(ATTENTION_PAGE)
    button = page.locator(COPY_LINK).first
    data = button.evaluate(FINDING_DATA)
    with page.expect_popup() as popup:
        button.click()
    assert_delivered(popup.value, data, page.url, built_site)
    assert page.evaluate("window.openedUrls") == [data["url"]]
    assert popup.value.url == data["url"]
    args = route_args(data["url"])
    ts, dur = int(args["ts"]), int(args["dur"])
    assert int(args["visStart"]) < ts < ts + dur < int(args["visEnd"])
    # The event it selects is the copy in the served trace: Perfetto's nanoseconds of its numbers.
    raw = json.loads(gzip.decompress(served_file(built_site, page.url, data["trace"]).read_bytes()))
    (copy,) = [e for e in raw["traceEvents"] if e.get("ph") == "X" and perfetto_ns(e["ts"]) == ts
               and perfetto_ns(e["dur"]) == dur and (str(e["pid"]), str(e["tid"])) == (args["pid"], args["tid"])]
    assert copy["name"].startswith("Memcpy DtoD")
    page.locator(".perfetto-status", has_text="Opened in Perfetto").first.wait_for()
    assert not v.problems, "\n".join(v.problems)


def wait_for_help(page) -> dict:
    """The help beside the clicked button, once shown, and how many seconds after the click it
    came, by the page's clock."""
    page.locator(HELP).first.wait_for(timeout=15_000)
    page.wait_for_function("window.helpTiming.shown")
    shown = page.locator(HELP).first.evaluate("""(s) => ({text: s.textContent,
        download: s.querySelector('a.perfetto-download')?.getAttribute('href') || null,
        address: s.querySelector('a.perfetto-address')?.getAttribute('href') || null,
        seconds: (window.helpTiming.shown - window.helpTiming.clicked) / 1000})""")
    return shown


@pytest.mark.parametrize("how", ["blocked", "offline"])
def test_no_answer_from_perfetto_says_so_within_5_s_and_offers_what_works(visit, built_site, how):
    v = visit()
    v.context.add_init_script(TIME_THE_HELP)
    page = v.open(ATTENTION_PAGE)
    button = page.locator(COPY_LINK).first
    data = button.evaluate(FINDING_DATA)
    if how == "blocked":  # the network refuses ui.perfetto.dev
        v.context.route("https://ui.perfetto.dev/**", lambda route: route.abort("blockedbyclient"))
    else:
        v.context.set_offline(True)
    with page.expect_popup():
        button.click()
    shown = wait_for_help(page)
    assert shown["seconds"] < 5
    assert ("offline" in shown["text"]) if how == "offline" else ("did not answer" in shown["text"]
                                                                  or "has not answered" in shown["text"])
    assert "download the trace" in shown["text"] and "ui.perfetto.dev" in shown["text"]
    assert served_file(built_site, page.url, shown["download"]) == served_file(built_site, page.url, data["trace"])
    assert shown["address"] == data["url"]  # the deep link: dropped there, the trace opens at the finding


def test_blocked_twice_the_tab_gets_the_same_help(visit, built_site):
    v = visit()
    v.context.add_init_script(BLOCK_POPUPS)
    v.context.add_init_script(TIME_THE_HELP)
    page = v.open(ATTENTION_PAGE)
    button = page.locator(COPY_LINK).first
    data = button.evaluate(FINDING_DATA)
    button.click()
    page.locator("button.perfetto-retry").click()
    shown = wait_for_help(page)
    assert shown["text"].startswith("Still blocked") and shown["address"] == data["url"]
    assert served_file(built_site, page.url, shown["download"]).name == data["file"]


def test_the_browser_analyzer_opens_the_dropped_trace_at_a_finding_from_memory(visit):
    v = visit()
    v.context.add_init_script(RECORD_OPENS)
    v.context.add_init_script(TIME_THE_HELP)
    uploads = []
    v.context.on("request", lambda r: r.method != "GET" and uploads.append(r.url))
    page = v.open(PAGE)
    analyzed(page, MATMUL)
    button = page.locator(".analyzer-facts button.perfetto-at").first
    data = button.evaluate(FINDING_DATA)
    assert data["source"] == "analyzer" and data["trace"] is None and data["file"] == MATMUL.name
    with page.expect_popup() as popup:
        button.click()
    popup.value.wait_for_function("document.title === 'received'", timeout=15_000)
    received = popup.value.evaluate("window.received")
    assert received["sha256"] == hashlib.sha256(MATMUL.read_bytes()).hexdigest()
    assert received["fileName"] == received["title"] == MATMUL.name
    assert page.evaluate("window.openedUrls") == [data["url"]] and "visStart" in route_args(data["url"])
    assert not uploads and not v.external, (uploads, v.external)
    # Perfetto unreachable: the help names the reader's own file (nothing to download) and the
    # address. (Offline emulation would not stop the fake Perfetto, which the test routes.)
    v.context.route("https://ui.perfetto.dev/**", lambda route: route.abort("internetdisconnected"))
    with page.expect_popup():
        button.click()
    shown = wait_for_help(page)
    assert shown["seconds"] < 5 and MATMUL.name in shown["text"] and shown["download"] is None
    assert shown["address"] == data["url"]
