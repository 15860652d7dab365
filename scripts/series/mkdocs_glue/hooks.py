"""MkDocs glue, kept thin: freeze and notebook checks before the build, page URL for the helpers,
assets after.

Listed under `hooks:` in mkdocs.yml. Everything of substance lives in scripts.series.runs.freeze,
scripts.series.notebooks.write and scripts.series.pages.helpers, so the content would survive a move to another generator.
"""

from __future__ import annotations

import json
import logging
import re
import shutil
import sys
from pathlib import Path
from urllib.parse import urljoin

ROOT = Path(__file__).resolve().parents[3]
if str(ROOT) not in sys.path:  # markdown-exec blocks import `scripts` too
    sys.path.insert(0, str(ROOT))

from mkdocs.exceptions import PluginError  # noqa: E402
from mkdocs.plugins import event_priority  # noqa: E402

from scripts.series.runs import catalog, freeze  # noqa: E402
from scripts.series.pages import glossary, offscreen, helpers as pages, pyodide as vendor_pyodide  # noqa: E402
from scripts.series.notebooks import write as notebooks  # noqa: E402
from scripts.tracefacts.pictures.markup import Markup, h  # noqa: E402

log = logging.getLogger("mkdocs.hooks.freeze")


class OneLineForUnusableMetadata(logging.Filter):
    """markdown-exec logs a failing code block with its source and whole traceback. When the cause is
    a run's unusable metadata (which the freeze check has named already, with the command to run),
    the warning is that one line instead; any other failure keeps markdown-exec's message."""

    MARK = "scripts.series.runs.meta.MetaError: "

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if self.MARK in message:
            cause = message.rsplit(self.MARK, 1)[1].strip().splitlines()[0]
            record.msg, record.args = f"a code block of {pages.SITE.page_url or 'the home page'} could not run: {cause}", ()
        return True


def shorten_metadata_failures() -> None:
    """Filters apply at the logger a record starts from, and markdown-exec logs from one logger per
    module under mkdocs.plugins.markdown_exec (loaded with the plugins, before on_config)."""
    for name in list(logging.root.manager.loggerDict):
        logger = logging.getLogger(name)
        if name.startswith("mkdocs.plugins.markdown_exec") and not any(
                isinstance(f, OneLineForUnusableMetadata) for f in logger.filters):
            logger.addFilter(OneLineForUnusableMetadata())


FEED_IMAGE = "assets/logo.png"  # scripts/series/pages/logo.py


@event_priority(100)  # before the RSS plugin reads its config
def on_config(config):
    shorten_metadata_failures()
    pages.SITE.site_url = config.site_url or ""
    # The plugin writes <url>None</url> for a feed without an image; RSS wants an absolute URL.
    config.plugins["rss"].config.image = urljoin(config.site_url or "", FEED_IMAGE)
    # The Notebooks section of the nav lists every notebook of scripts/series/notebooks/write.py.
    for section in config.nav or []:
        if isinstance(section, dict) and isinstance(section.get("Notebooks"), list):
            section["Notebooks"] += [e for e in notebooks.nav() if e not in section["Notebooks"]]
    return config


def on_pre_build(config):
    _inlined.clear()  # the inlined scripts read again by this build's first page (serve: edits)
    pages.SITE.assets.clear()
    pages.SITE.assets.update(notebooks.published_snippets())  # what a downloaded notebook fetches
    problems = freeze.check(list(catalog.EXAMPLES))
    if problems and freeze.gpu_available():
        # A GPU builder runs what is missing or stale first, then builds from the new artifacts.
        failed = freeze.refresh([p.example for p in problems], freeze.snippet_python(), log=log.info)
        problems = freeze.check(list(catalog.EXAMPLES)) if not failed else problems
        if not failed:
            notebooks.write_all()  # their outputs are the new runs
    waiting = freeze.awaiting_report(list(catalog.EXAMPLES))
    if waiting:
        log.info(waiting)
    if problems:
        message = freeze.stale_report(problems)
        if config.strict:
            raise PluginError(message)
        log.warning(message)
    stale = notebooks.check()
    if stale:
        message = notebooks.stale_report(stale)
        if config.strict:
            raise PluginError(message)
        log.warning(message)
    # The in-browser analyzer's page publishes the vendored Pyodide: a strict build (CI, the Pages
    # workflow) must have it; `mkdocs serve` goes on without it, the page showing why.
    missing = vendor_pyodide.missing()
    if missing:
        if config.strict:
            raise PluginError(missing)
        log.warning(missing)


def on_page_markdown(markdown, page, **kwargs):
    pages.SITE.page_url = page.url
    return markdown


def unshown_examples(used: set[str]) -> list[str]:
    """One message per frozen example of the catalog that no page reads: show it where it
    teaches something, or drop it from scripts/series/runs/catalog.py and traces/."""
    return [f"{e.key} is frozen but shown on no page: show it (example(...) and its links()) or "
            f"remove it from scripts/series/runs/catalog.py and traces/" for e in catalog.EXAMPLES
            if e.key not in used and not freeze.awaits_gpus(e)]


def on_post_build(config):
    from scripts.series.pages.claims import LEDGER

    LEDGER.site_problems += unshown_examples(set().union(*LEDGER.used.values()))  # reported by mkdocs_claims
    site_dir = Path(config.site_dir)
    for site_path, source in sorted(pages.SITE.assets.items()):
        target = site_dir / site_path
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)
    compile_while_downloading(site_dir)
    # mkdocs-jupyter copied each notebook beside its page (include_source); the copy a reader
    # downloads knows the site's address, to fetch the snippets from.
    for notebook in notebooks.NOTEBOOKS:
        copy = site_dir / notebook.download_url
        if copy.is_file():
            copy.write_bytes(notebooks.published_copy(copy.read_bytes(), config.site_url or ""))


# V8's explicit compile hint (Chrome 136+): a script that starts with it is compiled whole on a
# background thread while it streams in, instead of function by function on the main thread as
# each first runs. Material's bundle runs nearly all of itself at load, so none of that is wasted.
COMPILE_HINT = "//# allFunctionsCalledOnLoad\n"


def compile_while_downloading(site_dir: Path) -> None:
    """Material's bundle in the built site marked with COMPILE_HINT: on a phone its evaluation was
    the page's longest task (Part 3, Chromium, thread time, median of 10 loads each, alternating:
    the evaluation 27.9 -> 23.0 ms and the mount after it 14.1 -> 12.2 ms on this host). The
    source map's lines move down one with it."""
    for bundle in (site_dir / "assets" / "javascripts").glob("bundle.*.min.js"):
        text = bundle.read_text(encoding="utf-8")
        if text.startswith(COMPILE_HINT):
            continue  # `mkdocs serve` rebuilt without copying the theme's files again
        bundle.write_text(COMPILE_HINT + text, encoding="utf-8")
        source_map = bundle.with_name(bundle.name + ".map")
        if source_map.is_file():
            mapping = json.loads(source_map.read_text(encoding="utf-8"))
            mapping["mappings"] = ";" + mapping["mappings"]  # an empty first line: the hint's
            source_map.write_text(json.dumps(mapping), encoding="utf-8")


EXCERPT_SEPARATOR = "<!-- more -->"  # Material's default post_excerpt_separator


def on_page_content(html, page, **kwargs):
    if page.file.src_uri.endswith(".ipynb"):  # a companion notebook (mkdocs-jupyter rendered it)
        html = pages.notebook_actions(page.file.src_uri) + pages.notebook_html(html)
    # Material's blog renders a post's whole Markdown again for each view that lists it (the index,
    # every category), which would rerun every exec block; once the post itself is rendered, the
    # excerpt views need only what comes before the separator.
    if getattr(page, "excerpt", None) is not None and EXCERPT_SEPARATOR in page.markdown:
        page.markdown = page.markdown.split(EXCERPT_SEPARATOR, 1)[0] + EXCERPT_SEPARATOR
    html = pages.link_snippet_titles(html)  # a code block's snippets/x.py title links to the file
    html = glossary.on_page_content(html, page, kwargs["config"])  # first uses link to the glossary
    return offscreen.defer_offscreen(html)  # what is far from the screen is laid out when near


PALETTE_FORM = '<form class="md-header__option" data-md-component="palette">'
MATERIAL_PALETTE_SCRIPT = re.compile(r'<script>var palette=__md_get\("__palette"\);.*?</script>', re.S)
PALETTE_SCRIPT = "javascripts/palette.js"  # under docs/, inlined (exclude_docs keeps it off the site)
THEME_SCRIPT = "javascripts/theme.js"  # the same: loads Material's bundle after the first frame
MATERIAL_BUNDLE = re.compile(r'<script src="(?P<src>[^"]*assets/javascripts/bundle\.[0-9a-f]+\.min\.js)"></script>')
_inlined: dict[str, str] = {}  # those scripts' texts, read once per build (by its first page)


def own_palette_switch(output: str, script: str) -> str:
    """Material's light/dark switch replaced by ours (docs/javascripts/palette.js says why): its
    form no longer a Material component, its inline script ours. A Material whose header differs
    fails the build here rather than bringing back the cost unnoticed."""
    if PALETTE_FORM not in output:
        return output  # a page without the header's switch
    # Ours runs right after the header, not inside it as Material's did: the parser may paint
    # what it has at a script, and a header painted without its last buttons shifts when they come.
    output, found = MATERIAL_PALETTE_SCRIPT.subn("", output, count=1)
    if not found or "</header>" not in output:
        raise PluginError("Material's palette script is not where scripts/series/mkdocs_glue/hooks.py expects it")
    output = output.replace("</header>", "</header>\n<script>" + script + "</script>", 1)
    return output.replace(PALETTE_FORM, '<form class="md-header__option" data-md-palette>', 1)


def bundle_after_first_frame(output: str, script: str) -> str:
    """Material's bundle loaded by ours (docs/javascripts/theme.js says why) instead of by its
    <script> at the end of the page. A Material that loads it otherwise fails the build here."""
    if "data-md-component=" not in output:
        return output  # not a page of the theme (a redirect)
    found = MATERIAL_BUNDLE.search(output)
    if found is None:
        raise PluginError("Material's bundle is not loaded where scripts/series/mkdocs_glue/hooks.py expects it")
    loader = h("script", {"data-md-bundle": found.group("src")}, Markup(script))
    return output[:found.start()] + str(loader) + output[found.end():]


def _script(config, name: str) -> str:
    if name not in _inlined:
        _inlined[name] = (Path(config.docs_dir) / name).read_text(encoding="utf-8")
    return _inlined[name]


def on_post_page(output, page, config):
    # Material's search dialog has no accessible name (Lighthouse: aria-dialog-name).
    output = output.replace('data-md-component="search" role="dialog"',
                            'data-md-component="search" role="dialog" aria-label="Search"', 1)
    output = own_palette_switch(output, _script(config, PALETTE_SCRIPT))
    output = bundle_after_first_frame(output, _script(config, THEME_SCRIPT))
    # The repository link stays a plain link: as a "source" component Material would fetch the
    # repository's stars and forks from api.github.com, a request to another site on every page.
    return output.replace('class="md-source" data-md-component="source"', 'class="md-source"')
