"""A value an entry point forces under a switch its parser leaves off (rlcompat/analysis/entry_switches.py): reported
unless the tree's launch files run the entry point and none passes the switch."""

from __future__ import annotations

from rlcompat.api import scan_paths
from rlcompat.knowledge.targets import resolve_target

# OpenRLHF's cli/train_ppo_ray.py shape (MM-EUREKA bccddd7 openrlhf/cli/train_ppo_ray.py:273, :286, :461-464)
ENTRY = '''import argparse

if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--flash_attn", action="store_true", default=False)
    parser.add_argument("--packing_samples", action="store_true", default=False)
    args = parser.parse_args()
    if args.packing_samples:
        if not args.flash_attn:
            args.flash_attn = True
'''
FORCED_LINE = 10


def _tree(tmp_path, entry: str = ENTRY, scripts: dict[str, str] | None = None):
    (tmp_path / "setup.py").write_text('from setuptools import setup\nsetup(name="openrlhf")\n')
    package = tmp_path / "openrlhf"
    (package / "cli").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "cli" / "__init__.py").write_text("")
    (package / "cli" / "train_ppo_ray.py").write_text(entry)
    for name, text in (scripts or {}).items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    return package / "cli" / "train_ppo_ray.py"


def _forced(path) -> list[str]:
    found = scan_paths([str(path)], resolve_target("sm75")).findings
    return [f.code for f in found if f.location.line == FORCED_LINE]


def test_forced_under_a_switch_no_launch_script_passes_is_not_reported(tmp_path):
    script = "ray job submit -- python3 -m openrlhf.cli.train_ppo_ray \\\n  --flash_attn \\\n  --bf16\n"
    assert _forced(_tree(tmp_path, scripts={"examples/scripts/train.sh": script})) == []


def test_a_launch_script_that_passes_the_switch_keeps_it(tmp_path):
    script = "python3 -m openrlhf.cli.train_ppo_ray \\\n  --packing_samples \\\n  --bf16\n"
    assert _forced(_tree(tmp_path, scripts={"examples/scripts/train.sh": script})) == ["RLC207"]
    # the entry point named by its path
    (tmp_path / "examples/scripts/train.sh").write_text("python openrlhf/cli/train_ppo_ray.py --packing_samples\n")
    assert _forced(tmp_path / "openrlhf/cli/train_ppo_ray.py") == ["RLC207"]


def test_no_launch_file_of_the_entry_point_leaves_it_to_the_users_command(tmp_path):
    other = "python3 -m openrlhf.cli.train_sft --bf16\n"  # another entry point's script
    assert _forced(_tree(tmp_path, scripts={"run_sft.sh": other})) == ["RLC207"]


def test_a_switch_the_parser_leaves_on_forces_it_in_every_run(tmp_path):
    entry = ENTRY.replace('"--packing_samples", action="store_true", default=False',
                          '"--packing_samples", type=bool, default=True')
    script = "python3 -m openrlhf.cli.train_ppo_ray --bf16\n"
    assert _forced(_tree(tmp_path, entry, {"train.sh": script})) == ["RLC207"]


def test_a_package_that_is_not_the_trees_own_keeps_it(tmp_path):
    """An unpacked wheel (`openrlhf-0.5.9.data/purelib/openrlhf/...`) inside another project: that project's scripts
    are not the package's launchers, and the package's own are not there."""
    (tmp_path / "wheel" / "purelib").mkdir(parents=True)
    entry = _tree(tmp_path / "wheel" / "purelib")
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "other"\n')
    (tmp_path / "wheel" / "purelib" / "setup.py").unlink()
    (tmp_path / "run.sh").write_text("python3 -m openrlhf.cli.train_ppo_ray --bf16\n")
    assert _forced(entry) == ["RLC207"]
