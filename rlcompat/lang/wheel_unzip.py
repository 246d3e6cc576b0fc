"""An `unzip WHEEL.whl... -d <site-packages>` command: the wheels it installs (a wheel is a zip whose contents are the
installed package). What such a wheel holds is the knowledge's to say (rlcompat/knowledge/wheel_folders.py: the folder
an earlier `pip wheel -w` filled from a clone's source build); this reads only the command's words.
"""

from __future__ import annotations

import posixpath

SITE_FOLDERS = ("site-packages", "dist-packages")


def unzipped_wheels(words: list[str]) -> list[str]:
    """The wheel paths (as written) of an `unzip [OPTIONS] WHEEL.whl... -d DIR` whose DIR is a site-packages (or
    Debian's dist-packages) folder: those wheels are installed there; [] for any other command."""
    if not words or posixpath.basename(words[0]) != "unzip" or "-d" not in words:
        return []
    at = words.index("-d")
    if at + 1 >= len(words) or not _site_folder(words[at + 1]):
        return []
    return [w for w in words[1:at] if w.endswith(".whl")]


def _site_folder(word: str) -> bool:
    low = word.rstrip("/").lower()
    # the folder as written may be a variable that names it (`${PYTHON_SITE_PACKAGE_PATH}`)
    return low.endswith(SITE_FOLDERS) or "site_package" in low or "dist_package" in low
