"""Publishing: each post's authors, date and categories, the search index, the RSS feed, and the
Pages workflow's site_url."""

from __future__ import annotations

import json
import re
import struct
import subprocess
import xml.etree.ElementTree as ET
from email.utils import parsedate_to_datetime
from html import unescape
from pathlib import Path

import pytest
import yaml
from mkdocs.utils.meta import get_data

from scripts.series.pages import logo
from tests.conftest import ROOT
from tests.test_release import Site

POSTS = ROOT / "docs" / "blog" / "posts"
WORKFLOW = ROOT / ".github" / "workflows" / "pages.yml"


def front_matter(path: Path) -> dict:
    return get_data(path.read_text(encoding="utf-8"))[1]


@pytest.fixture(scope="module")
def posts() -> list[dict]:
    from tests.site_tools import excluded_docs

    found = [front_matter(p) for p in sorted(POSTS.glob("*.md"))
             if p.relative_to(POSTS.parent.parent).as_posix() not in excluded_docs()]  # built ones
    assert found
    return found


@pytest.fixture(scope="module")
def site(built_site) -> Site:
    return Site(built_site)


def post_page(site: Site, post: dict) -> Path:
    return site.root / "blog" / post["slug"] / "index.html"


def text(html: str) -> str:
    """The words of some HTML, without the headings' permalink (¶)."""
    html = re.sub(r'<a class="headerlink".*?</a>', "", html)
    return " ".join(unescape(re.sub(r"<[^>]+>", " ", html)).split())


def test_each_post_shows_its_authors_date_and_categories(site, posts):
    authors = yaml.safe_load((ROOT / "docs" / "blog" / ".authors.yml").read_text())["authors"]
    for post in posts:
        page = post_page(site, post)
        html = page.read_text(encoding="utf-8")
        for author in post["authors"]:
            name = authors[author]["name"]
            avatar = [a for t, a in site.elements(page).tags if t == "img" and a.get("alt") == name]
            assert avatar and site.target(page, avatar[0]["src"])[0].is_file(), f"{post['slug']}: no avatar of {name}"
        day = post["date"]
        assert re.search(rf'<time datetime="{day.isoformat()}[^"]*"[^>]*>{day:%B} {day.day}, {day.year}</time>', html)
        for category in post["categories"]:
            link = re.search(rf'<a href="([^"]*category/[^"]*)">{re.escape(category)}</a>', html)
            assert link, f"{post['slug']}: no link to category {category}"
            listing = site.target(page, link.group(1))[0].read_text(encoding="utf-8")
            assert f'/{post["slug"]}/"' in listing, f"category {category} does not list {post['slug']}"


def test_search_index_holds_each_post_and_its_executed_output(site, posts):
    docs = json.loads((site.root / "search" / "search_index.json").read_text())["docs"]
    for post in posts:
        location = f"blog/{post['slug']}/"
        entries = [d for d in docs if d["location"].split("#")[0] == location]
        assert len(entries) >= 3, f"{location}: not (fully) in the search index"
        h1 = re.search(r"<h1[^>]*>(.*?)</h1>", post_page(site, post).read_text(encoding="utf-8"), re.S).group(1)
        assert text(entries[0]["title"]) == text(h1)
        # what the exec blocks printed (profiler tables) is searchable too
        assert any("aten::" in d["text"] for d in entries), f"{location}: no profiler output indexed"


def test_rss_feed_lists_each_post_with_its_date_and_categories(site, posts):
    channel = ET.parse(site.root / "feed_rss_created.xml").getroot().find("channel")
    items = {item.findtext("link"): item for item in channel.iter("item")}
    for post in posts:
        item = items.get(f"{site.root_url}blog/{post['slug']}/")
        assert item is not None, f"{post['slug']} is not in the feed"
        assert parsedate_to_datetime(item.findtext("pubDate")).date() == post["date"]
        assert {c.text for c in item.iter("category")} == set(post["categories"])
        assert item.findtext("description") == post["description"]


def png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR", "not a PNG"
    return struct.unpack(">II", data[16:24])


def test_rss_feed_has_the_sites_png_logo_as_its_image(site):
    channel = ET.parse(site.root / "feed_rss_created.xml").getroot().find("channel")
    image = channel.find("image")
    url = image.findtext("url")
    assert url.startswith(site.root_url), f"the feed's image is not on the site: {url}"
    file, _ = site.target(site.root / "index.html", url)
    width, height = png_size(file.read_bytes())
    assert width <= 144 and height <= 400  # RSS 2.0's limits for a channel image
    assert image.findtext("title") == channel.findtext("title")
    assert image.findtext("link") == channel.findtext("link")


def test_every_page_announces_the_feed_and_shows_the_logo(site):
    pages = [p for p in site.root.rglob("index.html")]
    assert len(pages) >= 6
    for page in pages:
        tags = site.elements(page).tags
        feeds = [site.target(page, a["href"])[0] for t, a in tags
                 if t == "link" and a.get("rel") == "alternate" and a.get("type") == "application/rss+xml"]
        assert site.root / "feed_rss_created.xml" in feeds, f"{page}: no link to the feed"
        icons = [site.target(page, a["href"])[0] for t, a in tags if t == "link" and a.get("rel") == "icon"]
        assert icons == [site.root / "assets" / "logo.svg"], f"{page}: favicon {icons}"


def test_the_committed_logo_is_what_scripts_logo_draws(tmp_path):
    written = logo.write(tmp_path)
    for path in written:
        committed = ROOT / "docs" / "assets" / path.name
        assert committed.read_bytes() == path.read_bytes(), f"{committed.name}: run python -m scripts.series.pages.logo"
    assert png_size(written[1].read_bytes()) == (logo.PNG_PIXELS, logo.PNG_PIXELS)
    ET.fromstring(written[0].read_text())  # well-formed SVG


def test_pages_workflow_builds_strict_with_the_public_url(tmp_path):
    workflow = yaml.safe_load(WORKFLOW.read_text())
    assert workflow["permissions"] == {"contents": "read", "pages": "write", "id-token": "write"}
    build, deploy = workflow["jobs"]["build"]["steps"], workflow["jobs"]["deploy"]["steps"]
    assert any(step.get("run") == "make site" for step in build)
    assert any(step.get("uses", "").startswith("actions/upload-pages-artifact@")
               and step["with"]["path"] == "site" for step in build)
    assert any(step.get("uses", "").startswith("actions/deploy-pages@") for step in deploy)
    # The step that sets SITE_URL, run with a project site's and a user site's names.
    script = next(step["run"] for step in build if "SITE_URL" in step.get("run", ""))
    for owner, repo, url in [("Some-Org", "profiling", "https://some-org.github.io/profiling/"),
                             ("me", "me.github.io", "https://me.github.io/")]:
        env_file = tmp_path / "env"
        env_file.write_text("")
        subprocess.run(["bash", "-c", script], check=True, capture_output=True,
                       env={"OWNER": owner, "REPO": repo, "GITHUB_ENV": str(env_file), "PATH": "/usr/bin:/bin"})
        assert env_file.read_text().strip() == f"SITE_URL={url}"
