"""The values a tree's own image build script passes to its Dockerfile's build arguments.

A Dockerfile `ARG NAME` without a default is empty unless the build passes `--build-arg NAME=VALUE`; XTuner's
image_build.sh (v1.0.1 :13, :19, :24-41) does, `--build-arg PYTORCH_WHEELS_URL="$PYTORCH_WHEELS_URL"` after `export
PYTORCH_WHEELS_URL=${PYTORCH_WHEELS_URL:-"https://download.pytorch.org/whl"}`, so the Dockerfile's `pip install ... -i
${PYTORCH_WHEELS_URL}/cu128` installs from PyPI's PyTorch index. A script of the Dockerfile's folder that runs `docker
build` (or `docker buildx build`) on it (`-f` naming it, or the folder's `Dockerfile` by default) is read; a value is
what the script writes, or the default of `${NAME:-default}` in the script's last assignment of the variable it
passes (the value a run that sets nothing gets). Nothing is run.
"""

from __future__ import annotations

import os
import re
from functools import lru_cache

_BUILD = re.compile(r"\bdocker\s+(?:buildx\s+)?build\b")
_BUILD_ARG = re.compile(r"""--build-arg[ =](?P<name>[A-Za-z_]\w*)=(?P<value>"[^"]*"|'[^']*'|[^\s\\]*)""")
_FILE = re.compile(r"""(?:-f|--file)[ =]["']?(?P<file>[^\s"'\\]+)""")
_VARIABLE = re.compile(r"""^\$\{?(?P<name>[A-Za-z_]\w*)\}?$""")
_ASSIGN = r"""^\s*(?:export\s+)?{name}=(?P<value>"[^"]*"|'[^']*'|\S*)"""
_DEFAULT = re.compile(r"""^\$\{(?P<name>[A-Za-z_]\w*):?-(?P<default>"[^"]*"|'[^']*'|[^}]*)\}$""")


def _unquote(text: str) -> str:
    return text[1:-1] if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'" else text


@lru_cache(maxsize=32)
def build_args(dockerfile: str) -> tuple[dict[str, str], str]:
    """(NAME -> value, the script's path) of the build arguments a script beside the Dockerfile at `dockerfile`
    passes when it builds it; ({}, "") where no script does, or a value is not written out."""
    folder = os.path.dirname(os.path.abspath(dockerfile))
    try:
        names = sorted(n for n in os.listdir(folder) if n.endswith(".sh"))
    except OSError:
        return {}, ""
    for name in names:
        path = os.path.join(folder, name)
        try:
            with open(path, encoding="utf-8", errors="replace") as fh:
                text = fh.read()
        except OSError:
            continue
        build = _BUILD.search(text)
        if build is None:
            continue
        command = _continued(text, build.start())
        named = _FILE.search(command)
        wanted = named.group("file") if named else "Dockerfile"
        if os.path.normpath(os.path.join(folder, wanted)) != os.path.abspath(dockerfile):
            continue
        values = {}
        for m in _BUILD_ARG.finditer(command):
            value = _resolved(_unquote(m.group("value")), text[:build.start()])
            if value is not None:
                values[m.group("name")] = value
        return values, path
    return {}, ""


def _continued(text: str, start: int) -> str:
    """The command at `start` with its `\\`-continued lines."""
    end = start
    while True:
        nl = text.find("\n", end)
        if nl == -1:
            return text[start:]
        if not text[end:nl].rstrip().endswith("\\"):
            return text[start:nl]
        end = nl + 1


def _resolved(value: str, before: str) -> str | None:
    """A literal value as written; `$X` as the script's last assignment of X before the build gives it (its default
    where it is `${X:-default}`); None where that is not written out."""
    m = _VARIABLE.match(value)
    if m is None:
        return value if "$" not in value else None
    found = list(re.finditer(_ASSIGN.format(name=re.escape(m.group("name"))), before, re.MULTILINE))
    if not found:
        return None
    assigned = _unquote(found[-1].group("value"))
    default = _DEFAULT.match(assigned)
    if default is not None and default.group("name") == m.group("name"):
        assigned = _unquote(default.group("default"))
    return assigned if "$" not in assigned else None
