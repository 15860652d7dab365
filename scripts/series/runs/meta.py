"""The metadata of a frozen run, `traces/<snippet>/<tag>.meta.json`: its typed form, its one reader
and its seal.

The refresh writes it; `check`, the build, the pages and the notebooks read it only through
`read_meta` (or `load_meta` for a path), which checks every field's type and answers anything it
cannot use (missing, not JSON, another shape, a wrong type, an edit) with a `MetaError`: one line
naming the file and the command to run. An edit is caught by the seal, `meta_sha256`: the hash of
the canonical JSON of all the other fields, so the GPU, the command or the date recorded cannot
change without the change showing. (A seal, not a signature: it catches an edit, not a forger.)

Standard library only: the GPU refresh imports it.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from . import catalog

REFRESH_HINT = "make refresh ONLY={key}"
MAX_BYTES = 1 << 20  # a metadata file is a few hundred bytes; anything this large is not one
DATE_FORMAT = "%Y-%m-%dT%H:%M:%SZ"
_SHA256 = re.compile(r"[0-9a-f]{64}")
# An artifact beside the metadata: no directory part, no dot file, no control character. Other
# characters are allowed: names come from the catalog's tags, and escaping is the pages' job.
_FILE_NAME = re.compile(r"[^./\\\x00-\x1f\x7f][^/\\\x00-\x1f\x7f]*")


class MetaError(ValueError):
    """A metadata file that cannot be used. str() is one line: the file, what is wrong, what to run."""

    def __init__(self, path: Path, problem: str):
        self.path, self.problem = path, problem
        super().__init__(f"{shown(path)} {problem}; run `{REFRESH_HINT.format(key=key_of(path))}` "
                         "on a GPU machine, or restore the file from git")


def shown(path: Path) -> str:
    """A path as the messages name it: relative to the repository (or to the traces' parent)."""
    for base in (catalog.ROOT, catalog.TRACES.parent):
        try:
            return path.relative_to(base).as_posix()
        except ValueError:
            continue
    return path.as_posix()


def key_of(path: Path) -> str:
    """The example a metadata file belongs to, from where it lies: traces/<snippet>/<tag>.meta.json."""
    return f"{path.parent.name}/{path.name.removesuffix('.meta.json')}"


@dataclass(frozen=True)
class Inputs:
    """Everything that determines the result; a change makes the run stale."""

    snippet: str  # repository-relative, e.g. snippets/01_matmul_add.py
    snippet_sha256: str
    args: tuple[str, ...]
    freeze_format: int
    repeats: int = 1  # runs per refresh; recorded only when more than one
    # Where the repeats ran: "processes" (fresh ones), or "one process" (a warm example's, in the
    # process of its first run); recorded only when not "processes".
    repeats_in: str = "processes"

    def to_json(self) -> dict:
        inputs = {"snippet": self.snippet, "snippet_sha256": self.snippet_sha256, "args": list(self.args),
                  "freeze_format": self.freeze_format}
        if self.repeats != 1:
            inputs["repeats"] = self.repeats
        if self.repeats_in != "processes":
            inputs["repeats_in"] = self.repeats_in
        return inputs


@dataclass(frozen=True)
class Environment:
    """Versions of what ran the snippet, as scripts/series/runs/freeze.py probes them (nothing names the machine)."""

    torch: str
    cuda: str | None = None
    gpu: str | None = None
    python: str | None = None
    driver: str | None = None
    packages: dict[str, str | None] | None = None  # only those the snippet's header asks for

    def to_json(self) -> dict:
        env = {"torch": self.torch, "cuda": self.cuda, "gpu": self.gpu, "python": self.python, "driver": self.driver}
        if self.packages is not None:
            env["packages"] = dict(self.packages)
        return env


@dataclass(frozen=True)
class Meta:
    path: Path
    example: str  # its key, e.g. 01_matmul_add/64_bf16_cold_eager
    command: str
    inputs: Inputs
    inputs_hash: str
    outputs: dict[str, str]  # artifact file name -> sha256 of its bytes
    environment: Environment
    date: str  # UTC, DATE_FORMAT
    wall_time_s: float
    meta_sha256: str
    runner: str | None = None  # "forked" or "isolated" (scripts/series/runs/runner.py); None before the runner

    @property
    def day(self) -> str:
        return self.date[:10]

    @property
    def when(self) -> datetime:
        return datetime.strptime(self.date, DATE_FORMAT).replace(tzinfo=timezone.utc)


def canonical_digest(fields: dict) -> str:
    """The hash of the canonical JSON of the fields other than the seal itself."""
    body = {k: v for k, v in fields.items() if k != "meta_sha256"}
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(text.encode()).hexdigest()


def seal(fields: dict) -> dict:
    """The fields with their seal last (a seal already there is recomputed)."""
    body = {k: v for k, v in fields.items() if k != "meta_sha256"}
    return {**body, "meta_sha256": canonical_digest(body)}


def inputs_hash(inputs: dict) -> str:
    return hashlib.sha256(json.dumps(inputs, sort_keys=True).encode()).hexdigest()


def dumps(fields: dict) -> bytes:
    """The file's bytes, as the refresh writes them."""
    return (json.dumps(fields, indent=2) + "\n").encode()


def read_meta(example: catalog.Example) -> Meta:
    """The example's metadata, checked; MetaError if it is missing or cannot be used."""
    meta = load_meta(example.meta_path)
    if meta.example != example.key:
        raise MetaError(example.meta_path, f"records the run of {meta.example!r}, not of {example.key}")
    artifacts = {p.name for p in (*example.trace_paths, *example.table_paths, example.unavailable_path,
                                  example.samples_path, *example.extra_paths.values())}
    for name in meta.outputs:
        if name not in artifacts:
            raise MetaError(example.meta_path, f"names {name!r}, not an artifact of {example.key}")
    return meta


def load_meta(path: Path) -> Meta:
    try:
        if path.stat().st_size > MAX_BYTES:
            raise MetaError(path, f"is larger than {MAX_BYTES >> 20} MB, not a metadata file")
        text = path.read_bytes().decode("utf-8")
    except FileNotFoundError:
        raise MetaError(path, "is missing") from None
    except UnicodeDecodeError:
        raise MetaError(path, "is not UTF-8 text") from None
    except OSError as err:
        raise MetaError(path, f"cannot be read ({err.strerror or err})") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as err:
        raise MetaError(path, f"is not valid JSON ({err.msg}: line {err.lineno}, column {err.colno})") from None
    except RecursionError:
        raise MetaError(path, "is not valid JSON (nested too deeply)") from None
    except ValueError as err:  # an integer past Python's digit limit
        raise MetaError(path, f"is not usable JSON ({str(err).split(':')[0]})") from None
    return parse(data, path)


def parse(data, path: Path) -> Meta:
    """The typed metadata, every field checked, then the seal."""
    top = _Fields(data, path, "")
    inputs = top.object("inputs")
    env = top.object("environment")
    packages = env.object("packages", optional=True)
    outputs = top.object("outputs")
    meta = Meta(
        path=path,
        example=top.string("example"),
        command=top.string("command"),
        inputs=Inputs(
            snippet=inputs.string("snippet"),
            snippet_sha256=inputs.sha256("snippet_sha256"),
            args=inputs.strings("args"),
            freeze_format=inputs.integer("freeze_format"),
            repeats=inputs.integer("repeats", optional=True) or 1,
            repeats_in=inputs.string("repeats_in", optional=True) or "processes",
        ),
        inputs_hash=top.sha256("inputs_hash"),
        outputs={name: outputs.sha256(name) for name in outputs.names(at_least_one=True)},
        environment=Environment(
            torch=env.string("torch"),
            cuda=env.string("cuda", optional=True),
            gpu=env.string("gpu", optional=True),
            python=env.string("python", optional=True),
            driver=env.string("driver", optional=True),
            packages=None if packages is None else
            {name: packages.string(name, optional=True) for name in packages.names()},
        ),
        date=top.date("date"),
        wall_time_s=top.number("wall_time_s"),
        runner=top.string("runner", optional=True),
        meta_sha256=top.seal(),  # last: a wrong field is named before a missing seal
    )
    for name in meta.outputs:
        if not _FILE_NAME.fullmatch(name):
            raise MetaError(path, f"names an output {name!r} that is not a file beside it")
    if canonical_digest(data) != meta.meta_sha256:
        raise MetaError(path, "was edited after the run (its fields no longer match its meta_sha256)")
    if inputs_hash(meta.inputs.to_json()) != meta.inputs_hash:
        raise MetaError(path, "records an inputs_hash that is not the hash of its inputs")
    return meta


def _kind(value) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return "a list" if isinstance(value, list) else "an object"


class _Fields:
    """Reads the fields of one JSON object, each with a check and a message naming it."""

    def __init__(self, data, path: Path, where: str):
        self.path, self.where = path, where
        if not isinstance(data, dict):
            what = f"field '{where.rstrip('.')}' is" if where else "holds"
            raise MetaError(path, f"{what} {_kind(data)}, not an object")
        self.data = data

    def _get(self, name: str, optional: bool, accept, expected: str):
        if name not in self.data:
            if optional:
                return None
            raise MetaError(self.path, f"has no field '{self.where}{name}'")
        value = self.data[name]
        if (value is None and optional) or accept(value):
            return value
        raise MetaError(self.path, f"has field '{self.where}{name}' as {_kind(value)}, not {expected}")

    def object(self, name: str, optional: bool = False) -> _Fields | None:
        value = self._get(name, optional, lambda v: isinstance(v, dict), "an object")
        return None if value is None else _Fields(value, self.path, f"{self.where}{name}.")

    def names(self, at_least_one: bool = False) -> list[str]:
        if at_least_one and not self.data:
            raise MetaError(self.path, f"has field '{self.where.rstrip('.')}' empty")
        return list(self.data)

    def string(self, name: str, optional: bool = False):
        return self._get(name, optional, lambda v: isinstance(v, str), "a string")

    def sha256(self, name: str) -> str:
        return self._get(name, False, lambda v: isinstance(v, str) and bool(_SHA256.fullmatch(v)),
                         "a sha256 (64 hex digits)")

    def strings(self, name: str) -> tuple[str, ...]:
        return tuple(self._get(name, False, lambda v: isinstance(v, list) and all(isinstance(s, str) for s in v),
                               "a list of strings"))

    def integer(self, name: str, optional: bool = False) -> int | None:
        return self._get(name, optional, lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= 0,
                         "a whole number")

    def number(self, name: str) -> float:
        return self._get(name, False, lambda v: isinstance(v, (int, float)) and not isinstance(v, bool)
                         and math.isfinite(v) and v >= 0, "a number of seconds (finite, not negative)")

    def seal(self) -> str:
        if "meta_sha256" not in self.data:
            raise MetaError(self.path, "is not sealed (it has no meta_sha256)")
        return self.sha256("meta_sha256")

    def date(self, name: str) -> str:
        return self._get(name, False, lambda v: isinstance(v, str) and _is_date(v),
                         "a UTC date like 2026-01-31T12:00:00Z")


def _is_date(text: str) -> bool:
    try:
        datetime.strptime(text, DATE_FORMAT)
    except ValueError:
        return False
    return len(text) == 20
