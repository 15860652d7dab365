"""scripts/heap.py: glibc's threshold for blocks in their own mappings fixed, unless the user set
glibc's own variable (a subprocess each: the setting lasts for the process)."""

from __future__ import annotations

import platform
import subprocess
import sys

import pytest

from scripts.heap import THRESHOLD_ENV

ASK = "from scripts.heap import map_large_blocks; print(map_large_blocks())"


def run(env: dict) -> str:
    return subprocess.run([sys.executable, "-c", ASK], env=env, capture_output=True, text=True,
                          check=True).stdout.strip()


@pytest.mark.skipif(platform.system() != "Linux" or platform.libc_ver()[0] != "glibc",
                    reason="glibc's malloc only")
def test_set_on_glibc_unless_the_user_set_it():
    from os import environ

    env = {k: v for k, v in environ.items() if k != THRESHOLD_ENV}
    assert run(env) == "True"
    assert run({**env, THRESHOLD_ENV: "65536"}) == "False"
