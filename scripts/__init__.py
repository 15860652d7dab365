"""This repository's code, two packages, one way: `tracefacts` (the trace analyzer, standard library
only) and `series` (the site's machinery, which imports the analyzer). `python -m scripts` is the series' command.
"""
