"""A worker of the tree's own that a run's entry module picks by a setting's value (rlcompat/analysis/entry_workers.py):
General-Reasoner's `reward_model.strategy=verifier` makes its main_ppo.py build a vLLM verifier; RLC401 reports the
choice in the command, where the command sets the switch around the branch."""

from __future__ import annotations

import json

from rlcompat.analysis import entry_workers

ENTRY = '''import hydra


@hydra.main(config_path='./verl/verl/trainer/config', config_name='ppo_trainer', version_base=None)
def main(config):
    if config.reward_model.enable:
        if config.reward_model.strategy == 'fsdp':
            from verl.workers.fsdp_workers import RewardModelWorker
        elif config.reward_model.strategy == 'verifier':
            from verifier import RewardModelWorker
        elif config.reward_model.strategy == 'judge':
            from judge import RewardModelWorker
        elif config.reward_model.strategy == 'both':
            from both import RewardModelWorker
'''
FILES = {
    "main_ppo.py": ENTRY,
    "verifier.py": "from vllm import LLM\n\n\nclass RewardModelWorker:\n    def init_model(self):\n        self.llm = LLM('m')\n",
    "judge.py": "import torch\n\n\nclass RewardModelWorker:\n    pass\n",
    "both.py": "import vllm\nimport sglang\n\n\nclass RewardModelWorker:\n    pass\n",
}
SCRIPT = "python -m main_ppo \\\n    reward_model.enable={enable} \\\n    reward_model.strategy={strategy} \\\n" \
         "    actor_rollout_ref.rollout.name=hf\n"


def _tree(tmp_path):
    for name, text in FILES.items():
        (tmp_path / name).write_text(text)
    return str(tmp_path / "main_ppo.py")


def test_the_worker_a_value_picks_is_the_engine_its_module_imports(tmp_path):
    entry = _tree(tmp_path)
    found = entry_workers.chosen(entry, "reward_model.strategy", "verifier")
    assert (found.engine, found.cls, found.where, found.defined) == ("vllm", "RewardModelWorker", "main_ppo.py:9",
                                                                      "verifier.py:4")
    assert found.needs == ("reward_model.enable",)
    assert entry_workers.chosen(entry, "reward_model.strategy", "judge") is None  # no engine imported
    assert entry_workers.chosen(entry, "reward_model.strategy", "both") is None  # two engines: no claim
    assert entry_workers.chosen(entry, "reward_model.strategy", "fsdp") is None  # a framework's module: not followed
    assert entry_workers.entry_module(("python", "-m", "main_ppo", "a=b"), str(tmp_path / "run.sh")) == entry
    assert entry_workers.entry_module(("python", "-m", "other"), str(tmp_path / "run.sh")) is None


def test_rlc401_reports_the_value_that_picks_a_vllm_worker(run_cli, tmp_path):
    _tree(tmp_path)
    for enable, strategy, reported in (("True", "verifier", True), ("False", "verifier", False),
                                       ("True", "judge", False), ("True", "both", False)):
        (tmp_path / "run.sh").write_text(SCRIPT.format(enable=enable, strategy=strategy))
        for target, expected in (("sm61", reported), ("sm75", False)):
            code, out, err = run_cli("scan", "run.sh", "--target", target, "--output-format", "json", "--no-cache",
                                     "--select", "RLC401", cwd=tmp_path)
            found = [f for f in json.loads(out)["findings"] if f["code"] == "RLC401"]
            assert bool(found) == expected, (enable, strategy, target, found, err)
            if found:
                assert found[0]["line"] == 3 and "verifier.py:4" in found[0]["message"]
