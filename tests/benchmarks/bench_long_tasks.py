"""Every main-thread task of 10 ms or more during a page load, in Chromium's thread time, and what
runs inside each: one built site, or two loaded alternately.

    .venv/bin/python tests/benchmarks/bench_long_tasks.py SITE [--against OTHER] [--runs 10]
        [--pages ",blog/matmul-add/,blog/attention/"] [--widths 1280,390] [--keep DIR]

Why: Lighthouse's simulated blocking time (Lantern) takes the observed main-thread tasks of 10 ms
or more, scales each by the CPU slowdown and counts its part above 50 ms, so on a phone what costs
points is a few tasks of 10-20 ms at 1x; this names them and what fills them.

Loads as tests/benchmarks/bench_first_style.py (a fresh browser context of Debian's Chromium each,
the site served gzipped, traced until 2.5 s after the load event). 1280 px is a laptop; 390 px is a
phone as Lighthouse's mobile preset emulates one (a mobile viewport, touch, 1.75 device pixels per
CSS pixel). Each long task is named by what starts it (a frame, before or after the load event; a
script's evaluation; a timer's function) and its thread time is split by the innermost of these that each
piece of work runs in: script (per file and function), style, layout, pre-paint, paint, an SVG
image made from a data: URI (Material's icons), a request, garbage collection, image decoding.

Per page and width it prints, for each site: the tasks' count, their thread time, and the blocking
time they would make at 7x (what `make lighthouse` calibrates to on this host; an indication, not
Lantern's simulation), median [min-max] over the loads; then each kind of task, in how many loads
it was long, its time and its split (medians over those loads); then the long tasks of the load
with the median total, in order, with their start after navigation. --track follows a kind of task
in every load, long or not (a change's own task, once it is no longer long). Each site's lines also
count the SVG documents made from data: URIs (Material's icons) before the load event. --keep
writes the traces.

A benchmark, not part of `make test`.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.benchmarks.page_loads import (LONG_US, add_site_arguments, alternate,  # noqa: E402
                                         event_data, main_thread, sites_and_pages, spread,
                                         traced_load)

SLOWDOWN = 7  # `make lighthouse`'s calibrated CPU slowdown on this host
BLOCKING_US = 50_000  # the part of a task above this counts as blocking
SHOWN_US = 500  # a task's split lists the parts of at least this much
TRACKED_US = 1000  # --track follows a kind of task in every load from this long on, long or not
PHONE = {"viewport": {"width": 390, "height": 844}, "device_scale_factor": 1.75,
         "is_mobile": True, "has_touch": True}

# events that only wrap the work they hold: a task is named by the first event below them
WRAPPERS = {"RunTask", "ThreadControllerImpl::RunTask", "AsyncTask Run", "TimerBase::run",
            "PendingScript::ExecuteScriptBlock", "ScriptRunner::ExecutePendingScript",
            "HTMLParserScriptRunner::execute", "HTMLDocumentParser::RunScriptsForPausedTreeBuilder",
            "SimpleWatcher::OnHandleReady", "Receive mojo message", "v8.callFunction",
            "HTMLDocumentParser::PumpTokenizerIfPossible", "HTMLDocumentParser::PumpTokenizer",
            "HTMLDocumentParser::DeferredPumpTokenizerIfPossible"}
TRIGGERS = {"TimerFire": "timer", "FireIdleCallback": "idle", "FireAnimationFrame": "animation frame",
            "XHRReadyStateChange": "xhr", "XHRLoad": "xhr load", "HandlePostMessage": "message"}
HASHED = re.compile(r"\.[0-9a-f]{8}(?=\.min\.)")  # Material's bundle.<hash>.min.js: the same name on both sites


def _file(url: str, page_url: str) -> str:
    """A script's file as its name alone (ports and content hashes differ between the sites)."""
    if not url or url == page_url:
        return "page"
    return HASHED.sub("", url.split("?")[0].rstrip("/").rsplit("/", 1)[-1])


def category(event: dict, page_url: str) -> str | None:
    """The kind of work an event is, or None for one that is part of what holds it."""
    name, data = event["name"], event_data(event)
    if name == "ResourceFetcher::requestResource":
        url = event.get("args", {}).get("url", "")
        return "svg icon (data: URI)" if url.startswith("data:image/svg") else "request " + _file(url, page_url)
    if name == "EvaluateScript":
        return "script " + _file(data.get("url", ""), page_url)
    if name == "FunctionCall":
        return f"script {_file(data.get('url', ''), page_url)} {data.get('functionName') or '(anonymous)'}"
    if name == "EventDispatch":
        return f"event {data.get('type', '?')}"
    return {"UpdateLayoutTree": "style", "Layout": "layout", "PrePaint": "pre-paint", "Paint": "paint",
            "LocalFrameView::RunPaintLifecyclePhase": "paint", "Layerize": "paint", "ParseHTML": "parse html",
            "ParseAuthorStyleSheet": "parse css", "MajorGC": "gc", "MinorGC": "gc", "Decode Image": "image decode",
            "ImageDecodeTask": "image decode", "LocalFrameView::NotifyResizeObservers": "resize observers",
            "IntersectionObserverController::computeIntersections": "intersection observers",
            "HitTest": "hit test"}.get(name)


def _nest(events: list[dict]) -> list[dict]:
    """The complete events of one thread as trees (each event's `kids`), by their time spans."""
    roots: list[dict] = []
    stack: list[dict] = []
    for event in sorted(events, key=lambda e: (e["ts"], -e["dur"])):
        event["kids"] = []
        while stack and event["ts"] + event["dur"] > stack[-1]["ts"] + stack[-1]["dur"]:
            stack.pop()
        (stack[-1]["kids"] if stack else roots).append(event)
        stack.append(event)
    return roots


def split(task: dict, page_url: str) -> dict[str, int]:
    """A task's thread time by the innermost kind of work each part of it runs in (us)."""
    out: dict[str, int] = defaultdict(int)

    def walk(event: dict, inherited: str) -> None:
        kind = category(event, page_url) or inherited
        own = event.get("tdur", 0) - sum(k.get("tdur", 0) for k in event["kids"])
        out[kind] += max(own, 0)  # thread clocks tick coarsely: a child may read longer than its parent
        for kid in event["kids"]:
            walk(kid, kind)

    walk(task, "other")
    return dict(out)


def name_task(task: dict, page_url: str, loaded: bool) -> str:
    """What starts a task: a frame (before or after the load event), a script's evaluation, the
    function a timer or event calls."""
    event, trigger = task, ""
    while True:
        if event["name"] == "WebFrameWidgetImpl::UpdateLifecycle":
            return "frame after load" if loaded else "frame while loading"
        if event["name"] in TRIGGERS:
            trigger = TRIGGERS[event["name"]] + ": "
        elif event["name"] == "ParseHTML":
            return "parse html"
        elif event["name"] in ("EvaluateScript", "FunctionCall", "EventDispatch"):
            return trigger + category(event, page_url)
        elif event["name"] not in WRAPPERS:
            return trigger + event["name"]
        if not event["kids"]:
            return trigger + event["name"]
        event = max(event["kids"], key=lambda e: e.get("tdur", 0))


def measure(trace: dict, url: str) -> dict:
    """The long tasks of one load: [{name, start_us, thread_us, split}], in order."""
    events = trace["traceEvents"]
    parse, main = main_thread(events, url)
    frame = event_data(parse).get("frame")
    loads = [e["ts"] for e in events if e.get("name") == "MarkLoad" and event_data(e).get("frame") == frame]
    loaded_at = loads[0] if loads else float("inf")
    roots = _nest(main)
    start = parse["ts"]
    tasks, every = [], defaultdict(list)
    for root in roots:
        if root["name"] != "RunTask" or root.get("tdur", 0) < TRACKED_US:
            continue
        name = name_task(root, url, root["ts"] >= loaded_at)
        every[name].append(root["tdur"])
        if root["tdur"] >= LONG_US:
            tasks.append({"name": name, "start_us": root["ts"] - start,
                          "thread_us": root["tdur"], "split": split(root, url)})
    icons = [e for e in main if e["name"] == "ResourceFetcher::requestResource" and e["ts"] < loaded_at
             and e.get("args", {}).get("url", "").startswith("data:image/svg")]
    return {"tasks": tasks, "every": dict(every), "icons": len(icons), "icons_us": sum(e.get("tdur", 0) for e in icons)}


def totals(load: dict) -> dict[str, float]:
    tasks = load["tasks"]
    return {"count": len(tasks), "thread": sum(t["thread_us"] for t in tasks),
            "blocking": sum(max(SLOWDOWN * t["thread_us"] - BLOCKING_US, 0) for t in tasks)}


def load(browser, url: str, width: int, keep: Path | None, tag: str | None) -> dict:
    options = PHONE if width == PHONE["viewport"]["width"] else {"viewport": {"width": width, "height": 800}}
    raw = traced_load(browser, url, **options)
    if keep and tag:
        (keep / f"{tag}.json").write_bytes(raw)
    return measure(json.loads(raw), url)


def report(loads: list[dict], label: str, tracked: list[str]) -> None:
    """One site's lines for one page and width."""
    print(f"  {label}SVG icons made before the load event: {spread([x['icons'] for x in loads], 1)}, "
          f"thread {spread([x['icons_us'] for x in loads])} ms")
    for name in tracked:  # a change's own task, compared in every load even where it is no longer long
        kinds = name.split("|")  # kinds joined by | are followed as one
        longest = [max([0] + [t for k in kinds for t in x["every"].get(k, [])]) for x in loads]
        print(f"  {label}{name}: the longest such task {spread(longest)} ms, "
              f"all of them {spread([sum(t for k in kinds for t in x['every'].get(k, [])) for x in loads])} ms")
    print(f"  {label}long tasks: {spread([totals(x)['count'] for x in loads], 1)}, thread "
          f"{spread([totals(x)['thread'] for x in loads])} ms, blocking at {SLOWDOWN}x "
          f"{spread([totals(x)['blocking'] for x in loads])} ms")
    kinds: dict[str, list[dict]] = defaultdict(list)  # kind -> per load that has it, its summed split
    for x in loads:
        per_load: dict[str, dict] = {}
        for t in x["tasks"]:
            entry = per_load.setdefault(t["name"], {"thread": 0, "split": defaultdict(int)})
            entry["thread"] += t["thread_us"]
            for part, us in t["split"].items():
                entry["split"][part] += us
        for name, entry in per_load.items():
            kinds[name].append(entry)
    for name, entries in sorted(kinds.items(), key=lambda kv: -sum(e["thread"] for e in kv[1])):
        parts = {p for e in entries for p in e["split"]}
        medians = {p: statistics.median([e["split"].get(p, 0) for e in entries]) for p in parts}
        shown = ", ".join(f"{p} {us / 1000:.1f}" for p, us in sorted(medians.items(), key=lambda kv: -kv[1])
                          if us >= SHOWN_US)
        print(f"    {name:40s} in {len(entries):2d}/{len(loads)} loads, {spread([e['thread'] for e in entries])} ms: {shown}")
    typical = sorted(loads, key=lambda x: totals(x)["thread"])[len(loads) // 2]
    print("    the load with the median total, its long tasks in order:")
    for t in typical["tasks"]:
        shown = ", ".join(f"{p} {us / 1000:.1f}" for p, us in sorted(t["split"].items(), key=lambda kv: -kv[1])
                          if us >= SHOWN_US)
        print(f"      at {t['start_us'] / 1000:6.0f} ms  {t['thread_us'] / 1000:5.1f} ms  {t['name']}: {shown}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_site_arguments(parser)
    parser.add_argument("--widths", default="1280,390", help="viewport widths in CSS px, comma-separated")
    parser.add_argument("--track", default="", help="kinds of task (as printed) to follow in every load, "
                        "long or not, comma-separated; kinds joined by | are followed as one")
    parser.add_argument("--keep", type=Path, help="a folder to write each load's trace into")
    args = parser.parse_args()
    tracked = [t for t in args.track.split(",") if t]
    try:
        widths = [int(w) for w in args.widths.split(",")]
    except ValueError:
        raise SystemExit(f"--widths {args.widths!r}: give whole numbers of CSS px, comma-separated") from None
    sites, pages = sites_and_pages(args)
    if args.keep:
        args.keep.mkdir(parents=True, exist_ok=True)

    def one(browser, url: str, page: str, width: int, s: int, run: int | None) -> dict:
        tag = None if run is None else f"{'AB'[s]}_{page.strip('/').replace('/', '_') or 'home'}_{width}_{run}"
        return load(browser, url, width, args.keep, tag)

    results = alternate(sites, pages, args.runs, widths, one)
    print(f"Chromium, {args.runs} loads per page, width and site; thread time in ms, median [min-max]")
    for page in pages:
        for width in widths:
            print(f"\n{page or 'home'} at {width} px" + (f"   A = {sites[0]}   B = {sites[1]}" if len(sites) > 1 else ""))
            for s in range(len(sites)):
                report(results[(s, page, width)], f"{'AB'[s]}: " if len(sites) > 1 else "", tracked)
    return 0


if __name__ == "__main__":
    sys.exit(main())
