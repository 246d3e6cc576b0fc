"""`rlcompat server`: the typer command. Registered in rlcompat/cli/app.py; pygls is imported only when it runs, so
`scan`, `fix` and `doctor` never load it and an install without the `lsp` extra still has every other command."""

from __future__ import annotations

from typing import Annotated

import typer

from rlcompat.cli.common import EXIT_ERROR


def server_command(
    stdio: Annotated[bool, typer.Option("--stdio", help="Talk LSP over standard input and output (the only transport; "
                                                        "accepted because editor clients pass it).")] = False,
) -> None:
    """Run the Language Server: diagnostics and quick fixes in your editor (docs/editors.md)."""
    try:
        from rlcompat.server.lsp import build
    except ImportError as exc:
        if (exc.name or "").split(".")[0] not in ("pygls", "lsprotocol"):
            raise
        typer.echo("rlcompat: error: the language server needs pygls: pip install 'pygls>=2.0,<3' (rlcompat's lsp extra)", err=True)
        raise typer.Exit(EXIT_ERROR)
    build().start_io()
