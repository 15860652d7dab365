from .cli import main
from .console import run_main

run_main(main)
