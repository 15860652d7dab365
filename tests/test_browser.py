"""The built site in a real browser: Debian's Chromium driven by Playwright, the site served on localhost.

Every page loads cleanly and makes no request off the machine; images load; "Open in Perfetto" hands
the exact trace bytes to a fake ui.perfetto.dev (also when the popup is blocked); phones get no
sideways scrolling; the timeline pictures stay legible in the dark scheme.
"""

from __future__ import annotations

import hashlib
import io
import os
import re
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path
from urllib.parse import urljoin, urlsplit

import pytest

from tests.site_tools import CHROMIUM, CHROMIUM_ARGS, serve, site_pages

PERFETTO = "https://ui.perfetto.dev"
PHONE = {"width": 390, "height": 844}


def browser_missing(why: str):
    """No browser: a skip on a developer's machine, a failure in CI (`CI=true`), where the test
    set-up (tests/setup_browser.sh) must have installed it."""
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"{why} (CI=true: the test set-up must provide it)")
    pytest.skip(f"{why}; `make test` installs it (tests/setup_browser.sh)")


# --- fixtures: the server, the browser, a page that records what goes wrong ----------------------


@pytest.fixture(scope="module")
def base_url(built_site):
    with serve(built_site) as url:
        yield url


@pytest.fixture(scope="module")
def browser():
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        browser_missing("the playwright package is not installed")
    if not shutil.which(CHROMIUM):
        browser_missing(f"{CHROMIUM} is missing")
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


FAKE_PERFETTO = """<!doctype html><title>fake Perfetto</title><script>
// Perfetto's side of the postMessage protocol: PONG to PING, then hash the buffer it is sent.
addEventListener("message", async (event) => {
  if (event.data === "PING") { event.source.postMessage("PONG", event.origin); return; }
  const trace = event.data && event.data.perfetto;
  if (!trace) return;
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", trace.buffer));
  window.received = {title: trace.title, fileName: trace.fileName, url: trace.url,
                     sha256: Array.from(digest, (b) => b.toString(16).padStart(2, "0")).join("")};
  document.title = "received";
});
</script>"""


class Visit:
    """A browser context on the local site that records console errors, page errors, failed
    requests and every attempt to leave localhost (answered with a 404)."""

    def __init__(self, browser, base_url: str, **context_args):
        self.base_url = base_url
        self.problems: list[str] = []
        self.external: list[str] = []
        self.context = browser.new_context(**context_args)
        self.context.set_default_timeout(10_000)
        self.context.route(lambda url: not url.startswith(base_url), self._off_site)
        self.context.on("page", self._watch)

    def _off_site(self, route):
        url = route.request.url
        if url.startswith(PERFETTO + "/"):
            route.fulfill(status=200, content_type="text/html", body=FAKE_PERFETTO)
        else:
            self.external.append(url)
            route.fulfill(status=404, body="")

    def _watch(self, page):
        page.on("console", lambda m: m.type == "error" and self.problems.append(f"console: {m.text}"))
        page.on("pageerror", lambda e: self.problems.append(f"page error: {e}"))
        page.on("requestfailed", lambda r: self.problems.append(f"failed: {r.url} ({r.failure})"))
        page.on("response", lambda r: r.status >= 400 and self.problems.append(f"HTTP {r.status}: {r.url}"))

    def open(self, path: str):
        page = self.context.new_page()
        page.goto(urljoin(self.base_url, path), wait_until="load")
        return page

    def open_all(self, paths: list[str]) -> dict:
        """Pages opened side by side (loading is mostly waiting), each loaded with all its images."""
        pages = {}
        for path in paths:
            pages[path] = self.context.new_page()
            pages[path].goto(urljoin(self.base_url, path), wait_until="commit")
        for page in pages.values():
            page.wait_for_load_state("load")
            page.evaluate(LOAD_ALL_IMAGES)
        return pages

    def close(self):
        self.context.close()


@pytest.fixture
def visit(browser, base_url):
    visits = []

    def make(**context_args) -> Visit:
        visits.append(Visit(browser, base_url, **context_args))
        return visits[-1]

    yield make
    for v in visits:
        v.close()


def pages_with(site: Path, marker: str) -> list[str]:
    return [p for p in site_pages(site) if marker in (site / p / "index.html").read_text()]


LOAD_ALL_IMAGES = """async () => {
  // lazy images load only near the viewport: load them all, then report their sizes
  const images = Array.from(document.images);
  images.forEach((img) => { img.loading = "eager"; });
  await Promise.all(images.map((img) => img.decode().catch(() => null)));
  return images.map((img) => ({src: img.currentSrc || img.src, width: img.naturalWidth}));
}"""


# --- every page ----------------------------------------------------------------------------------


def test_every_page_loads_cleanly_and_stays_on_this_machine(visit, built_site):
    v = visit()
    paths = site_pages(built_site)
    assert len(paths) >= 5
    checked = 0
    for path, page in v.open_all(paths).items():
        page.wait_for_load_state("networkidle")  # late requests too (the search index)
        images = page.evaluate(LOAD_ALL_IMAGES)
        broken = [img["src"] for img in images if img["width"] == 0]
        assert not broken, f"{path}: images that did not load: {broken}"
        checked += len(images)
    assert checked >= 7  # Part 1's timelines and its author's avatar, at least
    assert not v.external, f"requests off this machine: {v.external}"
    assert not v.problems, "\n".join(v.problems)


# --- "Open in Perfetto" --------------------------------------------------------------------------


def served_file(site: Path, page_url: str, href: str) -> Path:
    path = urlsplit(urljoin(page_url, href)).path.lstrip("/")
    return site / path


def assert_delivered(popup, button: dict, page_url: str, site: Path):
    """The fake Perfetto received the bytes of the file the button names, with its names."""
    popup.wait_for_function("document.title === 'received'", timeout=15_000)
    received = popup.evaluate("window.received")
    trace = served_file(site, page_url, button["trace"])
    assert received["sha256"] == hashlib.sha256(trace.read_bytes()).hexdigest(), trace
    assert received["fileName"] == button["file"] == trace.name
    assert received["title"] == button["title"] and received["title"]


BUTTON = "button.perfetto-open"
BUTTON_DATA = "(b) => ({trace: b.dataset.trace, file: b.dataset.file, title: b.dataset.title})"


@pytest.fixture(scope="module")
def perfetto_buttons(built_site) -> list[tuple[str, int, int]]:
    """Every "Open in Perfetto" button of the site: (page, its index on the page, trace size)."""
    buttons = []
    for path in pages_with(built_site, "perfetto-open"):
        traces = re.findall(r'<button [^>]*class="[^"]*perfetto-open[^>]*data-trace="([^"]+)"',
                            (built_site / path / "index.html").read_text())
        buttons += [(path, i, served_file(built_site, f"http://h/{path}", href).stat().st_size)
                    for i, href in enumerate(traces)]
    assert any(path == "blog/matmul-add/" for path, _, _ in buttons)
    return buttons


def test_open_in_perfetto_delivers_the_named_trace(visit, perfetto_buttons, built_site):
    # The biggest trace of the site: the one most likely to be cut short or to time out.
    path, index, _ = max(perfetto_buttons, key=lambda b: b[2])
    v = visit()
    page = v.open(path)
    button = page.locator(BUTTON).nth(index)
    data = button.evaluate(BUTTON_DATA)
    with page.expect_popup() as popup:
        button.click()
    assert_delivered(popup.value, data, page.url, built_site)
    page.locator(".perfetto-status", has_text="Opened in Perfetto").first.wait_for()
    assert not v.problems, "\n".join(v.problems)


BLOCK_FIRST_POPUP = """(() => {
  const open = window.open.bind(window);
  let blocked = false;
  window.open = (...args) => { if (!blocked) { blocked = true; return null; } return open(...args); };
})();"""


def test_blocked_popup_offers_a_second_button_that_delivers(visit, built_site):
    v = visit()
    v.context.add_init_script(BLOCK_FIRST_POPUP)
    page = v.open("blog/matmul-add/")
    button = page.locator(BUTTON).first
    data = button.evaluate(BUTTON_DATA)
    button.click()
    retry = page.locator("button.perfetto-retry")
    retry.wait_for()
    assert len(page.context.pages) == 1  # nothing opened yet
    with page.expect_popup() as popup:
        retry.click()
    assert_delivered(popup.value, data, page.url, built_site)
    assert not v.problems, "\n".join(v.problems)


def settled_box(page, locator) -> dict:
    """The element's box once scrolled into view and still for two frames: the runs around it
    (laid out only near the screen, scripts/series/pages/offscreen.py) take their real heights as they come."""
    locator.scroll_into_view_if_needed()
    box = None
    for _ in range(50):
        page.evaluate("new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")
        now = locator.bounding_box()
        if now == box:
            return box
        box = now
        locator.scroll_into_view_if_needed()
    raise AssertionError("the element never stopped moving")


def test_double_click_on_perfetto_opens_one_tab_and_frees_the_button(visit, built_site):
    v = visit()
    page = v.open("blog/matmul-add/")
    popups, downloads = [], []
    v.context.on("page", lambda p: popups.append(p))
    page.on("request", lambda r: r.url.endswith(".json.gz") and downloads.append(r.url))
    button = page.locator(BUTTON).first
    data = button.evaluate(BUTTON_DATA)
    box = settled_box(page, button)
    x, y = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
    with page.expect_popup() as first:
        page.mouse.click(x, y)  # two clicks as a hurried reader makes them (Playwright's
        page.mouse.click(x, y)  # dblclick() lets the first popup swallow the second click)
    assert_delivered(first.value, data, page.url, built_site)
    page.locator(".perfetto-status", has_text="Opened in Perfetto").first.wait_for()
    page.wait_for_timeout(300)  # a second tab would have opened by now
    assert len(popups) == 1 and len(downloads) == 1
    assert button.is_enabled()
    assert not v.problems, "\n".join(v.problems)


def test_perfetto_download_that_never_answers_times_out_with_a_message(visit):
    v = visit()
    hanging = []
    v.context.route("**/*.json.gz", lambda route: hanging.append(route))  # never answered
    page = v.open("blog/matmul-add/")
    button = page.locator(BUTTON).first
    # The limit, and a listener that runs after the button's: was it busy once clicked?
    button.evaluate("""(b) => { b.dataset.timeoutMs = '400';
        document.addEventListener('click', () => { window.busyAfterClick = b.disabled; }); }""")
    with page.expect_popup():
        button.click()
    assert page.evaluate("window.busyAfterClick") is True
    status = page.locator(".perfetto-status", has_text="took longer than 400 ms")
    status.wait_for(timeout=5_000)
    assert hanging and "Could not open the trace" in status.inner_text()
    assert button.is_enabled()  # free for another try


# --- phones --------------------------------------------------------------------------------------

# Elements of the article that stick out to the right of the viewport, unless a box of the article
# that scrolls or clips sideways (a table's .prof-scroll, a code block) holds them. (Material clips
# <html> itself, which would hide the overflow rather than fix it.)
OVERFLOWING = """() => {
  const width = document.documentElement.clientWidth;
  const clipped = (el) => {
    for (let a = el.parentElement; a && a.tagName !== "ARTICLE"; a = a.parentElement) {
      if (["auto", "scroll", "hidden"].includes(getComputedStyle(a).overflowX)) return true;
    }
    return false;
  };
  const out = [];
  for (const el of document.querySelectorAll("article *")) {
    const r = el.getBoundingClientRect();
    if (r.width && r.right > width + 1 && !clipped(el)) {
      out.push(el.tagName.toLowerCase() + "." + Array.from(el.classList).join("."));
    }
  }
  return {width, scrollWidth: document.documentElement.scrollWidth, out: out.slice(0, 10)};
}"""


def test_phone_width_has_no_sideways_scrolling(visit, built_site):
    v = visit(viewport=PHONE, is_mobile=True, has_touch=True)
    for path, page in v.open_all(site_pages(built_site)).items():
        result = page.evaluate(OVERFLOWING)
        assert result["scrollWidth"] <= result["width"], f"{path}: page is wider than the phone: {result}"
        assert not result["out"], f"{path}: sticks out of the phone's width: {result['out']}"
        images = page.evaluate("() => Array.from(document.querySelectorAll('article img'),"
                               " (i) => i.getBoundingClientRect().right)")
        assert all(right <= PHONE["width"] for right in images), f"{path}: an image is wider than the phone"
        for scroll in page.locator(".prof-scroll").all():
            box = scroll.bounding_box()
            assert box["x"] >= 0 and box["x"] + box["width"] <= PHONE["width"] + 1


# --- light and dark ------------------------------------------------------------------------------


def css_fill(svg: ET.Element, element: ET.Element) -> str:
    """The fill of an element: its attribute, else the rule of its class in the SVG's <style>."""
    if element.get("fill"):
        return element.get("fill")
    style = "".join(s.text or "" for s in svg.iter("{http://www.w3.org/2000/svg}style"))
    for cls in (element.get("class") or "").split():
        rule = re.search(r"\." + re.escape(cls) + r"\{([^}]*)\}", style)
        fill = rule and re.search(r"(?:^|;)fill:([^;]+)", rule.group(1))
        if fill:
            return fill.group(1).strip()
    return ""


def test_timeline_svgs_paint_their_own_opaque_background(built_site):
    svgs = sorted((built_site / "timelines").rglob("*.svg"))
    assert svgs
    for path in svgs:
        svg = ET.parse(path).getroot()
        _, _, width, height = (float(x) for x in svg.get("viewBox").split())
        first = next(e for e in svg if e.tag.split("}")[1] not in ("title", "desc", "style", "defs"))
        assert first.tag.endswith("rect"), f"{path.name}: drawing starts with {first.tag}, not a background"
        assert float(first.get("width")) >= width - 1 and float(first.get("height")) >= height - 1
        assert re.fullmatch(r"#[0-9a-fA-F]{6}", css_fill(svg, first)), f"{path.name}: background not opaque"
        assert "opacity" not in (first.get("style") or "") + "".join(k for k in first.attrib if "opacity" in k)


def picture_stats(png: bytes) -> tuple[int, float]:
    """How many colours a screenshot has, and the mean lightness (0-255) of its left edge strip."""
    from PIL import Image, ImageStat

    image = Image.open(io.BytesIO(png)).convert("RGB")
    colours = len(image.getcolors(maxcolors=1 << 20) or [])
    w, h = image.size
    strip = image.crop((3, h // 4, 10, 3 * h // 4)).convert("L")  # inside the border and rounded corners
    return colours, ImageStat.Stat(strip).mean[0]


def test_timelines_render_in_light_and_dark_schemes(visit):
    page = visit(color_scheme="light").open("blog/matmul-add/")
    schemes = {}
    for scheme in ("default", "slate"):
        if scheme == "slate":
            page.locator("form[data-md-palette] label:visible").click()
        assert page.evaluate("document.body.dataset.mdColorScheme") == scheme
        background = page.evaluate("getComputedStyle(document.body).backgroundColor")
        picture = page.locator("figure.timeline img").first
        picture.scroll_into_view_if_needed()
        picture.evaluate("(img) => img.decode()")
        assert picture.evaluate("(img) => img.naturalWidth") > 0
        colours, edge = picture_stats(picture.screenshot())
        assert colours > 20, f"{scheme}: the timeline screenshot is blank"
        assert edge > 200, f"{scheme}: the picture's own light card is not what shows ({edge:.0f})"
        schemes[scheme] = background
    assert schemes["default"] != schemes["slate"]  # the toggle really changed the page


def test_the_palette_follows_the_system_then_the_readers_choice_on_every_page(visit):
    """Our light/dark switch (docs/javascripts/palette.js, in place of Material's): with no choice
    saved, the system's preference decides before the page shows; a switch holds on the next page;
    Enter on the focused switch moves to the next palette; and Material's palette component, whose
    start-up restyles the whole page, is not mounted."""
    for system, first, other in (("light", "default", "slate"), ("dark", "slate", "default")):
        reader = visit(color_scheme=system)
        errors = []
        page = reader.open("blog/matmul-add/")
        page.on("pageerror", lambda error: errors.append(str(error)))
        assert page.evaluate("document.body.dataset.mdColorScheme") == first, system
        assert page.locator("[data-md-component=palette]").count() == 0
        switch = page.locator("form[data-md-palette] label:visible")
        assert switch.count() == 1  # one button: the way to the other palette
        switch.click()
        assert page.evaluate("document.body.dataset.mdColorScheme") == other, system
        page.wait_for_function("document.querySelector('meta[name=color-scheme]')")
        assert page.evaluate("document.querySelector('meta[name=color-scheme]').content") == (
            "dark" if other == "slate" else "light")
        following = reader.open("blog/linear-mlp/")
        assert following.evaluate("document.body.dataset.mdColorScheme") == other, "choice not kept"
        following.locator("form[data-md-palette] input:checked").focus()
        following.keyboard.press("Enter")
        assert following.evaluate("document.body.dataset.mdColorScheme") == first
        assert following.url.endswith("blog/linear-mlp/")  # Enter switched, it submitted nothing
        assert not errors


def test_the_phone_drawer_draws_its_icons_from_its_first_opening_on(visit):
    """The closed navigation drawer makes none of its icons while the page loads
    (docs/stylesheets/extra.css); opened, it shows them, and they stay while it slides shut."""
    page = visit(viewport=PHONE).open("blog/matmul-add/")
    icon = """() => getComputedStyle(document.querySelector(
      '.md-sidebar--primary .md-nav__icon'), '::after').maskImage"""
    assert page.evaluate(icon) == "none"
    page.locator("label.md-header__button[for=__drawer]").click()
    assert page.evaluate(icon).startswith('url("data:image/svg+xml')
    page.locator("label.md-overlay").click(position={"x": PHONE["width"] - 10, "y": PHONE["height"] // 2})
    assert not page.evaluate("document.getElementById('__drawer').checked")
    assert page.evaluate(icon).startswith('url("data:image/svg+xml')


WATCH_ICON_WARMING = """
window.__warmed = [];
window.__firstBoxLaidOutAfterWarming = null;
new MutationObserver(records => {
  for (const record of records) {
    for (const node of record.addedNodes) {
      if (node.parentElement && node.parentElement.classList.contains("md-icon-warm"))
        window.__warmed.push(node.tagName + " " + node.className);
    }
    const box = record.target;
    if (record.attributeName === "class" && box.classList && box.classList.contains("md-laid-out")
        && window.__firstBoxLaidOutAfterWarming === null)
      window.__firstBoxLaidOutAfterWarming = window.__warmed.length;
  }
}).observe(document, {subtree: true, childList: true, attributes: true, attributeFilter: ["class"]});
"""


def test_icons_of_the_deferred_boxes_are_made_before_the_boxes_are_laid_out(visit):
    """Material's icons are SVG documents made when first shown; offscreen.js styles one sample
    of each kind of admonition and collapsible block in the deferred boxes, off screen, before it
    lays out the first box (so no box's layout makes them all at once), then removes the samples."""
    reader = visit(viewport={"width": 390, "height": 800})
    reader.context.add_init_script(WATCH_ICON_WARMING)
    page = reader.open("blog/attention/")
    page.wait_for_function("!document.querySelector('.md-defer:not(.md-laid-out)')", timeout=15_000)
    kinds = page.evaluate("""[...new Set([...document.querySelectorAll(
        '.md-defer .admonition, .md-defer details')].map(b => b.tagName + ' ' + b.className))]""")
    assert len(kinds) >= 3  # the post holds several kinds: else this test shows nothing
    warmed = page.evaluate("window.__warmed")
    assert sorted(warmed) == sorted(kinds)
    assert page.evaluate("window.__firstBoxLaidOutAfterWarming") == len(kinds)
    assert page.locator(".md-icon-warm").count() == 0


def test_a_link_into_a_long_page_lands_on_its_heading(visit):
    """A post's runs between headings are laid out only near the screen (scripts/series/pages/offscreen.py);
    a link to a heading far down still lands with the heading at the top, whether it opens the
    page (a link from elsewhere, a search result) or moves within it (the table of contents)."""
    reader = visit(viewport={"width": 390, "height": 800})
    page = reader.open("blog/linear-mlp/")
    assert page.locator("article .md-defer").count() >= 5  # the page is deferred at all
    # ...and laid out whole once the browser is idle, box by box, for what reads positions later
    page.wait_for_function("!document.querySelector('.md-defer:not(.md-laid-out)')", timeout=15_000)
    ids = page.evaluate("[...document.querySelectorAll('article h2[id], article h3[id]')].map(h => h.id)")
    header = page.evaluate("document.querySelector('.md-header').getBoundingClientRect().height")
    far = ids[len(ids) // 3: -2: max(1, len(ids) // 6)][:4]  # headings well down, none near the end
    assert far
    for heading in far:
        opened = reader.open(f"blog/linear-mlp/#{heading}")
        opened.wait_for_timeout(300)
        top = opened.evaluate(f"document.getElementById({heading!r}).getBoundingClientRect().top")
        assert header - 2 <= top <= header + 40, f"opened at #{heading}: its heading is at {top:.0f} px"
        opened.close()
    page.goto(page.url.split("#")[0] + f"#{far[-1]}")  # within the page
    page.wait_for_timeout(300)
    top = page.evaluate(f"document.getElementById({far[-1]!r}).getBoundingClientRect().top")
    assert header - 2 <= top <= header + 40, f"moved to #{far[-1]}: its heading is at {top:.0f} px"


def test_every_code_block_has_its_copy_button_once_it_shows(visit):
    """Material mounts code blocks as they come into view (content.lazy, mkdocs.yml): a block far
    down has no button at load, and has one as soon as the reader reaches it."""
    page = visit(viewport={"width": 1280, "height": 800}).open("blog/memory-shapes-stacks-roofline/")
    blocks = page.locator("article pre:has(> code)")
    assert blocks.count() >= 3
    last = blocks.nth(blocks.count() - 1)
    assert last.locator(".md-code__button").count() == 0  # not mounted while far away
    for i in range(blocks.count()):
        block = blocks.nth(i)
        block.scroll_into_view_if_needed()
        block.locator(".md-code__button[title]").first.wait_for(state="attached", timeout=5_000)


# --- search --------------------------------------------------------------------------------------


def test_search_finds_a_post_by_a_word_of_its_profiler_output(visit):
    page = visit().open("")
    # a kernel family that the posts' tables print; several posts do, so any of them is a hit
    box, meta = page.locator("input.md-search__input"), page.locator(".md-search-result__meta")
    box.click()
    # the worker has built its index once the meta line leaves "Initializing search"; typing after
    # that is what a reader does, and the order in which a keyup-less `fill` finds nothing
    meta.filter(has_not_text=re.compile("^Initializing")).wait_for(timeout=30_000)
    box.press_sequentially("nvjet")  # key by key: Material reads the query on keyup
    hit = page.locator(".md-search-result__item a[href*='blog/']").first
    hit.wait_for()
    assert re.search(r"blog/(matmul-add|matmul-add-sweep|linear-mlp|attention|llm-inference)/", hit.get_attribute("href"))


# --- Material's script, after the first paint (docs/javascripts/theme.js) -------------------------


def test_material_loads_after_the_content_is_painted_and_fetches_no_sitemap(visit):
    """The content is painted before Material's bundle is even requested; Material still mounts
    its components (the search); the RSS feeds stay linked from the
    page; and Material does not take them for language versions, fetching sitemap.xml for each."""
    v = visit(viewport=PHONE)
    requested = []
    v.context.on("request", lambda r: requested.append(r.url))
    page = v.open("blog/attention/")
    page.wait_for_load_state("networkidle")
    timing = page.evaluate("""() => ({
      paint: performance.getEntriesByName("first-contentful-paint")[0].startTime,
      bundle: performance.getEntriesByType("resource")
        .filter((e) => /assets\\/javascripts\\/bundle\\.[0-9a-f]+\\.min\\.js$/.test(e.name))
        .map((e) => e.startTime),
    })""")
    assert len(timing["bundle"]) == 1, timing
    assert timing["bundle"][0] >= timing["paint"], timing
    # mounted: Material's search component writes its state (empty in the page as built), and
    # once its index is built says so ("Initializing search" until then)
    page.wait_for_function("""() => /^(?!Initializing)\\S/.test(
      document.querySelector(".md-search-result__meta").textContent.trim())""")
    feeds = page.eval_on_selector_all('head link[rel="alternate"][type="application/rss+xml"]',
                                      "(links) => links.map((l) => l.getAttribute('href'))")
    assert sorted(f.rsplit("/", 1)[-1] for f in feeds) == ["feed_rss_created.xml", "feed_rss_updated.xml"]
    assert not [u for u in requested if u.endswith("sitemap.xml")], requested
    assert not v.problems, "\n".join(v.problems)
