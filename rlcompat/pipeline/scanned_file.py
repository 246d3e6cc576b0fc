"""One file as the pipeline checks it: `ScannedFile`, built by the runner (rlcompat/pipeline/runner.py) for each file, passed
down to the front ends (as their `scanned`: rlcompat/lang/scanned.py's `ScannedView`) and from them to the
rules (`ctx.knowledge`), and read back by the runner once the file is checked.

It holds what the file is (path, text, language, the identity of its tree: rlcompat/knowledge/identity.py, resolved once per
tree by the caller), the framework knowledge it is read with (rlcompat/knowledge/data/verl/<version>.toml for the
release that identity names: rlcompat/knowledge/verl_config.py, and rlcompat/knowledge/data/frameworks/vocabulary.toml, each
read on first use, so a file whose front end asks nothing costs nothing), and what the check learns of the file on
the way: the narrowed text the front end parsed, what the Python front end's pass over the text learnt (where its
top-level statements are: lang/pyspeed/chunks.py `Pass`, and where a big narrowed text may be cut:
lang/pyspeed/batches.py), the Triton launch sites of a module, and the other files read (a model's config.json: a
result that depends on one is not cached). Nothing of a file outlives its object, so nothing leaks into the next.
It also hands over the front end of another language (rlcompat/lang/frontends.py), so a front end never imports the runner.
"""

from __future__ import annotations

import os
import re
from types import ModuleType
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

from rlcompat.knowledge import frameworks, identity, install_steps, launch_helpers, verl_config, verl_own_files
from rlcompat.lang import frontends
from rlcompat.pipeline import catalog, config_runner, overlaps
from rlcompat.analysis import class_overrides, model_config

if TYPE_CHECKING:
    from rlcompat.lang.pyspeed.chunks import Pass
    from rlcompat.lang.pyspeed.narrow import Narrowed


class ScannedFile:
    __slots__ = ("path", "tree", "text", "language", "narrowed", "seen", "planned", "searched", "reads", "_derived",
                 "_verl", "_frameworks")

    def __init__(self, path: str, tree: identity.TreeIdentity, text: str = "", language: str = "") -> None:
        self.path = path
        self.tree = tree  # the identity of the file's tree
        self.text = text  # the file's text: also whether it uses an installed framework (identity.uses)
        self.language = language
        self.narrowed: Narrowed | None = None  # the text the front end parsed, where it left statements out
        self.seen: Pass | None = None  # what the Python front end's pass over `text` learnt; let go once walked
        self.planned: tuple[str, list[tuple[int, int]]] | None = None  # a narrowed text and its statements' lines
        # (the words the runner's trigger search looked for in `text`, those it found): asked again by the front end
        self.searched: tuple[frozenset[str], set[str]] | None = None
        self.reads: list[str] = []  # the other files the check looked for (model directories' config.json)
        self._derived: dict[str, tuple[object, Any]] = {}
        self._verl: verl_config.Knowledge | None = None
        self._frameworks: dict[str, identity.FrameworkIdentity] = {}

    @property
    def reads_other_files(self) -> bool:
        return bool(self.reads)

    def record_reads(self, paths) -> None:
        """Other files a rule read to decide (a `-r` file, uv.lock): a result that depends on one is not cached."""
        self.reads.extend(paths)

    def model_shape(self, model_path: str) -> model_config.ModelShape | None:
        """The shape of the local model `model_path` names (rlcompat/analysis/model_config.py), looked for beside this file;
        the look-up is recorded, since the result then depends on a file other than this one."""
        return model_config.model_shape(model_path, self.path, self.reads)

    def derived(self, kind: str, of: object, build: Callable[[], Any]) -> Any:
        """What `build` makes of `of` (a tree of this file), built once for the file whoever asks (every target's
        rules, in `rlcompat matrix`): the launch sites of a module's Triton kernels. Only the latest `of` of each
        kind is kept: a big file's parts are walked one after the other, and each is let go before the next."""
        found = self._derived.get(kind)
        if found is None or found[0] is not of:
            found = self._derived[kind] = (of, build())
        return found[1]

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
    def verl(self) -> verl_config.Knowledge:
        if self._verl is None:
            self._verl = verl_config.knowledge_of(identity.verl_of_file(self.path, self.framework(identity.VERL)))
        return self._verl

    @property
    def for_rules(self) -> verl_config.Knowledge:
        return self.verl

    @property
    def unselected_prefixes(self) -> tuple[str, ...] | None:
        return verl_own_files.unselected_prefixes(self.path)

    @property
    def mounts(self) -> Mapping[str, tuple[str, ...]]:
        return self.verl.mounts

    @property
    def config_top_keys(self) -> frozenset[str]:
        return frameworks.vocabulary().verl_config_top_keys

    @property
    def switches(self) -> frozenset[str]:
        return frameworks.vocabulary().switches

    @property
    def override_clis(self) -> frozenset[str]:
        return frameworks.vocabulary().override_clis

    def python_key_words(self, kinds: frozenset[str]) -> frozenset[str] | None:
        return frameworks.python_key_words(kinds)

    def parameter_key_words(self, kinds: frozenset[str]) -> frozenset[str]:
        return frameworks.parameter_key_words(kinds)

    def spell_added_key(self, command_words: Sequence[str], key: str) -> tuple[str | None, str]:
        from rlcompat.schema.gate import spell_for_tree

        return spell_for_tree(self.tree.root, self.framework(identity.VERL), self.path, tuple(command_words), key)

    def runs_entry_module(self, module: str) -> bool:
        return module in self.verl.entry_modules or module.startswith(self.verl.entry_prefixes)

    def runs_entry_script(self, path: str) -> bool:
        # A script inside a verl checkout or a recipe: a known entry module's file, or any `main_*` script there.
        if "/verl/" not in "/" + path and not path.startswith("recipe/"):
            return False
        return any(path.endswith(m.replace(".", "/") + ".py") for m in self.verl.entry_modules) or "main_" in path

    def installed_extras(self, script: str, line: int, extras: tuple[str, ...]) -> list:
        root = self.tree.root
        if not root or not extras:
            return []
        out, root = [], os.path.abspath(root)
        for step in self._install_steps(script, root):
            if step.kind != "project" or step.line != line or step.extras != extras or step.no_deps:
                continue
            found = []
            if os.path.commonpath([root, os.path.abspath(step.target)]) == root:  # a project of the scanned tree
                found = install_steps.extra_requirements(step.target, extras)
                for req, path, at in found:
                    out.append((req, f"{os.path.relpath(path, root).replace(os.sep, '/')}:{at}"))
                    self.record_reads([path])
            if not found and step.clone:  # a fresh clone the tree does not hold: what its extras install
                out += install_steps.cloned_extras(step.clone, extras)
        return out

    def required_files(self, script: str, line: int, written: str) -> list:
        root = self.tree.root
        if not root:
            return []
        out, root = [], os.path.abspath(root)
        # the file as the command names it, matched by its trailing components (the step resolved the directory)
        tail = os.sep + os.sep.join(p for p in os.path.normpath(written).split(os.sep) if p not in ("", ".", ".."))
        for step in self._install_steps(script, root):
            listed = step.target  # the requirements file the step installs
            if step.kind != "requirements" or step.line != line or not listed.endswith(tail):
                continue
            if os.path.commonpath([root, os.path.abspath(listed)]) != root or not os.path.isfile(listed):
                continue  # a file the tree does not hold (copied in or written at run time): nothing known
            rel = os.path.relpath(listed, root).replace(os.sep, "/")
            out += [(req, f"{rel}:{at}") for req, at in install_steps.file_requirements(listed)]
            self.record_reads([listed])
        return out

    def source_builds(self, script: str, line: int) -> list:
        start = os.path.abspath(self.tree.root or os.path.dirname(self.path) or ".")
        return [built for step in self._install_steps(script, start)
                if step.line == line and (built := install_steps.source_build(step))]

    def build_arg(self, name: str) -> str | None:
        if self.language != "dockerfile" or not re.search(rf"^\s*ARG\s+{re.escape(name)}\s*$", self.text, re.MULTILINE):
            return None  # a default the Dockerfile writes is read where it is written (the shell front end)
        from rlcompat.knowledge.build_args import build_args

        values, script = build_args(self.path)
        if name in values:
            self.record_reads([script])
        return values.get(name)

    def wheel_folders(self) -> dict:
        if self.language != "dockerfile":
            return {}
        from rlcompat.knowledge.wheel_folders import built_folders

        return built_folders(self.text)

    def _install_steps(self, script: str, start: str) -> tuple:
        """The install steps of shell `script`, read from `start`: a Dockerfile's own shell code RUN by RUN (each a new
        shell in the WORKDIR), any other script (a block a file holds) as one shell."""
        if self.language == "dockerfile" and script.count("\n") == self.text.count("\n"):
            return install_steps.dockerfile_steps(self.text, self.path, start)
        return install_steps.steps_in(script, self.path, start)

    def distribution_extras(self, name: str, extras: tuple[str, ...]) -> list:
        return install_steps.distribution_extras(name, extras)

    def extras_installed_by_tree(self, project_file: str) -> dict[str, str]:
        from rlcompat.knowledge.declared_pins import install_sequences

        root = self.tree.root
        if not root:
            return {}
        root, project = os.path.abspath(root), os.path.dirname(os.path.abspath(project_file))
        out: dict[str, str] = {}
        for path, start, dockerfile in install_sequences(root):
            for step in install_steps.steps_of(path, start, dockerfile):
                if step.kind != "project" or step.no_deps or os.path.abspath(step.target) != project:
                    continue
                self.record_reads([path])
                for extra in step.extras:
                    out.setdefault(extra, f"{os.path.relpath(path, root).replace(os.sep, '/')}:{step.line}")
        return out

    def overridden_default(self, cls: str, field: str) -> bool:
        files = class_overrides.overridden_everywhere(self.tree.root, cls, field)
        if files:
            self.record_reads(files)  # the subclasses' files decide: a change there changes this file's result
        return bool(files)

    def launch_helpers(self) -> Mapping[str, launch_helpers.LaunchHelper]:
        return launch_helpers.helpers()

    def front_end(self, language: str) -> ModuleType:
        return frontends.frontend(language)

    def woken(self, rules: Sequence, language: str, code: str) -> list:
        return catalog.woken(rules, language, code)

    def run_config_rules(self, views: Sequence, text: str, path: str, rules: Sequence, target) -> list:
        return config_runner.run_config_rules(views, text, path, rules, target, self)

    def outranked(self, pending: Sequence, anchors: set) -> list:
        return overlaps.outranked(pending, anchors)

    def settle_python_overlaps(self, config_found: list, python_found: list, text: str, path: str, target,
                               ran: Sequence) -> list:
        return overlaps.settle(config_found, python_found, text, path, target, ran, self)
