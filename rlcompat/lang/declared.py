"""What a project *declares* about its environment, whatever file says it: the packages it asks pip or conda for,
the package indexes, the base image of a container and the build variables it sets.

Front ends (`lang/requirements.py`, `lang/dockerfile.py`, `lang/condaenv.py`, `lang/pyproject_deps.py`,
`lang/setup_deps.py` (setup.cfg, and setup.py through the Python front end), and
`pip install` commands in launch scripts) turn their file into `Declared` groups: one group is what one install
resolves together (a requirements file, one `RUN pip install`, one script command). `DeclaredRule`s are written
once over groups. Every item knows the exact character range of its text, so a fix rewrites that text only.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Sequence
from urllib.parse import unquote

from rlcompat.lang.languages import names_with
from rlcompat.lang.scanned import ScannedView
from rlcompat.lang.settings import ConfigContext, ConfigRule, ConfigView, Span
from rlcompat.findings import Finding

# PEP 508 name, optional extras, then the version specifier up to a marker or comment.
REQUIREMENT = re.compile(r"(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[(?P<extras>[^\]]*)\])?\s*(?P<spec>[^;#@]*)")
INDEX_OPTIONS = {"--index-url": "index", "-i": "index", "--extra-index-url": "extra", "-f": "links",
                 "--find-links": "links"}
PYTORCH_INDEX = re.compile(r"download\.pytorch\.org/whl/(?:nightly/|test/)?(?P<tag>cu\d+|cpu|rocm[\d.]+|xpu)\b")


def normalise(name: str) -> str:
    """A distribution name as pip compares them (PEP 503)."""
    return re.sub(r"[-_.]+", "-", name).lower()


@dataclass
class Requirement:
    name: str  # normalised
    spec: str  # the version part as written: "==2.8.0+cu128", ">=2.6,<2.9", "" (any)
    span: Span  # the whole requirement text
    spec_span: Span | None = None  # the specifier's text, for rewriting it
    conda: bool = False  # a conda package (`pytorch=2.5`, `pytorch-cuda=12.1`), not a pip one
    editable: bool = True  # False when the text came from a variable: `span` is where it is used, not written
    extra: str = ""  # the optional extra (pyproject.toml) it belongs to: installed only when asked for
    extras: tuple[str, ...] = ()  # the package's own extras it asks for (`sglang[srt]`)
    # Where it is written when that is not at `span` (`pip install -e .[vllm]` installs what the project's `vllm`
    # extra lists: "the `vllm` extra, setup.py:12"), for a message to name
    origin: str = ""
    # False where the release is one the scan cannot know (an extra of a repository cloned at run time): rules judge
    # what every release shares (a minimum capability), not what one release pins (the torch a vLLM release requires)
    version_known: bool = True
    # Read by uv only (`[tool.uv] override-dependencies`): pip never installs it; uv's install of the package is it
    uv_only: bool = False
    # An optional extra's requirement that an install step of the tree asks for (`uv sync --extra X` in its
    # Dockerfile): where, "Dockerfile.cuda:114"; installed by default there, not optional
    installed_by: str = ""
    # A `[tool.uv.sources]` row that sends the declared package to a git commit or a named index ("git", "index"): uv
    # installs the package from there [S236], but the row names no release, so it is judged as one whose release is
    # not known (version_known False)
    uv_source: str = ""

    @property
    def origin_note(self) -> str:
        if self.installed_by:
            return f" (the `{self.extra}` extra, installed by {self.installed_by})"
        return f" ({self.origin})" if self.origin else ""


@dataclass
class IndexUrl:
    url: str
    kind: str  # "index" | "extra" | "links"
    span: Span  # the URL's text
    editable: bool = True  # False when the URL came from a variable (`--index-url $TORCH_INDEX`)
    uv_only: bool = False  # a `[[tool.uv.index]]` of pyproject.toml: uv reads it, pip does not
    routed_at: Span | None = None  # an explicit uv index: where `[tool.uv.sources]` sends torch to it
    routed_extras: tuple[str, ...] | None = None  # the extras that route is limited to (None: every install)
    backend: bool = False  # uv's `--torch-backend=cu128`: `span` is the tag alone (`cu128`), the URL is implied

    @property
    def pytorch_tag(self) -> str | None:
        """`cu126` for https://download.pytorch.org/whl/cu126, None for any other index."""
        m = PYTORCH_INDEX.search(self.url)
        return m.group("tag") if m else None

    def tag_span(self) -> Span | None:
        if self.backend:
            return self.span if self.editable else None
        m = PYTORCH_INDEX.search(self.url) if self.editable else None
        return Span(self.span.start + m.start("tag"), self.span.start + m.end("tag")) if m else None


@dataclass
class BaseImage:
    image: str  # "nvidia/cuda", "pytorch/pytorch", "nvcr.io/nvidia/pytorch"
    tag: str
    tag_span: Span
    literal: bool = True  # the tag is written out (not built from ARG variables), so a fix can rewrite it
    # Where the parts of a tag built from variables are written: (start, end) in `tag` and the span of the ARG value
    # it came from (`FROM nvidia/cuda:$CUDA_VERSION-devel`: the release is ARG CUDA_VERSION's value)
    pieces: tuple[tuple[int, int, Span], ...] = ()
    # A Dockerfile's named build stage that only `COPY --from` (or `RUN --mount=...,from=`) reads: not the last stage,
    # and no later `FROM` builds on it, so no container runs this image; what it holds reaches the run as files only
    copied_only: bool = False
    # A build stage the default build never reaches: not the last stage (the default target), and neither a later
    # `FROM` (its reference expanded with the ARG defaults: `FROM cuda${CUDA_VERSION}`) nor a `--from=` names it.
    # BuildKit builds only the stages the target needs, so nothing of this image reaches the run unless a build
    # passes another `--build-arg` or `--target`
    unreached: bool = False
    # A RUN line of the image's build stage installs torch (`pip install torch==...`, `uv pip install "torch..."`):
    # the stage runs that torch, not the one the image holds
    own_torch: bool = False

    def written_at(self, start: int, end: int) -> Span | None:
        """Where the characters `tag[start:end]` are written: inside the tag itself when it is literal, inside one
        ARG value that supplies them all, else None."""
        if self.literal:
            return Span(self.tag_span.start + start, self.tag_span.start + end)
        for first, last, span in self.pieces:
            if first <= start and end <= last:
                return Span(span.start + start - first, span.start + end - first)
        return None

    @property
    def cuda(self) -> str | None:
        """The CUDA version the image ships: the tag of nvidia/cuda, `-cudaX.Y-` of pytorch/pytorch."""
        name = self.image.rsplit("/", 2)
        if self.image.endswith("nvidia/cuda"):
            m = re.match(r"(\d+\.\d+)", self.tag)
            return m.group(1) if m else None
        if name[-1] == "pytorch" and "nvcr.io" not in self.image:
            m = re.search(r"-cuda(\d+\.\d+)", self.tag)
            return m.group(1) if m else None
        return None

    @property
    def torch_version(self) -> str | None:
        """The torch release a pytorch/pytorch image ships (its tag starts with it)."""
        if self.image.endswith("pytorch/pytorch") and "nvcr.io" not in self.image:
            m = re.match(r"(\d+\.\d+(?:\.\d+)?)-cuda", self.tag)
            return m.group(1) if m else None
        return None


@dataclass
class Variable:
    name: str
    value: str
    span: Span  # the value's text (inside quotes)


@dataclass
class Declared:
    """What one install resolves together."""

    kind: str  # "requirements" | "pyproject" | "script" (inline metadata) | "setup.py" | "setup.cfg" | "conda" |
    # "dockerfile" | "command"
    requirements: list[Requirement] = field(default_factory=list)
    indexes: list[IndexUrl] = field(default_factory=list)
    images: list[BaseImage] = field(default_factory=list)
    variables: list[Variable] = field(default_factory=list)
    anchor: Span | None = None  # what a finding about the group as a whole points at
    # `pip install --no-deps` (or `-c constraints`): what the requirements ask for themselves is not installed (or is
    # held by a file not read here), so no requirement brings a torch of its own
    deps_held: bool = False
    # packages pinned exactly to a version held in a variable (`torch==${PYTORCH_VERSION}` where the variable is not
    # resolved): the install holds that package at one release, which one is not known
    pinned_by_variable: set[str] = field(default_factory=set)
    # requirement files the install reads its core requirements from when it runs, relative to the declaring file
    # (setup.py's `install_requires=_fetch_requirements("requirements.txt")`): their lines are judged where they are
    # written, and they install with every extra of this one
    core_files: tuple[str, ...] = ()
    # the requirements that named extras of known distributions install have been added (`_add_named_extras`): a
    # group a front end hands every rule is completed once
    named_extras_read: bool = field(default=False, repr=False)
    # the base image (`image:tag`) an install command runs in, where its front end knows it (a Dockerfile of one stage)
    stage_image: str = ""

    def requirement(self, name: str) -> Requirement | None:
        return next((r for r in self.requirements if r.name == name and not r.conda), None)

    def conda_package(self, name: str) -> Requirement | None:
        return next((r for r in self.requirements if r.name == name and r.conda), None)

    def variable(self, name: str) -> Variable | None:
        found = [v for v in self.variables if v.name == name]
        return found[-1] if found else None

    @property
    def cuda(self) -> str | None:
        """The CUDA toolkit the group's base image declares, if one does."""
        return next((i.cuda for i in self.images if i.cuda and not i.unreached), None)


class DeclaredRule(ConfigRule):
    """A rule over declared environments: requirement files, pyproject dependencies, conda environment files,
    Dockerfiles, and `pip install` commands in launch scripts (through the shell front end)."""

    # rlcompat/lang/languages.py; and Python: the Python front end hands a setup.py (lang/setup_deps.py) and a
    # script's inline metadata (lang/inline_script.py) to these rules as one group each, marked by these words;
    # they read no Python settings.
    languages = names_with("declares") | {"python"}
    python_triggers = ("install_requires", "extras_require", "/// script")  # and a script's inline metadata

    def reads_python(self, text: str, scanned: ScannedView | None) -> bool:
        return False

    def check_declared(self, group: Declared, ctx: ConfigContext) -> None:
        raise NotImplementedError

    def check_config(self, view: ConfigView, ctx: ConfigContext) -> None:
        if isinstance(view, GroupView):
            if ctx.scanned is not None:
                _add_named_extras(view.group, ctx.scanned)
                _mark_extras_the_tree_installs(view.group, ctx)
            self.check_declared(view.group, ctx)
            return
        # Launch scripts: a `pip install` (or `uv pip install`, `python -m pip install`) command is a group, and so
        # is a `uv sync` that asks for extras (what they install).
        group = from_command(view, ctx.source_text)
        if group is None and ctx.scanned is not None:
            group = _from_uv_sync(view, ctx) or _from_setup_py(view, ctx) or _from_unzipped_wheels(view, ctx)
            if group is not None:
                self.check_declared(group, ctx)
            return
        if group is not None and not replaced_by_later_sync(view, ctx.source_text):
            group.stage_image = view.image or ""
            if ctx.scanned is not None:
                _resolve_build_args(group, ctx)
                _add_installed_extras(group, view, ctx)
                _add_required_files(group, view, ctx)
                _add_named_extras(group, ctx.scanned)
                _add_source_builds(group, view, ctx)
            self.check_declared(group, ctx)


def _mark_extras_the_tree_installs(group: Declared, ctx: ConfigContext) -> None:
    """A project's optional extras that an install step of its tree asks for (`uv sync --extra flash-attn` in the
    Dockerfile beside it, `pip install -e .[vllm]` in its install script) are installed by default there: each
    requirement of such an extra says where (`installed_by`), and is judged as installed."""
    if group.kind != "pyproject" or not any(r.extra for r in group.requirements):
        return
    installed = ctx.scanned.extras_installed_by_tree(ctx.path)
    for req in group.requirements:
        if req.extra and not req.installed_by:
            req.installed_by = installed.get(normalise(req.extra)) or installed.get(ALL_EXTRAS, "")


def _from_uv_sync(view: ConfigView, ctx: ConfigContext) -> Declared | None:
    """`uv sync --extra X` (or `--all-extras`) in a Dockerfile or script of the tree: the group of what those extras
    of the project require, at the `sync` word (never edited there: the text is the project's)."""
    words = list(view.command_words)
    extras = uv_sync_extras(words)
    if not extras or len(view.word_spans) != len(words):
        return None
    at = next(i for i in range(len(words) - 1) if words[i] == "uv" and words[i + 1] == "sync")
    span = view.word_spans[at + 1]
    line = ctx.source_text.count("\n", 0, view.word_spans[at].start) + 1
    group = Declared("command", anchor=span)
    for req, where in ctx.scanned.installed_extras(ctx.source_text, line, extras):
        origin = f"the `{req.extra}` extra, {where}" if req.extra else where
        group.requirements.append(Requirement(req.name, req.spec, span, None, editable=False, extras=req.extras,
                                              origin=origin, version_known=req.version_known))
    return group if group.requirements else None


def _from_setup_py(view: ConfigView, ctx: ConfigContext) -> Declared | None:
    """`python setup.py install` in a fresh clone whose source build the knowledge knows (flash-attention's
    `hopper/`: FlashAttention-3): the group of that package, at the `setup.py` word (never edited there)."""
    words = list(view.command_words)
    if "setup.py" not in words or len(view.word_spans) != len(words):
        return None
    group = Declared("command", anchor=view.word_spans[words.index("setup.py")])
    _add_source_builds(group, view, ctx)
    return group if group.requirements else None


_LEADING_VARIABLE = re.compile(r"\$\{?(?P<name>[A-Za-z_]\w*)\}?(?P<rest>/.*)?")


def _resolve_build_args(group: Declared, ctx: ConfigContext) -> None:
    """An index URL a Dockerfile's RUN takes from an `ARG` without a default (`-i ${PYTORCH_WHEELS_URL}/cu128`) is
    the value the tree's own build script passes with `--build-arg` (rlcompat/knowledge/build_args.py): read with it,
    never edited there (the value is the script's)."""
    for index in group.indexes:
        m = _LEADING_VARIABLE.fullmatch(index.url)
        value = ctx.scanned.build_arg(m.group("name")) if m is not None else None
        if value is not None:
            index.url, index.editable = value.rstrip("/") + (m.group("rest") or ""), False


def _from_unzipped_wheels(view: ConfigView, ctx: ConfigContext) -> Declared | None:
    """`unzip FOLDER/*.whl -d <site-packages>` in a Dockerfile whose earlier stage filled FOLDER with `pip wheel` in
    a clone whose source build the knowledge knows (XTuner's flash-attention and FlashAttention-3 wheels): the group of
    that package, at the wheel word (never edited there), its release unknown (rlcompat/lang/wheel_unzip.py reads the command; ScannedView.wheel_folders, the folders)."""
    from rlcompat.lang.wheel_unzip import unzipped_wheels

    if not view.word_spans or len(view.word_spans) != len(view.command_words):
        return None
    written = [ctx.source_text[s.start:s.end] for s in view.word_spans]
    wheels = set(unzipped_wheels(list(view.command_words))) | set(unzipped_wheels(written))
    folders = ctx.scanned.wheel_folders() if wheels else {}
    group = Declared("command", anchor=view.word_spans[0])
    for word, span in zip(written, view.word_spans):
        built = folders.get(word.rsplit("/", 1)[0]) if word in wheels else None
        if built is not None:
            group.requirements.append(Requirement(normalise(built[0]), "", span, None, editable=False,
                                                  origin=f"built into that folder from source: {built[1]}",
                                                  version_known=False))
    return group if group.requirements else None


def _add_source_builds(group: Declared, view: ConfigView, ctx: ConfigContext) -> None:
    """A project a command builds from a fresh clone's source (`pip install .` in a flash-attention clone, `python
    setup.py install` in its `hopper/`) installs the package the knowledge names for that folder, at the word
    that names the project (`.`, `setup.py`), its release unknown (the clone's checkout decides it)."""
    for word, span in zip(view.command_words, view.word_spans):
        if word != "setup.py" and not _LOCAL_DIRECTORY.fullmatch(word):
            continue
        line = ctx.source_text.count("\n", 0, span.start) + 1
        for name, proof in ctx.scanned.source_builds(ctx.source_text, line):
            group.requirements.append(Requirement(normalise(name), "", span, None, editable=False,
                                                  origin=f"built from source: {proof}", version_known=False))


# A local project directory as an install command names it: `.`, `./hopper`, `/src/x`, `.[dev]`.
_LOCAL_DIRECTORY = re.compile(r"(?:\.{1,2}|\.{0,2}/[^\s\[]*)(?:\[[^\]]*\])?")


def _add_named_extras(group: Declared, scanned: ScannedView) -> None:
    """`pip install "verl[vllm]"` (or `openrlhf[vllm]` in a requirements file) installs what that extra requires:
    each package the knowledge knows the extra to install joins the group at the requirement's text, with no release
    (rlcompat/knowledge/install_steps.py `distribution_extras`); never edited there. Not with `--no-deps`."""
    if group.named_extras_read:
        return
    group.named_extras_read = True
    if group.deps_held:
        return
    for req in list(group.requirements):
        if not req.extras or req.conda:
            continue
        for dep, where in scanned.distribution_extras(req.name, req.extras):
            group.requirements.append(Requirement(dep.name, dep.spec, req.span, None, editable=False,
                                                  extra=req.extra, origin=f"the `{dep.extra}` extra of {where}",
                                                  version_known=dep.version_known))


# A later `uv sync` of the file (in a script, a Dockerfile RUN line or heredoc), with what follows it on its line
_UV_SYNC = re.compile(r"(?<![\w-])uv[ \t]+sync\b(?P<rest>[^\n]*)")


def replaced_by_later_sync(view: ConfigView, text: str) -> bool:
    """Whether `uv pip install` into the project's environment (`VIRTUAL_ENV` is `UV_PROJECT_ENVIRONMENT`) is undone
    by a `uv sync` later in the file: a sync is exact unless `--inexact`, so it leaves that environment as the lock
    says, each package the install put there replaced by the locked one or removed [S237] (NeMo RL v0.4.0's
    docker/Dockerfile warms uv's cache that way). What the install asks for then decides nothing that stays; the
    project's own declarations are judged where they are written. A sync into another environment (`--active`,
    its own `UV_PROJECT_ENVIRONMENT=`), an inexact one, or one with `--no-build-isolation` (which keeps extraneous
    packages) does not count."""
    words = list(view.command_words)
    if "install" not in words or words[:words.index("install")][-2:] != ["uv", "pip"]:
        return False
    venv = [s.value for s in view.env("VIRTUAL_ENV")]
    project = [s.value for s in view.env("UV_PROJECT_ENVIRONMENT")]
    if not venv or not project or not venv[-1] or venv[-1].rstrip("/") != (project[-1] or "").rstrip("/"):
        return False
    end = max((s.end for s in view.word_spans), default=0)
    for m in _UV_SYNC.finditer(text, end):
        line_start = text.rfind("\n", 0, m.start()) + 1
        if text[line_start:m.start()].lstrip().startswith("#"):
            continue  # a comment
        rest = m.group("rest")
        if not re.search(r"--inexact\b|--active\b|--no-build-isolation\b|UV_PROJECT_ENVIRONMENT=",
                         text[line_start:m.start()] + rest):
            return True
    return False


# A local project with extras, as an install command names it: `.[vllm]`, `./pkg[dev,vllm]`, `/src/app[gpu]`.
_LOCAL_PROJECT = re.compile(r"(?:\.{1,2}|\.{0,2}/[^\s\[]*)\[(?P<extras>[^\]]+)\]")


def _add_installed_extras(group: Declared, view: ConfigView, ctx: ConfigContext) -> None:
    """`pip install -e .[vllm]` installs what the project's `vllm` extra requires: each of those requirements joins
    the command's group at that word, as if written there (never edited there: the text is the project's)."""
    for word, span in zip(view.command_words, view.word_spans):
        m = _LOCAL_PROJECT.fullmatch(word)
        if m is None:
            continue
        extras = tuple(normalise(e) for e in m.group("extras").split(",") if e.strip())
        line = ctx.source_text.count("\n", 0, span.start) + 1
        for req, where in ctx.scanned.installed_extras(ctx.source_text, line, extras):
            origin = f"the `{req.extra}` extra, {where}" if req.extra else where
            group.requirements.append(Requirement(req.name, req.spec, span, None, editable=False, extras=req.extras,
                                                  origin=origin, version_known=req.version_known))


def _add_required_files(group: Declared, view: ConfigView, ctx: ConfigContext) -> None:
    """`pip install -r FILE` installs what FILE lists: each of those requirements joins the command's group at the
    FILE word, as `.[vllm]` adds an extra's (never edited there: the text is the file's), so the command that brings a
    torch is judged by it (torchforge v0.1.0-rc1 scripts/install.sh:196 installs .github/packaging/vllm_reqs_12_8.txt,
    whose torch==2.9.0+cu128 is a build without sm_60/61). The file's own lines are judged where it is scanned."""
    words = list(zip(view.command_words, view.word_spans))
    for (word, _), (value, span) in zip(words, words[1:]):
        if word not in ("-r", "--requirement"):
            continue
        line = ctx.source_text.count("\n", 0, span.start) + 1
        for req, where in ctx.scanned.required_files(ctx.source_text, line, value):
            group.requirements.append(Requirement(req.name, req.spec, span, None, editable=False, extras=req.extras,
                                                  origin=f"installed from {where}"))


def run(groups: Sequence[Declared], text: str, path: str, rules: Sequence[DeclaredRule], target,
        scanned: ScannedView) -> list[Finding]:
    """Run the rules over groups with the machinery (and report format) of the config rules."""
    return scanned.run_config_rules([GroupView(g) for g in groups], text, path, rules, target)


class GroupView(ConfigView):
    """A declared group passed through `scanned.run_config_rules`, which hands rules views."""

    def __init__(self, group: Declared) -> None:
        super().__init__("declared")
        self.group = group


# --- pip arguments ---------------------------------------------------------------------------------------------


def pip_arguments(words: Sequence[tuple[str, Span]], group: Declared) -> None:
    """Add what pip arguments (`torch==2.8.0 --index-url URL -r file ...`) declare to `group`."""
    i = 0
    while i < len(words):
        text, span = words[i]
        name, eq, inline = text.partition("=")
        if name in INDEX_OPTIONS:
            if eq:
                start = span.start + len(name) + 1
                group.indexes.append(IndexUrl(inline, INDEX_OPTIONS[name], Span(start, start + len(inline))))
            elif i + 1 < len(words):
                group.indexes.append(IndexUrl(words[i + 1][0], INDEX_OPTIONS[name], words[i + 1][1]))
                i += 1
            i += 1
            continue
        if text.startswith("-"):
            if name in ("--no-deps", "-c", "--constraint"):
                group.deps_held = True
            if text in ("-r", "-c", "--requirement", "--constraint", "-e", "--editable", "--target", "-t",
                        "--prefix", "--root", "--python", "--cache-dir", "--trusted-host", "--upgrade-strategy",
                        "--platform", "--python-version", "--only-binary", "--no-binary", TORCH_BACKEND_OPTION):
                i += 1  # skip the option's value
            i += 1
            continue
        req = requirement_at(text, span.start)
        if req is not None and len(text) != span.end - span.start:
            req.span, req.spec_span = span, None  # a value read from a variable: reported at the word that uses it
        if req is not None:
            group.requirements.append(req)
        else:
            pinned = _VARIABLE_PIN.fullmatch(text)
            if pinned is not None:
                group.pinned_by_variable.add(normalise(pinned.group(1)))
        i += 1


# A wheel's file name (PEP 427): {distribution}-{version}(-{build tag})?-{python tag}-{abi tag}-{platform tag}.whl
WHEEL_FILE = re.compile(r"(?P<name>[A-Za-z0-9_.]+)-(?P<version>[A-Za-z0-9_.!+]+)(?:-\d[^-]*)?-[^-]+-[^-]+-[^-]+\.whl")


def requirement_at(text: str, offset: int) -> Requirement | None:
    """A PEP 508 requirement written at `offset` (its text `text`), or the distribution and version a wheel file
    names (`flash_attn-2.7.4.post1+cu12torch2.6cxx11abiFALSE-cp311-cp311-linux_x86_64.whl`, a path or URL; not
    editable: the file is what it is); None for other paths, URLs and variables. A wheel name with an expansion left
    unknown after its public version (`...+cu12torch2.7cxx11abi${ABI_FLAG}-cp312-...whl`) names that version
    (`==2.8.0.post2`, which any local label matches); one with an unknown name or public version names nothing, and
    a glob after the name (`flash_attn-*.whl`) names the distribution at an unknown release."""
    if "@" in text and ";" in text:  # `name @ URL ; marker` (PEP 508): the URL decides what installs
        text = text.split(";", 1)[0].rstrip()
    if text.split("?", 1)[0].endswith(".whl"):
        # a URL percent-encodes the local label's `+` (`flash_attn_3-3.0.0%2B20260318.cu128...whl`); the file is
        # named with it
        file_name = unquote(text.split("?", 1)[0].rsplit("/", 1)[-1])
        if "$" in file_name:
            return _partly_known_wheel(file_name, Span(offset, offset + len(text)))
        globbed = WHEEL_GLOB.fullmatch(file_name)
        if globbed is not None:
            return Requirement(normalise(globbed.group("name")), "", Span(offset, offset + len(text)), None,
                               editable=False, version_known=False)
        if "$" in text:
            return None
        wheel = WHEEL_FILE.fullmatch(file_name)
        if wheel is None:
            return None
        return Requirement(normalise(wheel.group("name")), "==" + wheel.group("version"),
                           Span(offset, offset + len(text)), None, editable=False)
    if not text or "/" in text or "$" in text or text.startswith((".", "-")) or "://" in text:
        return None
    m = REQUIREMENT.match(text)
    if not m:
        return None
    spec = m.group("spec").rstrip()
    spec_start = offset + m.start("spec")
    extras = tuple(e.strip().lower() for e in (m.group("extras") or "").split(",") if e.strip())
    return Requirement(normalise(m.group("name")), spec.strip(), Span(offset, offset + len(text.rstrip())),
                       Span(spec_start, spec_start + len(spec)) if spec.strip() else None, extras=extras)


# A shell glob over a wheel file whose distribution is written out (`/tmp/wheels/flash_attn-*.whl`, a folder of
# prebuilt wheels): that distribution installs, at a release the text does not say, so rules judge only what every
# release shares. A glob inside the name (`mooncake*-*.whl`) names nothing.
WHEEL_GLOB = re.compile(r"(?P<name>[A-Za-z0-9][A-Za-z0-9_.]*)-\*[^/$]*\.whl")


# The literal head of a wheel file name: distribution, `-`, public version, then `+` (a local label) or `-` (tags).
WHEEL_HEAD = re.compile(r"(?P<name>[A-Za-z0-9_.]+)-(?P<version>\d[A-Za-z0-9_.!]*)[+-][^$]*\$")


def _partly_known_wheel(file_name: str, span: Span) -> Requirement | None:
    head = WHEEL_HEAD.match(file_name)
    if head is None:
        return None
    return Requirement(normalise(head.group("name")), "==" + head.group("version"), span, None, editable=False)


_VARIABLE_PIN = re.compile(r"([A-Za-z0-9][A-Za-z0-9._-]*)==\$\{?[A-Za-z_][A-Za-z0-9_]*\}?")
ALL_EXTRAS = "*"  # `uv sync --all-extras`: every extra the project declares


def uv_sync_extras(words: list[str]) -> tuple[str, ...] | None:
    """The extras a `uv sync` command installs with the project (`--extra X` for each X, `--all-extras`: every one,
    ALL_EXTRAS), normalised; None for another command. uv sync installs the project at its directory."""
    at = next((i for i in range(len(words) - 1) if words[i] == "uv" and words[i + 1] == "sync"), None)
    if at is None:
        return None
    args, extras = words[at + 2:], []
    for i, word in enumerate(args):
        if word == "--all-extras":
            return (ALL_EXTRAS,)
        if word == "--extra" and i + 1 < len(args):
            extras.append(normalise(args[i + 1]))
        elif word.startswith("--extra="):
            extras.append(normalise(word.split("=", 1)[1]))
    return tuple(e for e in extras if e and "$" not in e)


_PIP_INSTALL = re.compile(r"^(?:.*/)?(?:pip3?(?:\.\d+)?|uv)$")
# pip's general options that take no value and may stand between `pip` and `install` (`pip -v install x`): pip's
# own parser reads them before the command (pip/_internal/cli/cmdoptions.py general_group).
PIP_GENERAL_SWITCHES = re.compile(r"-v+|-q+|--verbose|--quiet|--isolated|--no-input|--no-color|--no-cache-dir"
                                  r"|--disable-pip-version-check|--require-virtualenv")


def from_command(view: ConfigView, text: str) -> Declared | None:
    """The group a `pip install ...` command declares (also `python -m pip install`, `uv pip install`)."""
    words = list(view.command_words)
    spans = [_inside_quotes(text, w, s) for w, s in zip(words, view.word_spans)]
    if "install" not in words or len(spans) != len(words):
        return None
    at = words.index("install")
    head = words[:at]
    while head and PIP_GENERAL_SWITCHES.fullmatch(head[-1]):
        head = head[:-1]
    if not head or not (_PIP_INSTALL.match(head[-1]) or head[-2:] == ["-m", "pip"]
                        or head[-2:] == ["uv", "pip"] or (len(head) >= 2 and head[-1] == "pip")):
        return None
    group = Declared("command", anchor=spans[0])
    pip_arguments(list(zip(words[at + 1:], spans[at + 1:])), group)
    if head[-2:] == ["uv", "pip"]:
        backend = _torch_backend(list(zip(words[at + 1:], spans[at + 1:])), view)
        if backend is not None:
            group.indexes.append(backend)
    # A word whose text is not what the file holds there (a variable the shell front end resolved) is reported
    # where it is used but never edited there.
    written = {(s.start, s.end) for w, s in zip(words, spans) if text[s.start:s.end] == w}
    for item in (*group.requirements, *group.indexes):
        if not any(a <= item.span.start and item.span.end <= b for a, b in written):
            item.editable = False
    return group


TORCH_BACKEND_OPTION = "--torch-backend"
_BACKEND = re.compile(r"cu\d+|cpu|rocm[\d.]+|xpu")


def _torch_backend(words: Sequence[tuple[str, Span]], view: ConfigView) -> IndexUrl | None:
    """The PyTorch index `uv pip install --torch-backend=cu130` (or `UV_TORCH_BACKEND=cu130` in its environment)
    takes torch and its family from [S180]: https://download.pytorch.org/whl/cu130, at the value's text (a fix
    rewrites the tag there where it is written in the command). `auto` (the driver's CUDA decides) names none."""
    found = None
    for i, (text, span) in enumerate(words):
        name, eq, inline = text.partition("=")
        if name == TORCH_BACKEND_OPTION:
            if eq:
                found = (inline, Span(span.end - len(inline), span.end))
            elif i + 1 < len(words):
                found = words[i + 1]
    if found is None:
        env = view.env("UV_TORCH_BACKEND")
        last = env[-1] if env else None
        found = (last.value, last.value_span or last.key_span) if last is not None and last.value is not None else None
    if found is None or not _BACKEND.fullmatch(found[0]):
        return None
    return IndexUrl(f"https://download.pytorch.org/whl/{found[0]}", "index", found[1], backend=True)


def _inside_quotes(text: str, word: str, span: Span) -> Span:
    """The span of a word's characters without the quotes around the whole word ("torch==2.8" -> torch==2.8)."""
    raw = text[span.start:span.end]
    if len(raw) >= 2 and raw[0] == raw[-1] and raw[0] in "'\"" and raw[1:-1] == word:
        return Span(span.start + 1, span.end - 1)
    return span
