"""Artifacts beside a run's trace and table (scripts/catalog.EXTRAS): how each kind is read from what
the snippet wrote, sanitized for publishing, and read back; and the snapshot as PyTorch's memory
viewer takes it.

- `memory`: `{tag}.memory.json` (snippets/06_memory.py: the profiler's memory timeline by category,
  and the allocator's peaks), committed as gzipped JSON.
- `snapshot`: `{tag}.snapshot.pickle`, the CUDA caching allocator's record
  (`torch.cuda.memory._dump_snapshot`). It holds a Python stack for every allocation, with the
  files' absolute paths, so it is committed as sanitized, gzipped JSON, and turned back into the
  pickle https://pytorch.org/memory_viz takes by `viewer_pickle` (for the site's download). The
  pickle is read without importing anything: a snapshot is plain dicts, lists, strings and numbers,
  and a pickle that names a class or function is refused rather than run.

Standard library only: the GPU refresh imports it.
"""

from __future__ import annotations

import gzip
import io
import json
import pickle
from pathlib import Path

from .sanitize import Scrubber, sanitize_value

# The allocator's record pairs each allocation with its free by `addr` and places segments by
# `address`; both are device addresses (numbers), which name no machine.
SNAPSHOT_NUMBER_KEYS = frozenset({"addr", "address"})
MAX_FROZEN_BYTES = 8 << 20  # gzipped; traces/ is committed (lower the snippet's --max_entries)
VIEWER_PROTOCOL = 4  # what torch's own viewer pages embed (pickle.dumps's default up to Python 3.13)


class ExtraError(ValueError):
    """An extra artifact that cannot be published; str() is one line."""


class _PlainUnpickler(pickle.Unpickler):
    def find_class(self, module, name):
        raise pickle.UnpicklingError(f"it names {module}.{name}, and only plain data is read")


def plain_unpickle(data: bytes):
    """A pickle of plain data (dicts, lists, tuples, strings, bytes, numbers), importing nothing."""
    return _PlainUnpickler(io.BytesIO(data)).load()


def _load(kind: str, name: str, data: bytes):
    try:
        if kind == "snapshot":
            return plain_unpickle(data)
        return json.loads(data)
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError, IndexError, KeyError) as err:
        what = "a pickle of plain data" if kind == "snapshot" else "JSON"
        raise ExtraError(f"{name} is not {what} ({str(err).splitlines()[0] if str(err) else type(err).__name__})") from None


def _jsonable(obj):
    """Tuples as lists, bytes refused: what JSON can hold."""
    if isinstance(obj, dict):
        return {key if isinstance(key, str) else str(key): _jsonable(value) for key, value in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_jsonable(value) for value in obj]
    if isinstance(obj, (bytes, bytearray, set, frozenset, complex)):
        raise ExtraError(f"holds {type(obj).__name__}, which JSON cannot")
    return obj


def sanitized(kind: str, name: str, data: bytes, scrubber: Scrubber):
    """What the snippet wrote as `name`, as plain data fit to publish; ExtraError if it cannot be
    read, or if the sanitizer's own check still finds the machine in it."""
    number_keys = SNAPSHOT_NUMBER_KEYS if kind == "snapshot" else frozenset()
    try:
        plain = _jsonable(_load(kind, name, data))
    except ExtraError as err:
        raise ExtraError(f"{name} {err}" if not str(err).startswith(name) else str(err)) from None
    clean = sanitize_value(plain, scrubber, number_keys)
    leaks = scrubber.leaks(clean, number_keys)
    if leaks:
        raise ExtraError(f"the sanitizer left a machine path or name in {name}: {leaks[0][:120]!r}")
    return clean


def read_extra(path: Path):
    """A committed extra artifact (gzipped JSON) as plain data."""
    return json.loads(gzip.decompress(path.read_bytes()))


def viewer_pickle(snapshot) -> bytes:
    """The snapshot as https://pytorch.org/memory_viz (and torch.cuda._memory_viz) takes it: a
    pickle. Equal strings and equal stack frames become one object each, which the pickle stores
    once: most of a snapshot is the same few hundred frames over and over."""
    strings: dict[str, str] = {}
    frames: dict[tuple, dict] = {}

    def share(obj):
        if isinstance(obj, str):
            return strings.setdefault(obj, obj)
        if isinstance(obj, list):
            return [share(value) for value in obj]
        if isinstance(obj, dict):
            shared = {share(key): share(value) for key, value in obj.items()}
            if set(shared) <= {"filename", "line", "name"}:  # a frame: nothing reads it to change it
                return frames.setdefault(tuple(shared.items()), shared)
            return shared
        return obj

    return pickle.dumps(share(snapshot), protocol=VIEWER_PROTOCOL)
