"""The glossary: one file of entries (docs/guide/glossary.md, which is also the page that shows
them), and on every other page the first use of each entry's words linked to its entry.

An entry is a heading `## Title {#id}` followed by a comment listing the words that link to it:

    ## Launch delay {#launch-delay}
    <!-- terms: launch delay, launch delays, launch-to-start -->

`{{ analysis.<NAME> }}` in the file prints the constant <NAME> of scripts/tracefacts/facts/analysis.py, so that a
definition never restates a number the code could change. Words are matched whole and without
regard to case, longest first, in running text only: never inside headings, links, buttons,
captions or table headers, where a link would be wrong or unreadable, nor inside code, unless the
code is the term itself as written (`ProfilerStep#2`, `Activity Buffer Request`).
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass
from functools import cached_property, lru_cache
from html import escape, unescape
from html.parser import HTMLParser
from pathlib import Path

from ...tracefacts.pictures.markup import VOID

PAGE = "guide/glossary.md"  # the entries' file, under docs/, and the page that shows them
URL = "guide/glossary/"

_HEADING = re.compile(r"^## (?P<title>.+?) \{#(?P<id>[a-z0-9][a-z0-9-]*)\}\s*$")
_TERMS = re.compile(r"^<!-- terms: (?P<terms>.+?) -->\s*$")
_CONSTANT = re.compile(r"\{\{\s*(?P<module>analysis|claims)\.(?P<name>[A-Za-z_][A-Za-z0-9_]*)\s*\}\}")


class GlossaryError(ValueError):
    """The glossary file is malformed, or names a constant scripts/tracefacts/facts/analysis.py lacks."""


@dataclass(frozen=True)
class Entry:
    id: str
    title: str
    terms: tuple[str, ...]
    summary: str  # its first sentence as plain text: the tooltip of the links to it


def fill_constants(text: str) -> str:
    """`{{ analysis.<NAME> }}` replaced by the value of that constant of scripts.tracefacts.facts.analysis,
    `{{ claims.<NAME> }}` by that of scripts.series.pages.claims (how the pages compare runs)."""
    from ...tracefacts.facts import analysis
    from . import claims

    modules = {"analysis": (analysis, "scripts/tracefacts/facts/analysis.py"),
               "claims": (claims, "scripts/series/pages/claims.py")}

    def value(match: re.Match) -> str:
        name, (module, path) = match.group("name"), modules[match.group("module")]
        number = getattr(module, name, None)
        if not name.isupper() or isinstance(number, bool) or not isinstance(number, (int, float)):
            raise GlossaryError(f"{PAGE}: {{{{ {match.group('module')}.{name} }}}} is not a numeric constant of {path}")
        return f"{number:g}"

    return _CONSTANT.sub(value, text)


def _plain(markdown: str) -> str:
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", markdown)  # links: their text
    text = re.sub(r"[*_`]", "", text)
    return " ".join(text.split())


def _first_sentence(paragraph: str) -> str:
    match = re.search(r"(?<=[.!?])\s", paragraph)
    return paragraph[:match.start()] if match else paragraph


def parse(markdown: str) -> tuple[Entry, ...]:
    """The entries of the glossary file, checked: each has terms, ids and terms are unique."""
    lines = fill_constants(markdown).splitlines()
    entries, owners = [], {}
    for i, line in enumerate(lines):
        heading = _HEADING.match(line)
        if not heading:
            if line.startswith("## "):
                raise GlossaryError(f"{PAGE}, line {i + 1}: an entry's heading is '## Title {{#id}}': {line!r}")
            continue
        terms_line = _TERMS.match(lines[i + 1]) if i + 1 < len(lines) else None
        if not terms_line:
            raise GlossaryError(f"{PAGE}, line {i + 2}: '<!-- terms: ... -->' must follow the heading {line!r}")
        terms = tuple(t.strip() for t in terms_line.group("terms").split(",") if t.strip())
        for term in terms:
            owner = owners.setdefault(term.casefold(), heading.group("id"))
            if owner != heading.group("id"):
                raise GlossaryError(f"{PAGE}: '{term}' is a term of both #{owner} and #{heading.group('id')}")
        body = []
        for text in lines[i + 2:]:
            if text.startswith("## "):
                break
            if text.strip():
                body.append(text)
            elif body:
                break  # the end of the first paragraph
        entries.append(Entry(heading.group("id"), heading.group("title"), terms, _first_sentence(_plain(" ".join(body)))))
    ids = [e.id for e in entries]
    if not entries or len(set(ids)) != len(ids):
        raise GlossaryError(f"{PAGE}: no entries, or an id used twice: {ids}")
    return tuple(entries)


@dataclass(frozen=True)
class Glossary:
    entries: tuple[Entry, ...]

    @cached_property
    def by_term(self) -> dict[str, Entry]:
        return {term.casefold(): entry for entry in self.entries for term in entry.terms}

    @cached_property
    def pattern(self) -> re.Pattern:
        # Whole words, the longest first, so that "kernel span" wins over "kernel".
        terms = sorted(self.by_term, key=len, reverse=True)
        return re.compile(r"(?<![\w-])(?:" + "|".join(re.escape(t) for t in terms) + r")(?![\w-])", re.IGNORECASE)

    @cached_property
    def code_pattern(self) -> re.Pattern:
        """A code span that is a term by itself, as written (`ProfilerStep#2`, `ProfilerStep*`)."""
        terms = sorted((t for e in self.entries for t in e.terms), key=len, reverse=True)
        return re.compile(r"(?P<term>" + "|".join(re.escape(t) for t in terms) + r")(?:#\d+|\*)?")


@lru_cache(maxsize=4)
def _parsed(text: str) -> Glossary:
    return Glossary(parse(text))


def load(docs_dir: Path) -> Glossary:
    return _parsed((Path(docs_dir) / PAGE).read_text(encoding="utf-8"))


# --- linking -------------------------------------------------------------------------------------

# Where no term is linked: inside these elements, or those of these classes.
SKIP_TAGS = frozenset({
    "a", "code", "pre", "kbd", "samp", "var", "script", "style", "svg", "math", "button", "textarea",
    "select", "option", "label", "summary", "title", "h1", "h2", "h3", "h4", "h5", "h6", "figcaption",
    "caption", "th", "sup", "abbr",
})
# (ktip-notes: kernel names' notes, which the page shows as copies, where no link would work.)
SKIP_CLASSES = frozenset({"admonition-title", "md-button", "trace-actions", "prof-table", "headerlink",
                          "footnote", "glossary-term", "ktip-notes"})


class _Tokens(HTMLParser):
    """Splits HTML into pieces, exactly (each is a slice of the input): text in which a term may be
    linked, whole <code> elements that may be (a term by itself, such as `ProfilerStep#2`), and
    the rest."""

    def __init__(self, html: str):
        super().__init__(convert_charrefs=True)
        self.html = html
        self.line_starts = [0] + [m.end() for m in re.finditer("\n", html)]
        self.starts: list[int] = []  # where each token begins
        self.kinds: list[str] = []  # "text" (linkable), "code" (a linkable <code>'s start) or "raw"
        self.code_ends: dict[int, int] = {}  # a linkable <code>'s start token -> its end token
        self.stack: list[tuple[str, bool, int]] = []  # open elements: (tag, skipped, start token)

    def _mark(self, kind: str):
        line, column = self.getpos()
        self.starts.append(self.line_starts[line - 1] + column)
        self.kinds.append(kind)

    def _skipped(self) -> bool:
        return bool(self.stack) and self.stack[-1][1]

    def handle_starttag(self, tag, attrs):
        if tag in VOID:
            self._mark("raw")
            return
        classes = set(" ".join(value or "" for name, value in attrs if name == "class").split())
        linkable_code = tag == "code" and not self._skipped() and not classes & SKIP_CLASSES
        self._mark("code" if linkable_code else "raw")
        self.stack.append((tag, self._skipped() or tag in SKIP_TAGS or bool(classes & SKIP_CLASSES),
                           len(self.starts) - 1))

    def handle_startendtag(self, tag, attrs):
        self._mark("raw")

    def handle_endtag(self, tag):
        self._mark("raw")
        for depth in range(len(self.stack) - 1, -1, -1):
            if self.stack[depth][0] == tag:
                start = self.stack[depth][2]
                if tag == "code" and self.kinds[start] == "code":
                    self.code_ends[start] = len(self.starts) - 1
                del self.stack[depth:]
                break

    def handle_data(self, data):
        self._mark("raw" if self._skipped() else "text")

    def handle_comment(self, data):
        self._mark("raw")

    def handle_decl(self, decl):
        self._mark("raw")

    def handle_pi(self, data):
        self._mark("raw")

    def unknown_decl(self, data):
        self._mark("raw")

    def pieces(self) -> list[tuple[str, str]]:
        """(html, kind) in order; joined, the input."""
        self.feed(self.html)
        self.close()
        bounds = self.starts + [len(self.html)]
        out, i = [("", "raw")], 0
        if bounds[0] > 0:
            out.append((self.html[:bounds[0]], "raw"))
        while i < len(self.kinds):
            kind, end = self.kinds[i], i
            if kind == "code":
                if i in self.code_ends:
                    end = self.code_ends[i]  # the whole element, its end tag included
                else:
                    kind = "raw"  # never closed
            out.append((self.html[bounds[i]:bounds[end + 1]], kind))
            i = end + 1
        return [(text, kind) for text, kind in out if text]


def link_terms(html: str, page_url: str, glossary: Glossary) -> str:
    """The page's HTML with the first use of each entry's terms, in running text, linked to it."""
    base = page_url.rstrip("/") if page_url.endswith("/") or not page_url else posixpath.dirname(page_url)
    href = posixpath.relpath(URL.rstrip("/"), base or ".") + "/"
    linked: set[str] = set()

    def link(entry: Entry, inner: str) -> str:
        if entry.id in linked:
            return inner
        linked.add(entry.id)
        return (f'<a class="glossary-term" href="{escape(href)}#{entry.id}" title="{escape(entry.summary)}">'
                f"{inner}</a>")

    out = []
    for text, kind in _Tokens(html).pieces():
        if kind == "text":
            text = glossary.pattern.sub(lambda m: link(glossary.by_term[m.group(0).casefold()], m.group(0)), text)
        elif kind == "code":
            inner = unescape(re.sub(r"<[^>]*>", "", text))
            term = glossary.code_pattern.fullmatch(inner)
            if term:
                text = link(glossary.by_term[term.group("term").casefold()], text)
        out.append(text)
    return "".join(out)


def on_page_content(html: str, page, config) -> str:
    """The MkDocs hook (scripts/series/mkdocs_glue/hooks.py): the glossary page gets its constants, every
    other page but the notebooks its links."""
    from mkdocs.exceptions import PluginError

    try:
        if page.file.src_uri == PAGE:
            return fill_constants(html)
        if page.file.src_uri.endswith(".ipynb"):
            return html
        return link_terms(html, page.url, load(Path(config.docs_dir)))
    except GlossaryError as error:
        raise PluginError(str(error)) from None
