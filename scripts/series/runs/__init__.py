"""The runs: the catalog of examples, the freeze (run or reuse, sealed metadata), the GPU runner
and its fork server, the sanitizer of published artifacts, the extras and the repeated samples.
"""
