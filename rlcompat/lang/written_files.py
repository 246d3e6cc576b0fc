"""Files a script or notebook writes from text it holds: a shell heredoc copied into a file (`cat <<EOF > cfg.yaml`,
`cat > cfg.yaml <<EOF`, `tee cfg.yaml <<EOF`, `cat <<EOF | tee cfg.yaml`) or a notebook's `%%writefile cfg.yaml` cell.
The run reads that file as its config (`accelerate launch train.py cfg.yaml`), so its body is checked through the
front end of the language the file's name selects, as if it were that file; findings land on the body's lines. A
heredoc is read so only for a config (YAML, JSON, TOML); a notebook cell also for a program (`.py`, `.sh`).

A heredoc whose delimiter is unquoted expands `$VAR` and `\\` escapes as the shell copies it, so a fix that would
write one of `$`, `` ` `` or `\\` there is not offered.
"""

from __future__ import annotations

import os
import re
from typing import Sequence

from rlcompat.findings import Finding
from rlcompat.lang.embedded import Embedded, map_findings
from rlcompat.lang.scanned import ScannedView
from rlcompat.lang.textpos import LineIndex

WRITTEN_LANGUAGES = {".yaml": "yaml", ".yml": "yaml", ".json": "json", ".toml": "toml", ".py": "python", ".sh": "shell"}
# What a script's heredoc is read as: a config the run reads. A program or script written so runs only where a later
# command runs it, and the body is no command of the script writing it (tests/test_config_frontends.py).
HEREDOC_LANGUAGES = frozenset({"yaml", "json", "toml"})

# The file a heredoc's command writes: `> FILE` / `>> FILE` after `cat`, `tee [-a] FILE` (also behind a pipe).
_REDIRECT = re.compile(r"""(?:^|[\s;])(?:1?>>?|&>>?)[ \t]*(?P<q>["']?)(?P<file>[^\s"'|;&<>()]+)(?P=q)""")
_TEE = re.compile(r"""(?:^|\|)[ \t]*(?:sudo[ \t]+)?tee(?:[ \t]+-[A-Za-z-]+)*[ \t]+(?P<q>["']?)(?P<file>[^\s"'|;&<>()]+)(?P=q)""")


def written_language(name: str) -> str | None:
    """The language of a file a script writes, by its name's extension (None: no front end reads it as a config)."""
    return WRITTEN_LANGUAGES.get(os.path.splitext(name)[1].lower())


def heredoc_file(head: str, text: str, start: int, heredoc: tuple[int, int, int, int], quoted: bool) -> Embedded | None:
    """The body of `heredoc` (word start, word end, body start, body end) as the file the command at `start`
    (named `head`) writes, where that command is `cat` or `tee` and the file's name selects a language."""
    if head.rsplit("/", 1)[-1] not in ("cat", "tee"):
        return None
    line_end = text.find("\n", heredoc[1])
    line = text[start:len(text) if line_end < 0 else line_end]
    cut = line.rfind("<<", 0, heredoc[0] - start)
    line = line[:max(cut, 0)] + " " + line[heredoc[1] - start:]  # without `<<EOF`, which is no redirect
    m = _TEE.search(line) or (_REDIRECT.search(line) if head.rsplit("/", 1)[-1] == "cat" else None)
    language = written_language(m.group("file")) if m else None
    if language not in HEREDOC_LANGUAGES or heredoc[3] <= heredoc[2]:
        return None
    body = [(text[k], k) for k in range(heredoc[2], heredoc[3])]
    return Embedded(language, body, "" if quoted else "$`\\")


def check_written(block: Embedded, path: str, rules: Sequence, target, index: LineIndex,
                  scanned: ScannedView) -> list[Finding]:
    """The findings of `rules` that read the block's language over its code, placed in the file (`index` is the
    file's); code its front end does not parse is left alone."""
    code = block.code
    own = scanned.woken(rules, block.language, code)
    if not own:
        return []
    front_end = scanned.front_end(block.language)
    try:
        tree = front_end.parse(code)
        found = front_end.check(tree, code, path, own, target, scanned=scanned)  # Python parses big code as walked
    except (*front_end.PARSE_ERRORS, RecursionError):
        return []
    return map_findings(block, found, index)
