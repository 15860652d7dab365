"""The columnar machinery beneath the model, so that a 5 GB trace stays under 1 GiB in pure Python:
compact rows (`rows`), their orders by time (`orders`), and large arrays in mappings of their own (`heap`).
"""
