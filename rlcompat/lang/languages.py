"""The languages rlcompat reads, one record each: how a file is known to be of it, which front end reads it, how
its comments and values are written, and which other languages its files hold.

Everything that asks "which language is this file" or "what does this language allow" reads `LANGUAGES`:
discovery (file patterns, skip lists, sniffing), the runner (front ends, embedded languages), suppressions
(comment syntax), the config and declared-environment rule bases (which front ends give them views), settings
(value spelling), the editor server (LSP language ids) and the rule docs (code fences). Adding a language is one
record here plus its front end module (which has `parse`, `check` and `PARSE_ERRORS`); tests/test_languages.py
fails when a record lacks a part another module needs.

This module imports nothing of rlcompat, so every layer can read it.
"""

from __future__ import annotations

import fnmatch
import functools
import os
import re
from dataclasses import dataclass, field
from typing import Callable


@dataclass(frozen=True)
class Spelling:
    """How a value is written in the language: a fix that sets a boolean or clears a value writes these."""

    true: str = "true"
    false: str = "false"
    null: str = "null"


@dataclass(frozen=True)
class Language:
    name: str
    front_end: str  # the module that parses and checks it (rlcompat.lang.*)
    noun: str  # what a user calls its files, in messages ("Dockerfiles")
    extensions: tuple[str, ...] = ()  # lower-cased, with the dot
    # Globs on the lower-cased file name; a glob with "/" is matched against "parent/name". A name match wins over
    # any extension (`requirements/base.txt`, `Dockerfile.cuda`); `not_names` vetoes it (templates are not files yet).
    names: tuple[str, ...] = ()
    not_names: tuple[str, ...] = ()
    sniff: Callable[[str], bool] | None = None  # for a file without an extension: does its head say it is this?
    refine: Callable[[str], str | None] | None = None  # a file of this language whose text says it is another one
    refined_from: str = ""  # the language whose `refine` gives this one (its files are known by their text only)
    explicit_only: bool = False  # read only when named on the command line, never on a directory walk
    python_comments: bool = False  # comments found by Python's tokenizer (a `#` in a string is not one)
    continued_command: bool = False  # a comment after a `\`-continued command covers all of its lines
    embeds: tuple[str, ...] = ()  # languages its files hold code of (a heredoc, a cell): their rules run there too
    settings: bool = False  # its front end gives configuration views (`lang.settings.ConfigRule` reads it)
    declares: bool = False  # its front end gives declared environments (`lang.declared.DeclaredRule` reads it)
    environment_file: bool = False  # a file that declares an environment, known by name (`declared_language`)
    spelling: Spelling = field(default_factory=Spelling)
    origins: tuple[str, ...] = ()  # the `Setting.origin`s its front end writes (for `spelling_of`)
    fence: str = "bash"  # the Markdown code fence of its examples in the rule docs
    editor_id: str = ""  # the LSP language identifier of an editor buffer in it
    skip_names: tuple[str, ...] = ()  # lower-cased file names (globs) a walk leaves out: files tools write
    skip_reason: str = ""
    max_bytes: int = 0  # larger files are data, not a config (0: no limit)


SHELL_SHEBANG = re.compile(r"\A#![ \t]*\S*/(?:env[ \t]+(?:-\S+[ \t]+)*)?(?:ba|z|k|da)?sh\b")
JOB_DIRECTIVE = re.compile(r"^#(?:SBATCH|PBS|BSUB|\$)[ \t]", re.MULTILINE)  # Slurm, PBS/Torque, LSF, SGE/UGE


def _is_shell(head: str) -> bool:
    """A file without an extension that is a shell script: a shell shebang, or the directives of a batch job."""
    return bool(SHELL_SHEBANG.match(head) or JOB_DIRECTIVE.search(head))


def _yaml_as_conda(text: str) -> str | None:
    """A YAML file named otherwise that is a conda environment (top-level `dependencies:` beside `channels:`, or
    with a `- pip:` list) is read as one."""
    if "dependencies:" not in text:
        return None
    top = set(re.findall(r"^(channels|dependencies):", text, re.MULTILINE))
    if "dependencies" in top and ("channels" in top or re.search(r"^\s+- pip:", text, re.MULTILINE)):
        return "conda"
    return None


# The shapes of YAML job specs whose values are shell or argument lists (lang/jobspec.py reads them exactly).
_TOP = re.compile(r"^([A-Za-z_]\w*)[ \t]*:", re.MULTILINE)
_SKYPILOT_OTHER = {"resources", "num_nodes", "envs", "file_mounts", "workdir", "secrets"}
_STEP_RUN = re.compile(r"^[ \t]+(?:-[ \t]+)?run[ \t]*:", re.MULTILINE)
_CONTAINERS = re.compile(r"^[ \t]*(?:-[ \t]+)?(?:containers|initContainers)[ \t]*:", re.MULTILINE)
_PROGRAM = re.compile(r"^[ \t]*(?:-[ \t]+)?(?:command|args|entrypoint)[ \t]*:", re.MULTILINE)


def _yaml_refined(text: str) -> str | None:
    """A YAML file that is a conda environment, or a job spec that runs shell (a SkyPilot task's `run:`/`setup:`, a
    GitHub Actions workflow's steps, a KubeRay RayJob, a compose file's or a Kubernetes container's command): by its
    top-level keys and their shapes, never by its name."""
    conda = _yaml_as_conda(text)
    if conda is not None:
        return conda
    top = set(_TOP.findall(text))
    if (top & {"run", "setup"}) and (len(top & {"run", "setup"}) == 2 or top & _SKYPILOT_OTHER):
        return "jobspec"
    if ("jobs" in top or "runs" in top) and re.search(r"^[ \t]+steps[ \t]*:", text, re.MULTILINE) \
            and _STEP_RUN.search(text):
        return "jobspec"
    if _PROGRAM.search(text) and ("services" in top or _CONTAINERS.search(text)
                                  or re.search(r"^kind:[ \t]*RayJob\b", text, re.MULTILINE)):
        return "jobspec"
    return None


PYTHON_SPELLING = Spelling("True", "False", "None")

# Order matters where names overlap: the first record whose names match a file wins.
LANGUAGES: tuple[Language, ...] = (
    Language("pyproject", "rlcompat.lang.pyproject_deps", "pyproject.toml", names=("pyproject.toml",),
             environment_file=True, declares=True, fence="toml"),
    Language("setupcfg", "rlcompat.lang.setup_deps", "setup.cfg files", names=("setup.cfg",), environment_file=True,
             declares=True, fence="ini"),
    Language("requirements", "rlcompat.lang.requirements", "requirements files",
             # `*reqs*.txt`: pinned requirement lists named short (torchforge's .github/packaging/vllm_reqs_12_8.txt,
             # written by its scripts/generate_vllm_reqs.sh and installed with `pip install -r` by scripts/install.sh)
             names=("requirements*.txt", "constraints*.txt", "requirements/*.txt", "*reqs*.txt"), environment_file=True,
             declares=True, continued_command=True, editor_id="pip-requirements"),
    Language("dockerfile", "rlcompat.lang.dockerfile", "Dockerfiles",
             names=("dockerfile", "dockerfile.*", "dockerfile-*", "dockerfile_*", "*.dockerfile"),
             not_names=("*.jinja", "*.j2", "*.tmpl", "*.template", "*.in"), environment_file=True, declares=True,
             continued_command=True, embeds=("shell", "python"), editor_id="dockerfile"),
    Language("conda", "rlcompat.lang.condaenv", "conda environment files",
             names=("environment*.yml", "environment*.yaml", "conda*.yml", "conda*.yaml"), environment_file=True,
             declares=True, fence="yaml"),
    Language("makefile", "rlcompat.lang.makefile", "Makefiles", extensions=(".mk",), names=("makefile", "gnumakefile"),
             continued_command=True, embeds=("shell", "python"), editor_id="makefile"),
    Language("python", "rlcompat.lang.python", "Python", extensions=(".py", ".pyi"), python_comments=True,
             spelling=PYTHON_SPELLING,
             origins=("argparse-default", "python-keyword", "python-field", "python-dict", "python-assign",
                      "python-default", "python-forced"),
             fence="python", editor_id="python"),
    Language("yaml", "rlcompat.lang.yaml", "YAML", extensions=(".yaml", ".yml"), refine=_yaml_refined, settings=True,
             origins=("yaml",), fence="yaml", editor_id="yaml"),
    # A YAML file is one by its keys (`_yaml_refined`), never by its name.
    Language("jobspec", "rlcompat.lang.jobspec", "YAML job specs (SkyPilot, GitHub Actions, Kubernetes, KubeRay, compose)",
             refined_from="yaml", continued_command=True, embeds=("shell",), fence="yaml"),
    Language("shell", "rlcompat.lang.shell", "shell scripts and Slurm/PBS job files",
             extensions=(".sh", ".bash", ".slurm", ".sbatch", ".job"),
             sniff=_is_shell, continued_command=True, embeds=("python",), settings=True, declares=True,
             origins=("hydra-override", "flag", "env"), editor_id="shellscript"),
    Language("json", "rlcompat.lang.jsonfile", "JSON", extensions=(".json",), settings=True, origins=("json",),
             editor_id="json",
             skip_names=("package.json", "package-lock.json", "tsconfig.json", "jsconfig.json", "composer.json",
                         "config.json", "generation_config.json", "tokenizer.json", "tokenizer_config.json",
                         "vocab.json", "special_tokens_map.json", "added_tokens.json", "preprocessor_config.json",
                         "adapter_config.json", "trainer_state.json", "model.safetensors.index.json",
                         "pytorch_model.bin.index.json", "launch.json", "settings.json", "extensions.json",
                         "devcontainer.json", ".eslintrc.json", "*.index.json", "*.lock.json"),
             skip_reason="a JSON file tools or checkpoints write, not a run's config", max_bytes=256 * 1024),
    Language("notebook", "rlcompat.lang.notebook", "notebooks", extensions=(".ipynb",), embeds=("python", "shell")),
    Language("toml", "rlcompat.lang.tomlfile", "TOML", extensions=(".toml",), settings=True, origins=("toml",),
             fence="toml", editor_id="toml",
             skip_names=("cargo.toml", "rust-toolchain.toml", "rustfmt.toml", ".rustfmt.toml", "clippy.toml",
                         "ruff.toml", ".ruff.toml", "taplo.toml", ".taplo.toml", "typos.toml", "_typos.toml",
                         ".typos.toml", "cliff.toml", "poetry.toml", "pdm.toml", "uv.toml", "pixi.toml", "hatch.toml",
                         "netlify.toml", "wrangler.toml", "fly.toml", "samconfig.toml", "book.toml", "bunfig.toml",
                         ".codespellrc.toml", "pyrefly.toml", "ty.toml", "mypy.toml", "*.lock.toml"),
             skip_reason="a build or lint tool's TOML file, not a run's config", max_bytes=256 * 1024),
    Language("markdown", "rlcompat.lang.markdown", "Markdown (named only)", extensions=(".md", ".markdown"),
             explicit_only=True, continued_command=True, embeds=("python",), settings=True, declares=True, editor_id="markdown"),
)

BY_NAME: dict[str, Language] = {lang.name: lang for lang in LANGUAGES}
SNIFF_BYTES = 4096  # how much of a file without an extension is read to sniff it


def language(name: str) -> Language:
    return BY_NAME[name]


def _name_matches(patterns: tuple[str, ...], name: str, parent_and_name: str) -> bool:
    """Whether a pattern matches the file's name (`parent/name` for a pattern with a slash): `fnmatch.fnmatchcase`
    for each pattern, asked of a whole walk's files at once (`_matcher`)."""
    names, parent_names, globs = _matcher(patterns)
    if name in names or parent_and_name in parent_names:
        return True
    for with_parent, match in globs:
        if match(parent_and_name if with_parent else name) is not None:
            return True
    return False


@functools.lru_cache(maxsize=64)
def _matcher(patterns: tuple[str, ...]):
    """The plain names and the `parent/name` ones of `patterns`, as sets, and its globs, each as (whether it has a
    slash, the compiled `fnmatch.translate` of it, which `fnmatchcase` matches with): a walk asks every file about
    every language's patterns, and trying each pattern in turn was about a fifth of a warm scan."""
    plain = [p for p in patterns if not _is_glob(p)]
    return (frozenset(p for p in plain if "/" not in p), frozenset(p for p in plain if "/" in p),
            tuple(("/" in p, re.compile(fnmatch.translate(p)).match) for p in patterns if _is_glob(p)))


def _is_glob(pattern: str) -> bool:
    return "*" in pattern or "?" in pattern or "[" in pattern


def _glob_matches(name: str, pattern: str) -> bool:
    """`fnmatch.fnmatchcase`, which compiles a regular expression for each pattern on its first use (most of them
    are plain names, and a pre-commit run would compile them all for its one file): a plain name is compared."""
    if _is_glob(pattern):
        return fnmatch.fnmatchcase(name, pattern)
    return name == pattern


def by_file_name(path: str, *, explicit: bool = False) -> Language | None:
    """The language a file's name says (name globs first, then the extension); `explicit`: the file was named on
    the command line, so explicit-only languages count. Files without an extension are not sniffed here."""
    name = os.path.basename(path).lower()
    parent_and_name = os.path.basename(os.path.dirname(path)).lower() + "/" + name
    for lang in LANGUAGES:
        if lang.names and _name_matches(lang.names, name, parent_and_name) \
                and not _name_matches(lang.not_names, name, parent_and_name):
            return lang
    ext = os.path.splitext(name)[1]
    for lang in LANGUAGES:
        if ext in lang.extensions and (explicit or not lang.explicit_only):
            return lang
    return None


def by_content(path: str) -> Language | None:
    """For a file whose name has no extension: the language its first bytes say (a shell shebang, `#SBATCH`)."""
    if os.path.splitext(os.path.basename(path))[1]:
        return None
    sniffers = [lang for lang in LANGUAGES if lang.sniff is not None]
    if not sniffers:
        return None
    try:
        with open(path, "rb") as f:
            head = f.read(SNIFF_BYTES)
    except OSError:
        return None
    if b"\0" in head:
        return None  # a binary
    text = head.decode("utf-8", "replace")
    return next((lang for lang in sniffers if lang.sniff(text)), None)


def refined(name: str, text: str) -> str:
    """The language of a file read as `name` whose text says it is another (a YAML conda environment)."""
    refine = BY_NAME[name].refine if name in BY_NAME else None
    return (refine(text) or name) if refine is not None else name


def spelling_of(origin: str) -> Spelling:
    """How values are written where a setting of `origin` was read (`lang.settings.Setting.origin`)."""
    return next((lang.spelling for lang in LANGUAGES if origin in lang.origins), Spelling())


def skip_reason(path: str, name: str) -> str:
    """Why a file of language `name` is not read ("" when it is): a file tools write, or one too large to be a config."""
    lang = BY_NAME.get(name)
    if lang is None:
        return ""
    base = os.path.basename(path).lower()
    if lang.skip_names and any(_glob_matches(base, p) for p in lang.skip_names):
        return lang.skip_reason
    if lang.max_bytes:
        try:
            if os.path.getsize(path) > lang.max_bytes:
                return f"{name.upper()} over {lang.max_bytes // 1024} KiB: data, not a config"
        except OSError:
            pass
    return ""


def readable_nouns() -> str:
    """What a directory walk reads, for messages: `Python, YAML, shell scripts ..., TOML`."""
    return ", ".join(lang.noun for lang in LANGUAGES if not lang.explicit_only)


def names_with(attribute: str) -> frozenset[str]:
    """The languages whose record sets `attribute` (`settings`, `declares`, `environment_file`, ...)."""
    return frozenset(lang.name for lang in LANGUAGES if getattr(lang, attribute))


def declared_language(path: str) -> str | None:
    """Files that declare an environment, known by name: their extensions (.txt, .yml, none) say nothing."""
    lang = by_file_name(path)
    return lang.name if lang is not None and lang.environment_file else None
