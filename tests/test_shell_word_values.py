"""A command word that mixes text and shell variables (`"flash-attn==${FA_VER}"`, `"/tmp/${WHL}"`,
`"torch==${TORCH_VER}+cu129"`) is read with the variables' known values filled in, as AReaL 1.0.3's Dockerfile
writes its torch and FlashAttention installs (issue 28 round 10, dev sibling areal-1.0.3); an unknown value stays as
written, so `torch==${V}` with `V=$1` is still a pin by variable."""

from __future__ import annotations

from pathlib import Path

from rlcompat.api import fix_paths, scan_paths
from rlcompat.knowledge.targets import resolve_target

DOCKERFILE = """FROM python:3.11
ARG VARIANT=sglang
RUN if [ "$VARIANT" = "vllm" ]; then TORCH_VER="2.10.0"; else TORCH_VER="2.9.1"; fi \\
    && uv pip install --index-url https://download.pytorch.org/whl/cu129 \\
    "torch==${TORCH_VER}+cu129" "torchvision"
RUN set -ex \\
    && FA_VER="2.8.3" \\
    && PY_TAG=$(python3 -c "import sys; print(sys.version_info.minor)") \\
    && WORK="/tmp/flash-attn-repack" \\
    && uv pip install "$WORK/flash_attn-${FA_VER}-${PY_TAG}-${PY_TAG}-linux_x86_64.whl" --no-build-isolation
RUN set -ex \\
    && FA3_VER="3.0.0" \\
    && if [ "$VARIANT" = "vllm" ]; then TORCH_TAG="torch2.10"; else TORCH_TAG="torch2.9"; fi \\
    && LOCAL="+cu128${TORCH_TAG}gite2743ab" \\
    && WHL="flash_attn_3-${FA3_VER}${LOCAL}-cp39-abi3-linux_x86_64.whl" \\
    && uv pip install "/tmp/${WHL}" --no-build-isolation
"""


def _found(path: Path, target: str) -> set[tuple[str, int, str]]:
    return {(f.code, f.location.line, f.message.split(" needs ")[0].split(" from ")[0])
            for f in scan_paths([str(path)], resolve_target(target)).findings if f.code in ("RLC601", "RLC603")}


def test_known_values_are_filled_into_install_words(tmp_path):
    path = tmp_path / "Dockerfile"
    path.write_text(DOCKERFILE)
    assert _found(path, "sm75") == {("RLC603", 10, "flash-attn"), ("RLC603", 16, "flash-attn-3")}
    sm61 = _found(path, "sm61")
    assert ("RLC601", 5, "torch 2.9.1") in sm61  # torch 2.9.1 on cu129: no sm_6x build on that index
    before = path.read_text()
    fix_paths([str(path)], resolve_target("sm61"))
    assert path.read_text() == before  # a filled-in word is reported where used, never edited there


def test_a_script_variable_and_an_unknown_one(tmp_path):
    script = tmp_path / "install.sh"
    script.write_text('FA_VER="2.8.3"\npip install "flash-attn==${FA_VER}"\n')
    assert _found(script, "sm75") == {("RLC603", 2, "flash-attn")}
    script.write_text('#!/bin/bash\nV=$1\npip install "torch==${V}" torchvision\n')
    assert not _found(script, "sm61")  # torch held at one unknown release: nothing claimed


def test_an_empty_variable_is_no_index(tmp_path):
    # axolotl 0.21.0 docker/Dockerfile-uv-base:15, :41-42: the branch that uses the empty ARG runs only when a build
    # sets it; the index is unknown there, not PyPI
    path = tmp_path / "Dockerfile"
    path.write_text('FROM python:3.11\nARG PYTORCH_VERSION="2.14.1"\nARG TORCH_INDEX_URL=""\n'
                    'RUN if [ -n "$TORCH_INDEX_URL" ]; then \\\n'
                    '    uv pip install --index-url "$TORCH_INDEX_URL" torch==${PYTORCH_VERSION} torchvision; fi\n')
    assert not _found(path, "sm61")
