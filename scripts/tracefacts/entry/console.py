"""The command line's error boundary, shared by `scripts/analyze.py` and `python -m scripts`:
whatever the input, the terminal or the pipe, the user gets output or one line, never a
traceback.

- Any string prints on any encoding: ASCII stand-ins for the few typographic characters the
  summaries use, backslash escapes for anything else (lone surrogates from a trace included).
- Control characters (C0, DEL, C1, bidirectional overrides) are written as escapes, so a name
  from a trace cannot move the cursor, clear the screen or retitle the terminal.
- A reader that stops early (`| head`) ends the program quietly with status 141, as SIGPIPE
  ends `cat`: `set -o pipefail` scripts see what they see for any other tool.
- An output that cannot be written (standard output closed, `>&-`, included: status 2), Ctrl-C
  (status 130) and an unexpected error (status 70, EX_SOFTWARE; SCRIPTS_DEBUG=1 shows its
  traceback) each give one line on stderr, at most LINE_MAX characters; with standard error
  closed (`2>&-`) the status alone says it.

Standard library only: cli.py, on the GPU refresh path, imports it.
"""

from __future__ import annotations

import argparse
import codecs
import errno
import io
import os
import sys
from typing import Callable, NoReturn

from ..model.names import FIELD_ESCAPES, printable  # noqa: F401 (printable: the CLI's import)

EXIT_BAD_INPUT = 2  # a file, argument or output path that cannot be used (argparse's status too)
EXIT_INTERNAL = 70  # EX_SOFTWARE: a bug, not the user's input
EXIT_INTERRUPTED = 130  # 128 + SIGINT, as a shell reports a program stopped by Ctrl-C
EXIT_PIPE_CLOSED = 141  # 128 + SIGPIPE, as a shell reports `cat` when its reader went away
DEBUG_ENV = "SCRIPTS_DEBUG"
LINE_MAX = 1000  # the most characters of a message line (a path may have thousands)
STDOUT, STDERR = "standard output", "standard error"  # the streams' names in messages
_UTF8_CHUNK = 1 << 20  # characters of a long text encoded at a time (not all of it at once)

# A stream of lines: its own newlines and tabs are layout, the rest is escaped.
_STREAM_ESCAPES = {c: e for c, e in FIELD_ESCAPES.items() if chr(c) not in "\n\t"}

# What the summaries print beyond ASCII, for a terminal that cannot show it.
_ASCII_STAND_INS = {"·": "|", "…": "...", "×": "x", "→": "->", "µ": "u", "—": "--", "–": "-",
                    "≈": "~", "≤": "<=", "≥": ">="}
_ERRORS = "tracefacts.console"  # the codec error handler's name, registered below


def _encode_fallback(err: UnicodeError) -> tuple[str, int]:
    if not isinstance(err, UnicodeEncodeError):
        raise err
    chunk = err.object[err.start:err.end]
    return "".join(_ASCII_STAND_INS.get(char) or char.encode("ascii", "backslashreplace").decode()
                   for char in chunk), err.end


codecs.register_error(_ERRORS, _encode_fallback)


class OutputStopped(BaseException):
    """Standard output or error cannot take more. A BaseException, like KeyboardInterrupt: no
    `except Exception` on the way out may take it for a fault of the trace being read."""

    def __init__(self, stream: _Guarded, error: OSError):
        super().__init__(stream.label, error)
        self.stream = stream
        self.error = error


class _Closed:
    """What a closed standard stream (`>&-`: Python's sys.stdout is None) writes to: nothing.
    Standard output fails each write, as a closed descriptor does; standard error, where the
    messages would go, takes them to nowhere (the exit status still tells)."""

    def __init__(self, silent: bool):
        self.silent = silent

    def write(self, text: str) -> int:
        if self.silent:
            return len(text)
        raise OSError(errno.EBADF, "it is closed")

    def flush(self) -> None:
        pass

    def fileno(self) -> int:
        raise OSError(errno.EBADF, "it is closed")


class _Guarded:
    """sys.stdout or sys.stderr, with control characters escaped and write errors raised as
    OutputStopped naming the stream."""

    def __init__(self, stream, label: str):
        self._stream = _Closed(silent=label == STDERR) if stream is None else stream
        self.label = label

    def write(self, text: str) -> int:
        try:
            self._stream.write(text.translate(_STREAM_ESCAPES))
        except OSError as err:
            raise OutputStopped(self, err) from None
        return len(text)

    def write_utf8(self, text: str) -> None:
        """`text` (its own escaping: JSON) and a new line, as UTF-8 whatever the locale, a part
        at a time, not through the escaping copy."""
        try:
            _write_utf8(self._stream, text)
        except OSError as err:
            raise OutputStopped(self, err) from None

    def flush(self) -> None:
        try:
            self._stream.flush()
        except OSError as err:
            raise OutputStopped(self, err) from None

    def unguarded(self):
        return self._stream

    def __getattr__(self, name):
        return getattr(self._stream, name)


def print_utf8(text: str) -> None:
    """Print a line of text that is its own escaping (JSON, which names every control character
    by a \\u escape) to standard output, as UTF-8 whatever the locale: JSON's encoding, and one
    byte for each ASCII character of a name of megabytes, two for an 'é'."""
    stream = sys.stdout
    if isinstance(stream, _Guarded):
        stream.write_utf8(text)
    else:
        _write_utf8(stream, text)


def _write_utf8(stream, text: str) -> None:
    buffer = getattr(stream, "buffer", None)
    if buffer is None:  # a text stream only (StringIO)
        stream.write(text + "\n")
        return
    stream.flush()  # what was written as text first
    for start in range(0, len(text), _UTF8_CHUNK):
        buffer.write(text[start:start + _UTF8_CHUNK].encode("utf-8", "backslashreplace"))
    buffer.write(b"\n")
    buffer.flush()


def one_line(message: str) -> str:
    """A message as one line: each run of spaces and new lines one space, at most LINE_MAX
    characters (of a longer one, the start and the end, where the reason is)."""
    text = " ".join(message.split())
    if len(text) <= LINE_MAX:
        return text
    return f"{text[:LINE_MAX * 2 // 3]} … ({len(text):,} characters) … {text[-LINE_MAX // 4:]}"


def unescaped(stream):
    """The stream under the guard, for a caller that writes its own carriage returns (a
    progress line) and escapes what it takes from a trace itself."""
    return stream.unguarded() if isinstance(stream, _Guarded) else stream


def run_main(main: Callable[[], int | None]) -> NoReturn:
    """`sys.exit(main())`, inside the boundary."""
    sys.exit(call(main))


def call(main: Callable[[], int | None]) -> int:
    """main()'s exit status, with sys.stdout and sys.stderr guarded meanwhile (and restored)."""
    saved = sys.stdout, sys.stderr
    errors = [_set_errors(stream, _ERRORS) for stream in saved]
    sys.stdout, sys.stderr = _Guarded(saved[0], STDOUT), _Guarded(saved[1], STDERR)
    try:
        return _call(main)
    finally:
        sys.stdout, sys.stderr = saved
        for stream, previous in zip(saved, errors):
            if previous:
                _set_errors(stream, previous)


def _call(main: Callable[[], int | None]) -> int:
    try:
        try:
            status = main()
        except SystemExit as done:  # argparse's --help and usage errors
            status = done.code
        sys.stdout.flush()  # here, not at exit, where a closed pipe would still print a traceback
        if status is None or isinstance(status, int):
            return status or 0
        _say(str(status))  # sys.exit("message")
        return 1
    except OutputStopped as stopped:
        _to_devnull(stopped.stream.unguarded())  # the interpreter's last flush goes nowhere
        if isinstance(stopped.error, BrokenPipeError):
            return EXIT_PIPE_CLOSED  # the reader has all it wanted: nothing to report
        _say(f"error: cannot write to {stopped.stream.label} "
             f"({stopped.error.strerror or stopped.error})")
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        _say("interrupted")
        return EXIT_INTERRUPTED
    except Exception as err:
        if os.environ.get(DEBUG_ENV):
            raise
        _say(f"error: unexpected {type(err).__name__}: {one_line(str(err))} "
             f"(a bug; {DEBUG_ENV}=1 shows the traceback)")
        return EXIT_INTERNAL


def _say(line: str) -> None:
    """One line on stderr, if stderr can still take it."""
    try:
        sys.stderr.write(line + "\n")
        sys.stderr.flush()
    except (OutputStopped, OSError):
        pass


def _to_devnull(stream) -> None:
    """As the Python docs advise for SIGPIPE: point the dead stream's descriptor at devnull."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(devnull, stream.fileno())
        finally:
            os.close(devnull)
    except (OSError, ValueError, AttributeError):  # no descriptor (a StringIO under test)
        pass


def _set_errors(stream, errors: str) -> str | None:
    """Set the stream's encoding error handler; the previous one, or None if it has none."""
    previous = getattr(stream, "errors", None)
    try:
        stream.reconfigure(errors=errors)
    except (AttributeError, ValueError, io.UnsupportedOperation, OSError):
        return None
    return previous


class ArgumentParser(argparse.ArgumentParser):
    """argparse's parser with a usage error in one line: the usage is one --help away. An
    option given `--` as its value (`--svg=--`), which argparse reads as no value at all,
    is refused."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_BAD_INPUT, f"{self.prog}: error: {one_line(message)} (see --help)\n")

    def parse_known_args(self, args=None, namespace=None):
        parsed, rest = super().parse_known_args(args, namespace)
        for action in self._actions:
            if action.option_strings and action.nargs is None and getattr(parsed, action.dest, None) == []:
                self.error(f"argument {'/'.join(action.option_strings)}: expected one value, "
                           "got '--' (a file named '--': ./--)")
        return parsed, rest
