"""Reading a trace file: its bytes as text (gzip, zip, UTF-16, size limits), then its events,
in one pass linear in its size, into columns; the optional msgspec decoder beside the standard library's.
"""
