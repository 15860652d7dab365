"""The companion notebooks, one per part: how they are written (`write`) and what each holds (`parts`),
from the frozen runs; nothing here runs a snippet.
"""
