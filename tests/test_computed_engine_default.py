"""A config class whose vLLM engine count defaults to a value computed from literals (issue 28: an experiment
dataclass of a launched entry script, `vllm_num_engines: int = total_num_nodes`): the count is followed into the
name it reads, a module-level name or an earlier field of the same class body, assigned once to a literal or
arithmetic over such names (nothing is executed), and a non-zero count is vLLM on a card vLLM refuses."""

from __future__ import annotations

import pytest

from rlcompat.api import scan_paths
from rlcompat.knowledge.targets import resolve_target

HEAD = ("from dataclasses import dataclass\n"
        "from orz.exps.examples.ppo.ppo_base_exp import BasePPOExpConfig\n\n")


def _found(tmp_path, body: str, target: str = "sm61") -> list[tuple[str, int]]:
    (tmp_path / "exp.py").write_text(HEAD + body)
    report = scan_paths([str(tmp_path / "exp.py")], resolve_target(target))
    return sorted((f.code, f.location.line) for f in report.findings)


MODULE_NAME = ("total_num_nodes = 8\n\n"
               "@dataclass\nclass PPOExpConfig(BasePPOExpConfig):\n"
               "    vllm_num_engines: int = total_num_nodes\n")


def test_a_module_level_count_selects_vllm_on_pascal(tmp_path):
    assert ("RLC404", 8) in _found(tmp_path, MODULE_NAME)


@pytest.mark.parametrize("body", [
    # arithmetic over an earlier module-level name
    "nodes = 2\ngpus = nodes * 8\n\n@dataclass\nclass C(BasePPOExpConfig):\n    vllm_num_engines: int = gpus // 4\n",
    # an earlier field of the same class body (MolGenDocking orz_mol.py:52, :64)
    "@dataclass\nclass C(BasePPOExpConfig):\n    total_num_nodes: int = 1\n    vllm_num_engines: int = total_num_nodes\n",
    # a condition read at run time whose both arms are non-zero: vLLM either way
    "import os\nDEBUG = os.environ.get('DEBUG') == '1'\n\n@dataclass\nclass C(BasePPOExpConfig):\n"
    "    total_num_nodes: int = 32 if not DEBUG else 8\n    vllm_num_engines: int = total_num_nodes\n",
])
def test_computed_counts_that_are_non_zero(tmp_path, body):
    assert any(code == "RLC404" for code, _ in _found(tmp_path, body))


@pytest.mark.parametrize("body", [
    # zero engines: no vLLM
    "n = 0\n\n@dataclass\nclass C(BasePPOExpConfig):\n    vllm_num_engines: int = n\n",
    # one arm zero: the run-time condition decides, nothing is known
    "import os\nDEBUG = os.environ.get('DEBUG') == '1'\nn = 0 if DEBUG else 4\n\n"
    "@dataclass\nclass C(BasePPOExpConfig):\n    vllm_num_engines: int = n\n",
    # assigned twice: which value is in force when the class body runs is not followed
    "n = 4\nn = 0\n\n@dataclass\nclass C(BasePPOExpConfig):\n    vllm_num_engines: int = n\n",
    "n = 4\nif x:\n    n = 0\n\n@dataclass\nclass C(BasePPOExpConfig):\n    vllm_num_engines: int = n\n",
    "n = 4\ndef f():\n    global n\n    n = 0\n\n@dataclass\nclass C(BasePPOExpConfig):\n    vllm_num_engines: int = n\n",
    # a name read from elsewhere (an import, a call): not a literal
    "from cfg import n\n\n@dataclass\nclass C(BasePPOExpConfig):\n    vllm_num_engines: int = n\n",
    "import os\nn = int(os.environ['N'])\n\n@dataclass\nclass C(BasePPOExpConfig):\n    vllm_num_engines: int = n\n",
])
def test_counts_not_known_to_be_non_zero_are_not_reported(tmp_path, body):
    assert not any(code == "RLC404" for code, _ in _found(tmp_path, body))


def test_the_finding_says_where_the_count_comes_from_and_offers_no_fix(tmp_path):
    (tmp_path / "exp.py").write_text(HEAD + MODULE_NAME)
    report = scan_paths([str(tmp_path / "exp.py")], resolve_target("sm61"))
    [finding] = [f for f in report.findings if f.code == "RLC404"]
    assert "total_num_nodes" in finding.message and "line 4" in finding.message
    assert finding.fix is None


def test_vllm_runs_on_turing_so_a_count_there_is_no_finding(tmp_path):
    assert not any(code == "RLC404" for code, _ in _found(tmp_path, MODULE_NAME, "sm75"))
