"""slime and AReaL knowledge (issue 28 round 10, dev siblings slime-0.3.0 and areal-1.0.3): a checkout's version read
from its own setup.py/pyproject.toml, the bf16 slime writes unless --fp16 is passed (reported at its own entry's
command, not at a user's program), Megatron's `--attention-backend flash`, and AReaL YAML mappings that leave
attn_impl / SGLang's attention_backend at their defaults."""

from __future__ import annotations

from pathlib import Path

from rlcompat.api import fix_paths, scan_paths
from rlcompat.knowledge import identity
from rlcompat.knowledge.targets import resolve_target

T4, P40 = resolve_target("sm75"), resolve_target("sm61")
SETUP = 'from setuptools import setup\nsetup(\n    author="slime Team",\n    name="slime",\n    version="0.3.0",\n)\n'
TRAIN = "from slime.utils.arguments import parse_args\n\nparse_args()\n"
LAUNCH = ("ray job submit --address=http://127.0.0.1:8265 -- python3 train.py \\\n"
          "   --hf-checkpoint /root/Qwen3-4B {extra}\\\n   --colocate\n")


def _slime_checkout(tmp_path: Path, extra: str = "", package: bool = True) -> Path:
    root = tmp_path / "slime"
    (root / "scripts").mkdir(parents=True)
    (root / ".git").mkdir()
    (root / "setup.py").write_text(SETUP)
    if package:
        (root / "slime").mkdir()
        (root / "slime" / "__init__.py").write_text("")
    (root / "train.py").write_text(TRAIN)
    (root / "scripts" / "run.sh").write_text(LAUNCH.format(extra=extra))
    return root


def _codes(path: Path, target) -> list[tuple[str, int, str]]:
    return [(f.code, f.location.line, f.message) for f in scan_paths([str(path)], target).findings]


def test_a_package_without_version_takes_its_projects_setup_py_or_pyproject_version(tmp_path):
    root = _slime_checkout(tmp_path)
    found = identity.resolve(str(root)).get("slime")
    assert (found.how, found.version, found.exact) == ("release", "0.3.0", True)
    assert "setup.py says slime 0.3.0" in found.evidence
    other = tmp_path / "areal"
    (other / "areal").mkdir(parents=True)
    (other / "areal" / "__init__.py").write_text("from .version import __version__\n")
    (other / "pyproject.toml").write_text('[project]\nname = "areal"\nversion = "1.0.3"\n')
    assert identity.resolve(str(other)).get("areal").version == "1.0.3"
    (other / "pyproject.toml").write_text('[project]\nname = "someone-else"\nversion = "1.0.3"\n')
    identity.clear_caches()
    assert identity.resolve(str(other)).get("areal").version is None


def test_slimes_own_entry_trains_in_bf16_unless_fp16_is_passed(tmp_path):
    root = _slime_checkout(tmp_path)
    [(code, line, message)] = [c for c in _codes(root / "scripts" / "run.sh", T4) if c[0] == "RLC118"]
    assert line == 1 and "--fp16 is not passed" in message and "arguments.py:151" in message
    assert message.endswith("pass --fp16 (mixed precision with tensor cores here)")
    [(_, _, message)] = [c for c in _codes(root / "scripts" / "run.sh", P40) if c[0] == "RLC118"]
    assert "train elsewhere or change tool" in message  # no fp32 choice in slime; fp16 is 1/64 rate on sm61
    fixed = _slime_checkout(tmp_path / "b", extra="--fp16 ")
    assert not [c for c in _codes(fixed / "scripts" / "run.sh", T4) if c[0] == "RLC118"]


def test_a_program_outside_slimes_checkout_keeps_its_own_defaults(tmp_path):
    # the same launch in a tree with no slime package (a user's program that imports slime): no default claim
    root = _slime_checkout(tmp_path, package=False)
    assert not [c for c in _codes(root / "scripts" / "run.sh", T4) if c[0] == "RLC118"]


def test_megatrons_flash_backend_is_fixed_to_auto(tmp_path):
    root = _slime_checkout(tmp_path, extra="--attention-backend flash ")
    [(_, _, message)] = [c for c in _codes(root / "scripts" / "run.sh", T4) if c[0] == "RLC207"]
    assert "TransformerEngine disables below compute capability 8.0" in message
    fix_paths([str(root / "scripts" / "run.sh")], T4)
    assert "--attention-backend auto " in (root / "scripts" / "run.sh").read_text()
    assert not [c for c in _codes(root / "scripts" / "run.sh", T4) if c[0] == "RLC207"]
    kept = _slime_checkout(tmp_path / "b", extra="--attention-backend unfused ")
    assert not [c for c in _codes(kept / "scripts" / "run.sh", T4) if c[0] == "RLC207"]


AREAL = ("experiment_name: gsm8k-grpo\nrollout:\n  backend: \"sglang:d4p1t1\"\n  max_head_offpolicyness: 2\n"
         "actor:\n  path: Qwen/Qwen2.5-1.5B-Instruct\n  kl_ctl: {kl}\nref:\n  path: ${{actor.path}}\n"
         "sglang:\n  mem_fraction_static: 0.8\n")


def test_areal_mappings_that_leave_the_attention_defaults(tmp_path):
    config = tmp_path / "gsm8k_grpo.yaml"
    config.write_text(AREAL.format(kl="0.0"))
    found = {(line, m.split(" does not set ")[0]) for code, line, m in _codes(config, T4) if code == "RLC207"}
    assert found == {(5, "actor"), (10, "sglang")}  # no ref model is built with kl_ctl 0 (rl_trainer.py:176)
    config.write_text(AREAL.format(kl="0.1"))
    found = {(line, m.split(" does not set ")[0]) for code, line, m in _codes(config, T4) if code == "RLC207"}
    assert found == {(5, "actor"), (8, "ref"), (10, "sglang")}
    assert ("RLC404", 3) in {(c, line) for c, line, _ in _codes(config, P40)}  # "sglang:d4p1t1": the engine part
    assert ("RLC404", 3) not in {(c, line) for c, line, _ in _codes(config, T4)}
