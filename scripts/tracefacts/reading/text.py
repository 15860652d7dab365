"""The text of a trace file, a window at a time: the bytes of a path, stdin ("-") or a binary
file object, gunzipped when they are gzip (told by the first bytes: a pipe cannot seek; several
members allowed), decoded from UTF-8 (a byte-order mark dropped), refused past a limit on the
decompressed size. `scripts.tracefacts.reading.events` reads the JSON in it. Standard library only; a thread
decompresses ahead where threads exist (Pyodide has none).
"""

from __future__ import annotations

import codecs
import os
import queue
import re
import stat
import sys
import threading
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

CHUNK_BYTES = 1 << 20  # text decompressed and decoded at a time, and cut into events at a time
_GZIP_READ_BYTES = 1 << 20  # compressed bytes read at a time
# The decompressed size refused by default. gzip expands up to ~1000x: a few megabytes can hold
# gigabytes. 4 GiB is 70x the largest trace we hold (55 MB of JSON, loaded in under 100 MB) and
# 4x issue 11's 1 GB goal; the memory it can cost is that of the events it holds (about their
# JSON's size for Kineto's, up to ~2x for the smallest events anyone could write), plus one
# value at a time, which `scripts.tracefacts.reading.events` refuses past 1/16 of the limit (256 MiB): a bomb of one
# long string stops there. A larger trace needs the limit raised, a small machine may lower it.
DEFAULT_MAX_BYTES = 4 << 30
MAX_BYTES_ENV = "PROFILING_MAX_TRACE_BYTES"
THREADED_GUNZIP = True  # decompress ahead in a thread where threads exist (tests turn it off)


class TraceError(ValueError):
    """A file that cannot be read as a trace; the message is one line, fit for a user."""


# --- the bytes ---------------------------------------------------------------------------------


@dataclass
class Source:
    """Where the bytes come from: its name for messages, how to read, close, and reopen it."""

    name: str
    read: Callable[[int], bytes]
    size: int  # 0 when unknown (a pipe)
    close: Callable[[], None]
    reopen: Callable[[], Source] | None = None  # a file can be read again (to say where)


def open_source(source) -> Source:
    """A path, "-" for stdin, or a binary file object (which stays open)."""
    if hasattr(source, "read"):  # a binary file object (sys.stdin.buffer, a pipe, an upload)
        name = getattr(source, "name", None)
        raw = getattr(source, "buffer", source)  # a text stream's bytes
        return Source(name if isinstance(name, str) else "<stream>", raw.read, _size_of(raw),
                       lambda: None)
    if str(source) == "-":
        if sys.stdin is None:  # closed (`<&-`)
            raise TraceError("<stdin>: standard input is closed: nothing to read")
        stdin = sys.stdin.buffer
        return Source("<stdin>", stdin.read, _size_of(stdin), lambda: None)
    path = Path(source)
    with _readable(str(path)):
        handle = path.open("rb")
    size = _size_of(handle)
    return Source(str(path), handle.read, size, handle.close,
                   (lambda: open_source(path)) if size else None)  # a pipe cannot be read again


def _size_of(handle) -> int:
    try:
        status = os.fstat(handle.fileno())
    except (AttributeError, OSError, ValueError):
        return 0
    return status.st_size if stat.S_ISREG(status.st_mode) else 0


class _readable:
    """An OSError while opening or reading, as a one-line TraceError."""

    def __init__(self, name: str):
        self.name = name

    def __enter__(self):
        return self

    def __exit__(self, kind, err, _traceback):
        if kind is None or not issubclass(kind, OSError):
            return False
        if isinstance(err, FileNotFoundError):
            raise TraceError(f"{self.name}: no such file") from None
        if isinstance(err, IsADirectoryError):
            raise TraceError(f"{self.name}: is a directory, not a trace file") from None
        raise TraceError(f"{self.name}: cannot read ({err.strerror or err})") from None


class _Counted:
    """The source's bytes, counting those read, the first ones peeked at (a pipe cannot seek)."""

    def __init__(self, source: Source):
        self.source = source
        self.count = 0
        with _readable(source.name):
            self.head = source.read(CHUNK_BYTES) or b""
            while 0 < len(self.head) < 2:  # enough to tell gzip (a pipe may give less)
                more = source.read(CHUNK_BYTES) or b""
                if not more:
                    break
                self.head += more
        if isinstance(self.head, str):
            raise TraceError(f"{source.name}: opened as text; a trace is read as bytes ('rb')")

    def read(self, size: int) -> bytes:
        if self.head:
            data, self.head = self.head, b""
        else:
            with _readable(self.source.name):
                data = self.source.read(size) or b""
        self.count += len(data)
        return data


def _gunzipped(read: Callable[[int], bytes]):
    """The decompressed content of gzip data, as `GzipFile` reads it (several members, zero
    padding after them), in chunks of at most CHUNK_BYTES (memoryviews). Raises EOFError,
    OSError or zlib.error on data that is truncated or corrupt."""
    data = b""
    calls = 0  # the first chunks one by one (the parser waits for them), then up to 8 a call
    while True:  # one gzip member
        member = zlib.decompressobj(wbits=31)
        while not member.eof:
            if not data:
                data = read(_GZIP_READ_BYTES)
                if not data:
                    raise EOFError("compressed file ended before the end of a member")
            text = memoryview(member.decompress(data, CHUNK_BYTES * min(8, 1 << calls // 2)))
            calls += 1
            data = member.unconsumed_tail
            for start in range(0, len(text), CHUNK_BYTES):
                yield text[start:start + CHUNK_BYTES]
        data = member.unused_data
        while not data.lstrip(b"\0"):  # zero padding, then the end or another member
            more = read(_GZIP_READ_BYTES)
            if not more:
                return
            data = more
        data = data.lstrip(b"\0")
        if len(data) < 2:
            data += read(_GZIP_READ_BYTES)
        if not data.startswith(b"\x1f\x8b"):
            raise OSError("not a gzipped file after a member")


class _Ahead:
    """`_gunzipped` run in a thread, a few chunks ahead: zlib lets go of the interpreter while it
    works, so the parser runs meanwhile. Chunks and the count of compressed bytes behind them
    come through C-level queues (a second queue of tokens bounds how far ahead it runs)."""

    AHEAD = 8

    def __init__(self, counted: _Counted):
        self.counted = counted
        self.chunks: queue.SimpleQueue = queue.SimpleQueue()
        self.tokens: queue.SimpleQueue = queue.SimpleQueue()
        for _ in range(self.AHEAD):
            self.tokens.put(True)
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()  # RuntimeError where there are no threads

    def __iter__(self):
        while True:
            chunk, count = self.chunks.get()
            self.tokens.put(True)
            if isinstance(chunk, BaseException):
                raise chunk
            yield chunk, count
            if not chunk:
                return

    def close(self) -> None:
        self.tokens.put(False)  # stop at the next chunk
        self.thread.join()

    def _run(self) -> None:
        put, take, counted = self.chunks.put, self.tokens.get, self.counted
        try:
            for chunk in _gunzipped(counted.read):
                if not take():
                    return
                put((chunk, counted.count))
            item = b""
        except Exception as err:  # handed to the reader, which raises it
            item = err
        if take():
            put((item, counted.count))


def _chunks(counted: _Counted, gzipped: bool):
    """(bytes, source bytes read so far) pairs, the last one (b"", total); the iterator, and a
    function that stops it."""
    if not gzipped:
        def plain():
            while True:
                chunk = counted.read(CHUNK_BYTES)
                yield chunk, counted.count
                if not chunk:
                    return
        return plain(), lambda: None
    if THREADED_GUNZIP and sys.platform != "emscripten":
        try:
            ahead = _Ahead(counted)
            return iter(ahead), ahead.close
        except RuntimeError:  # no threads here
            pass

    def inline():
        for chunk in _gunzipped(counted.read):
            yield chunk, counted.count
        yield b"", counted.count
    return inline(), lambda: None


def max_bytes_default() -> int:
    """The limit on decompressed size: PROFILING_MAX_TRACE_BYTES (bytes, or with a K/M/G
    suffix: 8G), else DEFAULT_MAX_BYTES."""
    text = os.environ.get(MAX_BYTES_ENV, "").strip()
    if not text:
        return DEFAULT_MAX_BYTES
    match = re.fullmatch(r"(\d+(?:\.\d+)?)\s*([kmgt]?)i?b?", text.lower())
    if not match:
        raise TraceError(f"{MAX_BYTES_ENV}={text!r} is not a size (bytes, or 500M, 8G)")
    return int(float(match.group(1)) * 1024 ** " kmgt".index(match.group(2) or " "))


def format_bytes(size: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size >= scale:
            return f"{size / scale:g} {unit}"
    return f"{size} bytes"


# --- the text: a buffer refilled on demand, and where a position is in the file ----------------


class Text:
    """The decoded text, a window of it at a time: `buf[pos:]` is still to be read."""

    def __init__(self, source: Source, progress: Callable[[int, int], None] | None,
                 max_bytes: int):
        self.name = source.name
        self.progress = progress
        self.size = source.size
        self.max_bytes = max_bytes
        counted = _Counted(source)
        gzipped = counted.head[:2] == b"\x1f\x8b"
        self.chunks, self.close = _chunks(counted, gzipped)
        self.unpacked = " once decompressed" if gzipped else ""
        self.decoder = codecs.getincrementaldecoder("utf-8")()
        self.bytes = 0  # decoded so far
        self.buf = ""
        self.pos = 0
        self.eof = False
        self.first = True
        self.source = source
        self.offset = 0  # characters before buf

    def fail(self, what: str) -> TraceError:
        return TraceError(f"{self.name}: {what}")

    def fill(self, chars: int) -> None:
        """Have at least `chars` characters after pos (fewer at the end of the file), the text
        before pos dropped. The chunks are joined once: a value larger than a chunk costs one
        copy per doubling of the buffer, not one per chunk."""
        if self.eof or len(self.buf) - self.pos >= chars:
            return
        self.offset += self.pos
        pieces = [self.buf[self.pos:]]
        have = len(pieces[0])
        while not self.eof and have < chars:
            text = self.next_text()
            pieces.append(text)
            have += len(text)
        self.buf = "".join(pieces)
        self.pos = 0

    def next_text(self) -> str:
        try:
            chunk, done = next(self.chunks)
        except (EOFError, OSError, zlib.error):
            raise self.fail("gzip data is truncated or corrupt") from None
        self.bytes += len(chunk)
        if self.bytes > self.max_bytes:
            raise self.fail(f"larger than {format_bytes(self.max_bytes)}{self.unpacked}, the limit "
                            f"on a trace's size (raise it with {MAX_BYTES_ENV}=<bytes>, e.g. 8G)")
        try:
            text = self.decoder.decode(chunk, final=not chunk)
        except UnicodeDecodeError as err:
            if not chunk and err.reason == "unexpected end of data":
                raise self.fail("truncated (ends inside a UTF-8 character)") from None
            raise self.fail("not a trace (binary data, not JSON)") from None
        if self.first and text:
            text = text.removeprefix("\ufeff")  # a byte-order mark
            self.first = False
        self.eof = not chunk
        if self.progress is not None:
            self.progress(done, self.size)
        return text

    def peek(self) -> str:
        """Skip whitespace; the next character, '' at the end of the file."""
        while True:
            self.pos = _SPACE.match(self.buf, self.pos).end()
            if self.pos < len(self.buf) or self.eof:
                return self.buf[self.pos:self.pos + 1]
            self.fill(1)

    def where(self, index: int) -> str:
        """Where buf[index] is: line and column (from 1), counted by reading the file again up
        to there (counting lines as it reads would slow every read), else its character."""
        at = self.offset + index
        if self.source.reopen is not None:
            try:
                again = Text(self.source.reopen(), None, self.max_bytes)
            except TraceError:
                again = None
            if again is not None:
                try:
                    read = lines = 0
                    line_start = 0
                    while read < at and not again.eof:
                        part = again.next_text()[:at - read]
                        lines += part.count("\n")
                        if "\n" in part:
                            line_start = read + part.rfind("\n") + 1
                        read += len(part)
                    if read == at:
                        return f"line {lines + 1}, column {at - line_start + 1}"
                except TraceError:
                    pass
                finally:
                    again.close()
                    again.source.close()
        return f"character {at + 1}"


_SPACE = re.compile(r"[ \t\n\r]*")
