"""`python -m tracefacts TRACE ...`: the installed analyzer's command line."""

from .entry.cli import cli

cli()
