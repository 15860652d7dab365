"""The training step post (docs/blog/posts/training-step.md): what its blocks read from the runs.

One step in order: the analyzer's phases of each recorded step (scripts.tracefacts.facts.training),
the `fwdbwd` arrows Kineto draws from a forward op to its backward, AdamW's launches. The host
waiting on purpose: the host syncs that drain the GPU's queue (scripts.tracefacts.facts.syncs), the
profiler table's rows, and the GPU's period per step. Data loading: the gap before each step's
first kernel and the DataLoader's share of it. Two streams: the GPU time the recorded steps'
activities add up to against their union. Nsight Compute: the `.ncu.json` beside the top-kernel
run, measured or not, and the command that measures the kernel.

A step's GPU work is the work its launch calls started: an activity with no launch call in the
trace (launched before the recording began, run inside it) is no step's.
"""

from __future__ import annotations

import gzip
import json
import re
from bisect import bisect_right
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from .. import cache, render
from ..claims import Spread, samples
from ...runs.extras import read_extra
from ....tracefacts.model.intervals import total
from ....tracefacts.model.units import format_us
from ....tracefacts.pictures.markup import Markup, concat, h, table, td, th
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


def phase_table(run, caption: str, empty: bool = True) -> Markup:
    """The analyzer's phases of the run's steps: the median step's, and the shares of all of them;
    without `empty`, a phase with no host time, GPU time or launch (a loop without a DataLoader
    has no data phase) is left out."""
    head = [th(x, {"scope": "col", "class": None if i == 0 else "num"}) for i, x in enumerate(
        ("phase", "host time", "of the steps'", "GPU busy", "of the GPU's", "launches"))]
    rows = []
    for p in training(run).phases:
        if not empty and not (p.host_us or p.gpu_busy_us or p.launches):
            continue
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
    head = [th(x, {"scope": "col", "class": None if i == 0 else "num"}) for i, x in enumerate(
        ("AdamW", "launches", "host time", "GPU busy", "whole step"))]
    rows = [[th(h("code", None, label), {"scope": "row"}),
             td(f"{phase_samples(run, 'optimizer', 'launches').median:,.0f}", {"class": "num"}),
             td(format_us(phase_samples(run, "optimizer", "host_us").median), {"class": "num"}),
             td(format_us(phase_samples(run, "optimizer", "gpu_busy_us").median), {"class": "num"}),
             td(format_us(run.step_samples("dur_us", skip_first=False).median), {"class": "num"})]
            for label, run in runs.items()]
    return scrolling_table(table(head, rows, caption=caption, attrs={"class": "prof"}), caption, searchable=False)


def busy_share(run) -> Spread:
    """Per recorded step, the GPU busy share of the step's window (the facts box's one busy number)."""
    return samples([s.window_busy_pct for s in run.trace_facts().steps], "%", "GPU busy share of the step",
                   [run.example.key])


def runs_table(runs: dict, columns: dict[str, Callable], caption: str) -> Markup:
    """One row per run (label -> Run), one column per header -> function of the run that gives the
    cell's text: a before and after, side by side."""
    head = [th(x, {"scope": "col", "class": None if i == 0 else "num"}) for i, x in enumerate(("run", *columns))]
    rows = [[th(label, {"scope": "row"}), *(td(cell(run), {"class": "num"}) for cell in columns.values())]
            for label, run in runs.items()]
    return scrolling_table(table(head, rows, caption=caption, attrs={"class": "prof"}), caption, searchable=False)


def named_links(runs: dict) -> Markup:
    """Each run's download and Perfetto buttons, each row led by its label (label -> Run), so that a
    reader can tell a before from its after."""
    return concat(*(run.links(label) for label, run in runs.items()))


def median_us(spread: Spread) -> str:
    """A table cell: the median of a spread of durations."""
    return format_us(spread.median) if spread.n else "none"


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


def drains_per_step(run, skip_last: bool = False) -> Spread:
    """The host syncs that drained the GPU's queue, per recorded step; `skip_last` leaves out the
    last recorded step, whose sync has no GPU work after it in the recording and so, by the
    analyzer's definition, drains nothing that anything waits for."""
    found = syncs(run)
    drained = found.drained if found is not None else []
    steps = run.trace.steps[:-1] if skip_last else run.trace.steps
    counts = [sum(d.step == step.name for d in drained) for step in steps]
    return samples(counts, "", "drains per step" + " but the last" * skip_last, [run.example.key])


def drain_calls(run) -> dict[str, int]:
    """The calls that drained the GPU's queue in the recorded steps, by name, most first."""
    found = syncs(run)
    return dict(Counter(d.name for d in (found.drained if found is not None else []) if d.step).most_common())


def copies_back(run) -> list[str]:
    """The names of the run's copies from the GPU to the host (Kineto's `Memcpy DtoH (Device -> Pinned)`)."""
    return [name for name in copy_kinds(run) if name.startswith("Memcpy DtoH")]


def idle_after_drains(run) -> Spread:
    """The GPU's idle time after each drain in the recorded steps."""
    found = syncs(run)
    values = [d.gpu_idle_after_us for d in (found.drained if found is not None else []) if d.step]
    return samples(values, "us", "GPU idle after a drain", [run.example.key])


def launched_work(run) -> list[list]:
    """Per recorded step, the GPU activities whose launch call began in it."""
    trace = run.trace
    steps = trace.steps
    begins = [s.ts for s in steps]
    work: list[list] = [[] for _ in steps]
    for activity in trace.gpu_activities:
        launch = trace.launch_of(activity)
        k = bisect_right(begins, launch.ts) - 1 if launch is not None else -1
        if k >= 0 and launch.ts < steps[k].end:
            work[k].append(activity)
    return work


def gpu_period(run) -> Spread:
    """The GPU's time per step: from the end of one step's launched work to the end of the next
    one's (its busy time, and whatever idle time came between). The ends, not the starts: where a
    side stream runs ahead (the next batch's copy), the last activity still closes the step."""
    ends = [max(a.end for a in work) for work in launched_work(run) if work]
    return samples([b - a for a, b in zip(ends, ends[1:])], "us", "GPU time per step", [run.example.key])


# --- data loading -------------------------------------------------------------------------------------


def first_kernel_gap(run) -> Spread:
    """Per recorded step: from the step's start to the first GPU activity of the work it launched."""
    values = [min(a.ts for a in work) - step.ts for step, work in zip(run.trace.steps, launched_work(run)) if work]
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
    """The GPU activities the recorded steps launched, taken together: one step's copy may overlap
    the next step's compute, so the steps are not split."""

    summed_us: float  # their durations added up, as the profiler table's CUDA times add up
    busy_us: float  # their union: what the analyzer counts as busy
    streams: int  # the streams they ran on

    @property
    def overlapped_us(self) -> float:
        """The time two or more of them ran at once, counted once for each extra one."""
        return self.summed_us - self.busy_us


def overlap(run) -> Overlap:
    work = [a for step in launched_work(run) for a in step]
    streams = len({(a.arg("device"), a.arg("stream")) for a in work})
    return Overlap(sum(a.dur for a in work), total((a.ts, a.end) for a in work), streams)


# --- Nsight Compute -------------------------------------------------------------------------------------


# ncu's output when its kernel filter matched no launch ends with its numbered list of the kernels
# it saw ("56. void cudnn::fusion::convert_dq_to_16bits<(bool)1>(...)"), which the snippet kept as
# its error; a report read back without a row says so in the snippet's own words.
_NO_MATCH = re.compile(r"^ncu failed: \d+\. |^ncu measured no launch")
# A template argument as ncu's demangler writes it, with its type: `(bool)1`, `(int)128`.
_TYPED_ARGUMENT = re.compile(r"([A-Za-z_]\w*)<(\((?:bool|int|unsigned int|long|char)\)[^<>,()]*)")


@dataclass(frozen=True)
class Measured:
    kernel: str
    command: str
    error: str | None
    metrics: dict[str, tuple[float | str, str]]  # "Section: Metric Name" -> (value, unit)

    @property
    def outcome(self) -> str:
        """"measured" (ncu's rows are there), "no match" (ncu ran and its kernel filter matched no
        launch) or "not run" (ncu could not run: missing, refused the GPU's counters, timed out)."""
        if self.error is None:
            return "measured" if self.metrics else "no match"
        return "no match" if _NO_MATCH.search(self.error) else "not run"

    @property
    def name_base(self) -> str | None:
        """What the command's kernel filter matched names against (ncu's `--kernel-name-base`:
        "function", "demangled", "mangled"), None where the command does not say."""
        found = re.search(r"--kernel-name-base[ =]([a-z]+)", self.command)
        return found.group(1) if found else None

    def listed_form(self) -> tuple[str, str] | None:
        """A kernel of ncu's own list (kept in the error where the filter matched nothing) whose
        template argument ncu wrote with its type: (function, "(bool)1"); None if there is none."""
        found = _TYPED_ARGUMENT.search(self.error or "")
        return (found.group(1), found.group(2)) if found else None

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


def function_name(kernel: str) -> str:
    """A kernel's function name alone, as ncu's `--kernel-name-base function` matches it: no return
    type, namespace, template arguments or parameters (`void at::native::reduce_kernel<128, 4, ...>(...)`
    is `reduce_kernel`; an `nvjet_...` or `triton_...` name is itself)."""
    head = kernel.replace("(anonymous namespace)::", "")
    cut = min((i for i in (head.find("<"), head.find("(")) if i > 0), default=len(head))
    words = head[:cut].split()
    return (words[-1] if words else head).split("::")[-1]


def template_head(kernel: str) -> str:
    """The kernel's function name and its first template argument as the trace writes it:
    `reduce_kernel<128, …>` (the name alone where it has none)."""
    name = function_name(kernel)
    found = re.search(re.escape(name) + r"<([^<>]*)", kernel)
    if not found:
        return name
    arguments = found.group(1).split(",")
    more = len(arguments) > 1 or kernel[found.end():found.end() + 1] == "<"
    return f"{name}<{arguments[0].strip()}{', …' if more else ''}>"


def ncu_command(kernel: str) -> str:
    """The ncu command that measures one launch of the kernel, for the reader's own program: the
    kernel picked by its function's name (the whole demangled name from a trace need not match
    ncu's, which writes template arguments with their types), SKIP the launches of that name to
    pass over first."""
    return (f"ncu --clock-control none --kernel-name-base function --kernel-name regex:^{function_name(kernel)}$ \\\n"
            "    --launch-skip SKIP --launch-count 1 --section SpeedOfLight --section Occupancy \\\n"
            "    python train.py")


def top_kernel(run, name: str):
    """The analyzer's KernelStat of the GPU activity `name` over the whole trace (its share of the
    GPU's activity time, launches, mean, work class, first run), or None if it is not among the top."""
    return next((k for k in run.trace_facts().window.top_kernels if k.name == name), None)


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


def table_rows(run, names: tuple[str, ...], caption: str, sort_by: str | None = None) -> Markup:
    """The run's profiler table cut to the first row of each of these names (in the table's order,
    or most first by the column `sort_by`), its foot kept: where a read-back shows in the table,
    without the rows around it. A label's second row, its copy on the GPU's row
    (`gpu_user_annotation`), is left out.

    `sort_by` re-sorts the few rows kept by one of the columns a table shows first (`Self CPU`):
    the rendered table marks the column its rows are sorted by and always shows it, so a cut of
    a table the snippet sorted by `CPU total` would show a sixth column, which pushes `# of Calls`
    out of a narrow screen's view."""
    from dataclasses import replace

    from ....tracefacts.pictures.profiler_table import to_us

    data = run.table_data
    seen: set[str] = set()
    rows = tuple(row for row in data.rows if row[0] in names and not (row[0] in seen or seen.add(row[0])))
    if sort_by is not None:
        column = data.columns.index(sort_by)
        rows = tuple(sorted(rows, key=lambda row: -to_us(row[column])))
        marked = replace(data, rows=rows).sort_column
        if len(rows) > 1 and marked != sort_by:
            # Another column also never increases down these rows and would be marked instead.
            raise ValueError(f"{run.example.key}: the cut table's rows read as sorted by {marked}, not {sort_by}")
    return run.table(rows=rows, caption=caption)
