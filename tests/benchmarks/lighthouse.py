"""Lighthouse on the built site: performance and accessibility of the home page and every post.

Installs npm `lighthouse` (pinned) into .lighthouse/ (gitignored, never global), serves the built
site on localhost, gzipped like GitHub Pages, and audits each page with Debian's Chromium, the mobile preset (Lighthouse's
default: a mid-range phone on a throttled network, simulated). Prints the scores and what costs
points; exits 1 if a score is under the aim. A benchmark, not part of `make test`:

    make lighthouse                                  # builds site/ first
    .venv/bin/python tests/benchmarks/lighthouse.py [--site site] [--desktop] [--aim 95] [--uncalibrated]

The phone's CPU is the host's slowed down, 4x by default, a factor meant for a fast desktop; on a
slower host Lighthouse's report warns that "the tested device appears to have a slower CPU than
Lighthouse expects" and its documentation (docs/throttling.md, "Calibrating the CPU slowdown")
says to lower the factor, by its calculator, from the host's benchmark index, which every report
carries. So the mobile preset here is calibrated: three audits of the home page measure the host's
index (the median counts) and the factor comes from Lighthouse's calculator, in both directions (a
fast host gets more than 4x); an audit during which the host's speed moved far from that is run
again at its own speed. The output prints the index and the factors. `--uncalibrated` keeps
Lighthouse's 4x.

Beside the pages, Material's own 404 page (the theme's header, search and scripts, no content) is
audited the same way and printed apart: the floor that the theme alone sets at this slowdown, which
no page of ours can be above. Each row gives the blocking time and the largest paint behind the score.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.site_tools import CHROMIUM, CHROMIUM_ARGS, posts, serve  # noqa: E402

LIGHTHOUSE_VERSION = "12.2.3"  # 13.x wants Node 22
PREFIX = ROOT / ".lighthouse"
CLI = PREFIX / "node_modules" / "lighthouse" / "cli" / "index.js"
CATEGORIES = ("performance", "accessibility")


def install() -> None:
    package = PREFIX / "node_modules" / "lighthouse" / "package.json"
    if package.exists() and json.loads(package.read_text())["version"] == LIGHTHOUSE_VERSION:
        return
    print(f"installing lighthouse {LIGHTHOUSE_VERSION} into {PREFIX.relative_to(ROOT)}/", flush=True)
    subprocess.run(["npm", "install", "--prefix", str(PREFIX), "--no-audit", "--no-fund",
                    "--loglevel=error", "--save-exact", f"lighthouse@{LIGHTHOUSE_VERSION}"], check=True)


def audit(url: str, out: Path, desktop: bool, cpu_slowdown: float | None = None) -> dict:
    command = ["node", str(CLI), url, "--quiet", "--output=json", f"--output-path={out}",
               f"--only-categories={','.join(CATEGORIES)}", f"--chrome-flags={' '.join(CHROMIUM_ARGS)}"]
    if desktop:
        command.append("--preset=desktop")
    if cpu_slowdown is not None:
        command.append(f"--throttling.cpuSlowdownMultiplier={cpu_slowdown:.2f}")
    subprocess.run(command, check=True, env=dict(os.environ, CHROME_PATH=CHROMIUM))
    return json.loads(out.read_text())


def cpu_slowdown_for(benchmark_index: float) -> float:
    """The CPU slowdown that Lighthouse's calculator gives for a host's benchmark index (linked from
    docs/throttling.md: lighthouse-cpu-throttling-calculator, pages/index.js): 1x at 150, 2x at 800,
    3x at 1300, one more per 233 above; the default 4x is its value at an index of about 1530."""
    if benchmark_index >= 1300:
        return 3 + (benchmark_index - 1300) / 233
    if benchmark_index >= 800:
        return 2 + (benchmark_index - 800) / 500
    return max(1.0, 1 + (benchmark_index - 150) / 650)


def calibrate(base: str, tmp: Path, runs: int = 3) -> tuple[float, float]:
    """The host's benchmark index (median of `runs` audits of the home page) and its slowdown."""
    indexes = sorted(audit(base, tmp / f"calibrate-{run}.json", False)["environment"]["benchmarkIndex"]
                     for run in range(runs))
    index = indexes[len(indexes) // 2]
    return index, cpu_slowdown_for(index)


def audit_at_host_speed(url: str, out: Path, slowdown: float) -> tuple[dict, float]:
    """One mobile audit whose slowdown suits the host while it ran: every audit measures the host's
    index anew, and this host's speed moves (the index ranged from 651 to 2282 within an hour
    here); an audit whose own index asks for a slowdown more than 20% away is run once more with
    that one. Returns the report kept and the slowdown it ran with."""
    report = audit(url, out, False, slowdown)
    wanted = cpu_slowdown_for(report["environment"]["benchmarkIndex"])
    if abs(wanted - slowdown) > 0.2 * slowdown:
        slowdown = wanted
        report = audit(url, out, False, slowdown)
    return report, slowdown


def score(report: dict, category: str) -> int:
    return round(report["categories"][category]["score"] * 100)


def shortfalls(report: dict) -> list[str]:
    """The audits that cost points, with Lighthouse's own numbers."""
    lines = []
    for category in CATEGORIES:
        for ref in report["categories"][category]["auditRefs"]:
            result = report["audits"][ref["id"]]
            if ref["weight"] and result["score"] is not None and result["score"] < 1:
                value = result.get("displayValue", "")
                lines.append(f"    {category[:4]} {result['score']:.2f} {ref['id']}: {result['title']} {value}".rstrip())
                items = (result.get("details") or {}).get("items") or []
                for item in items[:3]:
                    node = item.get("node") or {}
                    where = node.get("snippet") or item.get("url") or node.get("selector") or ""
                    if where:
                        lines.append(f"        {str(where)[:150]}")
    return lines


def metrics(report: dict) -> str:
    """The two metrics that move our scores: total blocking time and largest contentful paint."""
    audits = report["audits"]
    return (f"TBT {audits['total-blocking-time']['numericValue']:.0f} ms, "
            f"LCP {audits['largest-contentful-paint']['numericValue'] / 1000:.2f} s")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--site", type=Path, default=ROOT / "site", help="built site (default: site/)")
    parser.add_argument("--desktop", action="store_true", help="the desktop preset instead of mobile")
    parser.add_argument("--aim", type=int, default=95, help="lowest acceptable score (default 95)")
    parser.add_argument("--runs", type=int, default=3, help="runs per page; the median counts (default 3)")
    parser.add_argument("--uncalibrated", action="store_true",
                        help="Lighthouse's 4x CPU slowdown whatever the host (mobile preset)")
    args = parser.parse_args()
    if not (args.site / "index.html").exists():
        sys.exit(f"no built site in {args.site}: run `make site` first")
    install()
    pages = [""] + posts(args.site)
    # Material's page without content, when the build has one: the theme's floor, not one of ours
    floor = "404.html" if (args.site / "404.html").exists() else None
    below = []
    with serve(args.site, compress=True) as base, tempfile.TemporaryDirectory() as tmp:
        slowdown = None
        if not (args.desktop or args.uncalibrated):
            index, slowdown = calibrate(base, Path(tmp))
            print(f"host benchmark index {index:.0f}: CPU slowdown {slowdown:.2f}x (Lighthouse's calculator; "
                  "--uncalibrated for its default 4x)")
        print(f"{'page':32} {'perf':>5} {'a11y':>5}   ({'desktop' if args.desktop else 'mobile'} preset)")
        seen = []
        for i, page in enumerate(pages + ([floor] if floor else [])):
            # Scores move from run to run (more so on a busy machine): the median run counts.
            if slowdown is None:
                reports = [audit(base + page, Path(tmp) / f"{i}-{run}.json", args.desktop)
                           for run in range(args.runs)]
                used = []
            else:
                runs = [audit_at_host_speed(base + page, Path(tmp) / f"{i}-{run}.json", slowdown)
                        for run in range(args.runs)]
                reports, used = [r for r, _ in runs], [x for _, x in runs]
            seen += [r["environment"]["benchmarkIndex"] for r in reports]
            reports.sort(key=lambda r: score(r, "performance"))
            report = reports[len(reports) // 2]
            scores = [score(report, c) for c in CATEGORIES]
            spread = (f"perf {score(reports[0], 'performance')}-{score(reports[-1], 'performance')} over "
                      f"{args.runs} runs; median's {metrics(report)}")
            if used:
                spread += f", slowdowns {min(used):.2f}x-{max(used):.2f}x"
            if page == floor:
                print(f"{'(theme floor: Material, no content)':32} {scores[0]:>5} {scores[1]:>5}   {spread}",
                      flush=True)
                continue
            print(f"{'/' + page:32} {scores[0]:>5} {scores[1]:>5}   {spread}", flush=True)
            print("\n".join(shortfalls(report)), flush=True)
            below += [f"/{page} {c} {s}" for c, s in zip(CATEGORIES, scores) if s < args.aim]
    if slowdown is not None:  # a host much busier (or idler) during the audits than when calibrated
        print(f"benchmark index during the audits: {min(seen):.0f} to {max(seen):.0f} "
              f"(slowdowns {cpu_slowdown_for(min(seen)):.2f}x to {cpu_slowdown_for(max(seen)):.2f}x)")
    if below:
        print(f"under {args.aim}: " + "; ".join(below))
    return 1 if below else 0


if __name__ == "__main__":
    sys.exit(main())
