"""A reader that closes rlcompat's output early (`rlcompat --help | head -1`, `rlcompat scan . | head`) ends the
run quietly with exit status 0, as ruff and ripgrep do on a broken pipe: the reader took what it wanted, nothing
failed. click alone reports it as exit status 1, the code that says findings remain.

`Watched` stands in for sys.stdout and notes the broken pipe as it passes (click still stops the command); `main`
then leaves quietly: file descriptor 1 goes to the null device, so the interpreter's last flush of what was
buffered for the pipe raises nothing at exit.
"""

from __future__ import annotations

import os
import sys


class Watched:
    """sys.stdout, noting a write or flush that finds the reader gone."""

    def __init__(self, stream) -> None:
        self._stream = stream
        self.reader_gone = False

    def write(self, text: str) -> int:
        try:
            return self._stream.write(text)
        except BrokenPipeError:
            self.reader_gone = True
            raise

    def flush(self) -> None:
        try:
            self._stream.flush()
        except BrokenPipeError:
            self.reader_gone = True
            raise

    def __getattr__(self, name: str):
        return getattr(self._stream, name)


def leave_quietly() -> None:
    """Exit 0 with stdout sent to the null device (nothing is left to write where the reader was)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.__stdout__.fileno() if sys.__stdout__ is not None else 1)
    except (OSError, ValueError):
        pass
    sys.exit(0)
