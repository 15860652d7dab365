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
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.benchmarks.page_loads import (LONG_US, add_site_arguments, alternate,  # noqa: E402
                                         main_thread, sites_and_pages, spread, traced_load)

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
    parse, main = main_thread(trace["traceEvents"], url)
    frame = parse["args"]["beginData"]["frame"]

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


def load(browser, url: str, *_) -> dict[str, float]:
    return measure(json.loads(traced_load(browser, url, viewport={"width": 1280, "height": 800})), url)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_site_arguments(parser)
    args = parser.parse_args()
    sites, pages = sites_and_pages(args)
    results = alternate(sites, pages, args.runs, [None], load)
    print(f"Chromium, 1280 px, {args.runs} loads per page and site; ms (or count): median [min-max]")
    for page in pages:
        print(f"\n{page or 'home'}" + (f"   A = {sites[0]}   B = {sites[1]}" if len(sites) > 1 else ""))
        for key, label in METRICS:
            scale = 1 if key.endswith(("_count", "_elements")) else 1000
            cells = [f"{spread([r[key] for r in results[(s, page, None)]], scale):>16}"
                     for s in range(len(sites))]
            print(f"  {label:48s} " + "   ".join(("A " if len(sites) > 1 else "") + c if i == 0 else "B " + c
                                                  for i, c in enumerate(cells)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
