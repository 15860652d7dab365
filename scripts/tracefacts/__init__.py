"""The trace analyzer: a torch.profiler / Kineto trace file in, facts, text, JSON and pictures out.
Standard library only; what `pip install .` installs as `tracefacts` and what the browser runs in Pyodide.

Stages, in the order data flows (each imports only the stages before it, tests/test_layout.py):
`reading` (a file's text, its events) -> `model` (the compact trace) -> `facts` -> `pictures`
(timelines, tables, boxes) -> `entry` (the command line, the browser).
"""
