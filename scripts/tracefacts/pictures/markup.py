"""HTML built by construction: every page helper makes its markup here, so that no name from a
trace can become markup.

    h("td", {"class": "num"}, "aten::mm <8>")  ->  '<td class="num">aten::mm &lt;8&gt;</td>'

Text and attribute values are escaped when an element is made; only `Markup`, what `h` and the
other builders of this module return, goes in as it is. A plain `str` is text, whatever it holds,
so forgetting to escape can only show too much escaping, never run a trace's markup. `escape` is
also what the SVG writers use (scripts/tracefacts/pictures/timeline/svg.py), so the pictures and the pages share one rule.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

# Lone surrogates (JSON's "\ud800" decodes to one) cannot be written as UTF-8, and XML forbids
# most control characters: both become U+FFFD, so a page or a picture can always be written.
_UNWRITABLE = re.compile("[\ud800-\udfff\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")
_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_:.-]*\Z")  # tag and attribute names: code's, never data
VOID = frozenset({"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta",
                  "param", "source", "track", "wbr"})  # HTML's void elements, for builder and readers


class Markup(str):
    """Text that is already HTML. Made only by this module's builders (and `Markup(...)` on a
    constant); anything else given to them is escaped. Joining a `Markup` with `+` gives a plain
    `str`, which is escaped again if built in: use `concat` or `join`."""

    __slots__ = ()

    def __html__(self) -> str:  # the protocol of markupsafe and Jinja, should one meet it
        return self


def writable(text: str) -> str:
    """`text` with the characters no page or picture can hold replaced by U+FFFD."""
    return _UNWRITABLE.sub("\ufffd", text)


def escape(text: object) -> Markup:
    """`text` as HTML or XML text, fit inside elements and quoted attribute values: & < > " '
    escaped, characters that cannot be written replaced. `Markup` is returned as it is."""
    if isinstance(text, Markup):
        return text
    return Markup(html.escape(writable(str(text)), quote=True))


def code_block(text: str, info: str = "text") -> str:
    """`text` as a Markdown fenced code block (for a markdown-exec block that prints Markdown):
    the fence is longer than any run of backticks in `text`, so no line of it can end the block
    and let the rest be read as Markdown, raw HTML included."""
    text = writable(text)
    fence = "`" * max(3, 1 + max(map(len, re.findall("`+", text)), default=0))
    return f"{fence}{info}\n{text}\n{fence}"


Content = object  # str, Markup, a number, None (nothing), or an iterable of these


def _flatten(children: Iterable[Content]) -> Iterable[Markup]:
    for child in children:
        if child is None:
            continue
        if isinstance(child, str) or not isinstance(child, Iterable):
            yield escape(child)
        else:
            yield from _flatten(child)


def concat(*children: Content) -> Markup:
    """Pieces of text and markup one after the other, the text escaped."""
    return Markup("".join(_flatten(children)))


def join(separator: Content, items: Iterable[Content]) -> Markup:
    """`items` with `separator` between them, each escaped unless it is `Markup`."""
    return Markup(escape(separator).join(concat(item) for item in items))


def _attributes(attrs: Mapping[str, object] | None) -> str:
    out = []
    for name, value in (attrs or {}).items():
        if not _NAME.match(name):
            raise ValueError(f"not an attribute name: {name!r}")
        if value is None or value is False:
            continue
        out.append(f" {name}" if value is True else f' {name}="{escape(value)}"')
    return "".join(out)


def h(tag: str, attrs: Mapping[str, object] | None = None, *children: Content) -> Markup:
    """The element `<tag attrs>children</tag>`. An attribute whose value is True is written bare
    (`download`), one that is None or False is left out; children are escaped unless `Markup`."""
    if not _NAME.match(tag):
        raise ValueError(f"not a tag name: {tag!r}")
    start = f"<{tag}{_attributes(attrs)}>"
    if tag in VOID:
        if any(child is not None for child in children):
            raise ValueError(f"<{tag}> cannot have children")
        return Markup(start)
    return Markup(f"{start}{concat(children)}</{tag}>")


@dataclass(frozen=True)
class Cell:
    """A table cell that is not the default one (<th> in the head, <td> elsewhere) or that has
    attributes."""

    content: Content
    attrs: Mapping[str, object] = field(default_factory=dict)
    tag: str = "td"


def th(content: Content, attrs: Mapping[str, object] | None = None) -> Cell:
    return Cell(content, attrs or {}, "th")


def td(content: Content, attrs: Mapping[str, object] | None = None) -> Cell:
    return Cell(content, attrs or {}, "td")


def _row(cells: Sequence[Cell | Content], tag: str) -> Markup:
    return h("tr", None, [h(c.tag, c.attrs, c.content) if isinstance(c, Cell) else h(tag, None, c)
                          for c in cells])


def table(head: Sequence[Cell | Content], rows: Iterable[Sequence[Cell | Content]], *,
          caption: Content = "", foot: Iterable[Sequence[Cell | Content]] = (),
          attrs: Mapping[str, object] | None = None) -> Markup:
    """The one HTML table builder: a header row, body rows and optional foot rows, each a
    sequence of cells (content, or a `Cell` from `th`/`td` for another tag or attributes)."""
    foot_rows = [_row(r, "td") for r in foot]
    return h("table", attrs,
             h("caption", None, caption) if caption else None,
             h("thead", None, _row(head, "th")),
             h("tbody", None, [_row(r, "td") for r in rows]),
             h("tfoot", None, foot_rows) if foot_rows else None)
