"""A Python script's inline metadata (`# /// script` ... `# ///`) as a declared environment: what `uv run script.py`
(and other launchers that read the block) installs before running it [S235]. The block is TOML with the first one or
two characters of each line (`#` or `# `) taken away; its `dependencies` are the script's requirements and uv reads
its own `[tool.uv]` table there too (indexes, `[tool.uv.sources]`) [S180].

The TOML is read from a copy of the file's text of the same length in which everything but the block's content is
blank, so every requirement, index and source row keeps its place in the script (a finding points at its line, a fix
edits it there). A script with two `script` blocks is refused by the launcher, so neither is read.
"""

from __future__ import annotations

import re
from typing import Sequence

from rlcompat.findings import Finding
from rlcompat.lang.declared import Declared, run
from rlcompat.lang.scanned import ScannedView
from rlcompat.lang.textpos import blank_outside

MARK = "# /// script"  # every block holds it: what tells the Python front end to look
# A block per the specification's reference expression, allowing `\r\n` line ends: an opening `# /// TYPE` line,
# content lines that are `#` alone or `# ` and text, and the closing `# ///` line [S235].
_BLOCK = re.compile(r"^# /// (?P<type>[a-zA-Z0-9-]+)\r?$\n(?P<content>(?:^#(?:| [^\r\n]*)\r?$\n)+)^# ///\r?$", re.MULTILINE)
_CONTENT_LINE = re.compile(r"^#", re.MULTILINE)


def script_block(text: str) -> tuple[int, int] | None:
    """Where the content of the file's one `script` block is (start, end offsets), or None: no block, or two."""
    found = [m for m in _BLOCK.finditer(text) if m.group("type") == "script"]
    if len(found) != 1:
        return None
    return found[0].start("content"), found[0].end("content")


def toml_text(text: str, start: int, end: int) -> str:
    """`text` with everything outside [start, end) blanked and each content line's comment mark made spaces: TOML at
    the offsets of the script (TOML allows indentation before keys and table headers)."""
    marks = []  # each content line's `#` or `# `
    for line in _CONTENT_LINE.finditer(text, start, end):
        marks += [(line.start(), " ")] + ([(line.start() + 1, " ")] if text.startswith("# ", line.start()) else [])
    return blank_outside(text, [(start, end)], marks)


def parse(text: str) -> Declared | None:
    """The script's declared environment, or None where it has no readable block (a block that is not TOML makes
    the launcher stop with its own error before anything is installed)."""
    where = script_block(text)
    if where is None:
        return None
    # loaded here: the Python front end imports this module for every file, and few scripts carry a block
    from rlcompat._toml import TOMLDecodeError, load_toml_text
    from rlcompat.lang.pyproject_deps import declared_from

    masked = toml_text(text, *where)
    try:
        data = load_toml_text(masked)
    except TOMLDecodeError:
        return None
    shaped = {"project": {"dependencies": data.get("dependencies")}, "tool": data.get("tool")}
    return declared_from(shaped, masked, "script")


def check_script(text: str, path: str, rules: Sequence, target, scanned: ScannedView) -> list[Finding]:
    """The declared-environment rules over the script's inline metadata (none where it has none)."""
    group = parse(text)
    return run([group], text, path, rules, target, scanned) if group is not None and group.requirements else []
