"""Large arrays in mappings of their own, so that their memory goes back to the system when they
are freed (glibc's malloc; elsewhere nothing changes). Standard library only.

glibc serves a request from a mapping of its own only above a threshold that, by default, grows
to the size of any such block freed (up to 32 MiB). Once loading frees its first columns, the
arrays of a trace of gigabytes (a few MiB to tens of MiB each) come from the heap instead, where
the holes that freed ones leave stay resident while later arrays that do not fit them take new
pages: on a 5 GB trace, some hundred MiB of the analyzer's peak. A fixed threshold of
LARGE_BLOCK keeps every array that size or larger in its own mapping, given back when freed;
smaller blocks (the chunks of rows merged or sorted at a time) still come from the heap, reused
without a system call.
"""

from __future__ import annotations

import os

LARGE_BLOCK = 1 << 20  # bytes
THRESHOLD_ENV = "MALLOC_MMAP_THRESHOLD_"  # glibc's own setting: a user's value is kept
_M_MMAP_THRESHOLD = -3  # mallopt's parameter (malloc.h)


def map_large_blocks() -> bool:
    """Fix the threshold at LARGE_BLOCK; whether it was set (not: another C library, or the
    user set glibc's environment variable)."""
    if THRESHOLD_ENV in os.environ:
        return False
    try:
        import ctypes

        mallopt = ctypes.CDLL(None).mallopt
    except (ImportError, OSError, AttributeError, TypeError):  # no ctypes, or no mallopt
        return False
    return bool(mallopt(_M_MMAP_THRESHOLD, LARGE_BLOCK))
