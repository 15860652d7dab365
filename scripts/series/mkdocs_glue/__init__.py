"""Thin MkDocs glue, listed under `hooks:` in mkdocs.yml: the freeze check and assets (`hooks`),
the claims ledger (`ledger`), the build dated by its content (`reproducible`).
"""
