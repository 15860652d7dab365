"""Reproducible builds: a build is dated by its newest content, not by the clock.

MkDocs stamps every page with the build date (the sitemap's <lastmod>, the time inside
sitemap.xml.gz), and the RSS plugin stamps the feed; all of them honour SOURCE_DATE_EPOCH
(https://reproducible-builds.org/specs/source-date-epoch/). Before anything reads it, this hook sets
it to the newest of the pages' `date` front matter and the frozen runs' dates, so two builds of one
commit are byte-identical on any day, and the dates move only when the content does.

Listed under `hooks:` in mkdocs.yml; tests/test_release.py checks the result.
"""

from __future__ import annotations

import logging
import os
import sys
from datetime import date, datetime, time, timezone
from pathlib import Path

from mkdocs.plugins import event_priority
from mkdocs.utils.meta import get_data

ROOT = Path(__file__).resolve().parents[3]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from scripts.series.runs import catalog  # noqa: E402
from scripts.series.runs.meta import MetaError, load_meta  # noqa: E402

log = logging.getLogger("mkdocs.hooks.reproducible")


def _utc(value) -> datetime | None:
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=timezone.utc)
    if isinstance(value, date):
        return datetime.combine(value, time(), timezone.utc)
    if isinstance(value, str):
        try:
            return _utc(datetime.fromisoformat(value.replace("Z", "+00:00")))
        except ValueError:
            return None
    return None


def content_date(docs_dir: Path, traces_dir: Path, problems: list[MetaError] | None = None) -> datetime | None:
    """The newest date the content carries: a page's `date` (or its `created`/`updated` parts)
    or a frozen run's `date` in traces/**/*.meta.json. A metadata file that cannot be read raises
    its MetaError (one line: the file, the command to run) or, given `problems`, is added there and
    left out."""
    dates = []
    for page in docs_dir.rglob("*.md"):
        _, meta = get_data(page.read_text(encoding="utf-8"))
        value = meta.get("date")
        dates += [_utc(v) for v in (value.values() if isinstance(value, dict) else [value])]
    for meta_path in sorted(traces_dir.rglob("*.meta.json")):
        try:
            dates.append(load_meta(meta_path).when)
        except MetaError as err:
            if problems is None:
                raise
            problems.append(err)
    dates = [d for d in dates if d is not None]
    return max(dates, default=None)


@event_priority(100)  # before any plugin reads the build date
def on_config(config):
    problems: list[MetaError] = []
    newest = content_date(Path(config.docs_dir), catalog.TRACES, problems)
    # Never fatal here: the freeze check (scripts/series/mkdocs_glue/hooks.py, before the build) names the
    # examples' unusable files and what to run, and refreshes them first on a GPU builder. The
    # date then leaves them out; a file no example owns is named here.
    examples = {example.meta_path.resolve() for example in catalog.EXAMPLES}
    for problem in problems:
        if problem.path.resolve() not in examples:
            log.warning(str(problem))
    if newest is not None:
        os.environ["SOURCE_DATE_EPOCH"] = str(int(newest.timestamp()))
    return config
