"""Whether a text spells a word, answered from a search already made over it where there is one.

The runner looks for every rule's trigger words in a file before anything else (rlcompat/pipeline/wordscan.py) and
keeps what it looked for and what it found in the file being checked (`ScannedView.searched`). The narrowing pass,
its parts and the settings reader ask again which of their words the text spells: a word the runner looked for is
answered from its result, any other is searched for. A word absent from a 1.4 MB text costs a pass over all of it
(about 1 ms on the project's machine), and the three asked about 30 times for such words in torch's
`common_methods_invocations.py`.
"""

from __future__ import annotations

from typing import Callable, Collection


def spelling(text: str, searched: tuple[Collection[str], Collection[str]] | None = None) -> Callable[[str], bool]:
    """`word in text` as a function; `searched`: (the words a search over `text` looked for, those it found)."""
    if searched is None:
        return text.__contains__
    looked, found = searched

    def spells(word: str) -> bool:
        return word in found if word in looked else word in text

    return spells
