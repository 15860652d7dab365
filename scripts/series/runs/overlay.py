"""Another machine's refresh laid over a copy of the repository, for `python -m scripts rebuild-check`.

A refresh on another GPU (a tarball of its `traces/`, as ../shared/rebuilds/ holds) is used for
exactly the examples whose inputs are what this tree would run now: the run's sealed metadata
records an `inputs_hash` equal to the one scripts/series/runs/freeze.py computes for the current
snippet and arguments, and every output it names is there with the digest it records. Every
other example keeps this tree's run, so the build finds nothing stale, and the report says why
each was kept.

Standard library only, like the rest of runs/.
"""

from __future__ import annotations

import hashlib
import shutil
import tarfile
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from . import catalog
from .catalog import Example
from .freeze import inputs_of
from .meta import Meta, MetaError, inputs_hash, load_meta

# The largest tarball member read: the committed artifacts are a few MB each (extras.MAX_FROZEN_BYTES).
MAX_MEMBER_BYTES = 64 << 20


class OverlayError(ValueError):
    """A tarball that cannot be used at all; str() is one line."""


@dataclass(frozen=True)
class Taken:
    example: Example
    meta: Meta  # the tarball's, as read back from where it was laid


@dataclass(frozen=True)
class Kept:
    example: Example
    why: str  # why this tree's run stays: what differs in the tarball's


@dataclass
class Overlay:
    taken: list[Taken] = field(default_factory=list)
    kept: list[Kept] = field(default_factory=list)

    def put_back(self, examples: list[Example], root: Path, tree: Path) -> None:
        """Give these examples this repository's runs (from `root`) again in `tree`."""
        for example in examples:
            _replace(example, example.folder, tree / example.folder.relative_to(root),
                     [n for n in _artifact_names(example) if (example.folder / n).is_file()])
        again = {e.key for e in examples}
        self.kept += [Kept(t.example, "a statement joins it with a run this tree keeps (they would compare "
                                      "two GPUs)") for t in self.taken if t.example.key in again]
        self.taken = [t for t in self.taken if t.example.key not in again]

    def lines(self, source: str) -> list[str]:
        """What came from where, for the report."""
        gpus = sorted({t.meta.environment.gpu or "no GPU" for t in self.taken})
        lines = [f"{len(self.taken)} example(s) from {source} (run on {', '.join(gpus) or 'nothing'}):"]
        lines += [f"  {t.example.key}" for t in self.taken]
        lines.append(f"{len(self.kept)} example(s) keep this tree's run:")
        lines += [f"  {k.example.key}: {k.why}" for k in self.kept]
        return lines


def _artifact_names(example: Example) -> set[str]:
    """Every file an example's run may leave in its folder, the metadata included."""
    return {p.name for p in (*example.trace_paths, *example.table_paths, example.unavailable_path,
                             example.samples_path, *example.extra_paths.values(), example.meta_path)}


def _unpack(tarball: Path, into: Path) -> Path:
    """The tarball's traces/ under `into`: only regular files under traces/, no link, no path
    outside it (tarfile's "data" filter refuses those too). The folder that holds its traces/."""
    try:
        with tarfile.open(tarball, "r:*") as tar:
            members = []
            for member in tar:
                parts = Path(member.name).parts
                if not parts or parts[0] != "traces" or ".." in parts:
                    continue
                if member.isfile() and member.size <= MAX_MEMBER_BYTES:
                    members.append(member)
            if not members:
                raise OverlayError(f"{tarball} holds no traces/ folder of a refresh")
            tar.extractall(into, members=members, filter="data")
    except tarfile.ReadError:
        raise OverlayError(f"{tarball}: cannot read it as a tarball (not a tar file, plain or compressed)") from None
    except (OSError, tarfile.TarError) as err:
        why = getattr(err, "strerror", None) or str(err).strip().splitlines()[0]
        raise OverlayError(f"{tarball}: cannot read it as a tarball ({why})") from None
    return into


def _why_not(example: Example, meta: Meta, folder: Path) -> str:
    """Why the tarball's run of `example` cannot stand for this tree's, or '' where it can."""
    now = inputs_of(example)
    if meta.example != example.key:
        return f"its metadata records the run of {meta.example!r}"
    if meta.inputs_hash != inputs_hash(now):
        recorded = meta.inputs
        if recorded.snippet_sha256 != now["snippet_sha256"]:
            return f"{now['snippet']} changed since that run"
        if list(recorded.args) != now["args"]:
            return f"its arguments changed from '{' '.join(recorded.args)}' to '{' '.join(now['args'])}'"
        return "its inputs changed since that run (repeats or the artifact format)"
    allowed = _artifact_names(example)
    for name, digest in meta.outputs.items():
        if name not in allowed:
            return f"its metadata names {name!r}, not an artifact of the example"
        path = folder / name
        if not path.is_file():
            return f"the tarball lacks its {name}"
        if hashlib.sha256(path.read_bytes()).hexdigest() != digest:
            return f"its {name} is not the file that run wrote"
    return ""


def lay(tarball: Path, root: Path, examples: list[Example]) -> Overlay:
    """Lay the tarball's runs over the traces/ of `root` (a copy of this repository) for the
    examples whose inputs are unchanged (see the module's docstring); return what came from where."""
    done = Overlay()
    with tempfile.TemporaryDirectory(prefix="overlay-") as tmp:
        staged = _unpack(Path(tarball), Path(tmp))
        for example in examples:
            folder = staged / example.folder.relative_to(catalog.ROOT)
            meta_path = folder / example.meta_path.name
            if not meta_path.is_file():
                done.kept.append(Kept(example, "the tarball has no run of it" + (
                    "" if example.meta_path.is_file() else ", nor has this tree")))
                continue
            try:
                meta = load_meta(meta_path)
            except MetaError as err:
                done.kept.append(Kept(example, f"its metadata cannot be used ({err.problem})"))
                continue
            why = _why_not(example, meta, folder)
            if why:
                done.kept.append(Kept(example, why))
                continue
            target = root / example.folder.relative_to(catalog.ROOT)
            _replace(example, folder, target, [*meta.outputs, meta_path.name])
            done.taken.append(Taken(example, load_meta(target / meta_path.name)))
    return done


def _replace(example: Example, source: Path, target: Path, names: list[str]) -> None:
    """The example's run in `target` replaced by the files `names` of `source`: every artifact of
    the run there goes first, whichever kind it was (a trace, or why it could not run)."""
    for name in _artifact_names(example):
        (target / name).unlink(missing_ok=True)
    target.mkdir(parents=True, exist_ok=True)
    for name in names:
        shutil.copyfile(source / name, target / name)
