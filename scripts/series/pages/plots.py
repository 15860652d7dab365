"""Plots of sweeps as SVG text: pure functions from the facts of scripts.tracefacts.facts.blocks to a picture.

matplotlib draws them on a light card (like the timelines, legible in both site palettes), with
text kept as text and no date or random ids in the file, so that a rebuild gives the same bytes.
"""

from __future__ import annotations

import io

from ...tracefacts.facts.blocks import BatchFacts, Sweep

MODE_STYLE = {  # colour, marker, what the legend calls it
    "eager": ("#c43e00", "o", "eager"),
    "compile": ("#1f5fae", "s", "torch.compile"),
    "graph": ("#2e7d32", "^", "CUDA graph"),
}
INK, GRID, CARD = "#222222", "#d9d9d9", "#ffffff"


def _figure(width_in: float = 7.2, height_in: float = 3.6):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams.update({
        "svg.hashsalt": "profiling-pytorch",  # stable ids
        "svg.fonttype": "none",  # text stays text: small files, the page's font
        "font.size": 10,
        "font.family": ["sans-serif"],
        "axes.edgecolor": INK, "axes.labelcolor": INK, "xtick.color": INK, "ytick.color": INK,
        "text.color": INK,
    })
    fig, ax = plt.subplots(figsize=(width_in, height_in), dpi=100)
    fig.patch.set_facecolor(CARD)
    ax.set_facecolor(CARD)
    ax.grid(True, which="major", color=GRID, linewidth=0.6)
    ax.set_axisbelow(True)
    return plt, fig, ax


def _svg(plt, fig) -> str:
    buffer = io.StringIO()
    fig.tight_layout()
    fig.savefig(buffer, format="svg", metadata={"Date": None, "Creator": None})
    plt.close(fig)
    return buffer.getvalue()


def _log2_sizes(ax, sizes: list[int]) -> None:
    ax.set_xscale("log", base=2)
    ax.set_xticks(sizes)
    ax.set_xticklabels([str(n) for n in sizes])
    ax.minorticks_off()


def sweep_times(sweep: Sweep) -> str:
    """Per step: the host's time and the GPU's busy time against size, one pair per mode, with
    the crossover marked where eager's GPU time first outlasts its host time for good."""
    plt, fig, ax = _figure(height_in=4.4)
    for mode in sweep.modes():
        colour, marker, label = MODE_STYLE[mode]
        points = sweep.of_mode(mode)
        sizes = [p.size for p in points]
        ax.plot(sizes, [p.cpu_us_per_step for p in points], color=colour, marker=marker,
                linestyle="--", linewidth=1.2, markersize=4, label=f"{label}: host time per step")
        ax.plot(sizes, [p.gpu_us_per_step for p in points], color=colour, marker=marker,
                linewidth=1.8, markersize=4, label=f"{label}: GPU busy per step")
    crossover = sweep.crossover("eager")
    if crossover:
        ax.axvline(crossover, color=INK, linewidth=0.8, linestyle=":")
        ax.annotate(f"eager: GPU outlasts host\nfrom n={crossover} on", xy=(crossover, 0.04),
                    xycoords=("data", "axes fraction"), xytext=(-6, 0), textcoords="offset points",
                    ha="right", va="bottom", fontsize=9)
    sizes = sorted({p.size for p in sweep.points})
    _log2_sizes(ax, sizes)
    ax.set_yscale("log")
    ax.set_xlabel("matrix side n (x @ w + b, n x n, bf16)")
    ax.set_ylabel("microseconds per step (log)")
    ax.legend(fontsize=8, ncols=3, loc="upper center", bbox_to_anchor=(0.5, -0.2), frameon=False)
    return _svg(plt, fig)


def sweep_tflops(sweep: Sweep) -> str:
    """Achieved TFLOP/s (useful work over wall time) against size, per mode, under the peak."""
    plt, fig, ax = _figure()
    for mode in sweep.modes():
        colour, marker, label = MODE_STYLE[mode]
        points = sweep.of_mode(mode)
        ax.plot([p.size for p in points], [p.tflops for p in points], color=colour, marker=marker,
                linewidth=1.8, markersize=4, label=label)
    ax.axhline(sweep.peak_tflops, color=INK, linewidth=1, linestyle="--")
    ax.annotate(f"measured peak {sweep.peak_tflops:.0f} TFLOP/s (bf16 matmul, n={sweep.peak_size})",
                xy=(0.01, sweep.peak_tflops), xycoords=("axes fraction", "data"),
                xytext=(0, -13), textcoords="offset points", fontsize=9)
    _log2_sizes(ax, sorted({p.size for p in sweep.points}))
    ax.set_yscale("log")
    ax.set_ylim(top=sweep.peak_tflops * 3)
    ax.set_xlabel("matrix side n (x @ w + b, n x n, bf16)")
    ax.set_ylabel("achieved TFLOP/s (log)")
    ax.legend(fontsize=8, loc="lower right", frameon=False)
    return _svg(plt, fig)


def tokens_per_second(series: dict[str, list[BatchFacts]]) -> str:
    """Decode throughput against batch size, one line per configuration; hollow markers where
    the analyzer calls the step overhead-bound."""
    plt, fig, ax = _figure()
    colours = ["#c43e00", "#1f5fae", "#2e7d32", "#6a1b9a"]
    batches = set()
    for colour, (label, facts) in zip(colours, series.items()):
        xs = [f.batch for f in facts]
        batches.update(xs)
        ax.plot(xs, [f.tokens_per_s for f in facts], color=colour, linewidth=1.8, label=label)
        for f in facts:
            hollow = f.verdict == "overhead-bound"
            ax.plot([f.batch], [f.tokens_per_s], marker="o", markersize=6, color=colour,
                    markerfacecolor=CARD if hollow else colour)
    ax.plot([], [], marker="o", color=INK, markerfacecolor=CARD, linestyle="", label="overhead-bound step")
    ax.plot([], [], marker="o", color=INK, linestyle="", label="mixed, stalled or GPU-bound step")
    _log2_sizes(ax, sorted(batches))
    ax.set_yscale("log")
    ax.set_xlabel("batch size (sequences decoded together)")
    ax.set_ylabel("new tokens per second (log)")
    ax.legend(fontsize=8, loc="upper left", frameon=False)
    return _svg(plt, fig)


CATEGORY_COLOURS = {  # the memory timeline's categories, as PyTorch's own plot colours them, roughly
    "parameter": "#1f5fae", "gradient": "#2e7d32", "optimizer_state": "#6a1b9a", "activation": "#c43e00",
    "temporary": "#f2a900", "input": "#00838f", "autograd_detail": "#8d6e63", "unknown": "#9e9e9e",
}


MEMORY_POINTS = 150  # per panel: about one per four pixel columns, a picture of ~140 kB, not megabytes


def _thinned(times: list[float], series: list[list[int]], points: int = MEMORY_POINTS) -> tuple[list, list]:
    """At most about `points` samples of a stacked step series: of each run of samples, the one with
    the largest total, so that every peak stays in the picture at its height."""
    if len(times) <= points:
        return times, series
    step = len(times) / points
    keep = []
    for n in range(points):
        lo, hi = int(n * step), max(int((n + 1) * step), int(n * step) + 1)
        keep.append(max(range(lo, min(hi, len(times))), key=lambda i: sum(s[i] for s in series)))
    return [times[i] for i in keep], [[s[i] for i in keep] for s in series]


def memory_timelines(timelines: dict[str, dict], categories: tuple[str, ...]) -> str:
    """One panel per run (label -> export_memory_timeline's times and bytes per category), the
    categories stacked, on one byte scale; time in ms from each timeline's start (thinned to
    MEMORY_POINTS samples a panel, every peak kept)."""
    plt, fig, first = _figure(height_in=2.4 * len(timelines))
    fig.clear()
    axes = fig.subplots(len(timelines), 1, sharey=True, squeeze=False)[:, 0]
    for ax, (label, timeline) in zip(axes, timelines.items()):
        ax.set_facecolor(CARD)
        ax.grid(True, which="major", color=GRID, linewidth=0.6)
        ax.set_axisbelow(True)
        shown = [c for c in categories if any(timeline["bytes"].get(c, ()))]
        times, series = _thinned(timeline["times_us"], [timeline["bytes"][c] for c in shown])
        xs = [(t - times[0]) / 1000 for t in times]
        ax.stackplot(xs, *[[b / 2**20 for b in values] for values in series],
                     colors=[CATEGORY_COLOURS.get(c, "#9e9e9e") for c in shown],
                     labels=[c.replace("_", " ") for c in shown], linewidth=0)
        ax.set_title(label, fontsize=10, loc="left")
        ax.set_ylabel("MiB")
        ax.margins(x=0)
    axes[-1].set_xlabel("milliseconds since the first profiled step")
    axes[-1].legend(fontsize=8, ncols=4, loc="upper left", frameon=False)  # the lower panel has room above it
    return _svg(plt, fig)


def roofline(peak_flops: float, bandwidth: float, points: tuple) -> str:
    """The roofline (log-log): the bandwidth slope up to the ridge, the compute roof after it, and
    each (name, flops, bytes, time_us) point at its intensity and achieved TFLOP/s."""
    plt, fig, ax = _figure(height_in=4.4)
    intensities = [f / b for _, f, b, _ in points] or [1.0]
    ridge = peak_flops / bandwidth
    lo, hi = min(min(intensities), ridge) / 4, max(max(intensities), ridge) * 4
    xs = [lo, ridge, hi]
    ax.plot(xs, [min(peak_flops, bandwidth * x) / 1e12 for x in xs], color=INK, linewidth=1.6)
    ax.annotate(f"{bandwidth / 1e12:.2f} TB/s", xy=(lo * 1.3, bandwidth * lo * 1.3 / 1e12), fontsize=9,
                xytext=(4, 6), textcoords="offset points", rotation=30)
    ax.annotate(f"{peak_flops / 1e12:.0f} TFLOP/s", xy=(hi, peak_flops / 1e12), ha="right", fontsize=9,
                xytext=(0, 4), textcoords="offset points")
    ax.axvline(ridge, color=INK, linewidth=0.8, linestyle=":")
    for i, (name, flops, nbytes, time_us) in enumerate(points):
        x, y = flops / nbytes, flops / (time_us * 1e-6) / 1e12
        colour = "#c43e00" if x < ridge else "#1f5fae"
        ax.plot([x], [y], marker="o", markersize=5, color=colour)
        ax.annotate(name, xy=(x, y), xytext=(5, -10 if i % 2 else 4), textcoords="offset points", fontsize=7)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("arithmetic intensity (FLOP per byte moved, log)")
    ax.set_ylabel("achieved TFLOP/s (log)")
    return _svg(plt, fig)
