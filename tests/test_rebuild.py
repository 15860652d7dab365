"""A rebuild from another GPU's refresh: the overlay of its runs (scripts/series/runs/overlay.py),
the refusal of statements that join runs of two GPUs (scripts/series/pages/one_gpu.py), and the
strict build of `python -m scripts rebuild-check` against a real refresh where one is at hand."""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path
from types import SimpleNamespace

import pytest

from scripts.series.mkdocs_glue import ledger as glue
from scripts.series.pages import one_gpu
from scripts.series.pages.claims import LEDGER, Answer, Claim, Ledger
from scripts.series.runs import catalog, freeze, overlay
from scripts.series.runs.meta import dumps, seal
from tests.conftest import ROOT, fake_project
from tests.test_freeze import FAKE_SNIPPET, snapshot

OTHER_GPU = "NVIDIA H100 80GB HBM3"


@pytest.fixture
def repo(tmp_path, monkeypatch):
    """A repository of two frozen fake examples (no GPU recorded), and the catalog listing them."""
    root = tmp_path / "repo"
    root.mkdir()
    fake_project(root, monkeypatch, FAKE_SNIPPET)
    examples = [catalog.Example("fake", f"run{i}", ("--tag", f"run{i}")) for i in range(2)]
    assert freeze.refresh(examples, sys.executable, log=lambda *_: None) == 0
    return root, examples


def relabel(folder: Path, tag: str, gpu: str) -> None:
    """A run's metadata as another GPU's refresh wrote it: its GPU named, sealed again."""
    path = folder / f"{tag}.meta.json"
    fields = json.loads(path.read_text())
    fields["environment"]["gpu"] = gpu
    path.write_bytes(dumps(seal(fields)))


def tarball_of(root: Path, dest: Path, edit=lambda traces: None) -> Path:
    """A refresh's tarball made from root's traces/, after `edit` changed the copy."""
    staged = dest.parent / "staged"
    shutil.copytree(root / "traces", staged / "traces")
    edit(staged / "traces")
    with tarfile.open(dest, "w:gz") as tar:
        tar.add(staged / "traces", arcname="traces")
    return dest


def test_the_other_gpus_runs_replace_exactly_the_examples_whose_inputs_are_unchanged(repo, tmp_path):
    root, (run0, run1) = repo

    def other_gpu(traces):
        relabel(traces / "fake", "run0", OTHER_GPU)
        relabel(traces / "fake", "run1", OTHER_GPU)
        (traces / "fake" / "run1.txt").write_text("edited after the run\n")  # its digest no longer matches

    tarball = tarball_of(root, tmp_path / "refresh.tgz", other_gpu)
    tree = tmp_path / "tree"
    shutil.copytree(root / "traces", tree / "traces")
    (tree / "traces" / "fake" / "run0.unavailable").write_text("a leftover of this tree's run\n")
    never_run = catalog.Example("fake", "run2", ("--tag", "run2"))
    laid = overlay.lay(tarball, tree, [run0, run1, never_run])

    assert [t.example.key for t in laid.taken] == ["fake/run0"]
    assert laid.taken[0].meta.environment.gpu == OTHER_GPU
    assert json.loads((tree / "traces/fake/run0.meta.json").read_text())["environment"]["gpu"] == OTHER_GPU
    assert not (tree / "traces/fake/run0.unavailable").exists()  # this tree's run went whole
    why = {k.example.key: k.why for k in laid.kept}
    assert why == {"fake/run1": "its run1.txt is not the file that run wrote",
                   "fake/run2": "the tarball has no run of it, nor has this tree"}
    assert (tree / "traces/fake/run1.txt").read_bytes() == (root / "traces/fake/run1.txt").read_bytes()
    report = "\n".join(laid.lines("refresh.tgz"))
    assert f"1 example(s) from refresh.tgz (run on {OTHER_GPU}):\n  fake/run0" in report
    assert "  fake/run1: its run1.txt is not the file that run wrote" in report

    laid.put_back([run0], root, tree)
    assert snapshot(tree / "traces") == snapshot(root / "traces")
    assert not laid.taken and "fake/run0" in {k.example.key for k in laid.kept}


def test_a_run_of_other_arguments_or_another_snippet_is_not_used(repo, tmp_path):
    root, (run0, _) = repo
    tarball = tarball_of(root, tmp_path / "refresh.tgz")
    changed = catalog.Example("fake", "run0", ("--tag", "run0", "--ranks", "0"))
    laid = overlay.lay(tarball, tmp_path / "tree", [changed])
    assert not laid.taken
    assert laid.kept[0].why == "its arguments changed from '--tag run0' to '--tag run0 --ranks 0'"
    (root / "snippets" / "fake.py").write_text(FAKE_SNIPPET + "\n# edited since\n")
    laid = overlay.lay(tarball, tmp_path / "tree", [run0])
    assert laid.kept[0].why == "snippets/fake.py changed since that run"


def test_a_tarball_lays_nothing_outside_traces_and_a_bad_one_is_one_line(repo, tmp_path):
    root, (run0, _) = repo
    tarball = tmp_path / "hostile.tgz"
    with tarfile.open(tarball, "w:gz") as tar:
        for name in ("../escaped.txt", "/abs.txt", "notes/x.txt", "traces/../../up.txt"):
            info = tarfile.TarInfo(name)
            info.size = 2
            tar.addfile(info, io.BytesIO(b"x\n"))
        link = tarfile.TarInfo("traces/fake/run0.meta.json")
        link.type, link.linkname = tarfile.SYMTYPE, "/etc/passwd"
        tar.addfile(link)
        info = tarfile.TarInfo("traces/readme.txt")
        info.size = 2
        tar.addfile(info, io.BytesIO(b"x\n"))
    tree = tmp_path / "tree"
    laid = overlay.lay(tarball, tree, [run0])
    assert not laid.taken and laid.kept[0].why == "the tarball has no run of it"
    assert not (tmp_path / "escaped.txt").exists() and not (tmp_path / "up.txt").exists()
    assert not tree.exists() or not any(tree.rglob("*"))
    (tmp_path / "not.tgz").write_text("not a tarball")
    with pytest.raises(overlay.OverlayError, match=r"cannot read it as a tarball") as err:
        overlay.lay(tmp_path / "not.tgz", tree, [run0])
    assert "\n" not in str(err.value)


# --- one GPU per statement ------------------------------------------------------------------------

GPUS = {"a/h100": OTHER_GPU, "a/h100b": OTHER_GPU, "b/h200": "NVIDIA H200", "c/unknown": None}


def planted(*claims: tuple[str, tuple[str, ...]], answers: dict | None = None) -> Ledger:
    ledger = Ledger()
    for page, runs in claims:
        ledger.record(Claim(page, f"a statement over {', '.join(runs)}", runs, (), True))
    ledger.answers.update(answers or {})
    return ledger


def test_a_statement_over_runs_of_two_gpus_is_named_with_each_runs_gpu():
    ledger = planted(("p.md", ("a/h100", "b/h200")), ("p.md", ("a/h100", "a/h100b")),
                     ("p.md", ("a/h100", "c/unknown")))
    (mixed,) = one_gpu.mixed_statements(ledger, GPUS.get)
    assert mixed.runs == ("a/h100", "b/h200")
    message = mixed.message(usual="NVIDIA H200")
    assert message == ('p.md: "a statement over a/h100, b/h200" rests on runs made on different GPUs '
                       f"({OTHER_GPU}: a/h100; NVIDIA H200: b/h200), so it would compare the GPUs, not the code: "
                       'refresh on the NVIDIA H200 that made the others with make refresh ONLY="a/h100"')


def test_a_page_that_reads_runs_of_two_gpus_is_named_since_it_names_one_gpu_for_all():
    ledger = planted()
    ledger.used.update({"p.md": {"b/h200", "a/h100", "a/h100b"}, "q.md": {"a/h100", "c/unknown"}})
    (mixed,) = one_gpu.mixed_statements(ledger, GPUS.get)
    assert mixed.message() == ("p.md: the page rests on runs made on different GPUs "
                               f"({OTHER_GPU}: a/h100, a/h100b; NVIDIA H200: b/h200), while it names one GPU for "
                               'all its runs: refresh on one GPU with make refresh ONLY="a/h100 a/h100b b/h200"')
    assert one_gpu.usual_gpu(["a/h100", "a/h100b", "b/h200", "c/unknown"], GPUS.get) == OTHER_GPU


def test_a_comparison_no_claim_words_and_a_question_asked_of_two_gpus_are_named_once_each():
    both = ("a/h100", "b/h200")
    answers = {
        ("sides", "x"): [Answer("p.md", "host time", ("A", "B"), "lower", both)],  # worded by the claim below
        ("sides", "y"): [Answer("q.md", "GPU time", ("A", "B"), "higher", both)],  # a table's cell: no claim
        ("question", "n = 64"): [Answer("p.md", "t", ("A", "B"), "same", ("a/h100",)),
                                 Answer("r.md", "t", ("A", "B"), "same", ("b/h200",))],
        ("question", "one GPU"): [Answer("p.md", "t", ("A", "B"), "same", ("a/h100",)),
                                  Answer("r.md", "t", ("A", "B"), "same", ("a/h100b",))],
    }
    mixed = one_gpu.mixed_statements(planted(("p.md", both), answers=answers), GPUS.get)
    assert [(m.page, m.what) for m in mixed] == [
        ("p.md", f'"a statement over a/h100, b/h200"'),
        ("q.md", "the comparison of GPU time (A against B)"),
        ("p.md, r.md", 'the question "n = 64", asked on p.md, r.md,'),
    ]


def test_a_strict_build_fails_on_a_statement_over_two_gpus_and_lists_it(tmp_path, monkeypatch):
    monkeypatch.setattr(one_gpu, "gpu_of", GPUS.get)
    LEDGER.clear()
    LEDGER.start_page("p.md")
    for run in ("a/h100", "b/h200"):
        LEDGER.use(run)
        LEDGER.link(run)  # its buttons shown: the build's other check is content
    LEDGER.record(Claim("p.md", "ours against theirs", ("a/h100", "b/h200"), (), True))
    try:
        with pytest.raises(glue.PluginError, match="ours against theirs.*rests on runs made on different GPUs"):
            glue.on_post_build(SimpleNamespace(site_dir=str(tmp_path), strict=True))
        listing = json.loads((tmp_path / glue.LISTING).read_text())
        both = {"a/h100": OTHER_GPU, "b/h200": "NVIDIA H200"}
        assert listing[glue.MIXED_GPUS] == [{"page": "p.md", "statement": "the page", "runs": both},
                                            {"page": "p.md", "statement": '"ours against theirs"', "runs": both}]
    finally:
        LEDGER.clear()


def test_rebuild_checks_build_lists_a_page_of_two_gpus_without_refusing_it(tmp_path, monkeypatch):
    monkeypatch.setattr(one_gpu, "gpu_of", GPUS.get)
    monkeypatch.setenv(one_gpu.PAGES_MAY_MIX, "1")
    LEDGER.clear()
    LEDGER.start_page("p.md")
    for run in ("a/h100", "b/h200"):
        LEDGER.use(run)
        LEDGER.link(run)  # its buttons shown: the build's other check is content
    try:
        glue.on_post_build(SimpleNamespace(site_dir=str(tmp_path), strict=True))  # nothing refused
        listing = json.loads((tmp_path / glue.LISTING).read_text())
        assert [m["statement"] for m in listing[glue.MIXED_GPUS]] == [one_gpu.PAGE]
    finally:
        LEDGER.clear()


def test_the_pages_own_prose_names_no_gpu_model():
    """A rebuild on another GPU must not leave a sentence naming ours: text outside the executed
    blocks (front matter, prose) says "a Hopper GPU"; the blocks print the GPU from the runs'
    metadata. (The A100 is the original series' GPU, quoted, and may be named.)"""
    found = []
    for page in sorted((ROOT / "docs").rglob("*.md")):
        text = re.sub(r"```python exec=.*?```", "", page.read_text(encoding="utf-8"), flags=re.S)
        found += [f"{page.relative_to(ROOT)}: ...{m.group(0)}" for m in re.finditer(r".{0,40}\bH[12]00\b", text)]
    assert not found, found


# --- the real thing -------------------------------------------------------------------------------

# Refreshes made on other GPUs, kept beside the repository (never in it): ../shared/rebuilds/ as
# its README describes, or $REBUILD_TARBALLS.
REBUILDS = Path(os.environ.get("REBUILD_TARBALLS") or ROOT.parent / "shared" / "rebuilds")


@pytest.mark.skipif(not sorted(REBUILDS.glob("*.tgz")),
                    reason=f"no refresh from another GPU at {REBUILDS} (set REBUILD_TARBALLS to a folder of them)")
def test_the_site_builds_strictly_from_another_gpus_refresh():
    tarball = sorted(REBUILDS.glob("*.tgz"))[-1]
    done = subprocess.run([sys.executable, "-m", "scripts", "rebuild-check", str(tarball)], cwd=ROOT,
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-3000:]
    taken = re.search(r"^(\d+) example\(s\) from .*\(run on (.+)\):$", done.stdout, re.M)
    assert taken and int(taken.group(1)) > 0, done.stdout[:2000]
    assert re.search(r"^\d+ claim\(s\) checked, 0 failing$", done.stdout, re.M)
    assert "strict build: passed" in done.stdout
