"""Long pages laid out only where the reader is: what lies between two headings is wrapped in a
box the browser skips (style, layout, paint) while it is far from the screen.

Why: on a long post most of the load's main-thread time was styling and laying out thousands of
elements the reader had not scrolled to, and Material's script forces that work early by reading
positions. Each run of top-level elements between two top-level headings goes into
`<div class="md-defer">` (docs/stylesheets/extra.css: `content-visibility: auto`). The headings
stay outside the boxes, so the table of contents, anchors and Material's scroll spy read their
positions without laying out any skipped box; find in page, links and printing reach skipped text.

A page whose top level cannot be read with certainty (an unclosed element, a stray end tag) is
left as it was.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser

from ...tracefacts.pictures.markup import VOID

HEADINGS = frozenset({"h1", "h2", "h3", "h4", "h5", "h6"})
OPEN = '<div class="md-defer">'
CLOSE = "</div>"


class _TopLevel(HTMLParser):
    """Where each top-level heading starts and ends, as offsets into the text."""

    def __init__(self, html: str):
        super().__init__(convert_charrefs=True)
        self.html = html
        self.line_starts = [0] + [m.end() for m in re.finditer("\n", html)]
        self.stack: list[str] = []
        self.headings: list[tuple[int, int, str]] = []  # (start, end, tag) of each top-level heading
        self.broken = False
        self._start = -1

    def _offset(self) -> int:
        line, column = self.getpos()
        return self.line_starts[line - 1] + column

    def handle_starttag(self, tag, attrs):
        if tag in VOID:
            return
        if not self.stack and tag in HEADINGS:
            self._start = self._offset()
        self.stack.append(tag)

    def handle_endtag(self, tag):
        if tag in VOID:
            return
        if not self.stack or self.stack[-1] != tag:
            self.broken = True  # not the element that is open: the nesting is not certain
            return
        self.stack.pop()
        if not self.stack and tag in HEADINGS:
            self.headings.append((self._start, self.html.index(">", self._offset()) + 1, tag))


def defer_offscreen(html: str) -> str:
    """`html` (a page's content) with each run between two top-level headings, and after the
    last, in a deferred box; what shows first (the text before the first heading, or under the
    title) as it was."""
    parser = _TopLevel(html)
    parser.feed(html)
    parser.close()
    headings = parser.headings
    if parser.broken or parser.stack or not headings:
        return html
    pieces = [html[:headings[0][0]]]
    for i, (start, end, tag) in enumerate(headings):
        pieces.append(html[start:end])
        following = headings[i + 1][0] if i + 1 < len(headings) else len(html)
        run = html[end:following]
        # the run under the page's title is what shows first: never deferred
        pieces.append(OPEN + run + CLOSE if run.strip() and tag != "h1" else run)
    return "".join(pieces)
