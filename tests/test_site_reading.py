"""What the built site gives a reader beyond the posts' own content: glossary links that land on
their entry at each term's first use, headings with their own anchors."""

from __future__ import annotations

import re
from html import unescape
from html.parser import HTMLParser
from pathlib import Path

import pytest

from scripts.series.pages import glossary
from scripts.tracefacts.pictures import markup
from tests.conftest import ROOT
from tests.site_tools import posts, site_pages

GLOSSARY_PAGE = "guide/glossary/"


@pytest.fixture(scope="module")
def entries() -> glossary.Glossary:
    return glossary.load(ROOT / "docs")


class Article(HTMLParser):
    """The page's article, read in order: each text run, whether a glossary link may sit there
    (outside the elements scripts/series/pages/glossary.py skips), the glossary link it is in, and the text of
    each <code> element."""

    def __init__(self):
        super().__init__()
        self.depth = 0  # inside <article> when > 0
        self.stack: list[tuple[str, bool]] = []
        self.runs: list[tuple[str, bool, str | None]] = []  # (text, linkable, glossary id or None)
        self.codes: list[tuple[int, str, bool, str | None]] = []  # (run index, text, linkable, glossary id)
        self.link: str | None = None
        self.code: list[str] | None = None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "article":
            self.depth += 1
        if not self.depth or tag in markup.VOID:
            return
        classes = set((attrs.get("class") or "").split())
        if "glossary-term" in classes:
            self.link = attrs["href"].rsplit("#", 1)[1]
            self.stack.append((tag, self.stack[-1][1] if self.stack else False))
            return
        parent_skipped = bool(self.stack) and self.stack[-1][1]
        if tag == "code":
            self.code = []
            self.codes.append((len(self.runs), "", not parent_skipped, self.link))
        self.stack.append((tag, parent_skipped or tag in glossary.SKIP_TAGS or bool(classes & glossary.SKIP_CLASSES)))

    def handle_endtag(self, tag):
        if not self.depth:
            return
        if tag == "article":
            self.depth -= 1
        for i in range(len(self.stack) - 1, -1, -1):
            if self.stack[i][0] == tag:
                del self.stack[i:]
                break
        if tag == "code" and self.code is not None:
            index, _, linkable, link = self.codes[-1]
            self.codes[-1] = (index, "".join(self.code), linkable, link)
            self.code = None
        if tag == "a":
            self.link = None

    def handle_data(self, data):
        if not self.depth:
            return
        if self.code is not None:
            self.code.append(data)
        skipped = bool(self.stack) and self.stack[-1][1]
        self.runs.append((data, not skipped or self.link is not None, self.link))


def read(site: Path, page: str) -> Article:
    article = Article()
    article.feed((site / page / "index.html").read_text(encoding="utf-8"))
    return article


def uses(article: Article, entries: glossary.Glossary) -> dict[str, int]:
    """Each entry used where it may be linked: the index of its first run. Terms are read whole
    and the longest first, as the linker reads them: "kernel names" is a use of that entry, not
    of "kernel"'s."""
    first: dict[str, int] = {}
    found = [{entries.by_term[m.group(0).casefold()].id for m in entries.pattern.finditer(text)} if linkable else set()
             for text, linkable, _ in article.runs]
    for entry in entries.entries:
        whole = re.compile("(" + "|".join(re.escape(t) for t in entry.terms) + r")(#\d+|\*)?")
        runs = [i for i, ids in enumerate(found) if entry.id in ids]
        codes = [i for i, text, linkable, _ in article.codes if linkable and whole.fullmatch(text)]
        if runs or codes:
            first[entry.id] = min(runs + codes)
    return first


def test_every_glossary_link_lands_on_an_entry(built_site, entries):
    ids = {entry.id for entry in entries.entries}
    page_ids = set(re.findall(r'id="([^"]+)"', (built_site / GLOSSARY_PAGE / "index.html").read_text()))
    assert ids <= page_ids  # each entry is an anchor of the glossary page
    found = 0
    for page in site_pages(built_site):
        html = (built_site / page / "index.html").read_text(encoding="utf-8")
        for href in re.findall(r'<a class="glossary-term" href="([^"]+)"', html):
            target, _, fragment = href.partition("#")
            resolved = (Path("/") / page / target).resolve().as_posix().strip("/") + "/"
            assert resolved == GLOSSARY_PAGE, f"{page}: {href}"
            assert fragment in ids, f"{page}: {href} names no entry"
            found += 1
    assert found >= 5 * len(posts(built_site))


def test_each_page_links_each_term_it_uses_at_its_first_use_only(built_site, entries):
    # Not the blog's listings: their excerpts are the posts' (Material renders them in its
    # template, past the hooks), and a list of posts is no place for definitions. Not the notebooks.
    pages = [p for p in site_pages(built_site) if p not in (GLOSSARY_PAGE, "blog/")
             and not p.startswith(("notebooks/", "blog/category/", "blog/page/", "blog/archive/"))]
    assert set(posts(built_site)) <= set(pages)
    for page in pages:
        article = read(built_site, page)
        linked = [link for _, _, link in article.runs if link]
        # a link's text runs all carry its id: count links, not runs
        link_starts = [i for i, (_, _, link) in enumerate(article.runs)
                       if link and (i == 0 or article.runs[i - 1][2] != link)]
        ids = [article.runs[i][2] for i in link_starts]
        assert len(ids) == len(set(ids)), f"{page}: an entry linked twice: {ids}"
        first = uses(article, entries)
        assert set(ids) == set(first), f"{page}: used {sorted(first)}, linked {sorted(set(linked))}"
        for i in link_starts:
            assert first[article.runs[i][2]] == i, f"{page}: {article.runs[i][2]} is not linked at its first use"
        if page in posts(built_site):
            assert len(ids) >= 5, f"{page}: only {ids}"
    # the glossary page links none of its own words
    assert not [link for _, _, link in read(built_site, GLOSSARY_PAGE).runs if link]


def test_heading_anchors_are_the_headings_own(built_site):
    """No id from markdown-exec's own numbering (`exec-42--...`, which changes with every block
    added above it), and no heading inside a paragraph (what printing one from a block gives)."""
    for page in site_pages(built_site):
        html = (built_site / page / "index.html").read_text(encoding="utf-8")
        assert not re.findall(r'id="exec-\d+--[^"]*"', html), page
        assert not re.findall(r"<p>\s*<h[1-6]", html), page


def test_glossary_page_prints_the_analyzers_constants(built_site):
    from scripts.tracefacts.facts import analysis

    html = unescape((built_site / GLOSSARY_PAGE / "index.html").read_text())
    text = re.sub(r"<!--.*?-->", "", html, flags=re.S)
    assert "{{" not in text
    for name, unit in (("OVERHEAD_BOUND_MIN_HOST_WAIT_PCT", "%"), ("STALLED_MIN_STALLED_PCT", "%"),
                       ("GPU_BOUND_MIN_BUSY_PCT", "%"), ("KERNEL_WAIT_US", " us")):
        assert f"<code>{name}</code> ({getattr(analysis, name):g}{unit})" in text, name


# --- the cheatsheet and "Perfetto in five minutes" -------------------------------------------------


def test_every_post_links_the_cheatsheet_and_perfetto_in_five_minutes(built_site):
    for post in posts(built_site):
        html = (built_site / post / "index.html").read_text(encoding="utf-8")
        article = html[html.index("<article"):html.index("</article>")]
        targets = {(Path("/") / post / href).resolve().as_posix().strip("/") + "/"
                   for href in re.findall(r'<a href="([^"#]+)"', article)}
        assert "guide/cheatsheet/" in targets, post
        assert "guide/perfetto/" in targets, post


def test_perfetto_page_queries_its_own_trace_and_shows_what_the_query_returns(built_site):
    """The SQL's answer on the page is what the query computes over the trace's raw events: a
    `slice` row per complete event, `category` its `cat` (read here from the JSON itself, not
    through scripts.tracefacts.model.trace)."""
    import gzip
    import json
    from collections import defaultdict

    html = (built_site / "guide" / "perfetto" / "index.html").read_text(encoding="utf-8")
    download = re.search(r'<a class="md-button" href="([^"]+\.json\.gz)" download', html).group(1)
    trace = (built_site / "guide" / "perfetto" / download).resolve()
    assert trace.is_file()
    blocks = [" ".join(unescape(re.sub(r"<[^>]+>", "", b)).split())
              for b in re.findall(r'<div class="highlight"><pre>(.*?)</pre>', html, re.S)]
    sql = next(b for b in blocks if b.startswith("SELECT"))
    assert "FROM slice WHERE category = 'kernel' GROUP BY name ORDER BY total_us DESC LIMIT 5" in sql
    events = json.loads(gzip.decompress(trace.read_bytes()))["traceEvents"]
    totals = defaultdict(lambda: [0, 0.0])
    for event in events:
        if event.get("ph") == "X" and event.get("cat") == "kernel":
            totals[event["name"]][0] += 1
            totals[event["name"]][1] += float(event["dur"])
    expected = sorted(totals.items(), key=lambda item: -item[1][1])[:5]
    table = html[html.index("<th>name</th>"):]
    table = table[:table.index("</table>")]
    rows = re.findall(r'<tr>\s*<td><button [^>]*class="ktip"[^>]*><code title="([^"]*)">[^<]*</code></button></td>'
                      r'\s*<td[^>]*>(\d+)</td>\s*<td[^>]*>([\d.]+)</td>', table)
    assert len(rows) == len(expected) >= 3
    for (name, calls, total), (want_name, (want_calls, want_total)) in zip(rows, expected):
        assert unescape(name) == want_name
        assert int(calls) == want_calls
        assert float(total) == pytest.approx(want_total, abs=1e-3)


# --- the trace buttons -----------------------------------------------------------------------------

ROW = re.compile(r'<div class="trace-actions">(?:<span class="trace-run"[^>]*>(.*?)</span>)?.*?</div>', re.S)


def test_every_row_of_trace_buttons_names_its_run_once(built_site):
    """Where several runs' buttons stand together a reader tells them apart by the name each row
    begins with (scripts/series/pages/helpers.py Run.links); rows side by side name different runs,
    and no row repeats a name the text right above it already gives."""
    checked = 0
    for page in site_pages(built_site):
        html = (built_site / page / "index.html").read_text(encoding="utf-8")
        if "<article" not in html:
            continue
        article = html[html.index("<article"):html.index("</article>")]
        together: list[str] = []
        end = 0
        for row in ROW.finditer(article):
            if "perfetto-open" not in row.group(0):
                continue  # another row of buttons (Part 5's allocator snapshot): not a run's trace
            assert row.group(1) is not None, f"{page}: a row of trace buttons without its run's name"
            name = " ".join(unescape(re.sub(r"<[^>]+>", "", row.group(1))).split())
            before = " ".join(unescape(re.sub(r"<[^>]+>", " ", article[end:row.start()])).split())
            assert name and not before.endswith(name), f"{page}: {name!r} named twice"
            together = [*together, name] if end and not before else [name]
            assert len(set(together)) == len(together), f"{page}: rows side by side both named {name!r}"
            end = row.end()
            checked += 1
    assert checked >= 40


# --- the blog's order, the home page's dates -------------------------------------------------------


def test_blog_index_lists_the_posts_newest_first_each_part_after_the_one_before(built_site):
    from mkdocs.utils.meta import get_data

    from tests.site_tools import excluded_docs

    meta = {}
    for path in (ROOT / "docs" / "blog" / "posts").glob("*.md"):
        if path.relative_to(ROOT / "docs").as_posix() in excluded_docs():
            continue  # not built (yet)
        front = get_data(path.read_text(encoding="utf-8"))[1]
        meta[front["slug"]] = (front["date"], re.match(r"part-(\d+)-", path.name))
    index = (built_site / "blog" / "index.html").read_text(encoding="utf-8")
    assert "newest first" in index
    listed = []
    for slug in re.findall(r'<h2 id="[^"]*"><a class="toclink" href="([a-z0-9-]+)/"', index):
        if slug in meta and slug not in listed:
            listed.append(slug)
    assert sorted(listed) == sorted(meta), f"the index lists {listed}"
    dates = [meta[slug][0] for slug in listed]
    assert len(set(dates)) == len(dates), "two posts share a date: their order would be arbitrary"
    assert dates == sorted(dates, reverse=True)
    parts = sorted((int(m.group(1)), date) for date, m in meta.values() if m)
    assert [date for _, date in parts] == sorted(date for _, date in parts), "the parts are not dated in order"


def test_home_page_names_one_date_when_all_runs_share_it(built_site):
    from scripts.series.runs import catalog, freeze

    days = sorted({freeze.read_meta(item).day for item in catalog.EXAMPLES if item.meta_path.exists()})
    home = unescape(re.sub(r"<[^>]+>", "", (built_site / "index.html").read_text(encoding="utf-8")))
    if len(days) == 1:
        assert f"Runs made on {days[0]}." in home and "Runs made between" not in home
    else:
        assert f"Runs made between {days[0]} and {days[-1]}." in home


def test_facts_boxes_shorten_the_top_kernels_name_and_keep_it_whole_on_hover(built_site):
    from scripts.tracefacts.facts.analysis import short_name

    shortened = 0
    for page in site_pages(built_site):
        html = (built_site / page / "index.html").read_text(encoding="utf-8")
        for box in re.findall(r'<div class="admonition abstract facts".*?</details>', html, re.S):
            # the name in the button that says what it is (scripts/tracefacts/pictures/kernel_tips.py)
            top = re.search(r"; top (?:<a[^>]*>)?kernel(?:</a>)? <button [^>]*class=\"ktip\"[^>]*>"
                            r"<code( title=\"([^\"]*)\")?>([^<]*)</code></button>", box)
            if not top:
                continue
            full = unescape(top.group(2)) if top.group(1) else unescape(top.group(3))
            assert unescape(top.group(3)) == short_name(full), page
            shortened += bool(top.group(1))
    assert shortened >= 3  # Part 3's fused kernels, at least
