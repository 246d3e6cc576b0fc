"""What a front end knows beyond the file it reads (frameworks, the rule catalog, the other front ends): only what it
is handed.

The runner makes one object for each file it checks (rlcompat/pipeline/scanned_file.py), with the framework knowledge of the
file's tree, and passes it to `check` as `scanned` (and to the Python front end's `narrow` and `parse`); front ends
read it through this interface and never open a knowledge file, so a language knows no framework. Adding a framework's
switch or config shape is a data row in rlcompat/knowledge/data/, not a change here. What a front end learns of the
file on the way (`seen`, `planned`, `derived`) is kept there too, never in a module, so nothing of one file is left
for the next.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any, Callable, Mapping, Protocol, Sequence


class ScannedView(Protocol):
    seen: Any  # what the Python front end's pass over the file's text learnt (lang/pyspeed/chunks.py `Pass`)
    planned: Any  # where a big narrowed text is cut (lang/pyspeed/batches.py `Plan`)
    # (the words the runner's trigger search looked for in the file's text, those it found), or None
    # (lang/pyspeed/spelled.py)
    searched: tuple[frozenset[str], set[str]] | None

    def derived(self, kind: str, of: object, build: Callable[[], Any]) -> Any:
        """What `build` makes of `of` (a tree of the file), built once for the file (a module's Triton launch sites)."""

    @property
    def unselected_prefixes(self) -> tuple[str, ...] | None:
        """Key paths of this file (one of a verl package's own) that only an option no shipped entry config selects
        reads ("" = the whole file), or None: findings there are not reported."""

    @property
    def mounts(self) -> Mapping[str, tuple[str, ...]]:
        """Config-group file (`rollout/rollout.yaml`) -> the Hydra prefixes its keys sit under."""

    @property
    def config_top_keys(self) -> frozenset[str]:
        """Top-level keys that make a YAML file a training config read from the root (verl's `trainer`, ...)."""

    @property
    def switches(self) -> frozenset[str]:
        """Flags (argparse dest: no dashes, `-` as `_`) that take no value."""

    @property
    def override_clis(self) -> frozenset[str]:
        """Programs (`llamafactory-cli`, `tune`) whose `key=value` words after their config are config overrides."""

    def framework(self, name: str) -> object:
        """The identity of framework `name` for the scanned file (rlcompat/knowledge/identity.py): what config rules read as
        `ConfigContext.framework`; front ends pass it on unread."""

    @property
    def for_rules(self) -> object:
        """What config rules read as `ConfigContext.verl`; front ends pass it on unread."""

    def python_key_words(self, kinds: frozenset[str]) -> frozenset[str] | None:
        """The words a Python file spells where a setting of it can be a framework key of these kinds (the keys'
        last name parts, lower case, `-` as `_`), or None where a key of them judges Python that leaves it out: what
        `ConfigRule.reads_python` looks for."""

    def parameter_key_words(self, kinds: frozenset[str]) -> frozenset[str]:
        """The names of framework keys of these kinds that are a function's parameters (form `param`): a Python
        file that spells one is read for them even where it holds no setting (`ConfigRule.reads_parameters`)."""

    def spell_added_key(self, command_words: Sequence[str], key: str) -> tuple[str | None, str]:
        """How a fix may write the override `key` (with its `+`/`++`) into a command of this file: the key as the
        config the command reads takes it, or (None, why) where that config has no such key."""

    def record_reads(self, paths) -> None:
        """Other files a rule read to decide; the file's result then depends on them (it is not cached)."""

    def model_shape(self, model_path: str) -> object:
        """The shape of the local model `model_path` names (rlcompat/analysis/model_config.py), looked for beside the scanned
        file, or None; the look-up is recorded, since the file's result then depends on another file."""

    def runs_entry_module(self, module: str) -> bool:
        """Whether `python -m <module>` runs a training entry point whose overrides follow."""

    def runs_entry_script(self, path: str) -> bool:
        """Whether `python <path>` (a word ending in .py) does."""

    def woken(self, rules: Sequence, language: str, code: str) -> list:
        """The rules of `rules` (in their order) that declare `language` and whose triggers `code` (code of that
        language a file holds: a heredoc, a notebook cell) spells: which rules run is the runner's layer's to say
        (rlcompat/pipeline/catalog.py)."""

    def run_config_rules(self, views: Sequence, text: str, path: str, rules: Sequence, target) -> list:
        """The findings of config `rules` (for `target`) over a front end's views of the file: the runner's layer
        runs them and decides which are kept (rlcompat/pipeline/config_runner.py)."""

    def outranked(self, pending: Sequence, anchors: set) -> list:
        """For each pending config-rule finding, whether a rule of lower precedence reports or edits its characters
        already (then it is dropped): the runner's layer decides (rlcompat/pipeline/overlaps.py)."""

    def settle_python_overlaps(self, config_found: list, python_found: list, text: str, path: str, target,
                               ran: Sequence) -> list:
        """The findings of `config_found` (config rules over the Python `text`) that no Python rule for `target`
        reports already (`python_found`, of the rules `ran`, and the rules the run left out): the runner's layer
        decides (rlcompat/pipeline/overlaps.py), so a front end asks no catalog."""

    def installed_extras(self, script: str, line: int, extras: tuple[str, ...]) -> list:
        """(requirement, where it is declared) of each requirement of `extras` of a project in the scanned tree that
        the install command at `line` of shell `script` (this file's, or a shell block it holds) installs, the script
        read as run from the tree's root (`cd sub && pip install -e .[vllm]`): from the project's setup.py,
        pyproject.toml or setup.cfg (rlcompat/knowledge/install_steps.py)."""

    def required_files(self, script: str, line: int, written: str) -> list:
        """(requirement, where it is written) of each requirement of the requirements file `written` (as the command
        names it) that `pip install -r` at `line` of shell `script` installs, the script read as run from the tree's
        root: a file of the scanned tree (rlcompat/knowledge/install_steps.py `file_requirements`)."""

    def source_builds(self, script: str, line: int) -> list:
        """(distribution name, where it is known from) of each package the install command at `line` of shell
        `script` builds from a fresh clone's source (`git clone .../flash-attention && cd flash-attention/hopper &&
        python setup.py install`: FlashAttention-3), each RUN of a Dockerfile a new shell
        (rlcompat/knowledge/install_steps.py `source_build`)."""

    def build_arg(self, name: str) -> str | None:
        """The value the tree's image build script passes to this Dockerfile's build argument `name`, where the
        Dockerfile declares it without a default (`ARG NAME`); None otherwise (rlcompat/knowledge/build_args.py)."""

    def wheel_folders(self) -> dict:
        """folder as written -> (package, proof) of each folder this Dockerfile fills with `pip wheel` in a clone
        whose source build the knowledge knows ({} for another file): rlcompat/knowledge/wheel_folders.py."""

    def extras_installed_by_tree(self, project_file: str) -> dict[str, str]:
        """extra (normalised; ALL_EXTRAS for `--all-extras`) -> where (`Dockerfile.cuda:114`) for each optional
        extra of the project declared in `project_file` that an install step of the scanned tree (its Dockerfiles
        and install scripts: `uv sync --extra X`, `pip install -e .[X]`) installs (rlcompat/knowledge/install_steps.py)."""

    def distribution_extras(self, name: str, extras: tuple[str, ...]) -> list:
        """(requirement, where it is known from) of each package `extras` of the distribution `name` install, from
        the knowledge (rlcompat/knowledge/install_steps.py `distribution_extras`): `verl[vllm]` installs vLLM."""

    def overridden_default(self, cls: str, field: str) -> bool:
        """Whether every class of the scanned tree derived from `cls` sets `field` itself and the tree never builds
        `cls`: its default then reaches no run (rlcompat/analysis/class_overrides.py)."""

    def launch_helpers(self) -> Mapping[str, Any]:
        """Other projects' functions that run a training command whose flags a Python launcher passes as a string,
        by qualname (rlcompat/knowledge/launch_helpers.py `LaunchHelper`: the parameter, the entry script)."""

    def front_end(self, language: str) -> ModuleType:
        """The front end that reads `language` (`parse`, `PARSE_ERRORS`, `check`), for code a file holds in another
        language that the front end does not embed by itself (a notebook's `%%writefile config.yaml` cell)."""
