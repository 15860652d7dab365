"""MkDocs glue for scripts.claims: which page the claims are made on, one warning per claim that
does not hold (and per run a page uses without its buttons), and site/claims.json.

A warning through the mkdocs logger fails `mkdocs build --strict` ("Aborted with N warnings")
and only warns under `mkdocs serve`, as the stale-artifact check does. The warnings are logged
here, after markdown-exec has run the page's blocks, not from inside a block: what a block logs
or raises, markdown-exec reports as an execution error with the block's whole source.
"""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # markdown-exec blocks import `scripts` too
    sys.path.insert(0, str(ROOT))

from scripts.claims import LEDGER  # noqa: E402

log = logging.getLogger("mkdocs.hooks.claims")

LISTING = "claims.json"


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
    LEDGER.page = page_id(page, config)
    return markdown


def on_page_content(html, page, config, **kwargs):
    for message in LEDGER.page_problems(page_id(page, config)):
        log.warning(message)
    LEDGER.page = ""
    return html


def on_post_build(config):
    for message in LEDGER.site_problems:
        log.warning(message)
    listing = Path(config.site_dir) / LISTING
    listing.write_text(json.dumps(LEDGER.to_json(), indent=1, sort_keys=True) + "\n", encoding="utf-8")
