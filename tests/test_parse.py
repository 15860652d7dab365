"""The trace reader (scripts/tracefacts/reading/events.py): a real trace reshaped into other valid JSON layouts reads
as json reads it, from a file, a pipe or stdin; in time linear in the size whatever the layout;
and what is not a readable trace gets a one-line TraceError naming the file."""

from __future__ import annotations

import gzip
import io
import json
import os
import random
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from scripts.series.runs import catalog
from scripts.tracefacts.reading import msgspec_events as compiled, events as parse, text as tracetext
from scripts.tracefacts.facts.analysis import facts
from scripts.tracefacts.model.trace import TraceError, build_trace, load_trace, read_json
from tests.fixtures.handmade import two_steps

ROOT = Path(__file__).resolve().parent.parent
# A real H200 trace (LLM decode, torch.compile): 2263 events of every kind Kineto writes.
REAL = ROOT / "traces/05_llm_inference/decode_b1_p512_static_compile.json.gz"
# 5 MB of what a splitter could mistake for structure: braces, brackets, quotes, backslashes,
# "ph" keys, and a character outside ASCII (JSON escapes the quotes and the backslashes).
LONG = ('{"ph": "X", "cat": "kernel"}, [{"ph":"M"}] \\" \\\\ é ' * 120_000)[:5_000_000]


@pytest.fixture(scope="module")
def real() -> dict:
    return json.loads(gzip.decompress(REAL.read_bytes()))


@pytest.fixture(autouse=True, params=["stdlib", "compiled"])
def decoder(request, monkeypatch):
    """Every test on both paths: the standard library's, and msgspec's where it is installed
    (the `fast` extra), which must give the same model."""
    if request.param == "compiled":
        pytest.importorskip("msgspec")
        monkeypatch.delenv(compiled.DECODER_ENV, raising=False)
    else:
        monkeypatch.setenv(compiled.DECODER_ENV, "stdlib")
    return request.param


@pytest.fixture(params=[False, True], ids=["inline_gunzip", "threaded_gunzip"])
def threaded(request, monkeypatch):
    monkeypatch.setattr(tracetext, "THREADED_GUNZIP", request.param)


def rows(trace) -> list[tuple]:
    return [(e.name, e.kind, e.cat, e.ts, e.dur, e.pid, e.tid, e.args) for e in trace.events]


def facts_of(trace) -> dict:
    found = facts(trace).to_dict()
    found.pop("source")
    return found


def same_trace(loaded, reference) -> None:
    """Everything a Trace holds, equal."""
    assert rows(loaded) == rows(reference)
    assert [(i.name, i.ts, i.args) for i in loaded.instants] == \
        [(i.name, i.ts, i.args) for i in reference.instants]
    assert (loaded.process_names, loaded.thread_names) == \
        (reference.process_names, reference.thread_names)
    assert loaded.metadata == reference.metadata
    assert loaded.origin_us == reference.origin_us
    assert loaded.event_count == reference.event_count


def reversed_keys(value):
    if isinstance(value, dict):
        return {k: reversed_keys(value[k]) for k in reversed(list(value))}
    if isinstance(value, list):
        return [reversed_keys(v) for v in value]
    return value


def one_event_per_line(data: dict) -> str:
    """traceEvents between the other keys, one event a line."""
    keys = [k for k in data if k != "traceEvents"]
    head = {k: data[k] for k in keys[:3]}
    tail = {k: data[k] for k in keys[3:]}
    events = ",\n".join(json.dumps(e) for e in data["traceEvents"])
    return (json.dumps(head)[:-1] + ',\n"traceEvents": [\n' + events + "\n],\n"
            + json.dumps(tail)[1:] + "\n")


def with_long_name(data: dict) -> dict:
    data = json.loads(json.dumps(data))
    op = next(e for e in data["traceEvents"] if e.get("cat") == "cpu_op")
    op["name"] = LONG
    return data


def with_long_args(data: dict) -> dict:
    data = json.loads(json.dumps(data))
    kernel = next(e for e in data["traceEvents"] if e.get("cat") == "kernel")
    kernel["args"] = {"long": LONG, **kernel["args"], "nested": {"ph": "X", "a": [LONG[:99]]}}
    return data


def with_ph_in_last_args(data: dict) -> dict:
    data = json.loads(json.dumps(data))
    data["traceEvents"][-1].setdefault("args", {})["ph"] = "X"
    data["traceEvents"][-1]["args"]["inner"] = {"ph": "X", "name": "not an event"}
    return data


def with_boundaries_in_names(data: dict) -> dict:
    """Every other CPU op's name holds what looks like the end of one event and the start of
    another (where the compiled path may cut, and must then leave the run to the other path)."""
    data = json.loads(json.dumps(data))
    for i, event in enumerate(data["traceEvents"]):
        if i % 2 and event.get("cat") == "cpu_op":
            event["name"] += '"},{"ph":"X","name":"'
    return data


def with_events_lacking_ph(data: dict) -> dict:
    """Every third event also as a copy without "ph" (events that are not complete ones)."""
    data = json.loads(json.dumps(data))
    events = []
    for i, event in enumerate(data["traceEvents"]):
        events.append(event)
        if i % 3 == 0:
            events.append({k: v for k, v in event.items() if k != "ph"})
    data["traceEvents"] = events
    return data


# name -> (the text of the reshaped file, the data json reads from it)
RESHAPES = {
    "sorted_keys": lambda d: (json.dumps(d, sort_keys=True), d),
    "indent_2": lambda d: (json.dumps(d, indent=2), d),
    "one_event_per_line": lambda d: (one_event_per_line(d), d),
    "keys_reversed": lambda d: (json.dumps(reversed_keys(d)), d),
    "spaces_everywhere": lambda d: (json.dumps(d, indent="\t", separators=(" ,  ", " :\t")), d),
    "bom_and_crlf": lambda d: ("\ufeff" + json.dumps(d, indent=1).replace("\n", "\r\n"), d),
    "top_level_array": lambda d: (json.dumps(d["traceEvents"]), {"traceEvents": d["traceEvents"]}),
    "long_string_in_metadata": lambda d: (json.dumps({"note": LONG, **d}), {"note": LONG, **d}),
    "long_string_in_a_name": lambda d: (json.dumps(with_long_name(d)), with_long_name(d)),
    "long_string_in_args": lambda d: (json.dumps(with_long_args(d)), with_long_args(d)),
    "ph_in_the_last_events_args": lambda d: (json.dumps(with_ph_in_last_args(d)),
                                             with_ph_in_last_args(d)),
    "boundaries_in_names": lambda d: (json.dumps(with_boundaries_in_names(d)),
                                      with_boundaries_in_names(d)),
    "events_lacking_ph": lambda d: (json.dumps(with_events_lacking_ph(d)),
                                    with_events_lacking_ph(d)),
}


@pytest.mark.parametrize("chunk", ["default_chunks", "small_chunks_gzip"])
@pytest.mark.parametrize("reshape", sorted(RESHAPES))
def test_reshaped_real_trace_reads_as_json_reads_it(tmp_path, real, reshape, chunk, monkeypatch):
    text, data = RESHAPES[reshape](real)
    path = tmp_path / "t.json"
    if chunk == "small_chunks_gzip":  # every event crosses a chunk boundary somewhere
        monkeypatch.setattr(tracetext, "CHUNK_BYTES", 1000)
        path = tmp_path / "t.json.gz"
        half = len(text) // 2  # two gzip members, split mid-text
        path.write_bytes(gzip.compress(text[:half].encode()) + gzip.compress(text[half:].encode()))
    else:
        path.write_text(text)
    loaded = load_trace(path)
    same_trace(loaded, build_trace(data, source=str(path)))
    original = load_trace(REAL)
    if reshape == "top_level_array":  # no metadata: no GPU names
        original.metadata = {}
    assert facts_of(loaded) == facts_of(original)
    if reshape not in ("long_string_in_a_name", "top_level_array", "long_string_in_metadata",
                       "ph_in_the_last_events_args", "boundaries_in_names"):  # these change what the trace holds
        same_trace(loaded, original)


def test_lean_loads_of_reshaped_traces_agree(tmp_path, real):
    """skip_kinds reads the times-only events through their own alternative: same facts."""
    lean = frozenset({"python", "cpu_op"})
    reference = load_trace(REAL, skip_kinds=lean)
    for reshape in ("sorted_keys", "one_event_per_line", "long_string_in_args"):
        path = tmp_path / f"{reshape}.json"
        path.write_text(RESHAPES[reshape](real)[0])
        loaded = load_trace(path, skip_kinds=lean)
        assert rows(loaded) == rows(reference)
        assert {k: (s.ts, s.dur) for k, s in loaded.skipped.items()} == \
            {k: (s.ts, s.dur) for k, s in reference.skipped.items()}


def test_escapes_and_odd_numbers_read_as_json_reads_them(tmp_path, monkeypatch):
    """Events in Kineto's layout whose names, args or numbers the columns do not take: json
    reads them, in their place among the others (ties in start and duration keep file order)."""
    monkeypatch.setattr(tracetext, "CHUNK_BYTES", 400)
    data = two_steps()
    base = {"ph": "X", "cat": "kernel", "pid": 0, "tid": 7, "ts": 40, "dur": 5,
            "args": {"stream": 7, "correlation": 1}}
    odd = [
        {**base, "name": 'tab\tquote" backslash\\ \u2603'},
        {**base, "name": "infinite duration", "dur": float("inf")},  # json's Infinity
        {**base, "name": "big", "ts": 1e3, "dur": 1e-2},
        {**base, "name": "quoted brace", "args": {"a": "}", "stream": 7}},
        {**base, "name": "escaped args", "args": {"a": "\\\"", "stream": 8}},
        {**base, "name": "deep", "args": {"a": [[[[[[[[1]]]]]]]], "correlation": 3}},
        {**base, "name": "plain"},  # same start and duration as the others: order matters
        7, "a string", None, [1, {"ph": "X"}],  # elements that are not events
    ]
    data["traceEvents"][3:3] = odd
    path = tmp_path / "t.json"
    path.write_text(json.dumps(data, separators=(",", ":")))
    loaded = load_trace(path)
    same_trace(loaded, build_trace(read_json(path), source=str(path)))
    names = {e.name: e for e in loaded.events}
    assert 'tab\tquote" backslash\\ \u2603' in names and names["deep"].correlation == 3
    assert names["escaped args"].args == {"stream": 8}


TRAPS = [  # args strings where a '}' would end Kineto's `[^}]*+` inside the string
    {"a": "}}"},
    {"a": "}}, {"},  # what follows the string then looks like another object
    {"a": "} } ,{}, {", "correlation": 4},
    {"a": "x", "b": "}}, {\"ph\": \"X\"}, {"},
    {"a": {"nested": 1}, "stream": 3},
]


@pytest.mark.parametrize("lean", [False, True], ids=["full", "lean"])
def test_braces_inside_strings_of_kineto_events(tmp_path, monkeypatch, lean):
    """Kineto-layout events whose args or flows hold '}' in strings (or nested objects), at
    every offset from the end of a chunk: read as json reads them."""
    events = two_steps()["traceEvents"]
    for i, args in enumerate(TRAPS):
        events.insert(2 + 3 * i, {"ph": "X", "cat": "kernel", "name": f"trap {i}", "pid": 0,
                                  "tid": 7, "ts": 30 + i, "dur": 1, "args": args})
        events.insert(3 + 3 * i, {"ph": "X", "cat": "python_function", "name": f"frame {i}",
                                  "pid": 1, "tid": 1, "ts": 3 + i, "dur": 1, "args": args})
        events.insert(4 + 3 * i, {"ph": "f", "id": i, "pid": 1, "tid": 1, "ts": 5, "cat": "ac2g",
                                  "name": "}}, {", "bp": "e"})
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"traceEvents": events}, separators=(",", ":")))
    skip = frozenset({"python"}) if lean else frozenset()
    reference = build_trace(read_json(path), source=str(path), skip_kinds=skip)
    for chunk in range(150, 1200, 7):
        monkeypatch.setattr(tracetext, "CHUNK_BYTES", chunk)
        same_trace(load_trace(path, skip_kinds=skip), reference)


def test_reads_a_pipe_stdin_and_a_file_object(tmp_path, real, threaded):
    text = json.dumps(real).encode()
    packed = gzip.compress(text)
    reference = rows(load_trace(REAL))

    def feed(fd: int, data: bytes):
        with os.fdopen(fd, "wb") as out:
            out.write(data)

    for data in (text, packed):
        read_end, write_end = os.pipe()  # a pipe: nothing to seek, no size
        writer = threading.Thread(target=feed, args=(write_end, data))
        writer.start()
        with os.fdopen(read_end, "rb") as stream:
            assert rows(load_trace(stream)) == reference
        writer.join()
        assert rows(load_trace(io.BytesIO(data))) == reference
    with pytest.raises(TraceError, match="opened as text"):
        load_trace(io.StringIO(text.decode()))

    fifo = tmp_path / "fifo"  # what process substitution hands over: a path that is a pipe
    os.mkfifo(fifo)
    writer = threading.Thread(target=lambda: fifo.write_bytes(packed))
    writer.start()
    assert rows(load_trace(fifo)) == reference
    writer.join()

    script = ("import json, sys; from scripts.tracefacts.model.trace import load_trace; "
              "t = load_trace(sys.argv[1]); print(json.dumps([len(t.events), t.origin_us]))")
    for arg in ("-", Path("-")):
        done = subprocess.run([sys.executable, "-c", script, str(arg)], input=packed,
                              capture_output=True, cwd=ROOT, timeout=60)
        assert done.returncode == 0, done.stderr.decode()
        assert json.loads(done.stdout) == [len(reference), load_trace(REAL).origin_us]


def test_reads_gzip_where_threads_cannot_start(monkeypatch):
    """Pyodide has no threads: Thread.start raises RuntimeError, and gzip is read inline."""
    def no_threads(self):
        raise RuntimeError("can't start new thread")

    started = []
    monkeypatch.setattr(tracetext.threading.Thread, "start", no_threads)
    monkeypatch.setattr(tracetext, "_gunzipped", lambda read, real=tracetext._gunzipped: (
        started.append(1) or real(read)))
    assert rows(load_trace(REAL)) == rows(build_trace(read_json(REAL)))
    assert started == [1]


def test_progress_counts_source_bytes_and_says_when_the_size_is_unknown(tmp_path):
    seen = []
    load_trace(io.BytesIO(REAL.read_bytes()), progress=lambda *done_total: seen.append(done_total))
    assert seen[-1] == (REAL.stat().st_size, 0)  # a file object without a file: size unknown
    assert [d for d, _ in seen] == sorted(d for d, _ in seen)


def test_decompressed_size_limit(tmp_path, monkeypatch, threaded):
    # 40 MB of events in 60 kB of gzip: refused at the limit, before they are all read.
    event = b'{"ph": "X", "cat": "cpu_op", "name": "a", "pid": 1, "tid": 1, "ts": 1, "dur": 1},'
    bomb = tmp_path / "bomb.json.gz"
    bomb.write_bytes(gzip.compress(b'{"traceEvents": [' + event * (40_000_000 // len(event))
                                   + b"{}]}"))
    start = time.perf_counter()
    with pytest.raises(TraceError) as error:
        load_trace(bomb, max_bytes=4 << 20)
    message = str(error.value)
    assert message.startswith(f"{bomb}: ") and "\n" not in message
    assert "larger than 4 MiB once decompressed" in message and parse.MAX_BYTES_ENV in message
    assert time.perf_counter() - start < 5
    monkeypatch.setenv(parse.MAX_BYTES_ENV, "2M")
    with pytest.raises(TraceError, match="larger than 2 MiB once decompressed"):
        load_trace(bomb)
    plain = tmp_path / "plain.json"
    plain.write_text(json.dumps(two_steps()))
    monkeypatch.setenv(parse.MAX_BYTES_ENV, "100")
    with pytest.raises(TraceError, match=r"larger than 100 bytes, the limit"):
        load_trace(plain)
    assert load_trace(plain, max_bytes=1 << 20).events  # the parameter wins over the variable
    monkeypatch.setenv(parse.MAX_BYTES_ENV, "lots")
    with pytest.raises(TraceError, match="is not a size"):
        load_trace(plain)
    monkeypatch.delenv(parse.MAX_BYTES_ENV)
    assert parse.max_bytes_default() == parse.DEFAULT_MAX_BYTES == 4 << 30


@pytest.mark.parametrize("where", ["metadata", "event"])
def test_one_huge_value_is_refused_before_it_is_all_in_memory(tmp_path, where):
    """A gzip bomb of one long string: the buffer holds whole values, so one may take at most
    1/16 of the size limit."""
    pad = b'"' + b" " * 40_000_000 + b'"'
    content = (b'{"pad": ' + pad + b', "traceEvents": []}' if where == "metadata"
               else b'{"traceEvents": [{"ph": "X", "ts": 1, "dur": 1, "name": ' + pad + b"}]}")
    bomb = tmp_path / "bomb.json.gz"
    bomb.write_bytes(gzip.compress(content))
    with pytest.raises(TraceError) as error:
        load_trace(bomb, max_bytes=64 << 20)
    message = str(error.value)
    assert message.startswith(f"{bomb}: one value larger than 4 MiB, 1/16 of the limit")
    assert parse.MAX_BYTES_ENV in message and "\n" not in message
    trace = load_trace(bomb, max_bytes=1 << 30)  # a limit of 1 GiB: values up to 64 MiB
    assert len(trace.events[0].name if where == "event" else trace.metadata["pad"]) == 40_000_000


def cut_points(size: int, count: int, seed: int) -> list[int]:
    rng = random.Random(seed)
    return sorted({rng.randrange(1, size) for _ in range(count)})


@pytest.mark.parametrize("chunk", [tracetext.CHUNK_BYTES, 64])
def test_truncation_anywhere_is_a_trace_error(tmp_path, chunk, monkeypatch):
    monkeypatch.setattr(tracetext, "CHUNK_BYTES", chunk)
    data = two_steps()
    data["traceEvents"][2]["name"] = "naïve ✓ op"  # cuts inside multi-byte characters too
    data["traceEvents"].append({"ph": "X", "cat": "cpu_op", "name": "x" * 300, "pid": 1,
                                "tid": 1, "ts": 1, "dur": 1, "args": {"deep": [[[[[[[1]]]]]]]}})
    for layout in ({"separators": (",", ":")}, {"indent": 2}, {"sort_keys": True}):
        raw = json.dumps(data, ensure_ascii=False, **layout).encode()
        end = len(raw.rstrip())
        path = tmp_path / "cut.json"
        for cut in cut_points(end, 150, seed=len(raw)):
            path.write_bytes(raw[:cut])
            with pytest.raises(TraceError) as error:
                load_trace(path)
            message = str(error.value)
            assert message.startswith(f"{path}: ") and "\n" not in message
            assert "truncated" in message, (cut, message)
    packed = gzip.compress(json.dumps(data).encode())
    for cut in cut_points(len(packed), 60, seed=1):
        path.write_bytes(packed[:cut])
        with pytest.raises(TraceError, match="gzip data is truncated or corrupt"):
            load_trace(path)


def test_invalid_json_says_where(tmp_path):
    text = json.dumps(two_steps(), indent=2).splitlines()
    line = next(i for i, t in enumerate(text) if '"dur"' in t and i > 20)
    text[line] = text[line].replace('"dur"', '"dur" "dur"', 1)
    path = tmp_path / "bad.json"
    path.write_text("\n".join(text))
    with pytest.raises(TraceError) as error:
        load_trace(path)
    message = str(error.value)
    assert message.startswith(f"{path}: not a readable trace (invalid JSON")
    assert f"line {line + 1}, column" in message and "\n" not in message


BAD = {
    "empty": (b"", "not a trace (empty file)"),
    "spaces_only": (b"  \n ", "not a trace (empty file)"),
    "not_json": (b"hello", "not a trace (not JSON)"),
    "binary": (b"{\xff\xfe\x00", "binary data"),
    "not_a_trace": (b'{"a": [1]}', "no traceEvents list"),
    "events_not_a_list": (b'{"traceEvents": {"ph": "X"}}', "no traceEvents list"),
    "two_event_lists": (b'{"traceEvents": [], "traceEvents": []}', "two traceEvents lists"),
    "text_after_the_trace": (b'{"traceEvents": []} {}', "more text after the trace"),
    "comma_before_bracket": (b'{"traceEvents": [{"ph": "i", "ts": 1},]}', "',' before ']'"),
    "missing_comma": (b'{"traceEvents": [{"ph": "i"} {"ph": "i"}]}', "unexpected '{' between"),
    "bad_key": (b'{"traceEvents": [], 3: 4}', "unexpected '3'"),
    "deep": (b'{"traceEvents": [' + b"[" * 100_000 + b"]" * 100_000 + b"]}",
             "nested too deeply"),
    "corrupt_gzip": (gzip.compress(b'{"traceEvents": []}')[:-8] + b"\0" * 8,
                     "truncated or corrupt"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_input_is_one_line_naming_the_file(tmp_path, case):
    content, expected = BAD[case]
    path = tmp_path / f"{case}.json"
    path.write_bytes(content)
    with pytest.raises(TraceError) as error:
        load_trace(path)
    message = str(error.value)
    assert message.startswith(f"{path}: ") and expected in message and "\n" not in message


# --- linear time -------------------------------------------------------------------------------


def synthetic_events(count: int) -> list[dict]:
    """Kineto-like complete events, flows and counters on two threads."""
    events = []
    for i in range(count):
        ts = 1000.0 + 3 * i
        kind = i % 5
        if kind == 3:
            events.append({"ph": "s", "id": i, "pid": 1, "tid": 2, "ts": ts, "cat": "ac2g",
                           "name": "ac2g"})
        elif kind == 4:
            events.append({"ph": "C", "name": "memory", "pid": 1, "tid": 2, "ts": ts,
                           "args": {"bytes": i}})
        else:
            events.append({"ph": "X", "cat": ("cpu_op", "cuda_runtime", "kernel")[kind],
                           "name": f"aten::op_{i % 37}", "pid": 1, "tid": 2 + kind, "ts": ts,
                           "dur": 2.5, "args": {"External id": i, "correlation": i,
                                                "Input Dims": [[16, 512], [512]]}})
    return events


LAYOUTS = {
    "sorted_keys": lambda n: json.dumps({"traceEvents": synthetic_events(n)}, sort_keys=True),
    "no_ph": lambda n: json.dumps({"traceEvents": [
        {k: v for k, v in e.items() if k != "ph"} for e in synthetic_events(n)]}),
    "pretty_printed": lambda n: json.dumps({"traceEvents": synthetic_events(n)}, indent=4,
                                           sort_keys=True),
    "one_event_per_line": lambda n: '{"traceEvents": [\n' + ",\n".join(
        json.dumps(e, separators=(", ", ": ")) for e in synthetic_events(n)) + "\n]}",
    "braces_in_one_long_string": lambda n: json.dumps({"traceEvents": [
        {"ph": "X", "name": '{"ph": "X"} \\' * (n * 20), "ts": 0, "dur": 1}]}),
}


def load_seconds(path: Path) -> float:
    """The CPU time of one load (other processes on the machine do not count in it)."""
    start = time.process_time()
    try:
        load_trace(path)
    except TraceError:  # no_ph: refused, after reading it all
        pass
    return time.process_time() - start


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_time_grows_linearly_with_size(tmp_path, layout, monkeypatch):
    """4x the events in at most 8x the time (a quadratic reader takes 16x; the old splitter
    took 126 s for 20k sorted-key events). Chunks of 64 KB, so that both sizes take many; the
    fastest of three runs each, in turns."""
    monkeypatch.setattr(tracetext, "CHUNK_BYTES", 1 << 16)
    paths = {n: tmp_path / f"{n}.json" for n in (5_000, 20_000)}
    for n, path in paths.items():
        path.write_text(LAYOUTS[layout](n))
    seconds = {n: min(load_seconds(paths[n]) for _ in range(3)) for n in paths}
    for _ in range(2):  # two more turns, so that both sizes see the same moments of the machine
        for n in paths:
            seconds[n] = min(seconds[n], load_seconds(paths[n]))
    assert seconds[20_000] / max(seconds[5_000], 0.005) < 8, seconds


def test_memory_does_not_grow_with_what_the_model_drops(tmp_path, monkeypatch):
    """The text is read a window at a time: 4x the events that the model drops (flows,
    counters, args it does not keep) cost the reader no more memory, at most 5% of the JSON
    added. tracemalloc counts allocations, not the machine's load."""
    import tracemalloc

    monkeypatch.setattr(tracetext, "CHUNK_BYTES", 1 << 16)

    def dropped(count: int) -> str:
        events = [e for e in synthetic_events(count * 5 // 2) if e["ph"] != "X"]
        big = {"Input Dims": [list(range(50))] * 4}
        kernel = {"ph": "X", "cat": "kernel", "name": "k", "pid": 1, "tid": 7, "ts": 10.0,
                  "dur": 1.0, "args": big}
        return json.dumps({"traceEvents": [kernel] + events + [{**kernel, "args": big}] * 200})

    peaks, sizes = [], []
    for count in (10_000, 40_000):
        path = tmp_path / f"{count}.json"
        path.write_text(dropped(count))
        sizes.append(path.stat().st_size)
        tracemalloc.start()
        trace = load_trace(path)
        peaks.append(tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()
        assert len(trace.events) == 201
    assert peaks[1] - peaks[0] < (sizes[1] - sizes[0]) / 20, (peaks, sizes)


def test_sorted_keys_read_fast(tmp_path):
    path = tmp_path / "sorted.json"
    path.write_text(json.dumps({"traceEvents": synthetic_events(20_000)}, sort_keys=True))
    start = time.perf_counter()
    trace = load_trace(path)
    assert time.perf_counter() - start < 5
    assert len(trace.events) == 12_000


def test_args_of_any_json_type_read_as_json_reads_them(tmp_path):
    """Only integer values of the kept keys are kept, whatever the args value is."""
    values = [[], {"correlation": 5}, None, 3, "x", {"correlation": True, "stream": 7},
              {"correlation": 1.0, "device": -2, "bytes": 10**30}, {"correlation": [1]}]
    events = [{"ph": "X", "cat": cat, "name": "cudaLaunchKernel", "pid": 1, "tid": 2,
               "ts": 1.0 + i, "dur": 2.0, "args": args}
              for i, args in enumerate(values * 3) for cat in ("cuda_runtime", "kernel")]
    data = {"traceEvents": events}
    path = tmp_path / "t.json"
    path.write_text(json.dumps(data))
    same_trace(load_trace(path), build_trace(data, source=str(path)))



def test_ids_of_any_json_type_read_as_json_reads_them(tmp_path, monkeypatch):
    """Pids and tids that are floats or bools (equal to ints, but not the same ids) or strings,
    among ints: each as json reads it, its type too."""
    monkeypatch.setattr(tracetext, "CHUNK_BYTES", 400)  # runs of each mix, on both paths
    ids = [1, 1.0, True, "1", 2]
    events = [{"ph": "X", "cat": "kernel", "name": "k", "pid": pid, "tid": tid, "ts": 1.0 + i,
               "dur": 2.0, "args": {"correlation": i}}
              for i, (pid, tid) in enumerate((pid, tid) for pid in ids for tid in ids)]
    data = {"traceEvents": events}
    path = tmp_path / "t.json"
    path.write_text(json.dumps(data))
    loaded, reference = load_trace(path), build_trace(data, source=str(path))
    same_trace(loaded, reference)
    assert [(type(e.pid), type(e.tid)) for e in loaded.events] == \
        [(type(e.pid), type(e.tid)) for e in reference.events]

# The frozen traces (not the extra artifacts beside some of them, which are JSON of other shapes).
COMMITTED = sorted(path for example in catalog.EXAMPLES for path in example.trace_paths if path.exists())


@pytest.mark.parametrize("path", COMMITTED, ids=[p.name for p in COMMITTED])
def test_both_paths_give_the_same_model_of_every_committed_trace(path, decoder, monkeypatch):
    if decoder == "stdlib":
        pytest.skip("compared on the compiled run")
    monkeypatch.setattr(tracetext, "CHUNK_BYTES", 1 << 12)  # the compiled path from 4 KB on
    reads = []
    read_run = compiled.Runs.read_run
    monkeypatch.setattr(compiled.Runs, "read_run",
                        lambda self, *a: reads.append(read_run(self, *a)) or reads[-1])
    fast = load_trace(path)
    assert any(reads)  # the compiled path read runs of this trace
    monkeypatch.setenv(compiled.DECODER_ENV, "stdlib")
    reference = load_trace(path)
    same_trace(fast, reference)
    assert fast.skipped == reference.skipped == {}
    assert facts_of(fast) == facts_of(reference)
    lean = frozenset({"python", "cpu_op"})
    monkeypatch.delenv(compiled.DECODER_ENV)
    fast = load_trace(path, skip_kinds=lean)
    monkeypatch.setenv(compiled.DECODER_ENV, "stdlib")
    reference = load_trace(path, skip_kinds=lean)
    assert rows(fast) == rows(reference) and fast.skipped == reference.skipped


def test_the_reader_imports_only_the_standard_library():
    """It runs on the bare GPU image and in Pyodide."""
    script = ("import sys; import scripts.tracefacts.model.trace, scripts.tracefacts.reading.events; "
              "print([m for m in sys.modules if m.split('.')[0] not in sys.stdlib_module_names "
              "and m.split('.')[0] != 'scripts'])")
    done = subprocess.run([sys.executable, "-S", "-c", script], capture_output=True, text=True,
                          cwd=ROOT)  # -S: without site, whose own modules are not the reader's
    assert done.stdout.strip() == "['__main__']", done.stderr
