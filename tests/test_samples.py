"""samples_of, the per-step digest of a repeated run, on a trace worked out by hand."""

from __future__ import annotations

from scripts.series.runs.samples import samples_of
from scripts.tracefacts.model.trace import build_trace


def x(name, cat, ts, dur, pid=1, tid=1, **args):
    return {"ph": "X", "cat": cat, "name": name, "ts": ts, "dur": dur, "pid": pid, "tid": tid, "args": args}


def kernel(name, ts, dur, cat="kernel", **args):
    return x(name, cat, ts, dur, pid=0, tid=7, **args)


# Two steps: [100, 200) and [200, 250).
TRACE = {"traceEvents": [
    x("ProfilerStep#1", "user_annotation", 100, 100),
    x("block", "user_annotation", 105, 80),
    x("aten::mm", "cpu_op", 110, 20),
    x("aten::mm", "cpu_op", 112, 5),  # nested in the first one, same name: counted too
    x("cudaLaunchKernel", "cuda_runtime", 120, 4, correlation=1),
    x("aten::mm", "cpu_op", 150, 10),
    x("cudaLaunchKernel", "cuda_runtime", 160, 3, correlation=2),
    x("aten::add", "cpu_op", 170, 5, tid=2),  # another thread, same step
    kernel("gemm", 130, 100, correlation=1),  # launched in step 1, runs until 230: still step 1's
    kernel("gemm", 230, 10, correlation=2),  # launched in step 1, runs wholly in step 2's window
    kernel("ProfilerStep#1", 130, 110, cat="gpu_user_annotation"),  # not GPU work
    x("ProfilerStep#2", "user_annotation", 200, 50),
    x("cudaMemcpyAsync", "cuda_runtime", 210, 5, correlation=3),
    kernel("Memcpy DtoD", 240, 6, cat="gpu_memcpy", correlation=3),  # busy, but not a kernel
    kernel("orphan", 205, 10),  # no launch recorded: placed by its own start
    x("aten::mm", "cpu_op", 215, 10),
    x("aten::mm", "cpu_op", 300, 5),  # after the last step: nobody's
]}


def test_digest_of_a_hand_worked_trace():
    assert samples_of(build_trace(TRACE)) == {"steps": [
        {
            "name": "ProfilerStep#1",
            "dur_us": 100,
            "ops": {
                "block": {"first_us": 5, "total_us": 80, "count": 1},
                "aten::mm": {"first_us": 10, "total_us": 35, "count": 3},
                # launch calls are host work too: the runtime and driver calls count as ops
                "cudaLaunchKernel": {"first_us": 20, "total_us": 7, "count": 2},
                "aten::add": {"first_us": 70, "total_us": 5, "count": 1},
            },
            # 130-230 and 230-240 touch: one busy interval of 110 us, past the step's end.
            "gpu": {"busy_us": 110, "kernels": 2},
        },
        {
            "name": "ProfilerStep#2",
            "dur_us": 50,
            "ops": {"cudaMemcpyAsync": {"first_us": 10, "total_us": 5, "count": 1},
                    "aten::mm": {"first_us": 15, "total_us": 10, "count": 1}},
            "gpu": {"busy_us": 16, "kernels": 1},
        },
    ]}


def test_ops_keep_their_order_of_first_appearance_and_a_trace_without_steps_has_none():
    names = list(samples_of(build_trace(TRACE))["steps"][0]["ops"])
    assert names == ["block", "aten::mm", "cudaLaunchKernel", "aten::add"]
    assert samples_of(build_trace({"traceEvents": [x("aten::mm", "cpu_op", 1, 2)]})) == {"steps": []}


def test_overlapping_activities_count_once_and_times_are_rounded_to_the_nanosecond():
    trace = build_trace({"traceEvents": [
        x("ProfilerStep#0", "user_annotation", 0, 10.00049),
        x("cudaLaunchKernel", "cuda_runtime", 1, 1, correlation=1),
        x("cudaLaunchKernel", "cuda_runtime", 2, 1, correlation=2),
        kernel("a", 3, 4, correlation=1, stream=7),
        kernel("b", 5, 4, correlation=2, stream=8),  # concurrent with a on another stream
    ]})
    step = samples_of(trace)["steps"][0]
    assert step["dur_us"] == 10.0
    assert step["gpu"] == {"busy_us": 6, "kernels": 2}
