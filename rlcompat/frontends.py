"""Which front end reads which language: the registry the engine runs files through, and the one a front end is
handed (`FrontEndKnowledge.front_end`) for code a file holds in another language (a notebook's `%%writefile` cell).

It sits below the engine and the knowledge hand-off so that both can read it without importing each other; front
ends are imported on first use, so a run that needs no LibCST never loads it.
"""

from __future__ import annotations

import importlib

FRONTENDS = {"python": "rlcompat.lang.python", "yaml": "rlcompat.lang.yaml", "shell": "rlcompat.lang.shell",
             "markdown": "rlcompat.lang.markdown", "requirements": "rlcompat.lang.requirements",
             "dockerfile": "rlcompat.lang.dockerfile", "conda": "rlcompat.lang.condaenv",
             "pyproject": "rlcompat.lang.pyproject_deps", "setupcfg": "rlcompat.lang.setup_deps",
             "json": "rlcompat.lang.jsonfile", "notebook": "rlcompat.lang.notebook", "toml": "rlcompat.lang.tomlfile"}


def frontend(language: str):
    return importlib.import_module(FRONTENDS[language])
