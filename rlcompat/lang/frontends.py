"""Which front end reads which language (the `front_end` of each record in rlcompat/lang/languages.py): the registry
the runner runs files through, and the one a front end is handed (`ScannedView.front_end`) for code a file
holds in another language (a notebook's `%%writefile` cell).

It sits below the runner and the knowledge hand-off so that both can read it without importing each other; front
ends are imported on first use, so a run that needs no LibCST never loads it.
"""

from __future__ import annotations

import importlib

from rlcompat.lang.languages import LANGUAGES

FRONTENDS = {lang.name: lang.front_end for lang in LANGUAGES}


def frontend(language: str):
    return importlib.import_module(FRONTENDS[language])
