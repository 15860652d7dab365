"""The sections the analyzer prints after the facts, where a trace has them: the profiler's other
half (memory, shapes and stacks), a training loop's phases, and the host syncs that drain the GPU.

`details(trace, window)` gathers the memory facts (scripts/tracefacts/facts/memory.py), the shapes and stacks
(scripts/tracefacts/facts/ops.py), the training steps' phases (scripts/tracefacts/facts/training.py) and the
host syncs (scripts/tracefacts/facts/syncs.py) of the window the facts describe; `details_lines` and
`details_json` are what `analyze.py` prints after the facts, as text or inside the JSON object. A
trace without any of them gives None, and one without some leaves their sections out: the
analyzer then prints exactly what it printed before they existed.

The facts engine loads CPU ops and Python frames as times only, and with them, in the same pass,
what these facts read where the profiler's own `record_shapes` / `with_stack` / `profile_memory`
flags come before the events (`load_trace(op_args=None)`, as Kineto writes them). Where they do
not, `needs_op_args` says from that load whether the trace holds what these facts read (memory
events or Python frames), so that the analyzer loads it again with the ops' args only then.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..model.names import printable
from .memory import MemoryFacts, has_memory, memory_facts, memory_text
from .ops import OpFacts, op_facts, op_text
from .syncs import SyncFacts, sync_facts, sync_text
from .training import TrainingFacts, training_facts, training_text
from ..model.trace import PROFILER_FLAGS, Trace, Window


@dataclass
class Details:
    memory: MemoryFacts | None
    ops: OpFacts | None
    training: TrainingFacts | None = None
    syncs: SyncFacts | None = None


def needs_op_args(trace: Trace) -> bool:
    """Whether shapes, stacks or memory facts may come out of this trace, which was loaded
    without the args of its ops (or without the ops)."""
    if len(trace.skipped.get("python", ())) or trace.by_kind.get("python"):
        return True
    if has_memory(trace):
        return True
    return any(trace.metadata.get(flag) in (1, True) for flag in PROFILER_FLAGS)


def details(trace: Trace, window: Window | None = None) -> Details | None:
    """Memory, shapes, stacks, training phases and host syncs of `window` (default: the whole
    trace); None without any."""
    memory = memory_facts(trace, window)
    memory = memory if memory is not None and memory.devices else None
    ops = op_facts(trace, window) if trace.op_args or "cpu_op" not in trace.skipped else None
    found = Details(memory, ops, training_facts(trace, window), sync_facts(trace, window))
    if found == Details(None, None):
        return None
    return found


def details_lines(found: Details) -> list[str]:
    """The text sections, every line printable on a terminal (names from the trace escaped)."""
    lines = memory_text(found.memory) if found.memory is not None else []
    lines += op_text(found.ops) if found.ops is not None else []
    lines += training_text(found.training) if found.training is not None else []
    lines += sync_text(found.syncs) if found.syncs is not None else []
    return [printable(line) for line in lines]


def details_json(found: Details | None) -> dict:
    """The keys `analyze.py --json` adds: `memory`, `ops`, `training` and `host_syncs` where the
    trace has them."""
    if found is None:
        return {}
    out = {}
    if found.memory is not None:
        out["memory"] = found.memory.to_dict()
    if found.ops is not None:
        out["ops"] = found.ops.to_dict()
    if found.training is not None:
        out["training"] = found.training.to_dict()
    if found.syncs is not None:
        out["host_syncs"] = found.syncs.to_dict()
    return out
