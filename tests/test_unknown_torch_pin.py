"""RLC601 beside an exact pin of a package that pins torch at a release the wheel table lacks (issue 28 round 11,
h28sib6): every vLLM release rlcompat/knowledge/data/torch_wheels.toml knows asks for one torch (`Requires-Dist:
torch==X`), so `vllm==0.8.3` holds torch at some release pip will not replace; a bare `torch` or a `torchvision`
whose newest release asks for a newer torch is then backtracked by pip, not installed at its newest. Only a range
of the pinned package, another install, or a PyTorch index leaves the newest-release judgement in force."""

from __future__ import annotations

from pathlib import Path

import pytest

from rlcompat.api import scan_paths
from rlcompat.knowledge import torch_wheels
from rlcompat.knowledge.targets import resolve_target
from rlcompat.rules.declared_environment.helpers import pins_torch_exactly

SM61 = resolve_target("sm61")
UNKNOWN = "0.8.3"
UNKNOWN_LATER = "0.10.2"  # pins torch 2.8.0 on PyPI; the table has no row of it either


def _rlc601(tmp_path: Path, files: dict[str, str]) -> list[tuple[str, int]]:
    (tmp_path / ".git").mkdir()
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    found = scan_paths([str(tmp_path)], SM61, jobs=1).findings
    return sorted((Path(f.path).name, f.location.line) for f in found if f.code == "RLC601")


def test_the_release_used_here_is_one_the_table_lacks():
    # a precondition: were a row for it added, these tests would judge a known release instead
    for unknown in (UNKNOWN, UNKNOWN_LATER):
        assert not [r for r in torch_wheels.torch_requirements() if r.package == "vllm" and r.release == unknown]
    assert pins_torch_exactly("vllm")
    assert not pins_torch_exactly("torchvision")  # its newest asks for a range (`>=2.14.0`)
    assert not pins_torch_exactly("no-such-package")


@pytest.mark.parametrize("text", [
    f"vllm=={UNKNOWN}\ntorchvision\n",
    f"vllm=={UNKNOWN}\ntorch\ntorchaudio\n",
    f"torch>=2.4\nvllm=={UNKNOWN}\n",
])
def test_an_exact_pin_of_an_unknown_release_holds_torch_for_the_install(tmp_path, text):
    assert _rlc601(tmp_path, {"requirements.txt": text}) == []


def test_a_setup_py_extra_installs_with_the_core_pin(tmp_path):
    setup = ("from setuptools import setup\nsetup(name='x', install_requires=['vllm==" + UNKNOWN + "'],\n"
             "      extras_require={'vision': ['torchvision']})\n")
    assert _rlc601(tmp_path, {"setup.py": setup}) == []


@pytest.mark.parametrize("text, lines", [
    ("vllm>=0.8.3\ntorchvision\n", [1, 2]),  # a range: pip takes the newest vLLM, which pins a cu130 torch
    ("torchvision\n", [1]),  # nothing holds torch
    # held at a release not known, but every PyPI torch the install's own `>=2.8.0` allows lacks sm_61
    (f"vllm=={UNKNOWN_LATER}\ntorch>=2.8.0\n", [2]),
])
def test_without_an_exact_pin_the_newest_release_is_judged(tmp_path, text, lines):
    assert _rlc601(tmp_path, {"requirements.txt": text}) == [("requirements.txt", n) for n in lines]


def test_a_pin_in_another_install_holds_nothing_here(tmp_path):
    # setup.py's install_requires does not read this requirements file: `pip install -r` installs it alone
    setup = "from setuptools import setup\nsetup(name='x', install_requires=['vllm==" + UNKNOWN + "'])\n"
    assert _rlc601(tmp_path, {"setup.py": setup, "requirements.txt": "torchvision\n"}) == [("requirements.txt", 1)]
