"""The cyclic garbage collector during a CLI run.

One run is short and makes few reference cycles, while LibCST's import alone makes tens of thousands of objects
that every pass of the collector walks again. With the collector off (worker processes inherit that) and what is
alive frozen at the end (the interpreter's exit would walk it too), a run is faster at the same peak memory
(figures: docs/performance.md, item 12).
"""

from __future__ import annotations

import contextlib
import gc
from typing import Iterator

from rlcompat.lang.pyspeed import plain


@contextlib.contextmanager
def collector_off() -> Iterator[None]:
    if plain():
        yield
        return
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if collecting:
            gc.enable()  # for callers that run main() in their own process and go on
