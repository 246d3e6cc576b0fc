from __future__ import annotations

import re

from rlcompat.knowledge import torch_wheels, versions
from rlcompat.knowledge.environment import compiles_nothing, cuda_in_tag, environment_facts, torch_in_image
from rlcompat.contract import Bad, DeclaredRule, Edit, FixSafety, Good


def _nvcc() -> dict:
    return environment_facts()["nvcc"]


class BaseImageCudaCannotTarget(DeclaredRule):
    code = "RLC602"
    name = "base-image-cuda-cannot-target"
    title = "A container base image ships a CUDA (or a torch build) that cannot target the GPU"
    what = (
        "Reads `FROM` lines of Dockerfiles: `nvidia/cuda:<CUDA>-...`, `pytorch/pytorch:<torch>-cuda<CUDA>-...` and "
        "images whose documented tag format names their CUDA (rlcompat/knowledge/data/environment.toml "
        "`[[docker.cuda_tag]]`: axolotl's `...-cu130-...`); a tag built from ARGs is read with their values and "
        "reported where the ARG writes the CUDA part. "
        "Reports CUDA 13+ for a GPU below 7.5, a CUDA older than the first that knows the GPU (Blackwell needs "
        "12.8), and a pytorch/pytorch image whose torch build (rlcompat/knowledge/data/torch_wheels.toml) has no kernels for it; "
        "likewise an image whose tag says which torch build it holds (environment.toml `[[docker.torch_tag]]`: "
        "`lmsysorg/sglang:v0.5.9-cu129`, `slimerl/sglang`, `verlai/verl:base-...-cu128-...-torch2.8.0-...`), unless a "
        "RUN line of that build stage installs torch itself (then the stage runs that torch, judged by RLC601). "
        "A build stage that only `COPY --from` reads (no later `FROM` builds on it, not the last stage) of an "
        "nvidia/cuda flavour without the compiler (`base`, `runtime`) is not judged: no container runs it and "
        "nothing is compiled in it [S290]; a `devel` stage is, since what it compiles is copied into the image that runs. "
        "Nor is a stage the default build never reaches: not the last, and no later `FROM` (read with the ARG "
        "defaults: `FROM cuda${CUDA_VERSION}`) or `--from=` names it [S290]."
    )
    why = (
        "CUDA 13.0 removed offline compilation for capability < 7.5 [S27][S28] (`nvcc fatal : Unsupported gpu "
        "architecture 'compute_61'` [S48]) and torch's cu130 wheels start at sm_75 [S29]; a toolkit older than "
        "the architecture cannot compile for it [S28]. A framework's image holds the torch its build installed: SGLang's "
        "from the PyTorch index of its CUDA [S280][S281] (slime's images are SGLang's [S283]), verl's base images the "
        "release and index their tag names [S282]. The image builds; extensions built in it or torch run in it "
        "then fail on the card."
    )
    fix_safety = (
        "For `nvidia/cuda` the fix swaps the CUDA release at the head of the tag for the last 12.x release, keeping "
        "the rest (`-cudnn-devel-ubuntu24.04`). Unsafe: it changes the toolkit version, and that tag's existence is "
        "not verified (rlcompat/knowledge/data/environment.toml [docker]). pytorch/pytorch images get no fix."
    )
    names = ("FROM", "from")
    sources = ("S27", "S28", "S29", "S48", "S55", "S280", "S281", "S282", "S283", "S290")
    prevents = ("X2", "E1")
    languages = frozenset({"dockerfile", "python"})  # python: a setup.py (DeclaredRule)

    bad = (
        Bad("FROM nvidia/cuda:13.0.1-cudnn-devel-ubuntu24.04\nRUN nvcc --version\n", path="Dockerfile", unsafe=True,
            fixed="FROM nvidia/cuda:12.9.1-cudnn-devel-ubuntu24.04\nRUN nvcc --version\n"),
        Bad("FROM --platform=linux/amd64 nvidia/cuda:13.0.0-devel-ubuntu22.04 AS build\n", path="Dockerfile",
            target="sm70", unsafe=True, fixed="FROM --platform=linux/amd64 nvidia/cuda:12.9.1-devel-ubuntu22.04 AS build\n"),
        Bad("FROM pytorch/pytorch:2.8.0-cuda12.8-cudnn9-devel\n", path="Dockerfile"),
        Bad("FROM nvidia/cuda:12.4.1-devel-ubuntu22.04\n", path="Dockerfile", target="sm120"),
        # the release from a build ARG: reported, and retagged, where the ARG writes it
        Bad('ARG CUDA_VERSION="13.0.3"\nFROM nvidia/cuda:${CUDA_VERSION}-cudnn-devel-ubuntu24.04 AS base\n',
            path="Dockerfile", target="sm70", unsafe=True,
            fixed='ARG CUDA_VERSION="12.9.1"\nFROM nvidia/cuda:${CUDA_VERSION}-cudnn-devel-ubuntu24.04 AS base\n'),
        # an image whose documented tag names the CUDA it is built on (axolotl's images: `cu130`), its tag from an ARG
        Bad("ARG BASE_TAG=main-py3.12-cu130-2.14.1\nFROM axolotlai/axolotl-cloud-uv:$BASE_TAG\n", path="Dockerfile"),
        # the whole reference from a build ARG: read, and retagged, where the ARG writes it
        Bad("ARG BASE_IMAGE=nvidia/cuda:13.0.1-devel-ubuntu24.04\nFROM ${BASE_IMAGE}\n", path="Dockerfile", unsafe=True,
            fixed="ARG BASE_IMAGE=nvidia/cuda:12.9.1-devel-ubuntu24.04\nFROM ${BASE_IMAGE}\n"),
        # the final image builds on the CUDA 13 stage: it is the run's image
        Bad("FROM nvidia/cuda:13.0.1-runtime-ubuntu24.04 AS cuda13\nFROM cuda13\nCOPY --from=cuda13 /a /b\n",
            path="Dockerfile", unsafe=True,
            fixed="FROM nvidia/cuda:12.9.1-runtime-ubuntu24.04 AS cuda13\nFROM cuda13\nCOPY --from=cuda13 /a /b\n"),
        # the last FROM names the stage through the ARG's default: that stage is built
        Bad("ARG CUDA_VERSION=13\nFROM nvidia/cuda:12.8.1-devel-ubuntu22.04 AS cuda12\n"
            "FROM nvidia/cuda:13.0.3-devel-ubuntu22.04 AS cuda13\nFROM cuda${CUDA_VERSION}\n", path="Dockerfile",
            unsafe=True, fixed="ARG CUDA_VERSION=13\nFROM nvidia/cuda:12.8.1-devel-ubuntu22.04 AS cuda12\n"
                               "FROM nvidia/cuda:12.9.1-devel-ubuntu22.04 AS cuda13\nFROM cuda${CUDA_VERSION}\n"),
        # a devel stage only copied from still compiles what the final image runs
        Bad("FROM nvidia/cuda:13.0.1-devel-ubuntu24.04 AS build\nRUN pip wheel flash-attn -w /w\n"
            "FROM nvidia/cuda:12.8.1-base-ubuntu24.04\nCOPY --from=build /w /w\n", path="Dockerfile", unsafe=True,
            fixed="FROM nvidia/cuda:12.9.1-devel-ubuntu24.04 AS build\nRUN pip wheel flash-attn -w /w\n"
                  "FROM nvidia/cuda:12.8.1-base-ubuntu24.04\nCOPY --from=build /w /w\n"),
        # an image whose tag says which torch build it holds ([[docker.torch_tag]]): SGLang's cu129 image (slime
        # v0.3.0 docker/Dockerfile:1-2), reported where the ARG writes `cu129`; verl's base image names its torch
        Bad("ARG SGLANG_IMAGE_TAG=v0.5.12.post1-cu129\nFROM slimerl/sglang:${SGLANG_IMAGE_TAG} AS sglang\n"
            "RUN pip install flash-linear-attention\n", path="Dockerfile"),
        Bad("FROM verlai/verl:base-verl0.6-cu128-cudnn9.8-torch2.8.0-fa2.7.4\n", path="Dockerfile"),
    )
    good = (
        Good("FROM nvidia/cuda:12.6.3-cudnn-devel-ubuntu22.04\n", path="Dockerfile"),
        Good("FROM nvidia/cuda:13.0.1-cudnn-devel-ubuntu24.04\n", path="Dockerfile", target="sm75"),
        Good("FROM pytorch/pytorch:2.8.0-cuda12.6-cudnn9-devel\n", path="Dockerfile"),
        Good("FROM pytorch/pytorch:2.8.0-cuda12.8-cudnn9-devel\n", path="Dockerfile", target="sm70"),
        Good("FROM python:3.11-slim\n", path="Dockerfile"),
        Good("FROM nvidia/cuda:12.8.1-cudnn-devel-ubuntu24.04\n", path="Dockerfile", target="sm120"),
        Good("ARG BASE_TAG=main-py3.12-cu130-2.14.1\nFROM axolotlai/axolotl-cloud-uv:$BASE_TAG\n", path="Dockerfile",
             target="sm75"),
        Good("ARG BASE_TAG=main-base\nFROM axolotlai/axolotl-base-uv:$BASE_TAG\n", path="Dockerfile"),
        # a stage the default build never reaches: the ARG's default picks the CUDA 12 stage (open-instruct's
        # Dockerfile:1-4 at e6c3044); BuildKit builds only what the last stage needs
        Good("ARG CUDA_VERSION=12\nFROM nvidia/cuda:12.8.1-devel-ubuntu22.04 AS cuda12\n"
             "FROM nvidia/cuda:13.0.3-devel-ubuntu22.04 AS cuda13\nFROM cuda${CUDA_VERSION}\n", path="Dockerfile"),
        # a runtime stage only copied from: its libraries are files of the final CUDA 12.8 image, not its base
        Good("FROM nvidia/cuda:13.0.1-runtime-ubuntu24.04 AS cuda13\nRUN mkdir /cu13\n"
             "FROM nvidia/cuda:12.8.1-base-ubuntu24.04\nCOPY --from=cuda13 /cu13/ /opt/cuda13/\n", path="Dockerfile"),
        Good("ARG SGLANG_IMAGE_TAG=v0.5.12.post1-cu129\nFROM slimerl/sglang:${SGLANG_IMAGE_TAG}\n", path="Dockerfile",
             target="sm75"),
        # the stage installs its own torch (AReaL v1.0.3 Dockerfile:9, :76-79): the image's is not the one it runs
        Good("FROM lmsysorg/sglang:v0.5.9-cu129-amd64-runtime\nRUN uv venv /v \\\n    && uv pip install --index-url "
             "https://download.pytorch.org/whl/cu126 \"torch==2.9.1\"\n", path="Dockerfile"),
        Good("FROM lmsysorg/sglang:latest\n", path="Dockerfile"),  # which release, and so which torch, is not known
    )

    @classmethod
    def applies_to(cls, target) -> bool:
        return True

    def check_declared(self, group, ctx) -> None:
        for image in group.images:
            if image.unreached or (image.copied_only and compiles_nothing(image.image, image.tag)):
                # a stage the default build never builds; or one only copied from, without a compiler: no container
                # runs it, nothing is built in it
                continue
            self._held_torch(image, ctx)
            found = _cuda_of(image)
            if found is None:
                continue
            cuda, start, end = found
            # A tag built from ARGs: reported (and retagged) where the ARG writes the CUDA part, if one ARG does
            written = image.written_at(start, end)
            problem = self._cuda_problem(cuda)
            if problem:
                edits: list[Edit | None] = [self._retag(written)] if (
                    image.image.endswith("nvidia/cuda") and written is not None) else [None]
                ctx.report(written or image.tag_span, f"{image.image}:{image.tag} ships CUDA {cuda}, which {problem}",
                           edits, FixSafety.UNSAFE, "use the last CUDA 12 image")
                continue
            version = image.torch_version
            variant = torch_wheels.variant(version, "cu" + cuda.replace(".", "")) if version else None
            if variant is not None and not variant.runs_on(self.target.capability) and not image.own_torch:
                ctx.report(image.tag_span, f"{image.image}:{image.tag} holds torch {version} for CUDA {cuda}, built "
                                           f"for {', '.join(variant.arches)} only: no kernels for {self.target.name} "
                                           f"(`no kernel image is available`); use a -cuda12.6 tag", [None])

    def _held_torch(self, image, ctx) -> None:
        """An image whose tag says which torch build it holds (`[[docker.torch_tag]]`: SGLang's and verl's images),
        in a stage that installs no torch of its own: that torch is the one the stage runs."""
        held = torch_in_image(image.image, image.tag)
        if held is None or image.own_torch:
            return
        torch, tag, where, proof = held
        cc = self.target.capability
        variant = torch_wheels.variant(torch, tag) if torch else None
        # a release the wheel table has no row of on that index: judged by what every known build of the index lacks
        lacking = (variant if not variant.runs_on(cc) else None) if variant is not None else torch_wheels.tag_lacks(tag, cc)
        if lacking is None:
            return
        span = (image.written_at(*where) if where else None) or image.written_at(0, len(image.tag)) or image.tag_span
        held_text = f"torch {torch} from the {tag} index" if torch else f"its release's torch from the {tag} index"
        built = (f"built for {', '.join(lacking.arches)}" if variant else
                 f"whose every known build ({lacking.tag}, torch {lacking.torch_min}) is for {', '.join(lacking.arches)}")
        ctx.report(span, f"{image.image}:{image.tag} holds {held_text} ({proof.split(' (')[0]}), {built}: no kernels "
                         f"for {self.target.name} (`no kernel image is available`), and no RUN line of this stage "
                         f"installs another torch; build on an image (or install a torch) with "
                         f"{self.target.name} kernels", [None])

    def _cuda_problem(self, cuda: str) -> str | None:
        limit = _nvcc()["cannot_target_below"]
        cc = self.target.capability
        if cc < versions.capability(limit["capability"]) and not torch_wheels.cuda_below(cuda, limit["cuda"]):
            return (f"cannot compile for {self.target.name} ({self.target.capability_text}): CUDA {limit['cuda']}+ "
                    f"targets {limit['capability']}+ only (`nvcc fatal : Unsupported gpu architecture "
                    f"'compute_{self.target.cc}'`), and torch's CUDA 13 wheels have no kernels for it")
        # The entry for the nearest capability at or below the card's (sm120 is 12.0's, not 11.0's).
        known = [m for m in _nvcc()["min_cuda"] if versions.capability(m["capability"]) <= cc]
        first = max(known, key=lambda m: versions.capability(m["capability"]))["cuda"] if known else None
        if first and torch_wheels.cuda_below(cuda, first):
            return f"predates {self.target.name} ({self.target.capability_text}): CUDA {first}+ is needed"
        return None

    def _retag(self, release) -> Edit | None:
        """The nvidia/cuda release (where `release` spans it) replaced by the last CUDA 12 one."""
        cc = self.target.capability
        if cc >= versions.capability(_nvcc()["cannot_target_below"]["capability"]):
            return None  # a newer card: the old tag is not the way out
        last = {d["cuda"]: d["tag"] for d in environment_facts()["docker"]["nvidia_cuda_last"]}
        replacement = last.get("12")
        if replacement is None:
            return None
        return Edit(release.start, release.end, replacement)


def _cuda_of(image) -> tuple[str, int, int] | None:
    """The CUDA release an image declares and where its tag says so: the head of an nvidia/cuda tag, `-cudaX.Y` of
    pytorch/pytorch, `cuNNN` of an image whose documented tag format names it (environment.toml [[docker.cuda_tag]])."""
    cuda = image.cuda
    if cuda is None:
        return cuda_in_tag(image.image, image.tag)
    if image.image.endswith("nvidia/cuda"):
        return cuda, 0, len(image.tag.split("-", 1)[0])
    m = re.search(r"-cuda(\d+\.\d+)", image.tag)
    return (cuda, m.start(1), m.end(1)) if m else (cuda, 0, len(image.tag))
