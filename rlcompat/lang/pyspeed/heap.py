"""Memory that C's allocator keeps after a big file's trees are let go, given back to the system.

What CPython's `ast` and LibCST's native parser allocate through C's `malloc` stays with the process once freed
(after a 3 MB file's CPython tree is dropped, 176 MB), so whatever comes next starts from that high-water mark: the
fixer's compile and re-check of the file, the next file in a worker. glibc's `malloc_trim` returns the free heap;
it is called once a big text's parts are walked (lang/python.py); elsewhere (no such function) nothing happens.
`fix` of torch's 1.4 MB common_methods_invocations.py peaked at 208 MB without it, 188 MB with it.
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
