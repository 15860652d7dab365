"""The sanitizer keeps what is known to be safe: a synthetic trace carrying every kind of machine
detail, sanitized as if on other machines (root, a two-letter host name), keeps none of them and
keeps every kernel name, op name, shape and version; the committed traces pass through unchanged."""

from __future__ import annotations

from tests.conftest import all_strings  # noqa: E402

import getpass
import gzip
import json
import re
import socket
from pathlib import Path

import pytest

from scripts.series.runs import catalog, sanitize
from scripts.series.runs.extras import SNAPSHOT_NUMBER_KEYS, read_extra
from scripts.series.runs.sanitize import Scrubber, sanitize_trace, sanitize_value
from tests.conftest import ROOT

RUN_DIR = Path("/tmp/freeze-abc123")
SITE = "/usr/lib/python3.12/site-packages"
DEVICE_UUID = "GPU-5a3b1c2d-1234-5678-9abc-def012345678"
PLAIN_UUID = "123e4567-e89b-12d3-a456-426614174000"

# What must survive as it is: names and numbers a reader of the trace needs.
SAFE = [
    "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>>(int, at::native::FillFunctor<float>)",
    "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize64x64x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas",
    "aten::mm", "c10::add", "c10::TensorImpl::~TensorImpl()", "cudaLaunchKernel", "ProfilerStep#1",
    "nn.Module: Linear_0", "Memcpy DtoD (Device -> Device)", "memory bandwidth (GB/s)",
    "Torch-Compiled Region: 0/0", "torch 2.11.0+cu130", "sm_90", "NVIDIA H200", "CUDA 12.4",
    "driver 580.159.04", "2026-11-29T12:47:10Z", "GPU 0", "gpu_memcpy", "python3",
    "<built-in method add_ of Tensor object at 0x7f2334db42d0>", "<frozen os>(680): getenv",
    "enum.py(1267): __hash__", "torch/nn/modules/linear.py(125): forward", "train_step.py(59): forward",
    "[[64, 64], [64, 64]]",
]


def synthetic_trace(host: str, user: str, home: str) -> dict:
    """One of each kind of machine detail, in names, args, metadata, thread names and keys."""
    return {
        "schemaVersion": 1,
        "traceName": f"{home}/proj/traces/{host}_12345.1700000000.pt.trace.json",
        "hostname": host,
        "distributedInfo": {"backend": "nccl", "rank": 0, "world_size": 2, "host_name": host,
                            "master_addr": "10.1.2.3", "init_method": f"tcp://{host}:29500"},
        "deviceProperties": [{"id": 0, "name": "NVIDIA H200", "uuid": DEVICE_UUID, "computeMajor": 9}],
        "traceEvents": [
            {"ph": "M", "name": "process_name", "pid": 1, "args": {"name": f"python3 on {host.upper()}"}},
            {"ph": "M", "name": "thread_name", "pid": 1, "tid": 2, "args": {"name": f"{host}_12345 worker"}},
            {"ph": "X", "cat": "python_function", "name": f"{SITE}/torch/nn/modules/module.py(1751): _call_impl"},
            {"ph": "X", "cat": "python_function", "name": "/usr/lib/python3.12/enum.py(1267): __hash__"},
            {"ph": "X", "cat": "python_function", "name": f"{ROOT}/snippets/01_matmul_add.py(50): fn"},
            {"ph": "X", "cat": "python_function", "name": f"/fsx/{user}/exp/train.py(12): main"},
            {"ph": "X", "cat": "python_function", "name": f"C:\\Users\\{user}\\proj\\train.py(3): main"},
            {"ph": "X", "cat": "user_annotation", "name": f"load /gpfs/{user}/data", "args": {
                "ckpt": f"/lustre/scratch/{user}/ckpt.pt",
                "share": "\\\\fileserver\\share\\x.bin",
                "windows": f"C:\\Users\\{user}\\data.csv",
                "home": f"~{user}/data",
                "old": f"/home/{user}-old/x",
                "cache": "/root/.cache/torch/kernels",
                "mail": f"{user}@example.com",
                "ipv4": "192.168.1.20",
                "ipv6": "fe80::1ff:fe23:4567:890a",
                "url": f"http://{host}.cluster.example.com:8080/metrics",
                "device": DEVICE_UUID,
                "mig": "MIG-" + PLAIN_UUID,
                "id": PLAIN_UUID,
                "who": f"{user.upper()} ran it",
                "worker": f"{host}_12345",
                "run": f"{RUN_DIR}/x.json",
                "tmp": "/tmp/other-run/x.json",
                f"{host}-key": 1,
            }},
            {"ph": "X", "cat": "cpu_op", "name": SAFE[2], "args": {"Input Dims": [[64, 64], [64, 64]],
                                                                   "notes": SAFE}},
            {"ph": "X", "cat": "kernel", "name": SAFE[0], "args": {"grid": [1, 1, 1], "device": 0}},
        ],
    }


def secrets(host: str, user: str) -> list[str]:
    """Substrings that must not remain (the names themselves are checked as tokens)."""
    return ["/fsx", "/gpfs", "/lustre", "/home", "/root", "/usr/", "/tmp", "C:\\", "Users", "fileserver", "scratch",
            "10.1.2.3", "192.168.1.20", "fe80", "example.com", "29500", "5a3b1c2d", "123e4567", f"~{user}",
            "freeze-abc123", "-old", "site-packages"]


def names_in(text: str, names: list[str]) -> list[str]:
    return [n for n in names if re.search(rf"(?<![a-z0-9]){re.escape(n)}(?![a-z0-9])", text, re.I)]


def pretend(monkeypatch, host: str, user: str, home: str) -> None:
    """Make this process believe it runs as `user` on `host`."""
    monkeypatch.setattr(socket, "gethostname", lambda: host)
    monkeypatch.setattr(getpass, "getuser", lambda: user)
    monkeypatch.setattr(Path, "home", classmethod(lambda cls: Path(home)))
    for var in ("USER", "LOGNAME", "USERNAME", "SUDO_USER", "HOSTNAME"):
        monkeypatch.delenv(var, raising=False)


MACHINES = [("ab", "root", "/root"), ("gpu-node-17", "alice", "/home/alice"),
            ("gpu-node-17.cluster.example.com", "root", "/root"), ("ab", "alice", "/home/alice")]


@pytest.mark.parametrize("host,user,home", MACHINES, ids=[f"{u}@{h}" for h, u, _ in MACHINES])
def test_a_synthetic_trace_keeps_no_machine_detail_and_every_safe_name(monkeypatch, host, user, home):
    pretend(monkeypatch, host, user, home)
    scrubber = Scrubber.for_this_machine(RUN_DIR)
    raw = synthetic_trace(host, user, home)
    clean = sanitize_trace(raw, "x.json", scrubber)
    names = [host, host.split(".")[0], user]

    strings = list(all_strings(clean))
    for text in strings:
        assert not names_in(text, names), text
        assert not [s for s in secrets(host, user) if s.lower() in text.lower()], text
    for safe in SAFE:
        assert safe in strings, safe
    assert clean["traceEvents"][-2]["args"]["notes"] == SAFE  # unchanged, in order

    assert clean["traceName"] == "x.json"
    assert "hostname" not in clean
    assert clean["distributedInfo"] == {"backend": "nccl", "rank": 0, "world_size": 2, "init_method": "<url>"}
    assert clean["deviceProperties"] == [{"id": 0, "name": "NVIDIA H200", "computeMajor": 9}]
    names_of = [e["name"] for e in clean["traceEvents"] if e.get("cat") == "python_function"]
    assert names_of == ["torch/nn/modules/module.py(1751): _call_impl", "<python>/enum.py(1267): __hash__",
                        "snippets/01_matmul_add.py(50): fn", "<path>(12): main", "<path>(3): main"]
    args = clean["traceEvents"][7]["args"]
    assert args["old"] == "<path>" and args["home"] == "~<user>/data" and args["run"] == "x.json"
    assert args["worker"] == "<host>_12345" and args["who"] == "<user> ran it"
    assert args["ipv4"] == args["ipv6"] == "<ip>" and args["device"] == args["id"] == args["mig"] == "<uuid>"
    assert "<host>-key" in args
    assert clean["traceEvents"][1]["args"]["name"] == "<host>_12345 worker"

    # The post-check uses the same detectors: it names every string that carried a detail, and
    # nothing of the result.
    flagged = scrubber.leaks(raw)
    assert len(flagged) == sum(1 for s in all_strings(raw) if scrubber.scrub(s) != s or sanitize._machine_key(s))
    assert any("master_addr" in f for f in flagged) and any(DEVICE_UUID in f for f in flagged)
    assert scrubber.leaks(clean) == []
    assert sanitize_trace(clean, "x.json", scrubber) == clean  # idempotent


def test_boundaries_cases_and_versions():
    scrubber = Scrubber((("/home/alice", ""),), hosts=("gpu-node-17",), users=("alice",))
    assert scrubber.scrub("/home/alice/x.py") == "x.py"
    assert scrubber.scrub("/home/alice-old/x.py") == "<path>"  # not "-old/x.py" or "~-old"
    assert scrubber.scrub("GPU-NODE-17_4242 and Alice-2") == "<host>_4242 and <user>-2"
    assert scrubber.scrub("malice and gpu-node-170") == "malice and gpu-node-170"  # other words
    for version in ("torch 2.11.0+cu130", "12.4", "580.159.04", "9.0", "v1.2.3.4", "cu130", "sm_90"):
        assert scrubber.scrub(version) == version and scrubber.leak(version) is None


def extras() -> dict[Path, str]:
    """The committed extra artifacts (scripts/catalog.EXTRAS), with their kinds."""
    return {path: kind for example in catalog.EXAMPLES for kind, path in example.extra_paths.items()}


def committed() -> list[Path]:
    return sorted(p for p in (ROOT / "traces").rglob("*.json.gz") if p not in extras())


def test_committed_artifacts_pass_through_unchanged(monkeypatch):
    """They were sanitized by the refresh that made them; the rules must not find anything in them
    (a change would be a leak or an over-eager rule), here as root on a host named `ab` and as
    alice on gpu-node-17 at once."""
    real_roots = Scrubber.for_this_machine().roots
    scrubber = Scrubber(real_roots, hosts=("ab", "gpu-node-17", socket.gethostname()),
                        users=("root", "alice", getpass.getuser()))
    assert len(committed()) >= 30
    for path in committed():
        data = json.loads(gzip.decompress(path.read_bytes()))
        assert sanitize_trace(data, data["traceName"], scrubber) == data, path.relative_to(ROOT)
    for path in [*(ROOT / "traces").rglob("*.txt"), *(ROOT / "traces").rglob("*.unavailable")]:
        text = path.read_text()
        assert scrubber.scrub(text) == text, path.relative_to(ROOT)
    for path, kind in extras().items():
        if path.exists():
            keep = SNAPSHOT_NUMBER_KEYS if kind == "snapshot" else frozenset()
            data = read_extra(path)
            assert sanitize_value(data, scrubber, keep) == data, path.relative_to(ROOT)
