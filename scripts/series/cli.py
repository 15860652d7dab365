"""`python -m scripts COMMAND`: refresh the frozen artifacts, check them, list the examples, write
the companion notebooks, list the pages' claims, build the site from another GPU's refresh.

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

    rebuild = commands.add_parser(
        "rebuild-check", help="build the site strictly from another GPU's refresh (a tarball of its traces/)",
        description="In a temporary copy of this tree, lay the tarball's runs over traces/ for the examples "
                    "whose snippet and arguments are unchanged (the others keep this tree's runs), write the "
                    "notebooks from them and build the site strictly; print which examples came from the "
                    "tarball and which claims fail. Exit 1 if the build fails.")
    rebuild.add_argument("tarball", help="a .tgz holding traces/ as `make refresh` wrote it on the other GPU")
    rebuild.add_argument("--keep", metavar="DIR", help="build in DIR (made empty) and leave it there, site included")

    args = parser.parse_args(argv)
    if args.command == "claims":
        return list_claims(args.site)
    if args.command == "rebuild-check":
        return rebuild_check(args.tarball, args.keep)
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


def rebuild_check(tarball: str, keep: str | None) -> int:
    """`rebuild-check`: see its description above; docs/guide/rebuild.md says what it is for."""
    import shutil
    import tempfile
    from pathlib import Path

    from .pages import one_gpu
    from .runs import overlay

    source = Path(tarball)
    if not source.is_file():
        print(f"error: {tarball}: no such file", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="rebuild-check-") as tmp:
        work = Path(keep) if keep else Path(tmp)
        if keep:
            shutil.rmtree(work, ignore_errors=True)
        tree, site = work / "tree", work / "site"
        try:
            _copy_tree(catalog.ROOT, tree)
            laid = overlay.lay(source, tree, list(catalog.EXAMPLES))
        except (OSError, overlay.OverlayError) as err:
            print(f"error: {err}", file=sys.stderr)
            return 2
        print("\n".join(laid.lines(source.name)), flush=True)
        while True:  # each round that builds again gives examples back: it ends
            built, listing = _strict_build(tree, site)
            if listing is None:
                break
            claims, mixed = listing
            failing = [c for c in claims if not c.holds]
            print(f"{len(claims)} claim(s) checked, {len(failing)} failing" + "".join(
                f"\n  {c.page}: {c.short}" for c in failing))
            # A statement joining a run of the tarball with one this tree keeps would compare two
            # GPUs (pages/one_gpu.py refuses it): the tarball's side goes back to this tree's run.
            # A page may read runs of both here (PAGES_MAY_MIX): each is listed, none refused.
            joined = {run for page, what, runs in mixed if what != one_gpu.PAGE for run in runs}
            back = sorted(joined & {t.example.key for t in laid.taken})
            if built.returncode == 0 or not back:
                break
            laid.put_back([catalog.get(key) for key in back], catalog.ROOT, tree)
            print(f"{len(back)} example(s) back to this tree's run, since a statement joins each with a run "
                  f"the tarball cannot replace: {' '.join(back)}; building again", flush=True)
        pages = sorted(page for page, what, _ in mixed if what == one_gpu.PAGE) if listing else []
        if pages:
            print(f"{len(pages)} page(s) read runs of both GPUs (each run's caption names its GPU; a site build "
                  f"refuses this): {', '.join(pages)}")
        if built.returncode == 0 and laid.taken:
            print(f"strict build: passed, {len(laid.taken)} example(s) from {source.name}"
                  + (f" (site in {site})" if keep else ""))
            return 0
        if built.returncode == 0:
            print(f"strict build: passed, but no example of {source.name} is left in it: nothing was checked")
            return 1
        print(f"strict build: FAILED (mkdocs exited {built.returncode}):")
        print("\n".join("  " + line for line in built.stderr.strip().splitlines()[-60:]))
        return 1


def _strict_build(tree, site):
    """`mkdocs build --strict` of `tree` into `site`, after writing its notebooks from its runs,
    pages allowed to read runs of two GPUs (pages/one_gpu.py): the finished process, and the
    claims and the (page, statement, runs) of two GPUs its listing holds (None where the build
    stopped before writing one)."""
    import json
    import os
    import subprocess

    from .mkdocs_glue.ledger import LISTING, MIXED_GPUS
    from .pages.claims import read_listing
    from .pages.one_gpu import PAGES_MAY_MIX

    env = dict(os.environ, NO_MKDOCS_2_WARNING="1", **{PAGES_MAY_MIX: "1"})
    (site / LISTING).unlink(missing_ok=True)
    made = subprocess.run([sys.executable, "-m", "scripts", "notebooks"], cwd=tree, env=env,
                          capture_output=True, text=True)
    if made.returncode != 0:
        return made, None
    built = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet", "--site-dir", str(site)],
                           cwd=tree, env=env, capture_output=True, text=True)
    path = site / LISTING
    if not path.is_file():
        return built, None
    claims, _ = read_listing(path)
    listed = json.loads(path.read_text(encoding="utf-8")).get(MIXED_GPUS, [])
    return built, (claims, [(m["page"], m["statement"], tuple(m["runs"])) for m in listed])


def _copy_tree(root, dest) -> None:
    """The files a clean clone holds (those git tracks, and new ones it does not ignore), and what
    a fresh clone fetches or makes before a build, shared rather than made again: the vendored
    Pyodide, and the render cache (content-addressed: a run's bytes and the code are its key)."""
    import shutil
    import subprocess

    from .pages import pyodide
    from .pages.cache import CACHE_DIR

    try:
        listed = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
                                cwd=root, capture_output=True, check=True).stdout.decode()
    except (OSError, subprocess.CalledProcessError) as err:
        raise OSError(f"cannot list this tree's files with git ls-files ({err})") from None
    for rel in filter(None, listed.split("\0")):
        if (root / rel).is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(root / rel, dest / rel)
    CACHE_DIR.mkdir(parents=True, exist_ok=True)
    for shared in (pyodide.vendored_dir(root), CACHE_DIR):
        if shared.is_dir():
            link = dest / shared.relative_to(root)
            link.parent.mkdir(parents=True, exist_ok=True)
            link.symlink_to(shared, target_is_directory=True)

if __name__ == "__main__":
    run_main(main)
