"""The roofline: each kernel placed against what the hardware allows at its arithmetic intensity.

The caller supplies the machine (`Roof`: a peak FLOP/s and a memory bandwidth in bytes/s,
measured or from a data sheet); this module only computes. For a kernel that did `flops`
floating-point operations and moved `bytes` to and from memory in `time_us`:

- arithmetic intensity I = flops / bytes (FLOP per byte);
- achieved FLOP/s = flops / time, achieved bandwidth = bytes / time;
- the roof at I = min(peak FLOP/s, bandwidth x I): below the ridge point (peak / bandwidth) the
  memory bandwidth caps the kernel (memory-bound), above it the arithmetic does (compute-bound);
- the fraction of roof = achieved FLOP/s / roof at I (1.0: as fast as the hardware allows).

Where the FLOPs and bytes come from (`op_work`, from a CPU op's args, for the op that launched
the kernel):

- FLOPs: the op's own count when the trace has one (a `flops` arg, or `kernel_flop` as
  torch._inductor's profile analysis writes); else from `record_shapes` input dims for the
  matrix products: mm [M,K]x[K,N] and addmm: 2*M*N*K; bmm and baddbmm: 2*B*M*N*K; linear
  (input [..., K], weight [N, K]): 2*rows*N*K. Other ops: unknown (None), so not placed.
- bytes: `kernel_num_gb` x 1e9 when the trace has it; else a lower bound from the shapes and
  dtypes: every tensor input read once (elements x dtype size), plus the output written once
  (a matrix product's M x N [x B] elements in its first tensor input's dtype; any other op: as many
  elements as its largest input, which an in-place op (name ending in `_`) writes over).
  A kernel that re-reads its inputs from memory moves more: its real intensity is lower.

`kernel_work` applies this to the GPU kernels launched in a window: kernel -> its launch call
(by correlation) -> the innermost CPU op around the call on the launching thread. An op that
launched several kernels shares its FLOPs and bytes among them in proportion to their time (they
ran at the op's rate). The trace must be loaded with the ops' args
(`load_trace(path, keep_args=scripts.tracefacts.facts.ops.OP_ARG_KINDS)`).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

from .ops import enclosing
from ..model.trace import Trace, Window

# Bytes per element of the dtypes `record_shapes` names (`Input type`: the C++ scalar type).
DTYPE_BYTES = {
    "float": 4, "double": 8, "c10::Half": 2, "c10::BFloat16": 2, "bool": 1,
    "unsigned char": 1, "signed char": 1, "short int": 2, "int": 4, "long int": 8,
    "long long int": 8, "c10::complex<float>": 8, "c10::complex<double>": 16,
    "c10::complex<c10::Half>": 4, "c10::Float8_e4m3fn": 1, "c10::Float8_e5m2": 1,
    "c10::Float8_e4m3fnuz": 1, "c10::Float8_e5m2fnuz": 1, "c10::Float8_e8m0fnu": 1,
    "c10::qint8": 1, "c10::quint8": 1, "c10::qint32": 4,
    "unsigned short": 2, "unsigned int": 4, "unsigned long": 8,
}
_MM = {"aten::mm", "aten::addmm", "aten::_addmm_activation"}
_BMM = {"aten::bmm", "aten::baddbmm"}
_LINEAR = {"aten::linear"}


@dataclass(frozen=True)
class Roof:
    """The machine: peak FLOP/s and memory bandwidth (bytes/s), as the caller measured them."""

    peak_flops: float
    bandwidth: float  # bytes/s

    @property
    def ridge(self) -> float:
        """The intensity (FLOP/byte) where the two roofs meet."""
        return self.peak_flops / self.bandwidth

    def at(self, intensity: float) -> float:
        """The attainable FLOP/s at an arithmetic intensity."""
        return min(self.peak_flops, self.bandwidth * intensity)


@dataclass
class Work:
    """What one kernel (or a group of same-named kernels) did: FLOPs, bytes and GPU time."""

    name: str
    flops: float
    bytes: float
    time_us: float
    count: int = 1
    how: str = ""  # where the FLOPs and bytes came from (see op_work)


@dataclass
class Placement:
    """One kernel on the roofline."""

    name: str
    count: int
    flops: float
    bytes: float
    time_us: float
    intensity: float  # FLOP/byte
    achieved_flops: float  # FLOP/s
    achieved_bandwidth: float  # bytes/s
    roof_flops: float  # the attainable FLOP/s at this intensity
    roof_fraction: float  # achieved_flops / roof_flops
    bound: str  # "memory" (left of the ridge) or "compute"
    how: str

    def to_dict(self) -> dict:
        return asdict(self)


def place(work: Work, roof: Roof) -> Placement | None:
    """`work` on `roof`, or None when it cannot be placed (no FLOPs, bytes or time)."""
    if not (work.flops > 0 and work.bytes > 0 and work.time_us > 0):
        return None
    seconds = work.time_us * 1e-6
    intensity = work.flops / work.bytes
    achieved = work.flops / seconds
    top = roof.at(intensity)
    return Placement(
        name=work.name, count=work.count, flops=work.flops, bytes=work.bytes,
        time_us=work.time_us, intensity=intensity, achieved_flops=achieved,
        achieved_bandwidth=work.bytes / seconds, roof_flops=top, roof_fraction=achieved / top,
        bound="memory" if intensity < roof.ridge else "compute", how=work.how)


def roofline(works: list[Work], roof: Roof) -> list[Placement]:
    """Every placeable work on the roof, by time (the longest first)."""
    placed = [p for p in (place(w, roof) for w in works) if p is not None]
    return sorted(placed, key=lambda p: (-p.time_us, p.name))


# --- FLOPs and bytes from an op's args -------------------------------------------------------------


def _numel(dims) -> int | None:
    if not isinstance(dims, list) or not all(type(d) is int and d >= 0 for d in dims):
        return None
    return math.prod(dims)


def _tensors(args: dict) -> list[tuple[list[int], int]] | None:
    """The (dims, bytes per element) of each tensor input; None if a tensor's dtype is unknown."""
    dims, types = args.get("Input Dims"), args.get("Input type")
    if not isinstance(dims, list) or not isinstance(types, list):
        return None
    found = []
    for d, t in zip(dims, types):
        if not isinstance(d, list) or not d or not all(type(x) is int for x in d):
            continue  # a scalar, an empty tensor, or a list of tensors (not counted)
        size = DTYPE_BYTES.get(t) if isinstance(t, str) else None
        if size is None:
            return None
        found.append((d, size))
    return found


def _matmul_flops_and_out(name: str, dims: list) -> tuple[int, int] | None:
    """(FLOPs, output elements) of a matrix product from its input dims."""
    try:
        if name in _MM:
            a, b = (dims[1], dims[2]) if name != "aten::mm" else (dims[0], dims[1])
            (m, k), (k2, n) = a, b
        elif name in _BMM:
            a, b = (dims[1], dims[2]) if name == "aten::baddbmm" else (dims[0], dims[1])
            (batch, m, k), (_, k2, n) = a, b
            return (2 * batch * m * n * k, batch * m * n) if k == k2 else None
        elif name in _LINEAR:
            x, w = dims[0], dims[1]
            m, k = math.prod(x[:-1]), x[-1]
            n, k2 = w
        else:
            return None
    except (TypeError, ValueError, IndexError):
        return None
    return (2 * m * n * k, m * n) if k == k2 else None


def op_work(name: str, args: dict) -> tuple[float | None, float | None, str]:
    """(FLOPs, bytes, how) of one CPU op from its args (see the module's docstring); None where
    unknown."""
    how = []
    flops = next((args[k] for k in ("flops", "kernel_flop")
                  if isinstance(args.get(k), (int, float)) and args[k] > 0), None)
    if flops is not None:
        how.append("FLOPs from the trace")
    tensors = _tensors(args)
    shaped = None if tensors is None else _matmul_flops_and_out(name, args.get("Input Dims"))
    if flops is None and shaped is not None:
        flops = shaped[0]
        how.append("FLOPs from shapes")
    nbytes = None
    if isinstance(args.get("kernel_num_gb"), (int, float)) and args["kernel_num_gb"] > 0:
        nbytes = args["kernel_num_gb"] * 1e9
        how.append("bytes from the trace")
    elif tensors:
        read = sum(_numel(d) * size for d, size in tensors)
        if shaped is not None:
            written = shaped[1] * tensors[0][1]
        else:
            written = max(_numel(d) * size for d, size in tensors)
        nbytes = read + written
        how.append("bytes from shapes (inputs read once, output written once)")
    return flops, nbytes, "; ".join(how)


def kernel_work(trace: Trace, window: Window | None = None) -> list[Work]:
    """The work of each GPU kernel name launched in `window` (default: the whole trace), summed
    over its launches whose op's FLOPs and bytes are known (see the module's docstring)."""
    window = window or Window(0.0, trace.end_us, "whole trace")
    kernels, queries = [], []
    for kernel in trace.kernels:
        launch = trace.launch_of(kernel)
        if launch is not None and window.start <= launch.ts < window.end:
            kernels.append(kernel)
            queries.append(((launch.pid, launch.tid), launch.ts))
    chains = enclosing(trace.by_kind.get("cpu_op", []), queries)
    by_op: dict[int, list] = {}  # id(op) -> the op, its kernels
    for kernel, chain in zip(kernels, chains):
        if chain:
            by_op.setdefault(id(chain[-1]), [chain[-1], []])[1].append(kernel)
    works: dict[str, Work] = {}
    for op, launched in by_op.values():
        flops, nbytes, how = op_work(op.name, op.args)
        total = sum(k.dur for k in launched)
        if flops is None or nbytes is None or total <= 0:
            continue
        for kernel in launched:
            share = kernel.dur / total
            work = works.setdefault(kernel.name, Work(kernel.name, 0.0, 0.0, 0.0, 0, how))
            work.flops += flops * share
            work.bytes += nbytes * share
            work.time_us += kernel.dur
            work.count += 1
    return sorted(works.values(), key=lambda w: (-w.time_us, w.name))
