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

Standard library only, and no thread: Pyodide has none (the parser then decompresses gzip inline).
A gzip file is measured before it is read: decompressed once, a chunk at a time and kept nowhere,
to refuse a gzip bomb before it costs memory (a WebAssembly page's memory never shrinks). The
worker deletes the file it wrote once these functions return.

Every function the worker calls answers JSON text, never an exception: a failure anywhere (reading,
analyzing, rendering, serializing) is {"error": one line naming the file}. An answer too long for
the page (a name of hundreds of megabytes) is refused in one line too.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ..facts.analysis import TOP_KERNELS, TraceFacts, facts, steady_step, summary_text
from .cli import strict_json
from .console import LINE_MAX, one_line
from ..pictures.markup import Markup, h, td, th
from ..pictures.markup import table as html_table
from ..model.names import bounded
from ..model.units import format_us
from ..facts.recording import RecordingFacts, recording_facts
from ..pictures.facts_box import FACTS_GUIDE, render_facts_box
from ..pictures.perfetto_links import TraceTarget
from ..pictures.profiler_table import scrolling_table
from ..model.trace import Trace, TraceError, load_trace, select_window
from ..reading.text import _gunzipped

GZIP_MAGIC = b"\x1f\x8b"
PAGE_TRACE = "analyzer"  # the facts box's links open the trace the page holds (analyzer.js registers it)
# A WebAssembly page has at most 4 GiB, and the trace's events take about as much memory as its
# JSON text: a larger text cannot be analyzed in a browser tab.
MAX_TEXT_BYTES = 1 << 30
# Deflate expands at most 1032 times (zlib's FAQ): a smaller gzip file cannot pass the limit, so it
# is not measured first.
DEFLATE_MAX_RATIO = 1032
# The longest answer handed to the page: a JavaScript string holds at most 2**29 - 24 characters
# (V8), and the worker parses the answer and copies it to the page. Real answers are far shorter
# (megabytes for thousands of steps); a longer one comes from names of hundreds of megabytes.
MAX_ANSWER_CHARS = 128_000_000
MAX_ERROR_CHARS = LINE_MAX  # an error line quotes what failed; a name in it is cut there (console.one_line)

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
        "Duration", "CPU busy", "GPU busy", "Host wait", "Stalled", "Launches",
        "Median launch delay")] + [th("Verdict", {"scope": "col"})]
    rows = []
    for step in steps:
        split = step.get("time_split") or {}
        delay = step["launches"].get("delay_p50_us")
        rows.append([
            th("#" + bounded(step["label"].rsplit("#", 1)[-1]), {"scope": "row"}),
            td(format_us(step["dur_us"]), num),
            td(_percent(step["cpu_busy_pct"]), num),
            td(_percent(step["window_busy_pct"]), num),
            td(_percent(split.get("host_wait_pct")), num),
            td(_percent(split.get("stalled_pct")), num),
            td(f"{step['launches']['launches']:,}", num),
            td("–" if delay is None else format_us(delay), num),
            step["verdict"]["label"],
        ])
    caption = "Per ProfilerStep (GPU busy, host wait and stalled: shares of the step's time)"
    return scrolling_table(html_table(head, rows, caption=caption, attrs={"class": "prof"}),
                           "per-step facts", searchable=False)


def gunzipped_size(path: Path, name: str, limit: int = MAX_TEXT_BYTES) -> int | None:
    """The size of the gzip file at `path` once decompressed, measured without keeping it: a chunk
    at a time, as the parser will read it (several members, zero padding). TraceError, one line,
    as soon as it passes `limit`; None for data that is truncated or corrupt (the parser says so,
    in the command line's words)."""
    size = 0
    try:
        with path.open("rb") as handle:
            for chunk in _gunzipped(handle.read):
                size += len(chunk)
                if size > limit:
                    raise too_large(name, "decompresses to", limit)
    except (EOFError, OSError, zlib.error):
        return None
    return size


def too_large(name: str, what: str, limit: int = MAX_TEXT_BYTES) -> TraceError:
    return TraceError(f"{name}: {what} more than {limit >> 20} MB, more than a browser tab can "
                      "analyze: use the command line")


def read(path: str | Path, name: str, progress: Progress | None = None,
         top: int | None = TOP_KERNELS, limit: int = MAX_TEXT_BYTES) -> Report:
    """Analyze the trace file at `path` (in Pyodide's file system), calling it `name` in what it
    says, its facts listing `top` GPU activities; TraceError, one line naming `name`, for a file
    it cannot analyze or whose text is larger than `limit`. Nothing is written: the parser reads
    gzip itself, a chunk at a time."""
    path = Path(path)
    tell = progress or (lambda stage, done: None)
    try:
        with path.open("rb") as handle:
            gzipped = handle.read(2) == GZIP_MAGIC
        size = path.stat().st_size
        if gzipped and size * DEFLATE_MAX_RATIO > limit:
            tell("decompressing", None)
            gunzipped_size(path, name, limit)
        elif not gzipped and size > limit:
            raise too_large(name, "holds", limit)
        trace = load_trace(path, progress=lambda done, total: tell("reading", done / max(total, 1)))
        trace.source = name
        tell("computing", None)
        return Report(trace, facts(trace, top=top), top)
    except TraceError as err:
        message = str(err)
        if message.startswith(f"{path}:"):  # the parser names the file by its path here
            message = name + message[len(str(path)):]
        raise TraceError(one_line(message)) from None
    except MemoryError:
        raise TraceError(f"{name}: too large to analyze in this browser tab: use the command line") from None
    except Exception as err:  # a file that breaks the analysis is still a bad input (as in analyze.py)
        raise TraceError(one_line(f"{name}: cannot analyze this trace ({type(err).__name__}: {err})")) from None


def answer(name: str, parts: Callable[[], dict[str, object]], what: str = "its results") -> str:
    """The JSON object of `parts()`, each part serialized as the command line does (strict_json),
    or {"error": one line naming `name` and `what` failed} whatever fails while they are made or
    serialized: the worker's error boundary. Parts are joined as text, so that the largest (the
    facts) is serialized once, and checked one at a time against MAX_ANSWER_CHARS."""
    try:
        pieces = ["{"]
        for key, value in parts().items():
            pieces += [", " if len(pieces) > 1 else "", json.dumps(key), ": ", strict_json(value)]
            if sum(map(len, pieces)) + 1 > MAX_ANSWER_CHARS:
                raise TraceError(f"{name}: too long to show on this page ({what} would be more than "
                                 f"{MAX_ANSWER_CHARS // 1_000_000} million characters: names in it are that long): "
                                 "use the command line")
        return "".join(pieces + ["}"])
    except TraceError as err:
        return error(str(err))
    except MemoryError:
        return error(f"{name}: too large to show in this browser tab (out of memory making {what}): "
                     "use the command line")
    except Exception as err:
        return error(f"{name}: cannot show {what} ({type(err).__name__}: {err})")


def error(message: str) -> str:
    return json.dumps({"error": one_line(message)})


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
        return error(str(err))
    except Exception as err:  # the facts came: a trace that breaks the check is still a bad input
        return error(f"{name}: cannot analyze this trace ({type(err).__name__}: {err})")
    out = answer(name, lambda: {  # the facts as --json prints them
        "facts": {**report.facts.to_dict(), "recording": report.recording.to_dict()},
        "facts_box": report.facts_box(guide_href), "steps_table": report.steps_table(), "summary": report.summary()})
    if not out.startswith('{"error"'):  # shown: its timeline can be drawn
        _current = report
    return out


def timeline_json() -> str:
    """{"svg": the annotated timeline, "window": what it shows}, or {"error": one line}."""
    if _current is None:
        return error("no trace has been read")
    name = _current.trace.source  # the facts are shown already: an error says why the picture is not
    return answer(name, lambda: {"svg": _current.timeline(), "window": bounded(select_window(_current.trace).label)},
                  "its timeline")


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
        return error("no trace has been read to compare with")
    try:
        after = read(path, name, progress, top=None)
    except TraceError as err:
        return error(str(err))
    (progress or (lambda stage, done: None))("comparing", None)
    from ..facts.diff import diff
    from ..pictures.comparison import comparison_html

    before = _current
    try:
        result = diff(before.all_facts(), after.facts)
    except Exception as err:  # each side was analyzed, so it is the pair that cannot be compared
        return error(f"{before.trace.source} and {name}: cannot compare these traces "
                     f"({type(err).__name__}: {err})")
    caption = (f"{bounded(before.trace.source)} → {bounded(name)}, whole traces "
               "(per ProfilerStep: means over their steps)")
    out = answer(f"{before.trace.source} and {name}", lambda: {
        "diff": result.to_dict(), "table": comparison_html(result, caption, guide_href)}, "their comparison")
    if not out.startswith('{"error"'):
        _after = after
    return out


def compare_timelines_json() -> str:
    """Both timelines, on one time scale, as `analyze.py BEFORE AFTER --diff --svg OUT` draws
    them (each trace's steady step, or the whole trace without numbered steps):
    {"before": {"svg", "window"}, "after": {...}, "span": the scale's width, formatted}, or
    {"error": one line}."""
    if _current is None or _after is None:
        return error("no pair of traces has been compared")
    from ..pictures.comparison import diff_timeline_svg
    from ..pictures.timeline.draw import shared_span_us

    pair = {"before": _current, "after": _after}

    def drawn() -> dict:
        windows = {role: select_window(r.trace, step=steady_step(r.trace)) for role, r in pair.items()}
        span = shared_span_us(*windows.values())
        return {**{role: {"svg": diff_timeline_svg(r.trace, windows[role], span,
                                                    f"{role.capitalize()}: {r.trace.source}"),
                          "window": bounded(windows[role].label)}
                   for role, r in pair.items()},
                "span": format_us(span)}

    # the deltas are shown already: an error says why the pictures are not
    return answer(f"{_current.trace.source} and {_after.trace.source}", drawn, "their timelines")
