"""The facts: typed dataclasses computed from the model, never drawn here. `analysis` is the way in;
the rest answer one question each (memory, ops, roofline, ranks, blocks of a sweep, before and after).
"""
