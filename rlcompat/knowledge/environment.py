"""rlcompat/knowledge/data/environment.toml: what doctor's RLC5xx rules and the declared-environment rules (RLC6xx)
know about a machine's packages (minimum capabilities, known hazards per release), the errors they prevent, what
base images ship, and the NCCL, nvcc and FlashAttention-2 backward limits."""

from __future__ import annotations

import re
from functools import lru_cache

from rlcompat.knowledge import files


@lru_cache(maxsize=1)
def environment_facts() -> dict:
    """The table, with every `min_capability_of = "row"` / `warn_below_of = "row"` (a package's minimum, named in
    rlcompat/knowledge/data/capabilities.toml) filled in as `min_capability` / `warn_below` = that row's capability
    text."""
    from rlcompat.knowledge.capabilities import min_capability

    data = files.load("environment.toml")

    def fill(entry: dict) -> None:
        for key in ("min_capability", "warn_below"):
            if f"{key}_of" in entry:
                entry[key] = min_capability(entry[f"{key}_of"]).text
        for value in entry.values():
            if isinstance(value, dict):
                fill(value)

    for package in data["packages"].values():
        fill(package)
    return data


def error_text(error_id: str) -> str:
    return environment_facts()["errors"][error_id]["text"]


def package_facts(name: str) -> dict:
    return environment_facts()["packages"][name]


def shipped_by_image(image: str, tag: str) -> list[tuple[str, str, str]]:
    """(package, release, proof) for each package a base image's tag says it ships (`[[docker.ships]]`):
    hiyouga/pytorch:th2.6.0-cu124-flashattn2.7.4-... ships flash-attn 2.7.4."""
    found = []
    for row in environment_facts()["docker"].get("ships", ()):
        if not _is_image(image, row["image"]):
            continue
        m = re.search(row["tag"], tag)
        if m:
            found.append((row["package"], m.group("version"), row["proof"]))
    return found


def cuda_in_tag(image: str, tag: str) -> tuple[str, int, int] | None:
    """(CUDA release, start, end in `tag`) where an image's documented tag format names the CUDA it is built on
    (`[[docker.cuda_tag]]`): axolotlai/axolotl-cloud-uv:main-py3.12-cu130-2.14.1 is CUDA 13.0, at `130`."""
    for row in environment_facts()["docker"].get("cuda_tag", ()):
        if not any(_is_image(image, name) for name in row["images"]):
            continue
        m = re.search(row["tag"], tag)
        if m:
            return f"{int(m.group('major'))}.{int(m.group('minor'))}", m.start("major"), m.end("minor")
    return None


def compiles_nothing(image: str, tag: str) -> bool:
    """Whether an nvidia/cuda image is of a flavour without the compiler toolchain (`[docker]
    nvidia_cuda_no_compiler`: `13.0.1-runtime-ubuntu24.04`); False for any other image (not known)."""
    flavours = environment_facts()["docker"].get("nvidia_cuda_no_compiler", ())
    return _is_image(image, "nvidia/cuda") and any(word in flavours for word in tag.split("-")[1:])


def _is_image(image: str, name: str) -> bool:
    """Whether the image reference's repository `image` is `name`, from Docker Hub or any registry before it."""
    return image == name or image.endswith("/" + name)


def torch_in_image(image: str, tag: str) -> tuple[str, str, tuple[int, int] | None, str] | None:
    """(torch release or "" where not known, the PyTorch index tag it came from (`cu129`), where the tag names that
    CUDA (start, end) or None where the row's default holds, proof) for an image whose tag says which torch build it
    holds (`[[docker.torch_tag]]`): lmsysorg/sglang:v0.5.9-cu129 holds SGLang 0.5.9's torch pin from the cu129 index."""
    from rlcompat.knowledge import torch_wheels
    from rlcompat.knowledge.versions import release as release_of

    for row in environment_facts()["docker"].get("torch_tag", ()):
        if not any(_is_image(image, name) for name in row["images"]):
            continue
        m = re.search(row["tag"], tag)
        if m is None:
            continue
        groups = m.groupdict()
        release = groups.get("release") or ""
        if groups.get("major"):
            cuda, where = f"{int(groups['major'])}.{int(groups['minor'])}", (m.start("major"), m.end("minor"))
        else:
            default = row.get("cuda")
            # a default CUDA only for the releases whose build was read (an unversioned tag has none)
            if default is None or not release or not (
                    release_of(default["from"]) <= release_of(release) <= release_of(default["through"])):
                continue
            cuda, where = default["value"], None
        torch = groups.get("torch") or ""
        if not torch and release:
            torch = next((r.torch for r in torch_wheels.torch_requirements()
                          if r.package == row.get("package") and r.release == release and not r.extra
                          and not r.torch_is_bound and r.torch), "")
        return torch, "cu" + cuda.replace(".", ""), where, row["proof"]
    return None
