"""How the pages compare two timings (scripts/series/pages/claims.py): the ratio of the medians and
its bootstrap interval, at least MIN_SAMPLES samples a side, outcomes worded by the size of the
effect, the numbers in a note at the foot of the page, and one answer per question on the site."""

from __future__ import annotations

import random

import pytest

from scripts.series.pages import claims
from scripts.series.pages.claims import (LEDGER, MIN_SAMPLES, compare, note, samples, size_words, worded,
                                         worded_from)
from tests.test_claims import build, tiny_project


@pytest.fixture(autouse=True)
def fresh_ledger():
    LEDGER.clear()
    LEDGER.page = "docs/blog/posts/test.md"
    yield
    LEDGER.clear()


def noisy(center: float, n: int, spread: float = 0.02, seed: int = 1) -> list[float]:
    """n samples around `center`, within ±spread of it (planted, reproducible)."""
    rng = random.Random(seed)
    return [center * (1 + rng.uniform(-spread, spread)) for _ in range(n)]


# --- the rule -------------------------------------------------------------------------------------


@pytest.mark.parametrize("n", [MIN_SAMPLES, 12, 30])
def test_twice_the_median_with_tight_spreads_is_higher_never_the_same(n):
    result = compare(noisy(200.0, n, seed=2), noisy(100.0, n, seed=3), what="host time per step",
                     names=("compiled", "eager"))
    assert result.outcome == "higher" and result.decided
    low, high = result.interval
    assert 1.9 < low <= result.ratio <= high < 2.1
    assert result.words == "about twice"
    said = worded(result, higher="compiling doubles it", same="they cost about the same",
                  unclear="the steps do not settle it")
    assert said.startswith("compiling doubles it")


@pytest.mark.parametrize("spread", [0.2, 0.45])
def test_twice_the_median_is_never_the_same_even_when_the_spreads_overlap(spread):
    """Part 1's case: medians x2, ranges that overlap through a few wide steps. The old rule (no
    overlap of min-max) said "cannot be told apart"; the ratio's interval never says "same"."""
    a = noisy(170.0, 12, spread=spread, seed=4) + [413.0]
    b = noisy(84.0, 12, spread=spread, seed=5) + [177.0]  # reaches into a's range
    assert min(a) < max(b)
    result = compare(a, b, what="t")
    assert result.outcome == "higher" and result.ratio > 1.4


@pytest.mark.parametrize("outlier", [1e4, 1e-3])
def test_one_outlier_does_not_flip_the_outcome(outlier):
    fast, slow = noisy(10.0, 12, seed=6), noisy(20.0, 12, seed=7)
    assert compare(fast, slow, what="t").outcome == "lower"
    assert compare(fast + [outlier], slow, what="t").outcome == "lower"
    assert compare(fast, slow + [outlier], what="t").outcome == "lower"
    same_a, same_b = noisy(50.0, 15, 0.005, seed=8), noisy(50.0, 15, 0.005, seed=9)
    assert compare(same_a, same_b, what="t").outcome == "same"
    assert compare(same_a + [outlier], same_b, what="t").outcome == "same"


def test_about_the_same_only_when_the_whole_interval_is_within_the_band():
    close = compare(noisy(100.0, 20, 0.01, seed=10), noisy(101.0, 20, 0.01, seed=11), what="t")
    assert close.outcome == "same" and close.words == "about the same as"
    low, high = close.interval
    assert 1 / (1 + claims.SAME_WITHIN) <= low and high <= 1 + claims.SAME_WITHIN
    # a wide spread around equal medians: the samples do not settle it, and the page may not say "same"
    wide = compare(noisy(100.0, 12, 0.6, seed=12), noisy(100.0, 12, 0.6, seed=13), what="t")
    assert wide.outcome == "unclear" and not wide.finding
    assert worded(wide, same="about the same").startswith(
        "A against B, t: these samples do not settle which is larger")


@pytest.mark.parametrize("ratio, outcome, said", [
    (1.03, "same", "about the same as"),  # the whole interval within 5% of 1
    (1.045, "higher", "slightly more than"),  # certainly above 1, partly beyond 5%: a decided, small difference
    (1.06, "higher", "about 5% more than"),
])
def test_small_differences_are_worded_by_their_size(ratio, outcome, said):
    result = compare(noisy(100.0 * ratio, 30, 0.01, seed=14), noisy(100.0, 30, 0.01, seed=15), what="t")
    assert (result.outcome, result.words) == (outcome, said)


@pytest.mark.parametrize("n", range(1, MIN_SAMPLES))
def test_fewer_than_min_samples_a_side_is_not_enough_samples_however_far_apart(n):
    result = compare([1.0] * n, [1e6] * 20, what="host time per step", names=("warm", "cold"))
    assert result.outcome == "too few" and not result.decided and result.interval is None
    assert compare([1e6] * 20, [1.0] * n, what="t").outcome == "too few"
    said = worded(result, lower="warm is faster", higher="cold is faster", same="about the same")
    assert "not enough samples" in said and "faster" not in said and "same" not in said
    assert f"{n} and 20" in said and f"needs {MIN_SAMPLES} a side" in said
    (made,) = LEDGER.claims
    assert made.holds and made.outcome == "too few"


def test_a_page_may_shorten_not_enough_samples_but_not_word_it_as_a_finding():
    result = compare([1.0] * 3, [2.0] * 3, what="t")
    assert worded(result, lower="faster", too_few="not enough samples").startswith("not enough samples<sup")
    with pytest.raises(ValueError, match="not enough samples"):
        worded(result, lower="faster", too_few="faster, probably")


def test_the_outcome_is_reproducible_and_mirrored():
    a, b = noisy(10.0, 11, 0.3, seed=16), noisy(12.0, 13, 0.3, seed=17)
    first, again, mirrored = compare(a, b, what="t"), compare(list(a), list(b), what="t"), compare(b, a, what="t")
    assert (first.outcome, first.interval) == (again.outcome, again.interval)
    assert mirrored.interval == pytest.approx((1 / first.interval[1], 1 / first.interval[0]))
    assert {first.outcome, mirrored.outcome} in ({"lower", "higher"}, {"unclear"}, {"same"})


def test_against_a_reference_ratio():
    result = compare(noisy(370.0, 12, seed=18), noisy(100.0, 12, seed=19), what="t")
    assert result.against_ratio(2.0) == "higher" and result.against_ratio(7.0) == "lower"
    assert result.against_ratio(3.7) == "same"
    assert compare([1.0] * 3, [2.0] * 3, what="t").against_ratio(2.0) == "too few"


# --- words by size -------------------------------------------------------------------------------


@pytest.mark.parametrize("ratio, said", [
    (1.0, "about the same as"), (1.04, "about the same as"), (1 / 1.04, "about the same as"),
    (1.07, "about 5% more than"), (1.104, "about 10% more than"), (1.24, "about 25% more than"),
    (1.6, "about 60% more than"), (1.72, "about 70% more than"),
    (1.8, "about twice"), (2.12, "about twice"), (2.3, "2.3×"), (3.41, "3.4×"), (61.4, "61×"),
    (0.9, "about 10% less than"), (0.6, "about 40% less than"), (0.5, "about half"),
    (0.45, "about half"), (0.35, "1/2.9 of"), (0.0163, "1/61 of"), (604.0, "600×"), (1 / 220, "1/220 of"),
])
def test_size_words(ratio, said):
    assert size_words(ratio) == said


@pytest.mark.parametrize("bad", [0.0, -1.0, float("inf"), float("nan")])
def test_size_words_refuses_what_is_not_a_ratio(bad):
    with pytest.raises(ValueError):
        size_words(bad)


def test_effect_and_aside_for_a_table_cell():
    twice = compare(noisy(200.0, 12, seed=20), noisy(100.0, 12, seed=21), what="t")
    assert twice.effect == f"about twice ({twice.ratio_text})" and twice.aside == f" ({twice.ratio_text})"
    big = compare(noisy(340.0, 12, seed=22), noisy(100.0, 12, seed=23), what="t")
    assert big.effect == "3.4×" and big.aside == ""  # the words give the ratio already
    assert compare([1.0] * 3, [2.0] * 3, what="t").effect == "not enough samples"


# --- notes ----------------------------------------------------------------------------------------


def test_the_numbers_go_into_a_note_and_the_sentence_gets_its_marker():
    result = compare(noisy(200.0, 12, seed=24), noisy(100.0, 12, seed=25), what="host time per step",
                     names=("compiled", "eager"))
    said = worded(result, higher=f"compiling costs the host {result.words} eager's{result.aside}")
    assert "median" not in said.split("<sup")[0] and "samples" not in said  # no spreads in the sentence
    again = worded(result, higher=f"compiling costs the host {result.words} eager's{result.aside}")
    spread_marker = note(samples([1.0, 2.0], label="launch delay", runs=["x/y"]))
    assert 'href="#numbers-a"' in said and 'href="#numbers-a"' in again and 'href="#numbers-b"' in spread_marker
    html = LEDGER.notes_html("docs/blog/posts/test.md")
    assert html.count("<li") == 2 and 'id="numbers-a"' in html and 'class="footnote numbers-notes"' in html
    assert "Host time per step. compiled: median" in html and "; eager: median" in html
    assert "12 samples" in html and "bootstrap interval" in html and "launch delay (x/y): median 1.5 us" in html
    assert LEDGER.notes_html("docs/other.md") == ""


def test_a_note_escapes_what_it_holds():
    marker = note("<script>alert(1)</script> & more")
    assert "<script>" not in LEDGER.notes_html("docs/blog/posts/test.md") and "&lt;script&gt;" in LEDGER.notes_html(
        "docs/blog/posts/test.md")
    assert marker.startswith("<sup")


def test_note_labels_run_like_an_html_list_of_type_a():
    assert [claims.note_label(n) for n in (1, 2, 26, 27, 28, 52, 53)] == ["a", "b", "z", "aa", "ab", "az", "ba"]


# --- one question, one answer ---------------------------------------------------------------------


def test_the_same_comparison_on_two_pages_must_agree():
    a, b = noisy(10.0, 12, seed=26), noisy(20.0, 12, seed=27)
    for page in ("docs/one.md", "docs/two.md"):
        LEDGER.page = page
        compare(samples(a, label="host time", runs=["r/a"]), samples(b, label="host time", runs=["r/b"]), what="t")
    LEDGER.page = "docs/three.md"  # asked the other way round: the mirror of the same answer
    compare(samples(b, label="host time", runs=["r/b"]), samples(a, label="host time", runs=["r/a"]), what="t")
    assert LEDGER.contradictions() == []


def test_two_pages_that_answer_one_question_differently_are_named_both():
    LEDGER.page = "docs/blog/posts/part-1.md"
    compare(noisy(20.0, 12, seed=28), noisy(10.0, 12, seed=29), what="host time per step at n = 64",
            names=("compiled", "eager"), question="compiling's host cost at n = 64")
    LEDGER.page = "docs/blog/posts/sweep.md"
    compare(noisy(10.0, 12, 0.01, seed=30), noisy(10.0, 12, 0.01, seed=31), what="host per step",
            names=("compile", "eager"), question="compiling's host cost at n = 64")
    LEDGER.page = "docs/blog/posts/part-2.md"  # too few samples: no answer, no contradiction
    compare([1.0] * 3, [5.0] * 3, what="t", question="compiling's host cost at n = 64")
    (message,) = LEDGER.contradictions()
    assert "compiling's host cost at n = 64" in message and "\n" not in message
    assert "docs/blog/posts/part-1.md says higher" in message and "docs/blog/posts/sweep.md says same" in message
    assert "part-2.md" not in message


TWO_PAGES = '''```python exec="true"
from scripts.series.pages.claims import compare, samples, worded
c = compare(samples({a}, runs=["r/x"], label="host time"), samples({b}, runs=["r/y"], label="host time"),
            what="host time per step", names=("compiled", "eager"), question="compiling's host cost")
print(worded(c, lower="cheaper.", higher="dearer.", same="the same."))
```
'''


def test_a_planted_contradiction_across_two_pages_fails_the_strict_build_naming_both(tmp_path):
    project = tiny_project(tmp_path, TWO_PAGES.format(a=noisy(20.0, 12, seed=32), b=noisy(10.0, 12, seed=33)))
    (project / "docs" / "other.md").write_text(TWO_PAGES.format(a=noisy(10.0, 12, seed=34), b=noisy(20.0, 12, seed=35)))
    done = build(project, "--strict", "--quiet")
    assert done.returncode != 0
    (line,) = [line for line in done.stderr.splitlines() if "one question, two answers" in line]
    assert "docs/index.md says higher" in line and "docs/other.md says lower" in line
    assert "Traceback" not in done.stderr
    # agreeing pages build, each with its note at its foot
    project = tiny_project(tmp_path / "ok", TWO_PAGES.format(a=noisy(20.0, 12, seed=32), b=noisy(10.0, 12, seed=33)))
    (project / "docs" / "other.md").write_text(TWO_PAGES.format(a=noisy(21.0, 12, seed=36), b=noisy(10.0, 12, seed=37)))
    done = build(project, "--strict")
    assert done.returncode == 0, done.stderr
    html = (project / "site" / "index.html").read_text()
    assert 'class="footnote-ref" href="#numbers-a"' in html and 'id="numbers-a"' in html
    assert "bootstrap interval" in html.split('id="numbers-a"')[1]


def test_worded_from_says_what_the_page_expected():
    worded_from("larger", {"same": "x", "smaller": "y"}, runs=["r/x"])
    (made,) = LEDGER.failing()
    assert "the page expects same or smaller here; the data says larger" in made.message()
