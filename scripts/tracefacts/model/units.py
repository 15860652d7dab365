"""The one duration formatter: the prose, the claims, the timelines' labels and the analyzer's
summary all spell a time through `format_us` (times inside the code are microseconds).

A module of its own, importing nothing of the package, so that the facts engine and the renderer
can use it without making the page helpers part of what the render cache's keys cover."""

from __future__ import annotations


def format_us(us: float) -> str:
    """A duration in the unit a reader would pick: 850 ns, 12.3 us, 4.51 ms, 1.2 s."""
    if us < 0:
        return "-" + format_us(-us)
    if us == 0:
        return "0 us"
    if us < 1:
        return f"{us * 1000:.0f} ns"
    if us < 1000:
        return f"{us:.3g} us" if us < 100 else f"{us:.0f} us"
    if us < 1e6:
        return f"{us / 1000:.3g} ms"
    return f"{us / 1e6:.3g} s"
