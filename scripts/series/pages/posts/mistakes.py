"""The guide's common mistakes (docs/guide/common-mistakes.md): what its blocks read from the runs.

Each mistake is shown on a frozen run and by a fact the analyzer prints about it: the steps' lengths
of a recording that starts cold, the missing ProfilerSteps of a loop without prof.step(), the GPU
annotations against the GPU's busy time of the same phase, the launched work that outlasts a timed
region without a sync, and the cost of stacks.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from ..claims import Spread, samples
from ....tracefacts.model.names import printable
from .training import training


def analyzer_lines(run, start: str, count: int | None = None) -> str:
    """Lines of `analyze.py`'s text for the run, from the first that starts with `start`
    (`count` of them, or to the end), as a Markdown code block."""
    lines = run.summary().splitlines()
    first = next(i for i, line in enumerate(lines) if line.lstrip().startswith(start))
    shown = lines[first:first + count] if count else lines[first:]
    text = "\n".join(map(printable, shown))
    fence = "`" * max([3] + [len(r) + 1 for r in re.findall(r"`+", text)])
    return f"{fence}text\n{text}\n{fence}"


def training_lines(run) -> str:
    """The training section `analyze.py` prints for the run, as a Markdown code block."""
    from ....tracefacts.facts.training import training_text

    return "```text\n" + "\n".join(map(printable, training_text(training(run)))) + "\n```"


# --- profiling from step 0 --------------------------------------------------------------------------


@dataclass(frozen=True)
class FirstStep:
    first: float  # the first recorded step's length
    later: Spread  # the others'
    label: str


def first_step(run) -> FirstStep:
    steps = run.trace_facts().steps
    return FirstStep(steps[0].dur_us, samples([s.dur_us for s in steps[1:]], "us", "later steps", [run.example.key]),
                     steps[0].label)


# --- gpu_user_annotation spans ----------------------------------------------------------------------


@dataclass(frozen=True)
class Spans:
    """Per recorded step, a phase's span on the GPU row (Kineto's gpu_user_annotation of the
    label) and the GPU's busy time for the same phase (the analyzer's)."""

    span: Spread
    busy: Spread


def gpu_spans(run, label: str, phase: str) -> Spans:
    # Kineto draws one mark of the label per recorded step on the GPU row, in order (a step's can
    # start after its host span ends, when the GPU runs behind): the i-th mark is the i-th step's.
    marks = sorted((a for a in run.trace.by_kind.get("gpu_annotation", []) if a.name == label), key=lambda a: a.ts)
    steps = training(run).steps
    if len(marks) != len(steps):
        raise ValueError(f"{run.example.key}: {len(marks)} {label!r} marks on the GPU row for {len(steps)} steps")
    spans = [a.dur for a in marks]
    busy = [next(p.gpu_busy_us for p in step.phases if p.phase == phase) for step in steps]
    key = [run.example.key]
    return Spans(samples(spans, "us", f"{label} span on the GPU row", key),
                 samples(busy, "us", f"{phase} GPU busy", key))


# --- timing without a sync --------------------------------------------------------------------------


@dataclass(frozen=True)
class Timed:
    unsynced_s: float
    synced_s: float
    steps: int
    window_end_us: float  # where the label `timed without synchronize` ends on the host
    work_end_us: float  # where the GPU work launched inside it ended


def timed(run) -> Timed:
    line = next(l for l in run.example.table_path.read_text().splitlines() if l.startswith("timing_json: "))
    doc = json.loads(line.split(": ", 1)[1])
    label = next(a for a in run.trace.by_kind.get("annotation", []) if a.name == "timed without synchronize")
    from ....tracefacts.model.trace import Window

    launched = run.trace_facts(Window(label.ts, label.end, label.name)).window.launched
    return Timed(doc["unsynced_s"], doc["synced_s"], doc["steps"], label.end, launched.end_us)
