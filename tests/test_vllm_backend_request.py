"""VLLM_ATTENTION_BACKEND=FLASH_ATTN under a vLLM whose selector replaces it below 8.0 (issue 28 round 14: the verl 0.1
fork of NovaSky-AI/SkyThought exports it in every launcher and pins `vllm<=0.6.3`): through vLLM 0.9.0 the request
falls back to XFormers there, so RLC207 stays silent; a vLLM that keeps the request, or a requirement that allows a
release after the last one read, is still reported (rlcompat/knowledge/data/vllm.toml [attention_backend_request])."""

from __future__ import annotations

from pathlib import Path

import pytest

from rlcompat.api import scan_paths
from rlcompat.knowledge.targets import resolve_target

LAUNCHER = "export VLLM_ATTENTION_BACKEND=FLASH_ATTN\npython3 -m verl.trainer.main_ppo_sky trainer.nnodes=1\n"
RAY = ("import ray\n"
       "ray.init(runtime_env={'env_vars': {'VLLM_ATTENTION_BACKEND': 'FLASH_ATTN', 'NCCL_DEBUG': 'WARN'}})\n")


def _rlc207(tmp_path: Path, requirement: str | None, name: str, text: str, target: str = "sm75") -> list[int]:
    (tmp_path / ".git").mkdir(exist_ok=True)
    if requirement is not None:
        (tmp_path / "requirements.txt").write_text(f"ray\n{requirement}\n")
    path = tmp_path / name
    path.write_text(text)
    return [f.location.line for f in scan_paths([str(path)], resolve_target(target)).findings if f.code == "RLC207"]


@pytest.mark.parametrize("requirement", ["vllm<=0.6.3", "vllm==0.6.3", "vllm<=0.8.2", "vllm>=0.4.0,<=0.9.0",
                                         "vllm==0.3.3"])
@pytest.mark.parametrize("target", ["sm61", "sm75"])
def test_a_request_the_trees_vllm_replaces_is_not_reported(tmp_path, requirement, target):
    assert _rlc207(tmp_path, requirement, "run.sh", LAUNCHER, target) == []
    assert _rlc207(tmp_path, requirement, "train.py", RAY, target) == []


@pytest.mark.parametrize("requirement", ["vllm==0.11.0", "vllm>=0.6.3", "vllm<=0.9.2", "vllm<0.10", "vllm", None])
def test_a_vllm_that_may_keep_the_request_is_still_reported(tmp_path, requirement):
    assert _rlc207(tmp_path, requirement, "run.sh", LAUNCHER) == [1]
    assert _rlc207(tmp_path, requirement, "train.py", RAY) == [2]


def test_the_official_images_release_decides_for_its_container(tmp_path):
    compose = ("services:\n  a:\n    image: vllm/vllm-openai:{tag}\n    environment:\n"
               "      - VLLM_ATTENTION_BACKEND=FLASH_ATTN\n    command: --model m\n")
    assert _rlc207(tmp_path, None, "compose.yaml", compose.format(tag="v0.8.5")) == []
    assert _rlc207(tmp_path, None, "compose.yaml", compose.format(tag="v0.11.0")) == [5]


def test_another_backend_than_the_replaced_one_is_judged_as_before(tmp_path):
    text = LAUNCHER.replace("FLASH_ATTN", "FLASHINFER")
    assert _rlc207(tmp_path, "vllm<=0.6.3", "run.sh", text) == [1]


def test_the_pin_of_a_vendored_verl_project_is_the_trees(tmp_path):
    """A tree that runs its own copy of verl from a project vendored in it (`./verl/verl` beside `./verl/setup.py`,
    DeepScaleR's layout) installs that project's requirements with it (`pip install -e ./verl`): its vLLM pin is the
    tree's where the tree's own files name no vLLM."""
    (tmp_path / "setup.py").write_text("from setuptools import setup\nsetup(name='app', install_requires=['torch==2.4.0'])\n")
    (tmp_path / "verl" / "verl" / "trainer").mkdir(parents=True)
    (tmp_path / "verl" / "verl" / "version").mkdir()
    (tmp_path / "verl" / "verl" / "version" / "version").write_text("0.1\n")
    (tmp_path / "verl" / "setup.py").write_text("from setuptools import setup\nsetup(name='verl')\n")
    (tmp_path / "verl" / "requirements.txt").write_text("ray\nvllm<=0.6.3\n")
    (tmp_path / "scripts").mkdir()
    assert _rlc207(tmp_path, None, "scripts/run.sh", LAUNCHER) == []
    (tmp_path / "verl" / "requirements.txt").write_text("ray\nvllm>=0.6.3\n")
    from rlcompat.knowledge import identity
    identity.clear_caches()
    assert _rlc207(tmp_path, None, "scripts/run.sh", LAUNCHER) == [1]
