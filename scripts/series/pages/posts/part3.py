"""Part 3 (docs/blog/posts/part-3-attention.md): what its blocks read from the runs.

The post counts per `attention` call: the launches made inside the call's `record_function`
label, each followed to the GPU activity it started by correlation id, so that work spilled in
from an unrecorded step (launched before the recording began) is not counted. Each recorded step
makes one call, so a call's numbers are per-step samples, compared with their spreads.
"""

from __future__ import annotations

import gzip
import json
import re
from dataclasses import dataclass
from statistics import median

from ..claims import Spread, samples
from ....tracefacts.model.intervals import total, union
from ....tracefacts.pictures.kernel_tips import KernelTips
from ....tracefacts.pictures.markup import Markup, concat, h, table, td, th
from ..helpers import format_us
from ....tracefacts.pictures.profiler_table import scrolling_table
from ....tracefacts.model.trace import Window

OCC = "est. achieved occupancy %"
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
    """GPU time per call (the busy time of the activities each call launched), one per call."""
    return samples((c.gpu_busy_us for c in calls(run)), label="GPU time per call", runs=[run.example.key])


def label_samples(run) -> Spread:
    """CPU time per call: the `attention` label, one value per recorded step."""
    return run.op_samples(LABEL, "total_us", skip_first=False)


def sdpa_samples(run) -> Spread:
    """CPU time per call in PyTorch's SDPA op (no samples for the hand-written variants)."""
    return run.op_samples(SDPA_OPS[0], "total_us", skip_first=False)


def activity_samples(run, match) -> Spread:
    """Per call, the summed time of the activities it launched for which match(activity) holds."""
    return samples((sum(a.dur for a in c.activities if match(a)) for c in calls(run)),
                   label="activity time per call", runs=[run.example.key])


def fractions_of(spread: Spread, reference: float) -> Spread:
    """Each sample as a fraction of one reference number (the series' value)."""
    return samples((v / reference for v in spread.values), unit="", label=f"{spread.label} / reference",
                   runs=spread.runs)


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
    """The GPU activities of one call, in launch order (names escaped; full name on hover, what
    the name says on tap, focus or hover)."""
    tips = KernelTips(caption)
    rows = []
    for r in call_rows(run):
        occ = r.activity.args.get(OCC)
        op = concat(h("code", None, r.stage), (" › ", h("code", None, r.inner)) if r.inner != r.stage else None)
        rows.append((op, [(h("code", None, r.api), False), (format_us(r.dur_us), True),
                          ("" if occ is None else f"{occ}%", True),
                          (tips.name(r.activity.name, clip(short_kernel(r.activity.name)), r.activity.kind,
                                     {"title": r.activity.name}), False)]))
    return prof_html(["Op › innermost op", "Launch", "Time per call (median)", "Est. occupancy",
                      "GPU activity (hover: full name)"], rows, caption, "GPU activities of one call", tips)


def resources_table(kernels, caption: str) -> Markup:
    """Each kernel's launch shape and resources (`KernelResources`), and Kineto's occupancy
    estimate from them: the name cut (full on hover, what it says on tap, focus or hover)."""
    tips = KernelTips(caption)
    rows = [(tips.name(k.name, clip(k.name, 36), code_attrs={"title": k.name}),
             [(f"{k.occupancy}%", True), (str(k.threads), True), (str(k.registers), True),
              (f"{k.shared_memory / 1024:.1f} KiB", True), (f"{k.blocks_per_sm:.2f}", True),
              ("×".join(map(str, k.grid)), True)]) for k in kernels]
    return prof_html(["Kernel (hover: full name)", "Est. occupancy", "Threads per block", "Registers per thread",
                      "Shared memory per block", "Blocks per SM in the grid", "Grid"],
                     rows, caption, "kernel resources", tips)


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


def earlier_work_pct(run, window: Window) -> float:
    """The share of the window's time in which the GPU ran work launched before the window began
    (an activity without a launch in the trace was launched before the recording did)."""
    earlier = [(max(a.ts, window.start), min(a.end, window.end)) for a in run.trace.gpu_activities
               if ((launch := run.trace.launch_of(a)) is None or launch.ts < window.start)
               and a.end > window.start and a.ts < window.end]
    return 100.0 * total(union(earlier)) / window.dur


# --- occupancy -----------------------------------------------------------------------------------


def raw_kernel_args(run) -> tuple[dict[str, dict], dict]:
    """The kernel args our trace model drops (grid, block, registers, shared memory), read from
    the raw trace: {kernel name: args}, and the first device's properties."""
    with gzip.open(run.example.trace_path, "rt") as f:
        doc = json.load(f)
    kernels = {e["name"]: e.get("args", {}) for e in doc["traceEvents"] if e.get("cat") == "kernel"}
    return kernels, doc.get("deviceProperties", [{}])[0]


@dataclass(frozen=True)
class KernelResources:
    """A kernel's launch shape and resources, and the occupancy Kineto estimated from them."""

    name: str
    threads: int  # per block
    registers: int  # per thread
    shared_memory: int  # per block, bytes
    grid: tuple[int, ...]
    blocks_per_sm: float  # the grid's blocks over the SMs
    occupancy: float  # Kineto's estimate, %

    @classmethod
    def of(cls, name: str, args: dict) -> KernelResources:
        block = args["block"]
        return cls(name, block[0] * block[1] * block[2], args["registers per thread"], args["shared memory"],
                   tuple(args["grid"]), args["blocks per SM"], args[OCC])

    @property
    def blocks(self) -> int:
        return self.grid[0] * self.grid[1] * self.grid[2]


def resources(runs_and_filters) -> list[KernelResources]:
    """KernelResources of the kernels of each (run, keep(name)) pair, one row per kernel name."""
    found: dict[str, KernelResources] = {}
    for run, keep in runs_and_filters:
        kernels, _ = raw_kernel_args(run)
        for name, args in kernels.items():
            if keep(name):
                found.setdefault(name, KernelResources.of(name, args))
    return list(found.values())


def blocks_by_registers(k: KernelResources, regs_per_sm: int) -> int:
    """Blocks per SM the register file allows, registers allocated in steps of 8 per thread."""
    return regs_per_sm // (-(-k.registers // 8) * 8 * k.threads)


def explained_by_registers(k: KernelResources, regs_per_sm: int, max_threads: int) -> bool:
    """Whether the register limit (capped by the grid's blocks per SM) gives the printed estimate,
    rounded as Kineto rounds it."""
    blocks = min(blocks_by_registers(k, regs_per_sm), k.blocks_per_sm)
    return int(0.5 + 100 * blocks * k.threads / max_threads) == k.occupancy
