"""Companion notebooks, one per part: generated from the catalog and the frozen GPU runs.

Each example is a code cell `!{sys.executable} snippets/<snippet>.py <args> --trace_dir traces_nb/<snippet>`:
the same snippet and arguments the site shows, never a copy of its code. Its stored output is what
the snippet printed on the GPU: the frozen table, then the line that names the files it wrote (or,
for an example frozen as unavailable, the reason it printed instead). Nothing here runs anything,
and the site's build never executes a notebook.

The same inputs give the same bytes (sorted keys, ids from the content, no timestamps), so a
committed notebook is current exactly when regenerating it changes nothing: `python -m scripts
notebooks` writes them, `--check` lists the stale ones, and the strict build fails on a stale one.

A part gets its notebook from one entry in NOTEBOOKS; the site's nav and the Notebooks page list
them from there.

Standard library only, like scripts/series/runs/freeze.py: `make refresh` regenerates them on a bare GPU image.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from ..runs import catalog, freeze
from ..runs.catalog import ROOT, Example
from .parts import NOTEBOOKS, NOTEBOOKS_DIR, Notebook, Run  # noqa: F401 (re-exported)

TRACE_DIR = "traces_nb"  # where a reader's runs write, beside the repository's frozen traces/
SITE_URL_LINE = "SITE_URL = None"  # the site's downloadable copy sets it (published_copy)
SITE_LINK = "](../../"  # a markdown link from a notebook's page to another page of the site
REGENERATE = "make notebooks"
RUN_PREFIX = "!{sys.executable}"  # IPython runs the kernel's own interpreter on the snippet


class NotebookError(Exception):
    """A notebook cannot be generated from what is committed (an example has no frozen run)."""




def get(name_or_slug: str) -> Notebook:
    for notebook in NOTEBOOKS:
        if name_or_slug in (notebook.name, notebook.slug):
            return notebook
    raise KeyError(f"no notebook {name_or_slug!r} in scripts/series/notebooks/write.py")


# --- cells --------------------------------------------------------------------------------------

SETUP = '''\
# Setup: run the snippets from a checkout of the repository, or download them from the site.
import os
import sys  # the cells below run each snippet with {{sys.executable}}: this kernel's Python
import urllib.request
from pathlib import Path

SITE_URL = None  # the copy you download from the site sets this to the site's address
SNIPPETS = {snippets}


def find_checkout(start):
    """The folder, here or above, whose snippets/ holds the snippets this notebook runs."""
    for folder in (start, *start.parents):
        if all((folder / "snippets" / name).is_file() for name in SNIPPETS):
            return folder
    return None


root = find_checkout(Path.cwd())
if root is None and SITE_URL is None:
    raise RuntimeError("no snippets/ here or above: open this notebook inside a checkout of the "
                       "repository, or download it again from its page on the site (that copy "
                       "fetches the snippets itself)")
if root is None:
    root = Path.cwd()
    (root / "snippets").mkdir(exist_ok=True)
    for name in SNIPPETS:
        urllib.request.urlretrieve(SITE_URL + "snippets/" + name, root / "snippets" / name)
os.chdir(root)  # the cells below name the snippets and their outputs relative to it
print("snippets from", root / "snippets")
'''


def _link(site_path: str) -> str:
    """A markdown link target from a notebook's page to another page of the site (made absolute in
    the downloadable copy, see published_copy)."""
    return SITE_LINK[2:] + site_path


def _header(notebook: Notebook) -> str:
    return "\n".join([
        f"# {notebook.title}",
        "",
        notebook.intro,
        "",
        f"Companion to [{notebook.post_label}]({_link(notebook.post_url)}), which reads each of these "
        "profiles in detail. Each code cell runs a snippet of the repository with the arguments the "
        f"post used, and writes its trace (`.json`) and table (`.txt`) under `{TRACE_DIR}/`.",
        "",
        f"The stored outputs are what the snippets printed on our {_gpus(notebook)} for the post, each run in a "
        "process of its own: the profiler table and the line naming the files written (warnings "
        "and other lines are not kept). The notebook's metadata records the GPU, driver, CUDA, "
        "torch and date of that run. Your numbers will differ; the rows and the shape of the table "
        "should not.",
        "",
        "Each cell runs its snippet in a fresh Python process (`!{sys.executable} snippets/…`), "
        "as the site's refresh does: a cold start is cold, a compiled run compiles from scratch, "
        "and no cell inherits another's state.",
        "",
        "To run it you need PyTorch and a CUDA GPU (on Colab: *Runtime → Change runtime type* → a "
        "GPU). Without one, add `--device cpu` to a cell to see the CPU half of the story.",
    ])


def _gpus(notebook: Notebook) -> str:
    """The GPU(s) its frozen runs ran on, from their metadata ("GPU" where none is recorded)."""
    names = sorted({gpu for e in notebook.examples if (gpu := _example_meta(e).environment.gpu)})
    return " and ".join(names) or "GPU"


def _closing(notebook: Notebook) -> str:
    first = notebook.examples[0]
    trace = f"{TRACE_DIR}/{first.snippet}/{first.tag}.json"
    return "\n".join([
        "## Open a trace, analyze it",
        "",
        f"Each run above wrote a trace, for example `{trace}`. To see its timeline, go to "
        "<https://ui.perfetto.dev>, choose **Open trace file** and pick the file: the trace stays in "
        "your browser.",
        "",
        "In a checkout of the repository, the analyzer says what the trace shows (GPU busy time, its "
        "gaps, launch delays, the top kernels and a verdict):",
        "",
        "```",
        f"python scripts/analyze.py {trace}",
        "```",
        "",
        f"(in a notebook cell, `!python scripts/analyze.py {trace}`). "
        f"[Analyze your own trace]({_link('guide/analyze-your-trace/')}) explains what it prints.",
    ])


def _run_source(example: Example) -> str:
    # A fresh process per cell, as the refresh runs them: `%run` would share this kernel's state
    # (modules loaded, compile caches), so a "cold" example would no longer start cold.
    return " ".join([RUN_PREFIX, f"snippets/{example.snippet}.py", *example.args,
                     "--trace_dir", f"{TRACE_DIR}/{example.snippet}"])


def _outputs(example: Example) -> list[dict]:
    """What the snippet printed on the GPU, rebuilt from its frozen artifacts: the table and the
    snippet's last line (see the end of each snippet's main), or its refusal (snippets/04_attention.py)."""
    written = f"{TRACE_DIR}/{example.snippet}/{example.tag}"
    if example.unavailable_path.exists():
        reason = example.unavailable_path.read_text(encoding="utf-8").strip()
        return [_stream("stderr", f"BACKEND UNAVAILABLE: {reason}\n"),
                _stream("stdout", f"wrote {written}.unavailable\n")]
    table = example.table_path.read_text(encoding="utf-8")  # the snippet wrote `table + "\n"`
    return [_stream("stdout", f"{table}wrote {written}.json and .txt\n")]


def _stream(name: str, text: str) -> dict:
    return {"name": name, "output_type": "stream", "text": text}


def _markdown(text: str) -> dict:
    return {"cell_type": "markdown", "metadata": {}, "source": text}


def _code(source: str, outputs: list[dict] | None = None, metadata: dict | None = None) -> dict:
    return {"cell_type": "code", "execution_count": None, "metadata": metadata or {},
            "outputs": outputs or [], "source": source}


def _example_meta(example: Example) -> freeze.Meta:
    if freeze.status(example).state == "missing":
        raise NotebookError(f"{example.key} has no frozen run; run "
                            f"`{freeze.REFRESH_HINT.format(key=example.key)}` on a GPU machine")
    try:
        return freeze.read_meta(example)
    except freeze.MetaError as err:
        raise NotebookError(str(err)) from None


def _runs_metadata(metas: list[freeze.Meta]) -> list[dict]:
    """The GPU runs the outputs come from: one entry per environment and day (usually one). The
    environment is the one scripts/series/runs/freeze.py records (GPU, driver, CUDA, torch, Python, and any
    package it adds): versions only, nothing that names the machine."""
    runs = {}
    for meta in metas:
        entry = meta.environment.to_json()
        entry["date"] = meta.day
        runs[json.dumps(entry, sort_keys=True)] = entry
    return [runs[key] for key in sorted(runs)]


def build(notebook: Notebook) -> dict:
    """The notebook as a JSON-ready dict (nbformat 4.5)."""
    cells = [_markdown(_header(notebook)),
             _code(SETUP.format(snippets=json.dumps(notebook.snippets)))]
    metas = []
    for cell in notebook.cells:
        if isinstance(cell, str):
            cells.append(_markdown(cell))
            continue
        example = catalog.get(cell.key)
        meta = _example_meta(example)
        metas.append(meta)
        cells.append(_markdown(cell.look_for))
        cells.append(_code(_run_source(example), _outputs(example),
                           {"frozen": {"example": example.key, "inputs_hash": meta.inputs_hash}}))
    cells.append(_markdown(_closing(notebook)))
    _number(cells)
    return {
        "cells": cells,
        "metadata": {
            "accelerator": "GPU",  # Colab opens it on a GPU runtime
            "frozen_runs": _runs_metadata(metas),
            "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
            "language_info": {"name": "python"},
            "post": notebook.post_url,
        },
        "nbformat": 4,
        "nbformat_minor": 5,
    }


def _number(cells: list[dict]) -> None:
    """Cell ids from the content (nbformat 4.5 requires them): the same cell keeps its id."""
    seen: set[str] = set()
    for cell in cells:
        digest = hashlib.sha256(f"{cell['cell_type']}\0{cell['source']}".encode()).hexdigest()
        cell_id, n = digest[:12], 1
        while cell_id in seen:
            n += 1
            cell_id = f"{digest[:12]}-{n}"
        seen.add(cell_id)
        cell["id"] = cell_id


def dumps(nb: dict) -> bytes:
    """nbformat's own on-disk form: text split into lines, sorted keys, indent 1, final newline."""
    nb = json.loads(json.dumps(nb))  # a deep copy
    for cell in nb["cells"]:
        cell["source"] = cell["source"].splitlines(True)
        for output in cell.get("outputs", []):
            if output["output_type"] == "stream":
                output["text"] = output["text"].splitlines(True)
    text = json.dumps(nb, sort_keys=True, indent=1, separators=(",", ": "), ensure_ascii=False)
    return (text + "\n").encode("utf-8")


def render(notebook: Notebook) -> bytes:
    return dumps(build(notebook))


# --- writing, checking, publishing --------------------------------------------------------------


def write_all(notebooks=NOTEBOOKS) -> tuple[list[Path], list[str]]:
    """Regenerate the notebooks: the files whose bytes changed, and why any could not be made
    (those are left as they are)."""
    changed, errors = [], []
    for notebook in notebooks:
        try:
            data = render(notebook)
        except NotebookError as err:
            errors.append(f"{notebook.path.relative_to(ROOT).as_posix()} not written: {err}")
            continue
        if not notebook.path.exists() or notebook.path.read_bytes() != data:
            notebook.path.parent.mkdir(parents=True, exist_ok=True)
            notebook.path.write_bytes(data)
            changed.append(notebook.path)
    return changed, errors


@dataclass(frozen=True)
class Stale:
    notebook: Notebook
    reason: str

    def __str__(self) -> str:
        return (f"{self.notebook.path.relative_to(ROOT).as_posix()} is stale ({self.reason}): "
                f"run `{REGENERATE}` and commit it")


def check(notebooks=NOTEBOOKS) -> list[Stale]:
    """The notebooks whose committed bytes differ from what the generator makes now."""
    stale = []
    for notebook in notebooks:
        try:
            data = render(notebook)
        except NotebookError as err:
            stale.append(Stale(notebook, f"cannot be generated: {err}"))
            continue
        if not notebook.path.exists():
            stale.append(Stale(notebook, "missing"))
        elif notebook.path.read_bytes() != data:
            stale.append(Stale(notebook, _difference(notebook.path.read_bytes(), data)))
    return stale


def _difference(committed: bytes, current: bytes) -> str:
    """Which cell changed, in a few words."""
    try:
        old, new = json.loads(committed)["cells"], json.loads(current)["cells"]
    except (ValueError, KeyError):
        return "not a notebook the generator wrote"
    for index, (a, b) in enumerate(zip(old, new)):
        if a != b:
            example = (b.get("metadata", {}).get("frozen") or a.get("metadata", {}).get("frozen") or {}).get("example")
            if example and a.get("source") != b.get("source"):
                return f"the command of {example} changed"
            if example:
                return f"the output of {example} changed"
            return f"cell {index + 1} changed"
    if len(old) != len(new):
        return f"it has {len(old)} cells, the generator makes {len(new)}"
    return "its metadata changed"


def stale_report(stale: list[Stale]) -> str:
    return "\n".join(map(str, stale))


def published_copy(data: bytes, site_url: str) -> bytes:
    """The downloadable copy of a committed notebook: SITE_URL set to the site's address, so that
    it can fetch the snippets, and links to the site's pages made absolute."""
    if not site_url:
        return data
    nb = json.loads(data)
    base = site_url.rstrip("/") + "/"
    for cell in nb["cells"]:
        source = "".join(cell["source"])
        if cell["cell_type"] == "code" and SITE_URL_LINE in source:
            source = source.replace(SITE_URL_LINE, f"SITE_URL = {json.dumps(base)}", 1)
        elif cell["cell_type"] == "markdown":
            source = source.replace(SITE_LINK, "](" + base)
        cell["source"] = source
    for cell in nb["cells"]:
        for output in cell.get("outputs", []):
            output["text"] = "".join(output["text"])
    return dumps(nb)


def published_snippets() -> dict[str, Path]:
    """The files a downloaded notebook fetches: every snippet, under snippets/ of the site."""
    return {f"snippets/{path.name}": path for path in sorted(catalog.SNIPPETS.glob("*.py"))}


def nav() -> list[dict[str, str]]:
    """The notebooks' entries for mkdocs' nav."""
    return [{notebook.title: notebook.docs_path} for notebook in NOTEBOOKS]
