"""A kernel name's note in Chromium (docs/javascripts/kernel-tips.js): a tap opens it at a
phone's width, inside the screen; keyboard focus opens it and Escape closes it, the focus staying
on the name; a tap or a click elsewhere closes it. What it shows is the note the name's
aria-describedby names, what a screen reader reads.

The fixtures (the served site, the browser, `visit`) are tests/test_browser.py's.
"""

from __future__ import annotations

from tests.test_browser import PHONE, base_url, browser, visit  # noqa: F401 (fixtures)

PAGE = "blog/matmul-add/"  # a profiler table and a facts box with kernel names
LAPTOP = {"width": 1280, "height": 800}
BOX = ".ktip-box"

# The note a button names, as text: its lines (the <br>s) as new lines.
NOTE = """(button) => {
  const note = document.getElementById(button.getAttribute('aria-describedby'));
  return Array.from(note.childNodes, (n) => n.nodeName === 'BR' ? '\\n' : n.textContent).join('');
}"""


def shown(page) -> dict:
    """The box's state: shown or not, its text (lines as new lines) and its place."""
    return page.evaluate("""(selector) => {
      const box = document.querySelector(selector);
      if (!box || box.hidden) return {shown: false};
      const r = box.getBoundingClientRect();
      return {shown: true, text: box.innerText.trim(), left: r.left, right: r.right, top: r.top, bottom: r.bottom};
    }""", BOX)


def lines(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if line.strip()]


def test_a_tap_on_a_kernel_name_shows_its_note_inside_a_phones_screen(visit):
    v = visit(viewport=PHONE, is_mobile=True, has_touch=True)
    page = v.open(PAGE)
    button = page.locator(".prof-table button.ktip").first
    button.scroll_into_view_if_needed()
    note = button.evaluate(NOTE)
    assert note.startswith("Library: ") or note.startswith("Not decoded")
    assert not shown(page)["shown"] and button.get_attribute("aria-expanded") in (None, "false")
    button.tap()
    state = shown(page)
    assert state["shown"] and lines(state["text"]) == lines(note)
    assert button.get_attribute("aria-expanded") == "true"
    assert 0 <= state["left"] and state["right"] <= PHONE["width"], state  # inside the screen
    at = button.bounding_box()
    assert state["top"] >= at["y"] + at["height"] - 1 or state["bottom"] <= at["y"] + 1, (state, at)  # beside it
    # a tap on another name shows that one's note; a tap elsewhere closes it
    other = page.locator(".prof-table button.ktip").nth(1)
    other.tap()
    assert lines(shown(page)["text"]) == lines(other.evaluate(NOTE))
    assert button.get_attribute("aria-expanded") == "false"
    page.locator("article h1").first.tap()
    assert not shown(page)["shown"] and other.get_attribute("aria-expanded") == "false"
    # the same name tapped twice: open, then closed
    other.tap()
    other.tap()
    assert not shown(page)["shown"]
    assert not v.problems, v.problems


def test_keyboard_focus_shows_the_note_and_escape_closes_it(visit):
    v = visit(viewport=LAPTOP)
    page = v.open(PAGE)
    button = page.locator(".prof-table button.ktip").first
    button.scroll_into_view_if_needed()
    # Tab from the table's scrolling region (focusable itself) to the first name in it
    button.locator("xpath=ancestor::div[contains(@class, 'prof-scroll')]").focus()
    page.keyboard.press("Tab")
    assert button.evaluate("(b) => b === document.activeElement && b.matches(':focus-visible')")
    state = shown(page)
    assert state["shown"] and lines(state["text"]) == lines(button.evaluate(NOTE))
    page.keyboard.press("Escape")
    assert not shown(page)["shown"] and button.get_attribute("aria-expanded") == "false"
    assert button.evaluate("(b) => b === document.activeElement")  # the focus stays on the name
    # Enter opens it again (a button); moving the focus on closes it
    page.keyboard.press("Enter")
    assert shown(page)["shown"]
    page.keyboard.press("Shift+Tab")
    assert not shown(page)["shown"]
    # the facts box's top kernel works the same way
    top = page.locator(".facts button.ktip").first
    top.scroll_into_view_if_needed()
    top.focus()
    page.keyboard.press("Escape")
    top.click()
    assert lines(shown(page)["text"]) == lines(top.evaluate(NOTE))
    page.locator("article h1").first.click()
    assert not shown(page)["shown"]
    assert not v.problems, v.problems
