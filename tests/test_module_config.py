"""A launch command that runs a framework module reading the tree's YAML of the module's name (knowledge
`module_config`: align-anything's `deepspeed --module align_anything.trainers.<task>` reads
align_anything/configs/train/<task>.yaml, a `--<name> <value>` flag replacing keys of that last name), the config's
own keys judged as align-anything's and not another framework's, and a pyproject.toml extra for another backend
that leaves the core install NVIDIA's."""

from __future__ import annotations

from pathlib import Path

from rlcompat.analysis import module_entry_config
from rlcompat.api import scan_paths
from rlcompat.knowledge.targets import resolve_target
from rlcompat.lang.settings import ConfigView

PPO = "align_anything/configs/train/text_to_text/ppo.yaml"
VLLM = "align_anything/configs/train/text_to_text/ppo_vllm.yaml"
LAUNCH = ("#!/usr/bin/env bash\nsource ./setup.sh\n\ndeepspeed \\\n  --master_port ${MASTER_PORT} \\\n"
          "  --module align_anything.trainers.text_to_text.{task} \\\n  --actor_model_name_or_path m{extra} \\\n"
          "  --output_dir out\n")


def _tree(tmp_path: Path, bf16: str = "True", use_vllm: str = "True") -> Path:
    (tmp_path / ".git").mkdir(parents=True)
    (tmp_path / "align_anything" / "trainers" / "text_to_text").mkdir(parents=True)
    (tmp_path / "align_anything" / "__init__.py").write_text("")
    for rel, text in ((PPO, f"train_cfgs:\n  ds_cfgs: ds_z3_config.json\n  bf16: {bf16}\n  fp16: False\n"),
                      (VLLM, f"train_cfgs:\n  bf16: False\n  fp16: False\nvllm_cfgs:\n  use_vllm: {use_vllm}\n"
                             "  vllm_num_engines: 1\n")):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    (tmp_path / "scripts").mkdir()
    return tmp_path


def _script(tree: Path, task: str, extra: str = "") -> Path:
    path = tree / "scripts" / f"{task}.sh"
    path.write_text(LAUNCH.replace("{task}", task).replace("{extra}", extra))
    return path


def _found(paths, target):
    return {(Path(f.path).name, f.code, f.location.line) for f in scan_paths([str(p) for p in paths], resolve_target(target)).findings}


def test_the_bf16_the_tree_s_config_keeps_is_reported_at_the_command_that_leaves_it(tmp_path):
    tree = _tree(tmp_path)
    script = _script(tree, "ppo")
    for target in ("sm61", "sm75"):
        found = scan_paths([str(script)], resolve_target(target)).findings
        assert [(f.code, f.location.line) for f in found] == [("RLC118", 4)]
        assert PPO in found[0].message and "pass --bf16 False" in found[0].message
    assert _found([script], "sm80") == set()


def test_a_flag_that_overrides_the_key_or_a_config_that_turns_it_off_leaves_the_command_alone(tmp_path):
    tree = _tree(tmp_path)
    assert _found([_script(tree, "ppo", " \\\n  --bf16 False")], "sm75") == set()
    assert _found([_script(tree, "ppo", " \\\n  --train_cfgs:bf16 False")], "sm75") == set()
    off = _tree(tmp_path / "off", bf16="False")
    assert _found([_script(off, "ppo")], "sm75") == set()


def test_without_the_config_in_the_tree_nothing_is_claimed(tmp_path):
    tree = _tree(tmp_path)
    (tree / PPO).unlink()
    assert _found([_script(tree, "ppo")], "sm61") == set()
    # a module outside the framework's prefix reads no config of it
    (tree / "scripts" / "other.sh").write_text("deepspeed --module other_pkg.trainers.ppo --bf16 True\n")
    assert not any(code == "RLC118" and "align_anything" in name for name, code, _ in _found([tree / "scripts" / "other.sh"], "sm61"))


def test_the_ppo_vllm_trainer_s_engine_is_reported_at_its_command_and_use_vllm_is_no_switch(tmp_path):
    """ppo_vllm builds its vLLM engines whatever `vllm_cfgs.use_vllm` says (it stores the key and never reads it):
    the command that runs the trainer starts vLLM; the key, True or False, is no finding."""
    for use_vllm in ("True", "False"):
        tree = _tree(tmp_path / use_vllm, use_vllm=use_vllm)
        script = _script(tree, "ppo_vllm")
        found = scan_paths([str(script), str(tree / VLLM)], resolve_target("sm61")).findings
        assert {(Path(f.path).name, f.code, f.location.line) for f in found} == {("ppo_vllm.sh", "RLC407", 4)}
        assert "align_anything.trainers.text_to_text.ppo_vllm starts vLLM" in found[0].message
        assert _found([script, tree / VLLM], "sm80") == set()
    # the PPO trainer without vLLM starts none
    assert not any(code == "RLC407" for _, code, _ in _found([_script(tree, "ppo", " \\\n  --bf16 False")], "sm61"))


def test_the_module_a_command_runs_and_the_flags_that_override_a_key():
    def view(words):
        return ConfigView(kind="command", settings=(), command_words=tuple(words))

    assert module_entry_config.module_run(view(["deepspeed", "--module", "a.b", "--x", "1"])) == "a.b"
    assert module_entry_config.module_run(view(["python", "-m", "a.b"])) == "a.b"
    assert module_entry_config.module_run(view(["python", "train.py", "-m"])) is None
    assert module_entry_config.overridden(view(["deepspeed", "--bf16", "False"]), "train_cfgs.bf16")
    assert module_entry_config.overridden(view(["deepspeed", "--train-cfgs:bf16=False"]), "train_cfgs.bf16")
    assert not module_entry_config.overridden(view(["deepspeed", "--fp16", "False", "bf16"]), "train_cfgs.bf16")


def test_an_extra_for_another_backend_leaves_the_core_install_nvidia_s(tmp_path):
    """align-anything's pyproject.toml: an unpinned core torch beside an `ascend` extra with torch-npu; pip installs
    the core from PyPI (the newest torch, cu130: no sm_61), and the extra is Ascend's own install."""
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "x"\nversion = "0.1"\ndependencies = [\n    "torch",\n    "deepspeed",\n]\n\n'
        '[project.optional-dependencies]\nascend = [\n    "torch==2.1.0",\n    "torch-npu==2.1.0.post10",\n]\n')
    found = _found([tmp_path / "pyproject.toml"], "sm61")
    assert found == {("pyproject.toml", "RLC601", 5)}
    assert _found([tmp_path / "pyproject.toml"], "sm75") == set()
    # a core install that asks for torch-npu itself is Ascend's: not reported
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "x"\nversion = "0.1"\ndependencies = [\n    "torch",\n    "torch-npu==2.1.0.post10",\n]\n')
    assert _found([tmp_path / "pyproject.toml"], "sm61") == set()
