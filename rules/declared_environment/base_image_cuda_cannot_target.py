from __future__ import annotations

from rlcompat.knowledge import torch_wheels, versions
from rlcompat.knowledge.environment import environment_facts
from rlcompat.contract import Bad, DeclaredRule, Edit, FixSafety, Good


def _nvcc() -> dict:
    return environment_facts()["nvcc"]


class BaseImageCudaCannotTarget(DeclaredRule):
    code = "RLC602"
    name = "base-image-cuda-cannot-target"
    title = "A container base image ships a CUDA (or a torch build) that cannot target the GPU"
    what = (
        "Reads `FROM` lines of Dockerfiles: `nvidia/cuda:<CUDA>-...` and `pytorch/pytorch:<torch>-cuda<CUDA>-...`. "
        "Reports CUDA 13+ for a GPU below 7.5, a CUDA older than the first that knows the GPU (Blackwell needs "
        "12.8), and a pytorch/pytorch image whose torch build (rlcompat/knowledge/data/torch_wheels.toml) has no kernels for it."
    )
    why = (
        "CUDA 13.0 removed offline compilation for capability < 7.5 [S27][S28] (`nvcc fatal : Unsupported gpu "
        "architecture 'compute_61'` [S48]) and torch's cu130 wheels start at sm_75 [S29]; a toolkit older than "
        "the architecture cannot compile for it [S28]. The image builds; extensions built in it or torch run in it "
        "then fail on the card."
    )
    fix_safety = (
        "For `nvidia/cuda` the fix swaps the CUDA release at the head of the tag for the last 12.x release, keeping "
        "the rest (`-cudnn-devel-ubuntu24.04`). Unsafe: it changes the toolkit version, and that tag's existence is "
        "not verified (rlcompat/knowledge/data/environment.toml [docker]). pytorch/pytorch images get no fix."
    )
    names = ("FROM", "from")
    sources = ("S27", "S28", "S29", "S48", "S55")
    prevents = ("X2", "E1")
    languages = frozenset({"dockerfile", "python"})  # python: a setup.py (DeclaredRule)

    bad = (
        Bad("FROM nvidia/cuda:13.0.1-cudnn-devel-ubuntu24.04\nRUN nvcc --version\n", path="Dockerfile", unsafe=True,
            fixed="FROM nvidia/cuda:12.9.1-cudnn-devel-ubuntu24.04\nRUN nvcc --version\n"),
        Bad("FROM --platform=linux/amd64 nvidia/cuda:13.0.0-devel-ubuntu22.04 AS build\n", path="Dockerfile",
            target="sm70", unsafe=True, fixed="FROM --platform=linux/amd64 nvidia/cuda:12.9.1-devel-ubuntu22.04 AS build\n"),
        Bad("FROM pytorch/pytorch:2.8.0-cuda12.8-cudnn9-devel\n", path="Dockerfile"),
        Bad("FROM nvidia/cuda:12.4.1-devel-ubuntu22.04\n", path="Dockerfile", target="sm120"),
        Bad('ARG CUDA_VERSION="13.0.3"\nFROM nvidia/cuda:${CUDA_VERSION}-cudnn-devel-ubuntu24.04 AS base\n',
            path="Dockerfile", target="sm70"),
        # the whole reference from a build ARG: read, and retagged, where the ARG writes it
        Bad("ARG BASE_IMAGE=nvidia/cuda:13.0.1-devel-ubuntu24.04\nFROM ${BASE_IMAGE}\n", path="Dockerfile", unsafe=True,
            fixed="ARG BASE_IMAGE=nvidia/cuda:12.9.1-devel-ubuntu24.04\nFROM ${BASE_IMAGE}\n"),
    )
    good = (
        Good("FROM nvidia/cuda:12.6.3-cudnn-devel-ubuntu22.04\n", path="Dockerfile"),
        Good("FROM nvidia/cuda:13.0.1-cudnn-devel-ubuntu24.04\n", path="Dockerfile", target="sm75"),
        Good("FROM pytorch/pytorch:2.8.0-cuda12.6-cudnn9-devel\n", path="Dockerfile"),
        Good("FROM pytorch/pytorch:2.8.0-cuda12.8-cudnn9-devel\n", path="Dockerfile", target="sm70"),
        Good("FROM python:3.11-slim\n", path="Dockerfile"),
        Good("FROM nvidia/cuda:12.8.1-cudnn-devel-ubuntu24.04\n", path="Dockerfile", target="sm120"),
    )

    @classmethod
    def applies_to(cls, target) -> bool:
        return True

    def check_declared(self, group, ctx) -> None:
        for image in group.images:
            cuda = image.cuda
            if cuda is None:
                continue
            problem = self._cuda_problem(cuda)
            if problem:
                edits: list[Edit | None] = [self._retag(image)] if (
                    image.image.endswith("nvidia/cuda") and image.literal) else [None]
                ctx.report(image.tag_span, f"{image.image}:{image.tag} ships CUDA {cuda}, which {problem}", edits,
                           FixSafety.UNSAFE, "use the last CUDA 12 image")
                continue
            version = image.torch_version
            variant = torch_wheels.variant(version, "cu" + cuda.replace(".", "")) if version else None
            if variant is not None and not variant.runs_on(self.target.capability):
                ctx.report(image.tag_span, f"{image.image}:{image.tag} holds torch {version} for CUDA {cuda}, built "
                                           f"for {', '.join(variant.arches)} only: no kernels for {self.target.name} "
                                           f"(`no kernel image is available`); use a -cuda12.6 tag", [None])

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

    def _retag(self, image) -> Edit | None:
        cc = self.target.capability
        if cc >= versions.capability(_nvcc()["cannot_target_below"]["capability"]):
            return None  # a newer card: the old tag is not the way out
        last = {d["cuda"]: d["tag"] for d in environment_facts()["docker"]["nvidia_cuda_last"]}
        release = image.tag.split("-", 1)[0]
        replacement = last.get("12")
        if replacement is None:
            return None
        return Edit(image.tag_span.start, image.tag_span.start + len(release), replacement)
