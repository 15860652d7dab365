"""`python scripts/analyze.py TRACE ...` and `python -m scripts.analyze TRACE ...` in a checkout: the
analyzer's command line (scripts/tracefacts/entry/cli.py), installed by `pip install .` as `tracefacts`.
"""

import sys
from pathlib import Path

if __package__:
    from .tracefacts.entry.cli import main
    from .tracefacts.entry.console import run_main
else:  # run as a file: its folder is on sys.path, and the analyzer is the package `tracefacts` there
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from tracefacts.entry.cli import main
    from tracefacts.entry.console import run_main

if __name__ == "__main__":
    run_main(main)
