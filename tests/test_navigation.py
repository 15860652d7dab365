"""The series reads in one order everywhere: the home page lists every post in it, each post's
previous/next links follow it, and a code block titled with a snippet links to that file."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
POSTS = ROOT / "docs" / "blog" / "posts"


def front_matter(path: Path) -> dict[str, str]:
    head = path.read_text(encoding="utf-8").split("---", 2)[1]
    return dict(line.split(": ", 1) for line in head.strip().splitlines() if ": " in line and not line.startswith(" "))


def series_order() -> list[Path]:
    """The posts in the order they are meant to be read: by date (Material orders its footer so)."""
    from tests.site_tools import excluded_docs

    built = [p for p in POSTS.glob("*.md") if p.relative_to(POSTS.parent.parent).as_posix() not in excluded_docs()]
    posts = sorted(built, key=lambda p: front_matter(p)["date"])
    dates = [front_matter(p)["date"] for p in posts]
    assert len(set(dates)) == len(dates), f"two posts share a date, so their order is not defined: {dates}"
    return posts


def test_the_home_page_lists_every_post_in_series_order():
    home = (ROOT / "docs" / "index.md").read_text(encoding="utf-8")
    section = home.split("## The series", 1)[1].split("\n## ", 1)[0]
    linked = re.findall(r"\]\(blog/posts/([^)#]+\.md)\)", section)
    assert linked == [p.name for p in series_order()]


def _footer(html: str) -> dict[str, str]:
    found = {}
    for kind in ("prev", "next"):
        match = re.search(rf'href="([^"]+)" class="md-footer__link md-footer__link--{kind}"', html)
        if match:
            found[kind] = match.group(1)
    return found


def test_previous_and_next_follow_the_series(built_site):
    slugs = [front_matter(p)["slug"] for p in series_order()]
    for i, slug in enumerate(slugs):
        footer = _footer((built_site / "blog" / slug / "index.html").read_text(encoding="utf-8"))
        if i:
            assert footer.get("prev") == f"../{slugs[i - 1]}/", (slug, footer)
        if i + 1 < len(slugs):
            assert footer.get("next") == f"../{slugs[i + 1]}/", (slug, footer)


def test_every_snippet_title_links_to_its_file_on_the_site(built_site):
    titles = 0
    for page in built_site.rglob("index.html"):
        html = page.read_text(encoding="utf-8")
        for inner in re.findall(r'<span class="filename">(.*?)</span>', html):
            if "snippets/" not in inner:
                continue
            titles += 1
            link = re.fullmatch(r'<a href="([^"]+)">(snippets/[\w.]+\.py)</a>', inner)
            assert link, f"{page.relative_to(built_site)}: code title {inner!r} does not link to its file"
            target = (page.parent / link.group(1)).resolve()
            assert target.is_file() and target.name == link.group(2).split("/")[1], (page, link.group(1))
    assert titles >= 3  # the posts show their snippets' code under its file name
