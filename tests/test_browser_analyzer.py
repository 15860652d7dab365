"""The in-browser analyzer (docs/guide/analyze-in-browser.md, scripts/tracefacts/entry/browser.py).

In Chromium, on the built site: a dropped trace gives the facts the command line gives for it,
shown in the facts box and the per-step table, with its timeline; a file it cannot read gives the
command line's one line; nothing is requested from another site, and Pyodide is not fetched until
the reader asks. Without a browser: the Python side needs no thread and nothing outside the
modules the page ships, gzip is read as the command line reads it, and a build without the
vendored Pyodide fails (strict) or says so on the page (serve).
"""

from __future__ import annotations

import gzip
import json
import mimetypes
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from scripts.tracefacts.entry import browser as reader  # `browser` is the Chromium fixture here
from scripts.series.mkdocs_glue import hooks as mkdocs_hooks
from scripts.series.pages import analyzer_page as pages_browser, pyodide as vendor_pyodide
from scripts.tracefacts.facts.analysis import TIMES_ONLY_KINDS, facts
from scripts.tracefacts.facts.recording import recording_facts
from scripts.tracefacts.entry.cli import strict_json
from scripts.tracefacts.model.trace import TraceError, load_trace
from tests.conftest import ROOT
from tests.injected_trace import IMG, poisoned_trace
from tests.test_browser import base_url, browser, visit  # noqa: F401 (fixtures)

PAGE = "guide/analyze-in-browser/"
MATMUL = ROOT / "traces/01_matmul_add/64_bf16_cold_eager.json.gz"
ATTENTION = ROOT / "traces/04_attention/naive_b8_h16_s1024_d64_bf16_warm.json.gz"  # Part 3


def cli_facts(path: Path) -> dict:
    """What `python scripts/analyze.py PATH --json` prints, as analyze.py computes it."""
    return json.loads(strict_json(facts(load_trace(path, skip_kinds=TIMES_ONLY_KINDS)).to_dict()))


def cli_error(path: Path) -> str:
    """The command line's message for a file it cannot read, after the file's name."""
    with pytest.raises(TraceError) as caught:
        facts(load_trace(path, skip_kinds=TIMES_ONLY_KINDS))
    message = str(caught.value)
    assert message.startswith(f"{path}: ")
    return message[len(f"{path}: "):]


def without_source(data: dict) -> dict:
    """The facts but their source, and but how the trace was recorded (the browser reads every
    event, where the command line reads the ops as times only: the check of Perfetto's import
    covers more there; `same_recording` compares what both say)."""
    return {k: v for k, v in data.items() if k not in ("source", "recording")}


def same_recording(shown: dict, path: Path) -> bool:
    """The recording's warnings and what the page says of it are the command line's."""
    expected = json.loads(strict_json(recording_facts(load_trace(path, skip_kinds=TIMES_ONLY_KINDS)).to_dict()))
    keep = ("steps", "schedule", "shapes", "stacks", "memory", "warnings")
    return {k: shown["recording"][k] for k in keep} == {k: expected[k] for k in keep}


# --- the Python side, without a browser ----------------------------------------------------------


def refuse_threads(self):
    raise RuntimeError("can't start new thread")  # as in Pyodide


@pytest.mark.parametrize("trace", [MATMUL, ATTENTION], ids=["part1", "part3"])
def test_reading_needs_no_thread_and_gives_the_cli_facts(trace, tmp_path, monkeypatch):
    expected = cli_facts(trace)
    upload = tmp_path / "upload"
    upload.write_bytes(trace.read_bytes())
    monkeypatch.setattr(threading.Thread, "start", refuse_threads)
    out = json.loads(reader.read_json(str(upload), trace.name))
    assert "error" not in out, out
    assert out["facts"]["source"] == trace.name
    assert without_source(out["facts"]) == without_source(expected)
    assert same_recording(out["facts"], trace)
    svg = json.loads(reader.timeline_json())
    assert svg["svg"].startswith("<svg") and svg["window"] == out["facts"]["steps"][0]["label"]


def test_gzip_members_and_padding_read_as_the_cli_reads_them(tmp_path):
    text = MATMUL.read_bytes()
    plain = gzip.decompress(text)
    half = len(plain) // 2
    upload = tmp_path / "upload"
    upload.write_bytes(gzip.compress(plain[:half]) + b"\0" * 7 + gzip.compress(plain[half:]))
    assert without_source(reader.read(upload, "two.json.gz").facts.to_dict()) == \
        without_source(facts(load_trace(MATMUL)).to_dict())


@pytest.mark.parametrize("content", [
    gzip.compress(b'{"traceEvents": []}' * 50)[:40],  # truncated
    gzip.compress(b'{"traceEvents": []}') + b"junk after the member",
], ids=["truncated", "junk-after-member"])
def test_bad_gzip_is_the_cli_message(content, tmp_path):
    upload = tmp_path / "upload"
    upload.write_bytes(content)
    out = json.loads(reader.read_json(str(upload), "bad.json.gz"))
    assert out == {"error": f"bad.json.gz: {cli_error(upload)}"}


def test_gzip_larger_than_a_tab_can_hold_is_refused_in_one_line(tmp_path):
    upload = tmp_path / "upload"
    upload.write_bytes(gzip.compress(b" " * 5000))
    with pytest.raises(TraceError, match=r"^big\.gz: decompresses to more than 0 MB"):
        reader.gunzipped_size(upload, "big.gz", limit=4000)


def test_the_page_ships_every_module_the_reader_path_imports_and_no_other_package(tmp_path):
    # A fresh interpreter reads a trace and draws it as the worker does, then lists what it imported.
    upload = tmp_path / "upload"
    upload.write_bytes(ATTENTION.read_bytes())
    # The analyzer runs there as the package `tracefacts`, alone, as installed: so it does here.
    code = f"""
import json, sys
from pathlib import Path
sys.path.insert(0, {str(ROOT / "scripts")!r})
from tracefacts.entry import browser
assert "error" not in json.loads(browser.read_json({str(upload)!r}, "t.json.gz"))
assert "svg" in json.loads(browser.timeline_json())
top = Path({str(ROOT / "scripts")!r})
ours = sorted(Path(m.__file__).relative_to(top).with_suffix("").as_posix() for name, m in list(sys.modules.items())
              if name.split(".")[0] == "tracefacts")
others = sorted({{m.split(".")[0] for m in sys.modules}} - set(sys.stdlib_module_names) - {{"tracefacts", "__main__"}})
print(json.dumps([ours, others]))
"""
    # -I -S: no site-packages, so nothing imported at start-up passes for an import of ours.
    done = subprocess.run([sys.executable, "-I", "-S", "-c", code], capture_output=True, text=True, check=True)
    ours, others = json.loads(done.stdout)
    assert set(ours) <= set(pages_browser.shipped_modules()), set(ours) - set(pages_browser.shipped_modules())
    assert {"tracefacts/entry/browser", "tracefacts/model/trace", "tracefacts/facts/analysis",
            "tracefacts/pictures/timeline/draw", "tracefacts/pictures/facts_box"} <= set(ours)
    assert others == []  # no series, no scripts, nothing outside the standard library


def test_strict_build_without_pyodide_names_the_command(monkeypatch, caplog):
    monkeypatch.setattr(vendor_pyodide, "ROOT", Path("/nonexistent"))
    problem = vendor_pyodide.missing(Path("/nonexistent"))
    assert problem and "`make pyodide`" in problem and vendor_pyodide.PYODIDE_VERSION in problem
    monkeypatch.setattr(vendor_pyodide, "missing", lambda root=None: problem)

    class Config(dict):
        strict = True

    with pytest.raises(mkdocs_hooks.PluginError, match="make pyodide"):
        mkdocs_hooks.on_pre_build(Config())
    Config.strict = False  # mkdocs serve: a warning, and the page says why
    mkdocs_hooks.on_pre_build(Config())
    assert "make pyodide" in caplog.text
    notice = pages_browser.widget()
    assert "make pyodide" in notice and "trace-analyzer" not in notice


def test_vendoring_refuses_a_tarball_that_is_not_the_pinned_one(tmp_path):
    fake = tmp_path / "pyodide.tgz"
    fake.write_bytes(b"not the package")
    with pytest.raises(vendor_pyodide.VendorError, match="not pyodide"):
        vendor_pyodide.unpack(fake, tmp_path)
    assert vendor_pyodide.missing(tmp_path)


def test_both_servers_give_wasm_its_type():
    # WebAssembly.instantiateStreaming insists on application/wasm; module scripts on a JS type.
    # Python's own table, without the machine's /etc/mime.types (which a CI image may lack).
    assert mimetypes.MimeTypes(filenames=()).guess_type("x.wasm")[0] == "application/wasm"
    from mkdocs.livereload import LiveReloadServer

    assert LiveReloadServer._guess_type("pyodide.asm.wasm") == "application/wasm"
    assert LiveReloadServer._guess_type("pyodide.mjs") == "application/javascript"


# --- the built site, as files --------------------------------------------------------------------


def test_the_page_opens_as_light_as_a_post_and_its_pyodide_is_the_vendored_one(built_site):
    from tests.test_release import POST_WEIGHT_LIMIT, Site, loaded_on_open

    site = Site(built_site)
    page = built_site / PAGE / "index.html"
    on_open = {page} | loaded_on_open(site, page)
    assert sum(f.stat().st_size for f in on_open) < POST_WEIGHT_LIMIT
    assert not [f for f in on_open if "pyodide" in f.as_posix() or f.suffix in (".wasm", ".py")]
    assert built_site / "javascripts" / "analyzer.js" in on_open
    served = built_site / pages_browser.PYODIDE_SITE_DIR
    vendored = vendor_pyodide.vendored_dir()
    assert sorted(p.name for p in served.iterdir()) == sorted(vendor_pyodide.PYODIDE_FILES)
    assert all((served / n).read_bytes() == (vendored / n).read_bytes() for n in vendor_pyodide.PYODIDE_FILES)
    shipped = built_site / pages_browser.PYTHON_SITE_DIR
    assert sorted(p.relative_to(shipped).with_suffix("").as_posix() for p in shipped.rglob("*.py")) \
        == list(pages_browser.shipped_modules())
    assert all(m.startswith("tracefacts/") for m in pages_browser.shipped_modules())


def test_the_repository_link_is_a_plain_link_on_every_page(built_site):
    # Material's "source" component would ask api.github.com for the repository's stars.
    for page in built_site.rglob("index.html"):
        html = page.read_text(encoding="utf-8")
        assert 'class="md-source"' in html and 'data-md-component="source"' not in html, page


# --- in Chromium, on the built site -------------------------------------------------------------


SHOWN = """(root) => ({
  facts: root.analyzerFacts,
  verdict: root.querySelector('.analyzer-facts dd strong')?.textContent,
  box: root.querySelector('.analyzer-facts')?.innerText,
  folded: root.querySelector('.analyzer-facts details')?.textContent,
  steps: root.querySelectorAll('.analyzer-steps tbody tr').length,
  timeline: root.querySelector('.analyzer-timeline img').naturalWidth,
  status: root.querySelector('.analyzer-stage').textContent,
})"""
DONE = "!document.querySelector('.trace-analyzer').hasAttribute('aria-busy')"
TIMELINE_LOADED = """() => { const img = document.querySelector('.trace-analyzer .analyzer-timeline img');
                           return Boolean(img) && img.src.startsWith('blob:') && img.complete; }"""


def analyzed(page, path: Path, timeout: int = 120_000) -> dict:
    """Drop `path` (the change event sets the widget busy at once) and wait until it is done."""
    page.set_input_files(".trace-analyzer .analyzer-input", str(path))
    page.wait_for_function(DONE, timeout=timeout)
    page.wait_for_function(TIMELINE_LOADED)
    return page.locator(".trace-analyzer").evaluate(SHOWN)


@pytest.fixture
def session(visit):
    """A visit that also records every request and the type each response came with."""
    v = visit()
    v.requests, v.types = [], {}
    v.context.on("request", lambda r: v.requests.append(r.url))
    v.context.on("response", lambda r: v.types.__setitem__(r.url.rsplit("/", 1)[-1], r.headers.get("content-type")))
    return v


def test_pyodide_is_fetched_only_when_the_reader_asks(session):
    page = session.open(PAGE)
    page.wait_for_load_state("networkidle")
    page.wait_for_timeout(500)
    assert page.locator(".trace-analyzer .analyzer-input").is_visible()
    assert not [url for url in session.requests if "pyodide" in url or "/assets/analyzer/" in url]
    page.click(".trace-analyzer .analyzer-preload")
    page.wait_for_function("document.querySelector('.trace-analyzer').dataset.loadSeconds", timeout=120_000)
    assert "ready" in page.locator(".trace-analyzer .analyzer-stage").inner_text()
    assert session.types["pyodide.asm.wasm"] == "application/wasm"
    assert "javascript" in session.types["pyodide.mjs"]
    assert not session.external, session.external
    assert not session.problems, "\n".join(session.problems)


def test_dropped_traces_show_the_cli_facts_and_stay_on_this_machine(session, tmp_path):
    page = session.open(PAGE)
    plain = tmp_path / "attention.json"  # an uncompressed one too
    plain.write_bytes(gzip.decompress(ATTENTION.read_bytes()))
    for trace in (MATMUL, ATTENTION, plain):
        shown = analyzed(page, trace)
        expected = cli_facts(trace)
        assert without_source(shown["facts"]) == without_source(expected), trace.name
        assert same_recording(shown["facts"], trace), trace.name
        window = expected["window"]
        assert shown["verdict"] == window["verdict"]["label"]
        assert f"{window['window_busy_pct']:.1f}% of the whole trace's time" in shown["box"]
        # the rest folded under the four answers, in the page, out of sight until opened
        assert window["verdict"]["reason"] in shown["folded"] and window["verdict"]["reason"] not in shown["box"]
        assert f"Launches{window['launches']['launches']} (" in shown["folded"]
        assert shown["steps"] == len(expected["steps"]) > 0
        assert shown["timeline"] > 0
        assert f"{trace.name}: analyzed on this machine" in shown["status"]
    again = analyzed(page, plain)  # the same file chosen again is read again
    assert again["facts"]["events"] == shown["facts"]["events"] and page.locator(".trace-analyzer .analyzer-output").is_visible()
    assert not session.external, session.external
    assert not session.problems, "\n".join(session.problems)


def malformed(tmp_path: Path) -> list[Path]:
    files = {
        "notes.json": b"these are not the traces you are looking for",
        "empty.json": b"",
        "object.json": b'{"displayTimeUnit": "ns"}',
        "truncated.json.gz": MATMUL.read_bytes()[: MATMUL.stat().st_size // 2],
    }
    for name, content in files.items():
        (tmp_path / name).write_bytes(content)
    return [tmp_path / name for name in files]


def test_a_file_it_cannot_read_gets_the_cli_line_and_the_page_carries_on(session, tmp_path):
    page = session.open(PAGE)
    error = page.locator(".trace-analyzer .analyzer-error")
    for path in malformed(tmp_path):
        page.set_input_files(".trace-analyzer .analyzer-input", str(path))
        page.wait_for_function(DONE, timeout=120_000)
        assert error.inner_text() == f"{path.name}: {cli_error(path)}"
        assert page.locator(".trace-analyzer .analyzer-output").is_hidden()
        assert page.locator(".trace-analyzer .analyzer-input").is_enabled()
    shown = analyzed(page, MATMUL)  # and the next good file is read
    assert error.is_hidden() and shown["steps"] == len(cli_facts(MATMUL)["steps"])
    assert not session.external, session.external
    assert not session.problems, "\n".join(session.problems)


def test_names_from_the_trace_and_the_file_stay_text(session, tmp_path):
    path = tmp_path / f"x{IMG}.json"
    path.write_text(json.dumps(poisoned_trace()), encoding="utf-8")
    dialogs = []
    page = session.open(PAGE)
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    analyzed(page, path)
    injected = page.evaluate("""() => {
        const root = document.querySelector('.trace-analyzer');
        return {
          imgs: Array.from(root.querySelectorAll('img')).map((i) => i.getAttribute('src')),
          handlers: Array.from(root.querySelectorAll('*')).flatMap((e) =>
              e.getAttributeNames().filter((n) => n.startsWith('on'))),
          scripts: root.querySelectorAll('script:not([src])').length,
          text: root.innerText,
        };
    }""")
    assert len(injected["imgs"]) == 1 and injected["imgs"][0].startswith("blob:")
    assert injected["handlers"] == [] and injected["scripts"] == 0 and dialogs == []
    assert IMG in injected["text"]  # shown, as text
    assert not session.problems, "\n".join(session.problems)


DROP = """([name, text]) => {
  const transfer = new DataTransfer();
  transfer.items.add(new File([text], name, {type: "application/json"}));
  const where = document.querySelector("article");
  for (const type of ["dragover", "drop"]) {
    where.dispatchEvent(new DragEvent(type, {dataTransfer: transfer, bubbles: true, cancelable: true}));
  }
}"""


def test_a_file_dropped_on_the_page_is_analyzed(session, tmp_path):
    page = session.open(PAGE)
    bad = tmp_path / "dropped.json"
    bad.write_text('{"traceEvents": [{"ph": "X", "ts": 1}', encoding="utf-8")
    page.evaluate(DROP, [bad.name, bad.read_text()])
    page.wait_for_function(DONE, timeout=120_000)
    assert page.locator(".trace-analyzer .analyzer-error").inner_text() == f"{bad.name}: {cli_error(bad)}"
    assert not session.problems, "\n".join(session.problems)


def test_a_pyodide_that_cannot_load_says_so_in_one_line(visit):
    v = visit()
    v.context.route("**/pyodide.asm.wasm", lambda route: route.fulfill(status=404, body=""))
    page = v.open(PAGE)
    page.click(".trace-analyzer .analyzer-preload")
    error = page.locator(".trace-analyzer .analyzer-error")
    error.wait_for(state="visible", timeout=120_000)
    assert error.inner_text().startswith("The analyzer stopped: ") and "\n" not in error.inner_text()
    assert page.locator(".trace-analyzer .analyzer-preload").is_enabled()  # free for another try
    assert not [p for p in v.problems if p.startswith("page error")], v.problems
