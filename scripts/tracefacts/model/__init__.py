"""The compact trace model: events as typed records and columns, built once per file (`trace.load_trace`),
with the time arithmetic (`intervals`, `units`) and the launch and nesting tables the facts read.
"""
