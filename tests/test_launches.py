"""The launch calls and GPU activities as columns (scripts/tracefacts/model/launches.py), held against the Events
they replace in the analyzer's one pass: the same activities and the same call for each, from
Events or from the columns that loading keeps of those kinds where it skips them, on committed
traces and on random ones."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from scripts.tracefacts.facts.analysis import COLUMN_KINDS, facts
from scripts.tracefacts.model.launches import activity_table, launch_table
from scripts.tracefacts.model.trace import LAUNCH_KINDS, build_trace, load_trace

ROOT = Path(__file__).resolve().parent.parent
TRACES = sorted((ROOT / "traces").rglob("*.json.gz"))


def calls_of(trace) -> list:
    """(start, duration, name, thread) of each activity's launch call, by the tables."""
    table = launch_table(trace)
    rows = activity_table(trace).launch_rows(table)
    return [None if row < 0 else (table.ts[row], table.dur[row], table.names[row],
                                  table.threads[row]) for row in rows]


def activities_of(trace) -> list:
    table = activity_table(trace)
    return list(zip(table.ts, table.dur, table.names, table.kinds, table.device_of,
                    table.stream_of))


def events_of(trace) -> tuple[list, list]:
    """The same, by the Events (`Trace.gpu_activities`, `Trace.launch_of`): the activities, as
    the facts read them (their device and stream args, else their pid and tid), and the calls."""
    activities = trace.gpu_activities
    calls = map(trace.launch_of, activities)
    return ([(e.ts, e.dur, e.name, e.kind, e.pid if e.arg("device") is None else e.arg("device"),
              e.tid if e.arg("stream") is None else e.arg("stream")) for e in activities],
            [None if c is None else (c.ts, c.dur, c.name, (c.pid, c.tid)) for c in calls])


@pytest.mark.parametrize("path", [TRACES[0], TRACES[len(TRACES) // 2], TRACES[-1]],
                         ids=lambda p: p.name)
def test_committed_traces_launch_calls_from_columns_and_events(path):
    full = load_trace(path)
    lean = load_trace(path, skip_kinds=COLUMN_KINDS)
    assert set(LAUNCH_KINDS) & set(lean.skipped) and not set(LAUNCH_KINDS) & set(lean.by_kind)
    assert not lean.gpu_activities and lean.has_gpu_activity
    activities, calls = events_of(full)
    assert any(calls)
    for trace in (full, lean):
        assert activities_of(trace) == activities and calls_of(trace) == calls
    assert facts(lean) == facts(full)


def random_trace(rng: random.Random) -> dict:
    """Launch calls and kernels whose correlation ids repeat, are missing, or are too large for
    64 bits or for a float, in shuffled order and key order (some read by json, one by one)."""
    ids = [rng.randint(0, 6) for _ in range(4)] + [2 ** 60 + 1, 2 ** 70, 2 ** 53 + 1]
    events = []
    for _ in range(rng.randint(0, 40)):
        cat = rng.choice(["cuda_runtime", "cuda_driver", "kernel", "gpu_memcpy", "gpu_memset"])
        args = {} if rng.random() < 0.2 else {"correlation": rng.choice(ids)}
        for key in ("stream", "device"):
            if rng.random() < 0.3:
                args[key] = rng.randint(0, 2)
        event = {"ph": "X", "cat": cat, "name": rng.choice(["cudaLaunchKernel", "cuLaunch", "k"]),
                 "pid": rng.choice([1, 2]), "tid": rng.choice([1, 3]),
                 "ts": float(rng.randint(0, 30)), "dur": float(rng.randint(0, 4)), "args": args}
        if rng.random() < 0.2:
            event = dict(sorted(event.items()))  # not Kineto's key order
        events.append(event)
    return {"traceEvents": events}


@pytest.mark.parametrize("dense", [4, 0], ids=["by-table", "by-bisection"])
def test_random_launch_calls_from_columns_and_events(tmp_path, monkeypatch, dense):
    """The calls' rows by id, looked up in a table of rows by id or by bisection of the
    sorted ids (ids that span many values), are the Events' calls."""
    import scripts.tracefacts.model.launches

    monkeypatch.setattr(scripts.tracefacts.model.launches, "_DENSE", dense)
    rng = random.Random(5)
    for trial in range(150):
        data = random_trace(rng)
        path = tmp_path / f"t{trial}.json"
        path.write_text(json.dumps(data))
        full = build_trace(data)
        expected = events_of(full)
        assert (activities_of(full), calls_of(full)) == expected
        if not full.events:
            continue
        for skipped in (LAUNCH_KINDS, COLUMN_KINDS):
            lean = load_trace(path, skip_kinds=skipped)
            assert (activities_of(lean), calls_of(lean)) == expected


def test_streams_by_start_from_the_table_order_are_those_of_a_sort(monkeypatch):
    """The index takes each stream's activities in order of start from the activity table's
    own order (by start), equal starts put back in placing order: its gaps and idle times are
    those of a stable sort of each stream's rows (what `_by_start` does)."""
    from scripts.tracefacts.facts.index import TraceIndex

    def columns(index) -> tuple:
        return tuple(list(getattr(index, name)) for name in (
            "gap_times", "gap_codes", "gap_durs", "gap_keys", "idle_host_wait", "idle_queued",
            "idle_other"))

    rng = random.Random(9)
    for _ in range(150):
        trace = build_trace(random_trace(rng))
        if not trace.gpu_activities:
            continue
        found = columns(TraceIndex(trace))
        with monkeypatch.context() as patch:
            patch.setattr(TraceIndex, "_by_start_of_streams", lambda *args: {})
            assert found == columns(TraceIndex(trace))


def test_host_work_is_the_union_of_every_op_and_call(tmp_path):
    """The index's host work (the ops' union, joined with the calls as they are) is the union
    of all those rows, taken plainly, whether the calls overlap or not, from Events or from
    skipped columns."""
    from scripts.tracefacts.facts.terms import HOST_WORK_KINDS
    from scripts.tracefacts.facts.index import _host_work
    from scripts.tracefacts.model.intervals import union

    rng = random.Random(13)
    for trial in range(60):
        data = random_trace(rng)
        data["traceEvents"] += [
            {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": rng.choice([1, 3]),
             "ts": float(rng.randint(0, 30)), "dur": float(rng.randint(0, 9))}
            for _ in range(rng.randint(0, 20))]
        path = tmp_path / f"t{trial}.json"
        path.write_text(json.dumps(data))
        full = build_trace(data)
        rows = [(e.ts, e.end) for kind in HOST_WORK_KINDS for e in full.by_kind.get(kind, [])]
        expected = union(rows)
        for trace in (full, load_trace(path, skip_kinds=COLUMN_KINDS)):
            starts, ends = _host_work(trace)
            assert list(zip(starts, ends)) == expected


def test_idle_before_each_activity_is_that_of_a_loop_over_its_gpu(tmp_path):
    """The index's idle time before each activity, by cause, taken a column at a time, is the
    plain loop's: each GPU's activities by start (a stable sort of the placing order), the
    running maximum of the ends before each, the gap split at the end of its launch call."""
    from scripts.tracefacts.facts.index import TraceIndex

    rng = random.Random(21)
    for trial in range(150):
        data = random_trace(rng)
        path = tmp_path / f"t{trial}.json"
        path.write_text(json.dumps(data))
        for trace in (build_trace(data), load_trace(path, skip_kinds=COLUMN_KINDS)):
            if not trace.has_gpu_activity:
                continue
            index = TraceIndex(trace)
            calls = index.calls
            expected = [[0.0] * len(index.starts) for _ in range(3)]  # host wait, queued, other
            for device in set(index.device_of):
                rows = sorted((i for i, d in enumerate(index.device_of) if d == device),
                              key=index.starts.__getitem__)
                launch = index.launches[rows[0]]
                free_at = index.starts[rows[0]] if launch < 0 else min(calls.ts[launch],
                                                                        index.starts[rows[0]])
                for i in rows:
                    gap = max(index.starts[i] - free_at, 0.0)
                    launch = index.launches[i]
                    if gap and launch < 0:
                        expected[2][i] = gap
                    elif gap:
                        host = min(max(calls.ts[launch] + calls.dur[launch] - free_at, 0.0), gap)
                        expected[0][i], expected[1][i] = host, gap - host
                    free_at = max(free_at, index.ends[i])
            assert [list(index.idle_host_wait), list(index.idle_queued),
                    list(index.idle_other)] == expected
