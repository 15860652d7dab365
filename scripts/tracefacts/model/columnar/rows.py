"""The CPU ops and Python frames that shapes and stacks read (scripts/tracefacts/facts/ops.py), as compact
columns: what `load_trace(..., op_args=True)` keeps of those kinds when it skips making Events of
them, in a few dozen bytes an event instead of a few hundred, so that a trace of millions of
frames is read in one pass and in bounded memory. `op_rows` gives the same rows from either
source, columns or Events (`load_trace(keep_args=OP_ARG_KINDS)`), in trace order. Standard
library only.
"""

from __future__ import annotations

import json
from array import array
from dataclasses import dataclass
from itertools import compress, islice, pairwise, repeat
from operator import add, and_, eq, is_not, itemgetter, ne, sub, truth

from .orders import (SMALL, in_trace_order, longest_first_at_equal_starts,  # noqa: F401
                     sorted_floats, stable_order, stable_order_in_pieces, trace_order,
                     trace_order_in_pieces)

OP_ARG_KINDS = frozenset({"cpu_op", "python"})  # the kinds whose args scripts.tracefacts.facts.ops reads
# The args of a CPU op that scripts.tracefacts.facts.ops reads: lists kept as JSON text, the others as values.
DIMS, TYPES, SEQUENCE, FORWARD = "Input Dims", "Input type", "Sequence number", "Fwd thread id"
OP_ARGS = (SEQUENCE, FORWARD, DIMS, TYPES)
MISSING = object()  # an arg that an event does not have
_NO_SEQUENCE = -(1 << 63)  # in an id column of 64 bits: none (see NO_ID)
_DECODED = (list, dict, int, float, bool)  # the types json decodes a value into, but str
_NONE = (MISSING, MISSING, MISSING, MISSING)  # the OP_ARGS of an event without args
# What `_text` reads as it is (object: MISSING); any other type is a buffer (msgspec.Raw).
_TEXT_OR_DECODED = frozenset({str, bytes, *_DECODED, type(None), object})


def arg_text(value) -> str:
    """A list arg (`Input Dims`, `Input type`) as the JSON text that groups ops ("" for none)."""
    return "" if value is None else json.dumps(value, separators=(", ", ": "), ensure_ascii=False)


class Coded:
    """A column of few distinct values (names, threads, arg texts) as codes into a table of
    them, each of 1, 2 or 4 bytes as the table's size needs (a list would take 8 a row). Reads
    as a sequence of the values."""

    __slots__ = ("codes", "values", "_code")

    def __init__(self):
        self.codes = array("B")
        self.values: list = []
        self._code: dict = {}  # value -> its code

    def extend(self, items: list) -> None:
        code = self._code
        if _one_value(items):  # a group's thread, kind or stream, as a rule: looked up once
            self._extend_one(items[0], len(items))
            return
        try:  # as a rule every value is in the table already: looked up once
            self.codes += self._codes(map(code.__getitem__, items))
        except KeyError:
            self._add_values(set(items).difference(code))
            self.codes += self._codes(map(code.__getitem__, items))

    def extend_pairs(self, firsts: list, seconds: list) -> None:
        """`extend` of the pairs (first, second), without a tuple kept per row (zip then
        reuses one)."""
        code = self._code
        if _one_value(firsts) and _one_value(seconds):
            self._extend_one((firsts[0], seconds[0]), len(firsts))
            return
        try:
            self.codes += self._codes(map(code.__getitem__, zip(firsts, seconds)))
        except KeyError:
            self._add_values(set(zip(firsts, seconds)).difference(code))
            self.codes += self._codes(map(code.__getitem__, zip(firsts, seconds)))

    def extend_coded(self, other: Coded) -> None:
        """`extend` by the rows of another column: its codes translated to this one's, not
        each row's value looked up (a table of hundreds of thousands of names)."""
        code = self._code
        if not self.values:  # nothing yet: its table and codes, copied
            self.codes, self.values = other.codes[:], list(other.values)
            self._code = dict(other._code)
            return
        self._add_values([value for value in other.values if value not in code])
        mapping = list(map(code.__getitem__, other.values))
        typecode = self.codes.typecode
        if typecode == other.codes.typecode and mapping == list(range(len(mapping))):
            self.codes += other.codes
        elif typecode == "B" == other.codes.typecode:  # a byte each: translated at once
            self.codes += array("B", other.codes.tobytes().translate(bytes(mapping).ljust(256)))
        else:
            self.codes += array(typecode, map(mapping.__getitem__, other.codes))

    def _extend_one(self, value, count: int) -> None:
        """`extend` by `count` rows of one value."""
        if value not in self._code:
            self._add_values([value])
        self.codes += array(self.codes.typecode, [self._code[value]]) * count

    def _add_values(self, new) -> None:
        code = self._code
        for value in new:
            code[value] = len(self.values)
            self.values.append(value)
        if len(self.values) > 1 << 8 * self.codes.itemsize:  # wider codes, once per width
            self.codes = array(_code_type(len(self.values)), self.codes)

    def _codes(self, found) -> array:
        """Codes (an iterator of them) in an array of this column's type, made whole before
        any is added (a KeyError adds none); of one byte through bytes, at once (an array
        takes an iterator's values one at a time)."""
        typecode = self.codes.typecode
        return array("B", bytes(found)) if typecode == "B" else array(typecode, found)

    def reorder(self, order: list[int], parts: list | None | bool = False) -> None:
        """Put the rows in `order` (row numbers); `parts`: `pieces(order)` where the caller has
        it (False: found here)."""
        self.codes = taken(self.codes, order, parts)

    def take(self, order, parts: list | None | bool = False) -> Coded:
        """The rows in `order` (row numbers, or an iterator of them), as a new column that
        shares this one's table (neither is extended after); `parts` as for `reorder`."""
        return self.with_codes(taken(self.codes, order, parts))

    def with_codes(self, codes: array) -> Coded:
        """A column of these codes that shares this one's table (neither is extended after)."""
        found = Coded()
        found.codes, found.values, found._code = codes, self.values, self._code
        return found

    def __len__(self) -> int:
        return len(self.codes)

    def __getitem__(self, row: int | slice):
        if row.__class__ is slice:
            return list(map(self.values.__getitem__, self.codes[row]))
        return self.values[self.codes[row]]

    def __iter__(self):
        return map(self.values.__getitem__, self.codes)

    def count(self, value) -> int:
        code = self._code.get(value)
        return 0 if code is None else self.codes.count(code)


def _one_value(items) -> bool:
    """Whether the rows (a list or an array) hold one value, all equal to the first (as a dict
    compares keys): told by a C pass, where comparing the last with the first first says so."""
    return len(items) > 0 and items[-1] == items[0] and items.count(items[0]) == len(items)


def pieces(order) -> list[tuple[int, int]] | None:
    """`order` (row numbers) as ranges of consecutive rows, (first, end) each, where they are
    fewer than 1/_FEW_PIECES of its rows: an order that merges a few runs of rows (the file's
    threads or kinds) is a few hundred such pieces, which slices of a column then take (a copy
    of memory, not a line of C a row and an object made for each value). None where they are
    more (or `order` is an iterator)."""
    if not hasattr(order, "__len__"):
        return None
    n = len(order)
    most = n // _FEW_PIECES
    if most < 1:
        return None
    # Where a row does not follow the one before (the `most`-th found: too many).
    breaks = list(islice(compress(range(1, n), map(ne, map(sub, islice(order, 1, None), order),
                                                   repeat(1))), most))
    if len(breaks) >= most:
        return None
    found = [(order[a], order[a] + b - a) for a, b in pairwise((0, *breaks, n))]
    return found if min(found)[0] >= 0 else None  # a row counted from the end: not a slice


_FEW_PIECES = 8
_CHUNK = 1 << 16  # rows that one itemgetter of `taken_all` takes


def taken(column, order, parts: list | None | bool = False):
    """The values of `column` (an array, a bytearray or a list) at rows `order`, as the same
    type; `parts`: `pieces(order)` where the caller has it (False: found here)."""
    return taken_all([column], order, parts)[0]


def taken_all(columns: list, order, parts: list | None | bool = False) -> list:
    """`taken` of each column at the same rows: where they are not a few pieces, a chunk of
    rows at a time, each chunk's `itemgetter` made once for every column (a C loop that makes
    a tuple of the chunk's values: twice as fast as a map of `__getitem__` into an array,
    in memory of a chunk's rows only)."""
    if parts is False:
        parts = pieces(order)
    if parts is not None:
        found = [_blank(column, sum(end - first for first, end in parts)) for column in columns]
        at = 0
        for first, end in parts:
            for i, column in enumerate(columns):
                found[i][at:at + end - first] = column[first:end]
            at += end - first
        return found
    if not hasattr(order, "__len__"):  # an iterator: value by value
        order = list(order) if len(columns) > 1 else order
        return [_taken_by_map(column, order) for column in columns]
    found = [_blank(column, len(order)) for column in columns]
    for first in range(0, len(order), _CHUNK):
        rows = order[first:first + _CHUNK]
        get = itemgetter(*rows) if len(rows) > 1 else lambda column, row=rows[0]: (column[row],)
        end = first + len(rows)
        for i, column in enumerate(columns):
            values = get(column)
            if isinstance(column, array):
                found[i][first:end] = (array("B", bytes(values)) if column.typecode == "B" else
                                       array(column.typecode, values))
            elif isinstance(column, bytearray):
                found[i][first:end] = bytes(values)
            else:
                found[i][first:end] = values
    return found


def _blank(column, n: int):
    """A column of `column`'s type and `n` rows, to be filled: made at its size (one that
    grows as rows are added keeps up to 1/16 more room)."""
    if isinstance(column, array):
        return array(column.typecode, [0]) * n
    return bytearray(n) if isinstance(column, bytearray) else [None] * n


def _taken_by_map(column, order):
    if isinstance(column, array):
        if column.typecode == "B":  # bytes made at once (an array's go a value at a time)
            return array("B", bytes(map(column.__getitem__, order)))
        return array(column.typecode, map(column.__getitem__, order))
    return type(column)(map(column.__getitem__, order))


def _code_type(count: int) -> str:
    """The narrowest array type of codes for a table of `count` values."""
    return next(kind for kind in "BHI" if count <= 1 << 8 * array(kind).itemsize)


class OpColumns:
    """The skipped events of one kind, in file order, beside their times (`Skipped.ts`, `dur`):
    names and (pid, tid) threads, for CPU ops the args of OP_ARGS, for launch calls (runtime,
    driver) and GPU activities their correlation ids, and for GPU activities their `device` and
    `stream` args."""

    def __init__(self, with_args: bool, with_correlations: bool = False,
                 with_streams: bool = False):
        self.names = Coded()
        self.threads = Coded()  # of (pid, tid)
        self.with_args = with_args
        # Correlation ids: ints in 64 bits, NO_ID without one; any other value in the dict.
        self.correlations = array("q") if with_correlations else None
        self.correlation_other: dict[int, object] = {}
        # The `device` and `stream` args (None without one).
        self.devices, self.streams = (Coded(), Coded()) if with_streams else (None, None)
        self.dims = Coded()  # arg_text of `Input Dims` ("" without one)
        self.types = Coded()
        self.has_dims = False  # whether any op has an `Input Dims` key
        # `Sequence number`: an int here, in 32 bits until one needs 64 (then all are widened),
        # the column's `no_sequence` without one; any other value (rare) in `sequence_other`.
        self.sequence = array("i")
        self.sequence_other: dict[int, object] = {}
        self.forward = bytearray()  # whether `Fwd thread id` is truthy
        self._texts: dict = {}  # a list arg's text as written (or its value's repr) -> arg_text

    def __len__(self) -> int:
        return len(self.names)

    def reorder(self, order: list[int], parts: list | None | bool = False) -> None:
        """Put the rows in `order` (row numbers), in place of the file's; `parts`:
        `pieces(order)` where the caller has it (False: found here, once for every column)."""
        if parts is False:
            parts = pieces(order)
        self.names.reorder(order, parts)
        self.threads.reorder(order, parts)
        if self.devices is not None:
            self.devices.reorder(order, parts)
            self.streams.reorder(order, parts)
        if self.correlations is not None:
            self.correlations = taken(self.correlations, order, parts)
            self.correlation_other = _moved(self.correlation_other, order)
        if not self.with_args:
            return
        self.dims.reorder(order, parts)
        self.types.reorder(order, parts)
        self.sequence = taken(self.sequence, order, parts)
        self.forward = taken(self.forward, order, parts)
        self.sequence_other = _moved(self.sequence_other, order)

    def add(self, names: list[str], pids: list, tids: list, args: list | None,
            correlations: list | None = None, others: list[dict] | None = None) -> None:
        """Rows in file order; `args`: for each, a tuple of the OP_ARGS values (MISSING where
        absent; the lists as their JSON text (`str`, `bytes`, `msgspec.Raw`) or decoded), or
        None; `correlations`: each one's correlation id (None without one); `others`: each
        one's other kept args (the `device` and `stream` read)."""
        if not names:
            return
        self.names.extend(names)
        self.threads.extend_pairs(pids, tids)
        if self.devices is not None:
            others = others or [{}] * len(names)
            one = _one_value(others)  # the args object the rows share, as a rule: read once
            for column, key in ((self.devices, "device"), (self.streams, "stream")):
                column.extend([others[0].get(key)] * len(others) if one else
                              [found.get(key) for found in others])
        if self.correlations is not None:
            _add_ids(self.correlations, self.correlation_other,
                     correlations or [None] * len(names))
        if not self.with_args:
            return
        if args is None or None in args:
            args = [_NONE if values is None else values for values in args or repeat(_NONE, len(names))]
        numbers, forward, dims, types = zip(*args)
        absent = dims.count(MISSING)
        self.has_dims = self.has_dims or absent < len(dims)
        self.dims.extend(self._texts_of(dims, absent))
        self.types.extend(self._texts_of(types, types.count(MISSING)))
        # Whether each is given and truthy, a column at a time (MISSING is truthy).
        self.forward += bytes(map(and_, map(is_not, forward, repeat(MISSING)), map(truth, forward)))
        self._add_sequence(numbers)

    def _add_sequence(self, numbers: tuple) -> None:
        if set(map(type, numbers)) <= {int, object}:  # ints and MISSING (only ints equal ints)
            while True:
                absent = no_sequence(self.sequence)
                try:  # the array refuses what is past its width, before any is added
                    added = array(self.sequence.typecode, map({MISSING: absent}.get, numbers,
                                                              numbers))
                except OverflowError:
                    if self.sequence.typecode == "q":
                        break
                    self._widen_sequence()
                    continue
                if added.count(absent) == numbers.count(MISSING):  # no int equal to the mark
                    self.sequence += added
                    return
                break
        for number in numbers:
            if type(number) is int and _NO_SEQUENCE < number < (1 << 63):
                low = no_sequence(self.sequence)
                if not low < number < -low:
                    self._widen_sequence()
                self.sequence.append(number)
            else:
                if number is not MISSING and number is not None:
                    self.sequence_other[len(self.sequence)] = number
                self.sequence.append(no_sequence(self.sequence))

    def _widen_sequence(self) -> None:
        """The sequence column in 64 bits, its marks of none moved to the wider one."""
        narrow = self.sequence
        wide = self.sequence = array("q", narrow)
        absent = no_sequence(narrow)
        for row in compress(range(len(narrow)), map(eq, narrow, repeat(absent))):
            wide[row] = _NO_SEQUENCE

    def _texts_of(self, values: tuple, absent: int) -> list[str]:
        """`_text` of each value: a column at a time where none or all are absent and the
        others are the compiled path's buffers (looked up by their bytes)."""
        if absent == len(values):
            return [""] * absent
        if not absent and not set(map(type, values)) & _TEXT_OR_DECODED:
            keys = list(map(bytes, values))
            found = list(map(self._texts.get, keys))
            if None not in found:
                return found
            return list(map(self._text, keys))
        return list(map(self._text, values))

    def _text(self, value) -> str:
        if value is MISSING or value is None:
            return ""
        kind = type(value)
        text = kind is bytes or kind is str
        if not text and kind not in _DECODED:  # a buffer (msgspec.Raw): its JSON text
            value, text = bytes(memoryview(value)), True
        key = value if text else repr(value)
        found = self._texts.get(key)
        if found is None:
            decoded = json.loads(value) if text else value
            found = self._texts[key] = arg_text(decoded)
        return found


NO_ID = _NO_SEQUENCE  # in an id column (correlations): none, or one in the column's dict


def _add_ids(column: array, other: dict, ids: list) -> None:
    """Append ids (ints, None, or rarely any other value) to a column of 64-bit ints."""
    given = [NO_ID if value is None else value for value in ids]
    if set(map(type, given)) == {int} and min(given) >= NO_ID and max(given) < (1 << 63):
        column += array("q", given)
        return
    for value in ids:
        if type(value) is int and NO_ID < value < (1 << 63):
            column.append(value)
        else:
            if value is not None:
                other[len(column)] = value
            column.append(NO_ID)


def _moved(other: dict[int, object], order) -> dict[int, object]:
    """A dict by row number, after the rows were put in `order`."""
    if not other:
        return other
    moved = {row: new for new, row in enumerate(order) if row in other}
    return {new: other[row] for row, new in moved.items()}


def op_values(args: dict) -> tuple | None:
    """The OP_ARGS values of a decoded args object (None: not an object)."""
    if not isinstance(args, dict):
        return None
    return tuple(args.get(key, MISSING) for key in OP_ARGS)


def no_sequence(column: array) -> int:
    """The value that marks a row without an int in a sequence column: its type's least."""
    return -(1 << (8 * column.itemsize - 1))


class Sequences:
    """The `Sequence number` of each row (an int, any other value, or None) from OpColumns':
    `numbers` holds the ints, `absent` where a row has none (then `other` holds its value)."""

    def __init__(self, numbers: array, other: dict[int, object]):
        self.numbers = numbers
        self.other = other
        self.absent = no_sequence(numbers)

    def __len__(self) -> int:
        return len(self.numbers)

    def __getitem__(self, row: int):
        number = self.numbers[row]
        return self.other.get(row) if number == self.absent else number

    def __iter__(self):
        if self.absent not in self.numbers:
            return iter(self.numbers)
        return map(self.__getitem__, range(len(self.numbers)))


@dataclass
class OpRows:
    """The events of one kind in trace order, as columns (`row` i of each)."""

    ts: list[float] | array  # arrays of "d" from columns
    ends: list[float] | array | None  # None: made when `end` is first read
    dur: list[float] | array
    names: list[str] | Coded
    threads: list[tuple] | Coded
    dims: list[str] | Coded | None  # arg_text of the args (None: the kind has no args kept)
    types: list[str] | Coded | None
    sequence: list | Sequences | None  # values, None where absent
    forward: list[bool] | bytearray | None  # whether each has a `Fwd thread id` (truthy)
    has_dims: bool

    def __len__(self) -> int:
        return len(self.ts)

    @property
    def end(self) -> list[float] | array:
        """Each row's end, start + duration: of columns, made when first read (shapes, memory),
        not for stacks, whose nesting makes the ends of the threads it is asked about only (a
        column of them all is 8 bytes a row)."""
        if self.ends is None:
            self.ends = array("d", map(add, self.ts, self.dur))
        return self.ends


def op_rows(trace, kind: str) -> OpRows | None:
    """The rows of `kind` (CPU ops or Python frames) with what scripts.tracefacts.facts.ops reads, or None where
    loading kept neither Events nor columns of them. Made once per trace (a loaded trace does
    not change)."""
    made = trace.__dict__.setdefault("_op_rows", {})
    if kind not in made:
        made[kind] = _op_rows(trace, kind)
    return made[kind]


def _op_rows(trace, kind: str) -> OpRows | None:
    skipped = trace.skipped.get(kind)
    if skipped is not None:
        columns = skipped.columns
        if columns is None:
            return None
        # The columns themselves, not copies: loading put them in trace order (Skipped).
        ts, dur = skipped.ts, skipped.dur
        rows = OpRows(ts, None, dur, columns.names, columns.threads, None, None, None, None,
                      False)
        if columns.with_args:
            rows.dims, rows.types = columns.dims, columns.types
            rows.sequence = Sequences(columns.sequence, columns.sequence_other)
            rows.forward = columns.forward
            rows.has_dims = columns.has_dims
        return rows
    events = trace.by_kind.get(kind, [])
    ts = [e.ts for e in events]
    dur = [e.dur for e in events]
    args = [e.args for e in events]
    return OpRows(ts, [e.end for e in events], dur, [e.name for e in events],
                  [(e.pid, e.tid) for e in events],
                  [arg_text(a.get(DIMS)) for a in args], [arg_text(a.get(TYPES)) for a in args],
                  [a.get(SEQUENCE) for a in args], [bool(a.get(FORWARD)) for a in args],
                  any(DIMS in a for a in args))
