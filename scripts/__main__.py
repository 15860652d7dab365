from .series.cli import main
from .tracefacts.entry.console import run_main

run_main(main)
