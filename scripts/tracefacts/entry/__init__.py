"""The ways in: the command line (`cli`, behind `console`'s error boundary: one line, no traceback),
the details computed `beside` the facts in a forked child, and the browser's Python side (`browser`).
"""
