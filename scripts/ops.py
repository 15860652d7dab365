"""Shapes and stacks: what `record_shapes=True` and `with_stack=True` add to a trace.

The facts engine reads CPU ops and Python frames only as times (scripts.analysis); these facts
need their args, so the trace must be loaded with them kept:
`load_trace(path, keep_args=OP_ARG_KINDS)`, or in the analyzer's one pass, as columns
(`load_trace(path, skip_kinds=..., op_args=None)`: scripts/oprows.py).

- Shapes. `record_shapes=True` gives each CPU op the args `Input Dims` (one list per input: a
  tensor's sizes, `[]` for a scalar, a list of lists for a tensor list) and `Input type` (the
  dtype's C++ name, `float`, `c10::BFloat16`, `Scalar`, ...). `shape_facts` groups the ops that
  start in a window by (name, input dims, input types), as
  `key_averages(group_by_input_shape=True)` does, with their total and self time (the op's time
  minus that of the ops directly inside it on its thread).
- Stacks. `with_stack=True` records the Python frames as `python_function` events (named
  `file.py(line): function`, nested in time on their thread; `Python id` / `Python parent id`
  chain them). `source_facts` follows each top GPU kernel to the Python line that led to it:
  kernel -> its launch call (by correlation id, as the facts engine links them) -> the frames
  running on the launching thread when the call started -> the innermost frame of user code
  (see `is_library_frame`). Work of the backward pass, launched from autograd's thread where
  no frame runs, gets the frames of the forward op it differentiates (autograd's `Sequence
  number` links them). On a trace without GPU work it does the same for the CPU ops with the
  most self time. A frame's line is where its function starts (Kineto names a frame by its
  code object), not the line of the call inside it.
"""

from __future__ import annotations

import re
import sys
from array import array
from dataclasses import asdict, dataclass, field
from itertools import compress

from .analysis import rounded, short_name
from .oprows import OP_ARG_KINDS, OpRows, op_rows  # noqa: F401 (OP_ARG_KINDS: load_trace's)
from .trace import Event, Trace, Window
TOP_SHAPES = 15
TOP_SOURCES = 10
STACK_DEPTH = 16  # enclosing frames kept per source line, innermost first, to the user's
_FRAME = re.compile(r"^(?P<file>.+?)\((?P<line>\d+)\): (?P<function>.*)$", re.S)
# Frames that are not code a user wrote: the interpreter's built-ins, module and optimizer
# frames torch adds, and files of installed packages or of the standard library.
_NOT_FILES = ("<built-in", "<frozen", "<python>", "nn.Module:", "nn.Optimizer:")
_LIBRARIES = frozenset({"torch", "triton", "numpy", "functorch", "transformers", "accelerate",
                        "_distutils_hack", "typing_extensions", "importlib_metadata"})
_INSTALLED = re.compile(r"(^|/)(site|dist)-packages/|(^|/)lib/python3[.\d]*/")


@dataclass
class ShapeStat:
    """The ops of one name called with one set of input shapes and dtypes."""

    name: str
    input_dims: str  # the `Input Dims` arg as JSON text ("" when the trace has none)
    input_types: str  # the `Input type` arg as JSON text
    count: int
    total_us: float
    self_us: float
    mean_us: float  # total_us / count
    self_share_pct: float  # of the self time of every op that starts in the window


@dataclass
class SourceLine:
    """Where the GPU kernels (or CPU ops) of one name came from, one Python line."""

    name: str  # the kernel's (or op's) name, as in the trace
    kind: str  # kernel / memcpy / memset / cpu_op
    count: int
    total_us: float
    share_pct: float  # of the total time of the activities (ops) of that kind in the window
    op: str | None  # the innermost CPU op around the launch (a kernel's), most frequent
    frame: str | None  # the innermost user frame, shortened (None: no frame, or only library code)
    # The enclosing frames, innermost first, down to the user frame (STACK_DEPTH at most), shortened.
    stack: list[str] = field(default_factory=list)


@dataclass
class OpFacts:
    """Shapes and stacks of one window. Either list is empty when the trace lacks what it needs."""

    label: str
    start_us: float
    end_us: float
    shapes: list[ShapeStat]
    sources: list[SourceLine]

    def to_dict(self) -> dict:
        return rounded(asdict(self))


def has_shapes(trace: Trace) -> bool:
    rows = op_rows(trace, "cpu_op")
    return rows is not None and rows.has_dims


def has_stacks(trace: Trace) -> bool:
    return bool(op_rows(trace, "python"))


def op_facts(trace: Trace, window: Window | None = None, top_shapes: int = TOP_SHAPES,
             top_sources: int = TOP_SOURCES) -> OpFacts | None:
    """Shapes and stacks of `window` (default: the whole trace), or None when the trace has
    neither (or was loaded without the args: see the module's docstring)."""
    window = window or Window(0.0, trace.end_us, "whole trace")
    cpu, python = op_rows(trace, "cpu_op"), op_rows(trace, "python")
    shapes = _shape_facts(cpu, window, top_shapes) if cpu is not None and cpu.has_dims else []
    sources = _source_facts(trace, cpu, python, window, top_sources) if python else []
    if not shapes and not sources:
        return None
    return OpFacts(window.label, window.start, window.end, shapes, sources)


# --- shapes --------------------------------------------------------------------------------------


def self_times(ops: list[Event]) -> dict[int, float]:
    """id(op) -> its duration minus the durations of the ops directly inside it on its thread
    (clamped at 0). `ops` in trace order (parents before children)."""
    own = _self_times([op.ts for op in ops], [op.end for op in ops], [op.dur for op in ops],
                      [(op.pid, op.tid) for op in ops])
    return dict(zip(map(id, ops), own))


def _self_times(ts: list[float], end: list[float], dur: list[float], threads: list) -> list[float]:
    """Each row's self time (as `self_times`), rows in trace order."""
    children = [0.0] * len(ts)
    open_by_thread: dict[tuple, list[int]] = {}
    for j, thread in enumerate(threads):
        stack = open_by_thread.get(thread)
        if stack is None:
            stack = open_by_thread[thread] = []
        start = ts[j]
        while stack and end[stack[-1]] <= start:
            stack.pop()
        if stack:
            children[stack[-1]] += dur[j]
        stack.append(j)
    return [max(d - c, 0.0) for d, c in zip(dur, children)]


def shape_facts(trace: Trace, window: Window, top: int = TOP_SHAPES) -> list[ShapeStat]:
    """The `top` (name, input dims, input types) groups of the ops that start in the window, by
    self time (then total time, then name)."""
    rows = op_rows(trace, "cpu_op")
    return _shape_facts(rows, window, top) if rows is not None else []


def _shape_facts(ops: OpRows, window: Window, top: int) -> list[ShapeStat]:
    own = _self_times(ops.ts, ops.end, ops.dur, ops.threads)
    groups: dict[tuple, list] = {}
    all_self = 0.0
    lo, hi = window.start, window.end
    for ts, name, dims, types, dur, mine in zip(ops.ts, ops.names, ops.dims, ops.types, ops.dur,
                                                own):
        if not lo <= ts < hi:
            continue
        entry = groups.get((name, dims, types))
        if entry is None:
            entry = groups[(name, dims, types)] = [0, 0.0, 0.0]
        entry[0] += 1
        entry[1] += dur
        entry[2] += mine
        all_self += mine
    ranked = sorted(groups.items(), key=lambda kv: (-kv[1][2], -kv[1][1], kv[0]))[:top]
    return [ShapeStat(name, dims, types, count, total, self_us, total / count,
                      100.0 * self_us / all_self if all_self else 0.0)
            for (name, dims, types), (count, total, self_us) in ranked]


# --- stacks --------------------------------------------------------------------------------------


def is_library_frame(frame: str) -> bool:
    """Whether a Python frame's name (`file.py(line): function`) is not user code: a built-in,
    torch's module/optimizer frames, a file under site-packages or the standard library, or a
    file whose top package is torch, triton, numpy, ... or a standard-library module (traces
    name those files relative to their sys.path entry: `torch/nn/modules/linear.py`,
    `contextlib.py`)."""
    if frame.startswith(_NOT_FILES):
        return True
    match = _FRAME.match(frame)
    path = (match.group("file") if match else frame).replace("\\", "/")
    if _INSTALLED.search(path):
        return True
    if path.startswith("/"):
        return False  # an absolute path outside the installed places: the user's file
    top = path.split("/", 1)[0].removesuffix(".py")
    return top in _LIBRARIES or top in sys.stdlib_module_names


def short_frame(frame: str, parts: int = 3, width: int = 100) -> str:
    """A frame's name with its file path cut to the last `parts` components (`…/` before); the
    line and function stay; at most `width` characters, as short_name cuts kernel names."""
    match = _FRAME.match(frame)
    if match:
        path = match.group("file").replace("\\", "/").split("/")
        file = "/".join(path) if len(path) <= parts else "…/" + "/".join(path[-parts:])
        frame = f"{file}({match.group('line')}): {match.group('function')}"
    return frame if len(frame) <= width else frame[: width - 1] + "…"


def enclosing(events: list[Event], queries: list[tuple[tuple, float]]) -> list[list[Event]]:
    """For each (thread, time) query, the events of `events` (trace order) on that thread that
    run at that time, outermost first."""
    found = _enclosing([e.ts for e in events], [e.end for e in events],
                       [(e.pid, e.tid) for e in events], queries)
    return [list(map(events.__getitem__, rows)) for rows in found]


def _enclosing(ts: list[float], end: list[float], threads: list,
               queries: list[tuple[tuple, float]]) -> list[tuple[int, ...]]:
    """`enclosing` of rows in trace order, as row numbers: one sweep per thread with a stack of
    open rows. Equal answers are one tuple (a stack repeats for many queries)."""
    by_thread: dict[tuple, range | array] = {}  # the rows of each thread asked about
    distinct = set(threads)
    for thread in {thread for thread, _ in queries} & distinct:
        by_thread[thread] = (range(len(threads)) if len(distinct) == 1 else
                             array("q", compress(range(len(threads)), map(thread.__eq__, threads))))
    found: list = [()] * len(queries)
    answers: dict[tuple, tuple] = {}
    order = sorted(range(len(queries)), key=lambda i: queries[i][1])
    at: dict[tuple, int] = {}  # thread -> next row to open
    stacks: dict[tuple, list] = {}  # thread -> the open rows, as (end, row)
    for i in order:
        thread, t = queries[i]
        mine = by_thread.get(thread)
        if not mine:
            continue
        stack = stacks.setdefault(thread, [])
        k = at.get(thread, 0)
        count = len(mine)
        while k < count:
            j = mine[k]
            start = ts[j]
            if start > t:
                break
            while stack and stack[-1][0] < start:
                stack.pop()
            stack.append((end[j], j))
            k += 1
        at[thread] = k
        while stack and stack[-1][0] < t:
            stack.pop()
        answer = tuple([j for e, j in stack if e >= t])  # nesting in a trace is not always exact
        found[i] = answers.setdefault(answer, answer)
    return found


class _Frames:
    """Python frame names, with whether each is library code (asked once per name)."""

    def __init__(self, names: list[str]):
        self.names = names
        self.library: dict[str, bool] = {}

    def is_library(self, row: int) -> bool:
        name = self.names[row]
        found = self.library.get(name)
        if found is None:
            found = self.library[name] = is_library_frame(name)
        return found

    def down_to_user(self, chain: list[int]) -> list[str]:
        """The frames (outermost first) innermost first, down to the innermost user frame."""
        inner = chain[::-1]
        at = next((i for i, f in enumerate(inner) if not self.is_library(f)), len(inner) - 1)
        return [self.names[f] for f in inner[:at + 1]]

    def user_frame(self, chain: list[int]) -> str | None:
        """The innermost frame of user code among enclosing frames (outermost first)."""
        return next((self.names[f] for f in reversed(chain) if not self.is_library(f)), None)


def _frames_of_forward(ops: OpRows, python: OpRows, frames: list[list[int]],
                       op_chains: list[list[int]]) -> None:
    """Work of the backward pass runs on autograd's thread, which has no Python frames: its
    frames are those of the forward op it differentiates, found as autograd links them (the
    backward op's `Sequence number`, with a `Fwd thread id`, names the forward op's). Fills in
    `frames` where they are empty and such a link exists."""
    forward: dict[int, int] = {}
    for j, (seq, fwd) in enumerate(zip(ops.sequence, ops.forward)):
        if type(seq) is int and not fwd:
            forward.setdefault(seq, j)  # the outermost op of that sequence number
    wanted, queries = [], []
    sequence, is_backward = ops.sequence, ops.forward
    for i, (chain, op_chain) in enumerate(zip(frames, op_chains)):
        if chain:
            continue
        linked = next((forward.get(sequence[j]) for j in reversed(op_chain)
                       if is_backward[j] and forward.get(sequence[j]) is not None), None)
        if linked is not None:
            wanted.append(i)
            queries.append((ops.threads[linked], ops.ts[linked]))
    for i, chain in zip(wanted, _enclosing(python.ts, python.end, python.threads, queries)):
        frames[i] = chain


def source_facts(trace: Trace, window: Window, top: int = TOP_SOURCES) -> list[SourceLine]:
    """The `top` (name, Python line) pairs by total time: of the GPU activities launched in the
    window (by their launch call's start, as the facts engine places them), or on a trace
    without GPU work, of the CPU ops that start in it, by self time."""
    python = op_rows(trace, "python")
    if not python:
        return []
    return _source_facts(trace, op_rows(trace, "cpu_op"), python, window, top)


def _source_facts(trace: Trace, ops: OpRows | None, python: OpRows, window: Window,
                  top: int) -> list[SourceLine]:
    items = []  # (name, kind, time, thread, ts)
    for activity in trace.gpu_activities:
        launch = trace.launch_of(activity)
        if launch is not None and window.start <= launch.ts < window.end:
            items.append((activity.name, activity.kind, activity.dur, (launch.pid, launch.tid),
                          launch.ts))
    if not items and not trace.gpu_activities and ops is not None:
        own = _self_times(ops.ts, ops.end, ops.dur, ops.threads)
        items = [(name, "cpu_op", mine, thread, ts)
                 for name, mine, thread, ts in zip(ops.names, own, ops.threads, ops.ts)
                 if window.start <= ts < window.end]
    if not items:
        return []
    queries = [(thread, ts) for _, _, _, thread, ts in items]
    frames = _enclosing(python.ts, python.end, python.threads, queries)
    if ops is not None:
        op_chains = _enclosing(ops.ts, ops.end, ops.threads, queries)
        if ops.sequence is not None:
            _frames_of_forward(ops, python, frames, op_chains)
    else:
        op_chains = [[] for _ in queries]
    names = _Frames(python.names)
    totals: dict[str, float] = {}
    groups: dict[tuple, list] = {}  # (name, kind, frame) -> count, time, ops, stack
    for (name, kind, time, _, _), chain, op_chain in zip(items, frames, op_chains):
        totals[kind] = totals.get(kind, 0.0) + time
        frame = names.user_frame(chain)
        entry = groups.get((name, kind, frame))
        if entry is None:
            entry = groups[(name, kind, frame)] = [0, 0.0, {}, chain]
        entry[0] += 1
        entry[1] += time
        op = ops.names[op_chain[-1]] if op_chain and kind != "cpu_op" else None
        if op is not None:
            entry[2][op] = entry[2].get(op, 0) + 1
    ranked = sorted(groups.items(), key=lambda kv: (-kv[1][1], kv[0][0], kv[0][2] or ""))[:top]
    return [SourceLine(
        name=name, kind=kind, count=count, total_us=time,
        share_pct=100.0 * time / totals[kind] if totals[kind] else 0.0,
        op=max(op_counts, key=lambda o: (op_counts[o], o)) if op_counts else None,
        frame=None if frame is None else short_frame(frame),
        stack=[short_frame(f) for f in names.down_to_user(chain)][:STACK_DEPTH],
    ) for (name, kind, frame), (count, time, op_counts, chain) in ranked]


# --- reading them out ----------------------------------------------------------------------------


def op_text(facts: OpFacts) -> list[str]:
    """The shapes and stacks sections of the analyzer's summary."""
    from .units import format_us

    lines = []
    if facts.shapes:
        lines.append(f"ops by input shape (record_shapes=True), in {facts.label}, by self time:")
        lines.append(f"  {'self':>6}  {'self time':>10}  {'total':>10}  {'count':>6}  name  "
                     "input dims  input types")
        for s in facts.shapes:
            lines.append(f"  {s.self_share_pct:5.1f}%  {format_us(s.self_us):>10}  "
                         f"{format_us(s.total_us):>10}  {s.count:6,}  {s.name}  "
                         f"{s.input_dims or '-'}  {s.input_types or '-'}")
    if facts.sources:
        what = ("GPU activities" if facts.sources[0].kind != "cpu_op" else
                "CPU ops, by self time")
        lines.append(f"where the top {what} came from (with_stack=True), in {facts.label}:")
        for s in facts.sources:
            via = f" via {s.op}" if s.op else ""
            lines.append(f"  {s.share_pct:5.1f}%  {format_us(s.total_us):>10}  {s.count:6,}  "
                         f"{short_name(s.name)}{via}")
            lines.append(f"          <- {s.frame or '(no user frame)'}")
    return lines
