"""What the tests of the posts share: a check of a post's prose, and a stand-in for
scripts.series.pages.helpers.Run on which the helpers of scripts/series/pages/posts/ run over hand-made traces."""

from __future__ import annotations

import re
from pathlib import Path
from types import SimpleNamespace

from scripts.series.pages.helpers import Run

TYPED_GPU_NAME = re.compile(r"\b[HB]200\b|\bH100\b")


def gpu_names_typed(source: Path) -> list[str]:
    """The lines of a post's prose that type a GPU's name. The GPU is named from the runs' metadata;
    a typed name is the series' (marked `<!-- quoted -->`) or inside fenced code."""
    fenced, offenders = False, []
    for line in source.read_text(encoding="utf-8").splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        if not fenced and TYPED_GPU_NAME.search(line) and "<!-- quoted -->" not in line:
            offenders.append(line)
    return offenders


class FakeRun:
    """What the helpers read of a scripts.series.pages.helpers.Run: its trace, its key, and Run's small queries."""

    events = Run.events

    def __init__(self, trace):
        self.trace = trace
        self.example = SimpleNamespace(key="synthetic/run")
