"""Reading a chrome trace (torch.profiler / Kineto JSON) as a stream, in time linear in its size.

`read_trace(source, sink)` reads a path, "-" (stdin) or a binary file object (the text comes
from `scripts.tracefacts.reading.text`): an object with `traceEvents` among its keys in any order, or a
top-level array; any spacing. It hands the events to a sink (the trace model's builder) and
returns the other top-level keys. Standard library only.

How the events are read. From a position known to be between two events, one `re.split` of
the text in the buffer (a megabyte or so) matches events with one expression of alternatives:
a complete event or a flow in Kineto's own key order (whose fields become columns, converted a
column at a time), or any other JSON object (`_ANY_OBJECT`: strings read escape by escape,
nesting up to `_NESTING` levels), which the C `json` decoder reads in one call per chunk. Each
alternative spans one whole object, and the text between two matches must be a bare comma, so
the matches are the events, in order, and the buffer is cut after the last one. Where that does
not hold (an object nested deeper, an element that is not an object, a field unlike Kineto's,
invalid JSON), the events are walked one by one from the last boundary known (`_value_end`
counts brackets outside strings) and `json` reads those the expression does not, saying what is
wrong and where. An event larger than the buffer makes the buffer double until it fits. So each
character is scanned a bounded number of times whatever the layout: sorted keys, pretty-printed,
events without "ph", strings of megabytes (tests/test_parse.py times it).

The Kineto alternatives take names as `[^"]*+` and args as `[^}]*+`, the fastest the expression
engine has, and `Columns.check` (scripts/tracefacts/reading/columns.py, which makes the columns) checks after, in
bulk, what could have ended a match inside a string: an escape in a name, a '}' inside a string
in args. What they read is what json reads from valid JSON. They are more lenient than json on
what no producer writes: a raw control character in a name, a time that float reads and JSON
does not (`.5`, `1_0`), broken syntax inside args are read, not refused.
"""

from __future__ import annotations

import json
import re
import sys
from bisect import bisect_left
from collections.abc import Callable
from typing import Protocol

from . import msgspec_events as compiled, text as tracetext
from .columns import Columns, decode_objects, spans_one_event
from .text import (DEFAULT_MAX_BYTES, MAX_BYTES_ENV, Text, TraceError,  # noqa: F401
                        max_bytes_default)

_NESTING = 5  # levels of objects and arrays inside an event that `_ANY_OBJECT` matches
# The longest integer json reads (Python's limit on converting text to int; 4,300 by default).
_MAX_DIGITS = sys.get_int_max_str_digits() if hasattr(sys, "get_int_max_str_digits") else 4300


class EventSink(Protocol):
    """What `read_trace` feeds (the trace model's builder)."""

    source: str  # set by read_trace: the file's name for messages
    # The categories (as spelled in the file) whose complete events need only their times.
    times_only_cats: tuple[str, ...]

    def header(self, metadata: dict) -> None:
        """The top-level keys before traceEvents, read before its events (not called for the
        JSON Array Format)."""

    def add_raw(self, raw: object) -> None:
        """One element of traceEvents, decoded by json."""

    def add_complete(self, cats: list[str], names: list[str], pids: list, tids: list,
                     starts: list[float], durations: list[float], bodies: list) -> None:
        """Complete events in Kineto's layout, in file order: names and categories (escapes
        undone, one string object per text), ids, absolute times, durations clamped at 0, and
        the text of each args object inside its braces (None without args) for `int_args`."""

    def add_times(self, cats: list[str], starts: list[float], durations: list[float]) -> None:
        """Complete events of `times_only_cats`, in file order."""

    def add_unread(self, count: int) -> None:
        """Events read over without a field taken (flows)."""

    # The args keys whose values `add_columns` gives (the compiled path), decoded, and after
    # them those given as their JSON text (`msgspec.Raw`); `absent` where an event has none.
    kept_args: tuple[str, ...]
    raw_args: tuple[str, ...]
    absent: object

    def add_columns(self, cats: list[str], names: list[str], pids: list, tids: list,
                    starts: list[float], durations: list[float], args: list,
                    read_args: Callable[[list], list]) -> None:
        """As add_complete, from the compiled path (`scripts.tracefacts.reading.msgspec_events`), a call per group of
        `group_of` (where the sink has it): names, pids and tids as decoded (not one object per
        value: the sink's to share where it keeps them); `args` holds each event's args object
        as that path holds it (None without one, or null); `read_args(some of them)` gives for
        each None (null) or the values of `kept_args` and `raw_args` in order, of any JSON
        type, `absent` where absent; `read_args(some, fields)` those of a slice of them, or
        of one (its value, not in a tuple)."""

    def group_of(self, cat: str) -> object:
        """Optional: the group of a category's complete events (any hashable; None: told by
        each event, not its category). The compiled path splits each run by group first, each
        group in file order, and calls `add_columns` once per group."""


# --- JSON values in the text ------------------------------------------------------------------


class _Reader(Text):
    """The text, read as JSON values."""

    def value_end(self, start: int, where: str) -> int:
        """The end of the JSON value at buf[start] (after whitespace), reading as much as it
        takes: the buffer doubles until the value fits."""
        want = len(self.buf) - self.pos
        while True:
            end = _value_end(self.buf, start, len(self.buf), self.eof)
            if end >= 0:
                return end
            if self.eof:
                raise self.fail(f"truncated (ends {where})")
            offset = start - self.pos
            want = self.grown(max(2 * want, tracetext.CHUNK_BYTES))
            self.fill(want)
            start = self.pos + offset

    def grown(self, want: int) -> int:
        """`want` characters of buffer, for one value: refused past 1/16 of the size limit (what
        bounds the memory a gzip bomb of one long string takes)."""
        if want > self.max_bytes // 16 and want > 2 * tracetext.CHUNK_BYTES:
            raise self.fail(f"one value larger than {tracetext.format_bytes(self.max_bytes // 16)}"
                            f", 1/16 of the limit on a trace's size (raise it with "
                            f"{MAX_BYTES_ENV}=<bytes>, e.g. 8G)")
        return want

    def decode(self, start: int, end: int, where: str):
        """json's reading of buf[start:end], or a TraceError that says where it is wrong."""
        try:
            return json.loads(self.buf[start:end])
        except json.JSONDecodeError as err:
            raise self.fail(f"not a readable trace (invalid JSON {where} at "
                            f"{self.where(start + err.pos)}: {err.msg})") from None
        except ValueError:  # json's only other refusal: an integer longer than int() reads
            raise self.fail(f"not a readable trace (a number of more than "
                            f"{_MAX_DIGITS:,} digits {where})") from None
        except RecursionError:
            raise self.fail(f"not a readable trace (JSON nested too deeply {where})") from None

    def value(self, where: str):
        """Read and decode the next value."""
        if not self.peek():
            raise self.fail(f"truncated (ends {where})")
        end = self.value_end(self.pos, where)  # which may move the text to buf[0]
        value = self.decode(self.pos, end, where)
        self.pos = end
        return value


_STRING = r'"[^"\\]*+(?:\\.[^"\\]*+)*+"'  # a JSON string, escapes and all
# Text up to the next bracket or the next string that does not end in the text.
_TO_BRACKET = re.compile(rf'[^"{{}}\[\]]*+(?:{_STRING}[^"{{}}\[\]]*+)*+')
_STRING_AT = re.compile(_STRING)
_SCALAR_AT = re.compile(r'[^\s,:\]}{\["]*+')


def _nested(levels: int) -> str:
    """The inside of an object or array: text, strings, and objects and arrays inside them, up
    to `levels` deep (possessive: never backtracks). An opening bracket is closed by either
    kind: this only delimits, json then reads (and refuses '[1}'); one expression per level
    keeps it small (one for each kind would double it at every level)."""
    flat = rf'[^"{{}}\[\]]*+(?:{_STRING}[^"{{}}\[\]]*+)*+'
    if levels == 0:
        return flat
    return rf'{flat}(?:[{{\[]{_nested(levels - 1)}[}}\]]{flat})*+'


# Any object, nested up to _NESTING levels. It only starts where an object can (a key or '}'
# next): inside a string, '{' is followed by '"' only at the string's end, so a search never
# scans a long string from inside it more than once.
_OBJECT_REST = rf'(?=[ \t\n\r]*+["}}]){_nested(_NESTING)}\}}'  # after its '{'
_ANY_OBJECT = rf"\{{{_OBJECT_REST}"
_ANY_VALUE = re.compile(rf'{_ANY_OBJECT}|\[{_nested(_NESTING)}[}}\]]')


def _value_end(buf: str, start: int, end: int, eof: bool) -> int:
    """The end of the JSON value at buf[start] (not whitespace), or -1 if it does not end before
    `end`. Delimits only: json says later whether the value is valid."""
    char = buf[start:start + 1]
    if char in ("{", "["):
        small = end - start <= tracetext.CHUNK_BYTES  # else walked: one scan, not two
        match = _ANY_VALUE.match(buf, start, end) if small else None
        if match:
            return match.end()
        depth, pos = 0, start  # deeper than _ANY_VALUE goes, or not all in buf
        while True:
            pos = _TO_BRACKET.match(buf, pos, end).end()
            if pos >= end or buf[pos] == '"':
                return -1
            depth += 1 if buf[pos] in "{[" else -1
            pos += 1
            if depth <= 0:
                return pos
    if char == '"':
        match = _STRING_AT.match(buf, start, end)
        return match.end() if match else -1
    stop = _SCALAR_AT.match(buf, start, end).end()
    if stop == end and not eof:
        return -1  # the number may go on in the next chunk
    return max(stop, start + 1)  # at least one character, for json to refuse


# --- the document ------------------------------------------------------------------------------


def read_trace(source, sink: EventSink, progress: Callable[[int, int], None] | None = None,
               max_bytes: int | None = None) -> dict:
    """Feed the events of a chrome trace to `sink`; return its other top-level keys.
    `source`: a path, "-" for stdin, or a binary file object (not closed here). `progress(done,
    total)`: bytes of the source read and its size (0 when unknown), after each chunk.
    `max_bytes`: the decompressed size refused (default `max_bytes_default()`)."""
    limit = max_bytes_default() if max_bytes is None else max_bytes
    src = tracetext.open_source(source)
    sink.source = src.name
    try:
        text = _Reader(src, progress, limit)
        try:
            return _document(text, sink)
        finally:
            text.close()
    finally:
        src.close()


def _document(text: _Reader, sink: EventSink) -> dict:
    first = text.peek()
    if first == "[":  # the JSON Array Format of the trace-event spec
        text.pos += 1
        _Events(text, sink).read()
        metadata = {}
    elif first == "{":
        text.pos += 1
        metadata = _top_object(text, sink)
    elif not first:
        raise text.fail("not a trace (empty file)")
    else:
        raise text.fail("not a trace (not JSON)")
    if text.peek():
        raise text.fail(f"not a readable trace (invalid JSON at {text.where(text.pos)}: "
                        "more text after the trace)")
    return metadata


def _top_object(text: _Reader, sink: EventSink) -> dict:
    """The top-level object after its '{', streaming traceEvents; the other keys."""
    metadata: dict = {}
    has_events = False
    where = "in the top-level object"
    if text.peek() == "}":
        text.pos += 1
    else:
        while True:
            if text.peek() != '"':
                raise _unexpected(text, where)
            key = text.value(where)
            if text.peek() != ":":
                raise _unexpected(text, f"after key {key!r}")
            text.pos += 1
            if key == "traceEvents" and text.peek() == "[":
                if has_events:
                    raise text.fail("not a readable trace (two traceEvents lists)")
                text.pos += 1
                sink.header(metadata)
                _Events(text, sink).read()
                has_events = True
            else:
                metadata[key] = text.value(f"in {key!r}")
            found = text.peek()
            text.pos += 1
            if found == "}":
                break
            if found != ",":
                text.pos -= 1
                raise _unexpected(text, where)
    if not has_events:
        raise text.fail("JSON, but not a chrome trace (no traceEvents list)")
    return metadata


def _unexpected(text: _Reader, where: str) -> TraceError:
    found = text.peek()
    if not found:
        return text.fail(f"truncated (ends {where})")
    return text.fail(f"not a readable trace (invalid JSON at {text.where(text.pos)}: "
                     f"unexpected {found!r} {where})")


# --- the events --------------------------------------------------------------------------------


class _Layout:
    """Kineto's key order in one spelling: compact (`"ph":"X","cat":...`, as re-serialized) or
    torch's own (`"ph": "X",` and a newline and indentation between keys)."""

    def __init__(self, colon: str, comma: str):
        self.colon, self.comma = colon, comma
        self.prefix = f'"ph"{colon}"'
        self.patterns: dict[tuple[str, ...], re.Pattern] = {}

    def pattern(self, times_only_cats: tuple[str, ...]) -> re.Pattern:
        found = self.patterns.get(times_only_cats)
        if found is None:
            found = self.patterns[times_only_cats] = _events_pattern(
                self.colon, self.comma, times_only_cats)
        return found


def _events_pattern(colon: str, comma: str, times_only_cats: tuple[str, ...]) -> re.Pattern:
    """One event, as one of these alternatives (named groups):

    - a flow: `flow`, its text after the ph;
    - with `times_only_cats`, a complete event of one of those categories: `t_cat`, `t_name`,
      `t_ts`, `t_dur`, `t_args` (only its times are kept; the others are checked);
    - a complete event: `cat`, `name`, `pid`, `tid`, `ts`, `dur`, `args`;
    - any other object: `other`, its text after the '{'.

    The Kineto alternatives take a name as `[^"]*+` and args or a flow as `[^}]*+` (the fastest),
    which `Columns.check` then checks in bulk. Possessive quantifiers: no backtracking."""
    def key(name):
        return f'{comma}"{name}"{colon}'

    def complete(p: str, ids: str) -> str:  # after the cat; `ids`: pid and tid, by group name
        return (rf'{key("name")}"(?P<{p}name>[^"]*+)"{key("pid")}{ids.format(p + "pid")}'
                rf'{key("tid")}{ids.format(p + "tid")}{key("ts")}(?P<{p}ts>[^,]*+)'
                rf'{key("dur")}(?P<{p}dur>[^,}}]*+)(?:{key("args")}\{{(?P<{p}args>[^}}]*+)\}})?'
                r'\s*+\}')

    x_event = rf'"(?P<cat>[^"]*+)"' + complete("", "(?P<{}>[^,]*+)")
    if times_only_cats:
        cats = "|".join(map(re.escape, times_only_cats))
        # ids not taken: in valid JSON, `[^,]*+` that took part of a string would leave
        # `,"tid":` inside it, where its quotes would be escaped.
        x_event = rf'(?:"(?P<t_cat>{cats})"' + complete("t_", "[^,]*+") + f"|{x_event})"
    flow = r'[fs]"(?P<flow>[^}]*+)\}'
    kineto = rf'\s*+"ph"{colon}"(?:{flow}|X"{key("cat")}{x_event})'
    # '{' first, outside the alternatives: the search then jumps from '{' to '{'.
    return re.compile(rf'\{{(?:{kineto}|(?P<other>{_OBJECT_REST}))')


_LAYOUTS = (_Layout(":", ","), _Layout(": ", r",\s*+"))
# No "ph" in sight (sorted keys, none at all): only "any object".
_ANY_ONLY = re.compile(rf"\{{(?P<other>{_OBJECT_REST})")
_COMMA = re.compile(r"[ \t\n\r]*,[ \t\n\r]*")
_FIRST = re.compile(r"[ \t\n\r]*")


class _Events:
    """The traceEvents array, from after its '[' to after its ']'."""

    def __init__(self, text: _Reader, sink: EventSink):
        self.text = text
        self.sink = sink
        self.ids: dict[str, object] = {}  # pid/tid as written -> value
        self.texts: dict[str, str] = {}  # a name or category as written -> the string
        # The compiled decoder, where the trace is larger than a buffer (one that fits is read
        # before msgspec would have been imported). None: the standard library's path only.
        self.runs: compiled.Runs | None = None
        self.declined = 0  # runs in a row that the compiled path left to this one

    def read(self) -> None:
        text = self.text
        first = True  # before the first event: no comma
        want = chunk = tracetext.CHUNK_BYTES
        text.fill(want)
        if not text.eof:
            self.runs = compiled.runs_for(self.sink)
        while True:
            text.fill(want)
            found = text.peek()
            if found == "]":
                text.pos += 1
                return
            if not found:
                raise text.fail("truncated (ends inside traceEvents)")
            if not first and found != ",":
                raise _unexpected(text, "between events")
            if want > chunk:  # an event larger than the buffer: walk it alone
                cut = self._walked(text.pos, first, None, one=True)
            else:
                cut = self._compiled(text.pos, first) if self.runs is not None else -1
                if cut < 0:
                    cut = self._segment(text.pos, first)
            if cut > text.pos:
                text.pos = cut
                first = False
                want = chunk
            elif text.eof:
                raise text.fail("truncated (ends inside traceEvents)")
            else:
                want = text.grown(2 * max(want, len(text.buf) - text.pos))

    def _compiled(self, pos: int, first: bool) -> int:
        """Read the whole events of buf[pos:] up to the last boundary between two events with
        the compiled decoder: the position after the last, or -1 where it declines. A cut that
        is not between two events (a '},{' inside a string or a nested list) leaves text that
        is not a JSON array of values: msgspec refuses it. After a few refusals in a row the
        rest of the file is left to the standard library's path."""
        buf = self.text.buf
        found = (_FIRST if first else _COMMA).match(buf, pos)
        cut = _last_boundary(buf, found.end()) if found is not None else -1
        # An f-string copies the run twice (a slice, then the string); `"[" + ... + "]"` 3 times.
        if cut > 0 and self.runs.read_run(f"[{buf[found.end():cut]}]", self.sink):
            self.declined = 0
            return cut
        self.declined += 1
        if self.declined >= _DECLINED_MAX:
            self.runs = None
        return -1

    def _pattern(self, pos: int) -> re.Pattern:
        """The expression for the events at pos: Kineto's layout as the first "ph" spells it."""
        buf = self.text.buf
        at = buf.find('"ph"', pos, pos + (1 << 16))
        for layout in _LAYOUTS if at >= 0 else ():
            if buf.startswith(layout.prefix, at):
                return layout.pattern(self.sink.times_only_cats)
        return _ANY_ONLY

    def _segment(self, pos: int, first: bool) -> int:
        """Read the whole events of buf[pos:] with one split; the position after the last."""
        pattern = self._pattern(pos)
        segment = self.text.buf[pos:]
        parts = pattern.split(segment)
        width = pattern.groups + 1
        count = len(parts) // width
        between = parts[::width]
        if not count or not (_FIRST if first else _COMMA).fullmatch(between[0]):
            return self._walked(pos, first, pattern)
        rest = len(between[count])  # after the last event
        if not _all_commas(between[1:count]):
            # Matches after text that is not a comma: inside an event that no alternative
            # matched (nested deeper, or the last one, not all in the buffer: its args object
            # is whole). The matches before it are events; when those after it are all "any
            # object" matches, whose text the split returns, where they end is known.
            count = next(i for i in range(1, count) if not _COMMA.fullmatch(between[i]))
            later = parts[count * width + width - 1::width]
            if not all(later):
                return self._walked(pos, first, pattern)
            rest = sum(map(len, later)) + len(later) + sum(map(len, between[count:]))  # and '{'s
            parts = parts[:count * width + 1]
        try:
            columns = Columns([parts[g::width] for g in range(1, width)], pattern, self.ids,
                               self.texts)
            columns.check()
            decoded = decode_objects(columns.objects)
        except (ValueError, RecursionError):  # what the columns or json do not read: one by one
            return self._walked(pos, first, pattern)
        self._add(columns, decoded)
        return pos + len(segment) - rest

    def _walked(self, pos: int, first: bool, pattern: re.Pattern | None, one: bool = False) -> int:
        """Read the whole events of buf[pos:] one by one from pos: those that `pattern`
        matches exactly from its columns, the others with json. The position after the last
        one; `one`: read only the first."""
        text = self.text
        buf, end = text.buf, len(text.buf)
        items: list = []  # matches, and (start, end) of the events json reads, in file order
        at, comma = pos, not first
        while True:
            sep = (_COMMA if comma else _FIRST).match(buf, at)
            if sep is None or sep.end() >= end:
                break
            start = sep.end()
            if buf[start] == "]":
                if comma:
                    raise text.fail(f"not a readable trace (invalid JSON at {text.where(start)}:"
                                    " ',' before ']' in traceEvents)")
                break
            match = pattern.match(buf, start) if pattern is not None else None
            if match is not None and spans_one_event(match):
                items.append(match)
                at = match.end()
            else:
                stop = _value_end(buf, start, end, text.eof)
                if stop < 0:
                    break
                items.append((start, stop))
                at = stop
            comma = True
            if one:
                break
        self._add_items(items, pattern)
        return at

    def _add_items(self, items: list, pattern: re.Pattern | None) -> None:
        """Add walked events in file order: runs of matches through `Columns` (json reads
        those whose columns do not read), the others with json."""
        runs: list = []  # lists of matches, and (start, end) spans
        for item in items:
            if isinstance(item, tuple):
                runs.append(item)
            elif runs and isinstance(runs[-1], list):
                runs[-1].append(item)
            else:
                runs.append([item])
        decoded: list = []
        for i, run in enumerate(runs):
            if isinstance(run, tuple):
                continue
            try:
                columns = Columns([list(column) for column in zip(*(m.groups() for m in run))],
                                   pattern, self.ids, self.texts)
                columns.check()
                decoded.append((columns, decode_objects(columns.objects)))
            except (ValueError, RecursionError):
                runs[i:i + 1] = [m.span() for m in run]
        loose = iter(self._decode_loose([run for run in runs if isinstance(run, tuple)]))
        done = iter(decoded)
        for run in runs:
            if isinstance(run, tuple):
                self.sink.add_raw(next(loose))
            else:
                self._add(*next(done))

    def _decode_loose(self, spans: list[tuple[int, int]]) -> list:
        """json's reading of these events; on an error, a TraceError for the first it refuses."""
        if not spans:
            return []
        text = self.text
        try:
            return json.loads("[" + ",".join(text.buf[a:b] for a, b in spans) + "]")
        except (ValueError, RecursionError):
            for a, b in spans:
                text.decode(a, b, "in traceEvents")
            raise

    def _add(self, columns: Columns, decoded: list) -> None:
        """Add the events of a run of matches in file order. Complete events that json read
        (where there are any) split the Kineto columns: events equal in start and duration
        then keep their file order, as when json reads them all."""
        sink = self.sink
        if columns.unread:
            sink.add_unread(columns.unread)
        complete = [isinstance(raw, dict) and raw.get("ph") == "X" for raw in decoded]
        if not any(complete):
            if columns.times:
                sink.add_times(*columns.times)
            if columns.complete:
                sink.add_complete(*columns.complete)
            for raw in decoded:
                sink.add_raw(raw)
            return
        times_done = complete_done = 0
        for raw, is_complete, index in zip(decoded, complete, columns.object_at):
            if is_complete:
                if columns.times:
                    upto = bisect_left(columns.times_at, index)
                    if upto > times_done:
                        sink.add_times(*(c[times_done:upto] for c in columns.times))
                        times_done = upto
                if columns.complete:
                    upto = bisect_left(columns.complete_at, index)
                    if upto > complete_done:
                        sink.add_complete(*(c[complete_done:upto] for c in columns.complete))
                        complete_done = upto
            sink.add_raw(raw)
        if columns.times and times_done < len(columns.times_at):
            sink.add_times(*(c[times_done:] for c in columns.times))
        if columns.complete and complete_done < len(columns.complete_at):
            sink.add_complete(*(c[complete_done:] for c in columns.complete))


_DECLINED_MAX = 4
_SPACES = " \t\n\r"


def _last_boundary(buf: str, start: int) -> int:
    """The position after the '}' of the last '}' ',' '{' (spaces between) after start, -1 if
    none: the end of a run of whole events, where the text is Kineto's."""
    at = len(buf)
    for _ in range(64):  # the last few '{': a boundary is one of them, as a rule the last
        at = buf.rfind("{", start, at)
        if at <= start:
            return -1
        k = at - 1
        while k > start and buf[k] in _SPACES:
            k -= 1
        if buf[k] == ",":
            k -= 1
            while k > start and buf[k] in _SPACES:
                k -= 1
            if buf[k] == "}":
                return k + 1
    return -1


def _all_commas(texts: list[str]) -> bool:
    """Whether every text is a comma with spaces (as a rule all alike: compared, not hashed)."""
    if not texts or texts.count(texts[0]) == len(texts):
        return not texts or _COMMA.fullmatch(texts[0]) is not None
    return all(map(_COMMA.fullmatch, set(texts)))
