"""Content-addressed disk cache for rendered pieces (timelines, facts).

A key is the hash of the inputs' bytes plus the source of the code that renders them, so a rebuild
during `mkdocs serve` redoes only what changed, and a change to a renderer invalidates its results.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path

from scripts.catalog import ROOT

CACHE_DIR = ROOT / ".cache" / "render"
PACKAGE = Path(__file__).resolve().parent


def code_digest(*modules: str) -> str:
    """Hash of the named modules' source files in this package."""
    digest = hashlib.sha256()
    for module in sorted(modules):
        digest.update((PACKAGE / f"{module}.py").read_bytes())
    return digest.hexdigest()


def file_digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def cached_text(kind: str, parts: list[str], compute: Callable[[], str], suffix: str = ".txt") -> Path:
    """The path of a file holding compute()'s text for these key parts, computing it if needed."""
    key = hashlib.sha256("\0".join([kind, *parts]).encode()).hexdigest()[:32]
    path = CACHE_DIR / kind / f"{key}{suffix}"
    if not path.exists():
        text = compute()
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_suffix(path.suffix + ".partial")
        partial.write_text(text)
        partial.replace(path)
    return path
