"""The series' machinery: runs of the snippets frozen under traces/, the pages and claims built
from them, the companion notebooks and the mkdocs glue. It imports the analyzer; the analyzer never imports it.
"""
