"""Part 5 (docs/blog/posts/part-5-memory-shapes-stacks-roofline.md): what its blocks read from the runs.

Memory: the memory timeline by category and the allocator's peaks per step (`.memory.json.gz`, from
snippets/06_memory.py), the `[memory]` events of the trace (scripts.tracefacts.facts.memory), the allocator's snapshot
as the pickle PyTorch's memory viewer takes. Shapes and stacks: the traces of 07_shapes_stacks read
with their ops' args (scripts.tracefacts.facts.ops), and the cost of stacks its table ends with. The roofline: each
`{role}: {name} flops=F bytes=B` label of 08_roofline with the GPU time of the kernels launched in
it (scripts.tracefacts.facts.roofline places them), and the same roofs applied to Parts 3 and 4.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path

from .. import cache, render
from ..claims import Spread, samples
from ...runs.extras import read_extra
from ....tracefacts.model.intervals import total, union
from ....tracefacts.pictures.markup import Markup, h, table, td, th
from ....tracefacts.facts.memory import format_bytes, memory_facts
from ..helpers import format_us, publish
from ....tracefacts.facts.roofline import Placement, Roof, Work, place
from ....tracefacts.pictures.kernel_tips import KernelTips
from ....tracefacts.pictures.profiler_table import ProfilerTable, parse_table, render_table, scrolling_table
from ....tracefacts.model.trace import Trace, load_trace

# The timeline's categories, in the order a reader adds up a training step's memory.
CATEGORIES = ("parameter", "gradient", "optimizer_state", "activation", "temporary", "input",
              "autograd_detail", "unknown")


# --- memory --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class MemoryRun:
    """One 06_memory run: the timeline's peak by category, what the tensors hold, the allocator's peaks."""

    device: str
    peak_bytes: int  # the timeline's highest total
    at_peak: dict[str, int]  # bytes per category at that moment
    counted: dict[str, int]  # parameter_bytes, gradient_bytes, optimizer_state_bytes, input_bytes
    max_allocated: tuple[int, ...]  # per recorded step (cuda only)
    max_reserved: tuple[int, ...]
    trace_peak: int | None  # the [memory] events' peak allocated on the timeline's device
    trace_peak_op: str | None

    @property
    def largest(self) -> str:
        return max(self.at_peak, key=self.at_peak.get)

    def share(self, category: str) -> float:
        return 100.0 * self.at_peak.get(category, 0) / self.peak_bytes if self.peak_bytes else 0.0

    @property
    def reserved_gap(self) -> tuple[int, ...]:
        """Per recorded step: what the allocator held beyond its peak of live tensors."""
        return tuple(r - a for a, r in zip(self.max_allocated, self.max_reserved))


def memory_doc(run) -> dict:
    return read_extra(run.example.extra_paths["memory"])


def timeline_peak(timeline: dict) -> tuple[int, int, dict[str, int]]:
    """(index, total, bytes per category) at the timeline's highest total (the first such moment)."""
    series = timeline["bytes"]
    totals = [sum(column) for column in zip(*series.values())]
    at = max(range(len(totals)), key=lambda i: (totals[i], -i))
    return at, totals[at], {name: values[at] for name, values in series.items()}


def memory_run(run) -> MemoryRun:
    doc = memory_doc(run)
    _, peak, at_peak = timeline_peak(doc["timeline"])
    recorded = [s for s in doc["steps"] if s["phase"] == "recorded"]
    facts = memory_facts(run.trace)
    device = facts.device(doc["timeline"]["device"]) if facts else None
    return MemoryRun(
        doc["timeline"]["device"], peak, {c: at_peak.get(c, 0) for c in CATEGORIES if c in at_peak},
        dict(doc["model"]), tuple(s.get("max_allocated_bytes", 0) for s in recorded),
        tuple(s.get("max_reserved_bytes", 0) for s in recorded),
        device.peak_allocated if device else None, device.peak_op if device else None)


def bytes_ratio(part: float, whole: float) -> float:
    return part / whole if whole else 0.0


def breakdown_table(runs: dict[str, MemoryRun], caption: str) -> Markup:
    """Bytes per category at each run's timeline peak, one column per run."""
    names = list(runs)
    shown = [c for c in CATEGORIES if any(r.at_peak.get(c) for r in runs.values())]
    head = [th("category at the peak", {"scope": "col"}), *(th(n, {"scope": "col", "class": "num"}) for n in names)]
    rows = [[th(c.replace("_", " "), {"scope": "row"}),
             *(td(f"{format_bytes(r.at_peak.get(c, 0))} ({r.share(c):.0f}%)", {"class": "num"}) for r in runs.values())]
            for c in shown]
    foot = [[th("total", {"scope": "row"}), *(td(format_bytes(r.peak_bytes), {"class": "num"}) for r in runs.values())]]
    return scrolling_table(table(head, rows, caption=caption, foot=foot, attrs={"class": "prof"}), caption,
                           searchable=False)


def memory_plot(runs: dict[str, object]) -> Markup:
    """The memory timelines of the runs (label -> Run), stacked by category, on one byte scale."""
    first = next(iter(runs.values()))
    paths = tuple(r.example.extra_paths["memory"] for r in runs.values())
    svg = cache.cached_file("plot", render.memory_timeline_svg, tuple(runs), paths, CATEGORIES, suffix=".svg")
    return _figure(first, "memory_timeline", svg, "Memory timeline by category of each training step",
                   "Memory by category over the profiled steps (export_memory_timeline).")


def _figure(run, name: str, svg: Path, alt: str, what: str) -> Markup:
    from ..helpers import zoomable_figure

    return zoomable_figure(f"plots/{run.example.snippet}/{name}.svg", svg, alt,
                           f"{what} {run.caption()}. Click to zoom.", css_class="timeline plot")


def memory_facts_box(run) -> Markup:
    """The analyzer's facts box with the memory peaks of the [memory] events."""
    return run.facts(memory=memory_facts(run.trace))


def snapshot_button(run) -> Markup:
    """The allocator's snapshot as https://pytorch.org/memory_viz takes it (a pickle), to download."""
    source = run.example.extra_paths["snapshot"]
    path = cache.cached_file("snapshot", render.snapshot_pickle, source, suffix=".pickle")
    name = f"{run.example.tag}.snapshot.pickle"
    href = publish(f"traces/{run.example.snippet}/{name}", path)
    return h("div", {"class": "trace-actions"},
             h("a", {"class": "md-button", "href": href, "download": name},
               "Download the allocator snapshot ", h("small", None, f"({path.stat().st_size / 1024:,.0f} KB)")),
             h("a", {"class": "md-button", "href": "https://pytorch.org/memory_viz"}, "PyTorch's memory viewer"))


def step_seconds(run) -> Spread:
    """Every recorded step's length, over every process run of the example."""
    return run.step_samples("dur_us", skip_first=False)


@dataclass(frozen=True)
class StepSplit:
    """Medians over the shown trace's recorded steps, from the analyzer's facts of each step: its
    length, the GPU's busy time and the time the GPU sat idle waiting on the host."""

    dur_us: float
    busy_us: float
    host_wait_us: float


def step_split(run) -> StepSplit:
    from statistics import median

    from ....tracefacts.facts.analysis import facts

    splits = [s.time_split for s in facts(run.trace, top=0).steps if s.time_split is not None]
    if not splits:
        raise ValueError(f"{run.example.key}: no recorded step with GPU activity")
    return StepSplit(median(t.span_us for t in splits), median(t.busy_us for t in splits),
                     median(t.host_wait_us for t in splits))


@dataclass(frozen=True)
class ExtraTime:
    """What a change added to a step (`after` less `before`), split into GPU work and host wait."""

    total_us: float
    busy_us: float
    host_wait_us: float

    @property
    def mostly(self) -> str:
        """Which of the two made most of the extra time: "host wait" or "GPU work"."""
        return "host wait" if self.host_wait_us > self.busy_us else "GPU work"


def extra_time(before: StepSplit, after: StepSplit) -> ExtraTime:
    return ExtraTime(after.dur_us - before.dur_us, after.busy_us - before.busy_us,
                     after.host_wait_us - before.host_wait_us)


# --- shapes --------------------------------------------------------------------------------------


@lru_cache(maxsize=8)
def _with_args(path: Path) -> Trace:
    from ....tracefacts.facts.ops import OP_ARG_KINDS

    return load_trace(path, keep_args=OP_ARG_KINDS)


def trace_with_args(run) -> Trace:
    """The run's trace with its ops' args kept (shapes, stacks, FLOPs)."""
    return _with_args(run.example.trace_path)


def tables_of(run) -> tuple[ProfilerTable, ProfilerTable | None]:
    """The plain table of a .txt, and the table after it (grouped by shape or stack), if any."""
    text = run.example.table_path.read_text()
    parts = re.split(r"\n\s*\nGrouped by [^\n]*\n", text, maxsplit=1)
    second = None
    if len(parts) == 2:
        try:
            second = parse_table(parts[1])
        except ValueError:
            second = None
    return parse_table(parts[0]), second


def rows_named(data: ProfilerTable, name: str) -> int:
    return sum(row[0] == name for row in data.rows)


def same_or_listed(sizes) -> str:
    """Byte counts as the page writes them: one, where they all print the same ("2.54 GiB"), else
    each in order ("2.54 GiB, 2.61 GiB")."""
    said = [format_bytes(b) for b in sizes]
    return said[0] if len(set(said)) == 1 else ", ".join(said)


def shown_table(data: ProfilerTable, run, what: str, only: tuple[str, ...] = ()) -> Markup:
    """The table as the snippet printed it; `only`: just the rows of these ops (the caption says so)."""
    if only:
        data = replace(data, rows=tuple(r for r in data.rows if r[0] in only))
        what = f"{what}, the rows of {', '.join(only)} only"
    return render_table(data, caption=f"{run.example.command} — {what} — {run.caption()}",
                        activities=run.activities)


@dataclass(frozen=True)
class ShapeRow:
    """The calls of one op at one set of input shapes: host and GPU time per call."""

    dims: str
    calls: int
    cpu: Spread  # the op's length on the host, per call
    gpu: Spread  # the GPU time of the kernels launched inside it, per call
    kernels: tuple[str, ...]  # their names, in launch order, of the first call


def _launched(trace: Trace, op) -> list:
    """The GPU activities whose launch call ran inside `op`, on its thread."""
    found = []
    for activity in trace.gpu_activities:
        launch = trace.launch_of(activity)
        if launch is not None and (launch.pid, launch.tid) == (op.pid, op.tid) and op.ts <= launch.ts <= op.end:
            found.append(activity)
    return found


def by_shape(run, op_name: str = "aten::linear") -> list[ShapeRow]:
    """The recorded calls of `op_name` grouped by their `Input Dims`, in order of first call."""
    trace = trace_with_args(run)
    steps = trace.steps
    groups: dict[str, list] = {}
    for op in trace.by_kind.get("cpu_op", []):
        if op.name == op_name and any(s.ts <= op.ts < s.end for s in steps):
            groups.setdefault(json.dumps(op.args.get("Input Dims")), []).append(op)
    rows = []
    for dims, ops in groups.items():
        launched = [_launched(trace, op) for op in ops]
        gpu = [total(union((a.ts, a.end) for a in acts)) for acts in launched]
        rows.append(ShapeRow(dims, len(ops), samples([op.dur for op in ops], label=f"{op_name} {dims}",
                                                     runs=[run.example.key]),
                             samples(gpu, label=f"GPU time of {op_name} {dims}", runs=[run.example.key]),
                             tuple(a.name for a in launched[0])))
    return rows


def rows_of_length(rows: list[ShapeRow]) -> dict[int, ShapeRow]:
    """The rows by their input's sequence length (the middle of [batch, seq, width])."""
    return {json.loads(r.dims)[0][1]: r for r in rows}


# --- stacks --------------------------------------------------------------------------------------


def launches_in(run, label: str) -> Spread:
    """Per recorded step, the GPU activities launched inside the `label` annotation."""
    trace = run.trace
    counts = []
    for step in trace.steps:
        spans = [a for a in trace.by_kind.get("annotation", [])
                 if a.name == label and step.ts <= a.ts < step.end]
        counts.append(sum(1 for act in trace.gpu_activities if (launch := trace.launch_of(act)) is not None
                          and any(s.ts <= launch.ts <= s.end for s in spans)))
    return samples(counts, unit="", label=f"launches in {label} per step", runs=[run.example.key])


def sources(run, top: int = 6):
    """scripts.tracefacts.facts.ops' source lines of the run's top GPU activities (whole trace)."""
    from ....tracefacts.facts.ops import source_facts
    from ....tracefacts.model.trace import Window

    trace = trace_with_args(run)
    return source_facts(trace, Window(0.0, trace.end_us, "whole trace"), top)


def sources_table(run, caption: str, top: int = 6) -> Markup:
    from ....tracefacts.facts.analysis import short_name

    head = [th(x, {"scope": "col", "class": "num" if i in (1, 2) else None})
            for i, x in enumerate(("GPU activity", "calls", "share of GPU time", "launched in op", "from the Python line"))]
    tips = KernelTips(caption)  # a GPU activity's name says what it is; an op's is plain code

    def named(s):
        return h("code", None, short_name(s.name)) if s.kind == "cpu_op" else tips.name(s.name, short_name(s.name), s.kind)

    rows = [[th(named(s), {"scope": "row"}), td(f"{s.count:,}", {"class": "num"}),
             td(f"{s.share_pct:.1f}%", {"class": "num"}), h("code", None, s.op or "–"),
             h("code", None, s.frame or "(no user frame)")] for s in sources(run, top)]
    return scrolling_table(table(head, rows, caption=caption, attrs={"class": "prof"}), caption,
                           searchable=False, after=tips.notes())


@dataclass(frozen=True)
class StackCost:
    steps: dict[str, Spread]  # configuration -> synchronized wall time per step
    bytes_with: int
    bytes_without: int
    steps_per_trace: int

    @property
    def size_ratio(self) -> float:
        return self.bytes_with / self.bytes_without


def stack_cost(run) -> StackCost:
    line = next(l for l in run.example.table_path.read_text().splitlines() if l.startswith("stack_cost_json: "))
    doc = json.loads(line.split(": ", 1)[1])
    steps = {config: samples(values, label=f"step time, {config}", runs=[run.example.key])
             for config, values in doc["step_samples_us"].items()}
    return StackCost(steps, doc["trace_bytes_with_stack"], doc["trace_bytes_without_stack"], doc["steps_per_trace"])


# The run whose rotated timing measures the profiler's own cost: one training step of the guide's
# model with AdamW(foreach=False), a Python loop of small ops, where the per-op cost shows most.
OVERHEAD_RUN = "07_shapes_stacks/stacks_b16_s3_foreach_false"


@dataclass(frozen=True)
class ProfilerOverhead:
    """One training step, synchronized, timed without the profiler, under it, and under it with
    stacks (the snippet's rotated rounds, in one process)."""

    key: str
    none: Spread
    profiled: Spread
    stacks: Spread

    @property
    def slowdown(self) -> float:
        """The profiled step's median over the unprofiled one's."""
        return self.profiled.median / self.none.median


def profiler_overhead(run=None) -> ProfilerOverhead:
    """The profiler's cost on a step, measured once (Part 5's stacks run); Part 2 quotes it too."""
    from ..helpers import example

    run = run or example(OVERHEAD_RUN)
    steps = stack_cost(run).steps
    return ProfilerOverhead(run.example.key, steps["no profiler"], steps["profiler"], steps["profiler + with_stack"])


def profiler_overhead_sentence() -> str:
    """The one sentence other posts quote, checked: how much the profiler slowed this step."""
    from ..claims import compare, worded

    o = profiler_overhead()
    c = compare(o.profiled, o.none, what="training step", names=("profiler", "no profiler"))
    return worded(
        c,
        higher=f"The profiler inflates every CPU cost (it records each op): under it, a small training step of "
               f"ours took {c.words} its time without it{c.aside}, as measured in Part 5, so an unprofiled run "
               "is less CPU-heavy.",
        same="The profiler records each op, yet measured in Part 5 it leaves a small training step of ours about "
             "as long as without it.",
        unclear="The profiler records each op; measured in Part 5, whether it slows a small training step of ours "
                f"the samples do not settle ({c.ratio_text} at the median).",
        lower="The profiler records each op, yet measured in Part 5 a small training step of ours is even shorter "
              f"under it: {c.words} its time without it{c.aside}.",
        too_few=f"The profiler's cost on a small training step of ours, measured in Part 5: {c.shortfall}.")


# --- the roofline --------------------------------------------------------------------------------

LABEL = re.compile(r"^(?P<role>peak compute|peak memory|kernel): (?P<name>\S+) flops=(?P<flops>\d+) bytes=(?P<bytes>\d+)$")


@dataclass(frozen=True)
class Labelled:
    role: str
    name: str
    flops: int
    bytes: int
    calls_us: Spread  # GPU time of each call: the kernels launched inside its label


def labelled_calls(trace: Trace, key: str = "") -> list[Labelled]:
    """Each `{role}: {name} flops=F bytes=B` label's calls with their GPU time, in trace order."""
    by_label: dict[str, list] = {}
    for a in trace.by_kind.get("annotation", []):
        if LABEL.match(a.name):
            by_label.setdefault(a.name, []).append(a)
    launched: dict[int, list] = {}
    starts = sorted((a.ts, a.end, id(a), a.tid) for spans in by_label.values() for a in spans)
    for act in trace.gpu_activities:
        launch = trace.launch_of(act)
        if launch is None:
            continue
        for ts, end, ident, tid in starts:
            if ts <= launch.ts <= end and tid == launch.tid:
                launched.setdefault(ident, []).append(act)
                break
    found = []
    for name, spans in by_label.items():
        m = LABEL.match(name)
        times = [total(union((x.ts, x.end) for x in launched.get(id(a), []))) for a in spans]
        found.append(Labelled(m["role"], m["name"], int(m["flops"]), int(m["bytes"]),
                              samples(times, label=f"GPU time of {m['name']}", runs=[key] if key else [])))
    return found


@dataclass(frozen=True)
class Roofs:
    compute: Labelled  # the matmul whose FLOP/s is the compute roof
    memory: dict[str, Labelled]  # the copy, the triad and the read-only sum
    roof: Roof
    bandwidth_from: str
    events: dict  # the same roofs timed by CUDA events before profiling (trace metadata)

    @property
    def tflops(self) -> float:
        return self.roof.peak_flops / 1e12

    @property
    def tbytes(self) -> float:
        return self.roof.bandwidth / 1e12


def rate(item: Labelled) -> float:
    """FLOP/s of a compute roof, bytes/s of a memory one, at its median call."""
    work = item.flops if item.role == "peak compute" else item.bytes
    return work / (item.calls_us.median * 1e-6)


def read_only(name: str) -> bool:
    """The snippet's sum reads its tensor and writes nothing: its rate is no roof for kernels that
    write (the add reads two tensors and writes one), so the bandwidth comes from the others."""
    return name.startswith("sum_")


def roofs(run) -> Roofs:
    calls = labelled_calls(run.trace, run.example.key)
    compute = next(c for c in calls if c.role == "peak compute")
    memory = {c.name: c for c in calls if c.role == "peak memory"}
    best = max((m for m in memory.values() if not read_only(m.name)), key=rate)
    meta = run.trace.metadata.get("roofline") or {}
    meta = json.loads(meta) if isinstance(meta, str) else meta
    return Roofs(compute, memory, Roof(rate(compute), rate(best)), best.name, meta)


def snippet_summary(run) -> dict:
    """The `roofline_json:` line the snippet ends its table with."""
    line = next(l for l in run.example.table_path.read_text().splitlines() if l.startswith("roofline_json: "))
    return json.loads(line.split(": ", 1)[1])


def placements(run) -> list[tuple[Labelled, Placement]]:
    """Each kernel label placed under the measured roofs (at its median call), in trace order."""
    r = roofs(run).roof
    out = []
    for c in labelled_calls(run.trace, run.example.key):
        if c.role == "kernel":
            p = place(Work(c.name, c.flops, c.bytes, c.calls_us.median, 1, "the label's FLOPs and bytes"), r)
            if p is not None:
                out.append((c, p))
    return out


def roofline_table(run, caption: str) -> Markup:
    head = [th(x, {"scope": "col", "class": None if i == 0 or x == "bound" else "num"}) for i, x in enumerate(
        ("kernel", "GFLOP", "MB moved", "FLOP/byte", "GPU time per call", "TFLOP/s", "TB/s", "bound", "of its roof"))]
    rows = [[th(h("code", None, c.name), {"scope": "row"}), td(f"{p.flops / 1e9:.3g}", {"class": "num"}),
             td(f"{p.bytes / 1e6:.3g}", {"class": "num"}), td(f"{p.intensity:.3g}", {"class": "num"}),
             td(c.calls_us.text(), {"class": "num"}), td(f"{p.achieved_flops / 1e12:.3g}", {"class": "num"}),
             td(f"{p.achieved_bandwidth / 1e12:.3g}", {"class": "num"}), p.bound,
             td(f"{100 * p.roof_fraction:.0f}%", {"class": "num"})] for c, p in placements(run)]
    return scrolling_table(table(head, rows, caption=caption, attrs={"class": "prof"}), caption, searchable=False)


def roofline_plot(run, extra: tuple[tuple[str, float, float, float], ...] = ()) -> Markup:
    """The roofs and every placed kernel; `extra`: (name, flops, bytes, time_us) of other kernels."""
    r = roofs(run)
    points = tuple((p.name, p.flops, p.bytes, p.time_us) for _, p in placements(run)) + tuple(extra)
    svg = cache.cached_file("plot", render.roofline_svg, r.roof.peak_flops, r.roof.bandwidth, points, suffix=".svg")
    return _figure(run, "roofline", svg, "Roofline of the GPU with each kernel placed under it",
                   "Achieved TFLOP/s against arithmetic intensity (log scales), under the measured roofs.")


def of_roof(placed: list[tuple[Labelled, Placement]], name: str) -> Placement:
    return next(p for c, p in placed if c.name.startswith(name))


def closeness(fraction: float) -> str:
    """How far a kernel is from its roof, in words the page words its sentences from."""
    return "close" if fraction >= 0.7 else "partway" if fraction >= 0.3 else "far"


# --- the roofs applied to Parts 3 and 4 ----------------------------------------------------------


def attention_flops(batch: int, heads: int, seq: int, head_dim: int) -> int:
    """Causal attention's two products, halved by the mask (the roofline snippet's formula)."""
    return 2 * batch * heads * seq * seq * head_dim


def attention_bytes(batch: int, heads: int, seq: int, head_dim: int, size: int = 2) -> int:
    """q, k, v read and the output written once: the least a fused kernel moves."""
    return 4 * batch * heads * seq * head_dim * size


def achieved(flops: float, spread: Spread) -> Spread:
    """FLOP/s of each sample of a GPU time (us), in TFLOP/s."""
    return samples((flops / (t * 1e-6) / 1e12 for t in spread.values if t > 0), unit="",
                   label=f"TFLOP/s of {spread.label}", runs=spread.runs)


def decode_weights_read(modules: dict[str, int], hidden: int) -> int:
    """Weights one decode step at batch 1 reads, from `llama_modules`: one row of the input
    embedding (the token's), and every other weight whole. The LM head is read whole, tied or not:
    when tied, the embedding's whole table serves as the head."""
    head = modules["lm_head"] or modules["embed_tokens"]
    return hidden + modules["layers"] + modules["norm"] + head


def decode_bytes_per_token(weights_read: int, layers: int, kv_heads: int, head_dim: int, context: int,
                           size: int = 2) -> int:
    """What one decode step at batch 1 must read at least: the weights it reads
    (`decode_weights_read`) once, and the keys and values of every earlier token in every layer."""
    return weights_read * size + 2 * layers * kv_heads * head_dim * context * size


# --- the exercises --------------------------------------------------------------------------------


@dataclass(frozen=True)
class PeakPlace:
    """Where the [memory] events' peak falls: the op, the step and the phase annotation around it."""

    device: str
    bytes: int
    op: str | None
    step: str | None
    phase: str | None  # forward, backward or optimizer (the snippet's labels)


def peak_place(run, phases: tuple[str, ...] = ("forward", "backward", "optimizer")) -> PeakPlace:
    facts = memory_facts(run.trace)
    d = max(facts.devices, key=lambda d: (d.device.startswith("cuda"), d.peak_allocated))
    at = d.peak_us
    steps = [s.name for s in run.trace.steps if s.ts <= at < s.end]
    labels = [a.name for a in run.trace.by_kind.get("annotation", []) if a.name in phases and a.ts <= at <= a.end]
    return PeakPlace(d.device, d.peak_allocated, d.peak_op, steps[0] if steps else None, labels[0] if labels else None)


@dataclass(frozen=True)
class Frequent:
    name: str
    per_step: float  # launches of it per recorded step
    kinds: int  # distinct kernel names launched in the label per step


def most_launched(run, label: str) -> Frequent:
    """The kernel launched most often inside `label`, over the recorded steps."""
    trace = run.trace
    spans = [a for a in trace.by_kind.get("annotation", []) if a.name == label]
    counts: dict[str, int] = {}
    for act in trace.gpu_activities:
        launch = trace.launch_of(act)
        if launch is not None and any(s.ts <= launch.ts <= s.end and s.tid == launch.tid for s in spans):
            counts[act.name] = counts.get(act.name, 0) + 1
    name = max(counts, key=lambda n: (counts[n], n))
    return Frequent(name, counts[name] / max(len(trace.steps), 1), len(counts))
