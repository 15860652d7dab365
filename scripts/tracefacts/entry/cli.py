"""Say what a torch.profiler trace shows: GPU busy time, its gaps and why, launch delays, the top
kernels, and who set the pace: overhead-bound, GPU-bound, stalled or mixed.

    python scripts/analyze.py TRACE [TRACE ...] [--json] [--svg OUT]
                              [--step N|steady | --window START:END] [--blocks]
    python scripts/analyze.py BEFORE AFTER --diff [--json] [--svg DIR] [--step N|steady | --window ...]
    python scripts/analyze.py RANK_DIR | --ranks TRACE TRACE ... [--json] [--workers N]

Reads .json and .json.gz chrome traces from torch.profiler / Kineto of any version, CUDA or ROCm,
one file per rank (`-`: standard input). A directory, or --ranks with several files, is one
distributed run: its ranks are read in parallel processes and compared (scripts/tracefacts/facts/ranks.py). The
definitions are in docs/guide/analyze-your-trace.md.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import stat
import sys
from pathlib import Path

from ..facts.analysis import (COLUMN_KINDS, TraceFacts, facts, focus_window,
                        steady_step, summary_text)
from .beside import Beside
from ..facts.blocks import blocks_json, blocks_of, blocks_text
from .console import (DEBUG_ENV, EXIT_BAD_INPUT, ArgumentParser, one_line, print_utf8,
                      printable, run_main, unescaped)
from ..facts.details import details, details_json, details_lines, needs_op_args
from ..facts.recording import recording_facts
from ..model.columnar.heap import map_large_blocks
from ..model.names import shown
from ..model.trace import Trace, TraceError, Window, load_trace, paused_gc, select_window

# From this many events on, large arrays get mappings of their own once the trace is read
# (scripts/tracefacts/model/columnar/heap.py). On the 5.0 GB repeated trace (19M events) that keeps the peak at 912 MiB, not
# about 1 GiB; on the 919 MB one (3.5M) it would save 10 MB for 0.45 s of system time (the
# kernel's fresh pages), about 4% of the run, so smaller traces keep glibc's default.
LARGE_TRACE_EVENTS = 8_000_000
# Traces of this many events and more, up to LARGE_TRACE_EVENTS, have their details computed in a
# forked child while the parent makes the facts (scripts/tracefacts/entry/beside.py): measured here, 0.70 -> 0.61 s
# on the 197k-event stacks trace and 9.8 -> 8.4 s on the 919 MB one (3.5M events), where the pair
# holds 80 MiB more than one process; at 40k events it gains nothing. From LARGE_TRACE_EVENTS on,
# that extra memory would take the pair near 1 GiB: the details come after the facts there.
CHILD_MIN_EVENTS = 100_000
PROGRESS_MIN_BYTES = 8 << 20  # files smaller than this load too fast to need a progress line
STDIN = "-"  # load_trace reads standard input for this string (a Path would be a file named -)
STDIN_NAME = "<stdin>"
STEADY = "steady"  # --step steady: each trace's steady-state step (scripts.tracefacts.facts.analysis.steady_step)
DIFF_SVG_NAMES = ("before.svg", "after.svg")
TracePath = Path | str  # a Path, or STDIN
PROG = "analyze.py"  # the installed console command calls itself by its own name (cli)


def parse_args(argv=None) -> argparse.Namespace:
    parser = ArgumentParser(
        prog=PROG,
        description=__doc__.split("\n\n")[0],
        epilog="Times are microseconds from the trace's first event. Exit status 2: a file "
               "could not be read as a trace, or an argument or output path cannot be used "
               "(one line on stderr says why); 141: the reader of the output stopped early "
               "(as `| head` does); 130: interrupted.",
    )
    parser.add_argument("traces", nargs="+", type=_trace_arg, metavar="TRACE",
                        help="a .json or .json.gz chrome trace (one per rank); - reads standard input")
    parser.add_argument("--json", action="store_true",
                        help="print one JSON object per trace (one per line) instead of text; "
                             "strict JSON: a time or ratio that is NaN or infinite in the trace "
                             "is null")
    parser.add_argument("--svg", type=Path, metavar="OUT",
                        help="also write the annotated timeline of the window (default: the "
                             "first ProfilerStep): to OUT for one trace; with several traces OUT "
                             "is a directory that gets one <trace name>.svg each")
    parser.add_argument("--diff", action="store_true",
                        help="compare two traces, BEFORE AFTER: GPU busy, idle by cause, gaps, "
                             "launches, kernels and wall time per step, the GPU activities added, "
                             "removed and changed, and both verdicts; with --svg, OUT is a "
                             "directory that gets before.svg and after.svg on one time scale (by "
                             "default of each trace's steady step)")
    parser.add_argument("--blocks", action="store_true",
                        help="also give the facts of each labelled block: the sweep's "
                             "`{mode} n={size}` blocks, or the LLM snippet's `decode b=N` steps "
                             "(per batch size)")
    parser.add_argument("--ranks", action="store_true",
                        help="the traces are the ranks of one distributed run: per rank and across "
                             "ranks, communication, compute, their overlap (HTA's definition), "
                             "time waiting in collectives and the slowest rank of each step, on "
                             "one time axis (implied when a TRACE is a directory)")
    parser.add_argument("--workers", type=_workers_arg, metavar="N",
                        help="with several ranks: processes reading them (default: one per core, "
                             "at most one per file)")
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--step", type=_step_arg, metavar="N",
                       help="describe ProfilerStep#N (default: the whole trace); 'steady': each "
                            "trace's typical step, of median duration among those after the first")
    where.add_argument("--window", type=_window_arg, metavar="START:END",
                       help="describe the time range START:END, in us")
    args = parser.parse_args(argv)
    if args.diff and len(args.traces) != 2:
        parser.error(f"--diff compares exactly two traces, BEFORE AFTER (got {len(args.traces)})")
    if args.diff and args.blocks:
        parser.error("--diff and --blocks cannot be combined")
    if args.traces != [STDIN] and any(p != STDIN and _is_dir(p) for p in args.traces):
        args.ranks = True
    if args.ranks:
        clashing = [flag for flag, on in (("--diff", args.diff), ("--svg", args.svg), ("--blocks", args.blocks),
                                          ("--step", args.step is not None),
                                          ("--window", args.window is not None)) if on]
        if clashing:
            parser.error(f"the ranks of a run (--ranks, or a directory) are read whole: "
                         f"{', '.join(clashing)} cannot be combined with them")
        if STDIN in args.traces:
            parser.error("--ranks reads files or directories, not standard input")
    if args.traces.count(STDIN) > 1:
        parser.error("- (standard input) can be read only once")
    if STDIN in args.traces and sys.stdin is not None and sys.stdin.isatty():
        parser.error("- reads the trace from standard input, which is a terminal: pipe or "
                     "redirect a trace into it")
    return args


def _trace_arg(text: str) -> TracePath:
    return STDIN if text == STDIN else Path(text)


def _workers_arg(text: str) -> int:
    if not re.fullmatch("[0-9]{1,6}", text) or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected a number of processes, 1 or more, got {_quoted(text)}")
    return int(text)


def _step_arg(text: str) -> int | str:
    if text == STEADY:
        return STEADY
    if not re.fullmatch("[0-9]{1,18}", text):  # ASCII digits: int() would take ' 3', '٣', '3_0'
        raise argparse.ArgumentTypeError(f"expected a step number or '{STEADY}', got {_quoted(text)}")
    return int(text)


def _quoted(text: str) -> str:
    """An argument as an error quotes it: printable, bounded."""
    return repr(shown(text, 60))


def _window_arg(text: str) -> tuple[float, float]:
    start, sep, end = text.partition(":")
    try:
        if not sep:
            raise ValueError
        window = float(start), float(end)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected START:END in microseconds, got {_quoted(text)}") from None
    if not all(map(math.isfinite, window)) or window[1] <= window[0]:
        raise argparse.ArgumentTypeError(f"expected START:END in microseconds with finite START "
                                         f"before END, got {_quoted(text)}")
    return window


def display_name(path: TracePath) -> str:
    return STDIN_NAME if path == STDIN else str(path)


def main(argv=None) -> int:
    args = parse_args(argv)
    if args.diff:
        return _diff(args)
    if args.ranks:
        return _ranks(args)
    svg_paths = _svg_paths(args.svg, args.traces) if args.svg else {}
    problem = _unwritable(args.svg, several=len(args.traces) > 1) if args.svg else None
    if problem:  # said before the traces are read, which can take long
        return _fail(problem)
    status = 0
    # What one trace makes is freed by reference counting when its turn ends: there are no
    # cycles for the collector to find, and its passes over hundreds of thousands of objects
    # would cost more than the work.
    with paused_gc():
        for number, path in enumerate(args.traces):
            status = _report(number, path, args, svg_paths.get(path)) or status
    return status


def _report(number: int, path: TracePath, args: argparse.Namespace, svg_path: Path | None) -> int:
    """Print the facts of one trace (and write its timeline); 0, or the exit status of a file
    that cannot be analyzed or a timeline that cannot be written."""
    try:
        trace, step = _load(path, args, full=bool(args.svg or args.blocks))
        focus = focus_window(trace, step, args.window)
        # The details and the recording's check on the second core while the facts are made
        # (scripts/tracefacts/entry/beside.py).
        with Beside(_beside_facts, trace, focus, fork=_worth_a_child(trace)) as aside:
            trace_facts = facts(trace, step=step, window=focus)
            extra, recording = aside.result()
        svg = render_window(trace, trace_facts, step, args.window) if args.svg else None
        found = blocks_of(trace) if args.blocks else None
    except Exception as err:  # a file that breaks the analysis is still a bad input
        return _bad_input(path, err)
    if svg is not None:
        problem = _write(svg_path, svg)
        if problem:
            return _fail(problem)
    if args.json:
        blocks = {} if found is None else {"blocks": blocks_json(found)}
        print_utf8(strict_json({**trace_facts.to_dict(), "recording": recording.to_dict(),
                                **details_json(extra), **blocks}))
    else:
        print(("\n" if number else "") + summary_text(trace_facts, recording))
        if extra is not None:
            print("\n".join(details_lines(extra)))
        if found is not None:
            print(blocks_text(found))
    return 0


def _beside_facts(trace: Trace, focus: Window):
    """What a child computes while the parent makes the facts: the details (memory, shapes,
    stacks) and how the trace was recorded (scripts/tracefacts/facts/recording.py)."""
    return details(trace, focus), recording_facts(trace, focus)


def _worth_a_child(trace: Trace) -> bool:
    return CHILD_MIN_EVENTS <= trace.event_count < LARGE_TRACE_EVENTS


def _load(path: TracePath, args: argparse.Namespace, full: bool) -> tuple[Trace, int | None]:
    """The trace, and the number of the step to describe (None: not a step). `full`: build every
    event, for a timeline or the blocks (the facts read some kinds only as times)."""
    # The ops' args in the same pass where the profiler's flags before the events ask for them.
    trace = load_trace(path, progress=_progress_printer(path),
                       skip_kinds=frozenset() if full else COLUMN_KINDS, op_args=None)
    if path != STDIN and not trace.op_args and needs_op_args(trace):  # no flags: read again
        trace = None  # freed before the second reading
        trace = load_trace(path, skip_kinds=frozenset() if full else COLUMN_KINDS, op_args=True)
    trace.source = display_name(path)  # what the facts and their errors call it
    if trace.event_count >= LARGE_TRACE_EVENTS:
        map_large_blocks()  # its freed columns given back while the facts are made, not held
    if args.window:
        _check_overlap(args.window, trace)
    step = args.step
    if step == STEADY:
        step = steady_step(trace)
        if step is None:
            raise TraceError(f"{trace.source}: --step {STEADY} needs numbered ProfilerSteps, "
                             "and the trace has none")
    return trace, step


def _bad_input(path: TracePath, err: Exception) -> int:
    """The one line for a trace that cannot be read or analyzed (SCRIPTS_DEBUG=1: the
    traceback of an unexpected error)."""
    if not isinstance(err, TraceError):
        if os.environ.get(DEBUG_ENV):
            raise err
        return _fail(f"{shown(display_name(path))}: cannot analyze this trace "
                     f"({type(err).__name__}: {err})")
    message = str(err)
    if path == STDIN and message.startswith(f"{STDIN}:"):
        message = STDIN_NAME + message[len(STDIN):]
    return _fail(message)


def _diff(args: argparse.Namespace) -> int:
    """Compare BEFORE and AFTER: the deltas as text or one JSON object, and with --svg both
    timelines on one time scale in the directory OUT."""
    from ..facts.diff import diff, diff_text

    problem = _unwritable(args.svg, several=True) if args.svg else None
    if problem:
        return _fail(problem)
    sides = []
    with paused_gc():
        for path in args.traces:
            try:
                trace, step = _load(path, args, full=bool(args.svg))
                # Every GPU activity by name, so that added and removed are exact.
                sides.append((trace, step, facts(trace, step=step, window=args.window, top=None)))
            except Exception as err:
                return _bad_input(path, err)
        result = diff(sides[0][2], sides[1][2])
        if args.svg:
            status = _diff_timelines(args, sides)
            if status:
                return status
    if args.json:
        print_utf8(strict_json(result.to_dict()))
    else:
        print(diff_text(result))
    return 0


def _ranks(args: argparse.Namespace) -> int:
    """The ranks of one run, per rank and across ranks, as text or one JSON object."""
    from ..facts.ranks import cross_rank, rank_files, read_ranks, report_text

    try:
        files = rank_files(args.traces)
        facts = read_ranks(files, workers=args.workers)
        report = cross_rank(facts)
    except TraceError as err:
        return _fail(str(err))
    except Exception as err:  # a file that breaks the analysis is still a bad input
        if os.environ.get(DEBUG_ENV):
            raise
        return _fail(f"cannot analyze these ranks ({type(err).__name__}: {err})")
    if args.json:
        print_utf8(strict_json(report.to_dict()))
    else:
        print(report_text(report))
    return 0


def _diff_timelines(args: argparse.Namespace, sides: list) -> int:
    """before.svg and after.svg in OUT, on one time scale: of the window described, or else of
    each trace's steady step (the whole trace without numbered steps)."""
    from ..pictures.timeline.draw import render_timeline, shared_span_us

    given = args.step is not None or args.window is not None
    windows = []
    for (trace, step, _), path in zip(sides, args.traces):
        try:
            windows.append(select_window(trace, step=step if given else steady_step(trace),
                                         window=args.window))
        except Exception as err:
            return _bad_input(path, err)
    span = shared_span_us(*windows)
    for (trace, _, trace_facts), path, window, name, role in zip(
            sides, args.traces, windows, DIFF_SVG_NAMES, ("Before", "After")):
        try:
            svg = render_timeline(trace, window=window, span_us=span,
                                  facts=trace_facts if given else facts(trace, window=window),
                                  title=f"{role}: {Path(trace.source).name}")
        except Exception as err:
            return _bad_input(path, err)
        problem = _write(args.svg / name, svg)
        if problem:
            return _fail(problem)
    return 0


# What JSON text may hold raw but a terminal or a JavaScript string must not: DEL, C1 controls,
# the line and paragraph separators, bidirectional overrides; and lone surrogates, which UTF-8
# cannot encode. JSON's own escapes take the C0 controls.
_JSON_ESCAPED = re.compile("[\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


def strict_json(value) -> str:
    """One line of JSON that any parser accepts: NaN and infinities (which a trace may hold)
    become null instead of the bare NaN and Infinity that json.dumps writes. Names as they
    are, in full (an 'é' is one character, not the six of '\\u00e9'), but for the characters
    of _JSON_ESCAPED, as \\u escapes: the text is safe on a terminal and encodes as UTF-8."""
    text = json.dumps(_finite(value), allow_nan=False, ensure_ascii=False)
    if text.isascii():
        return text
    return _JSON_ESCAPED.sub(_json_escape, text)


def _json_escape(found: re.Match) -> str:
    return f"\\u{ord(found.group()):04x}"


def _finite(value):
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


def _check_overlap(window: tuple[float, float], trace: Trace) -> None:
    start, end = window
    if end <= 0 or start >= trace.end_us:
        raise TraceError(f"{trace.source}: window {start:g}:{end:g} is outside the trace, "
                         f"which spans 0:{trace.end_us:g} us")


def _fail(message: str) -> int:
    print(f"error: {one_line(message)}", file=sys.stderr)
    return EXIT_BAD_INPUT


def _is_dir(path: Path) -> bool:
    """Whether `path` is a directory; False where it cannot be looked at (a name too long, no
    permission): reading it then says why."""
    try:
        return path.is_dir()
    except OSError:
        return False


def _svg_paths(out: Path, traces: list[TracePath]) -> dict[TracePath, Path]:
    """OUT itself for one trace; OUT/<name>.svg for several (a -2, -3 suffix on clashing names)."""
    if len(traces) == 1:
        return {traces[0]: out}
    paths, taken = {}, set()
    for trace in traces:
        name = "stdin" if trace == STDIN else trace.name.removesuffix(".gz").removesuffix(".json")
        candidate, n = name, 1
        while candidate in taken:
            n += 1
            candidate = f"{name}-{n}"
        taken.add(candidate)
        paths[trace] = out / f"{candidate}.svg"
    return paths


def render_window(trace: Trace, trace_facts: TraceFacts, step: int | None, window) -> str:
    """The annotated timeline of ProfilerStep#`step`, or of `window` ((start, end)), or by
    default of the first step. `trace_facts` describe the step or window when one is given; for
    the default one the picture's headline gets facts of its own."""
    from ..pictures.timeline.draw import render_timeline  # only --svg needs the renderer

    from ..pictures.timeline.memory_lane import add_memory_lane  # a lane of allocated bytes, where there are any

    chosen = select_window(trace, step=step, window=window)
    given = step is not None or window is not None
    return add_memory_lane(render_timeline(trace, window=chosen,
                                           facts=trace_facts if given else facts(trace, window=chosen)),
                           trace, chosen)


def _unwritable(out: Path, several: bool) -> str | None:
    """What stops --svg OUT from being written, found before any trace is read (which can take
    long); None if nothing visible does. With several traces OUT is a directory, made if missing;
    either way OUT's parent must exist."""
    try:
        if several and out.exists() and not out.is_dir():
            return f"--svg {shown(out)}: not a directory (with several traces OUT is the directory to write to)"
        if not several and out.is_dir():
            return f"--svg {shown(out)}: is a directory (with one trace OUT is the .svg file to write)"
        parent = out.parent
        if not parent.is_dir():
            what = "is not a directory" if parent.exists() else "does not exist"
            return f"--svg {shown(out)}: its directory {shown(parent)} {what}"
        target = out if out.exists() else parent  # what gets written: the file, or the folder
        if not os.access(target, os.W_OK | (os.X_OK if target.is_dir() else 0)):
            return f"--svg {shown(out)}: {shown(target)} is not writable (permission denied)"
    except OSError as err:  # a name too long, a loop of links, ...
        return f"--svg {shown(out)}: cannot be written ({_reason(err)})"
    return None


def _reason(err: OSError) -> str:
    """An OSError in words: the system's ('File name too long')."""
    return err.strerror or str(err)


def _write(out: Path, svg: str) -> str | None:
    """Write one timeline; None, or the line that says why it could not be written. A file is
    written atomically: into a temporary file beside it, then renamed over it, so that a reader
    never sees half a picture (nor an old one half overwritten); what is no file (a pipe,
    /dev/stdout) is written in place."""
    try:
        out.parent.mkdir(exist_ok=True)  # the folder of several timelines
        try:
            found = os.stat(out)  # through a link: its target is what gets replaced
        except FileNotFoundError:
            found = None
        if found is not None and not stat.S_ISREG(found.st_mode):
            _write_in_place(out, svg)
        else:
            _write_atomically(Path(os.path.realpath(out)) if found else out, svg,
                              stat.S_IMODE(found.st_mode) if found else _new_file_mode())
    except OSError as err:
        return f"--svg {shown(out)}: cannot write ({_reason(err)})"
    print(f"wrote {shown(out)}", file=sys.stderr)
    return None


def _write_in_place(out: Path, text: str) -> None:
    with open(out, "w", encoding="utf-8") as file:
        file.write(text)


def _write_atomically(out: Path, text: str, mode: int) -> None:
    """`text` into `out` by a temporary file in its folder renamed over it, with `mode`. A folder
    that takes no new file, where `out` is a file that may be written: in place."""
    import tempfile  # only --svg writes a file

    try:
        handle, temporary = tempfile.mkstemp(dir=out.parent, prefix=f".{out.name[:64]}.", suffix=".tmp")
    except PermissionError:
        if not out.exists():
            raise
        _write_in_place(out, text)
        return
    try:
        with open(handle, "w", encoding="utf-8") as file:
            file.write(text)
        os.chmod(temporary, mode)  # mkstemp's is 0600
        os.replace(temporary, out)
    except BaseException:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        raise


def _new_file_mode() -> int:
    """The mode open() gives a new file: 0666 less the umask (read, and set back, at once)."""
    umask = os.umask(0o22)
    os.umask(umask)
    return 0o666 & ~umask


def _progress_printer(path: TracePath):
    """A progress callback for large files when stderr is a terminal, else None."""
    if path == STDIN:
        return None  # its size is unknown
    try:
        large = path.stat().st_size >= PROGRESS_MIN_BYTES
    except OSError:
        return None
    if not (large and sys.stderr.isatty()):
        return None
    name = printable(path.name)

    def show(done: int, total: int) -> None:
        end = "\n" if done >= total else ""
        # Unguarded: its carriage return redraws the line (the name is escaped above).
        print(f"\rreading {name}: {100 * done // max(total, 1)}%", end=end,
              file=unescaped(sys.stderr), flush=True)

    return show


def cli() -> None:
    """The installed console command, `tracefacts` (pyproject's [project.scripts])."""
    global PROG
    PROG = "tracefacts"
    run_main(main)
