"""Names from a trace as they may be shown: a name is data, never layout or a terminal command,
and never more than a few hundred characters of a page or a line.

- `printable`: each control character (C0, DEL, C1, bidirectional overrides and isolates,
  newlines and tabs too) written as a backslash escape.
- `bounded`: at most `limit` characters, a longer text cut with an ellipsis and its length.
- `shown`: both, what every text output does with a name (a kernel, a step, a thread, a path).
- `text_lines`: the one boundary of every text output (the summary, its per-step table, --diff,
  --blocks, the ranks, the details): each line printable, so that nothing put inside a line, a
  name or a message, can start another one.

The command line's error boundary (scripts/tracefacts/entry/console.py) escapes the same
characters but newlines and tabs, which are a stream's own layout.
"""

from __future__ import annotations

from collections.abc import Iterable

_CONTROLS = [*range(0x00, 0x20), 0x7F, *range(0x80, 0xA0),
             *range(0x202A, 0x202F), *range(0x2066, 0x206A)]  # bidi embeddings, overrides, isolates
# One field (a name): every control character escaped, newlines and tabs too.
FIELD_ESCAPES = {c: (f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}") for c in _CONTROLS}

# The most characters of a name that a line, a table cell or a picture's text shows: a demangled
# C++ name runs to a thousand or so, a step or a thread name to a few dozen; a longer one is cut,
# its length said (the full name is in --json).
SHOWN_MAX = 300
# Where a page or a picture offers a name in full (on hover: a title, a tooltip, a heading's),
# at most this many characters: more than the longest demangled kernel name of our traces
# (1,127), far less than the megabytes a trace may hold.
FULL_NAME_MAX = 2000


def printable(text: str) -> str:
    """One field from a trace (a name) as it may be shown on a terminal: control characters,
    newlines included, as backslash escapes."""
    return text.translate(FIELD_ESCAPES)


def bounded(text: str, limit: int = SHOWN_MAX) -> str:
    """`text`, or its first characters, an ellipsis and its length, in about `limit` characters
    (a few more for the length): in time and memory bounded by `limit`, whatever the text."""
    if len(text) <= limit:
        return text
    suffix = f"… ({len(text):,} characters)"
    return text[:max(limit - len(suffix), 1)] + suffix


def shown(name: object, limit: int = SHOWN_MAX) -> str:
    """A name as a text output shows it: bounded, then printable (escapes make it at most four
    times longer: still bounded)."""
    return printable(bounded(str(name), limit))


def text_lines(lines: Iterable[str]) -> str:
    """Lines of a text output, each printable, joined: the one boundary every text output goes
    through, so that no name or message inside a line can make a line of its own."""
    return "\n".join(map(printable, lines))
