"""Large and odd traces for the benchmarks, written as a stream (the writer holds one copy of
the largest committed trace's events, never the output).

    .venv/bin/python tests/benchmarks/big_traces.py KIND OUT [--mb N]

KIND:
- `repeat`: the largest committed trace's events again and again, each copy later in time (its
  own layout: compact, Kineto's key order), up to N MB of JSON;
- `indented`: the same, pretty-printed (indent=2: a key a line);
- `sorted`: the same with every object's keys sorted (no "ph" first);
- `hugeargs`: the same, one complete event in 20 with args of 2,000 numbers and a 7 KB
  string;
- `mtia`: an MTIA-like inference trace of 455k events: 25k device events on one queue, 310k flow
  and counter events, the rest host ops (N ignored).
OUT ending in .gz is gzipped (level 1).
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LARGEST = ROOT / "traces/train_step/train_b16_s10_stack.json.gz"
COMPACT = {"separators": (",", ":")}


def _open(out: Path):
    if out.suffix == ".gz":
        return gzip.open(out, "wt", compresslevel=1, encoding="utf-8")
    return out.open("w", encoding="utf-8")


def _write(out: Path, head: dict, batches, dumps) -> None:
    with _open(out) as stream:
        stream.write(json.dumps(head, **COMPACT)[:-1] + ',"traceEvents":[')
        first = True
        for batch in batches:
            text = ",".join(map(dumps, batch))
            stream.write(text if first else "," + text)
            first = False
        stream.write("]}\n")


def repeated(mb: float, change=None):
    """Batches of events: the largest trace's, copy after copy, each later; `change` edits each
    complete event (a copy)."""
    data = json.loads(gzip.decompress(LARGEST.read_bytes()))
    events = data.pop("traceEvents")
    starts = [e["ts"] for e in events if "ts" in e]
    span = max(e["ts"] + e.get("dur", 0) for e in events if "ts" in e) - min(starts) + 1000.0
    sample = [change(dict(e)) if change and e.get("ph") == "X" else e for e in events[::50]]
    per_event = len(json.dumps(sample, **COMPACT)) / len(sample)
    total = round(mb * 1e6 / per_event)

    def batches():
        written = 0
        copy = 0
        while written < total:
            batch = []
            for event in events[:total - written]:
                if copy and "ts" in event:
                    event = {**event, "ts": event["ts"] + copy * span}
                if change is not None and event.get("ph") == "X":
                    event = change(dict(event))
                batch.append(event)
            written += len(batch)
            copy += 1
            yield batch
    return data, batches()


_EVERY = iter(range(1 << 62))


def _huge_args(event: dict) -> dict:
    if next(_EVERY) % 20 == 0:  # one complete event in 20: megabytes in all
        event["args"] = {**event.get("args", {}), "Input Dims": [list(range(1000))] * 2,
                         "note": "{\"ph\": \"X\"}, " * 500}
    return event


def mtia(seed: int = 0):
    """455k events: 25k on one device queue, 310k flows and counters, 120k host ops."""
    rng = random.Random(seed)
    events: list = [{"ph": "M", "name": "process_name", "pid": 1, "args": {"name": "mtia:0"}},
                    {"ph": "M", "name": "thread_name", "pid": 1, "tid": 7, "args": {"name": "queue 0"}}]
    t = 1_000_000.0
    device_t = t
    for i in range(25_000):
        host = []
        for j in range(4):  # an op, then its runtime call
            host.append({"ph": "X", "cat": "cpu_op", "name": f"aten::op{j}", "pid": 100, "tid": 101,
                         "ts": t, "dur": 6.5, "args": {"External id": i * 4 + j}})
            t += 7.25
        events += host
        events.append({"ph": "X", "cat": "mtia_runtime", "name": "mtiaLaunchKernel", "pid": 100,
                       "tid": 101, "ts": t, "dur": 3.0, "args": {"correlation": i}})
        device_t = max(device_t, t + 5.0)
        dur = rng.uniform(5, 40)
        events.append({"ph": "X", "cat": "mtia_ccp_events", "name": f"kernel_{i % 50}", "pid": 1,
                       "tid": 7, "ts": device_t, "dur": dur, "args": {"correlation": i, "queue": 0}})
        for k in range(6):  # flows between launch and kernel, and counters
            events.append({"ph": "s" if k % 2 == 0 else "f", "id": i * 3 + k // 2, "pid": 100,
                           "tid": 101, "ts": t, "cat": "ac2g", "name": "ac2g", "bp": "e"})
        for k in range(6):
            events.append({"ph": "C", "name": f"counter{k}", "pid": 1, "ts": device_t + k,
                           "args": {"value": rng.random()}})
        device_t += dur + rng.uniform(0, 20)
        t += 3.0
    counters = [e for e in events if e["ph"] in "sfC"]
    while len(counters) < 310_000:  # top up to the count
        extra = {"ph": "C", "name": "mem", "pid": 1, "ts": t, "args": {"bytes": len(counters)}}
        events.append(extra)
        counters.append(extra)
    while len(events) < 455_000:
        events.append({"ph": "X", "cat": "python_function", "name": "frame", "pid": 100, "tid": 101,
                       "ts": t, "dur": 1.0})
        t += 1.5
    return {"schemaVersion": 1, "deviceProperties": []}, [events]


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("kind", choices=["repeat", "indented", "sorted", "hugeargs", "mtia"])
    parser.add_argument("out", type=Path)
    parser.add_argument("--mb", type=float, default=100)
    args = parser.parse_args(argv)
    dumps = lambda e: json.dumps(e, **COMPACT)  # noqa: E731
    if args.kind == "mtia":
        head, batches = mtia()
    else:
        head, batches = repeated(args.mb, _huge_args if args.kind == "hugeargs" else None)
        if args.kind == "indented":
            dumps = lambda e: json.dumps(e, indent=2)  # noqa: E731
        elif args.kind == "sorted":
            dumps = lambda e: json.dumps(e, sort_keys=True, **COMPACT)  # noqa: E731
    _write(args.out, head, batches, dumps)


if __name__ == "__main__":
    main()
