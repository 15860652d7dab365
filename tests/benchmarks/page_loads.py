"""What the page-load benchmarks share (bench_first_style.py, bench_long_tasks.py): their
arguments, a traced load of one page in a fresh browser context of Debian's Chromium, the page's
main thread in that trace, and the loads of one or two built sites taken in turns."""

from __future__ import annotations

import argparse
import statistics
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

from tests.site_tools import CHROMIUM, CHROMIUM_ARGS, serve

CATEGORIES = ["devtools.timeline", "disabled-by-default-devtools.timeline", "toplevel",
              "blink", "blink_style", "fonts"]
SETTLE_MS = 2500  # traced after the load event too: Material's bundle runs after the first frame
LONG_US = 10_000  # Lantern counts tasks from 10 ms (at 1x) in its blocking time


def add_site_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("site", type=Path)
    parser.add_argument("--against", type=Path, help="a second built site, loaded alternately")
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--pages", default=",blog/matmul-add/,blog/attention/",
                        help="paths under the site, comma-separated (an empty one is the home page)")


def sites_and_pages(args: argparse.Namespace) -> tuple[list[Path], list[str]]:
    """The sites and pages the arguments name; one line and exit where a page is not built."""
    sites = [args.site] + ([args.against] if args.against else [])
    pages = args.pages.split(",")
    for site in sites:
        for page in pages:
            if not (site / page / "index.html").is_file():
                raise SystemExit(f"{site / page / 'index.html'} does not exist: build the site, or name its pages")
    return sites, pages


def traced_load(browser, url: str, **context_options) -> bytes:
    """The Chromium trace of one load of `url`, in a new context (no cache, a new renderer)."""
    context = browser.new_context(**context_options)
    page = context.new_page()
    browser.start_tracing(page=page, categories=CATEGORIES)
    page.goto(url, wait_until="load")
    page.wait_for_timeout(SETTLE_MS)
    raw = browser.stop_tracing()
    context.close()
    return raw


def event_data(event: dict) -> dict:
    args = event.get("args", {})
    return args.get("data") or args.get("beginData") or {}


def main_thread(events: list[dict], url: str) -> tuple[dict, list[dict]]:
    """The parse of `url`'s HTML (its thread and frame) and that thread's complete events."""
    parses = [e for e in events if e.get("name") == "ParseHTML" and event_data(e).get("url") == url]
    if not parses:
        raise SystemExit(f"no parse of {url} in the trace: did the page load?")
    thread = (parses[0]["pid"], parses[0]["tid"])
    return parses[0], [e for e in events
                       if (e.get("pid"), e.get("tid")) == thread and e.get("ph") == "X" and "dur" in e]


def alternate(sites: list[Path], pages: list[str], runs: int, variants: list,
              load: Callable[..., dict]) -> dict[tuple, list[dict]]:
    """`load(browser, url, page, variant, site, run)` for each page, variant and site, `runs` times,
    the sites in turns (A B, B A, ...) so that both see the same load of the machine, after one
    untimed load of each page and site (`run` None); the results by (site, page, variant)."""
    from playwright.sync_api import sync_playwright

    results = defaultdict(list)
    with serve(sites[0], compress=True) as base_a, serve(sites[-1], compress=True) as base_b, \
            sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        bases = [base_a, base_b][:len(sites)]
        for page in pages:  # the server and the disk warmed alike
            for s, base in enumerate(bases):
                load(browser, base + page, page, variants[0], s, None)
        for run in range(runs):
            order = list(range(len(sites)))
            if run % 2:
                order.reverse()
            for page in pages:
                for variant in variants:
                    for s in order:
                        results[(s, page, variant)].append(load(browser, bases[s] + page, page, variant, s, run))
        browser.close()
    return results


def spread(values: list[float], scale: float = 1000) -> str:
    """The median of the values and their range, over `scale` (us -> ms by default)."""
    median, low, high = (v / scale for v in (statistics.median(values), min(values), max(values)))
    return f"{median:.1f} [{low:.1f}-{high:.1f}]"
