"""Whether the environment a declared-environment fix (RLC601) writes still installs (issue 26).

A fix that moves torch to another PyTorch wheel index must move with it everything that names the old variant: pins
whose local version label is the old tag (`torch==2.10.0+cu128`, `torchvision==0.25.0+cu128`: a `==` with a local
label matches only that build [S100], and the new index has none), every index of the same install that serves the
old tag (a second pip option, the other index groups of a uv project), and a range of torch beside an added
`--extra-index-url` must stop where the new variant stops (pip takes the newest release PyPI or the index has; a
release the variant does not ship comes from PyPI's default build). What this file cannot edit decides the same
install too: `-r`/`-c` files a requirement file names, and a uv project's `uv.lock` (`uv sync --locked` refuses a
lock that no longer matches the project, `--frozen` installs what it pins [S101]). Where those disagree with the fix,
the fix is withheld and the finding says why.

Files of another backend (Ascend NPU, ROCm, Intel XPU, CPU-only builds, TPU) are not an NVIDIA install: the
declared-environment rules leave them alone (`other_backend`).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

from rlcompat._toml import TOMLDecodeError, load_toml_text
from rlcompat.findings import Edit
from rlcompat.knowledge import torch_wheels
from rlcompat.knowledge.versions import local_tag, release
from rlcompat.lang.declared import PYTORCH_INDEX, Declared, Requirement, normalise
from rlcompat.lang.settings import Span

# Published on the PyTorch index once per variant, beside the torch build they pair with [S102].
TORCH_FAMILY = frozenset({"torch", "torchvision", "torchaudio"})
# Distributions that exist only for another accelerator: an install that asks for one is not an NVIDIA install.
OTHER_BACKEND_PACKAGES = {
    "torch-npu": "Ascend NPU", "intel-extension-for-pytorch": "Intel XPU", "pytorch-triton-xpu": "Intel XPU",
    "pytorch-triton-rocm": "ROCm", "torch-xla": "TPU", "torch-mlu": "Cambricon MLU", "torch-musa": "Moore Threads",
    "habana-torch-plugin": "Intel Gaudi",
}
# Words that mark a whole requirement file, conda file or Dockerfile (one install) as another backend's.
_BACKEND_TEXT = re.compile(
    r"torch[-_]npu|\bascend|\bcann[-_:]|\brocm|\bhipcc\b|intel[-_]extension[-_]for[-_]pytorch|oneapi|"
    r"download\.pytorch\.org/whl/(?:nightly/|test/)?(?:cpu|xpu|rocm)\b|\+(?:cpu|xpu|rocm)", re.I)
# A file (or folder) name that says which backend it installs: requirements-npu.txt, docker/Dockerfile.rocm.
_BACKEND_NAME = re.compile(r"(?:^|[._-])(npu|ascend|rocm|amd|xpu|hpu|gaudi|tpu|mlu|musa|cpu)(?:[._-]|$)", re.I)
_COMMENT_LINE = re.compile(r"^\s*#.*$", re.M)
_TRAILING_COMMENT = re.compile(r"\s#.*$", re.M)
_INCLUDE = re.compile(r"^\s*(?:-r|--requirement|-c|--constraint)(?:\s+|\s*=\s*)(?P<file>\S+)", re.M)
_HASHES = re.compile(r"--require-hashes|--hash[=\s]")
_MAX_SIBLING_BYTES = 1 << 20


def other_backend(group: Declared, path: str, text: str) -> str | None:
    """Why this install is not an NVIDIA one ("requirements-npu.txt names the NPU backend"), or None."""
    for req in group.requirements:
        if req.extra:
            continue  # a pyproject.toml extra is its own install (align-anything's `ascend` with torch-npu), not the core's
        backend = OTHER_BACKEND_PACKAGES.get(req.name)
        if backend is not None:
            return f"`{req.name}` is a {backend} package"
        tag = local_tag(req.spec) or ""
        if req.name in TORCH_FAMILY and tag.startswith(("cpu", "xpu", "rocm")):
            return f"`{req.name}{req.spec}` is a {tag} build"
    for index in group.indexes:
        # (a uv project's CPU index is one group of several, for another platform marker or extra)
        if (index.pytorch_tag or "cu").startswith(("cpu", "xpu", "rocm")) and index.kind == "index" and not index.uv_only:
            return f"torch comes from the {index.pytorch_tag} index"
    parts = re.split(r"[\\/]", path)
    script = group.kind == "command" and not _is_dockerfile(parts[-1])
    for folder, part in ((True, parts[-2] if len(parts) > 1 else ""), (False, parts[-1])):
        m = _BACKEND_NAME.search(part)
        # `cpu` in a script's name (cpu_offload.sh) or a folder's says nothing about the install
        if m and not (m.group(1).lower() == "cpu" and (script or folder)):
            return f"`{part}` names the {m.group(1)} backend"
    whole = group.kind in ("requirements", "conda", "dockerfile")
    if group.kind == "command" and _is_dockerfile(parts[-1]):
        # A RUN command is read from the Dockerfile blanked outside RUN bodies: its FROM lines are in the file.
        whole, text = True, _read(path) or text
    if whole:
        body = _TRAILING_COMMENT.sub("", _COMMENT_LINE.sub("", text))
        m = _BACKEND_TEXT.search(body)
        if m:
            return f"the file installs for another backend (`{m.group(0)}`)"
    return None


def backend_extra(extra: str) -> bool:
    """Whether a pyproject.toml extra is named for another backend (`cpu`, `npu`, `rocm`): installed for it only."""
    return bool(extra) and _BACKEND_NAME.search(extra) is not None


def _is_dockerfile(name: str) -> bool:
    low = name.lower()
    return low == "dockerfile" or low.startswith(("dockerfile.", "dockerfile-", "dockerfile_")) or low.endswith(".dockerfile")


@dataclass
class Plan:
    """The edits a fix needs beyond its own so that the install stays consistent, or why it must be withheld."""

    edits: list[Edit] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    reads: list[str] = field(default_factory=list)  # other files looked at: the finding then depends on them

    def take(self, found: Edit | str | None) -> None:
        """An edit the fix needs, or a reason it cannot be made."""
        if isinstance(found, str):
            self.problems.append(found)
        elif found is not None:
            self.edits.append(found)

    @property
    def withheld(self) -> str:
        """The finding's addition when the fix is withheld ("" when it is not)."""
        return ("; not fixed, since the install would then fail: " + "; ".join(dict.fromkeys(self.problems))) \
            if self.problems else ""


def retag_plan(group: Declared, text: str, path: str, old: set[str], new: str, skip: tuple[Span, ...] = ()) -> Plan:
    """What else must move when torch moves from the variants `old` to `new` (the index already edited at `skip`)."""
    plan = Plan()
    for index in group.indexes:
        if index.pytorch_tag in old and index.span not in skip:
            span = index.tag_span()
            if span is None:
                plan.problems.append(f"the {index.pytorch_tag} index `{index.url}` comes from a variable")
            else:
                plan.edits.append(Edit(span.start, span.end, new))
    for req in group.requirements:
        _retag_requirement(req, text, old, new, plan)
    _torch_pins_exist(group.requirements, new, plan, "")
    _hashes(group, text, plan)
    if group.kind == "requirements":
        _siblings(path, text, old, new, plan)
    return plan


def added_index_plan(group: Declared, text: str, path: str, new: str, torch: Requirement, version: str) -> Plan:
    """What an added `--extra-index-url` for variant `new` needs: pins of another CUDA variant retagged, and a range
    of torch bounded where the variant's releases end (else pip takes a newer release from PyPI's default build)."""
    plan = Plan()
    cuda_tags = {v.tag for v in torch_wheels.wheel_variants()}
    for req in group.requirements:
        _retag_requirement(req, text, cuda_tags - {new}, new, plan)
    _torch_pins_exist(group.requirements, new, plan, "")
    plan.take(range_bound(torch, text, new, version, group.kind))
    _hashes(group, text, plan)
    if group.kind == "requirements":
        _siblings(path, text, cuda_tags - {new}, new, plan)
    return plan


def uv_plan(group: Declared, text: str, path: str, old: set[str], new: str, skip: tuple[Span, ...]) -> Plan:
    """A uv project repointed from `old` to `new`: every other PyPI-index URL of the old variants in the file (other
    `[[tool.uv.index]]` groups, `[tool.uv] extra-index-url`), pins carrying the old local label, and `uv.lock`."""
    plan = Plan()
    taken = {(s.start, s.end) for s in skip}
    for m in PYTORCH_INDEX.finditer(text):
        line_start = text.rfind("\n", 0, m.start()) + 1
        if m.group("tag") not in old or text[line_start:m.start()].lstrip().startswith("#"):
            continue
        if not re.match(r"/?(?:[\"'\s,\]]|$)", text[m.end():m.end() + 2]):
            continue  # a file under the index (a wheel's URL) exists only where it is: not an index to repoint
        start, end = m.start("tag"), m.end("tag")
        if not any(a <= start and end <= b for a, b in taken):
            plan.edits.append(Edit(start, end, new))
    for req in group.requirements:
        _retag_requirement(req, text, old, new, plan)
    _torch_pins_exist(group.requirements, new, plan, "")
    try:
        uv = ((load_toml_text(text).get("tool") or {}).get("uv") or {})
    except TOMLDecodeError:
        uv = {}
    for key in ("constraint-dependencies", "override-dependencies"):
        for spec in uv.get(key) or ():
            m = re.match(r"\s*(torch|torchvision|torchaudio)\s*==\s*([\w.!+]+)", spec) if isinstance(spec, str) else None
            if m and local_tag(m.group(2)) in old:
                plan.problems.append(f"`[tool.uv] {key}` pins `{spec}`: change it to +{new} too")
    _uv_lock(path, old, new, plan)
    return plan


def range_bound(torch: Requirement, text: str, new: str, version: str, kind: str) -> Edit | None | str:
    """The edit that stops a torch range at the first release variant `new` does not ship (`torch>=2.6` ->
    `torch>=2.6,<2.15`); None when the range already stops there or the variant has no end; a reason when it cannot
    be written."""
    variant = torch_wheels.variant(version.split("+", 1)[0], new)
    if variant is None:
        return f"the {new} index has no torch {version}"
    below = variant.torch_below
    if release(below)[0] >= 99 or _bounded(torch.spec, below):
        return None
    if not torch.editable:
        return f"`torch{torch.spec}` comes from a variable: bound it below {below}, the first release without a {new} build"
    bound = f"<{below}" if not torch.spec else f",<{below}"
    if torch.spec_span is not None:
        at = torch.spec_span.end
    else:
        m = re.match(r"[A-Za-z0-9][A-Za-z0-9._-]*\s*(?:\[[^\]]*\])?", text[torch.span.start:torch.span.end])
        at = torch.span.start + (m.end() if m else torch.span.end - torch.span.start)
    if kind == "command" or kind == "dockerfile":
        before, after = text[torch.span.start - 1:torch.span.start], text[torch.span.end:torch.span.end + 1]
        if not (before in ("'", '"') and before == after):
            # An unquoted word: `<` would be a redirection to the shell.
            word = text[torch.span.start:torch.span.end]
            cut = at - torch.span.start
            return Edit(torch.span.start, torch.span.end, f"'{word[:cut]}{bound}{word[cut:]}'")
    return Edit(at, at, bound)


def _bounded(spec: str, below: str) -> bool:
    """Whether a specifier already allows no release at or above `below`."""
    limit = release(below)
    for clause in (c.strip() for c in spec.split(",") if c.strip()):
        m = re.match(r"^(===|==|~=|<=|<|=)\s*([0-9][\w.*+!-]*)$", clause)
        if not m:
            continue
        op, text = m.groups()
        r = release(text.split("+", 1)[0].replace(".*", ""))
        if not r:
            continue
        if op in ("==", "===", "=") and "*" not in text and r < limit:
            return True
        if op in ("==", "=") and "*" in text and r[:len(limit)] < limit[:len(r)]:
            return True
        if op == "<" and r <= limit:
            return True
        if op == "<=" and r < limit:
            return True
        if op == "~=" and len(r) > 1 and r[:-2] + (r[-2] + 1,) <= limit:
            return True
    return False


def _retag_requirement(req: Requirement, text: str, old: set[str], new: str, plan: Plan, where: str = "") -> None:
    tag = local_tag(req.spec)
    if tag is None or tag not in old:
        return
    plus = text.find("+", req.span.start, req.span.end) if req.editable and not where else -1
    if req.name in TORCH_FAMILY and plus >= 0 and text[plus + 1:plus + 1 + len(tag)].lower() == tag:
        plan.edits.append(Edit(plus + 1, plus + 1 + len(tag), new))
    else:
        plan.problems.append(f"{where}`{req.name}{req.spec}` has no build on the {new} index: change it too")


def _hashes(group: Declared, text: str, plan: Plan) -> None:
    """A file that pins hashes (`--hash=sha256:...`, `--require-hashes`) accepts only the wheels it names: another
    variant's wheel is refused, so the file has to be compiled again, not edited."""
    if group.kind in ("requirements", "conda") and _HASHES.search(_TRAILING_COMMENT.sub("", _COMMENT_LINE.sub("", text))):
        plan.problems.append("the file pins wheel hashes, which another variant's wheels do not match: compile it "
                             "again (`pip-compile --generate-hashes` / `uv pip compile --generate-hashes`) against the "
                             "new index")


def _torch_pins_exist(requirements, new: str, plan: Plan, where: str) -> None:
    """Every exact torch pin of the install must have a build in the new variant."""
    for req in requirements:
        if req.name != "torch" or req.conda:
            continue
        m = re.match(r"^(?:===?)\s*(\d[\w.!]*)", req.spec)
        if m and "*" not in m.group(1) and torch_wheels.variant(m.group(1), new) is None:
            plan.problems.append(f"{where}torch {m.group(1)} has no {new} build (rlcompat/knowledge/data/torch_wheels.toml)")


def _siblings(path: str, text: str, old: set[str], new: str, plan: Plan, depth: int = 0) -> None:
    """`-r`/`-c` files a requirement file names are part of its install: a pin or index of theirs on an old variant
    cannot be edited by this file's fix."""
    if depth > 2 or not path:
        return
    from rlcompat.lang import requirements  # a front end's parser, for files this one names

    body = _TRAILING_COMMENT.sub("", _COMMENT_LINE.sub("", text))
    for m in _INCLUDE.finditer(body):
        name = m.group("file")
        if "$" in name or "://" in name:
            continue
        sibling = os.path.normpath(os.path.join(os.path.dirname(path), name))
        plan.reads.append(sibling)  # the result depends on another file: not cached
        sibling_text = _read(sibling)
        if sibling_text is None:
            continue
        group = requirements.parse(sibling_text)
        where = f"{name}:"
        for index in group.indexes:
            if index.pytorch_tag in old:
                line = sibling_text.count("\n", 0, index.span.start) + 1
                plan.problems.append(f"{where}{line} sets the {index.pytorch_tag} index too: change it to {new}")
        for req in group.requirements:
            line = sibling_text.count("\n", 0, req.span.start) + 1
            _retag_requirement(req, sibling_text, old, new, plan, f"{where}{line} pins ")
        _torch_pins_exist(group.requirements, new, plan, f"{where} ")
        _siblings(sibling, sibling_text, old, new, plan, depth + 1)


def _uv_lock(path: str, old: set[str], new: str, plan: Plan) -> None:
    lock = os.path.join(os.path.dirname(path), "uv.lock")
    plan.reads.append(lock)
    text = _read(lock)
    if text is None:
        return
    try:
        packages = load_toml_text(text).get("package") or []
    except TOMLDecodeError:
        plan.problems.append("uv.lock cannot be read: run `uv lock` after changing the index")
        return
    for package in packages:
        if not isinstance(package, dict) or normalise(str(package.get("name", ""))) not in TORCH_FAMILY:
            continue
        version = str(package.get("version", ""))
        source = package.get("source") or {}
        registry = source.get("registry", "") if isinstance(source, dict) else ""
        m = PYTORCH_INDEX.search(registry or "")
        tag = local_tag(version) if local_tag(version) in old else (m.group("tag") if m and m.group("tag") in old else None)
        if tag is not None:
            plan.problems.append(f"uv.lock pins {package['name']} {version} from the {tag} index: set the index to {new} "
                                 f"and run `uv lock` (`uv sync --locked` refuses a stale lock, `--frozen` installs it)")
            return


def core_requirements(group: Declared, path: str) -> tuple[list[Requirement], list[str]]:
    """The requirements of the files a setup.py's `install_requires` reads (`group.core_files`), which install with
    every extra of it (their spans are in those files: for what they hold, never to report or edit), and the files
    read."""
    if not path or not group.core_files:
        return [], []
    from rlcompat.lang import requirements  # a front end's parser, for files this one names

    found, reads = [], []
    for name in group.core_files:
        if "$" in name or "://" in name:
            continue
        full = os.path.normpath(os.path.join(os.path.dirname(path), name))
        reads.append(full)  # the result depends on another file: not cached
        text = _read(full)
        if text is not None:
            found += [r for r in requirements.parse(text).requirements if not r.extra]
    return found, reads


def _read(path: str) -> str | None:
    try:
        if not os.path.isfile(path) or os.path.getsize(path) > _MAX_SIBLING_BYTES:
            return None
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError:
        return None
