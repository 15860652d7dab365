from scripts.cli import main
from scripts.console import run_main

run_main(main)
