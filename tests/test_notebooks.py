"""The companion notebooks: valid, current, faithful to the snippets and the frozen runs, published
with a working download, linked from their posts, and guarded by the strict build.

Runs without torch: nothing here executes a snippet, except the last test, which needs torch and
IPython (the test extra) and runs one cell on the CPU.
"""

from __future__ import annotations

from tests.conftest import all_strings  # noqa: E402

import hashlib
import json
import re
import shlex
import subprocess
import sys
import textwrap
from html import unescape
from pathlib import Path

import nbformat
import pytest

from scripts.series.runs import catalog, freeze, sanitize
from scripts.series.notebooks import write as notebooks
from tests.conftest import ROOT, clean_copy, mkdocs_build
from tests.site_tools import serve
from tests.test_release import Site

NOTEBOOKS = notebooks.NOTEBOOKS
IDS = [n.name for n in NOTEBOOKS]
# Measurements typed into prose: digits followed by a unit of time, a percentage or a throughput.
MEASUREMENT = re.compile(r"\d(?:[\d.,]*)\s*(?:ns|us|µs|ms|s|%|x|GB|MB|MiB|kB|TB/s|GB/s|TFLOP/s|GFLOP)(?![\w/])")


def load(notebook: notebooks.Notebook) -> dict:
    return json.loads(notebook.path.read_text(encoding="utf-8"))


def source(cell: dict) -> str:
    return "".join(cell["source"])


def text(output: dict) -> str:
    return "".join(output["text"])


def example_cells(nb: dict) -> list[dict]:
    return [c for c in nb["cells"] if c["cell_type"] == "code" and source(c).startswith(notebooks.RUN_PREFIX + " ")]


# --- the committed files ---------------------------------------------------------------------------


def test_docs_notebooks_holds_exactly_the_generated_notebooks():
    assert {1, 2, 3} <= {n.part for n in NOTEBOOKS}
    assert len({n.part for n in NOTEBOOKS}) == len(NOTEBOOKS)
    assert sorted(p.name for p in notebooks.NOTEBOOKS_DIR.glob("*.ipynb")) == sorted(
        n.path.name for n in NOTEBOOKS), "a notebook under docs/notebooks/ that no spec makes, or the reverse"


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=IDS)
def test_notebook_is_valid_nbformat_in_its_canonical_form(notebook):
    raw = notebook.path.read_text(encoding="utf-8")
    nb = nbformat.reads(raw, as_version=nbformat.NO_CONVERT)
    nbformat.validate(nb)
    assert (nb.nbformat, nb.nbformat_minor) == (4, 5)
    # Byte for byte what nbformat itself writes: Jupyter can save it without a diff.
    assert nbformat.writes(nb) + "\n" == raw
    assert len({c.id for c in nb.cells}) == len(nb.cells)


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=IDS)
def test_notebook_is_current(notebook):
    assert notebook.path.read_bytes() == notebooks.render(notebook), (
        f"{notebook.path.relative_to(ROOT)} is stale: run `make notebooks`")
    assert notebooks.render(notebook) == notebooks.render(notebook)  # deterministic


def test_check_command_passes_on_the_committed_notebooks():
    done = subprocess.run([sys.executable, "-m", "scripts", "notebooks", "--check"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "current" in done.stdout


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=IDS)
def test_every_run_cell_runs_a_snippet_with_a_catalog_examples_arguments(notebook):
    nb = load(notebook)
    cells = example_cells(nb)
    keys = []
    for cell in cells:
        words = shlex.split(source(cell))
        assert words[0] == notebooks.RUN_PREFIX and words[1].startswith("snippets/"), words
        snippet = ROOT / words[1]
        assert snippet.is_file(), f"{words[1]} does not exist"
        args = words[2:]
        assert args[-2:] == ["--trace_dir", f"{notebooks.TRACE_DIR}/{snippet.stem}"]
        key = cell["metadata"]["frozen"]["example"]
        example = catalog.get(key)
        assert example.script == snippet
        assert tuple(args[:-2]) == example.args, f"{key}: the cell's arguments are not the catalog's"
        keys.append(key)
    # Every example of the part, each once (Part 1's notebook also runs the sweep beyond it).
    part = getattr(catalog, notebook.catalog_group) + (catalog.SWEEP if notebook.part == 1 else ())
    assert sorted(keys) == sorted(e.key for e in part)
    # The setup cell fetches exactly the snippets the cells run.
    setup = next(source(c) for c in nb["cells"] if c["cell_type"] == "code")
    listed = json.loads(re.search(r"^SNIPPETS = (\[.*\])$", setup, re.M).group(1))
    assert sorted(listed) == sorted({Path(shlex.split(source(c))[1]).name for c in cells})


def expected_output(example: catalog.Example) -> list[tuple[str, str]]:
    """What the snippet prints, written from its code (checked below), not from scripts/series/notebooks/write.py."""
    written = f"traces_nb/{example.snippet}/{example.tag}"
    if example.unavailable_path.exists():
        reason = example.unavailable_path.read_text().strip()
        return [("stderr", f"BACKEND UNAVAILABLE: {reason}\n"), ("stdout", f"wrote {written}.unavailable\n")]
    return [("stdout", example.table_path.read_text() + f"wrote {written}.json and .txt\n")]


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=IDS)
def test_stored_outputs_are_the_frozen_tables_and_the_snippets_last_line(notebook):
    for cell in example_cells(load(notebook)):
        example = catalog.get(cell["metadata"]["frozen"]["example"])
        got = [(o["name"], text(o)) for o in cell["outputs"]]
        assert all(o["output_type"] == "stream" for o in cell["outputs"])
        assert got == expected_output(example), example.key
        meta = freeze.read_meta(example)
        assert cell["metadata"]["frozen"]["inputs_hash"] == meta.inputs_hash
        assert meta.inputs_hash == freeze.inputs_hash(freeze.inputs_of(example))
        assert cell["execution_count"] is None  # stored from the GPU run, never executed here


# The end of a snippet's main: it writes the table (or report) to .txt, prints it, then names the
# files. Either `write_text(V + "\n")` and `print(V)`, or `write_text(V)` and `print(V, end="")`:
# both print exactly the .txt's content before the last line.
LAST_LINE = 'print(f"wrote {args.trace_dir / stem}.json and .txt")'
PRINTS_TXT = re.compile(r'write_text\((?P<v>\w+) \+ "\\n"\).*print\((?P=v)\)\n\s*' + re.escape(LAST_LINE)
                        + r'|write_text\((?P<w>\w+)\).*print\((?P=w), end=""\)\n\s*' + re.escape(LAST_LINE), re.S)


def test_the_snippets_print_what_the_outputs_say():
    used = {e.script for n in NOTEBOOKS for e in n.examples}
    for script in used:
        assert PRINTS_TXT.search(script.read_text()), f"{script.name} no longer prints its .txt, then {LAST_LINE}"
    attention = (ROOT / "snippets" / "04_attention.py").read_text()
    assert 'print(f"BACKEND UNAVAILABLE: {refusal}", file=sys.stderr)' in attention
    assert 'print(f"wrote {args.trace_dir / stem}.unavailable")' in attention
    # The pattern itself rejects a snippet that prints something else.
    assert not PRINTS_TXT.search('x.write_text(table + "\\n")\nprint(table.upper())\n' + LAST_LINE)


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=IDS)
def test_metadata_records_the_gpu_run(notebook):
    nb = load(notebook)
    runs = nb["metadata"]["frozen_runs"]
    metas = [freeze.read_meta(e) for e in notebook.examples]
    envs = {(m.environment.gpu, m.environment.torch, m.environment.driver, m.day) for m in metas}
    assert {(r["gpu"], r["torch"], r["driver"], r["date"]) for r in runs} == envs
    assert all(r["gpu"] and r["driver"] and r["cuda"] for r in runs)
    assert nb["metadata"]["kernelspec"]["name"] == "python3"
    assert nb["metadata"]["post"] == notebook.post_url


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=IDS)
def test_nothing_from_a_machine_leaks_into_a_notebook(notebook):
    raw = notebook.path.read_text(encoding="utf-8")
    scrubber = freeze.Scrubber.for_this_machine()
    nb = json.loads(raw)
    # What the GPU runs wrote (the outputs) and what the generator records of them (the metadata)
    # name no path, host, user, address or device, by the sanitizer's own detectors. The code and
    # prose come from the repository: their links and variable names (`root`) are no machine's.
    assert not scrubber.leaks([[cell.get("outputs", []) for cell in nb["cells"]], nb["metadata"]])
    assert not any(pattern.search(raw) for pattern in (sanitize.POSIX_PATH, sanitize.WINDOWS_PATH, sanitize.UNC_PATH))
    assert str(ROOT) not in raw
    # Dates, never times: nothing says when the generator ran.
    assert not re.search(r"\d{4}-\d\d-\d\dT\d\d:", raw)
    # The check itself finds a planted path.
    assert scrubber.leaks({"cells": [{"source": ["see /home/someone/profile.json"]}]})


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=IDS)
def test_markdown_types_no_numbers_about_our_runs(notebook):
    # The GPU's name, printed from the runs' metadata, may hold a size ("NVIDIA H100 80GB HBM3").
    gpus = {freeze.read_meta(e).environment.gpu for e in notebook.examples if e.meta_path.exists()} - {None, ""}
    for cell in load(notebook)["cells"]:
        if cell["cell_type"] == "markdown":
            text = source(cell)
            for gpu in gpus:
                text = text.replace(gpu, "the GPU")
            found = MEASUREMENT.search(text)
            assert not found, f"{notebook.name}: a number in the prose: {found.group(0)!r}"
    assert MEASUREMENT.search("took 5.8 us") and MEASUREMENT.search("37.12%")


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=IDS)
def test_headings_have_no_inline_code(notebook):
    # mkdocs-jupyter builds the page's table of contents from the notebook with inline code cut
    # out, so a heading with `code` gets a TOC link to an id the page does not have.
    for cell in load(notebook)["cells"]:
        if cell["cell_type"] == "markdown":
            for heading in re.findall(r"^#+ .*$", source(cell), re.M):
                assert "`" not in heading, f"{notebook.name}: {heading}"


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=IDS)
def test_notebook_opens_with_setup_and_ends_with_perfetto_and_the_analyzer(notebook):
    cells = load(notebook)["cells"]
    assert cells[0]["cell_type"] == "markdown" and source(cells[0]).startswith("# ")
    assert f"](../../{notebook.post_url})" in source(cells[0])  # back to the post
    assert cells[1]["cell_type"] == "code" and notebooks.SITE_URL_LINE in source(cells[1])
    closing = source(cells[-1])
    first = notebook.examples[0]
    assert "https://ui.perfetto.dev" in closing and "Open trace file" in closing
    assert f"python scripts/analyze.py traces_nb/{first.snippet}/{first.tag}.json" in closing
    # Each example cell follows a markdown cell that says what to look for.
    for before, cell in zip(cells, cells[1:]):
        if cell["cell_type"] == "code" and source(cell).startswith(notebooks.RUN_PREFIX + " "):
            assert before["cell_type"] == "markdown" and source(before).strip()


# --- the setup cell --------------------------------------------------------------------------------


def setup_code(data: bytes) -> str:
    return next(source(c) for c in json.loads(data)["cells"] if c["cell_type"] == "code")


def run_setup(code: str, cwd: Path) -> subprocess.CompletedProcess:
    cwd.mkdir(parents=True, exist_ok=True)
    program = code + "\nprint('CWD', os.getcwd())\n"
    return subprocess.run([sys.executable, "-c", program], cwd=cwd, capture_output=True, text=True, timeout=60)


def test_setup_without_a_checkout_or_site_url_says_what_to_do_in_one_line(tmp_path):
    done = run_setup(setup_code(NOTEBOOKS[0].path.read_bytes()), tmp_path / "elsewhere")
    assert done.returncode != 0
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("RuntimeError: no snippets/ here or above")
    assert "checkout of the repository" in last and "download it again" in last


def test_setup_finds_the_checkout_from_a_subfolder():
    done = run_setup(setup_code(NOTEBOOKS[0].path.read_bytes()), ROOT / "docs" / "notebooks")
    assert done.returncode == 0, done.stderr
    assert f"CWD {ROOT}" in done.stdout


def test_published_copy_sets_site_url_and_absolute_links():
    committed = NOTEBOOKS[0].path.read_bytes()
    copy = notebooks.published_copy(committed, "https://example.org/profiling/")
    assert b'SITE_URL = \\"https://example.org/profiling/\\"' in copy
    assert b"SITE_URL = None" not in copy and b"](../../" not in copy
    assert b"](https://example.org/profiling/blog/matmul-add/)" in copy
    assert notebooks.published_copy(copy, "https://example.org/profiling/") == copy
    nbformat.validate(nbformat.reads(copy.decode(), as_version=4))
    # Only the setup line and the links differ.
    changed = [a for a, b in zip(json.loads(committed)["cells"], json.loads(copy)["cells"]) if a != b]
    assert len(changed) == 3  # the title cell, the setup cell, the closing cell


# --- the built site --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def site(built_site) -> Site:
    return Site(built_site)


def page_of(site: Site, notebook) -> Path:
    return site.root / notebook.page_url / "index.html"


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=IDS)
def test_site_renders_each_notebook_with_its_tables(site, notebook):
    page = page_of(site, notebook)
    assert page.is_file(), f"no page for {notebook.name}"
    html = page.read_text(encoding="utf-8")
    shown = unescape(html)
    for example in notebook.examples:
        for _, printed in expected_output(example):
            assert printed.rstrip("\n") in shown, f"{example.key}: its output is not on the page"
    assert "md-content__inner" in html and "jupyter-wrapper" in html
    # Nothing loads from elsewhere: no MathJax loader (empty or not), no RequireJS.
    assert not re.search(r"<script[^>]+src=\"(?:https?:)?//", html)
    assert '<script src="">' not in html and "require.min.js" not in html and "mathjax" not in html.lower()


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=IDS)
def test_site_offers_the_download_with_the_site_url_set(site, notebook):
    page = page_of(site, notebook)
    elements = site.elements(page)
    downloads = [a["href"] for tag, a in elements.tags if tag == "a" and a.get("href", "").endswith(".ipynb")]
    assert downloads, f"{notebook.name}: no download link"
    for href in downloads:
        file, _ = site.target(page, href)
        assert file.is_file() and file.name == notebook.path.name
        served = file.read_bytes()
        assert served == notebooks.published_copy(notebook.path.read_bytes(), site.root_url)
        assert f'SITE_URL = \\"{site.root_url}\\"'.encode() in served
    # And back to the post.
    posts = [a["href"] for tag, a in elements.tags if tag == "a" and a.get("href")]
    assert any(site.target(page, href) and site.target(page, href)[0] == site.root / notebook.post_url / "index.html"
               for href in posts)


def test_search_indexes_the_notebooks_prose_not_their_tables(built_site):
    # Every page loads the search index; the tables are the posts' (and indexed there).
    docs = json.loads((built_site / "search" / "search_index.json").read_text())["docs"]
    for notebook in NOTEBOOKS:
        mine = [d for d in docs if d["location"].startswith(notebook.page_url)]
        words = " ".join(d["title"] + " " + d["text"] for d in mine)
        assert notebook.title in words
        assert "Self CPU time total:" not in words and "snippets/01_matmul_add.py --size" not in words


def test_site_publishes_the_snippets_a_download_fetches(built_site):
    for notebook in NOTEBOOKS:
        for name in notebook.snippets:
            assert (built_site / "snippets" / name).read_bytes() == (ROOT / "snippets" / name).read_bytes()


def test_downloaded_notebook_fetches_its_snippets_from_the_site(built_site, tmp_path):
    notebook = NOTEBOOKS[0]
    with serve(built_site) as url:
        copy = notebooks.published_copy(notebook.path.read_bytes(), url)
        done = run_setup(setup_code(copy), tmp_path / "colab")
    assert done.returncode == 0, done.stderr
    for name in notebook.snippets:
        assert (tmp_path / "colab" / "snippets" / name).read_bytes() == (ROOT / "snippets" / name).read_bytes()


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=IDS)
def test_each_post_links_to_its_notebook_near_the_top(site, notebook):
    post = site.root / notebook.post_url / "index.html"
    html = post.read_text(encoding="utf-8")
    box = re.search(r'<div class="admonition example companion-notebook">.*?</div>', html, re.S)
    assert box, f"{notebook.post_url} has no companion-notebook box"
    assert html.index(box.group(0)) < html.index("<h2"), "the box is not above the first section"
    targets = {site.target(post, href)[0] for href in re.findall(r'href="([^"]+)"', box.group(0))}
    assert page_of(site, notebook) in targets
    assert site.root / notebook.download_url in targets


def test_nav_and_notebooks_page_list_every_notebook(site):
    index = site.root / "notebooks" / "index.html"
    linked = {site.target(index, href)[0] for href in site.links(index) if site.target(index, href)}
    for notebook in NOTEBOOKS:
        assert page_of(site, notebook) in linked
        assert site.root / notebook.download_url in linked
    home = site.root / "index.html"
    nav = {site.target(home, href)[0] for href in site.links(home) if site.target(home, href)}
    assert index in nav or any(page_of(site, n) in nav for n in NOTEBOOKS)


# --- staleness guards ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def refreshed_copy(tmp_path_factory) -> Path:
    """A copy of the repository where a GPU refresh rewrote one table (its metadata updated, as
    `scripts.series.runs.freeze` does) and nobody regenerated the notebooks."""
    project = clean_copy(tmp_path_factory.mktemp("refreshed"))
    example = catalog.get("01_matmul_add/64_bf16_cold_eager")
    table = project / example.table_path.relative_to(ROOT)
    table.write_text(table.read_text().replace("Self CUDA time total:", "Self CUDA time total (new run):"))
    meta_path = project / example.meta_path.relative_to(ROOT)
    meta = json.loads(meta_path.read_text())
    meta["outputs"][table.name] = hashlib.sha256(table.read_bytes()).hexdigest()
    meta_path.write_bytes(freeze.meta_file_bytes(freeze.seal(meta)))
    return project


def test_stale_notebook_fails_the_strict_build_with_one_line_naming_it(refreshed_copy):
    done = mkdocs_build(refreshed_copy, "-d", str(refreshed_copy / "site-stale"))
    assert done.returncode != 0
    output = done.stdout + done.stderr
    lines = [line for line in output.splitlines() if "is stale" in line]
    assert len(lines) == 1, output[-3000:]
    assert "docs/notebooks/part-1-matmul-add.ipynb is stale" in lines[0]
    assert "01_matmul_add/64_bf16_cold_eager" in lines[0] and "make notebooks" in lines[0]
    assert "need a GPU run" not in output  # the frozen runs themselves are fresh


def test_stale_notebook_only_warns_when_not_strict(refreshed_copy):
    # What `mkdocs serve` runs before each build, without building the whole site.
    program = textwrap.dedent("""
        import logging, types
        logging.basicConfig(level=logging.WARNING)
        from scripts.series.mkdocs_glue import hooks as mkdocs_hooks
        mkdocs_hooks.on_pre_build(types.SimpleNamespace(strict=False))
        print("BUILD GOES ON")
    """)
    done = subprocess.run([sys.executable, "-c", program], cwd=refreshed_copy, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "BUILD GOES ON" in done.stdout
    assert "part-1-matmul-add.ipynb is stale" in done.stderr and "make notebooks" in done.stderr


def test_check_command_lists_stale_notebooks_and_regeneration_fixes_them(refreshed_copy, tmp_path):
    project = clean_copy(tmp_path / "again")
    for rel in ("traces/01_matmul_add/64_bf16_cold_eager.txt", "traces/01_matmul_add/64_bf16_cold_eager.meta.json"):
        (project / rel).write_bytes((refreshed_copy / rel).read_bytes())

    def cli(*args):
        return subprocess.run([sys.executable, "-m", "scripts", "notebooks", *args], cwd=project,
                              capture_output=True, text=True, timeout=120)

    done = cli("--check")
    assert done.returncode == 1
    assert done.stderr.strip() == ("docs/notebooks/part-1-matmul-add.ipynb is stale (the output of "
                                   "01_matmul_add/64_bf16_cold_eager changed): run `make notebooks` and commit it")
    done = cli()
    assert done.returncode == 0 and done.stdout.strip() == "wrote docs/notebooks/part-1-matmul-add.ipynb"
    assert "Self CUDA time total (new run):" in (project / "docs/notebooks/part-1-matmul-add.ipynb").read_text()
    assert cli("--check").returncode == 0


def test_a_successful_refresh_regenerates_the_notebooks(monkeypatch, capsys):
    from scripts.series import cli

    written = []
    monkeypatch.setattr(notebooks, "write_all", lambda: written.append(True) or ([], []))
    monkeypatch.setattr(freeze, "refresh", lambda *args, **kwargs: 0)
    assert cli.main(["refresh", "--only", "01_matmul_add/64_bf16_cold_eager"]) == 0
    assert written == [True]
    monkeypatch.setattr(freeze, "refresh", lambda *args, **kwargs: 1)  # a failed run writes nothing
    assert cli.main(["refresh", "--only", "01_matmul_add/64_bf16_cold_eager"]) == 1
    assert written == [True]


def test_changed_arguments_make_a_notebook_stale(monkeypatch):
    notebook = NOTEBOOKS[0]
    example = notebook.examples[0]
    changed = catalog.Example(example.snippet, example.tag, example.args + ("--warmup",))
    monkeypatch.setitem(catalog._BY_KEY, example.key, changed)
    monkeypatch.setattr(freeze, "status", lambda e: freeze.Status(e, "fresh"))
    stale = notebooks.check([notebook])
    assert len(stale) == 1 and f"the command of {example.key} changed" in str(stale[0])


def test_a_missing_run_is_reported_not_raised(monkeypatch):
    monkeypatch.setattr(freeze, "status", lambda e: freeze.Status(e, "missing"))
    stale = notebooks.check([NOTEBOOKS[0]])
    assert len(stale) == 1 and "cannot be generated" in str(stale[0]) and "make refresh ONLY=" in str(stale[0])


# --- one cell, really run --------------------------------------------------------------------------


@pytest.mark.slow
def test_first_example_cell_runs_on_the_cpu_as_written(tmp_path):
    """The setup cell and the first example cell, run by IPython from a folder inside a checkout
    (here a copy of snippets/; with `--device cpu` and a small size: no GPU here), print a table and
    the same last line as the stored output."""
    pytest.importorskip("torch")
    pytest.importorskip("IPython")
    notebook = NOTEBOOKS[0]
    checkout = tmp_path / "checkout"
    (checkout / "snippets").mkdir(parents=True)
    for name in notebook.snippets:
        (checkout / "snippets" / name).write_bytes((ROOT / "snippets" / name).read_bytes())
    (checkout / "docs").mkdir()
    run = source(example_cells(load(notebook))[0]).replace("--size 64", "--size 16") + " --device cpu"
    program = textwrap.dedent(f"""
        from IPython.core.interactiveshell import InteractiveShell
        shell = InteractiveShell.instance()
        shell.run_cell({setup_code(notebook.path.read_bytes())!r}).raise_error()
        shell.run_cell({run!r}).raise_error()
    """)
    done = subprocess.run([sys.executable, "-c", program], cwd=checkout / "docs", capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Self CPU time total:" in done.stdout
    assert done.stdout.rstrip().endswith("wrote traces_nb/01_matmul_add/16_bf16_cold_eager.json and .txt")
    assert (checkout / "traces_nb" / "01_matmul_add" / "16_bf16_cold_eager.json").is_file()
