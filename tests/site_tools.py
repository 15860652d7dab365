"""Helpers over a built site shared by the browser tests, the release gates and the Lighthouse
benchmark: serve it on localhost, list its pages and its posts."""

from __future__ import annotations

import contextlib
import functools
import gzip
import threading
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

CHROMIUM = "/usr/bin/chromium"  # Debian's; tests/setup_browser.sh installs it
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                 "--disable-background-networking"]


class QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


class GzipHandler(QuietHandler):
    """Text files gzipped on the fly, as GitHub Pages serves them (the traces, already .gz, as is)."""

    TEXT = {".html", ".css", ".js", ".json", ".svg", ".xml", ".txt", ".map"}

    def do_GET(self):
        path = Path(self.translate_path(self.path))
        if path.is_dir() and self.path.split("?")[0].endswith("/"):  # else the base class redirects
            path = path / "index.html"
        if (path.suffix not in self.TEXT or not path.is_file()
                or "gzip" not in self.headers.get("Accept-Encoding", "")):
            return super().do_GET()
        body = gzip.compress(path.read_bytes(), mtime=0)
        self.send_response(200)
        self.send_header("Content-Type", self.guess_type(str(path)))
        self.send_header("Content-Encoding", "gzip")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@contextlib.contextmanager
def serve(site: Path, compress: bool = False) -> Iterator[str]:
    """The site served on 127.0.0.1 at a free port (gzipping text if `compress`); yields its base URL."""
    handler = GzipHandler if compress else QuietHandler
    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(handler, directory=site))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}/"
    finally:
        server.shutdown()
        server.server_close()


def site_pages(site: Path) -> list[str]:
    """Every page as a path under the site's root: "", "blog/", "blog/matmul-add/", ..."""
    dirs = (p.parent.relative_to(site).as_posix() for p in site.rglob("index.html"))
    return sorted("" if d == "." else d + "/" for d in dirs)


def posts(site: Path) -> list[str]:
    """The blog posts' paths: Material marks a post's content area with md-content--post."""
    return [p for p in site_pages(site) if "md-content--post" in (site / p / "index.html").read_text(encoding="utf-8")]


def excluded_docs() -> set[str]:
    """The docs/ paths mkdocs.yml's `exclude_docs` leaves out of the build (a post whose runs
    await their first GPU run, say): in the repository, not on the site."""
    from pathlib import Path

    text = (Path(__file__).resolve().parent.parent / "mkdocs.yml").read_text(encoding="utf-8")
    block = text.split("exclude_docs: |\n", 1)[1].split("\n\n", 1)[0]
    return {line.strip() for line in block.splitlines() if line.strip() and not line.strip().startswith("#")}
