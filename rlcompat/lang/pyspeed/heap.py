"""Memory that C's allocator keeps after a big tree is let go, given back to the system.

CPython's `ast` tree of a big file is hundreds of MB (about 150 bytes a byte of source), and much of it comes from
the C library's heap, which keeps the freed memory for itself: after a 3 MB file's tree is dropped, 176 MB stay
with the process. LibCST's nodes, parsed next, come from Python's own arenas and cannot reuse it, so the two would
add up. glibc's `malloc_trim` returns the free heap; elsewhere (no such function) nothing happens.
"""

from __future__ import annotations

from rlcompat.lang.pyspeed import plain

_trim = None  # glibc's malloc_trim, once looked up; False where there is none
BIG_TEXT = 64_000  # characters: a text whose trees leave enough behind to be worth a trim (one costs microseconds)


def give_back(text: str) -> None:
    """After the trees of `text` are let go."""
    global _trim
    if plain() or len(text) < BIG_TEXT:
        return
    if _trim is None:
        try:
            import ctypes

            _trim = ctypes.CDLL(None).malloc_trim
        except (ImportError, OSError, AttributeError):
            _trim = False
    if _trim:
        _trim(0)
