"""A Dockerfile `ARG` without a default takes the value the tree's own image build script passes with `--build-arg`
(XTuner v1.0.1's image_build.sh and `pip install ... -i ${PYTORCH_WHEELS_URL}/cu128`): rlcompat/knowledge/build_args.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from rlcompat.api import scan_paths
from rlcompat.knowledge.build_args import build_args
from rlcompat.knowledge.targets import resolve_target

SM61 = resolve_target("sm61")
pytestmark = pytest.mark.usefixtures("fresh_verl_detection")

DOCKERFILE = """FROM nvcr.io/nvidia/pytorch:25.03-py3
ARG TORCH_VERSION
ARG PYTORCH_WHEELS_URL
RUN pip install torch==${TORCH_VERSION} -i ${PYTORCH_WHEELS_URL}/cu128 --extra-index-url ${PYTORCH_WHEELS_URL}/cu126
"""
SCRIPT = """export TORCH_VERSION=${TORCH_VERSION:-"2.9.1"}
export PYTORCH_WHEELS_URL=${PYTORCH_WHEELS_URL:-"https://download.pytorch.org/whl"}
docker build . \\
  -t "xtuner:latest" \\
  --build-arg TORCH_VERSION=$TORCH_VERSION\\
  --build-arg PYTORCH_WHEELS_URL="$PYTORCH_WHEELS_URL" \\
  --progress=plain
"""


def _tree(root: Path, script: str = SCRIPT, dockerfile: str = DOCKERFILE) -> Path:
    root.mkdir(parents=True)
    (root / "Dockerfile").write_text(dockerfile)
    (root / "image_build.sh").write_text(script)
    return root


def test_the_values_the_build_script_passes(tmp_path):
    root = _tree(tmp_path / "x")
    values, script = build_args(str(root / "Dockerfile"))
    assert values == {"TORCH_VERSION": "2.9.1", "PYTORCH_WHEELS_URL": "https://download.pytorch.org/whl"}
    assert script.endswith("image_build.sh")
    # a script that builds another Dockerfile says nothing of this one
    other = _tree(tmp_path / "y", script=SCRIPT.replace("docker build .", "docker build -f docker/Dockerfile.cpu ."))
    assert build_args(str(other / "Dockerfile")) == ({}, "")


def _rlc601_lines(root: Path) -> list[int]:
    return [f.location.line for f in scan_paths([str(root / "Dockerfile")], SM61).findings if f.code == "RLC601"]


def test_the_index_an_arg_without_default_takes_from_the_build_script_is_judged(tmp_path):
    assert _rlc601_lines(_tree(tmp_path / "x")) == [4]


def test_no_build_script_value_leaves_the_index_unknown(tmp_path):
    unset = _tree(tmp_path / "x", script=SCRIPT.replace('--build-arg PYTORCH_WHEELS_URL="$PYTORCH_WHEELS_URL"', ""))
    assert _rlc601_lines(unset) == []
