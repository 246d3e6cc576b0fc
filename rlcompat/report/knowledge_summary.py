"""Which framework knowledge a run applied, for the report's summary: the verl rule set of each scanned verl tree
(or of the files verl's rules reported on) and the framework files whose keys produced findings; and the identity
each scanned tree was judged with (rlcompat/knowledge/identity.py), with its evidence."""

from __future__ import annotations

import os
import re

# Rules that read rlcompat/knowledge/data/verl/<version>.toml, and those that read rlcompat/knowledge/data/frameworks/ (whose messages carry
# "<Framework> <version> knowledge: <file:line>").
VERL_CODES = {"RLC104", "RLC105", "RLC106", "RLC119", "RLC120", "RLC204", "RLC206", "RLC351", "RLC352", "RLC353", "RLC354",
              "RLC356", "RLC401", "RLC402", "RLC403"}
FRAMEWORK_CODES = {"RLC118", "RLC207", "RLC355", "RLC404"}
_LABEL = re.compile(r"(?:; |\()([A-Za-z][\w.-]*(?: [\w.-]+)?) (\d[\w.]*) knowledge: ")
# knowledge_report.knowledge_note for a tree whose release rlcompat has no knowledge of: the key is another release's
_VALUES_ONLY = re.compile(r"\(([A-Za-z][\w.-]*(?: fork)?) (\d[\w.]*) (?:pinned in|at) \S+?: no knowledge of that release; "
                          r"judged by the value with ([A-Za-z][\w.-]*(?: [\w.-]+)?)'s key")


_DECLARED_ONLY = re.compile(r"\(([A-Za-z][\w.-]*) declared without a version \(.*?\); judged by the value with "
                            r"([A-Za-z][\w.-]*(?: [\w.-]+)?)'s key")


def knowledge_applied(paths, findings, identities) -> list[str]:
    """`identities`: the run's rlcompat.knowledge.identity.Identities (each scanned tree's, resolved once by the caller)."""
    from rlcompat.pipeline.scanned_file import ScannedFile
    from rlcompat.knowledge.identity import VERL, uses
    from rlcompat.knowledge.verl_config import knowledge_of

    labels: list[str] = []
    for p in paths:
        tree = identities.for_path(p)
        verl = tree.get(VERL)
        if verl.how in ("release", "fork"):
            labels.append(knowledge_of(verl).label)
    texts: dict[str, str] = {}
    for f in findings:
        if f.code in VERL_CODES and not any(label.startswith("verl ") for label in labels):
            text = texts.setdefault(f.path, _read(f.path))
            tree = identities.for_path(f.path)
            # A tree with no verl and a file that runs none (an OpenRLHF script's vLLM engine): no verl rule set is
            # the knowledge of its code, whatever RLC401 said of the engine.
            if tree.get(VERL).how in ("release", "fork", "pinned", "declared") or uses(text, VERL):
                labels.append(ScannedFile(f.path, tree, text).verl.label)
        if f.code in FRAMEWORK_CODES:
            m = _LABEL.search(f.message)
            if m:
                labels.append(f"{m.group(1)} {m.group(2)}")
            m = _VALUES_ONLY.search(f.message)
            if m:
                labels.append(f"{m.group(3)} keys, values only (for {m.group(1)} {m.group(2)})")
            m = _DECLARED_ONLY.search(f.message)
            if m:
                labels.append(f"{m.group(2)} keys, values only (for {m.group(1)}, declared without a version)")
    return sorted(dict.fromkeys(labels))


def identity_lines(paths, identities) -> list[str]:
    """One line per scanned tree: what it was judged with, and why."""
    out: list[str] = []
    for p in paths:
        tree = identities.for_path(p)
        shown = os.path.relpath(tree.root) if tree.root else "."
        line = tree.describe(shown)
        if line not in out:
            out.append(line)
    return out


def identity_json(paths, identities) -> list[dict]:
    seen, out = set(), []
    for p in paths:
        tree = identities.for_path(p)
        if tree.root not in seen:
            seen.add(tree.root)
            out.append(tree.to_json())
    return out


def _read(path: str) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            return fh.read()
    except OSError:
        return ""
