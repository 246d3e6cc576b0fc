"""An argument list written as data, not as shell: a Dockerfile's exec form (`CMD ["python3", "-m", "x"]`), a
Kubernetes container's `command:`/`args:` lists, a compose service's list `command:`. No shell runs it, so each
element is one word whatever it holds; the shell front end reads it as the command those words make.

The words become one line of shell code (lang/embedded.py), each element's characters at their offsets in the file.
An element that the shell would split or expand (a blank, a quote, `$`) is written single-quoted, its quotes at no
character of the file. A fix lands where the list can take it: inside one element (its text written as the
element's quoting needs: `escape`), as new elements after one (`new_element`, each word written as the list
writes its elements), or by removing whole elements; any other edit is refused, and the finding says why.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from typing import Callable, Sequence

from rlcompat.findings import Edit
from rlcompat.lang.embedded import Embedded

PLAIN_WORD = re.compile(r"[A-Za-z0-9_@%+=:,./-]+")  # a word the shell reads as written


@dataclass
class Element:
    chars: list[tuple[str, int]]  # the element's value, character by character, with the file offset each comes from
    start: int  # where the element starts in the file (its opening quote, if any)
    end: int  # just after it (after its closing quote)
    exact: bool = True  # False: `chars` are not the element's text as written (escapes): no edit inside it


@dataclass
class _Word:
    code_start: int
    code_end: int  # the value's characters in the code (inside the quotes the code may add)
    element: Element


def argv_block(elements: list[Element], *, escape: Callable[[Element, str], str | None],
               new_element: Callable[[Element, str], str], why: str,
               prefix: Sequence[tuple[str, int]] = ()) -> Embedded:
    """The shell line `elements` make. `escape(element, text)`: `text` written inside `element` (None: it cannot be);
    `new_element(after, word)`: the text that adds `word` as an element after `after`; `why`: what a finding whose
    fix cannot be placed says; `prefix`: shell code before the line (a container's `export NAME=value` lines), each
    character at its offset in the file, where an edit is placed as written."""
    chars: list[tuple[str, int]] = list(prefix)
    line_start = len(chars)
    words: list[_Word] = []
    for element in elements:
        if len(chars) > line_start:
            chars.append((" ", element.start))
        value = "".join(c for c, _ in element.chars)
        quoted = not PLAIN_WORD.fullmatch(value)
        if quoted:
            chars.append(("'", element.start))
        start = len(chars)
        for c, at in element.chars:
            if quoted and c == "'":
                chars.extend((q, at) for q in "'\\''")  # `'\''`: a quote inside single quotes
            else:
                chars.append((c, at))
        words.append(_Word(start, len(chars), element))
        if quoted:
            chars.append(("'", max(element.end - 1, element.start)))
    block = Embedded("shell", chars, why_no_fix=why)
    block.place = lambda edit: _place(edit, block, words, escape, new_element, line_start)
    return block


def _place(edit: Edit, block: Embedded, words: list[_Word], escape, new_element, line_start: int) -> Edit | None:
    if edit.end <= line_start:  # in the code before the line: copied as it is written, one value at a time
        if edit.start == edit.end or not block.contiguous(edit.start, edit.end) \
                or any(c.isspace() or c in "'\"$`\\:#" for c in edit.content):
            return None
        start = block.file_offset(edit.start)
        return Edit(start, block.file_offset(edit.end - 1) + 1, edit.content)
    adds = edit.start == edit.end and edit.content[:1].isspace()
    inside = None if adds else next((w for w in words if w.code_start <= edit.start and edit.end <= w.code_end), None)
    if inside is not None:
        if not inside.element.exact or not block.contiguous(edit.start, edit.end) \
                or any(c.isspace() or c in "'\"$`\\" for c in edit.content):
            return None  # a blank or a quote the shell would have read as syntax: no element means the same
        text = escape(inside.element, edit.content)
        if text is None:
            return None
        start = block.file_offset(edit.start)
        end = start if edit.end == edit.start else block.file_offset(edit.end - 1) + 1
        return Edit(start, end, text)
    if adds:
        after = next((w for w in words if edit.start in (w.code_end, w.code_end + 1)), None)
        added = _words(edit.content)
        if after is None or not added:
            return None
        return Edit(after.element.end, after.element.end, "".join(new_element(after.element, w) for w in added))
    if edit.content.strip():
        return None
    removed = [i for i, w in enumerate(words) if edit.start <= w.code_start and w.code_end <= edit.end]
    if not removed or edit.end - edit.start > _span(words, removed) + 2:
        return None
    first, last = removed[0], removed[-1]
    if first > 0:  # `, "a", "b"` after the element before
        return Edit(words[first - 1].element.end, words[last].element.end, "")
    if last + 1 < len(words):  # the first elements: up to the next one
        return Edit(words[first].element.start, words[last + 1].element.start, "")
    return None  # the whole list


def _span(words: list[_Word], removed: list[int]) -> int:
    return words[removed[-1]].code_end - words[removed[0]].code_start


def _words(content: str) -> list[str] | None:
    """The words a fix adds (` key=value`, or on a continued line), or None where the shell would expand them."""
    text = re.sub(r"\\\r?\n", " ", content)
    try:
        found = shlex.split(text, posix=True)
    except ValueError:
        return None
    if not found or any(not w or "$" in w or "`" in w for w in found):
        return None  # an empty word, or one the shell would have expanded: no element means the same
    return found
