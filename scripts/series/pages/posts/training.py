"""The training step post (docs/blog/posts/training-step.md): what its blocks read from the runs.

One step in order: the analyzer's phases of each recorded step (scripts.tracefacts.facts.training),
the `fwdbwd` arrows Kineto draws from a forward op to its backward, AdamW's launches. The host
waiting on purpose: the host syncs that drain the GPU's queue (scripts.tracefacts.facts.syncs), the
profiler table's rows, and the GPU's period per step. Data loading: the gap before each step's
first kernel and the DataLoader's share of it. Two streams: the GPU time each step's activities
add up to against their union. Nsight Compute: the `.ncu.json` beside the top-kernel run.
"""

from __future__ import annotations

import gzip
import json
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from .. import cache, render
from ..claims import Spread, samples
from ...runs.extras import read_extra
from ....tracefacts.model.intervals import total
from ....tracefacts.pictures.markup import Markup, h, table, td, th
from ....tracefacts.pictures.profiler_table import scrolling_table

# --- one step, in order ----------------------------------------------------------------------------


def training(run):
    """The analyzer's training facts of the run's whole trace (cached like its other facts)."""
    found = cache.cached("training", render.training_facts, run.trace_input)
    if found is None:
        raise ValueError(f"{run.example.key}: the analyzer finds no training step in its trace")
    return found


def phase_samples(run, phase: str, field: str) -> Spread:
    """One value per recorded step of a phase's `host_us`, `gpu_busy_us`, `launches`, `host_pct`
    or `gpu_pct`."""
    values = [getattr(next(p for p in step.phases if p.phase == phase), field) for step in training(run).steps]
    unit = {"host_us": "us", "gpu_busy_us": "us", "host_pct": "%", "gpu_pct": "%"}.get(field, "")
    return samples(values, unit, f"{phase} {field} per step", [run.example.key])


def largest_phase(run, field: str = "gpu_busy_us") -> str:
    """The phase with the most of `field` over the recorded steps."""
    return max(training(run).phases, key=lambda p: getattr(p, field)).phase


def phase_table(run, caption: str) -> Markup:
    """The analyzer's phases of the run's steps: the median step's, and the shares of all of them."""
    from ....tracefacts.model.units import format_us

    head = [th(x, {"scope": "col", "class": None if i == 0 else "num"}) for i, x in enumerate(
        ("phase", "host time", "of the steps'", "GPU busy", "of the GPU's", "launches"))]
    rows = []
    for p in training(run).phases:
        host, busy, launches = (phase_samples(run, p.phase, f).median for f in ("host_us", "gpu_busy_us", "launches"))
        rows.append([th(p.phase, {"scope": "row"}), td(format_us(host), {"class": "num"}),
                     td(f"{p.host_pct:.1f}%", {"class": "num"}), td(format_us(busy), {"class": "num"}),
                     td(f"{p.gpu_pct:.1f}%", {"class": "num"}), td(f"{launches:,.0f}", {"class": "num"})])
    return scrolling_table(table(head, rows, caption=caption, attrs={"class": "prof"}), caption, searchable=False)


@lru_cache(maxsize=16)
def _flow_counts(path: Path) -> dict[str, int]:
    counts: dict[str, int] = {}
    for event in json.loads(gzip.decompress(path.read_bytes()))["traceEvents"]:
        if event.get("ph") == "s":  # a flow's start: one arrow each
            counts[event.get("cat", "")] = counts.get(event.get("cat", ""), 0) + 1
    return counts


def arrows(run, category: str = "fwdbwd") -> int:
    """The flow arrows of one category the trace holds (`fwdbwd`: a forward op to its backward;
    `ac2g`: a launch to its GPU activity). The analyzer does not read flows: this does."""
    return _flow_counts(run.example.trace_path).get(category, 0)


def parameter_tensors(run) -> int:
    """The model's parameter tensors, from the line the snippet ends its table with."""
    line = next(l for l in run.example.table_path.read_text().splitlines() if l.startswith("parameter tensors: "))
    return int(line.split(": ", 1)[1])


def optimizer_table(runs: dict, caption: str) -> Markup:
    """Per optimizer (label -> Run): its launches, host time and GPU busy time in the median step."""
    from ....tracefacts.model.units import format_us

    head = [th(x, {"scope": "col", "class": None if i == 0 else "num"}) for i, x in enumerate(
        ("AdamW", "launches", "host time", "GPU busy", "whole step"))]
    rows = [[th(h("code", None, label), {"scope": "row"}),
             td(f"{phase_samples(run, 'optimizer', 'launches').median:,.0f}", {"class": "num"}),
             td(format_us(phase_samples(run, "optimizer", "host_us").median), {"class": "num"}),
             td(format_us(phase_samples(run, "optimizer", "gpu_busy_us").median), {"class": "num"}),
             td(format_us(run.step_samples("dur_us", skip_first=False).median), {"class": "num"})]
            for label, run in runs.items()]
    return scrolling_table(table(head, rows, caption=caption, attrs={"class": "prof"}), caption, searchable=False)


# --- the GPU waiting on the host ---------------------------------------------------------------------


def syncs(run):
    """The analyzer's host syncs of the run's whole trace, or None without a drain."""
    return cache.cached("syncs", render.sync_facts, run.trace_input)


def rows_present(run, names: tuple[str, ...]) -> dict[str, bool]:
    """Whether each name has a row in the run's profiler table."""
    return {name: run.table_data.row(name) is not None for name in names}


def per_step(run, name: str) -> Spread:
    """How many times an op, label or runtime call ran in each recorded step (0 where it did not)."""
    counts = [step["ops"].get(name, {}).get("count", 0) for step in run.samples()[0]["steps"]]
    return samples(counts, "", f"{name} per step", [run.example.key])


def drains_per_step(run) -> Spread:
    """The host syncs that drained the GPU's queue, per recorded step."""
    found = syncs(run)
    drained = found.drained if found is not None else []
    counts = [sum(d.step == step.name for d in drained) for step in run.trace.steps]
    return samples(counts, "", "drains per step", [run.example.key])


def idle_after_drains(run) -> Spread:
    """The GPU's idle time after each drain in the recorded steps."""
    found = syncs(run)
    values = [d.gpu_idle_after_us for d in (found.drained if found is not None else []) if d.step]
    return samples(values, "us", "GPU idle after a drain", [run.example.key])


def gpu_period(run) -> Spread:
    """The GPU's time per step: from the first activity of one step's launched work to the first
    of the next one's (its busy time, and whatever idle time came between)."""
    starts = [s.launched.start_us for s in run.trace_facts().steps if s.launched is not None]
    return samples([b - a for a, b in zip(starts, starts[1:])], "us", "GPU time per step", [run.example.key])


def gpu_busy_share(run) -> Spread:
    """Per recorded step, the GPU's busy share of the GPU time of the work the step launched."""
    values = [s.launched.busy_pct for s in run.trace_facts().steps if s.launched is not None]
    return samples(values, "%", "GPU busy share per step", [run.example.key])


# --- data loading -------------------------------------------------------------------------------------


def first_kernel_gap(run) -> Spread:
    """Per recorded step: from the step's start to the first GPU activity of the work it launched."""
    values = [s.launched.start_us - s.start_us for s in run.trace_facts().steps if s.launched is not None]
    return samples(values, "us", "gap before the step's first GPU activity", [run.example.key])


def copy_calls(run, label: str = "copy to GPU") -> Spread:
    """Per recorded step, the host's time in the runtime calls made inside the `label` annotation
    (the copies of the batch to the GPU)."""
    trace = run.trace
    spans = [a for a in trace.by_kind.get("annotation", []) if a.name == label]
    values = []
    for step in trace.steps:
        inside = [a for a in spans if step.ts <= a.ts < step.end]
        values.append(sum(c.dur for c in trace.by_kind.get("runtime", [])
                          if any(a.ts <= c.ts <= a.end and (a.pid, a.tid) == (c.pid, c.tid) for a in inside)))
    return samples(values, "us", f"host time in the calls inside {label} per step", [run.example.key])


def copy_kinds(run) -> list[str]:
    """The names of the run's memcpy activities (Kineto's: `Memcpy HtoD (Pinned -> Device)`)."""
    return sorted({a.name for a in run.trace.by_kind.get("memcpy", [])})


# --- two streams ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Overlap:
    summed: Spread  # per step: the durations of the GPU activities it launched, added up
    busy: Spread  # per step: their union, which is what the analyzer counts as busy
    streams: int  # the streams the run's GPU activities ran on


def overlap(run) -> Overlap:
    trace = run.trace
    steps = trace.steps
    summed, busy = [], []
    for step in steps:
        work = [a for a in trace.gpu_activities if (launch := trace.launch_of(a)) is not None
                and step.ts <= launch.ts < step.end]
        summed.append(sum(a.dur for a in work))
        busy.append(total((a.ts, a.end) for a in work))
    streams = len({(a.arg("device"), a.arg("stream")) for a in trace.gpu_activities})
    key = [run.example.key]
    return Overlap(samples(summed, "us", "GPU activities added up per step", key),
                   samples(busy, "us", "GPU busy per step", key), streams)


# --- Nsight Compute -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Measured:
    kernel: str
    command: str
    error: str | None
    metrics: dict[str, tuple[float | str, str]]  # "Section: Metric Name" -> (value, unit)

    def value(self, section: str, name: str) -> float:
        value = self.metrics[f"{section}: {name}"][0]
        if not isinstance(value, float):
            raise ValueError(f"ncu's {name} is {value!r}, not a number")
        return value

    def unit(self, section: str, name: str) -> str:
        return self.metrics[f"{section}: {name}"][1]


def _number(text: str) -> float | str:
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return text


def ncu(run) -> Measured:
    """What snippets/14_ncu_top_kernel.py froze beside its trace: ncu's metrics of the top kernel."""
    doc = read_extra(run.example.extra_paths["ncu"])
    columns = doc.get("columns", [])
    metrics = {}
    for row in doc.get("rows", []):
        cell = dict(zip(columns, row))
        metrics[f"{cell['Section Name']}: {cell['Metric Name']}"] = (_number(cell["Metric Value"]), cell["Metric Unit"])
    return Measured(doc.get("kernel", ""), doc.get("command", ""), doc.get("error"), metrics)


def ncu_table(measured: Measured, caption: str, sections: tuple[str, ...] = ("GPU Speed Of Light Throughput",
                                                                              "Occupancy")) -> Markup:
    """ncu's rows of the named sections: section, metric, value, unit."""
    head = [th(x, {"scope": "col", "class": "num" if x == "value" else None}) for x in ("section", "metric", "value", "unit")]
    rows = []
    for key, (value, unit) in measured.metrics.items():
        section, name = key.split(": ", 1)
        if section in sections:
            shown = f"{value:,.2f}".rstrip("0").rstrip(".") if isinstance(value, float) else value
            rows.append([section, th(name, {"scope": "row"}), td(shown, {"class": "num"}), unit])
    return scrolling_table(table(head, rows, caption=caption, attrs={"class": "prof"}), caption, searchable=False)


def sync_section(run) -> str:
    """The host-sync section `analyze.py` prints for the run, as a Markdown code block."""
    from ....tracefacts.facts.syncs import sync_text
    from ....tracefacts.model.names import printable

    found = syncs(run)
    text = "\n".join(map(printable, sync_text(found) if found is not None else ["(no drain)"]))
    # A fence longer than any run of backticks in the text (a name from the trace may hold some).
    fence = "`" * max([3] + [len(run) + 1 for run in re.findall(r"`+", text)])
    return f"{fence}text\n{text}\n{fence}"


def table_rows(run, names: tuple[str, ...], caption: str) -> Markup:
    """The run's profiler table cut to the rows of these names (in the table's order), its foot
    kept: where a read-back shows in the table, without the rows around it."""
    from dataclasses import replace

    from ....tracefacts.pictures.profiler_table import render_table

    data = run.table_data
    return render_table(replace(data, rows=tuple(row for row in data.rows if row[0] in names)), caption=caption,
                        activities=run.activities)
