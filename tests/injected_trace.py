"""A frozen example whose every name-bearing field carries markup, for the escaping tests: the
trace (event names of each kind, thread and process names, string pids and tids, device and
top-level metadata, string args), its profiler table, its metadata, and a tag that names files.

`write_example(folder)` writes it the way the freeze does; `LocalExample` points the page helpers
(scripts.series.pages.helpers.Run, scripts.series.pages.sweeps.LLMView) at that folder instead of traces/.
"""

from __future__ import annotations

import gzip
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from scripts.series.runs import catalog
from tests.conftest import ROOT
from tests.timeline_traces import gpu_trace

IMG = "<img src=x onerror=alert(1)>"
SCRIPT = '"><script>alert(2)</script>'
# Markup, both quotes, an entity that must stay text, a lone surrogate (JSON's "\ud800"), and a
# new line with a fence that would end a Markdown code block.
PAYLOAD = f"{IMG}{SCRIPT}'&amp;\ud800\n```\n<img src=y onerror=alert(3)>"
# The example's tag names files (no '/', no new line).
TAG = f"t{IMG}\"><svg onload=alert(4)>'&amp;"
SNIPPET = "injected"
PROMPT = 4
LLM_STEP = "decode b=1"  # an LLM view finds its steps by this exact name; everything else is poisoned
TABLE_NAMES = (f"{IMG}\"'&amp;", SCRIPT, f"aten::mm{IMG}")


def poisoned_trace() -> dict:
    """The synthetic GPU trace of the timeline tests (ProfilerSteps, a user annotation, ops,
    runtime calls, kernels with template names, a memcpy, a GPU annotation, the profiler's span)
    with PAYLOAD appended to every string a page may show."""
    data = gpu_trace()
    host_pid = next(e["pid"] for e in data["traceEvents"] if e.get("cat") == "cpu_op")
    as_text = {host_pid: f"{host_pid}{PAYLOAD}"}  # a string pid, as some exporters write
    for event in data["traceEvents"]:
        event["pid"] = as_text.get(event["pid"], event["pid"])
        if event.get("tid") == host_pid:
            event["tid"] = as_text[host_pid]
        if event["ph"] == "M":
            event["args"]["name"] += PAYLOAD
            continue
        if event["name"] == "forward" and event["cat"] == "user_annotation":
            event["name"] = LLM_STEP
        else:
            event["name"] += PAYLOAD
        if isinstance(event["pid"], str) and event["cat"] == "Trace":  # the span's "Spans" lane
            event["pid"] += PAYLOAD
            event["tid"] += PAYLOAD
        event["args"].update({"Input type": PAYLOAD, "Call stack": PAYLOAD, "name": PAYLOAD})
    for device in data["deviceProperties"]:
        device["name"] += PAYLOAD
    data["distributedInfo"]["backend"] += PAYLOAD
    data["host_name"] += PAYLOAD
    data["traceName"] += PAYLOAD
    return data


def poisoned_table() -> str:
    """A real profiler table of the repository with markup as the row names and a total's label."""
    text = (ROOT / "traces/01_matmul_add/64_bf16_cold_eager.txt").read_text()
    lines = text.splitlines()
    rules = [i for i, line in enumerate(lines) if line.startswith("---")]
    width = lines[rules[0]].index(" ")  # the name column's span
    for n, i in enumerate(range(rules[1] + 1, rules[2])):
        lines[i] = TABLE_NAMES[n % len(TABLE_NAMES)].rjust(width) + lines[i][width:]
    lines = [f"{IMG} {line}" if line.startswith("Self CPU time total") else line for line in lines]
    return "\n".join(lines) + "\n"


def poisoned_meta(example=None) -> dict:
    """Metadata as the refresh writes it (sealed, so the typed reader accepts it), with the payload
    in every free-text field; the date is checked as a date, so it carries none."""
    from scripts.series.runs import meta

    environment = {"gpu": f"H200{PAYLOAD}", "driver": PAYLOAD, "torch": PAYLOAD, "cuda": PAYLOAD,
                   "python": PAYLOAD, "packages": {f"pkg{PAYLOAD}": PAYLOAD}}
    inputs = {"snippet": f"snippets/{SNIPPET}.py", "snippet_sha256": "0" * 64,
              "args": list(example.args) if example else [], "freeze_format": 1}
    outputs = {}
    if example is not None:
        outputs = {path.name: hashlib.sha256(path.read_bytes()).hexdigest()
                   for path in (example.trace_path, example.table_path)}
    return meta.seal({
        "example": example.key if example else f"{SNIPPET}/{TAG}", "command": f"uv run {PAYLOAD}",
        "inputs": inputs, "inputs_hash": meta.inputs_hash(inputs), "outputs": outputs,
        "environment": environment, "date": "2025-01-01T00:00:00Z", "wall_time_s": 1.0,
    })


@dataclass(frozen=True)
class LocalExample(catalog.Example):
    """An example whose artifacts lie under `root` rather than the repository's traces/."""

    root: Path = Path()

    @property
    def folder(self) -> Path:
        return self.root / self.snippet


def local_example(root: Path) -> LocalExample:
    return LocalExample(SNIPPET, TAG, ("--prompt", str(PROMPT), "--name", PAYLOAD), root=root)


def write_example(root: Path) -> LocalExample:
    """The poisoned trace, table and metadata under root/injected/, as the freeze writes them."""
    example = local_example(root)
    example.folder.mkdir(parents=True, exist_ok=True)
    with gzip.open(example.trace_path, "wt", encoding="utf-8") as out:
        json.dump(poisoned_trace(), out)  # ensure_ascii: the surrogate travels as \ud800
    example.table_path.write_text(poisoned_table(), encoding="utf-8")
    example.meta_path.write_text(json.dumps(poisoned_meta(example)), encoding="utf-8")
    return example
