"""What a tree's launch files do with a Python entry point's own options (rlcompat/analysis/pyentry_switches.py):
a keyword under a switch no launch file passes is not reported (RLC202, RLC003); a precision default is, whatever
the launch files pass (RLC113)."""

from __future__ import annotations

from rlcompat.api import scan_paths
from rlcompat.knowledge.targets import resolve_target

# ColossalChat's train_ppo.py shape (hpcaitech/ColossalAI v0.4.9 applications/ColossalChat/examples/training_scripts/
# train_ppo.py:76-101, :549, :561): a FlashAttention-2 load under `--use_flash_attn`, a reward model under
# `--rm_pretrain`, an fp16 `--mixed_precision` default.
ENTRY = '''import argparse

from transformers import AutoModelForCausalLM


def train(args):
    if args.use_flash_attn:
        actor = AutoModelForCausalLM.from_pretrained(
            args.pretrain,
            use_flash_attention_2=True,
        )
        if args.rm_pretrain:
            reward = AutoModelForCausalLM.from_pretrained(
                args.rm_pretrain,
                use_flash_attention_2=True,
            )


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--pretrain", type=str, default=None)
    parser.add_argument("--rm_pretrain", type=str, default=None)
    parser.add_argument("--mixed_precision", type=str, default="fp16", choices=["fp16", "bf16"])
    parser.add_argument("--use_flash_attn", default=False, action="store_true")
    train(parser.parse_args())
'''
ACTOR_LINE, REWARD_LINE, DEFAULT_LINE = 10, 15, 23


def _tree(tmp_path, scripts: dict[str, str]):
    folder = tmp_path / "examples" / "training_scripts"
    folder.mkdir(parents=True)
    (tmp_path / "setup.py").write_text('from setuptools import setup\nsetup(name="coati")\n')
    (folder / "train_ppo.py").write_text(ENTRY)
    for name, text in scripts.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    return folder / "train_ppo.py"


def _codes(path, target: str = "sm75") -> dict[int, list[str]]:
    found = scan_paths([str(path)], resolve_target(target)).findings
    out: dict[int, list[str]] = {}
    for f in found:
        out.setdefault(f.location.line, []).append(f.code)
    return out


LAUNCH = "colossalai run --nproc_per_node 8 train_ppo.py \\\n    --pretrain $P \\\n    --mixed_precision \"bf16\"\n"


def test_flash_attention_under_a_switch_no_launch_file_passes_is_not_reported(tmp_path):
    found = _codes(_tree(tmp_path, {"examples/training_scripts/train_ppo.sh": LAUNCH}))
    assert ACTOR_LINE not in found and REWARD_LINE not in found


def test_a_launch_file_that_passes_the_switch_keeps_what_runs_under_it_only(tmp_path):
    script = LAUNCH.replace('"bf16"\n', '"bf16" \\\n    --use_flash_attn\n')
    found = _codes(_tree(tmp_path, {"examples/training_scripts/train_ppo.sh": script}))
    assert found.get(ACTOR_LINE) == ["RLC202"]
    # the reward model loads only with --rm_pretrain as well, which the launch file does not pass
    assert REWARD_LINE not in found
    (tmp_path / "examples/training_scripts/train_ppo.sh").write_text(script + "# --rm_pretrain $RM\n")
    assert _codes(tmp_path / "examples/training_scripts/train_ppo.py").get(REWARD_LINE) == ["RLC202"]


def test_no_launch_file_of_the_entry_point_leaves_it_to_the_users_command(tmp_path):
    found = _codes(_tree(tmp_path, {"run_sft.sh": "colossalai run train_sft.py --mixed_precision bf16\n"}))
    assert found.get(ACTOR_LINE) == ["RLC202"]
    assert found.get(DEFAULT_LINE, []) == []  # sm75: fp16 is not a hazard
    assert _codes(tmp_path / "examples/training_scripts/train_ppo.py", "sm61").get(DEFAULT_LINE) == ["RLC113"]


def test_a_precision_default_stays_reported_beside_launch_files_that_override_it(tmp_path):
    # a user's own command of the script leaves the option out: the parser's default is what it trains with
    path = _tree(tmp_path, {"examples/training_scripts/train_ppo.sh": LAUNCH})
    assert _codes(path, "sm61").get(DEFAULT_LINE) == ["RLC113"]


# MiniMind's shape (jingyaogong/minimind d65ef2c trainer/train_grpo.py:236, :310-311): an integer switch tested with
# `== 1`, a script outside a package, its commands in the README's shell blocks only.
COMPILE_ENTRY = '''import argparse

import torch


def main(args, model):
    if args.use_compile == 1:
        model = torch.compile(model)
    return model


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--use_compile", default=0, type=int, choices=[0, 1])
    main(parser.parse_args(), None)
'''
COMPILE_LINE = 8


def _compile_tree(tmp_path, readme: str):
    (tmp_path / "trainer").mkdir()
    (tmp_path / "trainer" / "train_grpo.py").write_text(COMPILE_ENTRY)
    (tmp_path / "README.md").write_text(readme)
    (tmp_path / "requirements.txt").write_text("torch\n")  # the project's root (identity.tree_root)
    return tmp_path / "trainer" / "train_grpo.py"


def test_a_readme_shell_block_is_a_launch_file_and_an_equals_one_test_is_a_switch(tmp_path):
    path = _compile_tree(tmp_path, "# Train\n\n```bash\ncd trainer\npython train_grpo.py\n```\n")
    assert COMPILE_LINE not in _codes(path, "sm61")


def test_a_readme_command_that_passes_the_switch_keeps_the_finding(tmp_path):
    path = _compile_tree(tmp_path, "```bash\npython train_grpo.py --use_compile 1\n```\n")
    assert _codes(path, "sm61").get(COMPILE_LINE) == ["RLC304"]


def test_an_entry_point_named_only_in_a_readmes_prose_leaves_it_to_the_users_command(tmp_path):
    path = _compile_tree(tmp_path, "Set `loss_type` in `train_grpo.py` to try CISPO.\n")
    assert _codes(path, "sm61").get(COMPILE_LINE) == ["RLC304"]


def test_a_comparison_that_holds_with_the_switch_off_is_not_a_guard(tmp_path):
    path = _compile_tree(tmp_path, "```bash\npython train_grpo.py\n```\n")
    path.write_text(COMPILE_ENTRY.replace("== 1", "== 0"))
    assert _codes(path, "sm61").get(COMPILE_LINE) == ["RLC304"]
