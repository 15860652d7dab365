"""Kineto's events as `scripts.tracefacts.reading.events`'s expression matched them, into columns: names and
categories with escapes undone, ids, times, durations, and the checks that each match spans one
whole event exactly and reads as json reads it. Standard library only.
"""

from __future__ import annotations

import json
import re
import sys
from itertools import compress, repeat
from operator import is_not

# The characters of JSON's numbers, which bytes.translate deletes (a tight loop) to see
# whether there are others (float also reads letters and '_').
_NUMBER_BYTES = b"0123456789.-+eE \t\n\r"


def spans_one_event(match: re.Match) -> bool:
    """Whether a match spans one event exactly: what `Columns.check` checks in bulk of the
    names, args and flows, that would otherwise end the match inside a string."""
    found = match.groupdict()
    if found.get("flow") is not None:
        return _whole(found["flow"])
    for prefix in ("t_", ""):
        if found.get(prefix + "name") is not None:
            body = found[prefix + "args"]
            return "\\" not in found[prefix + "name"] and (body is None or _whole(body)) and (
                prefix or "\\" not in found["cat"])
    return True  # any other object: exact


def _whole(body: str) -> bool:
    """An args object's or a flow's inside, as `Columns.check` wants it."""
    return "\\" not in body and "{" not in body and "\0" not in body and body.count('"') % 2 == 0


class Columns:
    """The matches of a split, as columns of group values (`columns[g - 1]`: group g of
    `_events_pattern`): Kineto's complete events converted, the times of the times-only ones,
    the count of flows, and the text of the other objects for json. Raises ValueError on a
    name, number or id that does not read."""

    def __init__(self, columns: list[list], pattern: re.Pattern, ids: dict, texts: dict):
        groups = pattern.groupindex

        def column(name: str) -> list:
            return columns[groups[name] - 1]

        self.complete: tuple | None = None  # add_complete's columns
        self.complete_at: list[int] = []  # the match index of each row
        self.times: tuple | None = None  # add_times's columns
        self.times_at: list[int] = []
        self.unread = 0
        self.numbers: list[str] = []  # columns of times, joined
        self.args = ""  # the args of the complete events, joined
        objects = column("other")
        self.count = len(objects)
        self.object_at = list(compress(range(len(objects)), objects))
        self.objects = list(compress(objects, objects))
        # The insides of the args objects and flows that `[^}]*+` took, by match index.
        self.insides = [column(name) for name in ("flow", "t_args", "args") if name in groups]
        if "flow" not in groups:
            return
        flows = column("flow")
        self.unread = len(flows) - flows.count(None)
        if "t_cat" in groups:
            cats = column("t_cat")
            if any(cats):
                self.times_at = list(compress(range(len(cats)), cats))
                names, starts, durations = (list(compress(column(name), cats))
                                            for name in ("t_name", "t_ts", "t_dur"))
                _texts(names, texts)  # only checked: an escape json does not read is a ValueError
                self.numbers += ["".join(starts), "".join(durations)]
                self.times = (list(compress(cats, cats)), _floats(starts),
                              _durations(durations, self.numbers[-1]))
        keep = list(map(is_not, column("cat"), repeat(None)))
        if any(keep):
            cats, names, pids, tids, starts, durations, bodies = (
                list(compress(column(name), keep))
                for name in ("cat", "name", "pid", "tid", "ts", "dur", "args"))
            self.complete_at = list(compress(range(len(keep)), keep))
            self.numbers += ["".join(starts), "".join(durations)]
            self.args = "".join(compress(bodies, bodies))
            self.complete = (_texts(cats, texts), _texts(names, texts), _ids(pids, ids),
                             _ids(tids, ids), _floats(starts),
                             _durations(durations, self.numbers[-1]), bodies)

    def check(self) -> None:
        """ValueError unless every match spans one whole event exactly and reads as json reads
        it. Names and categories: see `_texts`. Times: in the characters of JSON's numbers
        (float also reads others). Args: without NULs (`int_args` puts them between args).
        And `[^}]*+` may have ended an args object or a flow at a '}' inside a string, or
        inside a nested object: the match then is followed by text that is not a comma (the
        rest of the string or the object), which the split's caller refuses, but for two
        cases: the last match, and a match followed by an "any object" match that started
        inside that string (before its closing quote). Those insides are checked: their quotes
        paired, no escapes, no nested objects."""
        if any(numbers.encode().translate(None, _NUMBER_BYTES) for numbers in self.numbers):
            raise ValueError("a number that json should read")
        if "\0" in self.args:
            raise ValueError("args that json should read")
        for i in {i - 1 for i in self.object_at if i} | {self.count - 1}:
            for insides in self.insides:
                if insides[i] is not None and not _whole(insides[i]):
                    raise ValueError("args that json should read")


def decode_objects(texts: list[str]) -> list:
    """json's reading of "any other object" matches (their text after the '{')."""
    return json.loads("[{" + ",{".join(texts) + "]") if texts else []


def _floats(column) -> list[float]:
    return list(map(float, column))


def _durations(column: list[str], joined: str) -> list[float]:
    """Durations as floats, negative ones (and -0.0) made 0. Those are written with a minus
    sign (`joined`: the column's text): only then are all of them clamped (so are '1e-05', to
    no effect)."""
    durations = list(map(float, column))
    if "-" in joined:
        durations = list(map(max, repeat(0.0), durations))
    return durations


def _texts(column: list[str], texts: dict) -> list[str]:
    """Names or categories from their text, escapes undone (ValueError on an escape that json
    does not read, as where a backslash escapes the quote that ended the match), one string
    object per text."""
    found = list(map(texts.get, column))
    if not all(found):  # new texts (or empty ones)
        for raw in set(column).difference(texts):
            texts[raw] = json.loads(f'"{raw}"') if "\\" in raw else raw
        found = list(map(texts.__getitem__, column))
    return found


def _ids(column: list[str], ids: dict) -> list:
    """pid/tid values from their text, one object per text."""
    found = list(map(ids.get, column))
    if None in found:
        for text in set(column).difference(ids):
            stripped = text.strip()
            if stripped.lstrip("-").isdigit() and stripped.isascii():
                ids[text] = int(stripped)
            else:
                ids[text] = json.loads(stripped)  # a string, or a number with a fraction
        found = list(map(ids.__getitem__, column))
    return found


_INT_ARG_PATTERNS: dict[tuple[str, ...], tuple[re.Pattern, dict]] = {}


def int_args(bodies: list, keys: tuple[str, ...], empty: dict) -> list[dict]:
    """The integer values of `keys` in each args text (`empty`, shared, where there are none):
    one search of the texts joined by `"\\0"` (a quote first: the search skips to quotes)."""
    found = _INT_ARG_PATTERNS.get(keys)
    if found is None:
        # An integer of at most 4,300 digits, what json reads (int() refuses longer ones).
        pattern = re.compile(r'"(?:(\0)"|(' + "|".join(map(re.escape, keys))
                             + r')"\s*:\s*(-?[0-9]{1,4300})(?=[,}\s"]|\Z))')
        found = _INT_ARG_PATTERNS[keys] = (pattern, {sys.intern(k): sys.intern(k) for k in keys})
    pattern, interned = found
    column = [empty] * len(bodies)
    if None in bodies:
        bodies = [body or "" for body in bodies]
    at = iter(range(len(bodies)))
    args: dict = {}
    for between, key, value in pattern.findall('"\0"'.join(bodies)):
        if between:  # the end of an event's args
            i = next(at)
            if args:
                column[i] = args
                args = {}
        else:
            args[interned[key]] = int(value)
    if args:
        column[next(at)] = args
    return column
