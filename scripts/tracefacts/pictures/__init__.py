"""What the facts look like: annotated timelines (SVG), profiler tables, the facts box and the
before/after table as HTML, all through one escaping builder (`markup`).
"""
