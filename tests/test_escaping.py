"""Names from a trace are text on every page: markup injected into every name-bearing field of a
trace (tests/injected_trace.py) comes out of each page helper, and out of a strict site build, as
text, never as an element or an attribute; the HTML builder (scripts.tracefacts.pictures.markup) escapes by
construction."""

from __future__ import annotations

import re
import textwrap
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from pathlib import Path

import pytest

from scripts.series.pages import cache, helpers as pages, sweeps as pages_sweeps
from scripts.series.runs import catalog
from scripts.tracefacts.pictures import markup
from scripts.tracefacts.pictures.markup import Markup, code_block, concat, escape, h, join, table, td, th
from tests.conftest import ROOT, mkdocs_build
from tests.injected_trace import IMG, PAYLOAD, SCRIPT, TABLE_NAMES, TAG, write_example


class Parsed(HTMLParser):
    """The elements, attributes and text of an HTML fragment, as a browser would read them."""

    def __init__(self, html: str):
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict]] = []
        self.text_parts: list[str] = []
        self.feed(html)
        self.close()

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, {k: v or "" for k, v in attrs}))

    handle_startendtag = handle_starttag

    def handle_data(self, data):
        self.text_parts.append(data)

    @property
    def text(self) -> str:
        return "".join(self.text_parts)

    def attribute_values(self) -> list[str]:
        return [v for _, attrs in self.tags for v in attrs.values()]


def assert_inert(html: str) -> Parsed:
    """No element or attribute of `html` came from the injected names, and it can be written."""
    parsed = Parsed(html)
    injected = [(tag, attrs) for tag, attrs in parsed.tags
                if tag == "script" or (tag == "img" and attrs.get("src") in ("x", "y"))]
    handlers = [(tag, name) for tag, attrs in parsed.tags for name in attrs if name.startswith("on")]
    assert not injected and not handlers, (injected, handlers)
    assert "<img src=x" not in html and "<img src=y" not in html and "<script" not in html
    assert "\ud800" not in html
    html.encode("utf-8")
    return parsed


@pytest.fixture
def run(tmp_path, monkeypatch) -> pages.Run:
    monkeypatch.setattr(cache, "CACHE_DIR", tmp_path / "cache")
    monkeypatch.setattr(catalog, "ROOT", tmp_path)  # the summary names the trace relative to it
    monkeypatch.setattr(pages, "SITE", pages.SiteState(page_url="blog/post/", site_url="https://example.org/"))
    return pages.Run(write_example(tmp_path / "traces"))


# --- the page helpers on the injected trace ------------------------------------------------------


def test_facts_box_shows_step_labels_and_names_as_text(run):
    parsed = assert_inert(run.facts())
    text = parsed.text
    assert f"#2{IMG}{SCRIPT}'&amp;\ufffd" in text  # the ProfilerStep label of issue 15
    assert f"#3{IMG}" in text
    assert f"cudaLaunchKernel{IMG}" in text and f"cudaMemcpyAsync{IMG}" in text  # launch APIs
    top = text.split("top kernel", 1)[1]
    # the top kernel's name, shortened in the text, whole in its tooltip, inert in both
    assert f"{IMG}{SCRIPT}" in top or any(f"{IMG}{SCRIPT}" in v for v in parsed.attribute_values())


def test_timeline_svg_and_its_figure_show_names_as_text(run):
    figure = assert_inert(run.timeline())
    (img,) = [attrs for tag, attrs in figure.tags if tag == "img"]
    assert img["src"].startswith("../../timelines/injected/") and TAG in img["src"]
    assert f"H200{IMG}{SCRIPT}" in figure.text  # the caption, from the metadata
    svg_file = next(path for site_path, path in pages.SITE.assets.items() if site_path.endswith(".svg"))
    svg = svg_file.read_text(encoding="utf-8")
    assert_inert(svg)
    root = ET.fromstring(svg)  # well-formed XML
    names = {element.tag.rsplit("}", 1)[-1] for element in root.iter()}
    assert not names & {"img", "script", "foreignObject"}
    assert not [name for element in root.iter() for name in element.attrib if name.startswith("on")]
    titles = [element.text or "" for element in root.iter() if element.tag.endswith("title")]
    assert any(IMG in t and SCRIPT in t for t in titles)  # tooltips keep the whole name, as text
    assert any(f"thread 4242 (python){IMG}" in t for t in titles)  # a thread name
    assert any(f"NVIDIA H200{IMG}{SCRIPT}" in t for t in titles)  # deviceProperties' name
    assert "'&amp;" in "".join(root.itertext())  # an entity in a name stays the text it was


def test_profiler_table_shows_row_names_totals_and_caption_as_text(run):
    parsed = assert_inert(run.table())
    for name in TABLE_NAMES:
        assert name in parsed.text
    assert f"{IMG} Self CPU time total" in parsed.text
    caption = parsed.text.split("Name", 1)[0]
    assert f"--name {IMG}{SCRIPT}" in caption and f"H200{IMG}" in caption


def test_links_keep_file_and_example_names_inside_their_attributes(run):
    parsed = assert_inert(run.links())
    (button,) = [attrs for tag, attrs in parsed.tags if tag == "button"]
    assert button["data-title"] == run.example.key and button["data-file"] == run.example.trace_path.name
    assert set(button) == {"type", "class", "data-trace", "data-title", "data-file"}
    download = next(attrs for tag, attrs in parsed.tags if tag == "a" and "download" in attrs)
    assert download["download"] == run.example.trace_path.name
    share = next(attrs for tag, attrs in parsed.tags if attrs.get("class") == "perfetto-share")
    assert share["href"].endswith(f"/traces/injected/{run.example.trace_path.name}")


def test_links_name_their_run_first_by_its_tag_or_the_pages_label(run):
    """Several runs' buttons may stand together: each row says whose they are, as text ahead of the
    buttons: the example's tag, or the short label the page gives; either one escaped."""
    from html import unescape

    for label, shown in ((None, run.example.tag), (f"eager {IMG}", f"eager {IMG}")):
        html = run.links(label=label)
        parsed = assert_inert(html)
        name = re.search(r'<span class="trace-run"[^>]*>(.*?)</span>', html).group(1)
        assert unescape(re.sub(r"<[^>]+>", "", name)) == shown and parsed.text.startswith(shown)
        assert html.index('class="trace-run"') < html.index("Download trace") < html.index("Open in Perfetto")


def test_summary_block_cannot_be_closed_by_a_name(run):
    import markdown

    summary = run.summary()
    # A name's new lines are escaped (issue 29): its fence cannot even start a line.
    assert "\\x0a```\\x0a" in summary and "\n```\n" not in summary
    block = code_block(summary)
    html = markdown.markdown(block, extensions=["pymdownx.highlight", "pymdownx.superfences"])
    parsed = assert_inert(html)
    assert IMG in parsed.text and "<img src=y onerror=alert(3)>" in parsed.text
    assert html.count("<pre") == 1


def test_llm_tables_show_kernel_names_labels_and_captions_as_text(run, monkeypatch):
    view = pages_sweeps.LLMView(run)
    monkeypatch.setattr(pages_sweeps, "llm", lambda key: view)
    kernels = assert_inert(view.kernels_table(1))
    # short_name drops what lies between < and > or ( and ): what is left of the payload
    assert "NNT\"alert'&amp;" in kernels.text
    batches = assert_inert(pages_sweeps.batch_table("any"))
    assert f"--name {IMG}" in batches.text
    compared = assert_inert(pages_sweeps.compare({PAYLOAD: ("any", 1)}, f"caption {IMG}"))
    assert f"caption {IMG}" in compared.text and f"{IMG}{SCRIPT}" in compared.text


# --- the builder -----------------------------------------------------------------------------------


def test_h_escapes_text_and_attribute_values_by_construction():
    html = h("td", {"class": "num", "title": PAYLOAD, "data-x": 3}, PAYLOAD, 1.5, None, [" a", " b"])
    parsed = assert_inert(html)
    assert parsed.tags == [("td", {"class": "num", "title": PAYLOAD.replace("\ud800", "\ufffd"), "data-x": "3"})]
    assert parsed.text == PAYLOAD.replace("\ud800", "\ufffd") + "1.5 a b"
    assert isinstance(html, Markup)


def test_only_markup_passes_unescaped():
    inner = h("code", None, "<b>")
    assert h("p", None, inner, "<b>") == "<p><code>&lt;b&gt;</code>&lt;b&gt;</p>"
    assert escape(inner) is inner
    # joining Markup with + gives a str: built in again, it is escaped, never run
    assert h("p", None, inner + "<i>") == "<p>&lt;code&gt;&amp;lt;b&amp;gt;&lt;/code&gt;&lt;i&gt;</p>"
    assert concat(inner, "<i>") == "<code>&lt;b&gt;</code>&lt;i&gt;"
    assert join(", ", [inner, "<i>"]) == "<code>&lt;b&gt;</code>, &lt;i&gt;"


def test_bare_omitted_and_void_attributes():
    assert h("a", {"href": "x.ipynb", "download": True, "title": None, "hidden": False}, "get") == (
        '<a href="x.ipynb" download>get</a>')
    assert h("img", {"src": "a.svg", "alt": '"'}) == '<img src="a.svg" alt="&quot;">'
    with pytest.raises(ValueError):
        h("img", None, "child")


@pytest.mark.parametrize("tag, attrs", [
    ("td onclick=x", None), ("<td", None), ("td", {"onclick=alert(1) x": "y"}), ("td", {'a"': "y"}),
])
def test_tag_and_attribute_names_must_be_names(tag, attrs):
    with pytest.raises(ValueError):
        h(tag, attrs)


def test_table_is_the_one_table_builder():
    html = table(["Name", th("n", {"class": "num"})],
                 [[h("code", None, IMG), td("1", {"class": "num"})], [SCRIPT, 2]],
                 caption=IMG, foot=[[th("total", {"colspan": 1}), "3"]], attrs={"class": "prof"})
    assert html == (
        '<table class="prof"><caption>&lt;img src=x onerror=alert(1)&gt;</caption>'
        '<thead><tr><th>Name</th><th class="num">n</th></tr></thead><tbody>'
        '<tr><td><code>&lt;img src=x onerror=alert(1)&gt;</code></td><td class="num">1</td></tr>'
        '<tr><td>&quot;&gt;&lt;script&gt;alert(2)&lt;/script&gt;</td><td>2</td></tr></tbody>'
        '<tfoot><tr><th colspan="1">total</th><td>3</td></tr></tfoot></table>')
    assert "<caption>" not in table(["a"], [])


def test_code_block_fence_outruns_every_backtick_run():
    assert code_block("plain") == "```text\nplain\n```"
    block = code_block("a\n````\nb ``````` c")
    fence = block.split("\n", 1)[0].removesuffix("text")
    assert set(fence) == {"`"} and len(fence) == 8 and block.endswith("\n" + fence)
    assert "\ud800" not in code_block("\ud800")


def test_escape_makes_unwritable_characters_writable():
    assert escape("a\ud800b\x00c\x1f") == "a\ufffdb\ufffdc\ufffd"
    assert markup.writable("tab\tand\nnew line") == "tab\tand\nnew line"


# --- a site built from the injected trace ----------------------------------------------------------

HOOKS = f"""
import shutil
import sys
from pathlib import Path

sys.path.insert(0, {str(ROOT)!r})
from scripts.series.pages import helpers as pages


def on_page_markdown(markdown, page, **kwargs):
    pages.SITE.page_url = page.url
    return markdown


def on_post_build(config):
    for site_path, source in pages.SITE.assets.items():
        target = Path(config.site_dir) / site_path
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)
"""

PAGE = '''# Injected

```python exec="true" html="true" session="injected"
import sys
from pathlib import Path

sys.path.insert(0, {repo!r})  # the repository's tests package, whatever the build's working directory
from scripts.series.pages import cache, helpers as pages, sweeps as pages_sweeps; from scripts.series.runs import catalog
from tests.injected_trace import PAYLOAD, local_example

root = Path({root!r})
cache.CACHE_DIR = root / "cache"
catalog.ROOT = root
run = pages.Run(local_example(root / "traces"))
view = pages_sweeps.LLMView(run)
pages_sweeps.llm = lambda key: view
for part in (run.facts(), run.timeline(), run.links(), run.table(), view.kernels_table(1),
             pages_sweeps.batch_table("any"), pages_sweeps.compare({{PAYLOAD: ("any", 1)}}, PAYLOAD)):
    print(part)
```

```python exec="true" session="injected"
from scripts.tracefacts.pictures.markup import code_block

print(code_block(run.summary()))
```
'''

CONFIG = """
site_name: injected
site_url: https://example.org/
theme:
  name: material
  font: false
hooks: [hooks.py]
plugins: [markdown-exec]
markdown_extensions: [pymdownx.highlight, pymdownx.superfences]
"""


def test_a_strict_build_from_the_injected_trace_publishes_no_injected_markup(tmp_path):
    write_example(tmp_path / "traces")
    project = tmp_path / "project"
    (project / "docs").mkdir(parents=True)
    (project / "mkdocs.yml").write_text(CONFIG)
    (project / "hooks.py").write_text(HOOKS)
    (project / "docs" / "index.md").write_text(PAGE.format(root=str(tmp_path), repo=str(ROOT)))
    done = mkdocs_build(project)
    assert done.returncode == 0, f"{done.stdout[-3000:]}\n{done.stderr[-6000:]}"
    html = (project / "site" / "index.html").read_text(encoding="utf-8")
    assert "Traceback" not in html and "exited with errors" not in html
    parsed = Parsed(html)
    assert not [(t, a) for t, a in parsed.tags if t == "img" and a.get("src") in ("x", "y")]
    assert not [(t, n) for t, a in parsed.tags for n in a if n.startswith("on")]
    scripts = re.findall(r"<script\b[^>]*>(.*?)</script>", html, flags=re.S)
    assert scripts and not [s for s in scripts if "alert(" in s]  # the theme's own scripts only
    article = Parsed(html.split('<article', 1)[1].split("</article>", 1)[0])
    for shown in (f"#2{IMG}", f"H200{IMG}{SCRIPT}", TABLE_NAMES[0], "<img src=y onerror=alert(3)>"):
        assert shown in article.text, shown
    assert article.text.count("Open in Perfetto") == 1
    (svg,) = (project / "site" / "timelines" / "injected").glob("*.svg")
    root = ET.fromstring(svg.read_text(encoding="utf-8"))
    assert not {e.tag.rsplit("}", 1)[-1] for e in root.iter()} & {"img", "script", "foreignObject"}
    assert IMG in "".join(root.itertext())

