"""Names from a trace as they may be shown on a terminal: a name is data, never layout or a
terminal command, so each control character in it (C0, DEL, C1, bidirectional overrides and
isolates, newlines and tabs too) is written as a backslash escape. The facts' text and the command
line's error boundary (scripts/tracefacts/entry/console.py) both use it.
"""

from __future__ import annotations

_CONTROLS = [*range(0x00, 0x20), 0x7F, *range(0x80, 0xA0),
             *range(0x202A, 0x202F), *range(0x2066, 0x206A)]  # bidi embeddings, overrides, isolates
# One field (a name): every control character escaped, newlines and tabs too.
FIELD_ESCAPES = {c: (f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}") for c in _CONTROLS}


def printable(text: str) -> str:
    """One field from a trace (a name) as it may be shown on a terminal: control characters,
    newlines included, as backslash escapes."""
    return text.translate(FIELD_ESCAPES)
