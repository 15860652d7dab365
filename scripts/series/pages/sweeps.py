"""Page helpers for runs made of labelled blocks: the matmul + add sweep and the LLM runs.

    ```python exec="true" html="true"
    from scripts.series.pages.sweeps import sweep
    view = sweep("01_matmul_add_sweep/sweep_bf16_16-8192")
    print(view.table())
    print(view.times_plot())
    ```

The facts come from scripts.tracefacts.facts.blocks and the pictures from scripts.series.pages.plots, both through
scripts.series.pages.render and the render cache (keyed by the trace's content and by the code that computes
them); everything printed is read off the frozen trace.
"""

from __future__ import annotations

import math
from functools import cached_property
from pathlib import Path

from . import cache, render
from ...tracefacts.facts.analysis import short_name
from ...tracefacts.facts.blocks import ActivityCost, BatchFacts, Sweep, SweepPoint
from ...tracefacts.pictures.kernel_tips import KernelTips
from ...tracefacts.pictures.markup import Markup, concat, h, table, td, th
from .helpers import Run, example, format_us, zoomable_figure
from ...tracefacts.pictures.profiler_table import scrolling_table


def _figure(run: Run, name: str, svg: Path, alt: str, what: str) -> Markup:
    return zoomable_figure(f"plots/{run.example.snippet}/{name}.svg", svg, alt,
                           f"{what} {run.caption()}. Click to zoom.", css_class="timeline plot")


def percent(value: float) -> str:
    """A share with two significant digits and no exponent: 92%, 5.0%, 0.26%, 0.000015%."""
    if value >= 10:
        return f"{value:.0f}%"
    if value <= 0:
        return "0%"
    digits = max(1, 1 - math.floor(math.log10(value)))
    return f"{value:.{digits}f}%"


def _table(head: list[str], rows: list[list], caption: str, tips: KernelTips | None = None) -> Markup:
    """Rows named by their first cell, numbers in the others; `tips`: the notes of the kernel
    names in it."""
    thead = [th(name, {"scope": "col", "class": "num" if i else None}) for i, name in enumerate(head)]
    body = [[th(row[0], {"scope": "row"}), *(td(cell, {"class": "num"}) for cell in row[1:])] for row in rows]
    return scrolling_table(table(thead, body, caption=caption, attrs={"class": "prof"}), caption, searchable=False,
                           after=tips and tips.notes())


# --- the matmul + add sweep ----------------------------------------------------------------------


class SweepView:
    def __init__(self, run: Run):
        self.run = run

    @cached_property
    def data(self) -> Sweep:
        return cache.cached("sweep", render.sweep_facts, self.run.trace_input)

    @property
    def _facts_input(self) -> cache.FileInput:
        """The sweep's facts as a plot's input: keyed by the trace file they come from."""
        return cache.FileInput(self.run.example.trace_path, lambda: self.data)

    def point(self, mode: str, size: int) -> SweepPoint:
        return self.data.point(mode, size)

    def table(self, modes: tuple[str, ...] | None = None) -> Markup:
        """One row per block, by size then mode."""
        sweep = self.data
        chosen = [p for p in sweep.points if modes is None or p.mode in modes]
        rows = []
        for p in sorted(chosen, key=lambda p: (p.size, sweep.modes().index(p.mode))):
            rows.append([
                concat(f"{p.mode} ", h("code", None, f"n={p.size}")),
                format_us(p.cpu_us_per_step),
                format_us(p.wall_us_per_step),
                format_us(p.gpu_us_per_step),
                f"{p.gpu_busy_pct:.1f}%",
                f"{p.launches_per_step:g}",
                f"{p.tflops:.3g}",
                percent(sweep.share_of_peak(p)),
                p.verdict,
            ])
        head = ["block", "host per step", "wall per step", "GPU busy per step", "GPU busy",
                "launches per step", "TFLOP/s", "of peak", "verdict"]
        return _table(head, rows, f"Every block of the sweep, read off its trace — {self.run.caption()}")

    def times_plot(self) -> Markup:
        svg = cache.cached_file("plot", render.sweep_times_svg, self._facts_input, suffix=".svg")
        return _figure(self.run, "sweep_times", svg,
                       "Host time and GPU busy time per step against matrix size, for eager, "
                       "torch.compile and CUDA graph", "Host and GPU time per step (log scales).")

    def tflops_plot(self) -> Markup:
        svg = cache.cached_file("plot", render.sweep_tflops_svg, self._facts_input, suffix=".svg")
        return _figure(self.run, "sweep_tflops", svg,
                       "Achieved TFLOP/s against matrix size for each mode, under the measured peak",
                       "Achieved TFLOP/s against the peak measured in the same run.")


def sweep(key: str) -> SweepView:
    return SweepView(example(key))


# --- LLM steps ----------------------------------------------------------------------------------


class LLMView:
    def __init__(self, run: Run):
        self.run = run

    @cached_property
    def prompt(self) -> int:
        args = self.run.example.args
        return int(args[args.index("--prompt") + 1])

    @cached_property
    def batches(self) -> list[BatchFacts]:
        return cache.cached("llm", render.llm_batches, self.run.trace_input, self.prompt)

    @property
    def batches_input(self) -> cache.FileInput:
        """The batches' facts as a plot's input: keyed by the trace file and the prompt length."""
        return cache.FileInput(self.run.example.trace_path, lambda: self.batches, f"prompt={self.prompt}")

    def batch(self, size: int = 1) -> BatchFacts:
        for facts in self.batches:
            if facts.batch == size:
                return facts
        raise KeyError(f"{self.run.example.key} has no batch {size}")

    def kernels(self, batch: int, top: int = 5) -> list[ActivityCost]:
        """The GPU activities that took the most time in this batch size's steps: name, kind,
        count and time per step."""
        return cache.cached("llm", render.llm_top_activities, self.run.trace_input, batch, top)

    def kernels_table(self, batch: int, top: int = 5) -> Markup:
        caption = f"The {top} costliest GPU activities per step at batch {batch}: {self.run.example.command}"
        tips = KernelTips(caption)
        rows = [[tips.name(k.name, short_name(k.name, 110)), f"{k.count_per_step:g}",
                 format_us(k.us_per_step)] for k in self.kernels(batch, top)]
        return _table(["GPU activity", "per step", "time per step"], rows, caption, tips)

    def first_batch_overhead_free(self) -> BatchFacts | None:
        """The smallest batch whose steps the analyzer no longer calls overhead-bound."""
        return next((b for b in self.batches if b.verdict != "overhead-bound"), None)


def llm(key: str) -> LLMView:
    return LLMView(example(key))


def _batch_row(label: str, b: BatchFacts) -> list[str]:
    return [
        label,
        format_us(b.ms_per_step * 1e3),
        f"{b.tokens_per_s:,.0f}",
        f"{b.gpu_busy_pct:.1f}%",
        format_us(b.gpu_ms_per_step * 1e3),
        format_us(b.idle_ms_per_step * 1e3),
        f"{b.gaps_per_step:.0f}",
        f"{b.launches_per_step:.0f}",
        f"{b.kernels_per_step:.0f}",
        b.verdict,
    ]


BATCH_HEAD = ["run", "per step", "tokens/s", "GPU busy", "GPU busy per step", "GPU idle per step",
              "gaps per step", "launches per step", "kernels per step", "verdict"]


def compare(rows: dict[str, tuple[str, int]], caption: str) -> Markup:
    """One row per (label -> (example key, batch)): the runs side by side."""
    table_rows = [_batch_row(label, llm(key).batch(size)) for label, (key, size) in rows.items()]
    return _table(BATCH_HEAD, table_rows, caption)


def batch_table(key: str) -> Markup:
    view = llm(key)
    rows = [_batch_row(f"batch {b.batch}", b) for b in view.batches]
    return _table(BATCH_HEAD, rows, f"{view.run.example.command} — {view.run.caption()}")


def tokens_plot(series: dict[str, str]) -> Markup:
    """Tokens per second against batch size, one line per (legend label -> example key)."""
    views = {label: llm(key) for label, key in series.items()}
    first = next(iter(views.values())).run
    key = cache.cached_file("plot", render.tokens_svg, tuple(views),
                            tuple(v.batches_input for v in views.values()), suffix=".svg")
    return _figure(first, "tokens_per_second", key,
                   "New tokens per second against batch size, eager and compiled decode",
                   "Decode throughput against batch size (log scales).")


def snippet_defaults(snippet: str) -> dict[str, object]:
    """The defaults of a snippet's `parser.add_argument("--name", ..., default=...)` calls, read
    from its source (the docs build has no torch to import it with)."""
    import ast

    from ..runs.catalog import SNIPPETS

    tree = ast.parse((SNIPPETS / f"{snippet}.py").read_text())
    defaults = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "add_argument":
            name = node.args[0].value if node.args and isinstance(node.args[0], ast.Constant) else None
            for keyword in node.keywords:
                if name and keyword.arg == "default" and isinstance(keyword.value, ast.Constant):
                    defaults[name.lstrip("-")] = keyword.value.value
    return defaults


def llama_modules(hidden: int, intermediate: int, layers: int, heads: int, kv_heads: int,
                  vocab: int, tied: bool = False, **_) -> dict[str, int]:
    """Weights of a LlamaForCausalLM by module, from its config: `embed_tokens` (vocab x hidden),
    the decoder `layers` (attention, MLP and their two norms), the final `norm`, and `lm_head`
    (vocab x hidden; 0 when tied to the embedding, which then serves as the head)."""
    head_dim = hidden // heads
    attention = 2 * hidden * hidden + 2 * hidden * kv_heads * head_dim  # q, o; k, v
    mlp = 3 * hidden * intermediate  # gate, up, down
    norms = 2 * hidden
    return {"embed_tokens": vocab * hidden, "layers": layers * (attention + mlp + norms), "norm": hidden,
            "lm_head": 0 if tied else vocab * hidden}


def llama_parameters(hidden: int, intermediate: int, layers: int, heads: int, kv_heads: int,
                     vocab: int, **_) -> int:
    """Weights of a LlamaForCausalLM without tied embeddings (transformers' default for Llama)."""
    return sum(llama_modules(hidden, intermediate, layers, heads, kv_heads, vocab).values())
