"""Where a page load's first style recalc goes, in Chromium's thread time, one built site or two.

    .venv/bin/python tests/benchmarks/bench_first_style.py SITE [--against OTHER] [--runs 10]
                                                          [--pages ",blog/matmul-add/,blog/attention/"]

Each load is a fresh browser context (no cache, a new renderer) of Debian's Chromium, as the tests,
1280 px wide, the site served gzipped like GitHub Pages, traced from the navigation until 2.5 s
after the load event (Material's bundle runs after the first frame). Per load, on the page's
main thread: the style recalc that built the rule set from the stylesheets (its thread time, wall
time, elements, and inside it the rule-set build and the font look-ups), the stylesheets' parse,
and the tasks of 10 ms or more. With --against, loads of the two sites alternate (A B, B A, ...),
and each line gives both medians with their spread [min-max].

Thread time is what the main thread spent running; wall time adds what it waited for (the
browser process answering a font look-up, another process holding the shared cores). A
benchmark, not part of `make test`.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.site_tools import CHROMIUM, CHROMIUM_ARGS, serve  # noqa: E402

CATEGORIES = ["devtools.timeline", "disabled-by-default-devtools.timeline", "toplevel",
              "blink", "blink_style", "fonts"]
SETTLE_MS = 2500
LONG_US = 10_000  # Lantern counts tasks from 10 ms (at 1x) in its blocking time

# (label, what it measures): the order of the printed lines
METRICS = [
    ("style1_thread", "first style recalc with the stylesheets, thread"),
    ("style1_wall", "  the same, wall"),
    ("style1_elements", "  elements it styled (count)"),
    ("ruleset_thread", "  rule-set build inside it, thread"),
    ("fonts_wall", "  font look-ups inside it, wall"),
    ("fonts_thread", "  font look-ups inside it, thread"),
    ("parse_css_thread", "stylesheets parsed, thread"),
    ("long_thread", "tasks >= 10 ms, thread, sum"),
    ("long_count", "tasks >= 10 ms (count)"),
]


def measure(trace: dict, url: str) -> dict[str, float]:
    """The metrics of one load (durations in us) from its trace."""
    events = trace["traceEvents"]
    parses = [e for e in events if e.get("name") == "ParseHTML"
              and e.get("args", {}).get("beginData", {}).get("url") == url]
    if not parses:
        raise SystemExit(f"no parse of {url} in the trace: did the page load?")
    thread, frame = (parses[0]["pid"], parses[0]["tid"]), parses[0]["args"]["beginData"]["frame"]
    main = [e for e in events if (e.get("pid"), e.get("tid")) == thread and e.get("ph") == "X" and "dur" in e]

    def named(name: str, within: dict | None = None) -> list[dict]:
        return [e for e in main if e["name"] == name and (
            within is None or within["ts"] <= e["ts"] <= within["ts"] + within["dur"])]

    rulesets = named("RuleSet::addRulesFromSheet")
    styles = [e for e in named("UpdateLayoutTree") if e["args"].get("beginData", {}).get("frame") == frame]
    first = next((s for s in styles if any(s["ts"] <= r["ts"] <= s["ts"] + s["dur"] for r in rulesets)), None)
    if first is None:
        raise SystemExit(f"{url}: no style recalc built a rule set (a Chromium whose trace differs?)")
    tasks = [t for t in named("RunTask") if t.get("tdur", 0) >= LONG_US]
    fonts = named("FontCache::GetFontPlatformData", first)
    return {
        "style1_thread": first["tdur"], "style1_wall": first["dur"],
        "style1_elements": first["args"].get("elementCount", 0),
        "ruleset_thread": sum(e["tdur"] for e in named("RuleSet::addRulesFromSheet", first)),
        "fonts_wall": sum(e["dur"] for e in fonts), "fonts_thread": sum(e["tdur"] for e in fonts),
        "parse_css_thread": sum(e["tdur"] for e in named("ParseAuthorStyleSheet")),
        "long_thread": sum(t["tdur"] for t in tasks), "long_count": len(tasks),
    }


def load(browser, url: str) -> dict[str, float]:
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    page = context.new_page()
    browser.start_tracing(page=page, categories=CATEGORIES)
    page.goto(url, wait_until="load")
    page.wait_for_timeout(SETTLE_MS)
    trace = json.loads(browser.stop_tracing())
    context.close()
    return measure(trace, url)


def spread(values: list[float], count: bool) -> str:
    scale = 1 if count else 1000  # us -> ms
    median, low, high = (v / scale for v in (statistics.median(values), min(values), max(values)))
    return f"{median:7.1f} [{low:.1f}-{high:.1f}]"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("site", type=Path)
    parser.add_argument("--against", type=Path, help="a second built site, loaded alternately")
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--pages", default=",blog/matmul-add/,blog/attention/",
                        help="paths under the site, comma-separated (an empty one is the home page)")
    args = parser.parse_args()
    sites = [args.site] + ([args.against] if args.against else [])
    pages = args.pages.split(",")
    for site in sites:
        for page in pages:
            if not (site / page / "index.html").is_file():
                raise SystemExit(f"{site / page / 'index.html'} does not exist: build the site, or name its pages")
    from playwright.sync_api import sync_playwright

    results = {(s, p): [] for s in range(len(sites)) for p in pages}
    with serve(sites[0], compress=True) as base_a, serve(sites[-1], compress=True) as base_b, \
            sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        bases = [base_a, base_b][:len(sites)]
        for page in pages:  # one untimed load of each: the server and the disk warmed alike
            for base in bases:
                load(browser, base + page)
        for run in range(args.runs):
            order = list(range(len(sites)))
            if run % 2:
                order.reverse()
            for page in pages:
                for s in order:
                    results[(s, page)].append(load(browser, bases[s] + page))
        browser.close()
    print(f"Chromium, 1280 px, {args.runs} loads per page and site; ms (or count): median [min-max]")
    for page in pages:
        print(f"\n{page or 'home'}" + (f"   A = {sites[0]}   B = {sites[1]}" if len(sites) > 1 else ""))
        for key, label in METRICS:
            cells = [spread([r[key] for r in results[(s, page)]], key.endswith(("_count", "_elements")))
                     for s in range(len(sites))]
            print(f"  {label:48s} " + "   ".join(("A " if len(sites) > 1 else "") + c if i == 0 else "B " + c
                                                  for i, c in enumerate(cells)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
