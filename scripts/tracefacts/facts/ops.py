"""Shapes and stacks: what `record_shapes=True` and `with_stack=True` add to a trace.

The facts engine reads CPU ops and Python frames only as times (scripts.tracefacts.facts.analysis); these facts
need their args, so the trace must be loaded with them kept:
`load_trace(path, keep_args=OP_ARG_KINDS)`, or in the analyzer's one pass, as columns
(`load_trace(path, skip_kinds=..., op_args=None)`: scripts/tracefacts/model/columnar/rows.py).

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
from itertools import compress, repeat
from operator import and_, ge, is_, le, lt, ne, not_, sub

from .analysis import rounded, short_name
from ..model.launches import activity_table, launch_table
from ..model.nesting import _index, _Nesting
from ..model.columnar.rows import (_NO_SEQUENCE, OP_ARG_KINDS, Coded, OpRows, Sequences,  # noqa: F401
                     op_rows, pieces, taken)  # (OP_ARG_KINDS: load_trace's)
from ..model.trace import Event, Trace, Window
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


def _self_times(ts: list[float], end: list[float], dur: list[float], threads: list) -> array:
    """Each row's self time (as `self_times`), rows in trace order: arrays, 8 bytes a row where
    lists would hold a float object of 24 more (a trace may have millions of ops)."""
    children = array("d", bytes(8 * len(ts)))
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
    return array("d", map(max, map(sub, dur, children), repeat(0.0)))


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
    nesting = _Nesting([e.ts for e in events], [e.end for e in events],
                       [(e.pid, e.tid) for e in events])
    return [list(map(events.__getitem__, nesting.chain(thread, t))) for thread, t in queries]


def _down_to_user(names: list[str], user: bytes, chain: list[int]) -> list[str]:
    """The frames of a chain (outermost first) innermost first, down to the innermost user
    frame (all of them without one)."""
    inner = chain[::-1]
    at = next((i for i, f in enumerate(inner) if user[f]), len(inner) - 1)
    return [names[f] for f in inner[:at + 1]]


def _forward_points(ops: OpRows, nesting: _Nesting, items: _Items, some: bytearray
                    ) -> array | None:
    """Work of the backward pass runs on autograd's thread, which has no Python frames: its
    frames are those of the forward op it differentiates, found as autograd links them (the
    backward op's `Sequence number`, with a `Fwd thread id`, names the forward op's). For each
    item where no frame runs (not `some`), the row of that forward op, for the innermost
    backward op running there that has one; -1 without (None: for none)."""
    forward = _forward_ops(ops)
    sequence, is_backward = ops.sequence, ops.forward
    numbers, other, absent = ((sequence.numbers, sequence.other, sequence.absent)
                              if isinstance(sequence, Sequences) else (sequence, {}, _NO_SEQUENCE))
    linked = array(_index(ops.ts), [-1]) * len(items)
    found = False
    for i in compress(range(len(items)), map(not_, some)):
        for j in nesting.running(items.threads[i], items.ts[i]):
            if is_backward[j]:
                number = numbers[j]
                row = forward.get(other.get(j) if number == absent else number)
                if row is not None:
                    linked[i] = row
                    found = True
                    break
    return linked if found else None


def _forward_ops(ops: OpRows) -> dict:
    """Sequence number -> the outermost forward op (first in trace order) that has it."""
    sequence = ops.sequence
    if isinstance(sequence, Sequences):  # the ints of the column read as they are
        rows = list(compress(range(len(sequence)), map(and_, map(not_, ops.forward),
                                                         map(ne, sequence.numbers,
                                                             repeat(sequence.absent)))))
        wider = [row for row, value in sequence.other.items()
                 if type(value) is int and not ops.forward[row]]
        if not wider:
            return dict(zip(map(sequence.numbers.__getitem__, reversed(rows)), reversed(rows)))
        rows = sorted(rows + wider)
    else:
        forward_int = map(and_, map(not_, ops.forward),
                          map(is_, map(type, sequence), repeat(int)))
        rows = list(compress(range(len(sequence)), forward_int))  # a list at a time
    return dict(zip(map(sequence.__getitem__, reversed(rows)), reversed(rows)))


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
    items = _launched(trace, window)
    if not items and not activity_table(trace) and ops is not None:
        items = _Items()  # of lists, added to (`_launched`'s are coded)
        own = _self_times(ops.ts, ops.end, ops.dur, ops.threads)
        for name, mine, thread, ts in zip(ops.names, own, ops.threads, ops.ts):
            if window.start <= ts < window.end:
                items.add(name, "cpu_op", mine, thread, ts)
        del own
    if not items:
        return []
    by_name = {name: not is_library_frame(name) for name in set(python.names)}
    user = bytes(map(by_name.__getitem__, python.names))  # whether a frame is user code
    # The rows' ends where made already (Events), else of the threads asked only.
    frames = _Nesting(python.ts, python.ends, python.threads, user, dur=python.dur)
    op_nesting = (_Nesting(ops.ts, ops.ends, ops.threads, dur=ops.dur) if ops is not None else
                  None)
    some, innermost = frames.innermost_marked_all(items.threads, items.ts)
    # Where the frames are read: at the launch (None, or -1), or for work of the backward pass
    # on a thread without frames, at the forward op it differentiates (that op's row).
    points = None
    if not all(some) and ops is not None and ops.sequence is not None:
        linked = _forward_points(ops, op_nesting, items, some)
        if linked:
            points = linked
            pending = array(_index(items), compress(range(len(items)),
                                                    map(ge, linked, repeat(0))))
            threads = _threads_at(ops.threads, array(linked.typecode,
                                                     map(linked.__getitem__, pending)))
            at = array("d", map(ops.ts.__getitem__, map(linked.__getitem__, pending)))
            for i, mine in zip(pending, frames.innermost_marked_all(threads, at)[1]):
                innermost[i] = mine
    totals: dict[str, float] = {}
    groups: dict[tuple, list] = {}  # (name, kind, frame) -> count, time, its items, point
    names = python.names  # a frame's name by codes where Coded (no call of Python an item)
    frame_names, frame_of = ((names.values, names.codes) if isinstance(names, Coded) else
                             (names, range(len(names))))
    for i, (name, kind, time, mine) in enumerate(zip(items.names, items.kinds, items.times,
                                                      innermost)):
        totals[kind] = totals.get(kind, 0.0) + time
        key = name, kind, None if mine < 0 else frame_names[frame_of[mine]]
        entry = groups.get(key)
        if entry is None:
            entry = groups[key] = [0, 0.0, array(_index(items)), i]
        entry[0] += 1
        entry[1] += time
        entry[2].append(i)
    del some, innermost
    ranked = sorted(groups.items(), key=lambda kv: (-kv[1][1], kv[0][0], kv[0][2] or ""))[:top]
    del groups
    stacks = [[short_frame(f) for f in
               _down_to_user(python.names, user,
                             frames.chain(*_point(ops, items, points, first)))][:STACK_DEPTH]
              for _, (_, _, _, first) in ranked]
    del frames  # its columns of each thread, before the ops' (`_commonest_op`) are made
    return [SourceLine(
        name=name, kind=kind, count=count, total_us=time,
        share_pct=100.0 * time / totals[kind] if totals[kind] else 0.0,
        op=_commonest_op(ops, op_nesting, items, members) if kind != "cpu_op" else None,
        frame=None if frame is None else short_frame(frame),
        stack=stack,
    ) for ((name, kind, frame), (count, time, members, _)), stack in zip(ranked, stacks)]


def _threads_at(threads: list[tuple] | Coded, rows: array) -> list[tuple] | Coded:
    """The threads of `rows`: of a Coded column its codes (grouped by a pass over them each,
    `_Nesting`), not a tuple looked up a row."""
    if isinstance(threads, Coded):
        return threads.take(rows, None)
    return list(map(threads.__getitem__, rows))


def _point(ops: OpRows | None, items: _Items, points: array | None, i: int) -> tuple:
    """The (thread, time) where the frames of item i are read (see `_source_facts`)."""
    row = -1 if points is None else points[i]
    return (items.threads[i], items.ts[i]) if row < 0 else (ops.threads[row], ops.ts[row])


def _launched(trace: Trace, window: Window) -> _Items:
    """The GPU activities launched in the window (by their launch call's start), with their
    call's thread and start: columns taken at C speed, not a row at a time."""
    calls, activities = launch_table(trace), activity_table(trace)
    rows = activities.launch_rows(calls)
    chosen = array(_index(rows), compress(range(len(rows)), map(ge, rows, repeat(0))))
    parts = pieces(chosen)  # the runs of the order found once, for each column taken by it
    launches = taken(rows, chosen, parts)
    at = array("d", map(calls.ts.__getitem__, launches))
    inside = bytes(map(and_, map(le, repeat(window.start), at), map(lt, at, repeat(window.end))))
    if not all(inside):
        chosen = array(chosen.typecode, compress(chosen, inside))
        launches = array(launches.typecode, compress(launches, inside))
        at = array("d", compress(at, inside))
        parts = pieces(chosen)
    items = _Items()
    items.names = activities.names.take(chosen, parts)  # coded: a byte or two an item, not 8
    items.kinds = activities.kinds.take(chosen, parts)
    items.times = taken(activities.dur, chosen, parts)
    items.threads = calls.threads.take(launches, None)
    items.ts = at
    return items


class _Items:
    """The activities (or ops) whose Python lines `_source_facts` looks for, as columns of
    shared objects (a tuple each would take some 140 bytes); of activities, names, kinds and
    threads coded (`_launched`)."""

    def __init__(self):
        self.names: list[str] | Coded = []
        self.kinds: list[str] | Coded = []
        self.times = array("d")
        self.threads: list[tuple] | Coded = []
        self.ts = array("d")  # the calls' starts, read from columns: not float objects

    def add(self, name: str, kind: str, time: float, thread: tuple, ts: float) -> None:
        self.names.append(name)
        self.kinds.append(kind)
        self.times.append(time)
        self.threads.append(thread)
        self.ts.append(ts)

    def __len__(self) -> int:
        return len(self.names)


def _commonest_op(ops: OpRows | None, nesting: _Nesting | None, items: _Items,
                  members: array) -> str | None:
    """The innermost CPU op around the launch of most of these items (the greater name of
    equally many), None without any: asked only of the groups shown."""
    if nesting is None:
        return None
    innermost = nesting.innermost_all(_threads_at(items.threads, members),
                                      array("d", map(items.ts.__getitem__, members)))
    counts: dict[str, int] = {}
    for op in innermost:
        if op >= 0:
            op = ops.names[op]
            counts[op] = counts.get(op, 0) + 1
    return max(counts, key=lambda o: (counts[o], o)) if counts else None


# --- reading them out ----------------------------------------------------------------------------


def op_text(facts: OpFacts) -> list[str]:
    """The shapes and stacks sections of the analyzer's summary (names bounded here, escaped
    by the caller's printer)."""
    from ..model.names import bounded
    from ..model.units import format_us

    lines = []
    if facts.shapes:
        lines.append(f"ops by input shape (record_shapes=True), in {bounded(facts.label)}, by self time:")
        lines.append(f"  {'self':>6}  {'self time':>10}  {'total':>10}  {'count':>6}  name  "
                     "input dims  input types")
        for s in facts.shapes:
            lines.append(f"  {s.self_share_pct:5.1f}%  {format_us(s.self_us):>10}  "
                         f"{format_us(s.total_us):>10}  {s.count:6,}  {bounded(s.name)}  "
                         f"{bounded(s.input_dims or '-')}  {bounded(s.input_types or '-')}")
    if facts.sources:
        what = ("GPU activities" if facts.sources[0].kind != "cpu_op" else
                "CPU ops, by self time")
        lines.append(f"where the top {what} came from (with_stack=True), in {bounded(facts.label)}:")
        for s in facts.sources:
            via = f" via {bounded(s.op)}" if s.op else ""
            lines.append(f"  {s.share_pct:5.1f}%  {format_us(s.total_us):>10}  {s.count:6,}  "
                         f"{short_name(s.name)}{via}")
            lines.append(f"          <- {bounded(s.frame or '(no user frame)')}")
    return lines
