"""Silence file descriptor 1 for a block: Triton's compiler writes the whole PTX there (not to sys.stdout) when
ptxas fails, which would bury a probe's table. Imported by the probe scripts in this folder."""

from __future__ import annotations

import contextlib
import os
import sys


@contextlib.contextmanager
def quiet_stdout():
    sys.stdout.flush()
    saved, devnull = os.dup(1), os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    try:
        yield
    finally:
        os.dup2(saved, 1)
        os.close(saved)
        os.close(devnull)
