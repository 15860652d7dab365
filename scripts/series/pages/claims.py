"""Claims about runs, checked against the data when the page is built.

A sentence that depends on a run ("the warm steps reach the GEMM sooner", "this program is
GPU-bound") is stated through a helper here, with the numbers it rests on:

    ```python exec="true" session="part1"
    from scripts.series.pages.claims import claim, compare, worded
    print(claim("This program is **GPU-bound** ...", verdict == "GPU-bound",
                runs=[cold4k.example.key], numbers={"verdict": verdict}))
    cost = compare(compiled.step_samples("dur_us", skip_first=False),
                   eager.step_samples("dur_us", skip_first=False),
                   what="host time per step", names=("compiled", "eager"))
    print(worded(cost, higher=f"Compiled, a step's host time is {cost.words} eager's ({cost.ratio_text}).",
                 lower="...", same="..."))
    ```

`claim` returns the statement to print and records whether it holds; `worded` picks the page's
wording for the outcome the data gave and records which one it was. The build hook
(scripts/series/mkdocs_glue/ledger.py) reports every claim that does not hold, one message each naming the
page, the claim, its numbers and its runs: a warning, which fails a strict build and only warns
under `mkdocs serve`. The build writes every claim to site/claims.json; `python -m scripts
claims` lists them.

**How we compare** (docs/guide/glossary.md#how-we-compare says it for readers). A timing is a
set of samples (steps of a run, calls, runs of an example). `compare(a, b)` reads the ratio of
their medians, a / b, and how sure the samples make it:

- at least MIN_SAMPLES samples on each side, or the outcome is `too few`, worded "not enough
  samples" and never as a finding;
- a bootstrap interval of the ratio of medians: RESAMPLES times, each side is resampled with
  replacement and the ratio of the two medians taken; the interval is the central LEVEL of those
  ratios (the percentile method). The generator is seeded with SEED for every comparison, so a
  build gives the same outcome every time, and compare(b, a) is the exact mirror of compare(a, b).
  A median moves little when one sample is wild, and so does the interval: one outlier cannot
  overturn the outcome;
- the outcome: `same` when the whole interval lies within SAME_WITHIN of 1 (the two differ by
  less than that, if at all: "about the same"); `lower` or `higher` when the whole interval lies
  below or above 1; `unclear` otherwise (the samples do not settle which is larger, and the page
  must not say "the same").

`size_words(ratio)` says a ratio the way a person does ("about the same as", "about 10% more
than", "about twice", "3.4×"); `Comparison.words` is that of its medians. A sentence carries the
effect in those words (and at most the ratio); the medians, spreads and sample counts go into a
note at the foot of the page (`note`, which `worded` calls for its comparison), marked where the
sentence ends.

**One question, one answer.** Every comparison is registered with the ledger under what it
compares: the runs and the quantity on each side (the spreads' `runs` and `label`), or the
`question` a page names when different runs answer the same question. The same comparison made
twice on the site must come out the same way, or the strict build fails naming both pages.
"""

from __future__ import annotations

import json
import math
import random
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from statistics import median as _median
from statistics import quantiles

from ...tracefacts.model.names import text_lines
from ...tracefacts.model.units import format_us
from ...tracefacts.pictures.markup import Markup, h

MIN_SAMPLES = 10  # per side, for a comparison to be a finding
RESAMPLES = 2000  # bootstrap resamples of each comparison
LEVEL_PCT = 95  # the central share of the resampled ratios that makes the interval
LEVEL = LEVEL_PCT / 100
SEED = 20261206  # every comparison's generator starts here: a build is reproducible
SAME_WITHIN_PCT = 5  # "about the same": the whole interval within 1/1.05 to 1.05
SAME_WITHIN = SAME_WITHIN_PCT / 100
SPREAD_PERCENTILES_FROM = 10  # from this many samples on, a spread is shown as p10–p90 (below: min–max)
OUTCOMES = ("lower", "higher", "same", "unclear", "too few")
FINDINGS = ("lower", "higher", "same")  # what a comparison can answer; the others are no answer
CLAIMS_FORMAT = 1


# --- numbers ------------------------------------------------------------------------------------


def format_value(value: float, unit: str) -> str:
    """The one way a claim's number is written: durations through scripts.series.pages.helpers.format_us,
    shares and ratios with three significant digits, counts as they are."""
    if unit == "us":
        return format_us(value)
    if unit == "%":
        return f"{value:.3g}%"
    if unit == "x":
        return f"{value:.3g}×"
    return f"{value:g}" if isinstance(value, float) else str(value)


@dataclass(frozen=True)
class Value:
    """One number with its unit: "us", "%", "x" (a ratio) or "" (a count)."""

    value: float
    unit: str = ""

    def text(self) -> str:
        return format_value(self.value, self.unit)


def us(value: float) -> Value:
    return Value(value, "us")


def pct(value: float) -> Value:
    return Value(value, "%")


def times(value: float) -> Value:
    return Value(value, "x")


def median(values: Iterable[float]) -> float:
    values = list(values)
    if not values:
        raise ValueError("the median of no samples")
    return _median(values)


@dataclass(frozen=True)
class Spread:
    """Samples of one quantity (`label`, from `runs`), summarized as a median and a spread: the
    whole range (min to max) below SPREAD_PERCENTILES_FROM samples, the 10th to 90th percentile
    from there on. The label and runs say what the samples are: comparisons are registered by them."""

    values: tuple[float, ...]
    unit: str = "us"
    label: str = ""
    runs: tuple[str, ...] = ()

    @property
    def n(self) -> int:
        return len(self.values)

    @property
    def median(self) -> float:
        return median(self.values)

    @property
    def kind(self) -> str:
        return "p10–p90" if self.n >= SPREAD_PERCENTILES_FROM else "min–max"

    @property
    def low(self) -> float:
        if self.n >= SPREAD_PERCENTILES_FROM:
            return quantiles(self.values, n=10, method="inclusive")[0]
        return min(self.values)

    @property
    def high(self) -> float:
        if self.n >= SPREAD_PERCENTILES_FROM:
            return quantiles(self.values, n=10, method="inclusive")[-1]
        return max(self.values)

    def text(self) -> str:
        """'median 12.5 us (11.8 us to 13.1 us, 3 samples)', '40 us (one sample)': for tables
        and notes, not for running prose."""
        if self.n == 0:
            return "no sample"
        if self.n == 1:
            return f"{format_value(self.values[0], self.unit)} (one sample)"
        where = "" if self.kind == "min–max" else "10th to 90th percentile "
        return (f"median {format_value(self.median, self.unit)} ({where}{format_value(self.low, self.unit)} "
                f"to {format_value(self.high, self.unit)}, {self.n} samples)")


def samples(values: Iterable[float], unit: str = "us", label: str = "", runs: Sequence[str] = ()) -> Spread:
    return Spread(tuple(float(v) for v in values), unit, label, tuple(runs))


# --- ratios in words ----------------------------------------------------------------------------


def _rounded_pct(share: float) -> int:
    """A share as a person rounds it: to 5% below a half, to 10% from there."""
    step = 5 if share < 0.475 else 10
    return max(step, int(round(share * 100 / step)) * step)


def size_words(ratio: float) -> str:
    """How much `a` is against `b`, given a / b, as a person says it, to be followed by `b`:
    "about the same as", "about 10% more than", "about twice", "3.4×", "about 10% less than",
    "about half", "1/3.4 of". Within SAME_WITHIN of 1 it is "about the same as"."""
    if not ratio > 0 or math.isinf(ratio):
        raise ValueError(f"a ratio of medians must be positive and finite, not {ratio!r}")
    if 1 / (1 + SAME_WITHIN) <= ratio <= 1 + SAME_WITHIN:
        return "about the same as"
    larger = max(ratio, 1 / ratio)
    if larger < 1.75:
        if ratio > 1:
            return f"about {_rounded_pct(ratio - 1)}% more than"
        return f"about {_rounded_pct(1 - ratio)}% less than"
    if larger < 2.3:
        return "about twice" if ratio > 1 else "about half"
    said = f"{float(f'{larger:.2g}'):g}"  # two significant digits, never in exponent form: 3.4, 61, 600
    return f"{said}×" if ratio > 1 else f"1/{said} of"


def ratio_text(ratio: float) -> str:
    """A ratio of medians as the pages print it: 2.05×, 0.48×."""
    return format_value(ratio, "x")


# --- comparisons --------------------------------------------------------------------------------


def _quotient(top: float, bottom: float) -> float:
    return top / bottom if bottom else (math.inf if top else 1.0)


@lru_cache(maxsize=None)
def bootstrap(statistic: Callable[..., float], *sides: tuple[float, ...]) -> tuple[float, float]:
    """The LEVEL percentile interval of `statistic` of the sides' medians, over RESAMPLES
    resamples of every side (with replacement, each its own size), the generator seeded with
    SEED. `statistic` is a module-level function of as many medians as there are sides."""
    rng = random.Random(SEED)
    found = sorted(statistic(*(_median(rng.choices(side, k=len(side))) for side in sides))
                   for _ in range(RESAMPLES))
    tail = (1 - LEVEL) / 2
    return found[int(math.floor(tail * RESAMPLES))], found[int(math.ceil((1 - tail) * RESAMPLES)) - 1]


def _bootstrap(a: tuple[float, ...], b: tuple[float, ...]) -> tuple[float, float]:
    """The interval of median(a*) / median(b*), the sides in one order for both calls, so that
    compare(b, a) mirrors compare(a, b) exactly."""
    if b < a:
        low, high = bootstrap(_quotient, b, a)
        return (1 / high if high else math.inf), (1 / low if low else math.inf)
    return bootstrap(_quotient, a, b)


@dataclass(frozen=True)
class Comparison:
    """`a` against `b` (see the module's docstring): the outcome (one of OUTCOMES), the ratio of
    their medians a / b and its bootstrap interval (None without samples on both sides)."""

    what: str
    a: Spread
    b: Spread
    names: tuple[str, str]
    outcome: str
    ratio: float | None
    interval: tuple[float, float] | None
    question: str | None = None

    @property
    def decided(self) -> bool:
        """Whether the samples say which is larger."""
        return self.outcome in ("lower", "higher")

    @property
    def finding(self) -> bool:
        """Whether the samples answer the question (larger, smaller or about the same)."""
        return self.outcome in FINDINGS

    @property
    def runs(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(self.a.runs + self.b.runs))

    @property
    def words(self) -> str:
        """The effect in words, to be followed by b: "about twice", "about 10% less than"; a
        decided difference within SAME_WITHIN of 1 is "slightly more than" or "slightly less than"."""
        if not self.ratio or math.isinf(self.ratio):
            return "not comparable with"
        said = size_words(self.ratio)
        if self.outcome == "higher" and said == "about the same as":
            return "slightly more than"
        if self.outcome == "lower" and said == "about the same as":
            return "slightly less than"
        return said

    @property
    def ratio_text(self) -> str:
        return ratio_text(self.ratio) if self.ratio is not None else "no ratio"

    @property
    def shortfall(self) -> str:
        """What a comparison with too few samples says instead of a finding, to end a page's own
        `too_few` wording: "not enough samples to compare (3 and 3; a comparison needs 10 a side)"."""
        return (f"not enough samples to compare ({self.a.n} and {self.b.n}; a comparison needs "
                f"{MIN_SAMPLES} a side)")

    @property
    def effect(self) -> str:
        """The outcome on its own, for a table's cell: "about 15% less (0.84×)", "3.4×", "about
        the same", "not settled (1.2×)", "not enough samples"."""
        if self.outcome == "too few":
            return "not enough samples"
        if self.outcome == "unclear":
            return f"not settled ({self.ratio_text})"
        words = re.sub(r" (than|as|of)$", "", self.words)
        return words + self.aside

    @property
    def aside(self) -> str:
        """The ratio in parentheses, to follow the words, unless they already give it: " (2.05×)"
        after "about twice eager's", "" after "3.4× eager's" or "about the same as eager's"."""
        words = self.words
        if words.startswith("about the same") or words[:1].isdigit() or self.ratio is None:
            return ""
        return f" ({self.ratio_text})"

    def against_ratio(self, reference: float) -> str:
        """Where the ratio a / b lies against a reference ratio (another GPU's, quoted), by the same
        rule as the outcome: "lower" or "higher" when its whole interval is below or above the
        reference, "same" when it lies within SAME_WITHIN of it, "unclear" otherwise, "too few"
        without an interval."""
        if self.interval is None:
            return "too few"
        return outcome_of(self.interval[0] / reference, self.interval[1] / reference)

    @property
    def reason(self) -> str:
        """Why the outcome is what it is, in a few words (for failure messages and notes)."""
        n = f"{self.a.n} samples of {self.names[0]} and {self.b.n} of {self.names[1]}"
        if self.outcome == "too few":
            return f"{n}, where a comparison needs {MIN_SAMPLES} a side"
        low, high = self.interval
        interval = f"the ratio's {LEVEL:.0%} interval is {ratio_text(low)} to {ratio_text(high)}"
        return {"lower": f"{interval}, below 1", "higher": f"{interval}, above 1",
                "same": f"{interval}, within {SAME_WITHIN:.0%} of 1",
                "unclear": f"{interval}, across 1"}[self.outcome]

    def numbers(self) -> dict[str, Spread | Value]:
        found = {f"{self.what}, {self.names[0]}": self.a, f"{self.what}, {self.names[1]}": self.b}
        if self.ratio is not None and not math.isinf(self.ratio):
            found[f"{self.what}, {self.names[0]} / {self.names[1]}"] = times(self.ratio)
        return found

    def note_text(self) -> str:
        """The numbers behind the comparison, for its note: each side's median, spread and count,
        and the ratio with its interval."""
        sides = "; ".join(f"{name}: {spread.text()}" for name, spread in zip(self.names, (self.a, self.b)))
        if self.outcome == "too few" or self.interval is None:
            return (f"{_capital(self.what)}. {sides}. Not enough samples for a comparison: it needs "
                    f"{MIN_SAMPLES} a side. Runs: {', '.join(self.runs) or 'none named'}.")
        low, high = self.interval
        return (f"{_capital(self.what)}. {sides}. Ratio of the medians {self.ratio_text}; "
                f"{LEVEL:.0%} bootstrap interval {ratio_text(low)} to {ratio_text(high)} "
                f"({RESAMPLES:,} resamples). Runs: {', '.join(self.runs) or 'none named'}.")

    def key(self) -> tuple:
        """What the comparison asks, for the one-answer check: its question, or the runs and
        quantity of each side (then `what`, where a side has no label)."""
        if self.question:
            return ("question", self.question)
        sides = tuple((s.runs, s.label or f"{self.what}, {name}") for s, name in zip((self.a, self.b), self.names))
        return ("sides", *sorted(sides))

    def oriented_outcome(self) -> str:
        """The outcome for the key's order of the two sides (lower and higher swap if reversed)."""
        if self.question or self.outcome not in ("lower", "higher"):
            return self.outcome
        first = (self.a.runs, self.a.label or f"{self.what}, {self.names[0]}")
        second = (self.b.runs, self.b.label or f"{self.what}, {self.names[1]}")
        if first <= second:
            return self.outcome
        return "higher" if self.outcome == "lower" else "lower"


def _capital(text: str) -> str:
    return text[:1].upper() + text[1:]


def outcome_of(low: float, high: float) -> str:
    """The outcome of an interval of a ratio, against 1 (see the module's docstring)."""
    if 1 / (1 + SAME_WITHIN) <= low and high <= 1 + SAME_WITHIN:
        return "same"
    if high < 1:
        return "lower"
    if low > 1:
        return "higher"
    return "unclear"


def compare(a: Spread | Sequence[float], b: Spread | Sequence[float], *, what: str,
            names: tuple[str, str] = ("A", "B"), unit: str = "us", question: str | None = None) -> Comparison:
    """`a` against `b` by the ratio of their medians (see the module's docstring). `question`
    names what is asked where different runs answer it on different pages ("host time per step,
    compiled against eager, n = 64"): the site must give it one answer."""
    a = a if isinstance(a, Spread) else samples(a, unit)
    b = b if isinstance(b, Spread) else samples(b, unit)
    ratio = interval = None
    if a.n and b.n:
        ratio = a.median / b.median if b.median else math.inf
    if min(a.n, b.n) < MIN_SAMPLES:
        outcome = "too few"
    else:
        interval = _bootstrap(a.values, b.values)
        outcome = outcome_of(*interval)
    made = Comparison(what, a, b, tuple(names), outcome, ratio, interval, question)
    LEDGER.answer(made)
    return made


# --- claims -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Number:
    """A number a claim rests on, as recorded: its name, its value (None for a word, such as a
    verdict) and unit, its text as the page writes it."""

    name: str
    value: float | None
    unit: str
    text: str
    low: float | None = None
    high: float | None = None
    n: int | None = None


def _number(name: str, value) -> Number:
    if isinstance(value, Spread):
        return Number(name, value.median if value.n else None, value.unit, value.text(),
                      value.low if value.n else None, value.high if value.n else None, value.n)
    if isinstance(value, Value):
        return Number(name, float(value.value), value.unit, value.text())
    if isinstance(value, bool) or isinstance(value, str):
        return Number(name, None, "", str(value))
    if isinstance(value, (int, float)):
        return Number(name, float(value), "", format_value(value, ""))
    raise TypeError(f"claim number {name!r}: a Value, a Spread, a number or a word, not {type(value).__name__}")


@dataclass(frozen=True)
class Claim:
    page: str
    statement: str  # the Markdown the page prints
    runs: tuple[str, ...]
    numbers: tuple[Number, ...]
    holds: bool
    outcome: str | None = None  # for a finding worded from the data: which way it went

    @property
    def status(self) -> str:
        return "holds" if self.holds else "fails"

    @property
    def short(self) -> str:
        """The statement on one line, without Markdown emphasis, cut to a readable length."""
        text = re.sub(r"\s+", " ", re.sub(r"<[^>]+>|\*\*|`", "", self.statement)).strip()
        return text if len(text) <= 160 else text[:157] + "..."

    def numbers_text(self) -> str:
        return "; ".join(f"{n.name} = {n.text}" for n in self.numbers) or "no numbers"

    def message(self) -> str:
        """One line naming the page, the claim, its numbers and its runs."""
        runs = ", ".join(self.runs) or "no run named"
        said = f" (the data says {self.outcome})" if self.outcome else ""
        return (f"{self.page or '(no page)'}: claim does not hold{said}: \"{self.short}\" "
                f"[{self.numbers_text()}] runs: {runs}. Reword it or refresh the run(s).")

    def to_json(self) -> dict:
        return {"page": self.page, "statement": self.short, "runs": list(self.runs),
                "numbers": [vars(n) for n in self.numbers], "status": self.status, "outcome": self.outcome}

    @classmethod
    def from_json(cls, data: dict) -> Claim:
        """A claim as to_json wrote it; TypeError or KeyError for anything else."""
        if not isinstance(data, dict) or not all(isinstance(data[k], list) for k in ("runs", "numbers")):
            raise TypeError("a claim is an object whose runs and numbers are lists")
        return cls(str(data["page"]), str(data["statement"]), tuple(map(str, data["runs"])),
                   tuple(Number(**n) for n in data["numbers"]), data["status"] == "holds",
                   None if data.get("outcome") is None else str(data["outcome"]))


@dataclass(frozen=True)
class Answer:
    """What one page's comparison answered (Ledger.answer)."""

    page: str
    what: str
    names: tuple[str, str]
    outcome: str  # in the order of the comparison's key
    runs: tuple[str, ...]


@dataclass
class Ledger:
    """What the pages of one build relied on: their claims, the answers of their comparisons,
    the notes under each page, and the runs whose data each page read (`used`) or offered for
    download and Perfetto (`linked`)."""

    page: str = ""
    claims: list[Claim] = field(default_factory=list)
    answers: dict[tuple, list[Answer]] = field(default_factory=dict)
    notes: dict[str, list[str]] = field(default_factory=dict)  # page -> note texts, in order
    note_refs: dict[str, int] = field(default_factory=dict)  # page -> markers made
    used: dict[str, set[str]] = field(default_factory=dict)
    linked: dict[str, set[str]] = field(default_factory=dict)
    untraced: set[str] = field(default_factory=set)  # runs with no trace to link (it could not run)
    site_problems: list[str] = field(default_factory=list)  # found once the whole site is built

    def clear(self) -> None:
        self.page = ""
        self.claims.clear()
        self.answers.clear()
        self.notes.clear()
        self.note_refs.clear()
        self.used.clear()
        self.linked.clear()
        self.untraced.clear()
        self.site_problems.clear()

    def record(self, claim_: Claim) -> None:
        # Material renders a post again for the views that list it: one claim, recorded once.
        if not any((c.page, c.statement) == (claim_.page, claim_.statement) for c in self.claims):
            self.claims.append(claim_)

    def answer(self, comparison: Comparison) -> None:
        """Register what a comparison of the current page answered, under what it compares."""
        if not self.page:
            return
        made = Answer(self.page, comparison.what, comparison.names, comparison.oriented_outcome(), comparison.runs)
        found = self.answers.setdefault(comparison.key(), [])
        if made not in found:
            found.append(made)

    def contradictions(self) -> list[str]:
        """One message per comparison that two pages (or one page twice) answer differently:
        different findings (lower, higher, about the same) for one key. "Not enough samples" and
        "unclear" answer nothing, so they contradict nothing."""
        messages = []
        for key, found in self.answers.items():
            findings = [a for a in found if a.outcome in FINDINGS]
            outcomes = {a.outcome for a in findings}
            if len(outcomes) < 2:
                continue
            asked = key[1] if key[0] == "question" else f"{findings[0].what} ({', '.join(findings[0].runs)})"
            said = "; ".join(f"{a.page} says {a.outcome} ({a.names[0]} against {a.names[1]})"
                             for a in sorted(findings, key=lambda a: a.page))
            messages.append(f"one question, two answers: {asked}: {said}. Make the pages ask it of the same "
                            f"samples, or word them from one comparison.")
        return messages

    def note(self, text: str) -> Markup:
        """A note under the current page (the same text once), and the marker that points to it."""
        notes = self.notes.setdefault(self.page, [])
        if text not in notes:
            notes.append(text)
        label = note_label(notes.index(text) + 1)
        made = self.note_refs[self.page] = self.note_refs.get(self.page, 0) + 1
        return h("sup", {"class": "numbers-ref", "id": f"numbers-ref-{made}"},
                 h("a", {"class": "footnote-ref", "href": f"#numbers-{label}"}, label))

    def start_page(self, page: str) -> None:
        """A page's rendering begins: its notes are made anew."""
        self.page = page
        self.notes.pop(page, None)
        self.note_refs.pop(page, None)

    def notes_html(self, page: str) -> Markup:
        """The notes of a page, for its foot: the numbers behind its comparisons."""
        notes = self.notes.get(page)
        if not notes:
            return Markup("")
        items = [h("li", {"id": f"numbers-{note_label(n)}"}, h("p", None, text))
                 for n, text in enumerate(notes, 1)]
        return h("div", {"class": "footnote numbers-notes"},
                 h("hr"), h("p", {"class": "numbers-notes__title"}, "The numbers behind the comparisons"),
                 h("ol", {"type": "a"}, items))

    def use(self, key: str, traced: bool = True) -> None:
        self.used.setdefault(self.page, set()).add(key)
        if not traced:
            self.untraced.add(key)

    def link(self, key: str) -> None:
        self.linked.setdefault(self.page, set()).add(key)

    def failing(self, page: str | None = None) -> list[Claim]:
        return [c for c in self.claims if not c.holds and (page is None or c.page == page)]

    def unreachable(self, page: str) -> list[str]:
        """Runs whose data the page read without showing their download and Perfetto buttons."""
        return sorted(self.used.get(page, set()) - self.linked.get(page, set()) - self.untraced)

    def page_problems(self, page: str) -> list[str]:
        """One message per failing claim and per unreachable run of the page."""
        return ([c.message() for c in self.failing(page)]
                + [unreachable_message(page, key) for key in self.unreachable(page)])

    def to_json(self) -> dict:
        pages = sorted(set(self.used) | set(self.linked))
        return {
            "format": CLAIMS_FORMAT,
            "claims": [c.to_json() for c in sorted(self.claims, key=lambda c: (c.page, c.statement))],
            "runs": {p: {"used": sorted(self.used.get(p, ())), "linked": sorted(self.linked.get(p, ()))}
                     for p in pages},
            # what is wrong besides the claims: unreachable runs, runs on no page, two answers
            "problems": [unreachable_message(p, key) for p in pages for key in self.unreachable(p)]
                        + self.site_problems,
        }


def note_label(n: int) -> str:
    """The n-th note's marker, as an HTML list of type "a" numbers it: a, b, ..., z, aa, ab, ..."""
    label = ""
    while n:
        n, rest = divmod(n - 1, 26)
        label = chr(ord("a") + rest) + label
    return label


def unreachable_message(page: str, key: str) -> str:
    return (f"{page or '(no page)'}: uses the numbers of {key} but shows no download or Perfetto "
            f"button for it: print example({key!r}).links() on that page")


LEDGER = Ledger()

FAILS_MARK = "**Claim not supported by this run's data:** "


def _record(statement: str, holds: bool, runs: Iterable[str], numbers: Mapping | None,
            outcome: str | None = None) -> str:
    numbers = dict(numbers or {})
    made = Claim(LEDGER.page, statement, tuple(dict.fromkeys(runs)),
                 tuple(_number(name, value) for name, value in numbers.items()), bool(holds), outcome)
    LEDGER.record(made)
    return statement if made.holds else FAILS_MARK + statement


def claim(statement: str, holds: bool, *, runs: Iterable[str], numbers: Mapping | None = None) -> str:
    """A statement about runs that `holds` decides; returns the Markdown to print. A statement
    that does not hold fails the strict build (and is marked on the page under serve)."""
    return _record(statement, holds, runs, numbers)


def note(*items: Comparison | Spread | str) -> Markup:
    """The marker of a note at the foot of the current page holding these numbers: a comparison's
    medians, spreads, counts and ratio, a spread's median, spread and count, or a text. Print
    the marker where the sentence that rests on them ends."""
    parts = []
    for item in items:
        if isinstance(item, Comparison):
            parts.append(item.note_text())
        elif isinstance(item, Spread):
            runs = f" ({', '.join(item.runs)})" if item.runs else ""
            parts.append(f"{item.label or 'Samples'}{runs}: {item.text()}.")
        else:
            parts.append(str(item))
    return LEDGER.note(" ".join(parts))


def median_of(spread: Spread) -> str:
    """"a median of 95.1 ms" and the marker of the note that holds the spread and the count: a
    measured quantity in running prose."""
    return f"a median of {format_value(spread.median, spread.unit)}" + note(spread)


def worded_from(outcome: str, wordings: Mapping[str, str], *, runs: Iterable[str],
                numbers: Mapping | None = None) -> str:
    """A finding that can go more than one way: the page gives the wording of each outcome, the
    data gives the outcome. An outcome the page has no wording for is a claim that fails."""
    if outcome in wordings:
        return _record(wordings[outcome], True, runs, numbers, outcome)
    expected = " or ".join(wordings)
    return _record(f"(the page expects {expected} here; the data says {outcome})", False, runs, numbers, outcome)


def _said(c: Comparison, outcome: str) -> str:
    """An outcome of `c` in words, for a failure message."""
    first, second = c.names
    return {"lower": f"{first}'s {c.what} below {second}'s",
            "higher": f"{first}'s {c.what} above {second}'s",
            "same": f"{first}'s {c.what} about the same as {second}'s",
            "unclear": f"{first}'s {c.what} against {second}'s not settled by the samples",
            "too few": "not enough samples"}[outcome]


def worded(comparison: Comparison, *, lower: str | None = None, higher: str | None = None,
           same: str | None = None, unclear: str | None = None, too_few: str | None = None,
           numbers: Mapping | None = None) -> str:
    """`worded_from` for a comparison: its samples and ratio are the claim's numbers, its runs its
    runs, and the statement ends with the marker of the note that holds its numbers.

    With fewer than MIN_SAMPLES a side the statement says so ("not enough samples"): a page may
    shorten that sentence (`too_few`, in a table's cell), never word it as a finding. Where the
    samples do not settle it and the page has no `unclear` wording, the statement says that. An outcome among lower, higher and same that the page has
    no wording for fails, the message saying what the page expected and what the data says."""
    c = comparison
    first, second = c.names
    wordings = {k: v for k, v in (("lower", lower), ("higher", higher), ("same", same), ("unclear", unclear))
                if v is not None}
    wordings.setdefault("unclear", f"{_capital(first)} against {second}, {c.what}: these samples do not "
                                   f"settle which is larger ({c.ratio_text} at the median).")
    if too_few is not None and "not enough samples" not in too_few:
        raise ValueError(f"worded(too_few={too_few!r}): the wording must say \"not enough samples\"")
    wordings["too few"] = too_few or f"{_capital(first)} against {second}, {c.what}: {c.shortfall}."
    numbers = {**c.numbers(), **(numbers or {})}
    if c.outcome in wordings:
        statement = _record(wordings[c.outcome], True, c.runs, numbers, c.outcome)
    else:
        expected = " or ".join(_said(c, o) for o in FINDINGS if o in wordings) or "nothing"
        statement = _record(f"(the page expects {expected}; the data says {_said(c, c.outcome)}, "
                            f"{c.ratio_text}: {c.reason})", False, c.runs, numbers, c.outcome)
    return statement + note(c)


# --- listing ------------------------------------------------------------------------------------


def read_listing(path) -> tuple[list[Claim], list[str]]:
    """The claims and the problems a build wrote to site/claims.json; ValueError, saying what
    is wrong, for a file of another shape (JSON of other types, a field missing)."""
    doc = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(doc, dict) or doc.get("format") != CLAIMS_FORMAT:
        raise ValueError(f"not a claims listing of format {CLAIMS_FORMAT}")
    claims, problems = doc.get("claims"), doc.get("problems", [])
    if not isinstance(claims, list) or not isinstance(problems, list):
        raise ValueError("its claims and problems are not lists")
    found = []
    for number, data in enumerate(claims, 1):
        try:
            found.append(Claim.from_json(data))
        except (TypeError, KeyError):
            raise ValueError(f"claim {number} is not as a build writes it (a field missing, or "
                             "of another type)") from None
    return found, [str(p) for p in problems]


def listing_text(claims: list[Claim], problems: list[str]) -> str:
    """Page / claim / numbers / runs / status, one block per claim, problems last; each line
    printable (a page or a problem read from a file cannot make lines of its own)."""
    lines = []
    for c in claims:
        lines.append(f"{c.status:5}  {c.page}: {c.short}")
        if c.outcome:
            lines.append(f"       outcome: {c.outcome}")
        lines.append(f"       numbers: {c.numbers_text()}")
        lines.append(f"       runs: {', '.join(c.runs) or '-'}")
    failing = sum(not c.holds for c in claims)
    lines.append(f"{len(claims)} claim(s), {failing} failing")
    lines += [f"problem: {p}" for p in problems]
    return text_lines(lines)
