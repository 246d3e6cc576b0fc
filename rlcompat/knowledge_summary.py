"""Which framework knowledge a run applied, for the report's summary: the verl rule set of each scanned verl tree
(or of the files verl's rules reported on) and the framework files whose keys produced findings."""

from __future__ import annotations

import os
import re

# Rules that read rlcompat/knowledge/data/verl/<version>.toml, and those that read rlcompat/knowledge/data/frameworks/ (whose messages carry
# "<Framework> <version> knowledge: <file:line>").
VERL_CODES = {"RLC104", "RLC105", "RLC106", "RLC119", "RLC120", "RLC204", "RLC206", "RLC351", "RLC352", "RLC353", "RLC354",
              "RLC356", "RLC401", "RLC402", "RLC403"}
FRAMEWORK_CODES = {"RLC118", "RLC207", "RLC355", "RLC404"}
_LABEL = re.compile(r"(?:; |\()([A-Za-z][\w.-]*(?: [\w.-]+)?) (\d[\w.]*) knowledge: ")


def knowledge_applied(paths, findings) -> list[str]:
    from rlcompat.verl_knowledge import knowledge_for, version_in_tree

    labels: list[str] = []
    for p in paths:
        directory = p if os.path.isdir(p) else os.path.dirname(os.path.abspath(p))
        if version_in_tree(os.path.abspath(directory)) or version_in_tree(os.path.join(os.path.abspath(directory), "verl")):
            labels.append(knowledge_for(os.path.join(os.path.abspath(directory), "x")).label)
    for f in findings:
        if f.code in VERL_CODES and not any(label.startswith("verl ") for label in labels):
            labels.append(knowledge_for(f.path).label)
        if f.code in FRAMEWORK_CODES:
            m = _LABEL.search(f.message)
            if m:
                labels.append(f"{m.group(1)} {m.group(2)}")
    return sorted(dict.fromkeys(labels))
