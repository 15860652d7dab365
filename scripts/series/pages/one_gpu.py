"""One GPU per page and per statement: nothing the site says rests on runs made on different GPUs.

A page that sets two runs side by side ("our kernel against Inductor's", "this decode against
the roof measured in Part 5") measures the code only if the same GPU ran both; across GPUs it
measures the GPUs. And every post says which GPU its runs were made on ("Ours is an NVIDIA
H200"), naming one. Runs of two GPUs meet without anyone deciding it when some examples are
refreshed on one machine and the rest were made on another (`make refresh ONLY=...` on whichever
GPU came), or when `python -m scripts rebuild-check` lays another GPU's runs over some examples
only. The strict build then fails, naming the page or the statement and each run's GPU, and says
what to refresh. The runs' metadata (`environment.gpu`) says which GPU made each; a run with no
GPU recorded, or not in the catalog, decides nothing.

What is checked: the runs each page reads; every claim of the ledger with its runs; every
comparison registered with it (`compare`, also where no claim words it: a table's cell); and
every question that several pages ask of different runs (the one-answer check would otherwise
compare answers from two GPUs).

`rebuild-check` mixes GPUs on purpose, example by example, to hold the claims to another GPU's
runs: it sets PAGES_MAY_MIX in the build's environment, and a page that reads runs of both GPUs
is then listed, not refused (each run's caption names its GPU; no claim compares across them).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from ..runs import catalog, freeze
from ..runs.meta import MetaError

PAGES_MAY_MIX = "SITE_PAGES_MAY_MIX_GPUS"  # "1": a page may read runs of several GPUs (rebuild-check)
PAGE = "the page"  # what a Mixed names when it is a page's runs, not one statement's


def gpu_of(key: str) -> str | None:
    """The GPU that made a frozen run, from its metadata; None where none is recorded or readable
    (the freeze check has named an unreadable one already)."""
    try:
        return freeze.read_meta(catalog.get(key)).environment.gpu
    except (KeyError, MetaError):
        return None


@dataclass(frozen=True)
class Mixed:
    """A statement (`what`, on `page`) whose runs were made on more than one GPU."""

    page: str
    what: str
    gpus: tuple[tuple[str, str], ...]  # (run, GPU) for each run with a GPU recorded
    why: str = "so it would compare the GPUs, not the code"

    @property
    def runs(self) -> tuple[str, ...]:
        return tuple(run for run, _ in self.gpus)

    @property
    def whole_page(self) -> bool:
        return self.what == PAGE

    def message(self, usual: str | None = None) -> str:
        """One line: the statement, each run's GPU, and what to refresh (the runs not made on
        `usual`, the GPU most of the site's runs were made on, when there is one)."""
        by_gpu: dict[str, list[str]] = {}
        for run, gpu in self.gpus:
            by_gpu.setdefault(gpu, []).append(run)
        made = "; ".join(f"{gpu}: {', '.join(runs)}" for gpu, runs in by_gpu.items())
        others = [run for run, gpu in self.gpus if gpu != usual] if usual else list(self.runs)
        keys = " ".join(others)
        where = f" on the {usual} that made the others" if usual else " on one GPU"
        return (f"{self.page or '(no page)'}: {self.what} rests on runs made on different GPUs ({made}), "
                f"{self.why}: refresh{where} with make refresh ONLY=\"{keys}\"")

    def to_json(self) -> dict:
        return {"page": self.page, "statement": self.what, "runs": {run: gpu for run, gpu in self.gpus}}


def _mixed(page: str, what: str, runs: Iterable[str], gpu: Callable[[str], str | None], **why: str) -> Mixed | None:
    made = tuple((run, found) for run in dict.fromkeys(runs) if (found := gpu(run)))
    return Mixed(page, what, made, **why) if len({found for _, found in made}) > 1 else None


def mixed_statements(ledger, gpu: Callable[[str], str | None] | None = None) -> list[Mixed]:
    """Every page, claim, comparison and shared question of `ledger` (scripts.series.pages.claims.Ledger)
    whose runs were made on different GPUs (`gpu`: a run's GPU, by default from its metadata); a
    comparison that a claim already words is named once."""
    read, known = gpu or gpu_of, {}

    def gpu(run: str) -> str | None:  # each run's metadata read once
        if run not in known:
            known[run] = read(run)
        return known[run]

    found: list[Mixed] = []
    for page, runs in sorted(ledger.used.items()):
        if made := _mixed(page, PAGE, sorted(runs), gpu, why="while it names one GPU for all its runs"):
            found.append(made)
    worded = set()
    for c in ledger.claims:
        worded.add((c.page, frozenset(c.runs)))
        if made := _mixed(c.page, f'"{c.short}"', c.runs, gpu):
            found.append(made)
    for key, answers in ledger.answers.items():
        for a in answers:
            if (a.page, frozenset(a.runs)) in worded:
                continue
            if made := _mixed(a.page, f"the comparison of {a.what} ({a.names[0]} against {a.names[1]})", a.runs, gpu):
                found.append(made)
        if key[0] == "question" and len({frozenset(a.runs) for a in answers}) > 1:
            pages = ", ".join(sorted({a.page for a in answers}))
            runs = [run for a in answers for run in a.runs]
            if made := _mixed(pages, f"the question \"{key[1]}\", asked on {pages},", runs, gpu):
                found.append(made)
    return found


def usual_gpu(runs: Iterable[str], gpu: Callable[[str], str | None] | None = None) -> str | None:
    """The GPU that made most of these runs (None without any recorded)."""
    counts = Counter(found for run in runs if (found := (gpu or gpu_of)(run)))
    return counts.most_common(1)[0][0] if counts else None
