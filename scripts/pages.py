"""Page helpers: what a post's `markdown-exec` blocks call, one line per element.

    ```python exec="true" html="true"
    from scripts.pages import example
    run = example("01_matmul_add/64_bf16_cold_eager")
    print(run.table())
    print(run.timeline())
    print(run.links())
    ```

Everything printed comes from the frozen artifacts under traces/; nothing here runs a snippet.
The mkdocs glue (scripts/mkdocs_hooks.py) tells this module which page is being rendered, so links
are relative and the site works under any base path, and it copies the registered assets into the
built site.
"""

from __future__ import annotations

import json
import posixpath
import re
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from html import escape
from pathlib import Path

from scripts import cache, catalog, freeze
from scripts.table import ProfilerTable, parse_table, render_table, to_us

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


def publish(site_path: str, source: Path) -> str:
    """Register a file to be copied into the built site; returns the link to it from this page."""
    SITE.assets[site_path] = source
    return relative_url(site_path)


def trace_site_path(example_: catalog.Example) -> str:
    return f"traces/{example_.snippet}/{example_.trace_path.name}"


def format_us(us: float) -> str:
    """A duration in the unit a reader would pick: 850 ns, 12.3 us, 4.51 ms, 1.20 s."""
    if us < 1:
        return f"{us * 1000:.0f} ns"
    if us < 1000:
        return f"{us:.3g} us" if us < 100 else f"{us:.0f} us"
    if us < 1e6:
        return f"{us / 1000:.3g} ms"
    return f"{us / 1e6:.3g} s"


def svg_size(svg: str) -> tuple[str, str]:
    """Width and height from the viewBox, so the page reserves the picture's space before it loads."""
    match = re.search(r'viewBox="0 0 ([\d.]+) ([\d.]+)"', svg)
    return (match.group(1), match.group(2)) if match else ("900", "300")


def zoomable_figure(site_path: str, svg: Path, alt: str, caption: str, css_class: str = "timeline") -> str:
    """An SVG file published at `site_path`, shown as an <img> (its size reserved from the viewBox) in
    a link to the file that docs/javascripts/svg-viewer.js opens full-screen, to pan and zoom."""
    width, height = svg_size(svg.read_text())
    src = publish(site_path, svg)
    return (
        f'<figure class="{css_class}"><a class="svg-zoom" href="{src}">'
        f'<img src="{src}" alt="{escape(alt)}" loading="lazy" width="{width}" height="{height}"></a>'
        f"<figcaption>{escape(caption)}</figcaption></figure>"
    )


@dataclass
class Run:
    """One frozen example, ready to be shown."""

    example: catalog.Example

    @cached_property
    def meta(self) -> dict:
        if not self.example.meta_path.exists():
            raise FileNotFoundError(
                f"{self.example.key} has no frozen artifacts; "
                f"run `{freeze.REFRESH_HINT.format(key=self.example.key)}` on a GPU machine"
            )
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
        from scripts.trace import load_trace

        return load_trace(self.example.trace_path)

    # Small queries the posts' prose uses; anything bigger belongs in scripts.analysis.

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
        env = self.meta["environment"]
        where = env.get("gpu") or "CPU"
        bits = [
            where + (f" (driver {env['driver']})" if env.get("driver") else ""),
            f"torch {env['torch']}" + (f", CUDA {env['cuda']}" if env.get("cuda") else "")
            + "".join(f", {name} {version}" for name, version in (env.get("packages") or {}).items() if version),
            f"Python {env['python']}",
            self.meta["date"][:10],
        ]
        return "Run on " + " · ".join(bits)

    def table(self) -> str:
        return render_table(self.table_data, caption=f"{self.example.command} — {self.caption()}")

    def timeline(self, step: int | None = None, max_kb: int | None = None, block: str | None = None) -> str:
        """The annotated timeline as a zoomable picture (scripts.pages.zoomable_figure) of
        ProfilerStep#`step`, or of the first annotation named `block` (a sweep's `eager n=64`).
        `max_kb` caps the picture's size (dense steps then merge more events into bands)."""
        from scripts.trace import select_window

        parts = [cache.file_digest(self.example.trace_path), str(step), str(max_kb), str(block),
                 cache.code_digest("timeline", "trace", "intervals", "analysis")]

        def render() -> str:
            from scripts.analysis import facts
            from scripts.timeline import SIZE_BUDGET_BYTES, render_timeline

            window = select_window(self.trace, step=step, annotation=block)
            return render_timeline(self.trace, window=window, facts=facts(self.trace, window=window),
                                   size_budget=max_kb * 1000 if max_kb else SIZE_BUDGET_BYTES)

        svg = cache.cached_text("timeline", parts, render, suffix=".svg")
        name = self.example.tag + (f"_step{step}" if step is not None else "")
        name += "_" + re.sub(r"[^A-Za-z0-9]+", "-", block).strip("-") if block else ""
        return zoomable_figure(
            f"timelines/{self.example.snippet}/{name}.svg", svg,
            f"Annotated timeline of {self.example.key}: CPU threads above, GPU streams below",
            f"{self.caption()}. Click to zoom; open the trace in Perfetto to explore it.")

    def summary(self) -> str:
        """What `python scripts/analyze.py TRACE` prints for this run (cached by content hash),
        naming the trace by its path in the repository, never by this checkout's absolute path."""
        shown = self.example.trace_path.relative_to(catalog.ROOT).as_posix()
        parts = [cache.file_digest(self.example.trace_path), shown,
                 cache.code_digest("analysis", "trace", "intervals")]

        def compute() -> str:
            from dataclasses import replace

            from scripts.analysis import facts, summary_text

            return summary_text(replace(facts(self.trace), source=shown))

        return cache.cached_text("summary", parts, compute).read_text()

    def facts(self) -> str:
        """The analyzer's headline facts about the whole trace, as a box."""
        return render_facts_box(load_facts_json(self), relative_url(FACTS_GUIDE))

    def links(self) -> str:
        """Download link, the Perfetto button, and (on an https site) a shareable Perfetto link."""
        site_path = trace_site_path(self.example)
        href = publish(site_path, self.example.trace_path)
        name = self.example.trace_path.name
        size_kb = self.example.trace_path.stat().st_size / 1024
        html = [
            f'<div class="trace-actions">'
            f'<a class="md-button" href="{href}" download="{name}">Download trace '
            f'<small>({size_kb:,.0f} KB)</small></a>'
            f'<button type="button" class="md-button md-button--primary perfetto-open" '
            f'data-trace="{href}" data-title="{escape(self.example.key)}" data-file="{name}">'
            f"Open in Perfetto</button>"
        ]
        if SITE.site_url.startswith("https://"):
            absolute = SITE.site_url.rstrip("/") + "/" + site_path
            html.append(f'<a class="perfetto-share" href="{PERFETTO_UI}/#!/?url={absolute}">'
                        f"Shareable Perfetto link</a>")
        html.append("</div>")
        return "".join(html)


FACTS_GUIDE = "guide/analyze-your-trace/"


def render_facts_box(facts: dict, guide_href: str) -> str:
    """A compact box of the analyzer's headline facts about a whole trace."""
    w = facts["window"]
    rows = [("Verdict", f"<strong>{escape(w['verdict']['label'])}</strong>: {escape(w['verdict']['reason'])}")]
    if facts["has_gpu_activity"]:
        launched = w["launched"]
        rows.append(("GPU busy", f"{w['window_busy_pct']:.1f}% of the trace's time ({format_us(w['window_busy_us'])}); "
                                 f"{launched['busy_pct']:.1f}% of the GPU time of its launched work "
                                 f"({format_us(launched['active_us'])})"))
        idle = w["temporal_breakdown"]
        rows.append(("Idle (HTA's breakdown)", f"{idle['idle_pct']:.1f}% idle · {idle['compute_pct']:.1f}% compute · "
                                               f"{idle['non_compute_pct']:.1f}% non-compute"))
        launches = w["launches"]
        apis = ", ".join(f"<code>{escape(api)}</code> {n}" for api, n in launches["by_api"].items())
        delay = launches.get("delay_p50_us")
        rows.append(("Launches", f"{launches['launches']} ({apis})"
                                 + (f"; median launch-to-start {format_us(delay)}" if delay is not None else "")))
        kinds = ", ".join(f"{n} {escape(kind)}" for kind, n in w["activities_by_kind"].items())
        rows.append(("GPU activities", kinds))
        top = w["top_kernels"][0]
        rows.append(("Top kernel", f"<code>{escape(top['name'])}</code>, {top['share_pct']:.0f}% of GPU time"))
    else:
        rows.append(("GPU", "no GPU activity in this trace"))
    rows.append(("CPU busy", f"{w['cpu_busy_pct']:.1f}% of the trace ({format_us(w['cpu_busy_us'])})"))
    if facts["steps"]:
        steps = "; ".join(
            f"#{step['label'].split('#')[-1]} {escape(step['verdict']['label'])}"
            + (f" ({step['launched']['busy_pct']:.0f}% GPU busy of launched work)" if step["launched"] else "")
            for step in facts["steps"]
        )
        rows.append(("Per ProfilerStep", steps))
    body = "".join(f"<dt>{name}</dt><dd>{value}</dd>" for name, value in rows)
    return (
        '<div class="admonition abstract facts" data-search-exclude><p class="admonition-title">What the analyzer says '
        f'(<a href="{guide_href}">how to read this</a>)</p><dl>{body}</dl></div>'
    )


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
    return _runs[(key, version)]


def load_facts_json(run: Run, window=None) -> dict:
    """The facts engine's output for a run, cached on disk by content hash."""
    parts = [cache.file_digest(run.example.trace_path), repr(window),
             cache.code_digest("analysis", "trace", "intervals")]

    def compute() -> str:
        from scripts.analysis import facts

        return json.dumps(facts(run.trace, window=window).to_dict())

    return json.loads(cache.cached_text("facts", parts, compute, suffix=".json").read_text())


# --- companion notebooks (scripts/notebooks.py) -----------------------------------------------


def _page_link(site_path: str) -> str:
    """relative_url, keeping the trailing slash of a page's URL."""
    return relative_url(site_path) + ("/" if site_path.endswith("/") else "")


def notebook_box(part: int | None = None) -> str:
    """The box near the top of a post: its companion notebook (that of `part`, for a page beyond
    the series that shares one), to view or to download."""
    from scripts import notebooks

    found = [n for n in notebooks.NOTEBOOKS if (n.part == part if part else n.post_url == SITE.page_url)]
    if not found:
        raise LookupError(f"no notebook in scripts/notebooks.py has the post {SITE.page_url!r}"
                          + (f" or the part {part}" if part else ""))
    notebook = found[0]
    return (
        '<div class="admonition example companion-notebook"><p class="admonition-title">Companion '
        f'notebook</p><p>Every example of this part as a notebook, to rerun on your GPU or on Colab: '
        f'<a href="{_page_link(notebook.page_url)}">view it</a> · '
        f'<a href="{_page_link(notebook.download_url)}" download>download it (.ipynb)</a>.</p></div>'
    )


def notebook_index() -> str:
    """The Notebooks page's table: each part's notebook, its post and its download."""
    from scripts import notebooks

    rows = "".join(
        f'<tr><td><a href="{_page_link(n.page_url)}">{escape(n.title)}</a></td>'
        f'<td><a href="{_page_link(n.post_url)}">Part {n.part}</a></td>'
        f"<td>{len(n.runs)}</td>"
        f'<td><a href="{_page_link(n.download_url)}" download>{escape(n.name)}.ipynb</a></td></tr>'
        for n in notebooks.NOTEBOOKS
    )
    return ("<table><thead><tr><th>Notebook</th><th>Post</th><th>Examples</th><th>Download</th></tr>"
            f"</thead><tbody>{rows}</tbody></table>")


def notebook_actions(docs_path: str) -> str:
    """Above a rendered notebook: its download and the post it belongs to ("" for other pages)."""
    from scripts import notebooks

    found = [n for n in notebooks.NOTEBOOKS if n.docs_path == docs_path]
    if not found:
        return ""
    notebook = found[0]
    return (
        '<div class="notebook-actions">'
        f'<a class="md-button md-button--primary" href="{_page_link(notebook.download_url)}" '
        f'download>Download the notebook (.ipynb)</a>'
        f'<a class="md-button" href="{_page_link(notebook.post_url)}">Read Part {notebook.part}</a></div>'
    )


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
        html = html.replace(inline, f'<link rel="stylesheet" href="{publish(JUPYTER_CSS, css_file)}">', 1)
    for dead in (_MATHJAX, _MERMAID, _PYGMENTS_LIST):
        html = dead.sub("", html, count=1)
    # Material matches the excluded element by its tag alone, so the first </div> inside an
    # excluded <div> would end the exclusion: mark the innermost elements, the <pre>s and the
    # hidden copies of the code and the "Copied!" notices of the copy buttons.
    html = html.replace("<pre>", "<pre data-search-exclude>")
    html = html.replace('<span class="notice" hidden="">', '<span class="notice" hidden="" data-search-exclude>')
    return html.replace('class="clipboard-copy-txt"', 'data-search-exclude class="clipboard-copy-txt"')
