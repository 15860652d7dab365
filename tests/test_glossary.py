"""The glossary (scripts/series/pages/glossary.py): its one file of entries, and the first use of each entry's
words on a page linked to it, in running text only."""

from __future__ import annotations

import re

import pytest

from scripts.tracefacts.facts import analysis
from scripts.series.pages import glossary
from tests.conftest import ROOT

ENTRIES = """# Glossary

Intro.

## Kernel {#kernel}
<!-- terms: kernel, kernels -->

A function that runs on the GPU. More text.

## Kernel span {#kernel-span}
<!-- terms: kernel span -->

From the first start to the last end.

## Kernel wait {#kernel-wait}
<!-- terms: kernel wait -->

Shorter than {{ analysis.KERNEL_WAIT_US }} us. Then more.

## ProfilerStep {#profilerstep}
<!-- terms: ProfilerStep -->

The step range.
"""


@pytest.fixture
def small() -> glossary.Glossary:
    return glossary.Glossary(glossary.parse(ENTRIES))


def links(html: str) -> list[tuple[str, str]]:
    """(entry id, linked text) of each glossary link, in order."""
    return [(m.group(1), re.sub(r"<[^>]*>", "", m.group(2))) for m in re.finditer(
        r'<a class="glossary-term" href="[^"#]*#([^"]+)"[^>]*>(.*?)</a>', html)]


def test_entries_are_read_with_their_terms_and_first_sentence(small):
    assert [e.id for e in small.entries] == ["kernel", "kernel-span", "kernel-wait", "profilerstep"]
    assert small.entries[0].terms == ("kernel", "kernels")
    assert small.entries[0].summary == "A function that runs on the GPU."
    # a constant of scripts/tracefacts/facts/analysis.py, printed from the code
    assert small.entries[2].summary == f"Shorter than {analysis.KERNEL_WAIT_US:g} us."


def test_only_the_first_use_of_an_entry_is_linked_whatever_its_form(small):
    html = "<p>Kernels run. A kernel runs. KERNEL.</p><p>kernel again</p>"
    out = glossary.link_terms(html, "blog/post/", small)
    assert links(out) == [("kernel", "Kernels")]
    assert re.sub(r"<a [^>]*>|</a>", "", out) == html  # nothing else changed
    assert 'href="../../guide/glossary/#kernel"' in out


def test_longest_term_wins_and_words_match_whole(small):
    out = glossary.link_terms("<p>The kernel span of kernels, not kernel-ish nor subkernel.</p>", "", small)
    assert links(out) == [("kernel-span", "kernel span"), ("kernel", "kernels")]
    assert 'href="guide/glossary/#kernel-span"' in out  # from the home page


@pytest.mark.parametrize("html", [
    "<h2>A kernel</h2>", "<p><code>my kernel</code></p>", '<p><a href="x">a kernel</a></p>',
    "<pre><span>kernel</span></pre>", '<p class="admonition-title">kernel</p>',
    "<table><thead><tr><th>kernel</th></tr></thead></table>", "<figure><figcaption>kernel</figcaption></figure>",
    '<div class="prof-table"><p>kernel</p></div>', "<p><button>kernel</button></p>",
    '<p><img alt="kernel" src="x.svg"> <span title="kernel">x</span></p>', "<!-- kernel -->",
])
def test_no_link_where_a_link_does_not_belong(small, html):
    assert glossary.link_terms(html, "blog/post/", small) == html


def test_a_skipped_element_hides_its_use_but_not_the_next(small):
    out = glossary.link_terms("<h2>kernel</h2><p>Then the kernel.</p><br><p>kernel</p>", "blog/p/", small)
    assert links(out) == [("kernel", "kernel")]
    assert out.startswith("<h2>kernel</h2><p>Then the <a ")


def test_a_code_span_that_is_the_term_itself_links_whole(small):
    out = glossary.link_terms("<p><code>ProfilerStep#2</code> and <code>ProfilerStep</code></p>", "blog/p/", small)
    assert links(out) == [("profilerstep", "ProfilerStep#2")]
    assert "<a " in out and out.index("<a ") < out.index("<code>")  # the link holds the code element


def test_escaped_text_and_entities_survive(small):
    html = "<p>a &lt;kernel&gt; &amp; kernel&#x27;s</p>"
    out = glossary.link_terms(html, "blog/p/", small)
    assert links(out) == [("kernel", "kernel")]
    assert re.sub(r"<a [^>]*>|</a>", "", out) == html


@pytest.mark.parametrize("text, message", [
    ("## Kernel\n<!-- terms: kernel -->\n", "heading"),
    ("## Kernel {#kernel}\n\nno terms\n", "terms"),
    ("## A {#a}\n<!-- terms: x -->\n## B {#b}\n<!-- terms: X -->\n", "both"),
    ("## A {#a}\n<!-- terms: x -->\n## A2 {#a}\n<!-- terms: y -->\n", "twice"),
    ("## A {#a}\n<!-- terms: x -->\n{{ analysis.NOT_THERE }}\n", "NOT_THERE"),
    ("## A {#a}\n<!-- terms: x -->\n{{ analysis.facts }}\n", "facts"),
    ("## A {#a}\n<!-- terms: x -->\n{{ claims.NOT_THERE }}\n", "claims.NOT_THERE"),
])
def test_a_malformed_glossary_fails_with_one_clear_line(text, message):
    with pytest.raises(glossary.GlossaryError, match=message):
        glossary.parse(text)


def test_the_sites_glossary_defines_every_term_the_issue_lists():
    entries = glossary.load(ROOT / "docs")
    terms = {t.casefold() for e in entries.entries for t in e.terms}
    for word in ("self time", "total time", "kernel", "launch", "launch delay", "kernel span", "GPU busy",
                 "host wait", "queued", "stalled", "occupancy", "CUDA graph", "overhead-bound", "GPU-bound",
                 "compute-bound", "memory-bound", "work class", "ProfilerStep", "Activity Buffer Request"):
        assert word.casefold() in terms, word
    # definitions quote the analyzer's thresholds through its constants, never as pasted numbers
    source = (ROOT / "docs" / glossary.PAGE).read_text()
    for name in ("OVERHEAD_BOUND_MIN_HOST_WAIT_PCT", "GPU_BOUND_MIN_BUSY_PCT", "STALLED_MIN_STALLED_PCT",
                 "KERNEL_WAIT_US"):
        assert f"{{{{ analysis.{name} }}}}" in source, name
        assert f"({getattr(analysis, name):g}" not in source, f"{name}'s value pasted"


def test_how_we_compare_quotes_the_rule_through_the_claims_constants():
    from scripts.series.pages import claims

    entry = next(e for e in glossary.load(ROOT / "docs").entries if e.id == "how-we-compare")
    assert "not enough samples" in entry.terms
    source = (ROOT / "docs" / glossary.PAGE).read_text()
    for name in ("MIN_SAMPLES", "RESAMPLES", "LEVEL_PCT", "SAME_WITHIN_PCT"):
        assert f"{{{{ claims.{name} }}}}" in source, name
    filled = glossary.fill_constants("{{ claims.MIN_SAMPLES }} a side, {{ claims.LEVEL_PCT }}%")
    assert filled == f"{claims.MIN_SAMPLES} a side, {claims.LEVEL_PCT}%"
