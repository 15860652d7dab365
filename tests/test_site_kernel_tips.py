"""Every kernel name the built site shows on the tables its helpers build (the profiler tables,
the posts' tables of GPU activities, the comparisons' lists, the Perfetto guide's query answer)
or as a facts box's top kernel explains itself: it is a button whose note, on the same page, is
the decoder's reading of that name, or says "not decoded" (those are counted); never a guess.
Tables a post writes in Markdown are counted apart (a post's prose, not a helper's table)."""

from __future__ import annotations

import re
from collections import Counter
from functools import lru_cache
from html import unescape
from html.parser import HTMLParser

from scripts.tracefacts.facts.analysis import short_name
from scripts.tracefacts.facts.kernels import decode
from scripts.tracefacts.pictures.kernel_tips import NOT_DECODED_TEXT, explanation
from tests.fixtures import gather_kernel_names
from tests.site_tools import site_pages

CUTS = ("...", "…")  # the profiler's mark of a name it cut, and ours
SHORTEST = 12  # shorter texts that begin a kernel's name ("Memset", "triton") are words, not names


@lru_cache(maxsize=1)
def activities() -> tuple[tuple[str, str, str], ...]:
    """(kind, name, short name) of every GPU activity of the frozen traces."""
    return tuple((row["kind"], row["name"], short_name(row["name"], 10**6))
                 for row in gather_kernel_names.read_table())


def names_shown(text: str) -> list[tuple[str, str]]:
    """The GPU activities (kind, name) a text on a page may show: the name, or its start (cut or
    shortened); [] for a text that is no kernel's name."""
    text = text.strip()
    kept = next((text[:-len(cut)] for cut in CUTS if text.endswith(cut)), text)
    exact = [(kind, name) for kind, name, _ in activities() if name == text]
    if exact or len(kept) < SHORTEST:
        return exact
    return [(kind, name) for kind, name, short in activities()
            if name.startswith(kept) or name.removeprefix("void ").startswith(kept) or short.startswith(kept)]


class Shown(HTMLParser):
    """The <code> texts inside tables (the glossary's piece-by-piece readings left out) and the
    facts boxes, each with the note id of the kernel-name button around it (None: no button) and
    whether a helper built it (in a table box of scrolling_table's or a facts box); and every id
    and note of the page."""

    def __init__(self, html: str):
        super().__init__(convert_charrefs=True)
        self.stack: list[tuple[str, dict]] = []
        self.codes: list[tuple[str, str | None, bool]] = []
        self.ids: Counter = Counter()
        self.notes: dict[str, list[str]] = {}
        self._text: list[str] | None = None
        self._note: str | None = None
        self.feed(html)
        self.close()

    def _inside(self, test) -> bool:
        return any(test(tag, attrs) for tag, attrs in self.stack)

    def handle_starttag(self, tag, attrs):
        attrs = {k: v or "" for k, v in attrs}
        if "id" in attrs:
            self.ids[attrs["id"]] += 1
        if tag in ("br", "img", "input", "meta", "link", "hr", "wbr", "source"):
            if tag == "br" and self._note:
                self.notes[self._note].append("\n")
            return
        self.stack.append((tag, attrs))
        if tag == "span" and attrs.get("id", "").startswith("kt-"):
            self._note = attrs["id"]
            self.notes[self._note] = []
        if tag == "code" and self._text is None:
            self._text = []

    def handle_endtag(self, tag):
        if not any(open_tag == tag for open_tag, _ in self.stack):
            return  # an end tag with no start (HTML's optional ones)
        while self.stack:
            open_tag, attrs = self.stack.pop()
            if open_tag == "span" and attrs.get("id") == self._note:
                self._note = None
            if open_tag == "code" and self._text is not None and not any(t == "code" for t, _ in self.stack):
                self._code_ended()
            if open_tag == tag:
                break

    def _code_ended(self):
        text, self._text = "".join(self._text), None
        classes = lambda attrs: attrs.get("class", "").split()  # noqa: E731
        in_scope = self._inside(lambda t, a: t == "table" or {"prof-table", "facts"} & set(classes(a)))
        if not in_scope or self._inside(lambda t, a: "kname" in classes(a)):
            return
        button = next((a for t, a in reversed(self.stack) if t == "button" and "ktip" in classes(a)), None)
        built = self._inside(lambda t, a: {"prof-table", "facts"} & set(classes(a)))
        self.codes.append((text, button.get("aria-describedby") if button else None, built))

    def handle_data(self, data):
        if self._text is not None:
            self._text.append(data)
        if self._note:
            self.notes[self._note].append(data)


def test_every_kernel_name_on_the_sites_tables_explains_itself(built_site):
    shown, not_decoded, pages, prose = 0, Counter(), set(), Counter()
    problems = []
    for page in site_pages(built_site):
        html = (built_site / page / "index.html").read_text(encoding="utf-8")
        parsed = Shown(html)
        twice = [i for i, n in parsed.ids.items() if n > 1 and i.startswith("kt-")]
        assert not twice, f"{page}: note ids used twice: {twice}"
        notes = {i: "".join(parts) for i, parts in parsed.notes.items()}
        for text, note, built in parsed.codes:
            candidates = names_shown(unescape(text))
            if not candidates:
                continue
            if not built:
                prose[page] += 1
                continue
            shown += 1
            pages.add(page)
            if note is None or note not in notes:
                problems.append(f"{page}: {text[:80]!r} has no note")
                continue
            said = notes[note].split("\n")
            if NOT_DECODED_TEXT in said:
                not_decoded[text] += 1
            if len({name for _, name in candidates}) == 1:  # the name is known: its reading exactly
                (kind, name), = set(candidates)
                expected = explanation(decode(name, kind))
                if tuple(said) != expected and tuple(said[1:]) != expected:
                    problems.append(f"{page}: {text[:60]!r} says {said}, not {list(expected)}")
            elif not said[0].startswith(("Library: ", "Cut short: ", "Not decoded")):
                problems.append(f"{page}: {text[:60]!r} says {said}")
    print(f"\n{shown} kernel names shown on {len(pages)} pages; not decoded: {sum(not_decoded.values())}"
          f" ({len(not_decoded)} distinct); in tables written in Markdown, left as they are: {dict(prose)}")
    assert not problems, "\n".join(problems[:20])
    # the posts and the guide show kernel names on their tables: the test reads them
    assert shown >= 30 and {"blog/matmul-add/", "blog/attention/", "blog/llm-inference/",
                             "guide/perfetto/"} <= pages


def test_the_glossary_reads_a_name_of_each_family_from_our_runs(built_site):
    html = (built_site / "guide" / "glossary" / "index.html").read_text(encoding="utf-8")
    entry = html[html.index('id="kernel-name"'):]
    entry = entry[:entry.index("<h2")]
    readings = re.findall(r'<div class="kname">.*?</table></div>', entry, re.S)
    from scripts.series.pages.posts.guide import KERNEL_FAMILIES

    assert len(readings) == len(KERNEL_FAMILIES)  # every family has a name in our runs
    for reading in readings:
        name = unescape(re.sub(r"<[^>]+>", "", re.search(r'<code class="kname-full">(.*?)</code>', reading).group(1)))
        assert any(n == name for _, n, _ in activities())  # a real name of the frozen traces
        assert reading.count("<mark>") >= 2 and "<td>" in reading
