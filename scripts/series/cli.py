"""`python -m scripts COMMAND`: refresh the frozen artifacts, check them, list the examples, write
the companion notebooks, list the pages' claims.

Only the standard library is imported here, so `refresh` runs on a bare GPU image; `claims`
builds the site, and runs the docs tooling in a child process.
"""

from __future__ import annotations

import argparse
import sys

from .runs import catalog, freeze, runner
from .notebooks import write as notebooks
from ..tracefacts.entry.console import ArgumentParser, run_main


def main(argv: list[str] | None = None) -> int:
    parser = ArgumentParser(prog="python -m scripts", description=__doc__.splitlines()[0],
                            epilog="Exit status 0: done; 1: stale or failed (what, on stderr); "
                                   "2: bad arguments; 141: the reader of the output stopped early "
                                   "(as `| head` does); 130: interrupted.")
    commands = parser.add_subparsers(dest="command", required=True)

    refresh = commands.add_parser("refresh", help="rerun snippets on this GPU and rewrite traces/")
    refresh.add_argument("--only", nargs="*", default=[], metavar="KEY",
                         help="examples or snippets to rerun, e.g. 01_matmul_add or 01_matmul_add/64_bf16_cold_eager")
    refresh.add_argument("--stale", action="store_true", help="rerun only missing or stale examples")
    refresh.add_argument("--keep-going", action="store_true",
                         help="write the examples that succeeded even if others failed")
    refresh.add_argument("--python", default=sys.executable, help="interpreter that has torch (default: this one)")
    refresh.add_argument("--timeout", type=_seconds, default=runner.DEFAULT_TIMEOUT_S, metavar="S",
                         help=f"kill a run after S seconds and fail its example (default {runner.DEFAULT_TIMEOUT_S:g})")
    refresh.add_argument("--isolated", action="store_true",
                         help="a fresh interpreter per run instead of the fork server (slower, same results)")

    check = commands.add_parser("check", help="fail if an artifact is missing or stale")
    check.add_argument("--only", nargs="*", default=[], metavar="KEY")

    commands.add_parser("list", help="list the examples and their state")

    notebook = commands.add_parser("notebooks", help="regenerate docs/notebooks/ from the frozen runs")
    notebook.add_argument("--check", action="store_true", help="write nothing; fail if a notebook is stale")

    listing = commands.add_parser("claims", help="build the site and list every claim of its pages with its status")
    listing.add_argument("--site", metavar="DIR",
                         help="read DIR/claims.json of a site already built instead of building one")

    args = parser.parse_args(argv)
    if args.command == "claims":
        return list_claims(args.site)
    if args.command == "notebooks":
        return write_notebooks(check_only=args.check)
    try:
        examples = catalog.select(getattr(args, "only", None))
    except KeyError as err:
        print(f"error: {err.args[0]}", file=sys.stderr)
        return 2

    if args.command == "list":
        for example in examples:
            state = "awaiting" if freeze.awaits_gpus(example) else freeze.status(example).state
            print(f"{state:8} {example.key:45} {example.command}")
        return 0
    if args.command == "check":
        problems = freeze.check(examples)
        waiting = freeze.awaiting_report(examples)
        ready = len(examples) - sum(map(freeze.awaits_gpus, examples))
        print(freeze.stale_report(problems) if problems else f"all {ready} example(s) are fresh",
              file=sys.stderr if problems else sys.stdout)
        if waiting:
            print(waiting)
        return 1 if problems else 0
    if args.stale:
        examples = [s.example for s in freeze.check(examples)]
        if not examples:
            print("every artifact is fresh; nothing to run")
            return 0
    try:
        failed = freeze.refresh(examples, args.python, keep_going=args.keep_going, timeout_s=args.timeout,
                                isolated=args.isolated)
    except RuntimeError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    if failed:
        return 1
    write_notebooks()  # their outputs are the new runs; one that cannot be made yet says why
    return 0


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, got {text!r}")
    return value


def write_notebooks(check_only: bool = False) -> int:
    if check_only:
        stale = notebooks.check()
        print(notebooks.stale_report(stale) if stale else f"all {len(notebooks.NOTEBOOKS)} notebook(s) are current",
              file=sys.stderr if stale else sys.stdout)
        return 1 if stale else 0
    changed, errors = notebooks.write_all()
    for path in changed:
        print(f"wrote {path.relative_to(catalog.ROOT).as_posix()}")
    for error in errors:
        print(f"error: {error}", file=sys.stderr)
    if not changed and not errors:
        print(f"all {len(notebooks.NOTEBOOKS)} notebook(s) are current")
    return 1 if errors else 0


def list_claims(site: str | None) -> int:
    """Print page / claim / numbers / runs / status for every claim; 1 if one fails or a page
    uses a run it does not link."""
    import os
    import subprocess
    import tempfile
    from pathlib import Path

    from ..tracefacts.model.names import shown
    from .pages.claims import listing_text, read_listing
    from .mkdocs_glue.ledger import LISTING

    with tempfile.TemporaryDirectory(prefix="claims-site-") as built:
        if site is None:
            site = built
            done = subprocess.run(
                [sys.executable, "-m", "mkdocs", "build", "--quiet", "--site-dir", built],
                cwd=catalog.ROOT, env=dict(os.environ, NO_MKDOCS_2_WARNING="1"),
                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            if done.returncode != 0:
                tail = done.stderr.strip().splitlines()[-1:] or ["no message"]
                print(f"error: the site did not build (mkdocs exited {done.returncode}): {tail[0]}", file=sys.stderr)
                return 2
        path = Path(site) / LISTING
        try:
            claims, problems = read_listing(path)
        except (OSError, ValueError) as err:
            why = err.strerror or err if isinstance(err, OSError) else err
            print(f"error: {shown(path)}: cannot read the claims listing ({why})", file=sys.stderr)
            return 2
    print(listing_text(claims, problems))
    return 1 if problems or any(not c.holds for c in claims) else 0


if __name__ == "__main__":
    run_main(main)
