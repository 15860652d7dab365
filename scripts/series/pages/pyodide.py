"""Pyodide for the in-browser analyzer (docs/guide/analyze-in-browser.md), vendored at build time.

    python -m scripts.series.pages.pyodide [--from PYODIDE.tgz]   # what `make pyodide` runs

Fetches the pinned `pyodide` package from the npm registry (`npm pack`, which downloads the
tarball alone, without the package's Node dependencies), checks it against the pinned integrity
and keeps only the files Pyodide needs to start core Python in a browser (no packages from its
CDN) under .cache/pyodide/<version>/, which git ignores. The site build copies them into the site
(scripts/series/pages/analyzer_page.py); a strict build fails, naming this command, when they are missing.
Standard library only; idempotent: a complete folder is left as it is.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
PYODIDE_VERSION = "314.0.8"  # Python 3.14
# npm's "integrity" of pyodide-314.0.8.tgz (`npm view pyodide@314.0.8 dist.integrity`).
PYODIDE_INTEGRITY = ("sha512-74Wq1kXOC+CCEzAfxuRAO701nAcCMLjf8NrwvWpu8S41dVMXwXmLQ05dYB+F4e46AdnG"
                     "o0oq7YHSVUpHsoarLQ==")
# What `loadPyodide` fetches to start Python with its standard library, and nothing else.
PYODIDE_FILES = ("pyodide.mjs", "pyodide.asm.mjs", "pyodide.asm.wasm", "python_stdlib.zip",
                 "pyodide-lock.json")
FETCH_COMMAND = "make pyodide"  # or: python -m scripts.series.pages.pyodide
_COMPLETE = ".complete"  # written last: the folder holds every file of the pinned package


class VendorError(RuntimeError):
    """Pyodide could not be fetched or unpacked; the message is one line."""


def vendored_dir(root: Path = ROOT) -> Path:
    return root / ".cache" / "pyodide" / PYODIDE_VERSION


def missing(root: Path = ROOT) -> str | None:
    """Why the vendored Pyodide cannot be used, with the command that fixes it; None if it can."""
    folder = vendored_dir(root)
    if (folder / _COMPLETE).is_file() and all((folder / name).is_file() for name in PYODIDE_FILES):
        return None
    return (f"the in-browser analyzer needs Pyodide {PYODIDE_VERSION} in "
            f"{folder.relative_to(root)}/, which is missing or incomplete: run `{FETCH_COMMAND}` "
            "(it fetches the pinned npm package; needs npm)")


def _integrity(data: bytes) -> str:
    return "sha512-" + base64.b64encode(hashlib.sha512(data).digest()).decode()


def npm_pack(dest: Path) -> Path:
    """The pinned tarball, downloaded into `dest` by npm."""
    npm = shutil.which("npm")
    if npm is None:
        raise VendorError(f"npm is not installed: install Node.js (npm), or download "
                          f"https://registry.npmjs.org/pyodide/-/pyodide-{PYODIDE_VERSION}.tgz "
                          f"and run `python -m scripts.series.pages.pyodide --from FILE`")
    done = subprocess.run([npm, "pack", f"pyodide@{PYODIDE_VERSION}", "--pack-destination", str(dest),
                           "--json", "--silent"], capture_output=True, text=True)
    if done.returncode != 0:
        lines = (done.stderr or done.stdout).strip().splitlines()
        raise VendorError(f"npm pack pyodide@{PYODIDE_VERSION} failed: {lines[-1] if lines else done.returncode}")
    try:
        name = json.loads(done.stdout)[0]["filename"]
    except (ValueError, LookupError, TypeError):
        name = f"pyodide-{PYODIDE_VERSION}.tgz"
    return dest / name


def unpack(tarball: Path, root: Path = ROOT) -> Path:
    """Check `tarball` against the pin and put its browser files into vendored_dir(root)."""
    data = tarball.read_bytes()
    if _integrity(data) != PYODIDE_INTEGRITY:
        raise VendorError(f"{tarball.name} is not pyodide {PYODIDE_VERSION} as pinned "
                          f"(integrity {_integrity(data)[:24]}..., expected {PYODIDE_INTEGRITY[:24]}...)")
    folder = vendored_dir(root)
    folder.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=folder.parent) as tmp:
        staging = Path(tmp) / "files"
        staging.mkdir()
        with tarfile.open(tarball) as archive:
            for name in PYODIDE_FILES:
                try:
                    source = archive.extractfile(archive.getmember(f"package/{name}"))
                except KeyError:
                    raise VendorError(f"{tarball.name} has no package/{name}") from None
                if source is None:
                    raise VendorError(f"{tarball.name}: package/{name} is not a file")
                (staging / name).write_bytes(source.read())
        (staging / _COMPLETE).write_text(PYODIDE_INTEGRITY + "\n")
        if folder.exists():
            shutil.rmtree(folder)
        staging.rename(folder)
    return folder


def fetch(root: Path = ROOT, tarball: Path | None = None) -> Path:
    """The vendored folder, fetched and unpacked unless it is already complete."""
    if missing(root) is None:
        return vendored_dir(root)
    if tarball is not None:
        return unpack(tarball, root)
    with tempfile.TemporaryDirectory() as tmp:
        return unpack(npm_pack(Path(tmp)), root)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m scripts.series.pages.pyodide", description=__doc__.split("\n\n")[0])
    parser.add_argument("--from", dest="tarball", type=Path, metavar="PYODIDE.tgz",
                        help=f"unpack this pyodide-{PYODIDE_VERSION}.tgz instead of running npm pack")
    args = parser.parse_args(argv)
    try:
        folder = fetch(tarball=args.tarball)
    except (VendorError, OSError, tarfile.TarError) as err:
        print(f"error: vendor_pyodide: {err}", file=sys.stderr)
        return 2
    print(f"Pyodide {PYODIDE_VERSION}: {folder.relative_to(ROOT)}/")
    return 0


if __name__ == "__main__":
    sys.exit(main())
