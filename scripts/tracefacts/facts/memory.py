"""Memory facts: what the `[memory]` events of `profile_memory=True` say, per device.

With `profile_memory=True` Kineto writes one instant event (`"ph": "i"`, name `[memory]`) per
allocation and per free of the allocator it watches (PyTorch's CPU allocator, the CUDA caching
allocator, ...), on the host thread that asked for it. Its args:

- `Bytes`: the size, positive for an allocation, negative for a free;
- `Total Allocated`: the bytes the allocator has handed out on that device, after this event;
- `Total Reserved`: what the allocator holds from the device (the CUDA caching allocator's
  segments; 0 for the CPU allocator);
- `Device Type` (c10::DeviceType: 0 CPU, 1 CUDA, ...) and `Device Id` (-1 for the CPU);
- `Addr`: the block's address, which a free repeats.

`memory_facts(trace, window)` reads them into typed facts per device: allocations and frees,
the peak allocated and reserved and when (us on the trace's time axis), the innermost CPU op
running on the allocating thread at the peak, the net change over the window and the largest
allocations. The level when the window starts counts: it is carried in from the last event
before the window (or, before the first event of all, it is the first event's total minus its
bytes: memory allocated before profiling began, which a free can reveal). `memory_series` gives
the allocated level over time, for the timeline's memory lane (scripts/tracefacts/pictures/timeline/memory_lane.py).
"""

from __future__ import annotations

import math
from array import array
from bisect import bisect_left, bisect_right
from dataclasses import asdict, dataclass, field

from .analysis import rounded
from .terms import Span
from ..model.columnar.rows import op_rows
from ..model.trace import Instant, Trace, Window

MEMORY_EVENT = "[memory]"
LARGEST = 5  # the largest allocations listed per device
# c10::DeviceType's numbers (c10/core/DeviceType.h) for the devices a trace is likely to hold.
DEVICE_TYPES = {0: "cpu", 1: "cuda", 2: "mkldnn", 3: "opengl", 4: "opencl", 5: "ideep", 6: "hip",
                7: "fpga", 8: "maia", 9: "xla", 10: "vulkan", 11: "metal", 12: "xpu", 13: "mps",
                14: "meta", 15: "hpu", 16: "ve", 17: "lazy", 18: "ipu", 19: "mtia",
                20: "privateuseone"}


@dataclass
class Allocation:
    """One allocation in the window."""

    ts_us: float
    bytes: int
    op: str | None  # the innermost CPU op on the allocating thread (None: none recorded)
    freed_us: float | None  # when the same address was freed on the device (None: not in the trace)

    @property
    def lifetime_us(self) -> float | None:
        return None if self.freed_us is None else self.freed_us - self.ts_us


@dataclass
class DeviceMemory:
    """The memory events of one device in a window."""

    device: str  # "cuda:0", "cpu", ...
    events: int
    allocations: int
    allocated_bytes: int  # summed over the allocations
    frees: int
    freed_bytes: int  # summed over the frees, as a positive number
    start_allocated: int  # the level when the window starts (see the module's docstring)
    end_allocated: int  # after the window's last event
    net_bytes: int  # end_allocated - start_allocated
    peak_allocated: int
    peak_us: float  # when the level first reached the peak (the window's start: held from before)
    peak_from_before: bool  # the peak is the level the window started with
    peak_op: str | None  # the innermost CPU op running on the allocating thread at the peak
    peak_reserved: int | None  # None: the trace gives no reserved bytes for this device
    peak_reserved_us: float | None
    largest: list[Allocation] = field(default_factory=list)  # largest first, then earliest
    peak_span: Span | None = None  # the event that reached the peak, in the file's time (places.py)


@dataclass
class MemoryFacts:
    """The memory facts of a window: one entry per device with memory events in it."""

    label: str
    start_us: float
    end_us: float
    devices: list[DeviceMemory]

    def to_dict(self) -> dict:
        """JSON-ready: times in us rounded to ns, bytes as integers."""
        return rounded(asdict(self))

    def device(self, name: str) -> DeviceMemory | None:
        return next((d for d in self.devices if d.device == name), None)


@dataclass
class MemorySeries:
    """The allocated (and reserved) level of one device over a window, as steps: each value
    holds from its time to the next one's (the first is the level the window starts with)."""

    device: str
    times_us: list[float]
    allocated: list[int]
    reserved: list[int | None]


# --- reading the events ------------------------------------------------------------------------


@dataclass(slots=True)
class _Sample:
    ts: float
    bytes: int
    allocated: int  # after this event
    reserved: int | None
    addr: int | None
    thread: tuple
    file_ts: float  # the event's ts as the file writes it (for its Span)


def _int(value) -> int | None:
    """An integer arg, or None for anything else a trace may hold there (text, NaN, a bool)."""
    if type(value) is int:
        return value
    if type(value) is float and math.isfinite(value) and value == int(value):
        return int(value)
    return None


def device_name(device_type, device_id) -> str:
    kind = DEVICE_TYPES.get(device_type, f"device type {device_type}")
    return kind if device_id is None or device_id < 0 else f"{kind}:{device_id}"


def memory_events(trace: Trace) -> list[Instant]:
    """The `[memory]` instants of a trace, in time order (file order among equal times)."""
    return sorted((i for i in trace.instants if i.name == MEMORY_EVENT), key=lambda i: i.ts)


def has_memory(trace: Trace) -> bool:
    return any(i.name == MEMORY_EVENT for i in trace.instants)


def _by_device(trace: Trace) -> dict[str, list[_Sample]]:
    """The readable memory events of each device, in time order. Without `Total Allocated` (no
    producer we know leaves it out) the level is the running sum of `Bytes`."""
    devices: dict[str, list[_Sample]] = {}
    running: dict[str, int] = {}
    for event in memory_events(trace):
        args = event.args if isinstance(event.args, dict) else {}
        size = _int(args.get("Bytes"))
        if size is None:
            continue
        name = device_name(_int(args.get("Device Type")), _int(args.get("Device Id")))
        total = _int(args.get("Total Allocated"))
        level = running.get(name, 0) + size if total is None else total
        running[name] = level
        devices.setdefault(name, []).append(_Sample(
            event.ts, size, level, _int(args.get("Total Reserved")), _int(args.get("Addr")),
            (event.pid, event.tid), trace.origin_us + event.ts))
    return dict(sorted(devices.items(), key=lambda kv: _device_order(kv[0])))


def _device_order(name: str) -> tuple:
    kind, _, number = name.partition(":")
    return (kind == "cpu", kind, int(number) if number.isascii() and number.isdigit() else -1)


# --- the facts ---------------------------------------------------------------------------------


def memory_facts(trace: Trace, window: Window | None = None, largest: int = LARGEST) -> MemoryFacts | None:
    """The memory facts of `window` (default: the whole trace), or None when the trace has no
    `[memory]` events (it was not recorded with `profile_memory=True`)."""
    window = window or Window(0.0, trace.end_us, "whole trace")
    devices = _by_device(trace)
    if not devices:
        return None
    ops = _OpIndex(trace)
    found = []
    for name, samples in devices.items():
        fact = _device_facts(name, samples, window, ops, largest)
        if fact is not None:
            found.append(fact)
    return MemoryFacts(window.label, window.start, window.end, found)


def _in_window(samples: list[_Sample], window: Window) -> tuple[int, int]:
    times = [s.ts for s in samples]
    return bisect_left(times, window.start), bisect_left(times, window.end)


def _level_before(samples: list[_Sample], lo: int) -> tuple[int, int | None]:
    """The allocated and reserved levels just before samples[lo]."""
    if lo > 0:
        return samples[lo - 1].allocated, samples[lo - 1].reserved
    first = samples[0]
    return first.allocated - first.bytes, first.reserved


def _device_facts(name: str, samples: list[_Sample], window: Window, ops: _OpIndex,
                  largest: int) -> DeviceMemory | None:
    lo, hi = _in_window(samples, window)
    if lo == hi:
        return None
    inside = samples[lo:hi]
    start, start_reserved = _level_before(samples, lo)
    peak, peak_us, peak_at = start, window.start, None
    for sample in inside:
        if sample.allocated > peak:
            peak, peak_us, peak_at = sample.allocated, sample.ts, sample
    reserved = [(s.reserved, s.ts) for s in inside if s.reserved is not None]
    if start_reserved is not None:
        reserved.insert(0, (start_reserved, window.start))
    top_reserved = max(reserved, key=lambda rt: (rt[0], -rt[1]), default=None)
    allocs = [s for s in inside if s.bytes > 0]
    frees = [s for s in inside if s.bytes < 0]
    biggest = sorted(allocs, key=lambda s: (-s.bytes, s.ts))[:largest]
    freed = _frees_by_address(samples)
    return DeviceMemory(
        device=name,
        events=len(inside),
        allocations=len(allocs),
        allocated_bytes=sum(s.bytes for s in allocs),
        frees=len(frees),
        freed_bytes=-sum(s.bytes for s in frees),
        start_allocated=start,
        end_allocated=inside[-1].allocated,
        net_bytes=inside[-1].allocated - start,
        peak_allocated=peak,
        peak_us=peak_us,
        peak_from_before=peak_at is None,
        peak_op=None if peak_at is None else ops.innermost(peak_at.thread, peak_at.ts),
        peak_reserved=None if top_reserved is None else top_reserved[0],
        peak_reserved_us=None if top_reserved is None else top_reserved[1],
        largest=[Allocation(s.ts, s.bytes, ops.innermost(s.thread, s.ts), _freed_after(freed, s))
                 for s in biggest],
        peak_span=None if peak_at is None else Span(
            peak_at.file_ts, peak_at.file_ts, *peak_at.thread, peak_at.file_ts, 0.0),
    )


def _frees_by_address(samples: list[_Sample]) -> dict[int, list[float]]:
    frees: dict[int, list[float]] = {}
    for s in samples:
        if s.bytes < 0 and s.addr is not None:
            frees.setdefault(s.addr, []).append(s.ts)
    return frees


def _freed_after(frees: dict[int, list[float]], sample: _Sample) -> float | None:
    """When the block allocated by `sample` was freed: the first free of its address after it."""
    times = frees.get(sample.addr, []) if sample.addr is not None else []
    at = bisect_right(times, sample.ts)
    return times[at] if at < len(times) else None


def memory_series(trace: Trace, window: Window | None = None) -> list[MemorySeries]:
    """Each device's allocated and reserved levels over `window` (default: the whole trace),
    as steps: the level the window starts with, then one value per event in it."""
    window = window or Window(0.0, trace.end_us, "whole trace")
    series = []
    for name, samples in _by_device(trace).items():
        lo, hi = _in_window(samples, window)
        if lo == hi:
            continue
        start, start_reserved = _level_before(samples, lo)
        inside = samples[lo:hi]
        series.append(MemorySeries(
            name, [window.start] + [s.ts for s in inside], [start] + [s.allocated for s in inside],
            [start_reserved] + [s.reserved for s in inside]))
    return series


class _OpIndex:
    """The CPU ops of each host thread, in trace order, to find the one running at a time."""

    def __init__(self, trace: Trace):
        # Arrays, not lists of ints and floats: a trace may have millions of ops.
        self.by_thread: dict[tuple, array] = {}  # rows of `self.ops`
        self.ops = op_rows(trace, "cpu_op")  # Events or columns (scripts.tracefacts.model.columnar.rows)
        for row, thread in enumerate(self.ops.threads if self.ops is not None else ()):
            rows = self.by_thread.get(thread)
            if rows is None:
                rows = self.by_thread[thread] = array("q")
            rows.append(row)
        ts = self.ops.ts if self.ops is not None else []
        self.starts = {key: array("d", map(ts.__getitem__, rows))
                       for key, rows in self.by_thread.items()}

    def innermost(self, thread: tuple, ts: float) -> str | None:
        """The innermost op on `thread` running at `ts`. Ops nest, sorted by start (the longer
        first among equal starts), so walking back from `ts` the first op that still runs at
        `ts` is the one that started last: the innermost."""
        rows = self.by_thread.get(thread)
        if not rows:
            return None
        end, names = self.ops.end, self.ops.names
        for i in range(bisect_right(self.starts[thread], ts) - 1, -1, -1):
            if end[rows[i]] >= ts:
                return names[rows[i]]
        return None


# --- reading them out ----------------------------------------------------------------------------


def format_bytes(count: int | float) -> str:
    """A byte count in binary units, as PyTorch's memory tools print them: 512 B, 1.50 KiB,
    3.25 GiB; signed when negative."""
    sign, size = ("-", -count) if count < 0 else ("", count)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if size < 1024 or unit == "TiB":
            return f"{sign}{size:,.0f} {unit}" if unit == "B" else f"{sign}{size:,.2f} {unit}"
        size /= 1024
    raise AssertionError("unreachable")


def memory_text(memory: MemoryFacts) -> list[str]:
    """The memory section of the analyzer's summary (names bounded here, escaped by the
    caller's printer)."""
    from ..model.names import bounded
    from ..model.units import format_us

    lines = [f"memory ([memory] events of profile_memory=True, in {bounded(memory.label)}):"]
    for d in memory.devices:
        lines.append(
            f"  {d.device}: {d.allocations:,} allocations ({format_bytes(d.allocated_bytes)}), "
            f"{d.frees:,} frees ({format_bytes(d.freed_bytes)}); allocated "
            f"{format_bytes(d.start_allocated)} at the start, {format_bytes(d.end_allocated)} at "
            f"the end (net {'+' if d.net_bytes >= 0 else ''}{format_bytes(d.net_bytes)})")
        where = ("held from before the window" if d.peak_from_before else
                 f"at {format_us(d.peak_us)}" + (f", in {bounded(d.peak_op)}" if d.peak_op else ""))
        peak = f"    peak allocated {format_bytes(d.peak_allocated)} {where}"
        if d.peak_reserved:
            peak += (f"; peak reserved {format_bytes(d.peak_reserved)} at "
                     f"{format_us(d.peak_reserved_us)}")
        lines.append(peak)
        for a in d.largest:
            life = "not freed in the trace" if a.freed_us is None else \
                f"freed {format_us(a.lifetime_us)} later"
            lines.append(f"    {format_bytes(a.bytes):>12} at {format_us(a.ts_us)}"
                         + (f" in {bounded(a.op)}" if a.op else "") + f", {life}")
    return lines
