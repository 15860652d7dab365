"""The in-browser analyzer against the command line, on the same file: the time to the facts.

    make bench-browser                                       # the largest committed trace
    .venv/bin/python tests/benchmarks/bench_browser.py [TRACE] [--site site] [--runs 3] [--aim 4]
    .venv/bin/python tests/benchmarks/bench_browser.py BEFORE --compare AFTER [--site site]

The command line: `python scripts/analyze.py TRACE --json`, each run a fresh process (its start-up
included), after one untimed run. The browser: Debian's Chromium (as the tests) on the built site
served on localhost; Pyodide is started once (its time printed apart: a reader pays it once per
visit), then the trace is dropped `--runs` times, each timed from the drop to the facts box on
the page (the page's own measure), with the timeline drawn after it printed apart. Both give the
same facts (checked). Prints the medians and their ratio; exits 1 if the ratio is over `--aim`.
With `--compare AFTER`: `analyze.py BEFORE AFTER --diff --json` against BEFORE dropped on the page
and AFTER on its second zone, timed from that drop to the comparison's timelines drawn (the same
deltas, checked).
A benchmark, not part of `make test`; builds the site into a temporary folder unless --site.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.site_tools import CHROMIUM, CHROMIUM_ARGS, serve  # noqa: E402

DETAILS_KEYS = {"memory", "ops"}  # what scripts.tracefacts.facts.details adds to analyze.py --json
LARGEST = ROOT / "traces" / "train_step" / "train_b16_s10_stack.json.gz"
PAGE = "guide/analyze-in-browser/"
DONE = """() => { const root = document.querySelector('.trace-analyzer');
                 const img = root.querySelector('.analyzer-timeline img');
                 return !root.hasAttribute('aria-busy') && (img && img.src.startsWith('blob:') && img.complete
                        || !root.querySelector('.analyzer-error').hidden); }"""


def cli_run(trace: Path) -> tuple[float, dict]:
    began = time.perf_counter()
    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "analyze.py"), str(trace), "--json"],
                          capture_output=True, text=True, check=True)
    return time.perf_counter() - began, json.loads(done.stdout)


def browser_runs(site: Path, trace: Path, runs: int) -> tuple[float, list[float], list[float], dict]:
    from playwright.sync_api import sync_playwright

    with serve(site) as base, sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = chromium.new_page()
        page.goto(base + PAGE)
        page.click(".trace-analyzer .analyzer-preload")
        page.wait_for_function("document.querySelector('.trace-analyzer').dataset.loadSeconds", timeout=300_000)
        start = float(page.evaluate("document.querySelector('.trace-analyzer').dataset.loadSeconds"))
        facts_s, total_s, shown = [], [], {}
        for _ in range(runs):
            began = time.perf_counter()
            page.set_input_files(".trace-analyzer .analyzer-input", str(trace))
            page.wait_for_function(DONE, timeout=300_000)
            total_s.append(time.perf_counter() - began)
            error = page.locator(".trace-analyzer .analyzer-error")
            if error.is_visible():
                raise SystemExit(f"the page could not read {trace.name}: {error.inner_text()}")
            facts_s.append(float(page.evaluate("document.querySelector('.trace-analyzer').dataset.readSeconds")))
            shown = page.evaluate("document.querySelector('.trace-analyzer').analyzerFacts")
        chromium.close()
    return start, facts_s, total_s, shown


COMPARED = """() => { const root = document.querySelector('.trace-analyzer');
                     const imgs = root.querySelectorAll('.analyzer-diff-timeline img');
                     return !root.hasAttribute('aria-busy') && (imgs.length === 2 && Array.from(imgs).every((i) => i.complete)
                            || !root.querySelector('.analyzer-error').hidden); }"""


def cli_diff_run(before: Path, after: Path) -> tuple[float, dict]:
    began = time.perf_counter()
    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "analyze.py"), str(before), str(after),
                           "--diff", "--json"], capture_output=True, text=True, check=True)
    return time.perf_counter() - began, json.loads(done.stdout)


def browser_compare_runs(site: Path, before: Path, after: Path, runs: int) -> tuple[list[float], dict]:
    """Seconds from the second drop to both timelines drawn, `runs` times, and the last diff."""
    from playwright.sync_api import sync_playwright

    with serve(site) as base, sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = chromium.new_page()
        page.goto(base + PAGE)
        page.set_input_files(".trace-analyzer .analyzer-input", str(before))
        page.wait_for_function(DONE, timeout=300_000)
        seconds, shown = [], {}
        for _ in range(runs):
            began = time.perf_counter()
            page.set_input_files(".trace-analyzer .analyzer-input-after", str(after))
            page.wait_for_function(COMPARED, timeout=300_000)
            seconds.append(time.perf_counter() - began)
            error = page.locator(".trace-analyzer .analyzer-error")
            if error.is_visible():
                raise SystemExit(f"the page could not compare: {error.inner_text()}")
            shown = page.evaluate("document.querySelector('.trace-analyzer').analyzerDiff")
        chromium.close()
    return seconds, shown


def compare_main(before: Path, after: Path, site: Path | None, runs: int) -> int:
    cli_diff_run(before, after)  # untimed
    cli = [cli_diff_run(before, after) for _ in range(runs)]
    cli_s = statistics.median(t for t, _ in cli)
    with tempfile.TemporaryDirectory() as tmp:
        seconds, shown = browser_compare_runs(site or built_site(Path(tmp)), before, after, runs)

    def strip(d: dict) -> dict:
        return {**d, **{side: {k: v for k, v in d[side].items() if k != "source"} for side in ("before", "after")}}

    same = strip(shown) == strip(cli[-1][1])
    browser_s = statistics.median(seconds)
    print(f"\n{before.name} → {after.name}, median of {runs} runs:")
    print(f"  command line, analyze.py --diff --json (fresh process, both read)  {cli_s:6.2f} s")
    print(f"  browser, second drop to both timelines drawn                       {browser_s:6.2f} s"
          f"   ratio {browser_s / cli_s:.2f}x")
    print(f"  same deltas as the command line: {'yes' if same else 'NO'}")
    return 0 if same else 1


def built_site(tmp: Path) -> Path:
    from tests.conftest import clean_copy, mkdocs_build

    project = clean_copy(tmp / "clone")
    print("building the site (strict)...", flush=True)
    done = mkdocs_build(project)
    if done.returncode != 0:
        raise SystemExit(f"the strict build failed:\n{done.stderr[-3000:]}")
    return project / "site"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("trace", nargs="?", type=Path, default=LARGEST)
    parser.add_argument("--site", type=Path, help="a built site (default: build one)")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--aim", type=float, default=4.0, help="the largest browser/CLI ratio accepted")
    parser.add_argument("--compare", type=Path, metavar="AFTER", help="time the comparison of TRACE with AFTER")
    args = parser.parse_args()
    trace = args.trace.resolve()
    if args.compare:
        return compare_main(trace, args.compare.resolve(), args.site, args.runs)

    cli_run(trace)  # untimed: bytecode compiled, file in the page cache
    cli = [cli_run(trace) for _ in range(args.runs)]
    cli_s = statistics.median(t for t, _ in cli)
    with tempfile.TemporaryDirectory() as tmp:
        site = args.site or built_site(Path(tmp))
        start_s, facts_s, total_s, shown = browser_runs(site, trace, args.runs)
    # The page shows the facts, not the command line's details sections (memory, shapes, stacks).
    details = set(cli[-1][1]) - set(shown) & DETAILS_KEYS
    strip = lambda data: {k: v for k, v in data.items() if k != "source" and k not in details}  # noqa: E731
    same = strip(shown) == strip(cli[-1][1])
    browser_s = statistics.median(facts_s)
    ratio = browser_s / cli_s
    size = trace.stat().st_size / 1e6
    print(f"\n{trace.relative_to(ROOT) if trace.is_relative_to(ROOT) else trace} ({size:.1f} MB), "
          f"median of {args.runs} runs:")
    print(f"  command line, analyze.py --json (fresh process)  {cli_s:6.2f} s")
    print(f"  browser, drop to facts box                       {browser_s:6.2f} s   ratio {ratio:.2f}x (aim: at most {args.aim:g}x)")
    print(f"  browser, drop to timeline drawn                  {statistics.median(total_s):6.2f} s")
    print(f"  browser, starting Python (once per visit)        {start_s:6.2f} s")
    print(f"  same facts as the command line: {'yes' if same else 'NO'}"
          + (f" (the command line's {' and '.join(sorted(details))} "
             f"section{'s' * (len(details) > 1)}, which the page does not compute, left out)"
             if details else ""))
    return 0 if same and ratio <= args.aim else 1


if __name__ == "__main__":
    sys.exit(main())
