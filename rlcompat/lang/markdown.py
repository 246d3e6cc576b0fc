"""Shell code blocks in Markdown (READMEs, run notes), checked only when the user names the file explicitly.

Everything outside ```bash / ```sh / ```shell / ```console fences is blanked to spaces (newlines kept), so the
shell front end sees the blocks at their real offsets and its edits apply to the Markdown file unchanged.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Sequence

from rlcompat.lang.scanned import ScannedView
from rlcompat.lang.textpos import blank_outside
from rlcompat.lang import shell
from rlcompat.findings import Finding

SHELL_FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})[ \t]*(?P<lang>bash|sh|shell|console|zsh)\b[^\n]*\n",
                         re.MULTILINE)
PROMPT = re.compile(r"^([ \t]*)\$ ", re.MULTILINE)
PARSE_ERRORS = shell.PARSE_ERRORS
syntax_error_location = shell.syntax_error_location


@dataclass
class MarkdownBlocks:
    shell_view: str  # the file with everything but shell blocks blanked
    script: shell.ShellScript


def shell_only(text: str) -> str:
    keep = []  # each shell block's body
    for m in SHELL_FENCE.finditer(text):
        closing = re.compile(rf"^[ \t]*{re.escape(m.group('fence')[0])}{{{len(m.group('fence'))},}}[ \t]*$", re.MULTILINE)
        end = closing.search(text, m.end())
        keep.append((m.end(), end.start() if end else len(text)))
    masked = blank_outside(text, keep)
    # `$ ` prompts in console blocks are not part of the command.
    return PROMPT.sub(lambda p: p.group(1) + "  ", masked)


def parse(text: str) -> MarkdownBlocks:
    masked = shell_only(text)
    return MarkdownBlocks(masked, shell.parse(masked))


def check(blocks: MarkdownBlocks, text: str, path: str, rules: Sequence, target, *,
          scanned: ScannedView) -> list[Finding]:
    findings = shell.check(blocks.script, blocks.shell_view, path, rules, target, scanned=scanned, language="markdown")
    # Reports quote the Markdown line as written.
    from dataclasses import replace

    from rlcompat.lang.textpos import LineIndex

    index = LineIndex(text)
    return [replace(f, source_line=index.line_text(f.location.line)) for f in findings]
