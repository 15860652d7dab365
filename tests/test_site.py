"""The strict build from the frozen artifacts, and what the Part 1 page shows a reader."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urljoin

import pytest

from scripts.series.runs import catalog, freeze
from scripts.series.pages import claims
from tests.conftest import ROOT, clean_copy, mkdocs_build

PART1_PAGE = "blog/matmul-add/index.html"


class Elements(HTMLParser):
    """Collects the tags a test asks about, with their attributes."""

    def __init__(self):
        super().__init__()
        self.tags: list[tuple[str, dict]] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))

    def find(self, tag: str, **attrs) -> list[dict]:
        return [a for t, a in self.tags if t == tag and all(
            value in (a.get(key) or "").split() for key, value in attrs.items())]


def parse(html: str) -> Elements:
    elements = Elements()
    elements.feed(html)
    return elements


def resolve(site: Path, page: str, href: str) -> Path:
    """The file a relative link on `page` points to in the built site."""
    url = urljoin("http://site/" + page, href)
    path = unquote(url.removeprefix("http://site/"))
    return site / (path + "index.html" if path.endswith("/") else path)


@pytest.fixture(scope="module")
def part1(built_site) -> tuple[str, Elements]:
    html = (built_site / PART1_PAGE).read_text()
    return html, parse(html)


def test_part1_page_has_no_execution_errors(part1):
    html, _ = part1
    assert "Traceback" not in html
    assert "exited with errors" not in html


def test_part1_tables_are_real_html_tables(part1):
    html, elements = part1
    tables = re.findall(r'<div class="prof-table".*?</table></div>', html, flags=re.S)
    # the profiler's own tables (the before/after comparison is a table of deltas, not of ops)
    tables = [t for t in tables if "Self CPU time total" in t]
    assert len(tables) >= 4
    assert any(">aten::mm<" in t for t in tables)
    assert any(">aten::addmm<" in t for t in tables)
    assert any(">aten::bmm<" in t for t in tables)
    for table in tables:
        # the sort column is marked, and both totals sit in the foot
        assert 'aria-sort="descending"' in table
        assert "Self CPU time total" in table and "Self CUDA time total" in table


def test_template_kernel_names_are_escaped(part1):
    html, _ = part1
    assert "vectorized_elementwise_kernel&lt;8" in html
    assert "vectorized_elementwise_kernel<8" not in html


def test_timelines_are_zoomable_images_that_exist(built_site, part1):
    _, elements = part1
    images = [a for a in elements.find("img") if a.get("src", "").endswith(".svg") and "timelines/" in a["src"]]
    assert len(images) >= 6
    for image in images:
        svg = resolve(built_site, PART1_PAGE, image["src"])
        assert svg.is_file(), image["src"]
        assert svg.read_text().lstrip().startswith(("<svg", "<?xml"))
        assert image.get("alt")
    # each picture sits in a link to its SVG file: the viewer opens it (the browser, without JavaScript)
    assert len([a for a in elements.find("a", **{"class": "svg-zoom"}) if a.get("href", "").endswith(".svg")]) >= 6


def test_download_links_serve_the_frozen_trace(built_site, part1):
    _, elements = part1
    # Trace downloads (the companion notebook's download is tests/test_notebooks.py's)
    downloads = [a for a in elements.find("a") if "download" in a and a["href"].endswith(".json.gz")]
    assert len(downloads) >= 6
    for link in downloads:
        served = resolve(built_site, PART1_PAGE, link["href"])
        frozen = ROOT / "traces" / served.relative_to(built_site / "traces")
        assert served.read_bytes() == frozen.read_bytes()


def test_perfetto_buttons_name_served_traces(built_site, part1):
    _, elements = part1
    buttons = elements.find("button", **{"class": "perfetto-open"})
    assert len(buttons) >= 6
    for button in buttons:
        assert resolve(built_site, PART1_PAGE, button["data-trace"]).is_file()
        assert button["data-file"].endswith(".json.gz")
    scripts = [a.get("src", "") for a in elements.find("script")]
    assert any(src.endswith("javascripts/perfetto.js") for src in scripts)


def test_no_share_link_without_https_site_url(part1):
    # the default site_url is http://127.0.0.1:8000/: Perfetto can only fetch from https
    html, _ = part1
    assert "#!/?url=" not in html


def test_caption_names_the_run(part1):
    html, _ = part1
    meta = catalog.get("01_matmul_add/64_bf16_cold_eager")
    from scripts.series.runs.freeze import read_meta

    env = read_meta(meta).environment
    assert env.gpu in html and env.torch in html


def test_landing_and_rebuild_pages(built_site):
    home = (built_site / "index.html").read_text()
    assert "The numbers come from an" in home
    rebuild = (built_site / "guide" / "rebuild" / "index.html").read_text()
    assert "make refresh" in rebuild and "fresh" in rebuild


def test_blog_index_lists_part1_with_excerpt_only(built_site):
    index = (built_site / "blog" / "index.html").read_text()
    assert "matmul-add/" in index
    # excerpts stop at the separator: no profiler table on the index
    assert "prof-table" not in index


def test_https_site_url_adds_shareable_perfetto_links(tmp_path, monkeypatch):
    project = clean_copy(tmp_path / "clone")
    monkeypatch.setenv("SITE_URL", "https://example.org/profiling/")
    done = mkdocs_build(project)
    assert done.returncode == 0, done.stderr[-3000:]
    html = (project / "site" / PART1_PAGE).read_text()
    shares = re.findall(r'href="https://ui\.perfetto\.dev/#!/\?url=([^"]+)"', html)
    assert shares
    for url in shares:
        assert url.startswith("https://example.org/profiling/traces/01_matmul_add/")
        assert (project / "site" / url.removeprefix("https://example.org/profiling/")).is_file()
    # The notebooks a reader downloads (to run on Colab, say) fetch the snippets from the published
    # site, never from the local default address.
    from scripts.series.notebooks import write as notebooks

    for notebook in notebooks.NOTEBOOKS:
        served = (project / "site" / notebook.download_url).read_text()
        assert 'SITE_URL = \\"https://example.org/profiling/\\"' in served, notebook.name
        assert "127.0.0.1" not in served and "SITE_URL = None" not in served, notebook.name


def test_guide_prints_the_thresholds_the_code_uses(built_site):
    from scripts.tracefacts.facts import analysis

    guide = (built_site / "guide" / "analyze-your-trace" / "index.html").read_text()
    for name in ("OVERHEAD_BOUND_MIN_HOST_WAIT_PCT", "STALLED_MIN_STALLED_PCT", "GPU_BOUND_MIN_BUSY_PCT",
                 "KERNEL_WAIT_US"):
        assert re.search(rf"<code>{name}</code></td>\s*<td[^>]*>{getattr(analysis, name):g}", guide), name
    assert "verdict:" in guide  # the worked example's summary


def test_every_claim_of_the_site_holds_on_the_committed_runs(built_site):
    listed, problems = claims.read_listing(built_site / "claims.json")
    assert problems == []
    assert [c.message() for c in listed if not c.holds] == []
    part1 = [c for c in listed if c.page == "docs/blog/posts/part-1-matmul-add.md"]
    assert len(part1) >= 20 and all(c.runs for c in part1)
    # the findings that can go either way say which way they went
    assert {c.outcome for c in part1} & set(claims.OUTCOMES)


def test_every_frozen_run_is_shown_and_every_run_a_page_reads_has_its_buttons(built_site):
    runs = json.loads((built_site / "claims.json").read_text())["runs"]
    used = set().union(*(set(r["used"]) for r in runs.values()))
    assert [e.key for e in catalog.EXAMPLES if e.key not in used and not freeze.awaits_gpus(e)] == []
    for page, found in runs.items():
        traced = {key for key in found["used"] if catalog.get(key).trace_path.exists()}
        assert traced <= set(found["linked"]), page
    # and on the Part 1 page itself, a Perfetto button per Part 1 run
    titles = {b["data-title"] for b in parse((built_site / PART1_PAGE).read_text()).find("button", **{"class": "perfetto-open"})}
    assert {e.key for e in catalog.PART1} <= titles


def test_a_catalog_example_no_page_shows_is_reported():
    from scripts.series.mkdocs_glue.hooks import unshown_examples

    everything = {e.key for e in catalog.EXAMPLES}
    assert unshown_examples(everything) == []
    (message,) = unshown_examples(everything - {"01_matmul_add/64_bf16_warm_compile"})
    assert "01_matmul_add/64_bf16_warm_compile" in message and "scripts/series/runs/catalog.py" in message


def test_materials_bundle_compiles_while_it_downloads_and_its_map_still_points_home(built_site):
    """The compile hint is the bundle's first line (V8 reads it only there), and the source map
    moved with it: the hint's line maps nowhere, and every line of code maps somewhere."""
    from scripts.series.mkdocs_glue.hooks import COMPILE_HINT

    bundles = list((built_site / "assets" / "javascripts").glob("bundle.*.min.js"))
    assert len(bundles) == 1
    text = bundles[0].read_text(encoding="utf-8")
    assert text.startswith(COMPILE_HINT) and text.count(COMPILE_HINT) == 1
    mapped = json.loads(bundles[0].with_name(bundles[0].name + ".map").read_text())["mappings"].split(";")
    lines = text.split("\n")
    assert mapped[0] == ""
    code = [i for i, line in enumerate(lines) if line.strip() and not line.startswith("//")]
    assert code and all(i < len(mapped) and mapped[i] for i in code)
