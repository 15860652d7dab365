"""The guide (docs/guide/analyze-your-trace.md, perfetto.md, glossary.md): what its blocks read
from the runs."""

from __future__ import annotations

from collections import defaultdict

from .. import cache, render
from ....tracefacts.facts.kernels import decode
from ....tracefacts.pictures.kernel_tips import KernelTips, reading_html
from ....tracefacts.pictures.markup import Markup, concat, h, table, td
from ....tracefacts.pictures.profiler_table import scrolling_table


def event_counts(run) -> dict[str, int]:
    """How many complete events of each kind the run's trace holds."""
    return cache.cached("counts", render.kind_counts, run.trace_input)


def times_only_share(run) -> float:
    """The share (in %) of the trace's events that the facts read only as times (CPU ops and
    Python frames: scripts.tracefacts.facts.analysis.TIMES_ONLY_KINDS)."""
    from ....tracefacts.facts.analysis import TIMES_ONLY_KINDS

    counts = event_counts(run)
    return 100.0 * sum(counts.get(kind, 0) for kind in TIMES_ONLY_KINDS) / sum(counts.values())


def is_largest_trace(run) -> bool:
    """Whether the run's trace file is the largest of the catalog's frozen traces."""
    from ...runs import catalog

    sizes = [e.trace_path.stat().st_size for e in catalog.EXAMPLES if e.trace_path.exists()]
    return run.example.trace_path.stat().st_size == max(sizes)


def json_bytes(run) -> int:
    """The size of the run's trace as JSON text, from its gzip trailer (ISIZE: the uncompressed
    length modulo 2**32, exact for the single-member files torch writes, under 4 GiB)."""
    with run.example.trace_path.open("rb") as file:
        file.seek(-4, 2)
        return int.from_bytes(file.read(4), "little")


# The benchmark's last run by us: tests/benchmarks/bench_analyzer.py --repeat 3 on the stacked
# training trace, then on that trace repeated to 919 MB and to 5.0 GB of JSON (--no-hta), the
# analyzer of the commit below on a 2-CPU x86-64 machine with nothing else running (load average
# 1.0: the benchmark's own process); the 5.0 GB run once, under /usr/bin/time; the time shares
# from a cProfile of the same analyzer run. The build cannot rerun it (it needs HTA and a
# quiet machine): the page gives it as dated.
BENCHMARK = {"date": "2026-12-02", "commit": "3d250eb", "machine": "a 2-CPU x86-64 machine, Python 3.11.7",
             "ours_s": 0.60, "ours_mb": 66, "hta_s": 4.41, "hta_mb": 431,
             # reading alone: decompress, decode every event with msgspec, analyse nothing
             "read_only_s": 0.27,
             # the same trace repeated (big_traces.py repeat); CPU: both processes' (scripts/tracefacts/entry/beside.py)
             "big_json_mb": 919, "big_s": 7.13, "big_cpu_s": 8.90, "big_mb": 285,
             "huge_json_gb": 5.0, "huge_s": 57, "huge_mib": 898,
             # shares of ours on the stacked trace, in one process (cProfile, cumulative,
             # PROFILING_ANALYZER_FORK=0): reading, facts, stacks
             "read_pct": 48, "facts_pct": 24, "stacks_pct": 26}


def peak_share(bench: dict) -> str:
    """The big trace's peak memory as a share of its JSON, in words ("a fifth")."""
    share = bench["big_mb"] / bench["big_json_mb"]
    words = {2: "a half", 3: "a third", 4: "a quarter", 5: "a fifth", 6: "a sixth", 8: "an eighth"}
    return words[min(words, key=lambda n: abs(1 / n - share))]


def against_gib(mib: float) -> str:
    """Where a peak in MiB stands against the issue's bound of 1 GiB."""
    return "under 1 GiB" if mib < 1024 else "just over 1 GiB" if mib < 1100 else "over 1 GiB"



def kernel_totals(run, top: int = 5) -> list[tuple[str, int, float]]:
    """Perfetto's answer to the guide's query: (name, calls, total us) of the `top` kernel
    names by total time, a row per complete event of category kernel, as `slice` holds them."""
    totals: dict[str, list] = defaultdict(lambda: [0, 0.0])
    for event in run.trace.events:
        if event.cat == "kernel":
            totals[event.name][0] += 1
            totals[event.name][1] += event.dur
    return [(name, calls, total) for name, (calls, total) in
            sorted(totals.items(), key=lambda item: -item[1][1])[:top]]


def kernel_totals_table(run, top: int = 5) -> Markup:
    """The query's rows as a table: each name shortened (in full on hover, what it says on tap,
    focus or hover), its calls and total in us as Perfetto prints them."""
    from ....tracefacts.facts.analysis import short_name

    caption = f"The query's answer on the trace of {run.example.key}"
    tips = KernelTips(caption)
    rows = [[tips.name(name, short_name(name), code_attrs={"title": name}), td(calls, {"class": "num"}),
             td(f"{total:.3f}", {"class": "num"})] for name, calls, total in kernel_totals(run, top)]
    return scrolling_table(table(["name", "calls", "total_us"], rows, caption=caption, attrs={"class": "prof"}),
                           caption, after=tips.notes(), searchable=False)


# The kernel families the glossary reads a name of, each: (what it is, which names qualify).
KERNEL_FAMILIES: tuple[tuple[str, object], ...] = (
    ("cuBLAS's GEMM on Hopper (nvjet)", lambda name, k: k.library == "cuBLAS" and name.startswith("nvjet")),
    ("cuBLAS's GEMM in the older naming (xmma)", lambda name, k: k.library == "cuBLAS" and "_xmma_" in name),
    ("A CUTLASS GEMM", lambda name, k: k.library == "CUTLASS" and k.operation == "GEMM"),
    ("FlashAttention", lambda name, k: k.library == "FlashAttention" and k.operation == "attention forward"),
    ("cuDNN's attention", lambda name, k: k.library == "cuDNN" and k.operation.startswith("attention ")),
    ("A Triton kernel Inductor wrote (torch.compile)", lambda name, k: k.library == "Triton (Inductor)"),
    ("ATen's elementwise kernel (eager PyTorch)",
     lambda name, k: k.library == "ATen" and k.operation == "elementwise" and "vectorized" in name),
)


def kernel_examples() -> list[tuple[str, str | None, str, str]]:
    """For each of KERNEL_FAMILIES: (what it is, a name, its kind, the frozen run it is from):
    the family's shortest name in the runs, the easiest to read (of equals, the one that took
    the most time in one run, then the first in catalog order); (what, None, "", "") for a
    family no run has."""
    from ...runs import catalog
    from ....tracefacts.model.trace import load_trace

    best: dict[str, tuple[tuple[int, float], str, str, str]] = {}
    for item in catalog.EXAMPLES:
        if not item.trace_path.exists():
            continue
        totals = cache.cached("activities", render.activity_totals,
                              cache.FileInput(item.trace_path, lambda path=item.trace_path: load_trace(path)))
        for name, (kind, total) in totals.items():
            decoded = decode(name, kind)
            rank = (len(name), -total)
            for what, qualifies in KERNEL_FAMILIES:
                if qualifies(name, decoded) and (what not in best or rank < best[what][0]):
                    best[what] = (rank, name, kind, item.key)
    return [(what, *best[what][1:]) if what in best else (what, None, "", "") for what, _ in KERNEL_FAMILIES]


def kernel_readings() -> Markup:
    """Each family's name from our runs, read piece by piece (kernel_tips.reading_html)."""
    out = []
    for what, name, kind, key in kernel_examples():
        if name is None:
            out.append(h("p", None, h("strong", None, what), ": none in our runs."))
        else:
            out.append(reading_html(name, kind, concat(h("strong", None, what), ", from the trace of ",
                                                       h("code", None, key), ":")))
    return concat(*out)
