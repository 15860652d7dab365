"""Content-addressed disk cache for rendered pieces (timelines, facts, plots).

A key is the hash of the inputs' bytes plus the source of the code that computes the result, so a
rebuild during `mkdocs serve` redoes only what changed, and a change to that code invalidates its
results. Nobody lists that code by hand: a cached computation is a module-level function, and its
key covers the source of its module and of every `scripts.*` module those import, transitively,
wherever the import statement stands (lazy imports inside functions included), found with `ast`.

Results are stored in two forms: text for what a page links to as a file (an SVG), and pickles
for typed values (the analyzer's dataclasses). A pickle is safe here because its key includes the
source of the classes it holds: a changed dataclass changes the key, so an old pickle is never
read back into a new shape; and nothing but this build writes the cache.
"""

from __future__ import annotations

import ast
import hashlib
import pickle
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from ..runs.catalog import ROOT

CACHE_DIR = ROOT / ".cache" / "render"
PACKAGE = Path(__file__).resolve().parents[2]  # scripts/, the package whose code keys the cache
PACKAGE_NAME = "scripts"


# --- what a computation's code depends on -------------------------------------------------------


def module_file(module: str, package_dir: Path = PACKAGE, package: str = PACKAGE_NAME) -> Path | None:
    """The source file of `scripts.x.y` (a module or a subpackage's __init__), or None if the
    name is not a module of the package."""
    if module == package:
        parts: list[str] = []
    elif module.startswith(package + "."):
        parts = module.split(".")[1:]
    else:
        return None
    base = package_dir.joinpath(*parts)
    for candidate in (base.with_suffix(".py") if parts else None, base / "__init__.py"):
        if candidate is not None and candidate.is_file():
            return candidate
    return None


def imported_modules(source: str, module: str, package: str = PACKAGE_NAME, is_package: bool = False) -> set[str]:
    """The package's modules a source imports anywhere in it (top level, in functions, in
    `if TYPE_CHECKING:` blocks alike), as dotted names; `from scripts import x` names x.
    Relative imports resolve against the module's package (itself, for an __init__)."""
    found: set[str] = set()
    here = module.split(".")
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                anchor = here[: len(here) - node.level + (1 if is_package else 0)]
                base = ".".join(anchor + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)  # maybe submodules
    return {name for name in found if name == package or name.startswith(package + ".")}


def module_closure(module: str, package_dir: Path = PACKAGE, package: str = PACKAGE_NAME) -> dict[str, Path]:
    """`module` and every package module it imports, transitively: name -> source file."""
    seen: dict[str, Path] = {}
    todo = [module]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        path = module_file(name, package_dir, package)
        if path is None:
            continue  # `from scripts.tracefacts.facts.analysis import facts` also yields scripts.tracefacts.facts.analysis.facts
        seen[name] = path
        source = path.read_text(encoding="utf-8")
        todo.extend(imported_modules(source, name, package, path.name == "__init__.py") - seen.keys())
    return seen


@lru_cache(maxsize=None)
def _closure_digest(module: str, package_dir: Path, package: str, stamp: tuple) -> str:
    digest = hashlib.sha256()
    for name, path in sorted(module_closure(module, package_dir, package).items()):
        digest.update(name.encode() + b"\0" + path.read_bytes().replace(b"\r\n", b"\n") + b"\0")
    return digest.hexdigest()


def code_digest(module: str, package_dir: Path = PACKAGE, package: str = PACKAGE_NAME) -> str:
    """Hash of the source of `module` and of every package module it imports, transitively.
    Memoized per state of the package's files, so a build computes it once per module."""
    stamp = tuple(sorted((p.as_posix(), p.stat().st_mtime_ns, p.stat().st_size)
                         for p in package_dir.rglob("*.py")))
    return _closure_digest(module, package_dir, package, stamp)


# --- inputs -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class FileInput:
    """A file a computation reads: keyed by its bytes, handed to the computation as what `load`
    makes of it (a parsed trace, say), so a trace already in memory is not parsed again."""

    path: Path
    load: Callable[[], object]
    key: str = ""  # what else the loaded value depends on, besides the file (a prompt length)

    def __repr__(self) -> str:  # never part of a key: see _input_key
        return f"FileInput({self.path.name})"


def file_digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _input_key(value) -> str:
    if isinstance(value, FileInput):
        return "file:" + file_digest(value.path) + ":" + value.key
    if isinstance(value, Path):
        return "file:" + file_digest(value)
    if isinstance(value, (list, tuple)):
        return "(" + ",".join(map(_input_key, value)) + ")"
    if value is None or isinstance(value, (bool, int, float, str)):
        return repr(value)
    if hasattr(value, "__dataclass_fields__"):  # a Window: its repr lists its fields
        return repr(value)
    raise TypeError(f"cache input of type {type(value).__name__} has no stable key: pass a "
                    "Path, a FileInput, a number, a string, a tuple or a dataclass")


def _argument(value):
    if isinstance(value, FileInput):
        return value.load()
    if isinstance(value, (list, tuple)) and any(isinstance(v, FileInput) for v in value):
        return type(value)(_argument(v) for v in value)
    return value


def key_of(kind: str, compute: Callable, inputs: tuple) -> str:
    """The cache key of compute(*inputs): its name, its code's closure, its inputs."""
    if "<locals>" in compute.__qualname__ or not compute.__module__.startswith(PACKAGE_NAME + "."):
        raise ValueError(f"cached computations are module-level functions of the {PACKAGE_NAME} "
                         f"package (their code is then part of the key); got {compute.__qualname__}")
    parts = [kind, compute.__module__, compute.__qualname__, code_digest(compute.__module__),
             *map(_input_key, inputs)]
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:32]


def _store(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(path.suffix + ".partial")
    partial.write_bytes(data)
    partial.replace(path)


def cached_file(kind: str, compute: Callable[..., str], *inputs, suffix: str = ".txt") -> Path:
    """The path of a file holding compute(*inputs)'s text (or bytes), computing it if needed."""
    path = CACHE_DIR / kind / f"{key_of(kind, compute, inputs)}{suffix}"
    if not path.exists():
        data = compute(*map(_argument, inputs))
        _store(path, data if isinstance(data, bytes) else data.encode("utf-8"))
    return path


def cached(kind: str, compute: Callable, *inputs):
    """compute(*inputs), typed as it returned it, from the cache when its key is there."""
    path = CACHE_DIR / kind / f"{key_of(kind, compute, inputs)}.pickle"
    if path.exists():
        try:
            return pickle.loads(path.read_bytes())
        except Exception:  # a cache file cut short by a crash: compute it again
            path.unlink(missing_ok=True)
    value = compute(*map(_argument, inputs))
    _store(path, pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL))
    return value
