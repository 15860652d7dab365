"""The runs between a page's top-level headings go into deferred boxes (scripts/series/pages/offscreen.py);
the headings, the text before the first one and anything that cannot be read with certainty stay
as they were."""

from __future__ import annotations

from scripts.series.pages.offscreen import CLOSE, OPEN, defer_offscreen


def unwrapped(html: str) -> str:
    """`html` without the boxes (for content that has no other <div>)."""
    return html.replace(OPEN, "").replace(CLOSE, "")


def test_each_run_between_top_level_headings_is_one_box_and_nothing_else_moves():
    page = ('<p>intro</p>\n<h2 id="a">A<a class="headerlink" href="#a">¶</a></h2>\n<p>one</p>'
            '<div class="admonition"><h3>inside</h3><p>kept</p></div>\n<h3 id="b">B</h3><h4>C</h4>\n'
            '<ul><li>two</li></ul>\n')
    assert defer_offscreen(page) == (
        '<p>intro</p>\n<h2 id="a">A<a class="headerlink" href="#a">¶</a></h2>'
        '<div class="md-defer">\n<p>one</p><div class="admonition"><h3>inside</h3><p>kept</p></div>\n</div>'
        '<h3 id="b">B</h3><h4>C</h4>'  # nothing between B and C: no box
        '<div class="md-defer">\n<ul><li>two</li></ul>\n</div>')


def test_headings_inside_other_elements_do_not_cut():
    page = "<details><summary>x</summary><h2>not top level</h2><p>a</p></details><p>b</p>"
    assert defer_offscreen(page) == page


def test_a_page_whose_nesting_is_uncertain_is_left_as_it_was():
    for page in ("<p>open<h2>x</h2><p>y</p>",  # an unclosed element
                 "<h2>x</h2></span><p>y</p>",  # a stray end tag
                 "<h2>x</h2><div><p>y</p>"):  # never closed
        assert defer_offscreen(page) == page


def test_void_elements_templates_and_svg_keep_the_count_of_open_elements():
    page = ('<h2>x</h2><img src="a.svg" alt=""><br><svg><path d="M0 0"/></svg>'
            '<template><h2>in a template</h2><table><tr><td>1</td></tr></table></template><h3>y</h3>z')
    out = defer_offscreen(page)
    assert out.count(OPEN) == 2 and unwrapped(out) == page
    assert '<template><h2>in a template</h2>' in out.split("<h3>")[0]


def test_a_page_without_headings_is_unchanged():
    assert defer_offscreen("<p>only</p>") == "<p>only</p>"
    assert defer_offscreen("") == ""


def test_the_run_under_the_title_shows_first_and_is_not_deferred():
    page = "<h1>Title</h1><p>intro</p><h2>A</h2><p>a</p>"
    assert defer_offscreen(page) == '<h1>Title</h1><p>intro</p><h2>A</h2><div class="md-defer"><p>a</p></div>'
