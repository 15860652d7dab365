"""Reading the built site in Chromium at a phone's and a laptop's width: the pictures' viewer zooms
their labels to a legible size, by touch (double-tap, pinch), wheel and keys.

The fixtures (the served site, the browser, `visit`) are tests/test_browser.py's.
"""

from __future__ import annotations

import pytest

from tests.site_tools import posts
from tests.test_browser import PHONE, base_url, browser, visit  # noqa: F401 (fixtures)

LAPTOP = {"width": 1280, "height": 800}
LEGIBLE_PX = 9  # the smallest label, once zoomed to, is at least this tall (its em, CSS px)

FIGURE_LINK = "figure.timeline > a.svg-zoom"
VIEWER = "dialog.svg-viewer"

# Every label of the picture in the open viewer: its rendered em (font size times the scale the
# screen applies to it), its box on the screen, its anchor (the point its x and y attributes name,
# on the screen: exact at any zoom, where a tiny label's glyph box is rounded by the rasterizer),
# and its index among the <text>s.
LABELS = """() => {
  const svg = document.querySelector('dialog.svg-viewer .svg-viewer__picture').shadowRoot.querySelector('svg');
  const stage = document.querySelector('dialog.svg-viewer .svg-viewer__stage').getBoundingClientRect();
  const labels = Array.from(svg.querySelectorAll('text'), (t, i) => {
    const m = t.getScreenCTM(), r = t.getBoundingClientRect();
    const at = new DOMPoint(t.x.baseVal.length ? t.x.baseVal[0].value : 0,
                            t.y.baseVal.length ? t.y.baseVal[0].value : 0).matrixTransform(m);
    return {i, text: t.textContent.trim(),
            em: parseFloat(getComputedStyle(t).fontSize) * Math.sqrt(Math.abs(m.a * m.d - m.b * m.c)),
            x: r.x, y: r.y, w: r.width, h: r.height, cx: r.x + r.width / 2, cy: r.y + r.height / 2,
            ax: at.x, ay: at.y};
  }).filter((l) => l.text);
  return {labels, stage: {x: stage.x, y: stage.y, w: stage.width, h: stage.height},
          scale: parseFloat(document.querySelector('dialog.svg-viewer').dataset.scale)};
}"""


def open_viewer(page, index: int, tap: bool):
    link = page.locator(FIGURE_LINK).nth(index)
    link.scroll_into_view_if_needed()
    link.tap() if tap else link.click()
    page.locator(f"{VIEWER}[data-ready]").wait_for()
    return page.evaluate(LABELS)


def smallest(state: dict) -> dict:
    return min(state["labels"], key=lambda label: label["em"])


def nearest_middle(state: dict) -> dict:
    """The label nearest the stage's middle: zooming about it pulls no edge of the picture back
    into view, so the point zoomed about stays where it was."""
    stage = state["stage"]
    x, y = stage["x"] + stage["w"] / 2, stage["y"] + stage["h"] / 2
    return min(state["labels"], key=lambda lab: abs(lab["cx"] - x) + abs(lab["cy"] - y))


def label(state: dict, index: int) -> dict:
    return next(lab for lab in state["labels"] if lab["i"] == index)


def inside(point: tuple[float, float], stage: dict) -> bool:
    x, y = point
    return stage["x"] <= x <= stage["x"] + stage["w"] and stage["y"] <= y <= stage["y"] + stage["h"]


def double_tap(page, x: float, y: float):
    page.touchscreen.tap(x, y)
    page.touchscreen.tap(x, y)


def close_viewer(page):
    page.keyboard.press("Escape")
    page.locator(f"{VIEWER}[open]").wait_for(state="hidden")


@pytest.fixture(scope="module")
def pictures(built_site) -> list[tuple[str, int]]:
    """Every zoomable picture of the posts: (page, its index on the page)."""
    found = []
    for path in posts(built_site):
        count = (built_site / path / "index.html").read_text().count('class="svg-zoom"')
        found += [(path, i) for i in range(count)]
    assert len(found) >= 20  # the timelines of the four parts and the sweep's plots
    return found


def test_every_picture_zooms_to_legible_labels_on_a_phone(visit, pictures):
    """At 390 px each picture opens full-screen; a double-tap on its smallest label zooms there
    until that label is at least 9 px tall, still under the finger."""
    v = visit(viewport=PHONE, is_mobile=True, has_touch=True)
    pages: dict[str, object] = {}
    small_at_fit = 0
    for path, index in pictures:
        page = pages.get(path) or pages.setdefault(path, v.open(path))
        fitted = open_viewer(page, index, tap=True)
        assert len(fitted["labels"]) >= 5, f"{path} #{index}: the picture did not render its text"
        target = smallest(fitted)
        small_at_fit += target["em"] < LEGIBLE_PX
        double_tap(page, target["cx"], target["cy"])
        page.wait_for_function(f"document.querySelector('{VIEWER}').dataset.zoomed === 'true'")
        zoomed = page.evaluate(LABELS)
        after = label(zoomed, target["i"])
        where = f"{path} picture #{index}, label {after['text'][:40]!r}"
        assert after["em"] >= LEGIBLE_PX, f"{where}: {after['em']:.1f} px once zoomed"
        assert after["h"] >= LEGIBLE_PX, f"{where}: its box is {after['h']:.1f} px tall"
        assert inside((after["cx"], after["cy"]), zoomed["stage"]), f"{where}: zoomed out of view"
        assert abs(after["cx"] - target["cx"]) < 2 or after["x"] < zoomed["stage"]["x"] + 1, where
        close_viewer(page)
    # the viewer is what makes them legible: at the phone's width they are not, fitted
    assert small_at_fit == len(pictures)
    assert not v.problems, "\n".join(v.problems)


def pinch(page, centre: tuple[float, float], start: float, end: float, steps: int = 12):
    """Two fingers, `start` px apart across `centre`, spread to `end` px (CDP touch events)."""
    cdp = page.context.new_cdp_session(page)
    x, y = centre

    def fingers(d):
        return [{"x": x - d / 2, "y": y, "id": 0}, {"x": x + d / 2, "y": y, "id": 1}]

    cdp.send("Input.dispatchTouchEvent", {"type": "touchStart", "touchPoints": fingers(start)})
    for step in range(1, steps + 1):
        d = start + (end - start) * step / steps
        cdp.send("Input.dispatchTouchEvent", {"type": "touchMove", "touchPoints": fingers(d)})
    cdp.send("Input.dispatchTouchEvent", {"type": "touchEnd", "touchPoints": []})
    cdp.detach()


def test_pinch_zooms_about_the_fingers(visit):
    v = visit(viewport=PHONE, is_mobile=True, has_touch=True)
    page = v.open("blog/matmul-add/")
    fitted = open_viewer(page, 0, tap=True)
    # Fingers at the stage's middle, where the fitted picture's middle is: while the zoomed picture
    # is still shorter than the stage the viewer centres it, which keeps that point (and no other)
    # where it was, whatever the picture's shape.
    stage = fitted["stage"]
    centre = (stage["x"] + stage["w"] / 2, stage["y"] + stage["h"] / 2)
    target = nearest_middle(fitted)
    pinch(page, centre, 40, 240)
    zoomed = page.evaluate(LABELS)
    k = zoomed["scale"] / fitted["scale"]
    assert k == pytest.approx(6, rel=0.05)
    after = label(zoomed, target["i"])
    assert after["em"] == pytest.approx(6 * target["em"], rel=0.05)
    # the picture's point between the fingers stays between them: every point moves away from it
    # by the zoom (read at a label's anchor, exact at any zoom, where the glyph box of a tiny label
    # is rounded by the rasterizer)
    expected = tuple(c + (a - c) * k for a, c in zip((target["ax"], target["ay"]), centre))
    assert (after["ax"], after["ay"]) == pytest.approx(expected, abs=3)
    assert after["w"] == pytest.approx(6 * target["w"], rel=0.05)
    pinch(page, centre, 240, 20)  # pinching in stops at the fitted size
    assert page.evaluate(LABELS)["scale"] == pytest.approx(fitted["scale"], rel=1e-3)
    assert not v.problems, "\n".join(v.problems)


def test_laptop_viewer_wheel_keys_and_back(visit):
    v = visit(viewport=LAPTOP)
    page = v.open("blog/matmul-add/")
    before_url = page.url
    fitted = open_viewer(page, 0, tap=False)
    # at a laptop's width the fitted picture is legible already
    assert smallest(fitted)["em"] >= LEGIBLE_PX
    target = nearest_middle(fitted)
    page.mouse.move(target["cx"], target["cy"])
    page.mouse.wheel(0, -300)
    page.wait_for_function(f"document.querySelector('{VIEWER}').dataset.zoomed === 'true'")
    zoomed = page.evaluate(LABELS)
    after = label(zoomed, target["i"])
    assert zoomed["scale"] > fitted["scale"] * 1.2
    assert (after["cx"], after["cy"]) == pytest.approx((target["cx"], target["cy"]), abs=2)  # under the cursor
    page.keyboard.press("0")
    assert page.evaluate(LABELS)["scale"] == pytest.approx(fitted["scale"], rel=1e-3)
    page.keyboard.press("+")
    assert page.evaluate(LABELS)["scale"] == pytest.approx(fitted["scale"] * 1.5, rel=1e-3)
    # the browser's Back closes the viewer and stays on the page
    page.go_back()
    page.locator(f"{VIEWER}[open]").wait_for(state="hidden")
    assert page.url == before_url
    # Escape closes it too, and gives the focus back to the figure's link
    open_viewer(page, 1, tap=False)
    close_viewer(page)
    assert page.evaluate("document.activeElement.matches('figure.timeline > a.svg-zoom')")
    assert page.url == before_url
    assert not v.problems, "\n".join(v.problems)


# --- the cheatsheet on paper ---------------------------------------------------------------------

A4_CONTENT = {"width": 718, "height": 1047}  # 210 x 297 mm less the 10 mm margins, at 96 px per inch


def test_cheatsheet_prints_on_one_a4_sheet(visit):
    import re

    page = visit(viewport=A4_CONTENT).open("guide/cheatsheet/")
    page.emulate_media(media="print")
    layout = page.evaluate("""() => {
      const sheet = document.querySelector('.cheatsheet'), cell = sheet.querySelector('td');
      return {bottom: sheet.getBoundingClientRect().bottom, tables: sheet.querySelectorAll('table').length,
              cell: parseFloat(getComputedStyle(cell).fontSize),
              header: getComputedStyle(document.querySelector('.md-header')).display};
    }""")
    assert layout["tables"] >= 3
    assert layout["bottom"] <= A4_CONTENT["height"], layout
    assert layout["cell"] >= 10, f"print type of {layout['cell']} px is too small to read"
    assert layout["header"] == "none"
    pdf = page.pdf(format="A4", prefer_css_page_size=True)
    assert re.findall(rb"/Type /Pages\b.*?/Count (\d+)", pdf, re.S) == [b"1"]
    # and that one page is A4 (595 x 842 pt), the cheatsheet's own
    boxes = re.findall(rb"/MediaBox \[0 0 ([\d.]+) ([\d.]+)\]", pdf)
    assert boxes and all(abs(float(w) - 595.3) < 2 and abs(float(h) - 841.9) < 2 for w, h in boxes)


# --- profiler tables at a laptop's and a phone's width ---------------------------------------------

# Each profiler table of the page: its first-needed header cells and its foot's totals, where they
# are on the screen once scrolled to (never sideways), and the page's own width.
PROFILER_TABLES = """async () => {
  const vw = document.documentElement.clientWidth, out = [];
  for (const box of document.querySelectorAll('.prof-table')) {
    if (!box.querySelector('.prof-switch')) continue;  // a profiler table (scripts/tracefacts/pictures/profiler_table.py)
    box.style.contentVisibility = 'visible';
    box.scrollIntoView({block: 'center'});
    const scroller = box.querySelector('.prof-scroll'), frame = scroller.getBoundingClientRect();
    const inView = (el) => { const r = el.getBoundingClientRect();
      return r.width > 0 && r.left >= Math.max(frame.left, 0) - 1 && r.right <= Math.min(frame.right, vw) + 1; };
    const heads = Array.from(box.querySelectorAll('thead th'));
    out.push({
      caption: box.querySelector('caption').textContent.slice(0, 60),
      shown: heads.filter(inView).map((th) => th.textContent.replace('▼', '').trim()),
      all: heads.map((th) => th.textContent.replace('▼', '').trim()),
      sorted: (box.querySelector('thead th[aria-sort]') || {textContent: ''}).textContent.replace('▼', '').trim(),
      totals: Array.from(box.querySelectorAll('tfoot tr'), (tr) => ({
        label: tr.querySelector('th').textContent,
        value: Array.from(tr.querySelectorAll('td')).filter((td) => td.textContent.trim()).map((td) => ({text: td.textContent, seen: inView(td)}))})),
      scrollLeft: scroller.scrollLeft,
    });
  }
  return {tables: out, scrollWidth: document.documentElement.scrollWidth, vw};
}"""

FIRST_NEEDED = ("Name", "Self CPU", "Self CUDA", "CUDA total", "# of Calls")


@pytest.mark.parametrize("size", [LAPTOP, PHONE], ids=["1280px", "390px"])
def test_profiler_tables_show_their_first_needed_columns_and_totals_without_scrolling(visit, built_site, size):
    phone = size is PHONE
    v = visit(viewport=size, is_mobile=phone, has_touch=phone)
    checked = 0
    for path, page in v.open_all(posts(built_site)).items():
        result = page.evaluate(PROFILER_TABLES)
        assert result["scrollWidth"] <= result["vw"], f"{path}: the page scrolls sideways"
        for table in result["tables"]:
            where = f"{path} {size['width']}px, {table['caption']!r}"
            wanted = [c for c in FIRST_NEEDED if c in table["all"]] + [table["sorted"]]
            assert set(wanted) <= set(table["shown"]), f"{where}: {table['shown']}"
            assert table["scrollLeft"] == 0
            totals = {t["label"]: t["value"] for t in table["totals"]}
            assert {"Self CPU time total", "Self CUDA time total"} <= set(totals), where
            for label, values in totals.items():
                assert len(values) == 1 and values[0]["seen"], f"{where}: {label} is out of view"
            checked += 1
    # Every profiler table the posts hold was read (the posts were cut to few tables: count, not a floor).
    expected = sum((built_site / path / "index.html").read_text(encoding="utf-8").count('class="prof-switch"')
                   for path in posts(built_site))
    assert checked == expected > 0
    assert not v.problems, "\n".join(v.problems)


def test_the_switch_shows_every_column_and_the_profilers_names(visit):
    """The page holds the short view; the switch swaps in the full one (every column, the
    profiler's names, kept in a <template> until then) and back."""
    import re

    v = visit(viewport=LAPTOP)
    page = v.open("blog/attention/")
    box = page.locator(".prof-table:has(.prof-switch)").first
    box.scroll_into_view_if_needed()
    switch = box.locator("label.prof-switch")
    every = int(re.search(r"All (\d+) columns", switch.text_content()).group(1))
    columns = box.locator(".prof-scroll thead th")
    visible = lambda: sum(columns.nth(i).is_visible() for i in range(columns.count()))
    assert visible() == columns.count() == len(FIRST_NEEDED) < every
    names = box.locator(".prof-scroll tbody th")
    row = next(i for i in range(names.count()) if names.nth(i).get_attribute("title"))
    full_name = names.nth(row).get_attribute("title")  # the short name's row names the profiler's own on hover
    assert names.nth(row).locator("code.prof-short").is_visible()
    switch.click()
    assert visible() == columns.count() == every
    assert names.nth(row).locator("code").text_content() == full_name and not box.locator("code.prof-short").count()
    switch.click()
    assert visible() == columns.count() == len(FIRST_NEEDED)
    assert names.nth(row).get_attribute("title") == full_name
    assert not v.problems, "\n".join(v.problems)
