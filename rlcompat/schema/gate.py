"""The fix gate: how a fix may spell a key it adds to a launch command, or why it may not add it.

A key a fix adds must exist in the config of the tree that reads it, spelled the way that config system takes it
(Hydra, https://hydra.cc/docs/advanced/override_grammar/basic/: `key=` overrides an existing key and fails on an
absent one; `+key=` adds an absent key and fails on an existing one; `++key=` does either. An OmegaConf structured
merge refuses a field the dataclass does not declare with ConfigKeyError, whatever the prefix; `OmegaConf.from_cli`
takes `+`/`++` as part of the key). An absent key is added only inside a free mapping the tree's code reads whole
(`override_config: {}`, a `Dict[...]` field); anywhere else the tree's code does not read it, so adding it fixes
nothing, and no fix is offered. Where the tree ships no config for the command (user scripts that run an installed
release), the knowledge of that release decides, as before.
"""

from __future__ import annotations

import os

from rlcompat.schema import KeySchema, SchemaUnread


def spell(schemas: tuple[KeySchema, ...], key: str, wanted: str, code_reads: bool = False) -> tuple[str | None, str]:
    """(the key with its prefix, "") when every schema accepts `key`; (None, why) when one does not.

    `code_reads`: the tree runs exactly a release whose knowledge proves its code reads `key` even where the config
    does not write it (`fsdp_config.get("mixed_precision")`): Hydra then takes it with `+`/`++`. A structured merge
    takes no undeclared field whatever the code reads."""
    if key == "hydra" or key.startswith("hydra."):
        return wanted + key, ""  # Hydra's own settings: always there
    hydra = [s for s in schemas if s.system == "hydra"]
    prefix = wanted if wanted in ("", "++") else ""
    for schema in schemas:
        if schema.has(key):
            continue
        free = schema.open_parent(key) is not None
        if schema.system == "hydra" and (free or code_reads):
            prefix = wanted if wanted == "++" else "+"
        elif not free and schema.complete:
            return None, f"the tree's config ({schema.source}) has no key {key}"
    if not hydra:
        prefix = ""  # a structured merge of `key=value` words: no Hydra prefixes
    return prefix + key, ""


def spell_for_tree(root: str, verl, path: str, words: tuple[str, ...], key: str) -> tuple[str | None, str]:
    """The gate for one command of the file at `path` in the tree at `root`, whose verl identity is `verl`
    (rlcompat/knowledge/identity.py): where the tree ships the config the command reads, that config decides."""
    bare = key.lstrip("+")
    wanted = key[:len(key) - len(bare)]
    package = os.path.normpath(os.path.join(root, verl.package)) if root and verl.package else None
    try:
        schemas = _schemas(root, package, words, os.path.dirname(os.path.abspath(path))) if root else None
    except SchemaUnread as unread:
        if verl.exact:
            return key, ""  # a known release: its knowledge (file:line of that release) is the proof
        return None, f"the tree's config could not be read ({unread}), so {bare} cannot be shown to exist"
    if schemas is None:
        return key, ""
    return spell(schemas, bare, wanted, code_reads=verl.exact)


def _schemas(root, package, words, script_dir):
    from rlcompat.schema.tree import schemas_for

    return schemas_for(root, package, words, script_dir)
