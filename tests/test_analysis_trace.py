"""The streaming trace loader: the same events as a plain `json` read for every layout and
producer, lean events, and one-line errors for files that are not traces."""

from __future__ import annotations

import gzip
import json
import math
import random
from array import array
from pathlib import Path

import pytest

from scripts.tracefacts.model.columnar import rows as oprows, orders
from scripts.tracefacts.reading import text as tracetext
from scripts.tracefacts.facts.analysis import TIMES_ONLY_KINDS, facts
from scripts.tracefacts.model.trace import KEPT_ARGS, TraceError, build_trace, load_trace, read_json
from tests.fixtures.handmade import two_steps
from tests.fixtures.synth import Spec, synth_trace, write_trace

FIXTURES = Path(__file__).parent / "fixtures"
TORCH_CPU = FIXTURES / "torch_cpu_stack.json.gz"  # torch 2.13's own layout, CPU-only, with stacks


def as_rows(trace):
    return [(e.name, e.kind, e.cat, e.ts, e.dur, e.pid, e.tid, e.args) for e in trace.events]


def assert_same_as_json_read(path: Path):
    streamed = load_trace(path)
    reference = build_trace(read_json(path), source=str(path))
    assert as_rows(streamed) == as_rows(reference)
    assert streamed.process_names == reference.process_names
    assert streamed.thread_names == reference.thread_names
    assert streamed.metadata == reference.metadata
    assert streamed.origin_us == reference.origin_us
    assert [(i.name, i.ts) for i in streamed.instants] == [(i.name, i.ts) for i in reference.instants]
    return streamed


@pytest.fixture
def small_chunks(monkeypatch):
    """Chunks of a few hundred bytes: every event crosses a chunk boundary somewhere."""
    monkeypatch.setattr(tracetext, "CHUNK_BYTES", 700)


def write_json(path: Path, data, **dump_args) -> Path:
    path.write_text(json.dumps(data, **dump_args))
    return path


def synth_file(folder: Path, style: str, layout: str) -> Path:
    """A synthetic trace of SYNTH_SPECS[style], as Kineto writes it (gzipped) or compacted."""
    data = synth_trace(SYNTH_SPECS[style])
    if layout == "kineto":
        return write_trace(data, folder / "t.json.gz")
    return write_json(folder / "t.json", data, separators=(",", ":"))


SYNTH_SPECS = {
    "cuda": Spec(steps=2, ops_per_step=30, streams=(7, 20), nccl_every=5, memcpy_every=7,
                 graph_every=11, driver_every=3, with_stack=True),
    "old": Spec(style="old", steps=2, ops_per_step=20, memcpy_every=4),
    "rocm": Spec(style="rocm", steps=2, ops_per_step=20, streams=(0, 1)),
}


@pytest.mark.parametrize("style", sorted(SYNTH_SPECS))
@pytest.mark.parametrize("layout", ["kineto", "compact"])
def test_streamed_events_equal_a_json_read(tmp_path, style, layout, small_chunks):
    path = synth_file(tmp_path, style, layout)
    trace = assert_same_as_json_read(path)
    assert trace.has_gpu_activity and len(trace.steps) == 2


def test_torch_cpu_trace_in_torch_layout(small_chunks):
    trace = assert_same_as_json_read(TORCH_CPU)
    assert not trace.has_gpu_activity
    assert {"cpu_op", "python", "annotation"} <= set(trace.by_kind)
    assert len(trace.steps) == 1


@pytest.mark.parametrize("dump_args", [
    {"sort_keys": True},  # "args" and "cat" before "ph": nothing matches the fast expression
    {"indent": 4},
    {"separators": (", ", ": ")},
])
def test_any_key_order_and_spacing(tmp_path, dump_args, small_chunks):
    assert_same_as_json_read(write_json(tmp_path / "t.json", two_steps(), **dump_args))


def test_escaped_names_and_odd_events_are_read(tmp_path, small_chunks):
    data = two_steps()
    data["traceEvents"] += [
        {"ph": "X", "cat": "python_function", "name": 'C:\\run\\"train".py(3): <module>', "pid": 1,
         "tid": 1, "ts": 1, "dur": 2},
        {"ph": "X", "cat": "cpu_op", "name": "aten::nested", "pid": 1, "tid": 1, "ts": 3, "dur": 1,
         "args": {"Input Dims": [[1, 2]], "Concrete Inputs": ["{1, 2}", "}"], "obj": {"k": 1}}},
        {"ph": "C", "name": "memory", "pid": 1, "tid": 1, "ts": 4, "args": {"bytes": 5}},
        {"ph": "i", "s": "t", "name": "[memory]", "pid": 1, "tid": 1, "ts": 5, "args": {"Bytes": 8}},
        {"name": "thread_name", "ph": "M", "pid": 1, "tid": 1, "args": {"name": "main"}},
        {"ph": "X", "cat": "Trace", "ts": 0, "dur": 300, "pid": "Spans", "tid": "PyTorch Profiler",
         "name": "PyTorch Profiler (0)", "args": {"Op count": 0}},
        {"ph": "X", "cat": "kernel", "name": "late", "pid": 0, "tid": 7, "ts": 250, "dur": -3,
         "args": {"stream": "7", "correlation": True}},
    ]
    trace = assert_same_as_json_read(write_json(tmp_path / "t.json", data, separators=(",", ":")))
    names = {e.name for e in trace.events}
    assert 'C:\\run\\"train".py(3): <module>' in names and "PyTorch Profiler (0)" in names
    assert trace.thread_names[(1, 1)] == "main"
    assert [i.name for i in trace.instants] == ["[memory]"]
    late = next(e for e in trace.events if e.name == "late")
    assert late.dur == 0 and late.args == {}  # only integer args are kept


def test_events_keep_only_the_args_the_engine_reads(tmp_path):
    trace = load_trace(write_trace(synth_trace(SYNTH_SPECS["cuda"]), tmp_path / "t.json"))
    kernel = trace.kernels[0]
    assert set(kernel.args) == {"correlation", "stream", "device"}
    assert all(set(e.args) <= set(KEPT_ARGS) for e in trace.events)
    assert all(e.args == {} for e in trace.by_kind["cpu_op"])
    assert "ac2g" not in {e.cat for e in trace.events}  # flows are not events


def test_events_are_in_trace_order_parents_first():
    data = {"traceEvents": [
        {"ph": "X", "cat": "cpu_op", "name": "child", "pid": 1, "tid": 1, "ts": 10, "dur": 1},
        {"ph": "X", "cat": "cpu_op", "name": "parent", "pid": 1, "tid": 1, "ts": 10, "dur": 5},
        {"ph": "X", "cat": "cpu_op", "name": "first", "pid": 1, "tid": 1, "ts": 3, "dur": 1},
    ]}
    trace = build_trace(data)
    assert [e.name for e in trace.events] == ["first", "parent", "child"]
    assert trace.events[0].ts == 0 and trace.origin_us == 3


def test_op_orders_by_merged_runs_are_those_of_a_sort(monkeypatch):
    """scripts.tracefacts.model.columnar.orders merges the runs already in order, in arrays, instead of sorting all rows:
    held against the sort they replace, on rows in a few runs (one per thread or flush), in many
    (a sort, by chunks merged), interleaved finely or in blocks (merged a block at a time), cut
    into ranges of one key or of many, with ties (-0.0 and 0.0 among them) and NaN."""
    rng = random.Random(7)
    limit, chunk, small = orders._MERGED_RUNS, orders._CHUNK, orders.SMALL
    for _ in range(4000):
        # A small limit of runs: the way of sorted chunks.
        monkeypatch.setattr(orders, "_MERGED_RUNS", rng.choice([limit, limit, 0, 1, 2]))
        monkeypatch.setattr(orders, "_CHUNK", rng.choice([chunk, 1, 3, 8]))  # a sort by chunks
        # keys read to cut the merge into ranges: every one, or few (ranges of many keys)
        monkeypatch.setattr(orders, "_SAMPLE", rng.choice([1, 2, 3, 64]))
        # below orders.SMALL rows, one sort: made -1 most of the time, so that merges run
        monkeypatch.setattr(orders, "SMALL", rng.choice([-1, -1, -1, small]))
        # Runs merged a block at a time (1: always), by ranges of keys (a block is too many).
        monkeypatch.setattr(orders, "_FEW_BLOCKS", rng.choice([1, 1, 4, 1 << 30]))
        n = rng.randint(0, 80)
        values = [rng.choice([float(rng.randint(0, 25)), -0.0]) for _ in range(n)]
        cuts = sorted(rng.sample(range(n + 1), min(rng.choice([1, 2, 5, n + 1]), n + 1)))
        ts = [v for a, b in zip([0, *cuts], [*cuts, n]) for v in sorted(values[a:b])]
        if ts and rng.random() < 0.05:
            ts[rng.randrange(n)] = math.nan
        dur = [float(rng.randint(0, 3)) for _ in range(n)]
        ts, dur = array("d", ts), array("d", dur)
        by_sort = sorted(range(n), key=ts.__getitem__)
        order, keys = orders.stable_order(ts)
        assert list(order) == by_sort
        assert list(map(repr, keys)) == [repr(ts[i]) for i in by_sort]
        orders.longest_first_at_equal_starts(by_sort, list(map(ts.__getitem__, by_sort)),
                                             dur.__getitem__)
        order, starts = orders.trace_order(ts, dur)
        # The pieces that the merge found, where it did: the order's rows, run by run.
        for found, parts in (orders.stable_order_in_pieces(ts)[::2],
                             orders.trace_order_in_pieces(ts, dur)[::2]):
            assert parts is False or [row for a, b in parts for row in range(a, b)] == list(found)
        # (Its starts are the stable order's: -0.0 and 0.0, reordered longest first, keep
        # their places there.)
        same = (lambda v: repr(v + 0.0)) if any(math.copysign(1.0, v) < 0 for v in ts) else repr
        assert list(order) == by_sort and list(map(same, starts)) == [same(ts[i]) for i in by_sort]


def test_coded_columns_read_as_the_lists_they_replace():
    """oprows.Coded keeps codes of 1, 2 or 4 bytes as its table grows: it reads as the list of
    its values through each widening, and reorders, slices and takes rows as the list would."""
    rng = random.Random(11)
    for _ in range(40):
        coded, plain = oprows.Coded(), []
        for _ in range(rng.randint(1, 30)):
            spread = rng.choice([3, 300, 70_000])
            items = [rng.randrange(spread) for _ in range(rng.randint(0, 3000))]
            coded.extend(items)
            plain += items
            assert len(coded) == len(plain) and list(coded) == plain
        assert coded.codes.itemsize == next(size for size in (1, 2, 4)
                                            if len(set(plain)) <= 1 << 8 * size)
        order = list(range(len(plain)))
        rng.shuffle(order)
        coded.reorder(order)
        plain = [plain[i] for i in order]
        assert list(coded) == plain and [coded[i] for i in range(len(plain))] == plain
        value = rng.choice(plain) if plain else 0
        assert coded.count(value) == plain.count(value) and coded.count(-1) == 0
        lo, hi = sorted(rng.randint(0, len(plain)) for _ in range(2))
        assert coded[lo:hi] == plain[lo:hi]
        some = [rng.randrange(len(plain)) for _ in range(len(plain) // 2)] if plain else []
        assert list(coded.take(some)) == [plain[i] for i in some] and list(coded) == plain


def test_coded_columns_extended_by_columns_are_those_extended_by_values():
    """Coded.extend_coded (another column's codes translated) reads as `extend` of its values,
    through each widening, with tables that share some values or none, equal ones of other
    types (1, 1.0, True: one value) among them."""
    rng = random.Random(17)
    for _ in range(60):
        coded, by_values = oprows.Coded(), oprows.Coded()
        for _ in range(rng.randint(1, 6)):
            spread = rng.choice([2, 40, 300, 70_000])
            offset = rng.choice([0, 5, 1000])
            items = [rng.choice([offset + rng.randrange(spread), 1, 1.0, True])
                     for _ in range(rng.randint(0, 3000))]
            other = oprows.Coded()
            other.extend(items)
            coded.extend_coded(other)
            by_values.extend(items)
            assert list(coded) == list(by_values) and list(map(type, coded)) == list(
                map(type, by_values)) and coded.codes.itemsize == by_values.codes.itemsize
            assert list(other) == items  # not changed


def test_columns_taken_in_pieces_are_those_taken_row_by_row(monkeypatch):
    """oprows.taken takes an order of a few runs of consecutive rows (a merge of a file's runs)
    as slices (`pieces`): held against the values taken one by one, for each kind of column,
    for orders of few pieces, of many (taken row by row), with rows repeated or counted from
    the end, and given as an iterator, taken a chunk of rows at a time (one row a chunk, or a
    few); and Coded's pairs widen their codes as `extend` does."""
    rng = random.Random(5)
    for _ in range(600):
        monkeypatch.setattr(oprows, "_FEW_PIECES", rng.choice([1, 2, 8, 100]))
        monkeypatch.setattr(oprows, "_CHUNK", rng.choice([1, 2, 7, 1 << 16]))  # rows a getter
        n = rng.randint(0, 60)
        order = []
        while len(order) < n:
            first = rng.randrange(-min(3, n) if rng.random() < 0.1 else 0, n)
            order += range(first, min(first + rng.randint(1, 20), n))
        order = order[:n]
        if rng.random() < 0.3:
            rng.shuffle(order)
        order = rng.choice([order, array("i", order), array("q", order)])
        values = [rng.randrange(300) for _ in range(n)]
        columns = [array("d", map(float, values)), array("q", values), array("H", values),
                   array("B", [v % 256 for v in values]), bytearray(v % 256 for v in values),
                   list(map(str, values))]
        parts = oprows.pieces(order)
        if parts is not None:
            assert [row for a, b in parts for row in range(a, b)] == list(order)
        for column in columns:
            expected = [column[i] for i in order]
            for found in (oprows.taken(column, order), oprows.taken(column, order, parts),
                          oprows.taken(column, iter(order), None)):
                assert type(found) is type(column) and list(found) == expected
                if isinstance(column, array):
                    assert found.typecode == column.typecode
        for found in (oprows.taken_all(columns, order), oprows.taken_all(columns, order, parts),
                      oprows.taken_all(columns, iter(order), None)):
            assert [list(values) for values in found] == [[column[i] for i in order]
                                                          for column in columns]
        coded, pairs, plain = oprows.Coded(), oprows.Coded(), []
        for _ in range(rng.randint(1, 4)):
            firsts = [rng.randrange(rng.choice([2, 40])) for _ in range(rng.randint(0, 400))]
            seconds = [rng.randrange(rng.choice([2, 40])) for _ in firsts]
            pairs.extend_pairs(firsts, seconds)
            plain += zip(firsts, seconds)
            coded.extend(list(zip(firsts, seconds)))
        assert list(pairs) == plain == list(coded)
        assert pairs.codes.itemsize == coded.codes.itemsize


def test_old_absolute_integer_timestamps_become_relative(tmp_path):
    trace = load_trace(write_trace(synth_trace(SYNTH_SPECS["old"]), tmp_path / "old.json"))
    assert trace.origin_us > 1e15 and trace.events[0].ts == 0
    assert {"kernel", "runtime", "cpu_op", "memcpy"} <= set(trace.by_kind)
    assert trace.rank is None and facts(trace).temporal_breakdown is not None


def test_json_array_format(tmp_path):
    path = write_json(tmp_path / "array.json", two_steps()["traceEvents"])
    assert len(load_trace(path).events) == len(build_trace(two_steps()).events)


def test_progress_reaches_the_file_size(tmp_path, monkeypatch):
    monkeypatch.setattr(tracetext, "CHUNK_BYTES", 4096)
    path = write_trace(synth_trace(SYNTH_SPECS["cuda"]), tmp_path / "t.json.gz")
    seen = []
    load_trace(path, progress=lambda done, total: seen.append((done, total)))
    assert len(seen) > 2 and seen[-1] == (path.stat().st_size, path.stat().st_size)
    assert [d for d, _ in seen] == sorted(d for d, _ in seen)


def truncated_gzip(path: Path) -> None:
    data = gzip.compress(json.dumps(two_steps()).encode())
    path.write_bytes(data[: len(data) // 2])


BAD_FILES = {
    "missing": (None, "no such file"),
    "directory": (lambda p: p.mkdir(), "is a directory"),
    "empty": (lambda p: p.write_text(""), "empty file"),
    "not_json": (lambda p: p.write_text("hello world"), "not JSON"),
    "binary": (lambda p: p.write_bytes(b"\x89PNG\r\n\x1a\n\xff\xfe"), "binary data"),
    "json_not_trace": (lambda p: p.write_text('{"a": [1, 2]}'), "no traceEvents"),
    "truncated_json": (lambda p: p.write_text(json.dumps(two_steps())[:500]), "truncated"),
    "truncated_gzip": (truncated_gzip, "truncated or corrupt"),
    "bad_json_inside": (lambda p: p.write_text(json.dumps(two_steps()).replace('"ts": 8,', '"ts": 8,,')),
                        "invalid JSON"),
    "no_complete_events": (lambda p: p.write_text('{"traceEvents": [{"ph": "M", "name": "x"}]}'),
                           "no complete"),
}


@pytest.mark.parametrize("case", sorted(BAD_FILES))
def test_bad_files_raise_one_line_trace_errors(tmp_path, case):
    make, expected = BAD_FILES[case]
    path = tmp_path / f"{case}.json"
    if make:
        make(path)
    with pytest.raises(TraceError) as error:
        load_trace(path)
    message = str(error.value)
    assert message.startswith(f"{path}: ") and expected in message and "\n" not in message


# --- leaner loads: kinds the facts read only as times ---------------------------------------

LEAN = frozenset({"python", "cpu_op"})


@pytest.mark.parametrize("style", sorted(SYNTH_SPECS))
@pytest.mark.parametrize("layout", ["kineto", "compact"])
def test_skipped_kinds_keep_their_count_and_times(tmp_path, style, layout, small_chunks):
    path = synth_file(tmp_path, style, layout)
    full, lean = load_trace(path), load_trace(path, skip_kinds=LEAN)
    assert as_rows(lean) == [row for row in as_rows(full) if row[1] not in LEAN]
    assert as_rows(build_trace(read_json(path), skip_kinds=LEAN)) == as_rows(lean)
    assert set(lean.skipped) == LEAN & set(full.by_kind) and "cpu_op" in lean.skipped
    assert lean.event_count == full.event_count == len(full.events)
    assert (lean.origin_us, lean.end_us) == (full.origin_us, full.end_us)
    for kind in LEAN:
        assert sorted(zip(*lean.times(kind))) == sorted(zip(*full.times(kind)))


@pytest.mark.parametrize("path", [TORCH_CPU, "synthetic"])
def test_facts_of_a_lean_load_are_those_of_a_full_load(tmp_path, path):
    """The CLI skips the stack frames and the ops' details (TIMES_ONLY_KINDS): same facts."""
    if path == "synthetic":
        path = write_trace(synth_trace(SYNTH_SPECS["cuda"]), tmp_path / "t.json.gz")
    full, lean = load_trace(path), load_trace(path, skip_kinds=TIMES_ONLY_KINDS)
    assert lean.skipped["python"] and not lean.by_kind.get("python")
    assert facts(lean).to_dict() == facts(full).to_dict()
    step = int(full.steps[-1].name.rsplit("#", 1)[1])
    assert facts(lean, step=step).to_dict() == facts(full, step=step).to_dict()
    window = (full.end_us / 3, full.end_us / 2)
    assert facts(lean, window=window).to_dict() == facts(full, window=window).to_dict()


def test_facts_refuse_a_load_that_skipped_what_they_read(tmp_path):
    path = write_trace(synth_trace(SYNTH_SPECS["cuda"]), tmp_path / "t.json.gz")
    with pytest.raises(ValueError, match="annotation"):
        facts(load_trace(path, skip_kinds={"annotation", "python"}))
    # GPU activities and launch calls skipped are kept as the columns the facts read.
    assert facts(load_trace(path, skip_kinds={"kernel", "runtime", "python"})) == \
        facts(load_trace(path))


def test_args_holding_an_object_are_read_by_json(tmp_path, small_chunks):
    data = two_steps()
    kernel = next(e for e in data["traceEvents"] if e.get("cat") == "kernel")
    kernel["args"] = {"wrapped": {"correlation": 99}, **kernel["args"]}
    trace = assert_same_as_json_read(write_json(tmp_path / "t.json", data, separators=(",", ":")))
    assert all(e.correlation != 99 for e in trace.events)


def test_gzip_members_and_padding_are_read_as_gzip_reads_them(tmp_path):
    text = json.dumps(two_steps()).encode()
    half = len(text) // 2
    path = tmp_path / "t.json.gz"
    path.write_bytes(gzip.compress(text[:half]) + b"\0" * 3 + gzip.compress(text[half:]) + b"\0")
    assert as_rows(load_trace(path)) == as_rows(build_trace(two_steps()))
    path.write_bytes(gzip.compress(text) + b"more")
    with pytest.raises(TraceError, match="truncated or corrupt"):
        load_trace(path)
