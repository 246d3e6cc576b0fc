"""`rlcompat server`: a Language Server for editors (docs/editors.md). `command.py`: the typer command, which needs
nothing beyond rlcompat's own dependencies to load; `lsp.py`: the server, over pygls (the `lsp` extra);
`analysis.py`: one open document checked through `rlcompat.api`; `positions.py`: offsets <-> LSP positions.
"""
