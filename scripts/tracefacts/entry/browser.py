"""The in-browser analyzer's Python side: what runs on the reader's machine, in Pyodide.

docs/javascripts/analyzer-worker.js starts Pyodide in a Web Worker, writes this package's
modules into its file system (those scripts/series/pages/analyzer_page.py ships: the import closure of this
one), writes the dropped file there too and calls `read_json`, then `timeline_json`. The facts
are the command line's (`scripts.tracefacts.facts.analysis.facts` of `scripts.tracefacts.model.trace.load_trace`, printed with
`scripts.analyze.strict_json`), the box and the picture are the posts' (`render_facts_box`,
`render_timeline`); every name from the trace is escaped by the renderers that put it in markup.

Before and after: a second trace, read by `compare_json` and drawn by `compare_timelines_json`,
is compared with the one on the page as `analyze.py BEFORE AFTER --diff` compares them
(`scripts.tracefacts.facts.diff`), shown as Parts 1 and 4 show theirs (`scripts.series.pages.diff.comparison_html`, and
both steady steps on one time scale by `scripts.series.pages.render.diff_timeline_svg`). Those modules are
imported only then: the first drop does not wait for them.

Standard library only, and no thread: Pyodide has none. A gzip file is therefore decompressed
here, with zlib, before the parser sees it (today's parser decompresses ahead in a thread).
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ..facts.analysis import TOP_KERNELS, TraceFacts, facts, steady_step, summary_text
from .cli import strict_json
from ..pictures.markup import Markup, h, td, th
from ..pictures.markup import table as html_table
from ..model.units import format_us
from ..facts.recording import RecordingFacts, recording_facts
from ..pictures.facts_box import FACTS_GUIDE, render_facts_box
from ..pictures.perfetto_links import TraceTarget
from ..pictures.profiler_table import scrolling_table
from ..model.trace import Trace, TraceError, load_trace, select_window

GZIP_MAGIC = b"\x1f\x8b"
PAGE_TRACE = "analyzer"  # the facts box's links open the trace the page holds (analyzer.js registers it)
# A WebAssembly page has at most 4 GiB, and the trace's events take about as much memory as its
# JSON text: a larger text cannot be analyzed in a browser tab.
MAX_TEXT_BYTES = 1 << 30
_GUNZIP_STEP = 16 << 20  # decompressed bytes produced per call, so the limit is checked as it grows

# stage, and the share done (None: unknown); the page turns them into words and a bar.
Progress = Callable[[str, "float | None"], None]


@dataclass
class Report:
    """One trace as the page shows it."""

    trace: Trace
    facts: TraceFacts
    top: int | None = TOP_KERNELS  # the GPU activities `facts` lists by name (None: all)
    recording: RecordingFacts | None = None  # how it was recorded (made for the trace on the page)

    def all_facts(self) -> TraceFacts:
        """The facts listing every GPU activity by name, as the diff wants them (so that added
        and removed are exact, as `analyze.py --diff` computes them)."""
        return self.facts if self.top is None else facts(self.trace, top=None)

    def facts_box(self, guide_href: str) -> Markup:
        """The posts' box, its links opening the dropped file in Perfetto from the page's memory
        (docs/javascripts/analyzer.js hands it over: nothing is uploaded)."""
        name = self.trace.source or "trace"
        return render_facts_box(self.facts, guide_href, perfetto=TraceTarget(name, name, source=PAGE_TRACE),
                                recording=self.recording)

    def steps_table(self) -> Markup | None:
        return steps_table(self.facts.to_dict()["steps"])

    def summary(self) -> str:
        """What `python scripts/analyze.py TRACE` prints."""
        return summary_text(self.facts, self.recording)

    def timeline(self) -> str:
        """What `analyze.py TRACE --svg OUT` draws: the first ProfilerStep (or the whole trace)."""
        from ..pictures.timeline.draw import render_timeline

        window = select_window(self.trace)
        return render_timeline(self.trace, window=window, facts=facts(self.trace, window=window))


def _percent(value: float | None) -> str:
    return "–" if value is None else f"{value:.1f}%"


def steps_table(steps: list[dict]) -> Markup | None:
    """The per-ProfilerStep facts (as `--json` gives them) as a table, the columns of the
    summary's `per ProfilerStep` lines; None without steps."""
    if not steps:
        return None
    num = {"class": "num"}
    head = [th("Step", {"scope": "col"})] + [th(name, {"scope": "col", "class": "num"}) for name in (
        "Duration", "CPU busy", "GPU busy in the step", "GPU busy of its launched work",
        "Host wait", "Queued", "Launches", "Median launch delay")] + [th("Verdict", {"scope": "col"})]
    rows = []
    for step in steps:
        launched = step["launched"] or {}
        delay = step["launches"].get("delay_p50_us")
        rows.append([
            th("#" + step["label"].rsplit("#", 1)[-1], {"scope": "row"}),
            td(format_us(step["dur_us"]), num),
            td(_percent(step["cpu_busy_pct"]), num),
            td(_percent(step["window_busy_pct"]), num),
            td(_percent(launched.get("busy_pct")), num),
            td(_percent(launched.get("host_wait_pct")), num),
            td(_percent(launched.get("queued_pct")), num),
            td(f"{step['launches']['launches']:,}", num),
            td("–" if delay is None else format_us(delay), num),
            step["verdict"]["label"],
        ])
    caption = "Per ProfilerStep (host wait and queued: shares of the GPU time of its launched work)"
    return scrolling_table(html_table(head, rows, caption=caption, attrs={"class": "prof"}),
                           "per-step facts", searchable=False)


def gunzip(data: bytes, name: str, write: Callable[[bytes], object],
           limit: int = MAX_TEXT_BYTES) -> int:
    """Decompress gzip `data` (several members and zero padding allowed, as GzipFile reads
    them) into `write`, without a thread; returns the size written. TraceError with one line if
    it is corrupt, truncated or larger than `limit`."""
    size, rest = 0, data
    try:
        while True:
            member = zlib.decompressobj(wbits=31)
            pending = rest
            while not member.eof:
                chunk = member.decompress(pending, _GUNZIP_STEP)
                pending = member.unconsumed_tail
                if not chunk and not pending:
                    raise EOFError  # all of it read, and the member is not finished
                size += len(chunk)
                if size > limit:
                    raise TraceError(f"{name}: decompresses to more than {limit >> 20} MB, more "
                                     "than a browser tab can analyze: use the command line")
                write(chunk)
            rest = member.unused_data.lstrip(b"\0")
            if not rest:
                return size
            if not rest.startswith(GZIP_MAGIC):
                raise zlib.error("not a gzip member")
    except (EOFError, zlib.error):
        raise TraceError(f"{name}: gzip data is truncated or corrupt") from None


def read(path: str | Path, name: str, progress: Progress | None = None,
         top: int | None = TOP_KERNELS) -> Report:
    """Analyze the trace file at `path` (in Pyodide's file system), calling it `name` in what it
    says, its facts listing `top` GPU activities; TraceError, one line naming `name`, for a file
    it cannot analyze."""
    path = Path(path)
    tell = progress or (lambda stage, done: None)
    try:
        with path.open("rb") as handle:
            gzipped = handle.read(2) == GZIP_MAGIC
        if gzipped:
            tell("decompressing", None)
            text = path.with_name(path.name + ".json")
            with text.open("wb") as out:
                gunzip(path.read_bytes(), name, out.write)
            path.unlink()  # the page holds one trace: keep one copy of it in memory
            path = text
        trace = load_trace(path, progress=lambda done, total: tell("reading", done / max(total, 1)))
        trace.source = name
        tell("computing", None)
        return Report(trace, facts(trace, top=top), top)
    except TraceError as err:
        message = str(err)
        if message.startswith(f"{path}:"):  # the parser names the file by its path here
            message = name + message[len(str(path)):]
        raise TraceError(" ".join(message.split())) from None
    except MemoryError:
        raise TraceError(f"{name}: too large to analyze in this browser tab: use the command line") from None
    except Exception as err:  # a file that breaks the analysis is still a bad input (as in analyze.py)
        raise TraceError(f"{name}: cannot analyze this trace ({type(err).__name__}: {err})") from None


# --- what the worker calls: JSON text in, JSON text out, never an exception -----------------------

_current: Report | None = None  # the trace on the page, for its timeline (one at a time)


def read_json(path: str, name: str, guide_href: str = FACTS_GUIDE,
              progress: Progress | None = None) -> str:
    """{"facts": the --json object, "facts_box", "steps_table": HTML or null, "summary": text}, or
    {"error": one line}."""
    global _current, _after
    _current = _after = None
    try:
        report = read(path, name, progress)
        report.recording = recording_facts(report.trace)
    except TraceError as err:
        return json.dumps({"error": str(err)})
    except Exception as err:  # the facts came: a trace that breaks the check is still a bad input
        return json.dumps({"error": f"{name}: cannot analyze this trace ({type(err).__name__}: {err})"})
    _current = report
    facts_json = {**report.facts.to_dict(), "recording": report.recording.to_dict()}  # as --json prints them
    return json.dumps({"facts": json.loads(strict_json(facts_json)),
                       "facts_box": report.facts_box(guide_href), "steps_table": report.steps_table(),
                       "summary": report.summary()})


def timeline_json() -> str:
    """{"svg": the annotated timeline, "window": what it shows}, or {"error": one line}."""
    if _current is None:
        return json.dumps({"error": "no trace has been read"})
    try:
        svg = _current.timeline()
    except Exception as err:  # the facts are shown already: say why the picture is not
        return json.dumps({"error": f"{_current.trace.source}: cannot draw the timeline "
                                    f"({type(err).__name__}: {err})"})
    return json.dumps({"svg": svg, "window": select_window(_current.trace).label})


# --- before and after: a second trace compared with the one on the page ---------------------------

_after: Report | None = None  # the trace compared with _current, the before (one pair at a time)


def compare_json(path: str, name: str, guide_href: str = FACTS_GUIDE,
                 progress: Progress | None = None) -> str:
    """Read the trace at `path` as the one after, and compare the trace on the page (before)
    with it: {"diff": what `analyze.py BEFORE AFTER --diff --json` prints, "table": the posts'
    before/after table}, or {"error": one line}, the trace on the page staying as it was."""
    global _after
    _after = None
    if _current is None:
        return json.dumps({"error": "no trace has been read to compare with"})
    try:
        after = read(path, name, progress, top=None)
    except TraceError as err:
        return json.dumps({"error": str(err)})
    (progress or (lambda stage, done: None))("comparing", None)
    from ..facts.diff import diff
    from ..pictures.comparison import comparison_html

    before = _current
    try:
        result = diff(before.all_facts(), after.facts)
    except Exception as err:  # each side was analyzed, so it is the pair that cannot be compared
        return json.dumps({"error": f"{before.trace.source} and {name}: cannot compare these traces "
                                    f"({type(err).__name__}: {err})"})
    _after = after
    caption = (f"{before.trace.source} → {name}, whole traces "
               "(per ProfilerStep: means over their steps)")
    return json.dumps({"diff": json.loads(strict_json(result.to_dict())),
                       "table": comparison_html(result, caption, guide_href)})


def compare_timelines_json() -> str:
    """Both timelines, on one time scale, as `analyze.py BEFORE AFTER --diff --svg OUT` draws
    them (each trace's steady step, or the whole trace without numbered steps):
    {"before": {"svg", "window"}, "after": {...}, "span": the scale's width, formatted}, or
    {"error": one line}."""
    if _current is None or _after is None:
        return json.dumps({"error": "no pair of traces has been compared"})
    from ..pictures.comparison import diff_timeline_svg
    from ..pictures.timeline.draw import shared_span_us

    pair = {"before": _current, "after": _after}
    try:
        windows = {role: select_window(r.trace, step=steady_step(r.trace)) for role, r in pair.items()}
        span = shared_span_us(*windows.values())
        drawn = {role: {"svg": diff_timeline_svg(r.trace, windows[role], span,
                                                 f"{role.capitalize()}: {r.trace.source}"),
                        "window": windows[role].label}
                 for role, r in pair.items()}
    except Exception as err:  # the deltas are shown already: say why the pictures are not
        return json.dumps({"error": f"cannot draw the timelines ({type(err).__name__}: {err})"})
    return json.dumps({**drawn, "span": format_us(span)})
