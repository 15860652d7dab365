"""Synthetic Kineto-format traces for the timeline tests: small hand-shaped GPU traces and a large
one for the speed and size test. Each returns the dict that `scripts.tracefacts.model.trace.build_trace` reads."""

from __future__ import annotations

TEMPLATE_KERNEL = (
    "void at::native::vectorized_elementwise_kernel<8, at::native::CUDAFunctor_add<c10::BFloat16>, "
    "at::detail::Array<char*, 3> >(int, at::native::CUDAFunctor_add<c10::BFloat16>, "
    "at::detail::Array<char*, 3>)"
)
GEMM_KERNEL = "nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT"
HOST_PID = 4242
STREAM = 7
SIDE_STREAM = 20


def _metadata(host_pids=(HOST_PID,), devices=(0,), streams=(STREAM, SIDE_STREAM)) -> list[dict]:
    events = []
    for pid in host_pids:
        events.append({"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": {"name": "python"}})
        events.append(
            {
                "ph": "M",
                "name": "thread_name",
                "pid": pid,
                "tid": pid,
                "args": {"name": f"thread {pid} (python)"},
            }
        )
    for device in devices:
        events.append(
            {"ph": "M", "name": "process_name", "pid": device, "tid": 0, "args": {"name": f"GPU {device}"}}
        )
        for stream in streams:
            events.append(
                {
                    "ph": "M",
                    "name": "thread_name",
                    "pid": device,
                    "tid": stream,
                    "args": {"name": f"stream {stream}"},
                }
            )
    return events


def _top_level(events: list[dict], devices=(0,)) -> dict:
    return {
        "schemaVersion": 1,
        "deviceProperties": [
            {"id": d, "name": "NVIDIA H200", "totalGlobalMem": 150_000_000_000} for d in devices
        ],
        "distributedInfo": {"backend": "nccl", "rank": 0, "world_size": 1},
        "host_name": "secret-host-name",
        "traceName": "/home/someone/private/dir/trace.json",
        "baseTimeNanoseconds": 1_700_000_000_000_000_000,
        "displayTimeUnit": "ms",
        "traceEvents": events,
    }


class _Launcher:
    """Emits host op + launch call + GPU activity triples with fresh correlation ids."""

    def __init__(self, pid: int, device: int = 0):
        self.pid = pid
        self.device = device
        self.correlation = 1000 + pid
        self.events: list[dict] = []

    def op(self, name: str, ts: float, dur: float, cat: str = "cpu_op", **args) -> None:
        self.events.append(
            {
                "ph": "X",
                "cat": cat,
                "name": name,
                "pid": self.pid,
                "tid": self.pid,
                "ts": ts,
                "dur": dur,
                "args": args,
            }
        )

    def launch(
        self,
        op: str,
        ts: float,
        gpu_ts: float,
        gpu_dur: float,
        kernel: str = TEMPLATE_KERNEL,
        stream: int = STREAM,
        cat: str = "kernel",
        call: str = "cudaLaunchKernel",
    ) -> None:
        self.correlation += 1
        cid = self.correlation
        self.op(op, ts, 20.0)
        self.op(call, ts + 5.0, 7.0, cat="cuda_runtime", correlation=cid)
        self.events.append(
            {
                "ph": "X",
                "cat": cat,
                "name": kernel,
                "pid": self.device,
                "tid": stream,
                "ts": gpu_ts,
                "dur": gpu_dur,
                "args": {"device": self.device, "stream": stream, "correlation": cid, "grid": [128, 1, 1]},
            }
        )


def gpu_trace(steps: int = 2, host_pids=(HOST_PID,), devices=(0,)) -> dict:
    """Per step: a ProfilerStep with a 'forward' annotation, a GEMM, an elementwise kernel with a
    template name, a memcpy on a side stream, then a long host-only stretch (a big GPU gap) and a
    small trailing kernel. The first kernel starts well after the step does."""
    events = _metadata(host_pids, devices)
    for index, pid in enumerate(host_pids):
        device = devices[index % len(devices)]
        emit = _Launcher(pid, device)
        for step in range(steps):
            t = 1000.0 * step + 10.0 * index
            emit.op(f"ProfilerStep#{step + 2}", t, 1000.0, cat="user_annotation")
            emit.op("forward", t + 20, 300.0, cat="user_annotation")
            emit.launch("aten::mm", t + 30, t + 120, 170.0, kernel=GEMM_KERNEL)
            emit.launch("aten::add", t + 60, t + 300, 22.0)
            emit.launch(
                "aten::copy_",
                t + 90,
                t + 140,
                40.0,
                kernel="Memcpy HtoD (Pageable -> Device)",
                stream=SIDE_STREAM,
                cat="gpu_memcpy",
                call="cudaMemcpyAsync",
            )
            emit.op("aten::item", t + 400, 450.0)  # host work while the GPU idles
            emit.launch("aten::relu", t + 860, t + 880, 15.0)
            emit.events.append(
                {
                    "ph": "X",
                    "cat": "gpu_user_annotation",
                    "name": "forward",
                    "pid": device,
                    "tid": STREAM,
                    "ts": t + 120,
                    "dur": 202.0,
                    "args": {},
                }
            )
        events += emit.events
    events.append(
        {
            "ph": "X",
            "cat": "Trace",
            "name": "PyTorch Profiler (0)",
            "pid": "Spans",
            "tid": "PyTorch Profiler",
            "ts": 0.0,
            "dur": 1000.0 * steps,
            "args": {},
        }
    )
    return _top_level(events, devices)


def cpu_trace(depth: int = 3, steps: int = 2) -> dict:
    """A CPU-only trace whose ops nest `depth` levels inside each ProfilerStep."""
    events = _metadata(devices=())
    for step in range(steps):
        t = 500.0 * step
        events.append(
            {
                "ph": "X",
                "cat": "user_annotation",
                "name": f"ProfilerStep#{step}",
                "pid": HOST_PID,
                "tid": HOST_PID,
                "ts": t,
                "dur": 500.0,
                "args": {},
            }
        )
        for level in range(depth):
            events.append(
                {
                    "ph": "X",
                    "cat": "cpu_op",
                    "name": f"aten::level{level}",
                    "pid": HOST_PID,
                    "tid": HOST_PID,
                    "ts": t + 10 + level * 5,
                    "dur": 400.0 - level * 10,
                    "args": {},
                }
            )
    return _top_level(events, devices=())


def large_gpu_trace(n_events: int = 200_000) -> dict:
    """One ProfilerStep holding about `n_events` events: iterations of op > nested op > launch >
    kernel (kernels mostly back to back, with a longer GPU gap every 500 iterations) and, every 1000
    iterations, a 12-deep chain of Python frames."""
    pid, stream = HOST_PID, STREAM
    events = _metadata()
    iterations = n_events // 4
    span = iterations * 10.0
    events.append(
        {
            "ph": "X",
            "cat": "user_annotation",
            "name": "ProfilerStep#1",
            "pid": pid,
            "tid": pid,
            "ts": 0.0,
            "dur": span + 100.0,
            "args": {},
        }
    )
    gpu_t = 50.0
    for i in range(iterations):
        t = 10.0 + i * 10.0
        cid = 10_000 + i
        gpu_t = max(gpu_t, t + 8.0) + (400.0 if i % 500 == 499 else 0.5)
        events.append(
            {
                "ph": "X",
                "cat": "cpu_op",
                "name": "aten::linear",
                "pid": pid,
                "tid": pid,
                "ts": t,
                "dur": 9.0,
                "args": {},
            }
        )
        events.append(
            {
                "ph": "X",
                "cat": "cpu_op",
                "name": "aten::addmm",
                "pid": pid,
                "tid": pid,
                "ts": t + 1,
                "dur": 7.0,
                "args": {},
            }
        )
        events.append(
            {
                "ph": "X",
                "cat": "cuda_runtime",
                "name": "cudaLaunchKernel",
                "pid": pid,
                "tid": pid,
                "ts": t + 2,
                "dur": 4.0,
                "args": {"correlation": cid},
            }
        )
        events.append(
            {
                "ph": "X",
                "cat": "kernel",
                "name": TEMPLATE_KERNEL if i % 2 else GEMM_KERNEL,
                "pid": 0,
                "tid": stream,
                "ts": gpu_t,
                "dur": 6.0,
                "args": {"correlation": cid, "stream": stream},
            }
        )
        gpu_t += 6.0
        if i % 1000 == 0:
            for level in range(12):
                events.append(
                    {
                        "ph": "X",
                        "cat": "python_function",
                        "name": f"model.py({level}): layer_{level}",
                        "pid": pid,
                        "tid": pid,
                        "ts": t + 0.1 * level,
                        "dur": 8.5 - 0.5 * level,
                        "args": {},
                    }
                )
    return _top_level(events)
