"""Run-or-reuse: stale detection, the strict build's message, a crashing refresh, sanitizing."""

from __future__ import annotations

import gzip
import json
import re
import sys
import textwrap
from pathlib import Path

import pytest

from scripts import catalog, freeze
from tests.conftest import ROOT, clean_copy, mkdocs_build

# An independent description of what must never be published: absolute POSIX or Windows paths.
MACHINE_PATH = re.compile(r'(?:^|[\s"\'(=:])(/(?:home|root|Users|tmp|var|opt|usr|mnt|srv|work)/|[A-Z]:\\)')


def test_every_example_is_fresh():
    problems = freeze.check(list(catalog.EXAMPLES))
    assert not problems, freeze.stale_report(problems)


def test_changed_snippet_fails_the_strict_build_with_one_message(tmp_path):
    project = clean_copy(tmp_path)
    snippet = project / "snippets" / "01_matmul_add.py"
    snippet.write_text(snippet.read_text() + "\n# an edit after the last GPU run\n")
    done = mkdocs_build(project)
    assert done.returncode != 0
    output = done.stdout + done.stderr
    assert "01_matmul_add/64_bf16_cold_eager is stale" in output
    assert "snippets/01_matmul_add.py changed since the last GPU run" in output
    assert "make refresh ONLY=" in output
    assert "train_step/" not in output  # only the examples that changed are named
    assert output.count("need a GPU run") == 1


def test_changed_arguments_and_edited_outputs_are_stale(monkeypatch):
    example = catalog.get("01_matmul_add/64_bf16_cold_eager")
    changed = catalog.Example(example.snippet, example.tag, example.args + ("--warmup",))
    status = freeze.status(changed)
    assert status.state == "stale" and "arguments changed" in status.reason

    real_read = Path.read_bytes

    def edited(path):
        data = real_read(path)
        return data + b"x" if path == example.table_path else data

    monkeypatch.setattr(Path, "read_bytes", edited)
    status = freeze.status(example)
    assert status.state == "stale" and "modified after the run" in status.reason


def test_missing_artifact_is_reported(tmp_path, monkeypatch):
    monkeypatch.setattr(catalog, "TRACES", tmp_path)
    example = catalog.Example("01_matmul_add", "64_bf16_cold_eager", ("--size", "64"))
    assert freeze.status(example).state == "missing"


FAKE_SNIPPET = textwrap.dedent('''
    import argparse, json, pathlib, sys
    parser = argparse.ArgumentParser()
    parser.add_argument("--tag"); parser.add_argument("--crash", action="store_true")
    parser.add_argument("--unavailable", action="store_true")
    parser.add_argument("--trace_dir", type=pathlib.Path)
    args = parser.parse_args()
    if args.crash:
        raise RuntimeError("CUDA error: out of memory")
    args.trace_dir.mkdir(parents=True, exist_ok=True)
    if args.unavailable:
        (args.trace_dir / (args.tag + ".unavailable")).write_text("No available kernel. Aborting execution.\\n")
        sys.exit(0)
    trace = {"traceName": str(args.trace_dir / (args.tag + ".json")),
             "traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": 1, "dur": 2,
                              "pid": 1, "tid": 1, "args": {}}]}
    (args.trace_dir / (args.tag + ".json")).write_text(json.dumps(trace))
    (args.trace_dir / (args.tag + ".txt")).write_text("table\\n")
''')


@pytest.fixture
def sandbox(tmp_path, monkeypatch):
    """A catalog of fake snippets in a temporary tree, with earlier artifacts already frozen."""
    (tmp_path / "snippets").mkdir()
    (tmp_path / "snippets" / "fake.py").write_text(FAKE_SNIPPET)
    monkeypatch.setattr(catalog, "SNIPPETS", tmp_path / "snippets")
    monkeypatch.setattr(catalog, "TRACES", tmp_path / "traces")
    monkeypatch.setattr(catalog, "ROOT", tmp_path)
    monkeypatch.setattr(freeze, "ROOT", tmp_path)
    monkeypatch.setattr(freeze, "TRACES", tmp_path / "traces")
    monkeypatch.setattr(freeze, "probe_environment", lambda python, packages=(), runner=None: {"torch": "test", "gpu": None})
    ok = [catalog.Example("fake", f"run{i}", ("--tag", f"run{i}")) for i in range(2)]
    for example in ok:
        assert freeze.refresh([example], sys.executable, log=lambda *_: None) == 0
    return tmp_path, ok


def snapshot(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_crashing_refresh_leaves_every_artifact_byte_identical(sandbox):
    tmp_path, ok = sandbox
    before = snapshot(tmp_path / "traces")
    crash = catalog.Example("fake", "run2", ("--tag", "run2", "--crash"))
    messages = []
    failed = freeze.refresh([*ok, crash], sys.executable, log=messages.append)
    assert failed == 1
    assert snapshot(tmp_path / "traces") == before
    report = "\n".join(messages)
    assert "FAILED fake/run2" in report and "out of memory" in report
    assert "left unchanged" in report


def test_keep_going_writes_only_what_succeeded(sandbox):
    tmp_path, ok = sandbox
    crash = catalog.Example("fake", "run2", ("--tag", "run2", "--crash"))
    assert freeze.refresh([ok[0], crash], sys.executable, keep_going=True, log=lambda *_: None) == 1
    assert (tmp_path / "traces" / "fake" / "run0.meta.json").exists()
    assert not (tmp_path / "traces" / "fake" / "run2.meta.json").exists()


def test_refresh_output_is_reproducible_and_sanitized(sandbox):
    tmp_path, ok = sandbox
    first = snapshot(tmp_path / "traces")["run0.json.gz"]
    freeze.refresh([ok[0]], sys.executable, log=lambda *_: None)
    assert snapshot(tmp_path / "traces")["run0.json.gz"] == first
    trace = json.loads(gzip.decompress(first))
    assert trace["traceName"] == "run0.json"


def test_sanitizer_removes_machine_paths_and_names():
    scrubber = freeze.Scrubber(
        replacements=[("/home/alice/proj", ""), ("/usr/lib/python3.12/site-packages", "site-packages")],
        words=["gpu-node-17", "alice"],
    )
    raw = {
        "traceName": "/home/alice/proj/traces/x.json",
        "host_name": "gpu-node-17",
        "distributedInfo": {"backend": "nccl", "rank": 0, "host_name": "gpu-node-17"},
        "traceEvents": [
            {"name": "/home/alice/proj/snippets/01_matmul_add.py(50): fn", "ph": "X"},
            {"name": "/usr/lib/python3.12/site-packages/torch/nn/modules/linear.py(125): forward"},
            {"name": "thread 12 (python)", "args": {"note": "ran on gpu-node-17 by alice"}},
        ],
    }
    clean = freeze.sanitize_trace(raw, "x.json", scrubber)
    text = json.dumps(clean)
    assert "alice" not in text and "gpu-node-17" not in text and "/home/" not in text
    assert clean["traceName"] == "x.json"
    assert clean["distributedInfo"] == {"backend": "nccl", "rank": 0}
    assert clean["traceEvents"][0]["name"] == "snippets/01_matmul_add.py(50): fn"
    assert clean["traceEvents"][1]["name"].startswith("site-packages/torch/nn/")
    assert not scrubber.leaks(clean)
    assert scrubber.leaks({"x": "/root/.cache/thing"})


def test_no_machine_path_or_host_name_under_traces():
    for path in sorted((ROOT / "traces").rglob("*")):
        if not path.is_file():
            continue
        text = gzip.decompress(path.read_bytes()).decode() if path.suffix == ".gz" else path.read_text()
        assert not MACHINE_PATH.search(text), f"{path.relative_to(ROOT)}: {MACHINE_PATH.search(text).group(0)!r}"
        if path.suffix == ".gz":
            data = json.loads(text)
            assert "/" not in data.get("traceName", "")
            assert "host_name" not in data and "host_name" not in (data.get("distributedInfo") or {})


def test_an_unavailable_example_freezes_its_reason_and_replaces_old_outputs(sandbox):
    tmp_path, ok = sandbox
    example = catalog.Example("fake", "run0", ("--tag", "run0", "--unavailable"))
    assert freeze.refresh([example], sys.executable, log=lambda *_: None) == 0
    files = snapshot(tmp_path / "traces" / "fake")
    assert files["run0.unavailable"] == b"No available kernel. Aborting execution.\n"
    assert "run0.json.gz" not in files and "run0.txt" not in files
    assert freeze.status(example).ok


def test_metadata_records_the_packages_a_snippet_header_asks_for():
    """A run's metadata names the versions of what its snippet's PEP 723 header lists, so a
    transformers upgrade shows up next to the runs it may have changed."""
    llm = catalog.get("05_llm_inference/decode_b1_p512_dynamic_eager")
    assert freeze.snippet_dependencies(llm) == ["transformers"]
    assert freeze.snippet_dependencies(catalog.get("01_matmul_add/64_bf16_cold_eager")) == []
    probed = {"torch": "2.x", "packages": {"transformers": "5.0", "triton": "3.0"}}
    assert freeze.environment_of(llm, probed) == {"torch": "2.x", "packages": {"transformers": "5.0"}}
    assert "packages" not in freeze.environment_of(catalog.get("01_matmul_add/64_bf16_cold_eager"), probed)
    for example in catalog.PART4:
        assert freeze.read_meta(example)["environment"]["packages"]["transformers"]
