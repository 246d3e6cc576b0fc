"""The "a switch set to True -> turn it off" skeletons (rlcompat/analysis/pyswitches.py, confighelpers.turn_off) and
the verl keys RLC354 reads from the knowledge by id (the critic's `use_liger` through the model/hf_model.yaml mount)."""

from __future__ import annotations

import dataclasses

import pytest

from rlcompat.knowledge import verl_config
from rlcompat.analysis.confighelpers import keys_at_every_mount
from rlcompat.api import scan_source
from rlcompat.config import Options
from rlcompat.rules.triton_compile import liger_kernel
from rlcompat.knowledge.targets import resolve_target

SM61 = resolve_target("sm61")


class _View:
    kind, is_verl, command_words, mounts = "command", True, ("python3", "-m", "verl.trainer.main_ppo"), ("",)


@pytest.mark.parametrize("version", ["0.8.0", "0.9.1"])
def test_the_critics_liger_key_comes_from_the_mount_where_the_rule_set_has_it(version):
    knowledge = verl_config.load_version(version)
    [actor] = [k for k in knowledge.by_id("use-liger") if k.role == "actor"]
    assert keys_at_every_mount(knowledge, actor) == ("actor_rollout_ref.model.use_liger", "critic.model.use_liger")
    # moved in the knowledge, the key moves with it: no hard-coded critic key is added
    moved = dataclasses.replace(knowledge, mounts={**knowledge.mounts, "model/hf_model.yaml": (
        "actor_rollout_ref.model", "critic.other_model")})
    keys = liger_kernel._liger_keys(_View(), moved)
    assert keys == ["actor_rollout_ref.model.use_liger", "critic.other_model.use_liger"]


@pytest.mark.parametrize("version", ["0.4.1", "0.5.0", "0.6.1", "0.7.0"])
def test_rule_sets_without_the_critic_mount_keep_the_unproven_critic_key(version):
    knowledge = verl_config.load_version(version)
    assert liger_kernel._liger_keys(_View(), knowledge) == ["actor_rollout_ref.model.use_liger",
                                                             liger_kernel.UNPROVEN_CRITIC_KEY]


def _scan(code: str, path: str):
    language = {"sh": "shell", "yaml": "yaml", "py": "python"}[path.rsplit(".", 1)[1]]
    return [(f.code, f.message, f.fix.description if f.fix else None)
            for f in scan_source(code, SM61, path, language, Options())]


def test_config_switch_skeleton_removes_a_bare_flag_and_turns_a_true_value_off():
    flag, = _scan("accelerate launch sft.py --use_liger_kernel --lr 1e-5\n", "run.sh")
    assert flag[0] == "RLC354" and flag[1].endswith("drop the flag") and flag[2] == "remove --use_liger_kernel"
    true, = _scan("use_liger_kernel: true\n", "sft.yaml")
    assert true[1].startswith("use_liger_kernel is true: ") and true[2] == "set it to false"
    assert _scan("use_liger_kernel: false\n", "sft.yaml") == []
    assert _scan("use_liger_kernel: maybe\n", "sft.yaml") == []


def test_python_switch_skeleton_skips_a_capability_guard_and_anything_but_the_literal_true():
    assert [c for c, _, _ in _scan("cfg = ModelConfig(p, use_liger=True)\n", "a.py")] == ["RLC305"]
    assert _scan("cfg = ModelConfig(p, use_liger=flag)\n", "a.py") == []
    assert _scan("cfg = ModelConfig(p, use_liger=1)\n", "a.py") == []
    guarded = "import torch\nif torch.cuda.get_device_capability()[0] >= 8:\n    cfg = ModelConfig(p, use_liger=True)\n"
    assert _scan(guarded, "a.py") == []
