"""Release gates on the built site: every link resolves, posts stay light, builds are reproducible.

(That traces/ publishes no builder's path or host name is tests/test_freeze.py's job.)
"""

from __future__ import annotations

import filecmp
import json
import re
from functools import cache
from pathlib import Path
from urllib.parse import unquote, urljoin, urlsplit

import pytest

from tests.site_tools import posts
from tests.conftest import clean_copy, mkdocs_build
from tests.test_site import parse

# Which attribute of which tag is a link; a Perfetto button names the trace it opens.
LINK_ATTRIBUTES = {"a": "href", "link": "href", "img": "src", "script": "src", "source": "src",
                   "iframe": "src", "button": "data-trace"}
POST_WEIGHT_LIMIT = 1_000_000  # bytes, before any opt-in trace download


def html_files(site: Path) -> list[Path]:
    return sorted(site.rglob("*.html"))


def site_root_url(site: Path) -> str:
    """The site_url it was built with: the first URL of the sitemap (the home page)."""
    return re.search(r"<loc>([^<]+)</loc>", (site / "sitemap.xml").read_text()).group(1)


class Site:
    """The built site as files, read once: which links each page has and which ids it defines."""

    def __init__(self, root: Path):
        self.root = root
        self.root_url = site_root_url(root)

    @cache
    def elements(self, path: Path):
        return parse(path.read_text(encoding="utf-8"))

    def ids(self, path: Path) -> set[str]:
        return {a[key] for _, a in self.elements(path).tags for key in ("id", "name") if a.get(key)}

    def links(self, page: Path) -> list[str]:
        return [attrs[LINK_ATTRIBUTES[tag]] for tag, attrs in self.elements(page).tags
                if tag in LINK_ATTRIBUTES and attrs.get(LINK_ATTRIBUTES[tag])]

    def target(self, page: Path, link: str) -> tuple[Path, str] | None:
        """The file and #fragment a link of `page` points to, or None if it leaves the site."""
        if link.startswith(self.root_url):
            link = "/" + link.removeprefix(self.root_url)
        page_url = "http://site/" + page.relative_to(self.root).as_posix()
        url = urlsplit(urljoin(page_url, link))
        if url.netloc != "site":
            return None
        path = unquote(url.path).lstrip("/")
        file = self.root / path
        if path == "" or path.endswith("/") or file.is_dir():
            file = file / "index.html"
        return file, unquote(url.fragment)


@pytest.fixture(scope="module")
def site(built_site) -> Site:
    return Site(built_site)


# --- links ---------------------------------------------------------------------------------------


def test_every_link_of_the_site_resolves(site):
    broken, external, checked = [], set(), 0
    pages = html_files(site.root)
    assert len(pages) >= 6
    for page in pages:
        where = page.relative_to(site.root).as_posix()
        for link in site.links(page):
            target = site.target(page, link)
            if target is None:
                if not link.startswith(("mailto:", "javascript:")):
                    external.add(link)
                continue
            file, fragment = target
            checked += 1
            if not file.is_file():
                broken.append(f"{where}: {link} -> no file {file.relative_to(site.root)}")
            elif fragment and file.suffix == ".html" and fragment not in site.ids(file):
                broken.append(f"{where}: {link} -> no id '{fragment}' in {file.relative_to(site.root)}")
    print(f"\n{checked} internal links checked; external links, not fetched:")
    print("\n".join(f"  {url}" for url in sorted(external)))
    assert checked > 100
    assert not broken, "\n".join(broken)


def test_every_sitemap_url_is_a_page(site):
    urls = re.findall(r"<loc>([^<]+)</loc>", (site.root / "sitemap.xml").read_text())
    assert len(urls) >= 5
    missing = [url for url in urls if not site.target(site.root / "index.html", url)[0].is_file()]
    assert not missing


def test_link_check_finds_a_broken_anchor_and_file(site, tmp_path):
    # The checker itself: a page with one good and two bad links.
    (tmp_path / "a").mkdir()
    (tmp_path / "sitemap.xml").write_text("<loc>http://x/</loc>")
    (tmp_path / "a" / "index.html").write_text('<h2 id="here">x</h2>')
    fake = Site(tmp_path)
    page = tmp_path / "index.html"
    assert fake.target(page, "a/#here") == (tmp_path / "a" / "index.html", "here")
    assert "nowhere" not in fake.ids(tmp_path / "a" / "index.html")
    assert not fake.target(page, "b.svg")[0].is_file()
    assert fake.target(page, "https://ui.perfetto.dev/") is None
    assert fake.target(page, "http://x/a/")[0] == tmp_path / "a" / "index.html"


# --- page weight ---------------------------------------------------------------------------------


def loaded_on_open(site: Site, page: Path) -> set[Path]:
    """What a browser fetches for a page without a click: stylesheets, icons, scripts, images (lazy
    ones too: a reader scrolls), and the search worker and index Material starts right away. Not
    links: the trace downloads and Perfetto hand-offs are opt-in."""
    files = set()
    for tag, attrs in site.elements(page).tags:
        if tag == "link" and set(attrs.get("rel", "").split()) & {"stylesheet", "icon"}:
            files.add(attrs["href"])
        elif tag in ("script", "img") and attrs.get("src"):
            files.add(attrs["src"])
    html = page.read_text(encoding="utf-8")
    config = json.loads(re.search(r'<script id="__config"[^>]*>(.*?)</script>', html, re.S).group(1))
    files.add(config["search"])
    files.add(config["base"] + "/search/search_index.json")
    resolved = {site.target(page, link) for link in files}
    assert None not in resolved, "a post loads something from another site"
    return {file for file, _ in resolved}


def test_each_post_weighs_under_a_megabyte(site):
    heavy = []
    found = [site.root / path / "index.html" for path in posts(site.root)]
    assert found, "no blog post found (Material's md-content--post)"
    for post in found:
        parts = {post} | loaded_on_open(site, post)
        sizes = {f.relative_to(site.root).as_posix(): f.stat().st_size for f in parts}
        total = sum(sizes.values())
        print(f"\n{post.relative_to(site.root)}: {total / 1e3:,.0f} kB on open")
        for name, size in sorted(sizes.items(), key=lambda item: -item[1]):
            print(f"  {size / 1e3:8,.1f} kB  {name}")
        if total >= POST_WEIGHT_LIMIT:
            heavy.append(f"{post.relative_to(site.root)}: {total:,} bytes")
    assert not heavy, f"over {POST_WEIGHT_LIMIT:,} bytes: {heavy}"


# --- reproducible builds -------------------------------------------------------------------------

# Files allowed to differ between two builds of one commit, with the reason. Keep it empty: remove
# what differs at its source (scripts/series/mkdocs_glue/reproducible.py dates the build by its content).
MAY_DIFFER: dict[str, str] = {}


def differing_files(a: Path, b: Path) -> list[str]:
    out = []
    for left in sorted(p for p in a.rglob("*") if p.is_file()):
        rel = left.relative_to(a).as_posix()
        right = b / rel
        if not right.is_file() or not filecmp.cmp(left, right, shallow=False):
            out.append(rel)
    out += [p.relative_to(b).as_posix() for p in b.rglob("*") if p.is_file() and not (a / p.relative_to(b)).exists()]
    return out


def test_two_builds_of_one_commit_are_identical(built_site, tmp_path, monkeypatch):
    # Another checkout path, another hash seed, and a build environment that claims another day:
    # none of it may show in the output.
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "0")
    project = clean_copy(tmp_path / "again")
    done = mkdocs_build(project)
    assert done.returncode == 0, done.stderr[-3000:]
    differ = [rel for rel in differing_files(built_site, project / "site") if rel not in MAY_DIFFER]
    assert not differ, f"files that differ between two builds: {differ}"


def test_no_page_names_the_directory_it_was_built_in(built_site):
    checkout = str(built_site.parent)
    leaks = [p.relative_to(built_site).as_posix() for p in built_site.rglob("*")
             if p.is_file() and p.suffix in (".html", ".json", ".xml", ".svg", ".js", ".css", ".txt")
             and checkout in p.read_text(encoding="utf-8", errors="replace")]
    assert not leaks, f"these files publish the build machine's path {checkout}: {leaks}"


def test_sitemap_dates_come_from_the_content(built_site):
    from scripts.series.mkdocs_glue.reproducible import content_date
    from tests.conftest import ROOT

    newest = content_date(ROOT / "docs", ROOT / "traces")
    lastmods = set(re.findall(r"<lastmod>([^<]+)</lastmod>", (built_site / "sitemap.xml").read_text()))
    assert lastmods == {newest.date().isoformat()}
