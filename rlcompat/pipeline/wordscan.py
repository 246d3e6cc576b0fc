"""Which of many words a text holds, in fewer searches than one per word.

Every file of a cold scan is asked which of the rules' trigger words it holds: about sixty for Python, most of them
in no file. A word is looked for only in a text that holds a piece of it: a shorter
word inside it (`bfloat16` only where `float16` is) or a piece several words share (`GRPOConfig`, `SFTConfig`, ...
only where `Config` is). A text that holds a word holds every piece of it, so the answer is exactly
`{w for w in words if w in text}` (tests/test_trigger_gates.py); a file without the pieces costs one search for all of
the words that share them.
"""

from __future__ import annotations

from typing import Iterable

# A shared piece is searched for when it is at least this long and at least this many words hold it: a short
# piece is in most files and then costs a search without saving one.
_PIECE_MIN_LENGTH = 4
_PIECE_MIN_WORDS = 3


class WordScan:
    def __init__(self, words: Iterable[str]) -> None:
        self.words = frozenset(w for w in words if w)
        nodes = set(self.words) | _shared_pieces(self.words)
        # Each string is searched for only where the longest string of `nodes` inside it was found.
        self._children: dict[str | None, list[str]] = {}
        for node in sorted(nodes):
            inside = [n for n in nodes if n != node and n in node]
            parent = max(inside, key=lambda n: (len(n), n)) if inside else None
            self._children.setdefault(parent, []).append(node)

    def present(self, text: str) -> set[str]:
        """The words `text` holds."""
        found: set[str] = set()
        children = self._children
        todo = list(children.get(None, ()))
        while todo:
            node = todo.pop()
            if node in text:
                found.add(node)
                todo.extend(children.get(node, ()))
        return found & self.words

    def searches(self) -> int:
        """How many strings a text that holds none of them is searched for."""
        return len(self._children.get(None, ()))


def _shared_pieces(words: frozenset[str]) -> set[str]:
    """Beginnings and ends shared by several words that hold no shorter word, chosen greedily: the piece that most
    of them hold (the longest among equals), then again among the words that piece does not cover."""
    loose = [w for w in words if not any(o != w and o in w for o in words)]
    ends = {w: {w[:n] for n in range(_PIECE_MIN_LENGTH, len(w))} | {w[-n:] for n in range(_PIECE_MIN_LENGTH, len(w))}
            for w in loose}
    pieces: set[str] = set()
    while True:
        counts: dict[str, int] = {}
        for w in loose:
            for piece in ends[w]:
                counts[piece] = counts.get(piece, 0) + 1
        best = max(((n, len(p), p) for p, n in counts.items() if n >= _PIECE_MIN_WORDS and p not in words), default=None)
        if best is None:
            return pieces
        pieces.add(best[2])
        loose = [w for w in loose if best[2] not in w]
