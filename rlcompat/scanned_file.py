"""The framework knowledge a scanned file is read with, resolved by whoever runs the front ends and handed to them.

`FileKnowledge(path, tree)` answers rlcompat/lang/knowledge.py's `FrontEndKnowledge` from the identity of the file's
tree (rlcompat/identity.py, resolved once per tree by the caller), rlcompat/knowledge/data/verl/<version>.toml (the release that
identity names: rlcompat/verl_knowledge.py) and rlcompat/knowledge/data/frameworks/vocabulary.toml. Each is read
on first use, so a file whose front end asks nothing costs nothing. It also hands over the front end of another
language (rlcompat/frontends.py), so a front end never imports the engine.
"""

from __future__ import annotations

from types import ModuleType
from typing import Mapping, Sequence

from rlcompat import framework_knowledge, frontends, identity, verl_knowledge


class FileKnowledge:
    __slots__ = ("path", "tree", "text", "_verl", "_frameworks")

    def __init__(self, path: str, tree: identity.TreeIdentity, text: str = "") -> None:
        self.path = path
        self.tree = tree
        self.text = text  # the file's text: whether it uses an installed framework (identity.uses)
        self._verl: verl_knowledge.Knowledge | None = None
        self._frameworks: dict[str, identity.FrameworkIdentity] = {}

    def framework(self, name: str) -> identity.FrameworkIdentity:
        """The identity of framework `name` for this file: its tree's, except that an installed distribution (the
        tree declares nothing) applies only to a file that uses the framework."""
        found = self._frameworks.get(name)
        if found is None:
            found = self.tree.get(name)
            if found.how == "installed" and not identity.uses(self.text, name):
                found = identity.unknown(name, "the tree declares no version; this file does not use the installed one")
            self._frameworks[name] = found
        return found

    @property
    def verl(self) -> verl_knowledge.Knowledge:
        if self._verl is None:
            self._verl = verl_knowledge.knowledge_of(identity.verl_of_file(self.path, self.framework(identity.VERL)))
        return self._verl

    @property
    def for_rules(self) -> verl_knowledge.Knowledge:
        return self.verl

    @property
    def mounts(self) -> Mapping[str, tuple[str, ...]]:
        return self.verl.mounts

    @property
    def config_top_keys(self) -> frozenset[str]:
        return framework_knowledge.vocabulary().verl_config_top_keys

    @property
    def switches(self) -> frozenset[str]:
        return framework_knowledge.vocabulary().switches

    @property
    def override_clis(self) -> frozenset[str]:
        return framework_knowledge.vocabulary().override_clis

    def runs_entry_module(self, module: str) -> bool:
        return module in self.verl.entry_modules or module.startswith(self.verl.entry_prefixes)

    def runs_entry_script(self, path: str) -> bool:
        # A script inside a verl checkout or a recipe: a known entry module's file, or any `main_*` script there.
        if "/verl/" not in "/" + path and not path.startswith("recipe/"):
            return False
        return any(path.endswith(m.replace(".", "/") + ".py") for m in self.verl.entry_modules) or "main_" in path

    def front_end(self, language: str) -> ModuleType:
        return frontends.frontend(language)

    def file_rule_classes(self) -> Sequence[type]:
        from rlcompat.rules import file_rules

        return file_rules()
