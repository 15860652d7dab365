"""Both reading paths split each run of events by the builder's groups (the kinds loading
skips, and the rest) before taking columns: the analyzer's load (COLUMN_KINDS kept as columns,
op_args) gives on the compiled path (scripts/tracefacts/reading/msgspec_events.py), on the standard library's, and event
by event (`add_raw`, which splits nothing) the same model, rows of a kind in file order whatever
categories they come from and wherever their kind is told by their name."""

from __future__ import annotations

import json
import random
from array import array

import pytest

from scripts.tracefacts.reading import msgspec_events as compiled, text as tracetext
from scripts.tracefacts.facts.analysis import COLUMN_KINDS
from scripts.tracefacts.model.columnar.rows import Coded
from scripts.tracefacts.model.trace import load_trace
from scripts.tracefacts.model.build import _Builder

pytest.importorskip("msgspec")

# Categories of each group, two spellings of one kind among them (memcpy), and ones whose kind
# the name tells ("" and an unknown one: memcpy, memset or other).
CATS = ["cpu_op", "python_function", "cuda_runtime", "cuda_driver", "kernel", "gpu_memcpy",
        "memcpy", "gpu_memset", "user_annotation", "gpu_user_annotation", "Trace"]
ODD_CATS = ["", "odd"]
NAMES = ["aten::mm", "Memcpy HtoD", "Memset (Device)", "cudaLaunchKernel", "k"]


def random_events(rng: random.Random, odd: bool) -> list[dict]:
    events = []
    for _ in range(600):
        cat = rng.choice(CATS + ODD_CATS if odd and rng.random() < 0.05 else CATS)
        args = {}
        # Odd runs: kept args of other types now and then (the builder's row-by-row reading).
        other = [1.0, True, "7", None, [1]] if odd and rng.random() < 0.02 else []
        for key, values in (("correlation", [1, 2, 3, *other]), ("stream", [7, 8, *other]),
                            ("device", [0]),
                            ("Sequence number", [4, 5]), ("Fwd thread id", [0, 1]),
                            ("Input Dims", [[[2, 3]], []]), ("Input type", [["float"]])):
            if rng.random() < 0.5:
                args[key] = rng.choice(values)
        event = {"ph": "X", "cat": cat, "name": rng.choice(NAMES), "pid": rng.choice([1, 2]),
                 "tid": rng.choice([1, 3]), "ts": float(rng.randint(0, 4)),  # ties: file order
                 "dur": float(rng.randint(0, 2))}
        if rng.random() < 0.9:
            event["args"] = args if rng.random() < 0.95 else None
        events.append(event)
        if rng.random() < 0.05:
            events.append({"ph": "s", "id": 1, "pid": 1, "tid": 1, "ts": 1.0, "cat": "ac2g",
                           "name": "ac2g"})
    return events


def model(trace) -> tuple:
    """Everything loading keeps: the Events, and each skipped kind's times and columns."""
    def plain(value):
        return list(value) if isinstance(value, (Coded, array, bytearray)) else value

    skipped = {kind: (list(s.ts), list(s.dur), s.columns and
                      {k: plain(v) for k, v in vars(s.columns).items() if not k.startswith("_")})
               for kind, s in trace.skipped.items()}
    events = [(e.name, e.kind, e.cat, e.ts, e.dur, e.pid, e.tid, e.args) for e in trace.events]
    return events, skipped, trace.event_count, trace.origin_us


@pytest.mark.parametrize("odd", [False, True], ids=["known_categories", "odd_categories"])
@pytest.mark.parametrize("flags", [{}, {"with_stack": 1}], ids=["no_flags", "with_stack"])
def test_grouped_runs_give_the_model_of_the_standard_path(tmp_path, monkeypatch, odd, flags):
    monkeypatch.setattr(tracetext, "CHUNK_BYTES", 3000)  # many runs, a few dozen events each
    reads = []
    read_run = compiled.Runs.read_run
    monkeypatch.setattr(compiled.Runs, "read_run",
                        lambda self, *a: reads.append(read_run(self, *a)) or reads[-1])
    for trial in range(4):
        path = tmp_path / f"t{trial}.json"
        events = random_events(random.Random(trial), odd)
        path.write_text(json.dumps({**flags, "traceEvents": events}))
        monkeypatch.delenv(compiled.DECODER_ENV, raising=False)
        reads.clear()
        fast = load_trace(path, skip_kinds=COLUMN_KINDS, op_args=None)
        assert reads.count(True) > 10  # the compiled path read most runs
        monkeypatch.setenv(compiled.DECODER_ENV, "stdlib")
        reference = load_trace(path, skip_kinds=COLUMN_KINDS, op_args=None)
        assert fast.op_args == reference.op_args == bool(flags)
        assert model(fast) == model(reference)
        one_by_one = _Builder(str(path), COLUMN_KINDS, op_args=bool(flags))
        for event in events:
            one_by_one.add_raw(event)
        assert model(fast) == model(one_by_one.finish({}))
