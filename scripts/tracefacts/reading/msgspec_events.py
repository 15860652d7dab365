"""The optional compiled reading of a run of events: msgspec, where it is installed (the `fast`
extra), decodes whole events of `scripts.tracefacts.reading.events`'s buffer into the same sink calls, 2-3x faster
than the standard-library path. It is no second parser: `scripts.tracefacts.reading.events` cuts the text, calls
`read_run`, and reads the run itself wherever this declines (returns None): text that msgspec
refuses or reads otherwise than json (NaN, numbers past float's range, lone surrogates), values
of unusual types (a name that is not a string, a time that is not a number, a pid that is not
an int or a string, args that are not an object) or a cut that is not between two events. The
two paths give the same model (tests/test_parse.py reads every layout both ways). Off with
PROFILING_TRACE_DECODER=stdlib; never in Pyodide.
"""

from __future__ import annotations

import os
import sys
from collections import deque
from itertools import compress, repeat
from operator import attrgetter, call, is_, not_

DECODER_ENV = "PROFILING_TRACE_DECODER"  # "stdlib": the standard library's path only
_ERRORS: tuple = ()


# The phases of the trace-event format: an event of another (or none) is read by the standard
# library's path.
PHASES = ("B", "E", "i", "I", "C", "b", "n", "e", "s", "t", "f", "P", "O", "N", "D", "M", "R",
          "c", "(", ")")
_SHOWN = ("M", "i", "I", "B", "E")  # the phases the sink reads as dicts (add_raw)


class Runs:
    """Decodes runs of whole events for one sink: its times-only categories, its kept args."""

    def __init__(self, msgspec, times_only_cats: tuple[str, ...], kept_args: tuple[str, ...],
                 raw_args: tuple[str, ...] = (), absent_arg: object = None):
        from typing import Any, Union

        unset = msgspec.UNSET
        # Not tracked by the cyclic collector (they hold no cycles): cheaper to make and free.
        tagged = {"tag_field": "ph", "gc": False}
        missing = unset if absent_arg is None else absent_arg
        # The kept args, decoded with their event (not their text kept, then decoded again);
        # an args value that is not an object or null fails the run: declined.
        args = msgspec.defstruct("Args", [
            (f"a{i}", kind, msgspec.field(default=missing, name=key))
            for i, (key, kind) in enumerate([*((key, Any) for key in kept_args),
                                             *((key, msgspec.Raw) for key in raw_args)])],
            gc=False)
        # A complete event: each field required (one missing: declined); args None where null
        # or absent, which the sink reads alike (no kept args). Ids of other types (floats and
        # bools equal ints: not interned together) decline the run before any is fed.
        ids = Union[int, str]
        complete = msgspec.defstruct("Complete", [
            ("cat", str), ("name", str), ("pid", ids), ("tid", ids), ("ts", float),
            ("dur", float), ("args", Union[args, None], None)], tag="X", **tagged)
        # Metadata, instants and begin/end events (the sink pairs those): what the sink reads
        # of them; the other phases: nothing.
        self.absent = absent = msgspec.Raw(b"null")  # no args object: told by identity
        shown = [(name, kind | msgspec.UnsetType, unset) for name, kind in (
            ("cat", str), ("name", str), ("ts", float), ("pid", Any), ("tid", Any))]
        shown.append(("args", msgspec.Raw, absent))
        others = [msgspec.defstruct(f"Phase{i}", shown if ph in _SHOWN else [], tag=ph, **tagged)
                  for i, ph in enumerate(PHASES)]
        self.fields = args.__struct_fields__  # the kept args', in order
        self.complete = complete
        self.shown = frozenset(t for t in others if t.__struct_config__.tag in _SHOWN)
        self.events = msgspec.json.Decoder(list[Union[(complete, *others)]])
        self.any = msgspec.json.Decoder()
        self.astuple = msgspec.structs.astuple
        self.unset = unset
        self.times_only = frozenset(times_only_cats)
        self.texts: dict[str, str] = {}  # one string object per name, category

    def read_run(self, text: str, sink) -> bool:
        """Feed the events of `text` (a JSON array of whole events) to the sink; False, and
        nothing fed, where the standard library's path must read it."""
        try:
            events = self.events.decode(text)
        except _ERRORS:
            return False
        types = list(map(type, events))
        kinds = set(types)
        if not kinds or kinds == {self.complete}:
            xs, shown = events, []
        else:  # picked a column at a time: no loop in Python over the flows
            xs = list(compress(events, map(is_, types, repeat(self.complete))))
            # As a rule no metadata, instant or B/E event in a run: not looked for row by row.
            shown = ([] if self.shown.isdisjoint(kinds) else
                     list(compress(events, map(self.shown.__contains__, types))))
        raws = list(map(self._raw, shown))
        if None in raws:
            return False
        if xs:
            self._add(xs, sink)
        if len(events) > len(xs) + len(raws):
            sink.add_unread(len(events) - len(xs) - len(raws))
        for raw in raws:
            sink.add_raw(raw)
        return True

    def _add(self, xs: list, sink) -> None:
        """Complete events to the sink: those of times-only categories as times, the others
        as columns (the order of the standard library's path)."""
        cats = list(map(attrgetter("cat"), xs))
        distinct = set(cats)
        if not self.times_only.isdisjoint(distinct):
            times = list(map(self.times_only.__contains__, cats))
            if all(times):
                rest = []
            else:
                rest = list(compress(xs, map(not_, times)))
                xs = list(compress(xs, times))
                cats = list(compress(cats, times))
            starts, durations = _times(xs)
            sink.add_times(cats, starts, durations)
            if not rest:
                return
            xs = rest
            cats = list(map(attrgetter("cat"), xs))
            distinct = set(cats)
        # One string object per category (a few a run, not one a row). Names are the sink's to
        # keep as one object per text where it keeps them as strings (its Events; its columns
        # hold codes).
        texts = self.texts
        canon = {cat: texts.setdefault(cat, cat) for cat in distinct}
        for xs, cats in _groups(xs, cats, canon, getattr(sink, "group_of", None)):
            names, pids, tids, args = (list(map(attrgetter(field), xs))
                                       for field in ("name", "pid", "tid", "args"))
            starts, durations = _times(xs)
            sink.add_columns(cats, names, pids, tids, starts, durations, args, self.read_args)

    def read_args(self, found: list, fields: int | slice | None = None) -> list:
        """The kept args' values of these args (decoded with their events) as tuples, None for
        one that is null; `fields`: a slice of them (tuples of those, taken at once: no tuple
        of all made, then cut), or the position of one (its value, not in a tuple)."""
        if fields is None:
            get = self.astuple
        elif isinstance(fields, int):
            get = attrgetter(self.fields[fields])
        else:
            chosen = self.fields[fields]
            get = attrgetter(*chosen) if len(chosen) > 1 else (
                lambda args: tuple(getattr(args, name) for name in chosen))
        if None in found:
            return [None if args is None else get(args) for args in found]
        return list(map(get, found))

    def _raw(self, event) -> dict | None:
        """A metadata or instant event as the dict the sink reads (its fields, args decoded)."""
        raw = {"ph": event.__struct_config__.tag}
        for field in ("cat", "name", "ts", "pid", "tid"):
            value = getattr(event, field)
            if value is not self.unset:
                raw[field] = value
        if event.args is not self.absent:
            try:
                raw["args"] = self.any.decode(event.args)
            except _ERRORS:
                return None
        return raw


def _groups(xs: list, cats: list[str], canon: dict[str, str], group_of
            ) -> list[tuple[list, list[str]]]:
    """The events split by the sink's `group_of(category)` (in one pass, at C speed), each
    group in file order, with the category of each (`canon`: the one string object of each
    category of `cats`): the sink then takes each kind's rows whole, not picked out of every
    column kind by kind. One group where the sink has no groups, or a category has none (its
    kind told by the event's name)."""
    if len(canon) == 1:
        return [(xs, [next(iter(canon.values()))] * len(xs))]
    keys = {cat: group_of(cat) for cat in canon} if group_of is not None else {}
    if not keys or None in keys.values() or len(set(keys.values())) == 1:
        return [(xs, list(map(canon.__getitem__, cats)))]
    lists = {key: ([], []) for key in sorted(set(keys.values()))}
    events = {cat: lists[key][0].append for cat, key in keys.items()}
    deque(map(call, map(events.__getitem__, cats), xs), 0)
    if len(keys) > len(lists):  # a group of several categories: theirs, row by row
        names = {cat: lists[key][1].append for cat, key in keys.items()}
        deque(map(call, map(names.__getitem__, cats), map(canon.__getitem__, cats)), 0)
    else:
        for cat, key in keys.items():
            lists[key][1].extend(repeat(canon[cat], len(lists[key][0])))
    return list(lists.values())


def _times(xs: list) -> tuple[list[float], list[float]]:
    starts, durations = list(map(attrgetter("ts"), xs)), list(map(attrgetter("dur"), xs))
    if min(durations) <= 0:
        durations = list(map(max, repeat(0.0), durations))
    return starts, durations


def runs_for(sink) -> Runs | None:
    """A compiled decoder for this sink, or None: not installed, turned off, or in Pyodide."""
    global _ERRORS
    if os.environ.get(DECODER_ENV, "").strip().lower() == "stdlib" or sys.platform == "emscripten":
        return None
    if getattr(sink, "keep_args", None):  # whole args of some kinds: only the stdlib path keeps them
        return None
    try:
        import msgspec
    except ImportError:
        return None
    _ERRORS = (msgspec.DecodeError, msgspec.ValidationError, UnicodeError, ValueError,
               RecursionError)
    return Runs(msgspec, sink.times_only_cats, sink.kept_args, getattr(sink, "raw_args", ()),
                getattr(sink, "absent", None))
