"""The annotated timeline, drawn in stages: `plan` (lanes, skeleton) -> `layout` (bars, links,
legend) -> `svg` (the text), over `geometry` and `style`; `draw` is the way in.
"""
