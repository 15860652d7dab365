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

import math
import re
import sys
from array import array
from bisect import bisect_right
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from functools import cache, partial
from itertools import compress, repeat
from operator import and_, ge, is_, le, lt, ne, not_, sub

from .analysis import rounded, short_name
from .launches import activity_table, launch_table
from .oprows import (_NO_SEQUENCE, OP_ARG_KINDS, Coded, OpRows, Sequences,  # noqa: F401
                     op_rows)  # (OP_ARG_KINDS: load_trace's)
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


_UNKNOWN = -2  # a parent not looked for yet (-1: none)


def _parent(starts: list, ends: list, by_end: Callable[[], _Ends], parents: list,
            row: int) -> int:
    """The row under `row` on the sweep's stack (-1: none), kept: the last row before it that
    had not ended when it started. Up the parents of the row before it while they are known
    (the rows they pass over ended before that row started, so before this one); at one not
    known, by the rows' ends."""
    start = starts[row]
    k = row - 1
    while k >= 0 and ends[k] < start:
        above = parents[k]
        if above == _UNKNOWN:
            k = by_end().last_at_least(k - 1, start)
            break
        k = above
    parents[row] = k
    return k


class _Nesting:
    """Which rows (trace order) run at a given time on a given thread (start <= t <= end),
    asked at a few points.

    A sweep in trace order would keep a stack of open rows, each row popping those that ended
    before it starts; at time t the rows running are on that stack (nesting in a trace is not
    always exact: some on it may have ended, and are left out). That stack is a chain of
    parents, a row's parent being the top of the stack it was pushed onto: the last row before
    it that had not ended when it started. So a query bisects the thread's starts for the last
    row opened and walks up its parents, each found when first needed (by the rows' ends,
    `_Ends`) and kept; no sweep visits every row of every thread. Each row also keeps the
    innermost marked row up its parents (`innermost_marked`: the user's frame)."""

    def __init__(self, ts, end, threads: list[tuple], marked: list[bool] | None = None):
        self.ts, self.end, self.all_threads = ts, end, threads
        self.marked = marked  # rows that `innermost_marked` looks for
        # thread -> its rows, their starts, ends and parents, and for `innermost_marked` each
        # row's innermost marked row up its parents and the earliest end among them
        self._threads: dict[tuple, tuple] = {}

    def _thread(self, thread: tuple) -> tuple | None:
        found = self._threads.get(thread, 0)
        if found != 0:
            return found
        threads = self.all_threads
        # Arrays: a trace may have millions of rows (4 or 8 bytes a value, not an object).
        index = "i" if len(threads) < (1 << 31) else "q"
        if threads and threads[0] == thread and threads.count(thread) == len(threads):
            rows = range(len(threads))
            starts, ends = self.ts, self.end
        else:
            code = threads._code.get(thread) if isinstance(threads, Coded) else None
            # Coded: its codes compared with one int (not each row's tuple with the thread)
            mine = (bytes(map(thread.__eq__, threads)) if code is None else
                    bytes(map(code.__eq__, threads.codes)))
            rows = array(index, compress(range(len(threads)), mine))
            starts, ends = array("d", compress(self.ts, mine)), array("d", compress(self.end, mine))
            del mine
        count = len(rows)
        parents = array(index, [_UNKNOWN]) * count
        nearest = earliest = None  # only for `innermost_marked`
        if self.marked is not None:
            nearest = array(index, [_UNKNOWN]) * count
            earliest = array("d", bytes(8 * count))  # read only where `nearest` is known
        found = self._threads[thread] = ((rows, starts, ends, parents, nearest, earliest,
                                          cache(partial(_Ends, ends))) if rows else None)
        return found

    def running(self, thread: tuple, t: float) -> Iterator[int]:
        """The rows running at `t` on `thread`, innermost first."""
        found = self._thread(thread)
        if found is None:
            return
        rows, starts, ends, parents, _, _, by_end = found
        at = bisect_right(starts, t) - 1
        while at >= 0:
            if ends[at] >= t:
                yield rows[at]
            parent = parents[at]
            at = parent if parent != _UNKNOWN else _parent(starts, ends, by_end, parents, at)

    def innermost_marked(self, thread: tuple, t: float) -> tuple[bool, int | None]:
        """Whether any row runs at `t` on `thread`, and the innermost marked one (None: none
        is). Each row keeps the innermost marked row up its parents, so that this reads one
        row where nesting is exact (no row up the parents ended before `t`)."""
        found = self._thread(thread)
        if found is None:
            return False, None
        rows, starts, ends, parents, nearest, earliest, by_end = found
        at = bisect_right(starts, t) - 1
        while at >= 0 and ends[at] < t:  # rows that ended before t: not running
            parent = parents[at]
            at = parent if parent != _UNKNOWN else _parent(starts, ends, by_end, parents, at)
        if at < 0:
            return False, None
        if nearest[at] == _UNKNOWN:
            self._fill(found, at)
        if earliest[at] >= t:
            return True, None if nearest[at] < 0 else rows[nearest[at]]
        marked = self.marked
        return True, next((row for row in self.running(thread, t) if marked[row]), None)

    def innermost_marked_all(self, threads: list[tuple], times) -> tuple[bytearray, array]:
        """`innermost_marked` of each (threads[i], times[i]): whether any row runs (a byte
        each) and the innermost marked row (-1: none), the queries of a thread together (its
        columns read once, no call of Python a query where nesting is exact)."""
        some, mine = bytearray(len(times)), array(_index(self.ts), [-1]) * len(times)
        marked = self.marked
        for thread, queries in _rows_by(threads).items():
            found = self._thread(thread)
            if found is None:
                continue
            rows, starts, ends, parents, nearest, earliest, by_end = found
            for i in queries:
                t = times[i]
                at = bisect_right(starts, t) - 1
                while at >= 0 and ends[at] < t:  # rows that ended before t: not running
                    parent = parents[at]
                    at = parent if parent != _UNKNOWN else _parent(starts, ends, by_end,
                                                                   parents, at)
                if at < 0:
                    continue
                some[i] = 1
                if nearest[at] == _UNKNOWN:
                    self._fill(found, at)
                if earliest[at] >= t:
                    if nearest[at] >= 0:
                        mine[i] = rows[nearest[at]]
                else:
                    mine[i] = next((row for row in self.running(thread, t) if marked[row]), -1)
        return some, mine

    def innermost_all(self, threads: list[tuple], times) -> array:
        """The innermost row running at each (threads[i], times[i]) (-1: none), as
        `next(running(...))`, the queries of a thread together."""
        innermost = array(_index(self.ts), [-1]) * len(times)
        for thread, queries in _rows_by(threads).items():
            found = self._thread(thread)
            if found is None:
                continue
            rows, starts, ends, parents, _, _, by_end = found
            for i in queries:
                t = times[i]
                at = bisect_right(starts, t) - 1
                while at >= 0 and ends[at] < t:
                    parent = parents[at]
                    at = parent if parent != _UNKNOWN else _parent(starts, ends, by_end,
                                                                   parents, at)
                if at >= 0:
                    innermost[i] = rows[at]
        return innermost

    def _fill(self, found: tuple, at: int) -> None:
        rows, starts, ends, parents, nearest, earliest, by_end = found
        path = []
        while at >= 0 and nearest[at] == _UNKNOWN:
            path.append(at)
            parent = parents[at]
            at = parent if parent != _UNKNOWN else _parent(starts, ends, by_end, parents, at)
        near, low = (nearest[at], earliest[at]) if at >= 0 else (-1, math.inf)
        marked = self.marked
        for at in reversed(path):
            if marked[rows[at]]:
                near = at
            low = min(low, ends[at])
            nearest[at], earliest[at] = near, low

    def chain(self, thread: tuple, t: float) -> list[int]:
        """The rows running at `t` on `thread`, outermost first."""
        return list(self.running(thread, t))[::-1]


_BLOCK = 32  # rows a block of _Ends


class _Ends:
    """Values by position, for "the last position at or before `at` whose value is `t` or
    more": each block of _BLOCK positions keeps its greatest value, and the blocks are the
    leaves of a binary tree of maxima (the root at 1, node i's children at 2i and 2i + 1), so
    that the search reads a few values in a block, then whole blocks by their maxima, in a
    logarithmic number of steps."""

    def __init__(self, values):
        self.values = values
        level = [max(values[i:i + _BLOCK]) for i in range(0, len(values), _BLOCK)]
        self.leaves = 1 << max(len(level) - 1, 0).bit_length()
        level += [-math.inf] * (self.leaves - len(level))
        levels = [level]
        while len(level) > 1:
            level = list(map(max, level[0::2], level[1::2]))
            levels.append(level)
        self.tree = [-math.inf]
        for level in reversed(levels):
            self.tree += level

    def last_at_least(self, at: int, t: float) -> int:
        """The last position at or before `at` whose value is `t` or more (-1: none)."""
        values = self.values
        first = at - at % _BLOCK
        while at >= first:
            if values[at] >= t:
                return at
            at -= 1
        if first == 0:
            return -1
        # The blocks before: from the leaf before this block, past each subtree whose maximum
        # is less than t, leftwards; then down the rightmost branch of the first that reaches t.
        tree, node = self.tree, self.leaves + first // _BLOCK - 1
        while tree[node] < t:
            while not node & 1:  # a left child: what lies left of it lies left of its parent
                node >>= 1
            if node == 1:
                return -1
            node -= 1
        while node < self.leaves:
            node = 2 * node + 1 if tree[2 * node + 1] >= t else 2 * node
        at = (node - self.leaves) * _BLOCK + _BLOCK - 1
        while values[at] < t:
            at -= 1
        return at


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
    numbers, other = ((sequence.numbers, sequence.other) if isinstance(sequence, Sequences)
                      else (sequence, {}))
    linked = array(_index(ops.ts), [-1]) * len(items)
    found = False
    for i in compress(range(len(items)), map(not_, some)):
        for j in nesting.running(items.threads[i], items.ts[i]):
            if is_backward[j]:
                number = numbers[j]
                row = forward.get(other.get(j) if number == _NO_SEQUENCE else number)
                if row is not None:
                    linked[i] = row
                    found = True
                    break
    return linked if found else None


def _forward_ops(ops: OpRows) -> dict:
    """Sequence number -> the outermost forward op (first in trace order) that has it."""
    sequence = ops.sequence
    if isinstance(sequence, Sequences):  # the ints in 64 bits read as they are
        rows = list(compress(range(len(sequence)), map(and_, map(not_, ops.forward),
                                                         map(ne, sequence.numbers,
                                                             repeat(_NO_SEQUENCE)))))
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
        own = _self_times(ops.ts, ops.end, ops.dur, ops.threads)
        for name, mine, thread, ts in zip(ops.names, own, ops.threads, ops.ts):
            if window.start <= ts < window.end:
                items.add(name, "cpu_op", mine, thread, ts)
        del own
    if not items:
        return []
    by_name = {name: not is_library_frame(name) for name in set(python.names)}
    user = bytes(map(by_name.__getitem__, python.names))  # whether a frame is user code
    frames = _Nesting(python.ts, python.end, python.threads, user)
    op_nesting = _Nesting(ops.ts, ops.end, ops.threads) if ops is not None else None
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
            threads = list(map(ops.threads.__getitem__, map(linked.__getitem__, pending)))
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


def _index(rows) -> str:
    """The array type of row numbers (or positions) into `rows`: 4 bytes where they fit."""
    return "i" if len(rows) < (1 << 31) else "q"


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
    at = array("d", map(calls.ts.__getitem__, map(rows.__getitem__, chosen)))
    inside = bytes(map(and_, map(le, repeat(window.start), at), map(lt, at, repeat(window.end))))
    if not all(inside):
        chosen = array(chosen.typecode, compress(chosen, inside))
        at = array("d", compress(at, inside))
    items = _Items()
    items.names = list(activities.names.take(chosen))
    items.kinds = list(activities.kinds.take(chosen))
    items.times = array("d", map(activities.dur.__getitem__, chosen))
    items.threads = list(calls.threads.take(map(rows.__getitem__, chosen)))
    items.ts = at
    return items


def _rows_by(keys) -> dict:
    """key -> the positions that hold it, in order."""
    rows: dict = {}
    index = _index(keys)
    for i, key in enumerate(keys):
        found = rows.get(key)
        if found is None:
            found = rows[key] = array(index)
        found.append(i)
    return rows


class _Items:
    """The activities (or ops) whose Python lines `_source_facts` looks for, as columns of
    shared objects (a tuple each would take some 140 bytes)."""

    def __init__(self):
        self.names: list[str] = []
        self.kinds: list[str] = []
        self.times = array("d")
        self.threads: list[tuple] = []
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
    innermost = nesting.innermost_all(list(map(items.threads.__getitem__, members)),
                                      array("d", map(items.ts.__getitem__, members)))
    counts: dict[str, int] = {}
    for op in innermost:
        if op >= 0:
            op = ops.names[op]
            counts[op] = counts.get(op, 0) + 1
    return max(counts, key=lambda o: (counts[o], o)) if counts else None


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
