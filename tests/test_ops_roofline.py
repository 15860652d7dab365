"""Shapes, stacks (scripts/tracefacts/facts/ops.py) and the roofline (scripts/tracefacts/facts/roofline.py) on a hand-made trace
whose groups, Python lines and roofline numbers are worked out by hand; stacks on a real GPU
trace recorded with with_stack=True."""

from __future__ import annotations

import random
from array import array
from pathlib import Path
from types import SimpleNamespace

import pytest

from scripts.tracefacts.facts.ops import (OP_ARG_KINDS, _Nesting, enclosing, is_library_frame, op_facts, self_times,
                         short_frame, source_facts)
from scripts.tracefacts.model.columnar.rows import Coded
from scripts.tracefacts.facts.roofline import Roof, Work, kernel_work, op_work, place, roofline
from scripts.tracefacts.model.trace import Window, build_trace, load_trace
from tests.fixtures.synth import complete_event as x

ROOT = Path(__file__).resolve().parents[1]
STACK_TRACE = ROOT / "traces" / "train_step" / "train_b16_s10_stack.json.gz"
FLOAT2 = ["float", "float"]


def frame(name, ts, dur, pid, parent):
    return x("python_function", name, ts, dur, {"Python id": pid, "Python parent id": parent})


def ops_trace() -> dict:
    """Times in us. One host thread:

        frames  train.py(10): main [0, 200]
                  model.py(5): forward [25, 65]
                    torch/nn/functional.py(10): linear [29, 61]   (library)
                      <built-in method mm> [30, 60]
        ops     aten::mm 4x8 @ 8x16 [30, 60], inside it aten::empty_strided [35, 40]
                  cudaLaunchKernel [41, 45] -> gemm on GPU 0 [50, 80]
                aten::mm 4x8 @ 8x16 [120, 130]; aten::mm 64x8 @ 8x16 [140, 160]
    """
    small = {"Input Dims": [[4, 8], [8, 16]], "Input type": FLOAT2}
    return {"traceEvents": [
        frame("train.py(10): main", 0, 200, 1, None),
        frame("model.py(5): forward", 25, 40, 2, 1),
        frame("torch/nn/functional.py(10): linear", 29, 32, 3, 2),
        frame("<built-in method mm of type object at 0x7f>", 30, 30, 4, 3),
        x("cpu_op", "aten::mm", 30, 30, small),
        x("cpu_op", "aten::empty_strided", 35, 5, {"Input Dims": [[4, 16]], "Input type": ["float"]}),
        x("cuda_runtime", "cudaLaunchKernel", 41, 4, {"correlation": 1}),
        x("kernel", "gemm", 50, 30, {"correlation": 1, "device": 0, "stream": 7}, pid=0, tid=7),
        x("cpu_op", "aten::mm", 120, 10, small),
        x("cpu_op", "aten::mm", 140, 20, {"Input Dims": [[64, 8], [8, 16]], "Input type": FLOAT2}),
    ]}


@pytest.fixture(scope="module")
def trace():
    return build_trace(ops_trace(), keep_args=OP_ARG_KINDS)


def test_self_time_leaves_out_the_ops_inside():
    ops = build_trace(ops_trace(), keep_args=OP_ARG_KINDS).by_kind["cpu_op"]
    own = self_times(ops)
    assert [(op.name, own[id(op)]) for op in ops][:2] == [("aten::mm", 25.0), ("aten::empty_strided", 5.0)]


def test_ops_grouped_by_input_shape(trace):
    shapes = op_facts(trace).shapes
    assert [(s.name, s.input_dims, s.count, s.total_us, s.self_us) for s in shapes] == [
        ("aten::mm", "[[4, 8], [8, 16]]", 2, 40.0, 35.0),
        ("aten::mm", "[[64, 8], [8, 16]]", 1, 20.0, 20.0),
        ("aten::empty_strided", "[[4, 16]]", 1, 5.0, 5.0)]
    assert shapes[0].input_types == '["float", "float"]'
    assert shapes[0].self_share_pct == pytest.approx(100 * 35 / 60)
    step2 = op_facts(trace, Window(100, 200, "later")).shapes
    assert [(s.input_dims, s.self_us) for s in step2] == [("[[64, 8], [8, 16]]", 20.0), ("[[4, 8], [8, 16]]", 10.0)]


def test_a_kernel_comes_from_the_innermost_user_frame(trace):
    (line,) = source_facts(trace, Window(0, 200, "all"))
    assert (line.name, line.kind, line.count, line.total_us, line.op) == ("gemm", "kernel", 1, 30.0, "aten::mm")
    assert line.frame == "model.py(5): forward"  # not torch/nn/functional.py, not the built-in
    assert line.stack[:2] == ["<built-in method mm of type object at 0x7f>",
                              "torch/nn/functional.py(10): linear"]
    assert source_facts(trace, Window(100, 200, "later")) == []  # launched in the first window


def test_enclosing_events_are_those_running_on_the_thread():
    """Asked at a few points, each row's parent found when needed: the same answer as looking at
    every event, where nesting is exact or not (an op that outlasts the one it started in)."""
    rng = random.Random(7)
    events = [SimpleNamespace(ts=float(start), end=float(start + rng.choice([1, 3, 8, 30, 90])),
                              pid=1, tid=rng.choice([1, 2]))
              for start in sorted(rng.randrange(0, 400) for _ in range(300))]
    events.sort(key=lambda e: (e.ts, e.ts - e.end))  # trace order
    queries = [((1, tid), rng.uniform(-5, 500)) for tid in (1, 2, 3) for _ in range(60)]
    running = [[e for e in events if (e.pid, e.tid) == thread and e.ts <= t <= e.end]
               for thread, t in queries]
    assert enclosing(events, queries) == running
    marked = [rng.random() < 0.3 for _ in events]
    nesting = _Nesting([e.ts for e in events], [e.end for e in events],
                       [(e.pid, e.tid) for e in events], marked)
    row_of = {id(e): row for row, e in enumerate(events)}  # equal events are still two rows
    for (thread, t), found in zip(queries, running):
        rows = [row_of[id(e)] for e in found]
        assert next(nesting.running(thread, t), None) == (rows[-1] if rows else None)
        assert nesting.innermost_marked(thread, t) == (
            bool(rows), next((row for row in reversed(rows) if marked[row]), None))
    # The same queries asked all at once (each thread's together), of a fresh nesting too, and
    # of one that makes each thread's ends of the starts and durations (as of columns), its
    # threads coded as loading codes them.
    threads = Coded()
    threads.extend([(e.pid, e.tid) for e in events])
    from_columns = _Nesting(array("d", [e.ts for e in events]), None, threads, marked,
                            dur=array("d", [e.end - e.ts for e in events]))
    for asked in (nesting, _Nesting([e.ts for e in events], [e.end for e in events],
                                    [(e.pid, e.tid) for e in events], marked), from_columns):
        times = [t for _, t in queries]
        coded = Coded()  # the queries' threads coded too, as the launches' are
        coded.extend([thread for thread, _ in queries])
        for threads in ([thread for thread, _ in queries], coded):
            some, mine = asked.innermost_marked_all(threads, times)
            innermost = asked.innermost_all(threads, times)
            for k, found in enumerate(running):
                rows = [row_of[id(e)] for e in found]
                assert some[k] == bool(rows) and innermost[k] == (rows[-1] if rows else -1)
                assert mine[k] == next((row for row in reversed(rows) if marked[row]), -1)
    # One thread's rows alone (its columns read as they are, not picked out of others').
    alone = [e for e in events if e.tid == 1]
    one = _Nesting(array("d", [e.ts for e in alone]), None, [(1, 1)] * len(alone),
                   dur=array("d", [e.end - e.ts for e in alone]))
    for thread, t in queries:
        assert [alone[row] for row in one.chain(thread, t)] == (
            [e for e in alone if e.ts <= t <= e.end] if thread == (1, 1) else [])


def test_library_frames_and_short_paths():
    assert is_library_frame("torch/nn/modules/linear.py(125): forward")
    assert is_library_frame("contextlib.py(141): __enter__")  # the standard library, relative
    assert is_library_frame("/usr/lib/python3.11/site-packages/x/y.py(1): f")
    assert is_library_frame("nn.Module: Linear_0") and is_library_frame("<built-in function len>")
    assert not is_library_frame("train_step.py(113): <module>")
    assert not is_library_frame("/home/me/proj/model.py(5): forward")
    assert short_frame("/home/me/proj/src/pkg/model.py(5): forward") == "…/src/pkg/model.py(5): forward"
    assert short_frame("model.py(5): forward") == "model.py(5): forward"


def test_op_work_by_hand():
    assert op_work("aten::mm", {"Input Dims": [[4, 8], [8, 16]], "Input type": FLOAT2})[:2] == \
        (1024, (32 + 128) * 4 + 64 * 4)
    assert op_work("aten::addmm", {"Input Dims": [[16], [4, 8], [8, 16], [], []],
                                   "Input type": ["float"] * 3 + ["Scalar"] * 2})[:2] == \
        (1024, (16 + 32 + 128) * 4 + 64 * 4)
    bf16 = "c10::BFloat16"
    assert op_work("aten::bmm", {"Input Dims": [[2, 4, 8], [2, 8, 16]], "Input type": [bf16] * 2})[:2] == \
        (2 * 2 * 4 * 16 * 8, (64 + 256) * 2 + 128 * 2)
    assert op_work("aten::linear", {"Input Dims": [[3, 4, 8], [16, 8], [16]], "Input type": ["float"] * 3})[:2] == \
        (2 * 12 * 16 * 8, (96 + 128 + 16) * 4 + 12 * 16 * 4)
    flops, nbytes, how = op_work("aten::add_", {"Input Dims": [[4, 8], [4, 8], []],
                                                "Input type": ["float", "float", "Scalar"]})
    assert (flops, nbytes) == (None, 3 * 128)  # no formula for FLOPs; in place: writes its first input
    assert op_work("aten::conv2d", {"flops": 500})[0] == 500  # the trace's own count wins
    assert op_work("aten::mm", {"Input Dims": [[4, 8], [8, 16]], "Input type": ["weird", "weird"]})[:2] == (None, None)
    assert op_work("aten::mm", {"Input Dims": [[4, 8], [9, 16]], "Input type": FLOAT2})[0] is None  # K mismatch


def test_place_by_hand():
    roof = Roof(peak_flops=1e12, bandwidth=1e11)
    assert roof.ridge == 10.0
    compute = place(Work("big", flops=5e11, bytes=1e9, time_us=1e6), roof)
    assert (compute.intensity, compute.achieved_flops, compute.roof_flops, compute.roof_fraction,
            compute.bound) == (500.0, 5e11, 1e12, 0.5, "compute")
    memory = place(Work("small", flops=1e9, bytes=1e9, time_us=1e5), roof)
    assert (memory.intensity, memory.roof_flops, memory.bound) == (1.0, 1e11, "memory")
    assert memory.achieved_bandwidth == pytest.approx(1e10)
    assert memory.roof_fraction == pytest.approx(0.1)
    assert place(Work("none", flops=0, bytes=1, time_us=1), roof) is None
    assert [p.name for p in roofline([Work("a", 1, 1, 1), Work("b", 1, 1, 2)], roof)] == ["b", "a"]


def test_kernel_work_from_the_launching_op(trace):
    (work,) = kernel_work(trace)
    assert (work.name, work.flops, work.bytes, work.time_us, work.count) == ("gemm", 1024, 896, 30.0, 1)
    point = place(work, Roof(1e12, 1e11))
    assert point.intensity == pytest.approx(1024 / 896)
    assert point.achieved_flops == pytest.approx(1024 / 30e-6)
    assert point.roof_fraction == pytest.approx((1024 / 30e-6) / (1e11 * 1024 / 896))
    assert point.bound == "memory"


@pytest.mark.skipif(not STACK_TRACE.exists(), reason="the guide's frozen with_stack trace")
def test_real_gpu_trace_kernels_lead_to_user_lines():
    trace = load_trace(STACK_TRACE, keep_args=OP_ARG_KINDS)
    lines = source_facts(trace, Window(0, trace.end_us, "whole trace"))
    assert lines and all(line.kind in ("kernel", "memcpy", "memset") for line in lines)
    assert sum(line.frame is not None for line in lines) >= len(lines) - 1
    for line in lines:
        if line.frame is not None:
            assert not is_library_frame(line.frame) and line.stack[-1] == line.frame
    assert lines == sorted(lines, key=lambda line: -line.total_us)


def test_the_sequence_column_reads_back_every_value():
    """`Sequence number` in 32 bits until a value needs 64 (the column widened then, its marks
    of none moved), any other value beside it: read back as given, in batches of any mix and
    after a reorder, and the forward op of each number as a scan of the values finds it."""
    from scripts.tracefacts.model.columnar.rows import MISSING, OpColumns, Sequences
    from scripts.tracefacts.facts.ops import _forward_ops

    rng = random.Random(11)
    pools = [[1, 7, 4000, -3], [1 << 31, -(1 << 31), (1 << 31) - 1, -(1 << 31) + 1],
             [1 << 63, -(1 << 63), (1 << 63) - 1, 1 << 70], [None, MISSING, 2.5, "9", True, [3]]]
    for trial in range(40):
        columns, given = OpColumns(with_args=True), []
        for _ in range(rng.randint(1, 6)):
            batch = [rng.choice(rng.choice(pools[:rng.randint(1, 4)]))
                     for _ in range(rng.randint(1, 30))]
            forward = [rng.choice([MISSING, 0, 1]) for _ in batch]
            columns.add(["op"] * len(batch), [1] * len(batch), [1] * len(batch),
                        [(number, fwd, MISSING, MISSING) for number, fwd in zip(batch, forward)])
            given += [(None if n is MISSING else n, fwd not in (MISSING, 0))
                      for n, fwd in zip(batch, forward)]
        order = list(range(len(given)))
        if trial % 2:
            rng.shuffle(order)
            columns.reorder(order)
            given = [given[row] for row in order]
        read = Sequences(columns.sequence, columns.sequence_other)
        assert list(read) == [n for n, _ in given] == [read[row] for row in range(len(given))]
        wide = any(type(n) is int and not -(1 << 31) < n < (1 << 31) for n, _ in given)
        assert columns.sequence.typecode == ("q" if wide else "i")
        rows = SimpleNamespace(sequence=read, forward=bytearray(f for _, f in given))
        first = {}
        for row, (n, backward) in enumerate(given):
            if type(n) is int and not backward:
                first.setdefault(n, row)
        assert _forward_ops(rows) == first
