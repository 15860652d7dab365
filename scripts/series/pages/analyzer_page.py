"""The page of the in-browser analyzer (docs/guide/analyze-in-browser.md): its widget, and the files
the widget loads when the reader asks, published into the site.

    ```python exec="true" html="true"
    from scripts.series.pages.analyzer_page import widget
    print(widget())
    ```

Published with the page (scripts/series/mkdocs_glue/hooks.py copies them): the vendored Pyodide
(scripts/series/pages/pyodide.py) and the modules of this package that scripts/tracefacts/entry/browser.py needs. The
page itself loads only docs/javascripts/analyzer.js; the rest is fetched on the first drop.
"""

from __future__ import annotations

import ast
from functools import lru_cache
from pathlib import Path

from . import pyodide as vendor_pyodide
from .cache import imported_modules
from ...tracefacts.pictures.markup import Markup, h
from .helpers import FACTS_GUIDE, publish, relative_url

ANALYZER = Path(__file__).resolve().parents[2] / "tracefacts"  # the package the browser runs, alone
ANALYZER_NAME = "tracefacts"  # its name there, as installed
ENTRY = "tracefacts.entry.browser"  # the module the worker imports
PYODIDE_SITE_DIR = f"assets/pyodide/{vendor_pyodide.PYODIDE_VERSION}/"
PYTHON_SITE_DIR = "assets/analyzer/"  # holds tracefacts/<stage>/<module>.py
SCRIPT = "javascripts/analyzer.js"
ACCEPT = ".json,.gz,application/json,application/gzip"
WORKER = "javascripts/analyzer-worker.js"


def source_file(module: str) -> Path:
    """The file of an analyzer module (`tracefacts.entry.browser`), or of a package's __init__."""
    base = ANALYZER.joinpath(*module.split(".")[1:])
    return base / "__init__.py" if base.is_dir() else base.with_suffix(".py")


def _imported(module: str, everywhere: bool) -> set[str]:
    """The analyzer's modules that `module` imports: at its top level, or `everywhere` (inside
    functions too). The import reading is the render cache's (scripts.series.pages.cache)."""
    path = source_file(module)
    tree = ast.parse(path.read_text(encoding="utf-8"))
    nodes = list(ast.walk(tree) if everywhere else _top_level(tree.body))
    source = ast.unparse(ast.Module(body=[n for n in nodes if isinstance(n, (ast.Import, ast.ImportFrom))],
                                    type_ignores=[]))
    dotted = imported_modules(source, module, ANALYZER_NAME, path.name == "__init__.py")
    return {name for name in dotted if source_file(name).is_file()}


def _packages(module: str) -> set[str]:
    """The packages that importing `module` runs the __init__ of."""
    parts = module.split(".")
    return {".".join(parts[:i]) for i in range(1, len(parts))}


def _top_level(body: list[ast.stmt]):
    """The statements that run on import: the body, and the branches of its if/try blocks."""
    for node in body:
        yield node
        for field in ("body", "orelse", "finalbody", "handlers"):
            if isinstance(node, (ast.If, ast.Try, ast.With)) and getattr(node, field, None):
                yield from _top_level(getattr(node, field))
        if isinstance(node, ast.ExceptHandler):
            yield from _top_level(node.body)


@lru_cache(maxsize=1)
def shipped_modules() -> tuple[str, ...]:
    """What the browser needs of the analyzer, as paths under its package (`tracefacts/entry/browser`):
    scripts/tracefacts/entry/browser.py and every import of it, lazy ones included, then what those
    import on import (their own lazy imports serve other callers: the page's path never reaches
    them, and tests/test_browser_analyzer.py checks that), with the packages' __init__ files."""
    todo, seen = [ENTRY], {ENTRY}
    everywhere = True
    while todo:
        found = set()
        for module in todo:
            found |= _imported(module, everywhere)
        everywhere = False
        todo = sorted(found - seen)
        seen |= found
    seen |= {package for module in seen for package in _packages(module)}
    return tuple(sorted(source_file(m).relative_to(ANALYZER.parent).with_suffix("").as_posix() for m in seen))


def widget() -> Markup:
    """The drop zone, the progress line (with a Stop button) and the places for the facts box, the per-step table, the
    timeline and the summary; a second drop zone for a trace to compare with the first, and the
    places for the comparison; and the script that runs them. Without the vendored Pyodide (a
    non-strict build: `mkdocs serve` before `make pyodide`), a notice instead."""
    problem = vendor_pyodide.missing()
    if problem:
        return h("div", {"class": "admonition warning"},
                 h("p", {"class": "admonition-title"}, "The analyzer is not in this build"),
                 h("p", None, f"This build of the site has no Pyodide: {problem}."))
    folder = vendor_pyodide.vendored_dir()
    for name in vendor_pyodide.PYODIDE_FILES:
        publish(PYODIDE_SITE_DIR + name, folder / name)
    modules = shipped_modules()
    for module in modules:
        publish(f"{PYTHON_SITE_DIR}{module}.py", ANALYZER.parent / f"{module}.py")
    attrs = {
        "class": "trace-analyzer", "data-search-exclude": True,
        "data-pyodide": relative_url(PYODIDE_SITE_DIR) + "/",
        "data-python": relative_url(PYTHON_SITE_DIR) + "/",
        "data-modules": " ".join(modules),
        "data-worker": relative_url(WORKER),
        "data-guide": relative_url(FACTS_GUIDE) + "/",
    }
    drop = h("div", {"class": "analyzer-drop"},
             h("p", None, h("strong", None, "Drop a trace here"), " (", h("code", None, ".json"), " or ",
               h("code", None, ".json.gz"), "), or choose one; two at once to compare them, the "
               "first as before:"),
             h("input", {"type": "file", "class": "analyzer-input", "aria-label": "Trace file to analyze",
                         "accept": ACCEPT, "multiple": True}),
             h("button", {"type": "button", "class": "md-button analyzer-preload"},
               "Load the analyzer now"))
    # Stop: shown while the analyzer works (it ends the worker; the next drop starts another).
    status = h("div", {"class": "analyzer-status", "role": "status", "hidden": True},
               h("progress", {"class": "analyzer-progress", "max": 1}), " ",
               h("span", {"class": "analyzer-stage"}),
               h("button", {"type": "button", "class": "md-button analyzer-stop", "hidden": True}, "Stop"))
    error = h("p", {"class": "analyzer-error", "role": "alert", "hidden": True})
    output = h("div", {"class": "analyzer-output", "hidden": True},
               h("p", {"class": "analyzer-title"}),
               h("div", {"class": "analyzer-facts"}),
               h("div", {"class": "analyzer-steps"}),
               # its <img> is made with the picture: an image without a source counts as broken
               h("figure", {"class": "timeline analyzer-timeline", "hidden": True}, h("figcaption", None)),
               h("details", {"class": "analyzer-cli"},
                 h("summary", None, "What the command line prints for this trace"),
                 h("pre", None, h("code", {"class": "analyzer-summary"}))))
    # Before and after: shown once a trace is on the page, which becomes the before.
    compare = h("div", {"class": "analyzer-drop analyzer-compare", "hidden": True},
                h("p", None, h("strong", None, "Before and after:"), " drop the trace after a change "
                  "here, or choose it, to compare it with ", h("span", {"class": "analyzer-before-name"}),
                  " (before):"),
                h("input", {"type": "file", "class": "analyzer-input-after", "accept": ACCEPT,
                            "aria-label": "Trace to compare with the one analyzed (after)"}))
    # What Parts 1 and 4 show for a pair: the deltas, the verdicts, both timelines on one scale.
    compared = h("div", {"class": "analyzer-diff before-after", "hidden": True},
                 h("p", {"class": "analyzer-diff-title"}),
                 h("div", {"class": "analyzer-diff-table"}),
                 [h("figure", {"class": f"timeline analyzer-diff-timeline analyzer-timeline-{role}", "hidden": True},
                    h("figcaption", None)) for role in ("before", "after")])
    return h("div", attrs, drop, compare, status, error, compared, output,
             h("script", {"type": "module", "src": relative_url(SCRIPT)}))
