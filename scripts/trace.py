"""The trace model: a torch.profiler / Kineto chrome trace read into plain dataclasses.

Every other stage (analysis, timelines, pages) reads traces through `load_trace`, so format
differences between Kineto versions and vendors are settled here, once:

- timestamps become microseconds since the earliest event (`Trace.origin_us` keeps the offset), for
  old absolute-epoch traces and new `baseTimeNanoseconds` ones alike;
- categories become one `kind` per event (older spellings such as `Kernel`/`Runtime`, ROCm's
  `hip_*` names and CUDA's driver launches map to the same kinds);
- a file that is not a trace raises `TraceError` with a one-line message.
"""

from __future__ import annotations

import gzip
import json
import zlib
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

# Raw `cat` spellings (lower-cased) to the kinds the rest of the package uses.
KIND_BY_CATEGORY = {
    "cpu_op": "cpu_op",
    "operator": "cpu_op",
    "user_annotation": "annotation",
    "gpu_user_annotation": "gpu_annotation",
    "cuda_runtime": "runtime",
    "runtime": "runtime",
    "hip_runtime": "runtime",
    "cuda_driver": "driver",
    "driver": "driver",
    "hip_driver": "driver",
    "kernel": "kernel",
    "gpu_memcpy": "memcpy",
    "memcpy": "memcpy",
    "gpu_memset": "memset",
    "memset": "memset",
    "cuda_sync": "sync",
    "cuda_event": "event",
    "python_function": "python",
    "cpu_instant_event": "instant",
    "overhead": "overhead",
    "trace": "trace",
    "mtia_runtime": "runtime",
    "mtia_ccp_events": "kernel",
}
GPU_ACTIVITY_KINDS = frozenset({"kernel", "memcpy", "memset"})
LAUNCH_KINDS = frozenset({"runtime", "driver"})


class TraceError(ValueError):
    """A file that cannot be read as a trace; the message is one line, fit for a user."""


@dataclass(slots=True)
class Event:
    """One complete (`ph: X`) event."""

    name: str
    kind: str
    cat: str
    ts: float  # microseconds since Trace.origin_us
    dur: float
    pid: int | str
    tid: int | str
    args: dict = field(default_factory=dict)

    @property
    def end(self) -> float:
        return self.ts + self.dur

    @property
    def correlation(self) -> int | None:
        return self.args.get("correlation")

    @property
    def is_gpu(self) -> bool:
        return self.kind in GPU_ACTIVITY_KINDS or self.kind == "gpu_annotation"


@dataclass(slots=True)
class Instant:
    name: str
    cat: str
    ts: float
    pid: int | str
    tid: int | str
    args: dict = field(default_factory=dict)


@dataclass
class Trace:
    events: list[Event]  # sorted by (ts, -dur): parents before children
    instants: list[Instant]
    metadata: dict  # the top-level keys other than traceEvents
    process_names: dict
    thread_names: dict
    origin_us: float
    source: str = ""

    @cached_property
    def gpu_activities(self) -> list[Event]:
        return [e for e in self.events if e.kind in GPU_ACTIVITY_KINDS]

    @cached_property
    def kernels(self) -> list[Event]:
        return [e for e in self.events if e.kind == "kernel"]

    @cached_property
    def cpu_events(self) -> list[Event]:
        """Everything that runs on a host thread."""
        return [e for e in self.events if not e.is_gpu]

    @cached_property
    def launches_by_correlation(self) -> dict[int, Event]:
        """Runtime/driver calls that launched GPU work, keyed by correlation id."""
        return {
            e.correlation: e
            for e in self.events
            if e.kind in LAUNCH_KINDS and e.correlation is not None
        }

    def launch_of(self, activity: Event) -> Event | None:
        cid = activity.correlation
        return self.launches_by_correlation.get(cid) if cid is not None else None

    @cached_property
    def steps(self) -> list[Event]:
        """`ProfilerStep#N` annotations on the host, in order."""
        return [
            e
            for e in self.events
            if e.kind == "annotation" and e.name.startswith("ProfilerStep#")
        ]

    @property
    def gpus(self) -> list[dict]:
        return list(self.metadata.get("deviceProperties") or [])

    @property
    def has_gpu_activity(self) -> bool:
        return bool(self.gpu_activities)

    def lane_name(self, pid, tid) -> str:
        return self.thread_names.get((pid, tid)) or f"{pid}/{tid}"


def kind_of(raw_event: dict) -> str:
    cat = str(raw_event.get("cat", "")).lower()
    kind = KIND_BY_CATEGORY.get(cat)
    if kind is not None:
        return kind
    # Some exporters leave `cat` off GPU rows; their names still say what they are.
    name = str(raw_event.get("name", ""))
    if name.startswith(("Memcpy", "memcpy")):
        return "memcpy"
    if name.startswith(("Memset", "memset")):
        return "memset"
    return "other"


def read_json(path: Path) -> dict:
    """Read `.json` or `.json.gz` (by content, not by name) into a dict, or raise TraceError."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise TraceError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise TraceError(f"{path}: is a directory, not a trace file") from None
    except OSError as err:
        raise TraceError(f"{path}: cannot read ({err.strerror})") from None
    if raw[:2] == b"\x1f\x8b":
        try:
            raw = gzip.decompress(raw)
        except (EOFError, OSError, zlib.error):
            raise TraceError(f"{path}: gzip data is truncated or corrupt") from None
    try:
        data = json.loads(raw)
    except UnicodeDecodeError:
        raise TraceError(f"{path}: not a trace (binary data, not JSON)") from None
    except json.JSONDecodeError as err:
        where = "truncated" if err.pos >= len(raw.rstrip()) - 1 else f"invalid JSON at line {err.lineno}"
        raise TraceError(f"{path}: not a readable trace ({where}: {err.msg})") from None
    if isinstance(data, list):  # the JSON Array Format of the trace-event spec
        data = {"traceEvents": data}
    if not isinstance(data, dict) or not isinstance(data.get("traceEvents"), list):
        raise TraceError(f"{path}: JSON, but not a chrome trace (no traceEvents list)")
    return data


def _number(value, default=0.0) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return default


def build_trace(data: dict, source: str = "") -> Trace:
    raw_events = data["traceEvents"]
    process_names: dict = {}
    thread_names: dict = {}
    complete: list[tuple] = []
    instants: list[tuple] = []
    for raw in raw_events:
        if not isinstance(raw, dict):
            continue
        ph = raw.get("ph")
        if ph == "X":
            complete.append(raw)
        elif ph == "M":
            args = raw.get("args") or {}
            if raw.get("name") == "process_name":
                process_names[raw.get("pid")] = str(args.get("name", ""))
            elif raw.get("name") == "thread_name":
                thread_names[(raw.get("pid"), raw.get("tid"))] = str(args.get("name", ""))
        elif ph in ("i", "I"):
            instants.append(raw)
    if not complete and raw_events and not instants:
        raise TraceError(f"{source or 'trace'}: chrome trace has no complete ('X') events to analyze")
    timed = [_number(r.get("ts"), None) for r in complete]
    timed = [t for t in timed if t is not None]
    origin = min(timed) if timed else 0.0
    events = []
    for raw in complete:
        ts = _number(raw.get("ts"), None)
        if ts is None:
            continue
        events.append(
            Event(
                name=str(raw.get("name", "")),
                kind=kind_of(raw),
                cat=str(raw.get("cat", "")),
                ts=round(ts - origin, 3),
                dur=max(_number(raw.get("dur")), 0.0),
                pid=raw.get("pid", 0),
                tid=raw.get("tid", 0),
                args=raw.get("args") or {},
            )
        )
    events.sort(key=lambda e: (e.ts, -e.dur))
    instant_events = [
        Instant(
            name=str(r.get("name", "")),
            cat=str(r.get("cat", "")),
            ts=round(_number(r.get("ts")) - origin, 3),
            pid=r.get("pid", 0),
            tid=r.get("tid", 0),
            args=r.get("args") or {},
        )
        for r in instants
    ]
    metadata = {k: v for k, v in data.items() if k != "traceEvents"}
    return Trace(
        events=events,
        instants=instant_events,
        metadata=metadata,
        process_names=process_names,
        thread_names=thread_names,
        origin_us=origin,
        source=source,
    )


def load_trace(path: str | Path) -> Trace:
    path = Path(path)
    return build_trace(read_json(path), source=str(path))


@dataclass(frozen=True)
class Window:
    """A time range of a trace to look at, with a label that says where it came from."""

    start: float
    end: float
    label: str

    @property
    def dur(self) -> float:
        return self.end - self.start


def select_window(trace: Trace, step: int | None = None, window: tuple[float, float] | None = None) -> Window:
    """The range to study: an explicit window, ProfilerStep#`step`, or by default the first
    profiled step (the whole trace when it has no steps). Raises TraceError if `step` is absent."""
    if window is not None:
        start, end = window
        if end <= start:
            raise TraceError(f"window {start}:{end} is empty (END must be after START)")
        return Window(float(start), float(end), f"{start:g}-{end:g} us")
    steps = trace.steps
    if step is not None:
        for event in steps:
            if event.name == f"ProfilerStep#{step}":
                return Window(event.ts, event.end, event.name)
        have = ", ".join(e.name.split("#")[1] for e in steps) or "none"
        raise TraceError(f"{trace.source or 'trace'}: no ProfilerStep#{step} (steps: {have})")
    if steps:
        first = steps[0]
        return Window(first.ts, first.end, first.name)
    if not trace.events:
        return Window(0.0, 0.0, "whole trace")
    return Window(0.0, max(e.end for e in trace.events), "whole trace")
