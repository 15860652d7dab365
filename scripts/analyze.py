"""Say what a torch.profiler trace shows: GPU busy time, its gaps and why, launch delays, the top
kernels, and whether the program is overhead-bound or compute-bound.

    python scripts/analyze.py TRACE [TRACE ...] [--json] [--svg OUT] [--step N | --window START:END]
                              [--blocks]

Reads .json and .json.gz chrome traces from torch.profiler / Kineto of any version, CUDA or ROCm,
one file per rank. The definitions are in docs/guide/analyze-your-trace.md.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

if not __package__:  # run as a file path: make the `scripts` package importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from scripts.analysis import TIMES_ONLY_KINDS, TraceFacts, facts, summary_text  # noqa: E402
from scripts.blocks import blocks_json, blocks_of, blocks_text  # noqa: E402
from scripts.trace import Trace, TraceError, load_trace, paused_gc, select_window  # noqa: E402

PROGRESS_MIN_BYTES = 8 << 20  # files smaller than this load too fast to need a progress line
EXIT_BAD_INPUT = 2


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="analyze.py",
        description=__doc__.split("\n\n")[0],
        epilog="Times are microseconds from the trace's first event. Exit status 2: a file "
               "could not be read as a trace (one line on stderr says why).",
    )
    parser.add_argument("traces", nargs="+", type=Path, metavar="TRACE",
                        help="a .json or .json.gz chrome trace (one per rank)")
    parser.add_argument("--json", action="store_true",
                        help="print one JSON object per trace (one per line) instead of text")
    parser.add_argument("--svg", type=Path, metavar="OUT",
                        help="also write the annotated timeline of the window (default: the "
                             "first ProfilerStep): to OUT for one trace; with several traces OUT "
                             "is a directory that gets one <trace name>.svg each")
    parser.add_argument("--blocks", action="store_true",
                        help="also give the facts of each labelled block: the sweep's "
                             "`{mode} n={size}` blocks, or the LLM snippet's `decode b=N` steps "
                             "(per batch size)")
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--step", type=int, metavar="N",
                       help="describe ProfilerStep#N (default: the whole trace)")
    where.add_argument("--window", type=_window_arg, metavar="START:END",
                       help="describe the time range START:END, in us")
    return parser.parse_args(argv)


def _window_arg(text: str) -> tuple[float, float]:
    start, sep, end = text.partition(":")
    try:
        if not sep:
            raise ValueError
        return float(start), float(end)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected START:END in microseconds, got {text!r}") from None


def main(argv=None) -> int:
    args = parse_args(argv)
    svg_paths = _svg_paths(args.svg, args.traces) if args.svg else {}
    status = 0
    # What one trace makes is freed by reference counting when its turn ends: there are no
    # cycles for the collector to find, and its passes over hundreds of thousands of objects
    # would cost more than the work.
    with paused_gc():
        for number, path in enumerate(args.traces):
            status = _report(number, path, args, svg_paths.get(path)) or status
    return status


def _report(number: int, path: Path, args: argparse.Namespace, svg_path: Path | None) -> int:
    """Print the facts of one trace (and write its timeline); 0, or the exit status of a file
    that cannot be analyzed."""
    try:
        # Events that the facts read only as times need not be built, unless a timeline
        # draws them.
        trace = load_trace(path, progress=_progress_printer(path),
                           skip_kinds=frozenset() if args.svg or args.blocks else TIMES_ONLY_KINDS)
        trace_facts = facts(trace, step=args.step, window=args.window)
        if args.svg:
            _write_svg(trace, trace_facts, args, svg_path)
        found = blocks_of(trace) if args.blocks else None
    except TraceError as err:
        return _fail(str(err))
    except Exception as err:  # a file that breaks the analysis is still a bad input
        if os.environ.get("ANALYZE_DEBUG"):
            raise
        return _fail(f"{path}: cannot analyze this trace ({type(err).__name__}: {err})")
    if args.json:
        blocks = {} if found is None else {"blocks": blocks_json(found)}
        print(json.dumps({**trace_facts.to_dict(), **blocks}))
    else:
        print(("\n" if number else "") + summary_text(trace_facts))
        if found is not None:
            print(blocks_text(found))
    return 0


def _fail(message: str) -> int:
    print(f"error: {' '.join(message.split())}", file=sys.stderr)
    return EXIT_BAD_INPUT


def _svg_paths(out: Path, traces: list[Path]) -> dict[Path, Path]:
    """OUT itself for one trace; OUT/<name>.svg for several (a -2, -3 suffix on clashing names)."""
    if len(traces) == 1:
        return {traces[0]: out}
    paths, taken = {}, set()
    for trace in traces:
        name = trace.name.removesuffix(".gz").removesuffix(".json")
        candidate, n = name, 1
        while candidate in taken:
            n += 1
            candidate = f"{name}-{n}"
        taken.add(candidate)
        paths[trace] = out / f"{candidate}.svg"
    return paths


def _write_svg(trace: Trace, trace_facts: TraceFacts, args, out: Path) -> None:
    from scripts.timeline import render_timeline  # only --svg needs the renderer

    window = select_window(trace, step=args.step, window=args.window)
    window_facts = trace_facts if args.step is not None or args.window else facts(trace, window=window)
    svg = render_timeline(trace, window=window, facts=window_facts)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(svg)
    print(f"wrote {out}", file=sys.stderr)


def _progress_printer(path: Path):
    """A progress callback for large files when stderr is a terminal, else None."""
    try:
        large = path.stat().st_size >= PROGRESS_MIN_BYTES
    except OSError:
        return None
    if not (large and sys.stderr.isatty()):
        return None

    def show(done: int, total: int) -> None:
        end = "\n" if done >= total else ""
        print(f"\rreading {path.name}: {100 * done // max(total, 1)}%", end=end, file=sys.stderr,
              flush=True)

    return show


if __name__ == "__main__":
    sys.exit(main())
