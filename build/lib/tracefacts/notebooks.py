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

Standard library only, like scripts/freeze.py: `make refresh` regenerates them on a bare GPU image.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from . import catalog, freeze
from .catalog import ROOT, Example

NOTEBOOKS_DIR = ROOT / "docs" / "notebooks"
TRACE_DIR = "traces_nb"  # where a reader's runs write, beside the repository's frozen traces/
SITE_URL_LINE = "SITE_URL = None"  # the site's downloadable copy sets it (published_copy)
SITE_LINK = "](../../"  # a markdown link from a notebook's page to another page of the site
REGENERATE = "make notebooks"
RUN_PREFIX = "!{sys.executable}"  # IPython runs the kernel's own interpreter on the snippet


@dataclass(frozen=True)
class Run:
    """An example of scripts/catalog.py, run by its snippet, and what to look for in its output."""

    key: str
    look_for: str  # one or two sentences of markdown; no numbers: those live in the outputs


@dataclass(frozen=True)
class Notebook:
    part: int
    slug: str  # the post's slug: the post is blog/<slug>/, the notebook part-<part>-<slug>.ipynb
    title: str
    intro: str  # markdown, after the title
    cells: tuple[str | Run, ...]  # markdown text, or an example to run

    @property
    def name(self) -> str:
        return f"part-{self.part}-{self.slug}"

    @property
    def path(self) -> Path:
        return NOTEBOOKS_DIR / f"{self.name}.ipynb"

    @property
    def docs_path(self) -> str:
        """The notebook as mkdocs names it, relative to docs/."""
        return f"notebooks/{self.name}.ipynb"

    @property
    def page_url(self) -> str:
        """Site-relative URL of the rendered notebook."""
        return f"notebooks/{self.name}/"

    @property
    def download_url(self) -> str:
        """Site-relative URL of the downloadable copy (mkdocs-jupyter's include_source)."""
        return f"{self.page_url}{self.name}.ipynb"

    @property
    def post_url(self) -> str:
        return f"blog/{self.slug}/"

    @property
    def runs(self) -> list[Run]:
        return [cell for cell in self.cells if isinstance(cell, Run)]

    @property
    def examples(self) -> list[Example]:
        return [catalog.get(run.key) for run in self.runs]

    @property
    def snippets(self) -> list[str]:
        """The snippet files its cells run, in order of first use."""
        return list(dict.fromkeys(example.script.name for example in self.examples))


class NotebookError(Exception):
    """A notebook cannot be generated from what is committed (an example has no frozen run)."""


# --- the notebooks ------------------------------------------------------------------------------

P1 = "01_matmul_add/"
P2_MLP = "mlp_b64_s128_768x3072_bf16_warm"
P3 = "b8_h16_s1024_d64"
P4 = "05_llm_inference"

NOTEBOOKS: tuple[Notebook, ...] = (
    Notebook(
        part=1,
        slug="matmul-add",
        title="Part 1 notebook: x @ w + b",
        intro=(
            "Every example of Part 1, the profile of `torch.add(torch.matmul(x, w), b)` at two sizes, "
            "cold and warm, eager and compiled, with the profiler's schedule, a batch dimension and "
            "the data type varied one at a time."
        ),
        cells=(
            "## 64×64: how busy is the GPU?",
            Run(P1 + "64_bf16_cold_eager",
                "Read the two totals at the foot of the table first: how does the CPU's compare with the "
                "GPU's? The post reads them for its run and gives the analyzer's verdict. `matmul_add` has "
                "two rows: the CPU label, and its span on the GPU lane, which counts the idle time between "
                "its kernels."),
            "## 4096×4096: does the GPU become the bottleneck?",
            Run(P1 + "4096_bf16_cold_eager",
                "Compare the two totals with the 64×64 run's, and find the GEMM kernel's share of the CUDA "
                "time (its name depends on the GPU). The post says, from its runs, what the analyzer calls "
                "this program."),
            "## Warm runs",
            Run(P1 + "64_bf16_warm_eager",
                "`--warmup` runs three untimed steps before the profiler starts. Compare this table "
                "and its trace with the cold one: do the recorded steps reach `aten::matmul` sooner? The "
                "post compares them step by step and says which way it went on its GPU."),
            Run(P1 + "4096_bf16_warm_eager",
                "The GEMM row averages three calls. Open the trace to see each one and compare their "
                "durations from step to step."),
            "## The cold start and the profiler's own bookkeeping",
            Run(P1 + "64_bf16_cold_eager_s0-0-3",
                "`--schedule 0,0,3` records from the very first step, so the cold start is in the "
                "table: module loading rows (`Lazy Function Loading`, `Runtime Triggered Module "
                "Loading`) and the profiler's `Activity Buffer Request`."),
            Run(P1 + "64_bf16_cold_eager_s0-0-20",
                "Twenty recorded steps instead of three: `Activity Buffer Request` still happens "
                "once. Compare its share of the Self CPU time with the three-step run's; the post reads "
                "both, and what else the first steps hold."),
            "## A batch dimension",
            Run(P1 + "64_bf16_cold_eager_b8",
                "With `--batch 8` the inputs are 3-D: which op does `aten::matmul` dispatch to here, "
                "where the 2-D runs call `aten::mm`?"),
            "## fp32",
            Run(P1 + "4096_fp32_warm_eager",
                "The same product in fp32: compare its GEMM kernel's name and its CUDA time with the "
                "bf16 warm run above."),
            "## torch.compile",
            Run(P1 + "64_bf16_warm_compile",
                "Look for the compiler runtime's rows (`Torch-Compiled Region`, `TorchDynamo Cache "
                "Lookup`, `## Call CompiledFxGraph …`) and for what became of the matmul and the add. "
                "Compare the CPU total with the warm eager run: the post says, from its runs, whether "
                "the compiled step costs the host more or less."),
            Run(P1 + "4096_bf16_warm_compile",
                "Count the GPU activities per step under the compiled op and read their names: did the "
                "compiler change the kernels, or only the rows above them? The post reads them for its "
                "run."),
            "## Beyond Part 1: every size at once",
            Run("01_matmul_add_sweep/sweep_bf16_16-8192",
                "One run over every size from 16 to 8192: eager everywhere, compiled and as a CUDA "
                "graph at the small end, after a measured peak. The lines under the table give each "
                "block's host time, wall time and share of the peak; the sweep's page reads the "
                "same blocks from the trace and finds where the GPU starts to outlast the host."),
        ),
    ),
    Notebook(
        part=2,
        slug="linear-mlp",
        title="Part 2 notebook: nn.Linear and a fused MLP",
        intro=(
            "Every example of Part 2: one `nn.Linear` cold and warm, eager and compiled, then a GeGLU "
            "MLP in eager mode, compiled by Inductor, and with the Triton kernel the post writes."
        ),
        cells=(
            "## One nn.Linear layer",
            Run("02_linear/linear_b1024_32x64_bf16_cold_eager",
                "Follow `aten::linear` down to its children (`aten::t` is a view: CPU time, no kernel) "
                "and to the GEMM kernel they run; the post reads what the kernel's name says about the "
                "bias."),
            Run("02_linear/linear_b1024_32x64_bf16_cold_compile",
                "Compiled: compare with the eager table. Which rows are gone, which of the compiler's "
                "appear, and is the GEMM kernel the same one?"),
            Run("02_linear/linear_b1024_32x64_bf16_warm_eager",
                "The warm eager run: compare its rows with the cold one's, and read the per-step times "
                "from the trace, the first recorded step against the others."),
            Run("02_linear/linear_b1024_32x64_bf16_warm_compile",
                "The warm compiled run: compare its CPU total with the warm eager run to see what the "
                "compiler's runtime costs on a layer this small."),
            "## A GeGLU MLP, three ways",
            Run(f"03_simple_mlp/{P2_MLP}_eager",
                "Eager mode: the MLP's three matrix products (`aten::mm`) and its GELU and multiply, "
                "each with its own kernels; look for what else `aten::mm` puts on the GPU."),
            Run(f"03_simple_mlp/{P2_MLP}_compile",
                "Compiled by Inductor: which kernels run the GEMMs, and what replaced GELU and multiply? "
                "A generated kernel (`triton_…`) appears twice, as the CPU call that launches it and as "
                "the GPU kernel."),
            Run(f"03_kernels_mlp/{P2_MLP}_triton",
                "Our hand-written Triton kernel, `gelu_tanh_mul_kernel`, under its own `gelu_mul` "
                "label; compare its CUDA time with Inductor's fused kernel above. (Run on a GPU, the "
                "snippet also prints how far its output is from the eager MLP's before the table.)"),
        ),
    ),
    Notebook(
        part=3,
        slug="attention",
        title="Part 3 notebook: attention, naive to fused",
        intro=(
            "Every example of Part 3: causal self-attention written naively, with an in-place mask, "
            "and through `scaled_dot_product_attention` with each backend forced in turn, plus the two "
            "backends that refuse fp32 inputs."
        ),
        cells=(
            "## Naive and in place",
            Run(f"04_attention/naive_{P3}_bf16_warm",
                "Look for rows you did not write, `aten::clone` and `aten::copy_`: the out-of-place "
                "`masked_fill` copies the whole score matrix first. Find that copy on the GPU rows."),
            Run(f"04_attention/inplace_{P3}_bf16_warm",
                "`masked_fill_` fills the scores where they are: compare with the naive table, and look "
                "for `aten::clone`, `aten::copy_` and the copy."),
            "## SDPA, one backend at a time",
            Run(f"04_attention/sdpa_math_{P3}_bf16_warm",
                "The math backend in ATen ops: read the GEMM kernels' names for their precision, and "
                "look for the softmax and for the causal mask built again on every call "
                "(`aten::ones`, `aten::tril`, `aten::where`)."),
            Run(f"04_attention/sdpa_efficient_{P3}_bf16_warm",
                "The memory-efficient backend: how many kernels per call now, in place of the scores, "
                "mask and softmax kernels?"),
            Run(f"04_attention/sdpa_flash_{P3}_bf16_warm",
                "Flash attention: again one kernel per call; compare its CUDA time and the CPU time "
                "around it with the efficient backend."),
            Run(f"04_attention/sdpa_cudnn_{P3}_bf16_warm",
                "cuDNN's fused attention: find its kernel (`cudnn_generated_…`), the launch call that "
                "starts it, and what else each call puts on the GPU."),
            "## When a backend refuses",
            Run(f"04_attention/sdpa_flash_{P3}_fp32_warm",
                "Flash attention takes half-precision inputs only: in fp32 it refuses on the first "
                "call, and the snippet prints the reason PyTorch gave instead of a table."),
            Run(f"04_attention/sdpa_cudnn_{P3}_fp32_warm",
                "cuDNN attention refuses fp32 inputs too; the refusal is a result, and the snippet "
                "writes its reason where the trace would be."),
        ),
    ),
    Notebook(
        part=4,
        slug="llm-inference",
        title="Part 4 notebook: LLM inference with transformers",
        intro=(
            "Every example of Part 4: a Llama-style model built from a `transformers` config with "
            "random weights (nothing to download), its prefill, its decode as `transformers` runs it, "
            "with a static KV cache, and compiled into CUDA graphs; then tokens per second against "
            "batch size. It needs `transformers` besides `torch` (`pip install transformers`)."
        ),
        cells=(
            "## Prefill and decode",
            Run(f"{P4}/prefill_b1_p512_dynamic_eager",
                "One forward pass over the whole prompt per step: compare the GPU's share of the time "
                "with the decode runs below."),
            Run(f"{P4}/decode_b1_p512_dynamic_eager",
                "One token per step. Find the row with the largest `Self CPU %`, then open the trace "
                "and compare the attention calls of one step with each other; the post does it for its "
                "run and tests its reading of what it finds."),
            Run(f"{P4}/decode_b1_p512_dynamic_eager_sdpa-flash",
                "The same decode with `--attention flash`, which has no cuDNN graph to build: compare "
                "the attention calls, the launches and the time per token with the run above."),
            "## Taking the overhead away",
            Run(f"{P4}/decode_b1_p512_static_eager",
                "A static cache keeps the attention shapes fixed, which a CUDA graph needs: compare its "
                "attention calls, launches and time per token with the two runs above (the post says "
                "which is faster on its GPU)."),
            Run(f"{P4}/decode_b1_p512_static_compile",
                "`torch.compile(mode=\"reduce-overhead\")`: Inductor's fused kernels captured as one "
                "CUDA graph per token. Look for `cudaGraphLaunch` in the table and compare the "
                "tokens per second printed below it with the runs above. The first call compiles, "
                "which takes a while."),
            "## Tokens per second against batch size",
            Run(f"{P4}/decode_b1-8-64-256-1024-2048_p128_dynamic_eager",
                "Six batch sizes in one trace, each step inside a `decode b=N` annotation; the lines "
                "under the table give tokens per second per batch size."),
            Run(f"{P4}/decode_b1-8-64-256-1024-2048_p128_dynamic_eager_sdpa-flash",
                "The sweep again with flash attention: at which batch size does eager decode stop "
                "being overhead-bound once the cuDNN graph builds are gone?"),
            Run(f"{P4}/decode_b1-8-64-256-1024-2048_p128_static_compile",
                "The same sweep compiled: one graph per batch size (each compiles first). Where do "
                "tokens per second stop growing in proportion to the batch?"),
        ),
    ),
)


def get(name_or_slug: str) -> Notebook:
    for notebook in NOTEBOOKS:
        if name_or_slug in (notebook.name, notebook.slug):
            return notebook
    raise KeyError(f"no notebook {name_or_slug!r} in scripts/notebooks.py")


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
        f"Companion to [Part {notebook.part}]({_link(notebook.post_url)}), which reads each of these "
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
    environment is the one scripts/freeze.py records (GPU, driver, CUDA, torch, Python, and any
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
