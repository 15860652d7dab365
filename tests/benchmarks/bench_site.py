"""Build cost of the executed pages against the same pages as plain Material.

Makes two clean copies of the repository: the site as it is, and the same pages with every
`exec` block removed and the hooks and markdown-exec left out of mkdocs.yml. For each it times a
cold build (fresh process, empty render cache) and a warm rebuild in the same process (what
`mkdocs serve` does after an edit), three rounds alternating, and prints the medians' ratios.
Aims: cold <= 2x, warm <= 1.2x.

    .venv/bin/python tests/benchmarks/bench_site.py
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from statistics import median

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.conftest import clean_copy  # noqa: E402

ROUNDS = 3
EXEC_BLOCK = re.compile(r'^```python exec="(?:true|1)"[^\n]*\n.*?^```\n', re.M | re.S)

TIMED_BUILDS = """
import json, logging, sys, time
logging.disable(logging.WARNING)
from mkdocs.commands.build import build
from mkdocs.config import load_config
times = []
for _ in range(2):
    config = load_config("mkdocs.yml")
    config.plugins.on_startup(command="serve", dirty=False)  # as `mkdocs serve` does per rebuild
    started = time.perf_counter()
    build(config)
    times.append(time.perf_counter() - started)
print(json.dumps(times))
"""


def plain_material(project: Path) -> None:
    """Strip the executed parts, keep everything else the same."""
    for page in (project / "docs").rglob("*.md"):
        page.write_text(EXEC_BLOCK.sub("", page.read_text()))
    config = (project / "mkdocs.yml").read_text()
    config = re.sub(r"^hooks:\n(?:  - .*\n)+", "", config, flags=re.M)
    config = config.replace("  - markdown-exec\n", "")
    (project / "mkdocs.yml").write_text(config)


def timed(project: Path) -> tuple[float, float]:
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1")
    done = subprocess.run([sys.executable, "-c", TIMED_BUILDS], cwd=project, env=env,
                          capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"build failed in {project.name}:\n{done.stderr[-3000:]}")
    cold, warm = json.loads(done.stdout.strip().splitlines()[-1])
    return cold, warm


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        executed = clean_copy(Path(tmp) / "executed")
        plain = clean_copy(Path(tmp) / "plain")
        plain_material(plain)
        # Alternate the two and take medians: a shared machine's load drifts.
        runs = {"plain": [], "executed": []}
        for _ in range(ROUNDS):
            for name, project in (("plain", plain), ("executed", executed)):
                shutil.rmtree(project / ".cache", ignore_errors=True)  # cold: no rendered pieces
                runs[name].append(timed(project))
        plain_cold, plain_warm = (median(t[i] for t in runs["plain"]) for i in (0, 1))
        exec_cold, exec_warm = (median(t[i] for t in runs["executed"]) for i in (0, 1))
    print(f"{'':22}{'plain Material':>16}{'executed':>12}{'ratio':>8}{'aim':>8}")
    print(f"{'cold build (s)':22}{plain_cold:16.2f}{exec_cold:12.2f}{exec_cold / plain_cold:8.2f}{'<= 2':>8}")
    print(f"{'warm rebuild (s)':22}{plain_warm:16.2f}{exec_warm:12.2f}{exec_warm / plain_warm:8.2f}{'<= 1.2':>8}")


if __name__ == "__main__":
    main()
