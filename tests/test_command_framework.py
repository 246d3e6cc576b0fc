"""Flag knowledge applies only to the framework a command runs (issue 28 item 3): a flag spelled like OpenRLHF's in
another project's launcher is not OpenRLHF's, so it gets no finding citing OpenRLHF's file:line; the command's own
words, the program it starts, or the tree's identity decide which framework's knowledge applies."""

from __future__ import annotations

from rlcompat.knowledge import identity
from rlcompat.api import scan_paths
from rlcompat.knowledge.targets import resolve_target

SM61 = resolve_target("sm61")
LAUNCH = "python my_launcher.py --vllm_num_engines 2 --enforce_eager False\n"


def _findings(tmp_path, target=SM61):
    (tmp_path / ".git").mkdir(exist_ok=True)  # the tree's root: the walk up stops here
    identity.clear_caches()
    report = scan_paths([str(tmp_path)], target)
    assert not report.errors, report.errors
    return [(f.path.rsplit("/", 1)[-1], f.location.line, f.code, f.message) for f in report.findings]


def test_unknown_launcher_gets_no_openrlhf_finding(tmp_path):
    (tmp_path / "run.sh").write_text(LAUNCH)
    (tmp_path / "my_launcher.py").write_text("import argparse\nimport mylib\n")
    assert _findings(tmp_path) == []


def test_launcher_that_imports_openrlhf_gets_its_knowledge(tmp_path):
    (tmp_path / "run.sh").write_text(LAUNCH)
    (tmp_path / "my_launcher.py").write_text("from openrlhf.trainer import PPOTrainer\n")
    found = _findings(tmp_path)
    assert [(f[1], f[2]) for f in found] == [(1, "RLC404"), (1, "RLC404")]
    assert all("OpenRLHF" in f[3] for f in found)


def test_launcher_of_a_tree_that_pins_openrlhf_gets_its_knowledge(tmp_path):
    (tmp_path / "run.sh").write_text(LAUNCH)
    (tmp_path / "requirements.txt").write_text("openrlhf==0.8.11\n")
    found = _findings(tmp_path)
    assert [f[2] for f in found] == ["RLC404", "RLC404"]
    assert "OpenRLHF 0.8.11 knowledge: openrlhf/cli/train_ppo_ray.py:224-226" in found[0][3]


def test_launcher_importing_another_framework_is_not_given_the_pinned_one(tmp_path):
    """The program says what it runs (TRL here); the tree's OpenRLHF pin is for its other launchers."""
    (tmp_path / "run.sh").write_text(LAUNCH)
    (tmp_path / "requirements.txt").write_text("openrlhf==0.8.11\n")
    (tmp_path / "my_launcher.py").write_text("from trl import GRPOTrainer\n")
    assert _findings(tmp_path) == []


def test_the_framework_module_on_the_command_line_decides(tmp_path):
    (tmp_path / "run.sh").write_text("deepspeed --module openrlhf.cli.train_ppo_ray --vllm_num_engines 2\n")
    found = _findings(tmp_path)
    assert [(f[2], "OpenRLHF" in f[3]) for f in found] == [("RLC404", True)]


def test_accelerate_launch_of_a_script_that_imports_the_framework(tmp_path):
    """accelerate is a launcher: the flags after its script are the script's, judged by what the script imports."""
    (tmp_path / "run.sh").write_text("accelerate launch --num_processes 2 train.py --use_vllm true\n")
    (tmp_path / "train.py").write_text("from trl import GRPOConfig, GRPOTrainer\n")
    assert [f[2] for f in _findings(tmp_path)] == ["RLC404"]
    (tmp_path / "train.py").write_text("import mytrainer\n")
    assert _findings(tmp_path) == []


def test_generic_hazards_of_an_unknown_launcher_are_still_found(tmp_path):
    """Values that spell the hazard themselves (bf16, flash_attention_2) need no framework."""
    (tmp_path / "run.sh").write_text("python my_launcher.py --vllm_num_engines 2 --bf16 "
                                     "--attn_implementation flash_attention_2\n")
    assert [f[2] for f in _findings(tmp_path)] == ["RLC107", "RLC204"]
