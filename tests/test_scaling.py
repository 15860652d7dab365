"""The analyzer's time grows linearly (or as n log n) with a trace's size in each dimension
that a hostile or unlucky trace can make large: ranks with many steps and collectives, a device
per kernel, a stream per kernel, a host thread per op, many ProfilerSteps. Each case is timed at N and GROWTH * N in
this process and the ratio must stay below MAX_RATIO: about GROWTH when linear, GROWTH ** 2
when quadratic, as such passes once were (a step looked up by name in a list, every row
filtered once per device, stream or thread, every earlier activity read again for each step).

The time is the process's CPU time (time.process_time) of the analysis call, the least of
REPEATS runs, the two sizes' runs taken in turn: on a machine shared with other work, wall
time (perf_counter) also counts the time the others hold the cores, which moves from one run
to the next by more than the growth this tells apart. Each run reads fresh copies of the
traces (nothing that a run computes and keeps on a Trace is reused by the next), with the
cyclic collector paused as the command line pauses it. N is chosen so that the smaller run
takes some 50 ms or more. The traces are made here (tests/fixtures/scaling.py);
tests/benchmarks/bench_scaling.py prints the growth at more sizes, the command line's whole run
included."""

from __future__ import annotations

import math
import time
from dataclasses import replace

from scripts.tracefacts.facts.analysis import COLUMN_KINDS, facts, summary_text
from scripts.tracefacts.facts.blocks import blocks_of, blocks_text
from scripts.tracefacts.facts.details import details, details_lines
from scripts.tracefacts.facts.ranks import cross_rank, facts_of_rank, report_text
from scripts.tracefacts.model.trace import Trace, Window, build_trace, load_trace, paused_gc
from scripts.tracefacts.pictures.timeline.plan import plan_timeline
from tests.fixtures.scaling import (many_steps, one_kernel_per_device, one_kernel_per_stream,
                                    one_op_per_thread, two_ranks)
from tests.fixtures.synth import write_trace

GROWTH = 4
MAX_RATIO = 8.0  # between GROWTH (linear) and GROWTH ** 2 (quadratic)
REPEATS = 3  # runs of each size; the least time counts


def assert_linear(make, n: int, build, analyze) -> None:
    """`make(size)` makes the input, `build(input)` the Traces that `analyze` reads (both
    untimed)."""
    built = [build(make(size)) for size in (n, GROWTH * n)]
    small, large = math.inf, math.inf
    for _ in range(REPEATS):
        small, large = (min(best, cpu_seconds(traces, analyze))
                        for best, traces in zip((small, large), built))
    assert large / small < MAX_RATIO, (f"{small:.3f} s at N={n}, {large:.3f} s at "
                                       f"{GROWTH}N: x{large / small:.1f}, more than linear")


def cpu_seconds(traces: list[Trace], analyze) -> float:
    """The CPU time of `analyze` on fresh copies of `traces`."""
    fresh = [replace(trace) for trace in traces]
    with paused_gc():
        start = time.process_time()
        analyze(*fresh)
        return time.process_time() - start


def as_columns(data: dict) -> list[Trace]:
    """The trace as the command line reads it for the facts (launch calls and GPU activities
    as columns)."""
    return [build_trace(data, skip_kinds=COLUMN_KINDS)]


def as_read(data: dict) -> list[Trace]:
    """The trace as the command line reads it for the facts, and as it reads it for a timeline
    or the blocks (every event)."""
    return [*as_columns(data), build_trace(data)]


def summary(trace) -> None:
    """What `analyze.py TRACE` prints: the facts of the whole trace and of each step."""
    summary_text(facts(trace))


def test_ranks_with_many_steps_and_collectives():
    """Two ranks of N steps, each with two NCCL collectives: each rank's facts, then across
    ranks (`analyze.py RANK_DIR`)."""
    def build(pair):
        return [build_trace(data, source=f"rank{rank}.json", skip_kinds=frozenset({"python"}))
                for rank, data in enumerate(pair)]

    assert_linear(two_ranks, 500, build,
                  lambda *ranks: report_text(cross_rank([facts_of_rank(t) for t in ranks])))


def test_one_kernel_per_device():
    """N kernels, each on a device of its own and in a step of its own: the facts (of the
    whole trace and of each step), and the timeline's lanes of the whole trace (a group per
    device)."""
    def analyze(columns, full):
        summary(columns)
        plan_timeline(full, Window(0.0, full.end_us, "whole trace"))

    assert_linear(lambda n: one_kernel_per_device(n, steps=n), 400, as_read, analyze)


def test_one_kernel_per_stream():
    """N kernels on one device, each on a stream of its own: the facts (the gaps and idle time
    of every stream)."""
    assert_linear(one_kernel_per_stream, 2500, as_columns, summary)


def test_one_op_per_thread(tmp_path):
    """N ops recorded with stacks, each on a host thread of its own: the facts, and the shapes
    and stacks (`analyze.py TRACE` reads them, the ops' args in the same pass)."""
    def build(data):
        path = write_trace(data, tmp_path / f"threads_{len(data['traceEvents'])}.json")
        return [load_trace(path, skip_kinds=COLUMN_KINDS, op_args=True)]

    def analyze(trace):
        summary(trace)
        details_lines(details(trace))

    assert_linear(one_op_per_thread, 1200, build, analyze)


def test_many_profiler_steps():
    """N ProfilerSteps, each also a `decode b=1` block: the facts of every step, and the
    blocks (`analyze.py TRACE --blocks`)."""
    def analyze(columns, full):
        summary(columns)
        blocks_text(blocks_of(full))

    assert_linear(many_steps, 150, as_read, analyze)
