"""Part 3 (docs/blog/posts/part-3-attention.md): what its blocks read from the runs.

The post counts per `attention` call: the launches made inside the call's `record_function`
label, each followed to the GPU activity it started by correlation id, so that work spilled in
from an unrecorded step (launched before the recording began) is not counted. Each recorded step
makes one call, so a call's numbers are per-step samples, compared by the ratio of their medians.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from statistics import median

from ..claims import Spread, format_value, samples
from ....tracefacts.facts.kernels import work_class
from ....tracefacts.model.intervals import total, union
from ....tracefacts.pictures.kernel_tips import KernelTips
from ....tracefacts.pictures.markup import Markup, concat, h, table, td, th
from ..helpers import format_us
from ....tracefacts.pictures.profiler_table import scrolling_table
from ....tracefacts.model.trace import Window

SDPA_OPS = ("aten::scaled_dot_product_attention", "aten::_scaled_dot_product_attention_math")
LABEL = "attention"


# --- calls ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Call:
    """One recorded `attention` call: its label, the host events inside it, and the launches
    among them with the GPU activity each started (in launch order)."""

    label: object
    inside: list
    launches: list
    activities: list

    @property
    def gpu_busy_us(self) -> float:
        """The union of the activities it launched: the GPU time of this call."""
        return total(union((a.ts, a.end) for a in self.activities))

    def count(self, kind: str) -> int:
        return sum(a.kind == kind for a in self.activities)


def calls(run) -> list[Call]:
    by_corr = {a.correlation: a for a in run.trace.gpu_activities}
    out = []
    for label in run.events(LABEL, kind="annotation"):
        if label.name != LABEL:
            continue
        inside = [e for e in run.trace.events
                  if e.tid == label.tid and label.ts <= e.ts and e.end <= label.end and e is not label]
        launches = [e for e in inside if e.kind in ("runtime", "driver") and e.correlation in by_corr]
        out.append(Call(label, inside, launches, [by_corr[e.correlation] for e in launches]))
    return out


@dataclass(frozen=True)
class CallStats:
    """What the calls of one run launched: the distinct counts per call (one value when every call
    agrees) and the kernels they ran."""

    kernels: list[int]
    memcpy: list[int]
    memset: list[int]
    kernels_run: list
    n_calls: int


def call_stats(run) -> CallStats:
    cs = calls(run)
    counts = lambda kind: sorted({c.count(kind) for c in cs})
    return CallStats(counts("kernel"), counts("memcpy"), counts("memset"),
                     [a for c in cs for a in c.activities if a.kind == "kernel"], len(cs))


def arch_of(name: str) -> str | None:
    """The first architecture tag a kernel name carries (sm80, sm90, ...), or None."""
    found = re.search(r"(?:^|[^A-Za-z0-9])(sm\d{2,3})(?!\d)", name)
    return found.group(1) if found else None


def one(values: list[int]) -> str:
    """'5' when every call agrees, '4–6' when they do not."""
    return str(values[0]) if len(values) == 1 else f"{values[0]}–{values[-1]}"


def gpu_samples(run) -> Spread:
    """GPU time per call (the busy time of the activities each call launched), one per call: the
    calls of the shown trace, and those of the refresh's extra runs of the example where there
    are any (scripts/series/runs/samples.py keeps each run's GPU busy time per recorded step).

    A step makes one call, so a step's GPU busy time is its call's, unless the step also holds
    GPU work spilled in from before the recording (the digests place such work by its start
    time). The extra runs' steps are taken only where the shown trace's steps and calls agree
    one for one (to the digests' nanosecond rounding), that is, where no work spilled in."""
    per_call = [c.gpu_busy_us for c in calls(run)]
    digests = run.samples() if hasattr(run, "samples") else []
    if len(digests) > 1:
        from ...runs.samples import step_values

        shown = step_values(digests[:1], "gpu.busy_us", skip_first=False)
        if len(shown) == len(per_call) and all(abs(s - c) < 1e-3 for s, c in zip(shown, per_call)):
            per_call += step_values(digests[1:], "gpu.busy_us", skip_first=False)
    return samples(per_call, label="GPU time per call", runs=[run.example.key])


def label_samples(run) -> Spread:
    """CPU time per call: the `attention` label, one value per recorded step."""
    return run.op_samples(LABEL, "total_us", skip_first=False)


def spreads_note(what: str, spreads: dict[str, Spread]) -> str:
    """One note's text for a table column of medians: the spread behind each, in one line
    ("GPU time per call, min to max of 3 samples each: naive 1.07 ms to 1.08 ms; ..."), the kind
    of spread and the count said once where every row shares them."""
    kinds = {(sp.kind, sp.n) for sp in spreads.values()}
    shared = len(kinds) == 1
    head = f"{what}, {next(iter(kinds))[0]} of {next(iter(kinds))[1]} samples each" if shared else f"{what}, spreads"

    def one_row(name: str, sp: Spread) -> str:
        said = f"{name} {format_value(sp.low, sp.unit)} to {format_value(sp.high, sp.unit)}"
        return said if shared else f"{said} ({sp.kind}, {sp.n} samples)"

    return head + ": " + "; ".join(one_row(name, sp) for name, sp in spreads.items()) + "."


def sdpa_check(run) -> str | None:
    """The line our Triton kernel's run prints under its table: its output checked against SDPA's
    on the same inputs (snippets/04_attention.py), or None if the run printed none."""
    found = [line for line in run.example.table_path.read_text().splitlines() if line.startswith("matches SDPA")]
    return found[0] if found else None


# --- the rows of one call ------------------------------------------------------------------------


def short_kernel(name: str) -> str:
    """A readable handle for a long C++ kernel name: the kernel template, then what it computes.
    Only for our tables; the full name is in the tooltip and in the trace."""
    if not name.startswith("void "):
        return name
    head = re.match(r"void (?:\(anonymous namespace\)::|\w+::)*(\w+)", name)
    base, rest = head.group(1), name[head.end():]
    what = [w for w in re.findall(r"(\w+Functor\w*<[^<>]*>|\w+_kernel(?:_impl|_cuda)?\b)", rest)
            if not w.startswith("gpu_kernel") and w != base]
    dtype = re.match(r"<(c10::BFloat16|float|bool)\b", rest)
    label = base + (f"<{dtype.group(1).replace('c10::', '')}>" if dtype else "")
    return label + (f" · {what[0]}" if what else "")


def _stage_of(around: list) -> str:
    """The outermost op that launched something, below the label and SDPA's dispatch wrappers."""
    ops = [o for o in sorted(around, key=lambda o: (o.ts, -o.dur)) if o.name not in SDPA_OPS]
    return ops[0].name if ops else ""


@dataclass(frozen=True)
class CallRow:
    """One GPU activity of a call, in launch order, with the ops it was launched from."""

    stage: str  # the outermost op that launched it
    inner: str  # the innermost op around its launch
    api: str  # the launch call
    activity: object  # the activity of the first call
    dur_us: float  # its time per call: the median over the calls


def call_rows(run) -> list[CallRow]:
    per = []
    for c in calls(run):
        ops = [e for e in c.inside if e.kind == "cpu_op"]
        rows = []
        for launch, act in zip(c.launches, c.activities):
            around = [o for o in ops if o.ts <= launch.ts and launch.end <= o.end]
            inner = max(around, key=lambda o: (o.ts, -o.dur)).name if around else ""
            rows.append((_stage_of(around), inner, launch.name, act))
        per.append(rows)
    if len({len(rows) for rows in per}) != 1:
        raise ValueError(f"{run.example.key}: its calls launch different numbers of activities")
    return [CallRow(stage, inner, api, act, median(r[i][3].dur for r in per))
            for i, (stage, inner, api, act) in enumerate(per[0])]


def clip(name: str, width: int = 64) -> str:
    return name if len(name) <= width else name[:width - 1] + "…"


def prof_html(head, rows, caption, label, tips: KernelTips | None = None):
    """A compact table in the profiler tables' style: one line per row, scrolling sideways.
    head: column titles (the first names the rows); rows: (row name, [(cell, numeric)]), each
    text or markup from scripts.tracefacts.pictures.markup; `tips`: the notes of the kernel names
    in it (made with the same `KernelTips`)."""
    thead = [th(name, {"scope": "col", "class": "num" if i else None}) for i, name in enumerate(head)]
    body = [[th(name, {"scope": "row"}), *(td(cell, {"class": "num" if num else None}) for cell, num in cells)]
            for name, cells in rows]
    return scrolling_table(table(thead, body, caption=caption, attrs={"class": "prof"}), label,
                           after=tips and tips.notes())


def rows_table(run, caption):
    """The GPU activities of one call, in launch order, each with its work class (the analyzer's,
    scripts/tracefacts/facts/kernels.py) and its time per call (names escaped; full name on hover,
    what the name says on tap, focus or hover)."""
    tips = KernelTips(caption)
    rows = []
    for r in call_rows(run):
        op = concat(h("code", None, r.stage), (" › ", h("code", None, r.inner)) if r.inner != r.stage else None)
        rows.append((op, [(h("code", None, r.api), False),
                          (tips.name(r.activity.name, clip(short_kernel(r.activity.name)), r.activity.kind,
                                     {"title": r.activity.name}), False),
                          (work_class(r.activity.name, r.activity.kind), False), (format_us(r.dur_us), True)]))
    return prof_html(["Op › innermost op", "Launch", "GPU activity (hover: full name)", "Work class",
                      "Time per call (median)"], rows, caption, "GPU activities of one call", tips)


# --- pictures ------------------------------------------------------------------------------------


def step_window(run, number: int) -> Window:
    step = next(s for s in run.trace.steps if s.name == f"ProfilerStep#{number}")
    return Window(step.ts, step.end, step.name)


def copy_window(run, number: int, margin: float = 0.03) -> Window:
    """From the start of ProfilerStep#`number` to the end of the memcpy its call launched (the
    GPU runs it after the step's host side has ended), with a small margin on the right."""
    step = step_window(run, number)
    copies = [a for c in calls(run) if step.start <= c.label.ts < step.end for a in c.activities
              if a.kind == "memcpy"]
    if not copies:
        raise LookupError(f"{run.example.key}: ProfilerStep#{number} launched no memcpy")
    end = max(a.end for a in copies)
    end += margin * (end - step.start)
    return Window(step.start, end, f"ProfilerStep#{number} to the end of its copy")


def hidden_copy_link(run, copy) -> Markup:
    """Under the picture: the copy the step launched (an Event of the run's trace), with a link
    that opens the trace in Perfetto zoomed to it, the copy selected."""
    from ....tracefacts.facts.places import event_span

    return h("p", {"class": "perfetto-finding"}, "The copy this step launched, ", h("code", None, copy.name),
             f", {format_us(copy.dur)} on the GPU: ",
             run.open_at(event_span(run.trace, copy), f"the {copy.name} this step launched", "see it in Perfetto"), ".")


def activities_within(run, window: Window, kind: str) -> list:
    """The GPU activities of `kind` that run entirely inside the window."""
    return [a for a in run.trace.gpu_activities if a.kind == kind and window.start <= a.ts and a.end <= window.end]
