"""Page helpers: what a post's `markdown-exec` blocks call, one line per element.

    ```python exec="true" html="true"
    from scripts.series.pages.helpers import example
    run = example("01_matmul_add/64_bf16_cold_eager")
    print(run.table())
    print(run.timeline())
    print(run.links())
    ```

Everything printed comes from the frozen artifacts under traces/; nothing here runs a snippet.
The mkdocs glue (scripts/series/mkdocs_glue/hooks.py) tells this module which page is being rendered, so links
are relative and the site works under any base path, and it copies the registered assets into the
built site.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass, field, replace
from functools import cached_property, lru_cache
from pathlib import Path

from . import cache
from ..runs import catalog, freeze
from ...tracefacts.model.units import format_us  # noqa: F401 (the posts import it from here)
from ...tracefacts.pictures.markup import Markup, concat, h, join, table, writable
from ...tracefacts.pictures.profiler_table import ProfilerTable, parse_table, render_table, to_us
from ...tracefacts.pictures.facts_box import FACTS_GUIDE, render_facts_box  # noqa: F401 (the posts import them from here)
from ...tracefacts.pictures.perfetto_links import TraceTarget, open_at

PERFETTO_UI = "https://ui.perfetto.dev"


@dataclass
class SiteState:
    page_url: str = ""  # site-relative URL of the page being rendered, e.g. "blog/matmul-add/"
    site_url: str = ""
    assets: dict[str, Path] = field(default_factory=dict)  # site-relative path -> file to copy there


SITE = SiteState()


def relative_url(target: str) -> str:
    """A link from the current page to a site-relative path."""
    page = SITE.page_url
    base = page.rstrip("/") if page.endswith("/") or not page else posixpath.dirname(page)
    return posixpath.relpath(target, base or ".")


_SNIPPET_TITLE = re.compile(r'<span class="filename">(snippets/[A-Za-z0-9_]+\.py)</span>')


def link_snippet_titles(html: str) -> str:
    """A code block titled with a snippet's path (pymdownx.snippets' `title=`) links to that file,
    which the site serves under snippets/ (what a downloaded notebook fetches too)."""
    def link(match: re.Match) -> str:
        path = match.group(1)
        if not (catalog.SNIPPETS / path.split("/", 1)[1]).is_file():
            return match.group(0)
        return f'<span class="filename"><a href="{relative_url(path)}">{path}</a></span>'

    return _SNIPPET_TITLE.sub(link, html)


def publish(site_path: str, source: Path) -> str:
    """Register a file to be copied into the built site; returns the link to it from this page."""
    SITE.assets[site_path] = source
    return relative_url(site_path)


def trace_site_path(example_: catalog.Example) -> str:
    return f"traces/{example_.snippet}/{example_.trace_path.name}"


def svg_size(svg: str) -> tuple[str, str]:
    """Width and height from the viewBox, so the page reserves the picture's space before it loads."""
    match = re.search(r'viewBox="0 0 ([\d.]+) ([\d.]+)"', svg)
    return (match.group(1), match.group(2)) if match else ("900", "300")


def zoomable_figure(site_path: str, svg: Path, alt: str, caption: str, css_class: str = "timeline") -> Markup:
    """An SVG file published at `site_path`, shown as an <img> (its size reserved from the viewBox) in
    a link to the file that docs/javascripts/svg-viewer.js opens full-screen, to pan and zoom."""
    width, height = svg_size(svg.read_text())
    src = publish(site_path, svg)
    image = h("img", {"src": src, "alt": alt, "loading": "lazy", "width": width, "height": height})
    return h("figure", {"class": css_class},
             h("a", {"class": "svg-zoom", "href": src}, image),
             h("figcaption", None, caption))


@dataclass
class Run:
    """One frozen example, ready to be shown."""

    example: catalog.Example

    @cached_property
    def meta(self) -> freeze.Meta:
        """The run's metadata, checked: a missing or unusable file raises one line naming it and the
        command to run (freeze.MetaError)."""
        return freeze.read_meta(self.example)

    @cached_property
    def unavailable(self) -> str | None:
        """Why the snippet could not run this example on the GPU, or None if it ran."""
        self.meta  # a missing example fails here, with the command to run
        path = self.example.unavailable_path
        return path.read_text().strip() if path.exists() else None

    @cached_property
    def table_data(self) -> ProfilerTable:
        return parse_table(self.example.table_path.read_text())

    @cached_property
    def trace(self):
        from ...tracefacts.model.trace import load_trace

        return load_trace(self.example.trace_path)

    # Small queries the posts' prose uses; anything bigger belongs in scripts.tracefacts.facts.analysis.

    def events(self, name: str, kind: str | None = None) -> list:
        """Events whose name starts with `name` (and of `kind`, if given), in time order."""
        return [e for e in self.trace.events
                if e.name.startswith(name) and (kind is None or e.kind == kind)]

    def step_durations(self) -> dict[str, float]:
        return {step.name: step.dur for step in self.trace.steps}

    def first_op_offsets(self, op: str) -> dict[str, float]:
        """Per step: how long after the step began the first `op` started."""
        offsets = {}
        for step in self.trace.steps:
            starts = [e.ts for e in self.events(op) if step.ts <= e.ts < step.end]
            if starts:
                offsets[step.name] = starts[0] - step.ts
        return offsets

    def total_us(self, label: str) -> float:
        """A total from the foot of the profiler table, e.g. 'Self CPU time total', in us."""
        value = self.table_data.total(label)
        if value is None:
            raise KeyError(f"{self.example.key}: the table has no '{label}'")
        return to_us(value)

    def caption(self) -> str:
        env = self.meta.environment
        where = env.gpu or "CPU"
        bits = [
            where + (f" (driver {env.driver})" if env.driver else ""),
            f"torch {env.torch}" + (f", CUDA {env.cuda}" if env.cuda else "")
            + "".join(f", {name} {version}" for name, version in (env.packages or {}).items() if version),
            *([f"Python {env.python}"] if env.python else []),
            self.meta.day,
        ]
        return "Run on " + " · ".join(bits)

    def table(self, rows: tuple | None = None, caption: str | None = None) -> Markup:
        """The run's profiler table, or a cut of it: `rows`, some of its rows (its foot kept)."""
        data = self.table_data if rows is None else replace(self.table_data, rows=rows)
        return render_table(data, caption=caption or f"{self.example.command} — {self.caption()}",
                            activities=self.activities)

    @property
    def activities(self) -> dict[str, str]:
        """The name of each GPU activity of the run's trace -> its kind: which rows of its
        profiler table are GPU activities, and their names in full."""
        from . import render

        return cache.cached("activities", render.activity_kinds, self.trace_input)

    def timeline(self, step: int | None = None, max_kb: int | None = None, block: str | None = None,
                 window=None) -> Markup:
        """The annotated timeline as a zoomable picture (scripts.series.pages.helpers.zoomable_figure) of
        ProfilerStep#`step`, or of the first annotation named `block` (a sweep's `eager n=64`), or
        of `window`: a (start, end) in us, or a scripts.tracefacts.model.trace.Window (its label is shown), for a
        picture that must reach past a step's end (the GPU work a step launched, running later).
        `max_kb` caps the picture's size (dense steps then merge more events into bands)."""
        from . import render

        svg = cache.cached_file("timeline", render.timeline_svg, self.trace_input, step, max_kb, block, window,
                                suffix=".svg")
        name = self.example.tag + (f"_step{step}" if step is not None else "")
        name += "_" + re.sub(r"[^A-Za-z0-9]+", "-", block).strip("-") if block else ""
        if window is not None:
            start, end = (window.start, window.end) if hasattr(window, "start") else window
            name += f"_{start:.0f}-{end:.0f}us"
        return zoomable_figure(
            f"timelines/{self.example.snippet}/{name}.svg", svg,
            f"Annotated timeline of {self.example.key}: CPU threads above, GPU streams below",
            concat(f"{self.caption()}. Click to zoom; open the trace in Perfetto to explore it.",
                   self._picture_links(step, block, window)))

    def _picture_links(self, step, block, window) -> Markup:
        """Under a timeline: what it draws and its widest GPU gaps (as its labels name them), each
        a link that opens the trace in Perfetto there."""
        from ...tracefacts.model.trace import Window, select_window

        drawn = window if isinstance(window, Window) else select_window(
            self.trace, step=step, window=window, annotation=block)
        shown = self.trace_facts(drawn).window
        links = [self.open_at(shown.span, drawn.label, drawn.label)] if shown.span else []
        for gap in (shown.launched.widest_gaps if shown.launched else []):
            if gap.span is not None and gap.start_us < drawn.end and gap.end_us > drawn.start:
                links.append(self.open_at(gap.span, f"the GPU idle for {format_us(gap.dur_us)}",
                                          f"GPU idle for {format_us(gap.dur_us)}"))
        return concat(" In Perfetto: ", join(" · ", links), ".") if links else Markup("")

    def summary(self) -> str:
        """What `python scripts/analyze.py TRACE` prints for this run (cached by content hash),
        naming the trace by its path in the repository, never by this checkout's absolute path."""
        from . import render

        return cache.cached_file("summary", render.summary, self.trace_input, self.shown_path).read_text()

    def facts(self, window=None, memory=None) -> Markup:
        """The analyzer's headline facts about the whole trace (or `window`, as trace_facts takes
        it: the step a picture draws, say), as a box, each finding with a link that opens the
        trace in Perfetto there, and the recording's warnings; `memory`
        (scripts.tracefacts.facts.memory.MemoryFacts) adds each device's peak."""
        return render_facts_box(self.trace_facts(window), relative_url(FACTS_GUIDE), memory=memory,
                                perfetto=self.perfetto_target(), recording=self.recording())

    def perfetto_target(self) -> TraceTarget:
        """This run's trace as the links that open it in Perfetto name it (published with the page)."""
        href = publish(trace_site_path(self.example), self.example.trace_path)
        return TraceTarget(self.example.key, self.example.trace_path.name, href)

    def open_at(self, span, label: str, text: str = "in Perfetto") -> Markup:
        """A link that opens this run's trace in Perfetto at `span` (a finding's, or an event's:
        scripts.tracefacts.facts.places.event_span), `label` naming what is there."""
        return open_at(self.perfetto_target(), span, label, self.trace_facts().span, text)

    def recording(self):
        """How the run's trace was recorded and what can mislead in it
        (scripts.tracefacts.facts.recording.RecordingFacts)."""
        from . import render

        return cache.cached("recording", render.recording, self.trace_input)

    def links(self, label: str | None = None) -> Markup:
        """The run's name, then its download link, the Perfetto button, and (on an https site) a
        shareable Perfetto link. The name comes first because a post may print several runs'
        buttons together: `label` is a short one the page gives (the size, the setting it
        varies), else the example's tag, the stem of the file the reader downloads."""
        self.meta  # a run never made fails here, with the command to run, before a file is published
        site_path = trace_site_path(self.example)
        href = publish(site_path, self.example.trace_path)
        name = self.example.trace_path.name
        size_kb = self.example.trace_path.stat().st_size / 1024
        _ledger().link(self.example.key)
        parts = [
            h("span", {"class": "trace-run", "title": self.example.key},
              label if label else h("code", None, self.example.tag)),
            h("a", {"class": "md-button", "href": href, "download": name},
              "Download trace ", h("small", None, f"({size_kb:,.0f} KB)")),
            h("button", {"type": "button", "class": "md-button md-button--primary perfetto-open",
                         "data-trace": href, "data-title": self.example.key, "data-file": name},
              "Open in Perfetto"),
        ]
        if SITE.site_url.startswith("https://"):
            absolute = SITE.site_url.rstrip("/") + "/" + site_path
            parts.append(h("a", {"class": "perfetto-share", "href": f"{PERFETTO_UI}/#!/?url={absolute}"},
                           "Shareable Perfetto link"))
        return h("div", {"class": "trace-actions"}, parts)

    # Typed facts and repeated measurements (scripts.series.pages.render computes them, scripts.series.pages.cache keeps them).

    @property
    def trace_input(self) -> cache.FileInput:
        """The trace as an input of a cached computation: keyed by the file, parsed once."""
        return cache.FileInput(self.example.trace_path, lambda: self.trace)

    def trace_facts(self, window=None):
        """The analyzer's TraceFacts about this run (over `window`, default the whole trace),
        naming the trace by its path in the repository: the facts box's note ids are drawn from
        that name, so this checkout's absolute path (or that of whichever build filled the render
        cache) would make two builds of one commit differ."""
        from . import render

        return replace(cache.cached("facts", render.trace_facts, self.trace_input, window),
                       source=self.shown_path)

    @cached_property
    def shown_path(self) -> str:
        """The trace's path in the repository, as pages and the render cache may name it."""
        return self.example.trace_path.relative_to(catalog.ROOT).as_posix()

    def samples(self) -> list[dict]:
        """scripts.series.runs.samples' digests of every run of this example: the shown trace's, then those
        of the extra process runs the refresh stored beside it (none for older runs)."""
        return list(self._digests)

    @cached_property
    def _digests(self) -> tuple[dict, ...]:
        from . import render
        from ..runs.samples import read_extra_runs, samples_path

        try:
            extra = read_extra_runs(samples_path(self.example.trace_path))
        except ValueError as err:
            raise ValueError(f"{self.example.key}: {err}") from None
        return (cache.cached("samples", render.sample_digest, self.trace_input), *extra)

    def step_samples(self, field: str = "dur_us", *, skip_first: bool):
        """A Spread of one step field (`dur_us`, `gpu.busy_us`, `gpu.kernels`) over every
        recorded step of every run; `skip_first` leaves out each run's first recorded step."""
        from .claims import samples
        from ..runs.samples import step_values

        values = step_values(self.samples(), field, skip_first=skip_first)
        unit = "" if field == "gpu.kernels" else "us"
        return samples(values, unit, STEP_FIELDS.get(field, f"{field} per step") + _after_first(skip_first),
                       [self.example.key])

    def first_step_samples(self, field: str = "dur_us"):
        """A Spread of one step field of each run's first recorded step (one value per run)."""
        from .claims import samples
        from ..runs.samples import first_step_values

        values = first_step_values(self.samples(), field)
        return samples(values, "" if field == "gpu.kernels" else "us",
                       f"{STEP_FIELDS.get(field, field)} of each run's first recorded step", [self.example.key])

    def op_samples(self, name: str, field: str, *, skip_first: bool):
        """A Spread of an op's (or label's) `first_us`, `total_us` or `count`, one value per
        recorded step in which it ran, over every run."""
        from .claims import samples
        from ..runs.samples import op_values

        values = op_values(self.samples(), name, field, skip_first=skip_first)
        return samples(values, "" if field == "count" else "us",
                       f"{name}, {OP_FIELDS.get(field, field)}" + _after_first(skip_first), [self.example.key])


# How the samples' labels (the notes under a page, and the key of a comparison) name the fields
# of scripts.series.runs.samples' digests.
STEP_FIELDS = {"dur_us": "step length", "gpu.busy_us": "GPU busy time per step", "gpu.kernels": "kernels per step"}
OP_FIELDS = {"first_us": "time from the step's start to its first call", "total_us": "time per step",
             "count": "calls per step"}


def _after_first(skip_first: bool) -> str:
    """What a Spread's label adds when each run's first recorded step is left out: the comparisons
    are registered by their samples' labels (scripts.series.pages.claims.Ledger.answer)."""
    return ", steps after each run's first" if skip_first else ""


_runs: dict[tuple, Run] = {}


def example(key: str) -> Run:
    """The frozen run of an example. Kept for the life of the process while its artifacts are
    unchanged, so that a rebuild during `mkdocs serve` does not parse its trace again."""
    item = catalog.get(key)
    try:
        stat = item.meta_path.stat()
        version = (stat.st_mtime_ns, stat.st_size)
    except FileNotFoundError:
        version = None  # Run.meta raises with the command to run
    if (key, version) not in _runs:
        _runs[(key, version)] = Run(item)
    _ledger().use(key, traced=item.trace_path.exists())  # the page reads its numbers: it shows its buttons
    return _runs[(key, version)]


def load_facts_json(run: Run, window=None) -> dict:
    """The facts engine's output for a run as JSON-ready dicts (Run.trace_facts is the typed form,
    which the page helpers read; this stays for the blocks that still index the dict)."""
    return run.trace_facts(window).to_dict()


def _ledger():
    from .claims import LEDGER

    return LEDGER


# --- companion notebooks (scripts/series/notebooks/write.py) -----------------------------------------------


def _page_link(site_path: str) -> str:
    """relative_url, keeping the trailing slash of a page's URL."""
    return relative_url(site_path) + ("/" if site_path.endswith("/") else "")


def notebook_box(part: int | None = None) -> Markup:
    """The box near the top of a post: its companion notebook (that of `part`, for a page beyond
    the series that shares one), to view or to download."""
    from ..notebooks import write as notebooks

    found = [n for n in notebooks.NOTEBOOKS if (n.part == part if part else n.post_url == SITE.page_url)]
    if not found:
        raise LookupError(f"no notebook in scripts/series/notebooks/write.py has the post {SITE.page_url!r}"
                          + (f" or the part {part}" if part else ""))
    notebook = found[0]
    return h("div", {"class": "admonition example companion-notebook"},
             h("p", {"class": "admonition-title"}, "Companion notebook"),
             h("p", None, "Every example of this part as a notebook, to rerun on your GPU or on Colab: ",
               h("a", {"href": _page_link(notebook.page_url)}, "view it"), " · ",
               h("a", {"href": _page_link(notebook.download_url), "download": True}, "download it (.ipynb)"),
               "."))


def notebook_index() -> Markup:
    """The Notebooks page's table: each part's notebook, its post and its download."""
    from ..notebooks import write as notebooks

    rows = [
        [h("a", {"href": _page_link(n.page_url)}, n.title),
         h("a", {"href": _page_link(n.post_url)}, n.post_label),
         len(n.runs),
         h("a", {"href": _page_link(n.download_url), "download": True}, f"{n.name}.ipynb")]
        for n in notebooks.NOTEBOOKS
    ]
    return table(["Notebook", "Post", "Examples", "Download"], rows)


def notebook_actions(docs_path: str) -> Markup:
    """Above a rendered notebook: its download and the post it belongs to ("" for other pages)."""
    from ..notebooks import write as notebooks

    found = [n for n in notebooks.NOTEBOOKS if n.docs_path == docs_path]
    if not found:
        return Markup("")
    notebook = found[0]
    return h("div", {"class": "notebook-actions"},
             h("a", {"class": "md-button md-button--primary", "href": _page_link(notebook.download_url),
                     "download": True}, "Download the notebook (.ipynb)"),
             h("a", {"class": "md-button", "href": _page_link(notebook.post_url)}, f"Read {notebook.post_label}"))


JUPYTER_CSS = "stylesheets/jupyter.css"  # mkdocs-jupyter's JupyterLab stylesheet, shared by the notebook pages
_MATHJAX = re.compile(r"<!-- Load mathjax -->.*?<!-- End of mathjax configuration -->", re.S)
_MERMAID = re.compile(r'<script type="module">\s*document\.addEventListener\("DOMContentLoaded", async \(\) => \{'
                      r'\s*const diagrams = document\.querySelectorAll\("\.jp-Mermaid.*?'
                      r"<!-- End of mermaid configuration -->", re.S)
_PYGMENTS_LIST = re.compile(r"<style>\s*\['pre \{ line-height.*?'\]\s*</style>", re.S)  # a list's repr, a duplicate


@lru_cache(maxsize=1)
def _jupyter_css() -> tuple[Path, str]:
    """mkdocs-jupyter's JupyterLab stylesheet, and the <style> element it inlines it as (read
    once per build, not once per notebook page)."""
    import mkdocs_jupyter

    css_file = Path(mkdocs_jupyter.__file__).parent / "templates" / "mkdocs_html" / "assets" / "index.css"
    return css_file, f'<style type="text/css">\n{css_file.read_text(encoding="utf-8")}</style>'


def notebook_html(html: str) -> str:
    """A notebook page as mkdocs-jupyter renders it, made lighter: its 570 kB JupyterLab stylesheet
    becomes one file that every notebook page shares (and the browser caches) instead of a copy
    inlined in each, and the loaders of MathJax (with no URL: we set none) and Mermaid, which no
    notebook of ours needs, are left out. A part that does not match is left as it was.

    The code and its outputs stay out of the search index (every page loads it): the outputs are
    the tables the posts already show, and the index would otherwise grow by half."""
    css_file, inline = _jupyter_css()
    if inline in html:
        html = html.replace(inline, h("link", {"rel": "stylesheet", "href": publish(JUPYTER_CSS, css_file)}), 1)
    for dead in (_MATHJAX, _MERMAID, _PYGMENTS_LIST):
        html = dead.sub("", html, count=1)
    # Material matches the excluded element by its tag alone, so the first </div> inside an
    # excluded <div> would end the exclusion: mark the innermost elements, the <pre>s and the
    # hidden copies of the code and the "Copied!" notices of the copy buttons.
    html = html.replace("<pre>", "<pre data-search-exclude>")
    html = html.replace('<span class="notice" hidden="">', '<span class="notice" hidden="" data-search-exclude>')
    return html.replace('class="clipboard-copy-txt"', 'data-search-exclude class="clipboard-copy-txt"')
