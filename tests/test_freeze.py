"""Run-or-reuse: stale detection, the strict build's message, a crashing refresh, sanitizing."""

from __future__ import annotations

import gzip
import json
import logging
import os
import re
import shutil
import sys
import textwrap
from pathlib import Path

import pytest

from scripts.series.runs import catalog, freeze
from tests.conftest import ROOT, clean_copy, fake_project, mkdocs_build

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
    parser.add_argument("--ranks", type=int, default=0)
    parser.add_argument("--trace_dir", type=pathlib.Path)
    args = parser.parse_args()
    if args.crash:
        raise RuntimeError("CUDA error: out of memory")
    args.trace_dir.mkdir(parents=True, exist_ok=True)
    if args.unavailable:
        (args.trace_dir / (args.tag + ".unavailable")).write_text("No available kernel. Aborting execution.\\n")
        sys.exit(0)
    for stem in [f"{args.tag}_rank{r}" for r in range(args.ranks)] or [args.tag]:
        trace = {"traceName": str(args.trace_dir / (stem + ".json")),
                 "traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "ts": 1, "dur": 2,
                                  "pid": 1, "tid": 1, "args": {}}]}
        (args.trace_dir / (stem + ".json")).write_text(json.dumps(trace))
        (args.trace_dir / (stem + ".txt")).write_text("table\\n")
''')


@pytest.fixture
def sandbox(tmp_path, monkeypatch):
    """A catalog of fake snippets in a temporary tree, with earlier artifacts already frozen."""
    fake_project(tmp_path, monkeypatch, FAKE_SNIPPET)
    ok = [catalog.Example("fake", f"run{i}", ("--tag", f"run{i}")) for i in range(2)]
    for example in ok:
        assert freeze.refresh([example], sys.executable, log=lambda *_: None) == 0
    return tmp_path, ok


def snapshot(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_an_example_of_two_gpus_freezes_a_trace_and_a_table_per_rank(sandbox, monkeypatch):
    tmp_path, _ = sandbox
    monkeypatch.setattr(freeze, "gpu_count", lambda: 2)
    example = catalog.Example("fake", "ddp", ("--tag", "ddp", "--ranks", "2"), gpus=2)
    assert freeze.refresh([example], sys.executable, log=lambda *_: None) == 0
    written = snapshot(tmp_path / "traces")
    assert {p.name for p in (*example.trace_paths, *example.table_paths, example.meta_path)} <= written.keys()
    assert json.loads(gzip.decompress(written["ddp_rank1.json.gz"]))["traceName"] == "ddp_rank1.json"
    assert freeze.status(example).ok and not freeze.awaits_gpus(example)


def test_an_example_needing_more_gpus_is_skipped_and_not_required_until_run(sandbox, monkeypatch):
    tmp_path, _ = sandbox
    monkeypatch.setattr(freeze, "gpu_count", lambda: 1)
    example = catalog.Example("fake", "ddp", ("--tag", "ddp", "--ranks", "2"), gpus=2)
    messages = []
    assert freeze.refresh([example], sys.executable, log=messages.append) == 0
    assert "skipped fake/ddp: it needs 2 GPUs, this machine has 1" in "\n".join(messages)
    assert not example.meta_path.exists()
    assert freeze.check([example]) == [] and freeze.awaits_gpus(example)
    assert "fake/ddp" in freeze.awaiting_report([example])
    # Once frozen, it is checked as any other example: an edit of its outputs is stale.
    monkeypatch.setattr(freeze, "gpu_count", lambda: 2)
    freeze.refresh([example], sys.executable, log=lambda *_: None)
    monkeypatch.setattr(freeze, "gpu_count", lambda: 1)
    example.table_paths[1].write_text("edited\n")
    assert [s.state for s in freeze.check([example])] == ["stale"]


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


def test_a_sanitizer_that_misses_something_fails_the_refresh(sandbox, monkeypatch):
    """The post-check refuses what the rules let through (tests/test_sanitize.py tests the rules)."""
    tmp_path, ok = sandbox
    before = snapshot(tmp_path / "traces")
    monkeypatch.setattr(freeze, "sanitize_trace",
                        lambda data, name, scrubber: {**data, "traceName": name, "note": "/fsx/alice/run"})
    messages = []
    assert freeze.refresh([ok[0]], sys.executable, log=messages.append) == 1
    assert "the sanitizer left a machine path or name: '/fsx/alice/run" in "\n".join(messages)
    assert snapshot(tmp_path / "traces") == before


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
        assert freeze.read_meta(example).environment.packages["transformers"]


# --- metadata that cannot be used: one line naming the file and what to run ---------------------

KEY = "01_matmul_add/64_bf16_cold_eager"
META_REL = f"traces/{KEY}.meta.json"
COMMAND = f'make refresh ONLY="{KEY}"'


@pytest.fixture
def frozen_copy(tmp_path, monkeypatch):
    """The committed traces/ copied to a temporary tree that the catalog reads instead."""
    shutil.copytree(ROOT / "traces", tmp_path / "traces")
    monkeypatch.setattr(catalog, "TRACES", tmp_path / "traces")
    monkeypatch.setattr(freeze, "gpu_available", lambda: False)  # a GPU builder would refresh instead
    example = catalog.get(KEY)
    return example, json.loads(example.meta_path.read_text())


def sealed(fields: dict) -> bytes:
    """As the refresh writes it, so that the field checks, not the seal, must catch the problem."""
    return freeze.meta_file_bytes(freeze.seal(fields))


def with_field(fields: dict, dotted: str | tuple, value, delete: bool = False) -> dict:
    """A copy with one field (a.b.c, or a tuple where a name holds dots) set or deleted."""
    fields = json.loads(json.dumps(fields))
    *parents, last = dotted.split(".") if isinstance(dotted, str) else dotted
    holder = fields
    for name in parents:
        holder = holder[name]
    if delete:
        del holder[last]
    else:
        holder[last] = value
    return fields


TABLE = "64_bf16_cold_eager.txt"
WRONG_TYPES = [
    ("example", None), ("command", 3), ("inputs", []), ("inputs.snippet", ["x"]),
    ("inputs.snippet_sha256", "abc"), ("inputs.args", "--size 64"), ("inputs.args", [64]),
    ("inputs.freeze_format", "1"), ("inputs.freeze_format", True), ("inputs_hash", None),
    ("outputs", {}), ("outputs", ["x"]), (("outputs", TABLE), 5), (("outputs", "../../../etc/passwd"), "0" * 64),
    ("environment", "NVIDIA H200"), ("environment.torch", None), ("environment.gpu", 1),
    ("environment.packages", []), ("environment.packages", {"transformers": 5}),
    ("date", "yesterday"), ("date", 20261129), ("wall_time_s", "10"), ("wall_time_s", -1),
    ("wall_time_s", True), ("wall_time_s", float("nan")), ("meta_sha256", 1),
]
REQUIRED = ["example", "command", "inputs", "inputs.snippet", "inputs.snippet_sha256", "inputs.args",
            "inputs.freeze_format", "inputs_hash", "outputs", "environment", "environment.torch", "date",
            "wall_time_s"]  # and the seal: "unsealed" below


def malformed_files(fields: dict) -> dict[str, bytes]:
    text = json.dumps(fields, indent=2).encode()
    cases = {
        "empty": b"", "truncated": text[: len(text) // 2], "not UTF-8": b"\xff\xfe{}", "a list": b"[]",
        "null": b"null", "a number": b"42", "a string": b'"x"', "inputs as a list": b'{"inputs": []}',
        "nested too deeply": b"[" * 100_000 + b"]" * 100_000, "an integer past the digit limit": b"9" * 5000,
        "larger than a metadata file": b" " * (2 << 20) + b"{}",
        "unsealed (as written before the seal)": text,
        "edited gpu": sealed(fields).replace(fields["environment"]["gpu"].encode(), b"NVIDIA A100"),
        "edited command": freeze.meta_file_bytes({**freeze.seal(fields), "command": "uv run other.py"}),
        "another example's": sealed({**fields, "example": "01_matmul_add/4096_bf16_warm_eager"}),
        "an output that is not an artifact": sealed(with_field(fields, ("outputs", "other.txt"), "0" * 64)),
        "an inputs_hash that is not its inputs'": sealed({**fields, "inputs_hash": "0" * 64}),
    }
    for dotted, value in WRONG_TYPES:
        cases[f"{dotted} = {value!r}"] = (sealed(with_field(fields, dotted, value)) if dotted != "meta_sha256"
                                          else freeze.meta_file_bytes({**freeze.seal(fields), dotted: value}))
    for dotted in REQUIRED:
        cases[f"no {dotted}"] = sealed(with_field(fields, dotted, None, delete=True))
    return cases


# What some of them must say (the others: that the file cannot be used, and where).
SAYS = {"empty": "is not valid JSON", "not UTF-8": "is not UTF-8 text", "a list": "holds a list, not an object",
        "null": "holds null, not an object", "inputs as a list": "has field 'inputs' as a list, not an object",
        "unsealed (as written before the seal)": "is not sealed", "edited gpu": "was edited after the run",
        "edited command": "was edited after the run", "no environment.torch": "has no field 'environment.torch'",
        "environment.gpu = 1": "has field 'environment.gpu' as a number, not a string"}


def test_every_malformed_metadata_is_one_line_naming_the_file_and_the_command(frozen_copy, capsys):
    from scripts.series import cli
    from scripts.series.pages import helpers as pages

    example, fields = frozen_copy
    fields = {k: v for k, v in fields.items() if k != "meta_sha256"}
    cases = malformed_files(fields)
    assert len(cases) > 50
    for case, content in cases.items():
        example.meta_path.write_bytes(content)
        state = freeze.status(example)
        assert state.state == "invalid" and state.reason.startswith(META_REL + " "), (case, state)
        assert "\n" not in state.reason, case
        assert SAYS.get(case, "") in state.reason, (case, state.reason)

        assert cli.main(["check", "--only", KEY]) == 1, case
        report = capsys.readouterr().err
        assert [line for line in report.splitlines() if META_REL in line] == [
            f"  {KEY} is invalid: {state.reason}"], (case, report)
        assert COMMAND in report, case

        with pytest.raises(freeze.MetaError) as raised:
            pages.Run(example).meta  # what a page's code block reads
        message = str(raised.value)
        assert "\n" not in message and message.startswith(META_REL) and f"`make refresh ONLY={KEY}`" in message


def test_missing_metadata_names_the_file(frozen_copy, capsys):
    from scripts.series import cli

    example, _ = frozen_copy
    example.meta_path.unlink()
    assert freeze.status(example).reason == f"{META_REL} is missing"
    assert cli.main(["check", "--only", KEY]) == 1
    assert COMMAND in capsys.readouterr().err
    with pytest.raises(freeze.MetaError, match=f"^{re.escape(META_REL)} is missing; run `make refresh ONLY={KEY}`"):
        freeze.read_meta(example)


def test_a_sealed_edit_of_the_right_type_is_still_caught_by_field(frozen_copy):
    """The seal covers every field: each one edited (right type, no reseal) is detected."""
    example, fields = frozen_copy
    edits = {"example": KEY, "command": "uv run snippets/x.py", "inputs.args": ["--size", "65"],
             "inputs_hash": "1" * 64, "environment.gpu": "NVIDIA A100", "environment.driver": "1.0",
             "environment.torch": "2.0", "date": "2020-01-01T00:00:00Z", "wall_time_s": 1.5,
             ("outputs", TABLE): "2" * 64}
    for dotted, value in edits.items():
        edited = with_field(fields, dotted, value)
        if edited == fields:
            continue
        example.meta_path.write_bytes(freeze.meta_file_bytes(edited))
        state = freeze.status(example)
        assert state.state == "invalid" and "was edited after the run" in state.reason, dotted


def test_the_build_hooks_name_a_broken_metadata_file_and_never_raise_when_not_strict(frozen_copy, monkeypatch, caplog):
    """`mkdocs serve` (not strict) warns and goes on, so the server never waits on a failed build;
    the strict build stops with the one report."""
    import types

    from mkdocs.exceptions import PluginError

    from scripts.series.mkdocs_glue import hooks as mkdocs_hooks, reproducible as mkdocs_reproducible

    example, _ = frozen_copy
    example.meta_path.write_text("{ not json")
    monkeypatch.delenv("SOURCE_DATE_EPOCH", raising=False)
    config = types.SimpleNamespace(docs_dir=str(ROOT / "docs"), strict=False)
    assert mkdocs_reproducible.on_config(config) is config  # the date leaves the file out
    assert os.environ["SOURCE_DATE_EPOCH"]

    problems = []
    mkdocs_reproducible.content_date(ROOT / "docs", catalog.TRACES, problems)
    assert [str(p) for p in problems] == [
        f"{META_REL} is not valid JSON (Expecting property name enclosed in double quotes: line 1, column 3); "
        f"run `make refresh ONLY={KEY}` on a GPU machine, or restore the file from git"]
    with pytest.raises(freeze.MetaError):
        mkdocs_reproducible.content_date(ROOT / "docs", catalog.TRACES)

    with pytest.raises(PluginError) as raised:
        mkdocs_hooks.on_pre_build(types.SimpleNamespace(strict=True))
    assert f"{KEY} is invalid: {META_REL} is not valid JSON" in str(raised.value) and COMMAND in str(raised.value)

    caplog.set_level("WARNING")
    mkdocs_hooks.on_pre_build(types.SimpleNamespace(strict=False))
    warned = "\n".join(r.getMessage() for r in caplog.records)
    assert f"{KEY} is invalid: {META_REL}" in warned and COMMAND in warned
    assert "cannot be generated" in warned  # the notebooks that show it say why, too


def test_a_metadata_file_no_example_owns_is_named_by_the_date_hook(frozen_copy, monkeypatch, caplog):
    import types

    from scripts.series.mkdocs_glue import reproducible as mkdocs_reproducible

    orphan = catalog.TRACES / "01_matmul_add" / "gone.meta.json"
    orphan.write_text("[]")
    monkeypatch.delenv("SOURCE_DATE_EPOCH", raising=False)
    caplog.set_level("WARNING")
    mkdocs_reproducible.on_config(types.SimpleNamespace(docs_dir=str(ROOT / "docs"), strict=True))
    assert [r.getMessage() for r in caplog.records] == [
        "traces/01_matmul_add/gone.meta.json holds a list, not an object; run `make refresh "
        "ONLY=01_matmul_add/gone` on a GPU machine, or restore the file from git"]


def test_a_broken_metadata_file_fails_the_strict_build_with_one_message(tmp_path):
    project = clean_copy(tmp_path)
    (project / META_REL).write_text("null")
    done = mkdocs_build(project)
    output = done.stdout + done.stderr
    assert done.returncode != 0
    assert f"{KEY} is invalid: {META_REL} holds null, not an object" in output
    assert COMMAND in output and "Traceback" not in output


def test_a_page_block_that_reads_a_broken_metadata_file_is_one_warning(caplog):
    """markdown-exec logs a failing block with its traceback; under `mkdocs serve` one whose cause is
    unusable metadata is the MetaError's one line."""
    from scripts.series.mkdocs_glue import hooks as mkdocs_hooks

    block_logger = logging.getLogger("mkdocs.plugins.markdown_exec.some_module")
    mkdocs_hooks.shorten_metadata_failures()
    mkdocs_hooks.shorten_metadata_failures()  # once per build under serve: still one filter
    assert len(block_logger.filters) == 1
    cause = f"{META_REL} is not valid JSON (x); run `make refresh ONLY={KEY}` on a GPU machine"
    caplog.set_level("WARNING")
    block_logger.warning("markdown_exec: Execution of python code block exited with errors\n\nCode block is:\n\n"
                         "  run.meta\n\nOutput is:\n\n  Traceback (most recent call last):\n    File ...\n"
                         f"  scripts.series.runs.meta.MetaError: {cause}\n")
    block_logger.warning("markdown_exec: Execution of python code block exited with errors\n  KeyError: 'x'")
    first, other = [r.getMessage() for r in caplog.records]
    assert first.endswith(f"could not run: {cause}") and "\n" not in first and "Traceback" not in first
    assert "KeyError: 'x'" in other  # any other failure keeps markdown-exec's message
