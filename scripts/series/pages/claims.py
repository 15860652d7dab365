"""Claims about runs, checked against the data when the page is built.

A sentence that depends on a run ("the warm steps reach the GEMM sooner", "this program is
compute-bound") is stated through a helper here, with the numbers it rests on:

    ```python exec="true" session="part1"
    from scripts.series.pages.claims import claim, compare, worded
    print(claim("This program is **compute-bound** ...", verdict == "compute-bound",
                runs=[cold4k.example.key], numbers={"verdict": verdict}))
    soon = compare(warm.op_samples("aten::matmul", "first_us", skip_first=False),
                   cold.op_samples("aten::matmul", "first_us", skip_first=False),
                   what="time from step start to aten::matmul", names=("warm", "cold"))
    print(worded(soon, lower="...", higher="...", indistinguishable="..."))
    ```

`claim` returns the statement to print and records whether it holds; `worded` picks the page's
wording for the outcome the data gave and records which one it was. The build hook
(scripts/series/mkdocs_glue/ledger.py) reports every claim that does not hold, one message each naming the
page, the claim, its numbers and its runs: a warning, which fails a strict build and only warns
under `mkdocs serve`. The build writes every claim to site/claims.json; `python -m scripts
claims` lists them.

**Spread.** A timing is a set of samples (steps of a run, runs of an example), shown as its median
and its spread: the whole range (min to max) below SPREAD_PERCENTILES_FROM samples, where a
percentile of a few values means little, and the 10th to 90th percentile from there on, so that
one outlier in many does not hide a real difference. `compare(a, b)` says `lower` or `higher`
only when the two spreads do not overlap, and only with at least MIN_SAMPLES samples on each side;
anything else is `indistinguishable` (with the reason: overlapping spreads, or not enough
samples). One sample never decides.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from statistics import median as _median
from statistics import quantiles

from ...tracefacts.model.names import text_lines
from ...tracefacts.model.units import format_us

MIN_SAMPLES = 3  # per side, for a comparison to be decided
SPREAD_PERCENTILES_FROM = 10  # from this many samples on, the spread is p10–p90 (below: min–max)
OUTCOMES = ("lower", "higher", "indistinguishable")
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
    """Samples of one quantity (from `runs`), summarized as a median and a spread (see the
    module's docstring for which spread)."""

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
        """'median 12.5 us (11.8 us to 13.1 us, 3 samples)', '40 us (one sample)'."""
        if self.n == 0:
            return "no sample"
        if self.n == 1:
            return f"{format_value(self.values[0], self.unit)} (one sample)"
        where = "" if self.kind == "min–max" else "10th to 90th percentile "
        return (f"median {format_value(self.median, self.unit)} ({where}{format_value(self.low, self.unit)} "
                f"to {format_value(self.high, self.unit)}, {self.n} samples)")


def samples(values: Iterable[float], unit: str = "us", label: str = "", runs: Sequence[str] = ()) -> Spread:
    return Spread(tuple(float(v) for v in values), unit, label, tuple(runs))


# --- comparisons --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Comparison:
    """`a` against `b`: `lower`, `higher`, or `indistinguishable` (with the reason)."""

    what: str
    a: Spread
    b: Spread
    names: tuple[str, str]
    outcome: str
    reason: str

    @property
    def decided(self) -> bool:
        return self.outcome != "indistinguishable"

    @property
    def runs(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(self.a.runs + self.b.runs))

    def numbers(self) -> dict[str, Spread]:
        return {f"{self.what}, {self.names[0]}": self.a, f"{self.what}, {self.names[1]}": self.b}


def compare(a: Spread | Sequence[float], b: Spread | Sequence[float], *, what: str,
            names: tuple[str, str] = ("A", "B"), unit: str = "us") -> Comparison:
    """Whether `a` is lower or higher than `b`, decided only when their spreads separate."""
    a = a if isinstance(a, Spread) else samples(a, unit)
    b = b if isinstance(b, Spread) else samples(b, unit)
    if min(a.n, b.n) < MIN_SAMPLES:
        outcome = "indistinguishable"
        reason = (f"{a.n} sample{'s' * (a.n != 1)} of the {names[0]} and {b.n} of the {names[1]}, "
                  f"where a comparison needs {MIN_SAMPLES} of each")
    elif a.high < b.low:
        outcome, reason = "lower", f"the {a.kind} spreads do not overlap"
    elif a.low > b.high:
        outcome, reason = "higher", f"the {a.kind} spreads do not overlap"
    else:
        outcome, reason = "indistinguishable", "their spreads overlap"
    return Comparison(what, a, b, names, outcome, reason)


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


@dataclass
class Ledger:
    """What the pages of one build relied on: their claims, and the runs whose data each page
    read (`used`) or offered for download and Perfetto (`linked`)."""

    page: str = ""
    claims: list[Claim] = field(default_factory=list)
    used: dict[str, set[str]] = field(default_factory=dict)
    linked: dict[str, set[str]] = field(default_factory=dict)
    untraced: set[str] = field(default_factory=set)  # runs with no trace to link (it could not run)
    site_problems: list[str] = field(default_factory=list)  # found once the whole site is built

    def clear(self) -> None:
        self.page = ""
        self.claims.clear()
        self.used.clear()
        self.linked.clear()
        self.untraced.clear()
        self.site_problems.clear()

    def record(self, claim_: Claim) -> None:
        # Material renders a post again for the views that list it: one claim, recorded once.
        if not any((c.page, c.statement) == (claim_.page, claim_.statement) for c in self.claims):
            self.claims.append(claim_)

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
            # what is wrong besides the claims: unreachable runs, runs on no page
            "problems": [unreachable_message(p, key) for p in pages for key in self.unreachable(p)]
                        + self.site_problems,
        }


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


def worded_from(outcome: str, wordings: Mapping[str, str], *, runs: Iterable[str],
                numbers: Mapping | None = None) -> str:
    """A finding that can go more than one way: the page gives the wording of each outcome, the
    data gives the outcome. An outcome the page has no wording for is a claim that fails."""
    if outcome in wordings:
        return _record(wordings[outcome], True, runs, numbers, outcome)
    expected = " or ".join(wordings)
    return _record(f"(the page expects {expected} here)", False, runs, numbers, outcome)


def worded(comparison: Comparison, *, lower: str | None = None, higher: str | None = None,
           indistinguishable: str | None = None, numbers: Mapping | None = None) -> str:
    """`worded_from` for a comparison: its samples are the claim's numbers, its runs its runs."""
    wordings = {k: v for k, v in (("lower", lower), ("higher", higher),
                                  ("indistinguishable", indistinguishable)) if v is not None}
    return worded_from(comparison.outcome, wordings, runs=comparison.runs,
                       numbers={**comparison.numbers(), **(numbers or {})})


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
