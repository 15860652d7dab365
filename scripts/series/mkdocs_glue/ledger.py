"""MkDocs glue for scripts.series.pages.claims: which page the claims are made on, one message per claim that
does not hold (and per run a page uses without its buttons, per comparison two pages answer
differently, and per statement whose runs were made on different GPUs: scripts.series.pages.one_gpu),
the notes under each page (the numbers behind its comparisons), and site/claims.json.

Like the stale-artifact check, a strict build fails with one message (a PluginError listing every
problem, one line each), and `mkdocs serve` warns instead. A strict build cannot rely on warnings
alone: `mkdocs build --strict --quiet` filters them out before they are counted. The messages are
made here, after markdown-exec has run a page's blocks, never from inside a block: what a block
raises, markdown-exec reports as an execution error with the block's whole source.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
if str(ROOT) not in sys.path:  # markdown-exec blocks import `scripts` too
    sys.path.insert(0, str(ROOT))

from mkdocs.exceptions import PluginError  # noqa: E402

from scripts.series.pages.claims import LEDGER  # noqa: E402
from scripts.series.pages import one_gpu  # noqa: E402

log = logging.getLogger("mkdocs.hooks.claims")

LISTING = "claims.json"
MIXED_GPUS = "mixed_gpus"  # the listing's statements whose runs were made on different GPUs (pages/one_gpu.py)


def page_id(page, config) -> str:
    """How messages name a page: its source file from the project's root (docs/blog/posts/...)."""
    docs = Path(config.docs_dir)
    try:
        docs = docs.relative_to(Path(config.config_file_path).parent)
    except (TypeError, ValueError):
        docs = Path(docs.name)
    return (docs / page.file.src_uri).as_posix()


def on_pre_build(config):
    LEDGER.clear()


def on_page_markdown(markdown, page, config, **kwargs):
    LEDGER.start_page(page_id(page, config))
    return markdown


def on_page_content(html, page, config, **kwargs):
    here = page_id(page, config)
    if not config.strict:  # a strict build reports them all at the end, in one message
        for message in LEDGER.page_problems(here):
            log.warning(message)
    LEDGER.page = ""
    return html + LEDGER.notes_html(here)  # the notes the page's markers point to, at its foot


def on_post_build(config):
    LEDGER.site_problems += LEDGER.contradictions()  # one question, one answer, site-wide
    mixed = one_gpu.mixed_statements(LEDGER)  # no page or statement rests on runs of different GPUs
    usual = one_gpu.usual_gpu(set().union(*LEDGER.used.values())) if mixed else None
    pages_may_mix = os.environ.get(one_gpu.PAGES_MAY_MIX) == "1"  # rebuild-check's build
    LEDGER.site_problems += [m.message(usual) for m in mixed if not (m.whole_page and pages_may_mix)]
    listing = Path(config.site_dir) / LISTING
    written = {**LEDGER.to_json(), MIXED_GPUS: [m.to_json() for m in mixed]}
    listing.write_text(json.dumps(written, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    if config.strict:
        pages = sorted(set(LEDGER.used) | {c.page for c in LEDGER.claims})
        problems = [m for p in pages for m in LEDGER.page_problems(p)] + LEDGER.site_problems
        if problems:
            raise PluginError(f"{len(problems)} statement(s) of the pages do not hold against the runs:\n"
                              + "\n".join(f"  {m}" for m in problems))
    for message in LEDGER.site_problems:
        log.warning(message)
