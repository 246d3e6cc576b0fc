"""A recipe dataclass default that selects a hazard is reported at the command that leaves it (issue 26 item 2,
RLC122 precision, RLC211 attention), with the field's file:line; a fix is offered only where the tree's dataclass
proves the option and its spelling, and the fixed command still parses with the tree's own parser.

The trees are recipe-shaped (HfArgumentParser/TrlParser over the tree's dataclasses, OmegaConf.from_cli merged into a
structured config), written here from transformers' hf_argparser.py and OmegaConf's documented behaviour [S156][S157];
fixtures/recipes/dataclass_defaults is the rules' own example tree."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from rlcompat import api
from rlcompat.knowledge import identity
from rlcompat.knowledge.targets import resolve_target
from rlcompat.schema.loadcheck import commands, dataclass_parser, parse_error

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "fixtures" / "recipes" / "dataclass_defaults"
SM61, SM75, SM80 = resolve_target("sm61"), resolve_target("sm75"), resolve_target("sm80")
CODES = ("RLC122", "RLC211")

CONFIGS = '''from dataclasses import dataclass, field
from typing import Literal, Optional


@dataclass
class ScriptArguments:
    dataset_name: str = "gsm8k"
    attn_implementation: str = "flash_attention_2"


@dataclass
class TrainConfig:
    output_dir: str = "out"
    bf16: bool = True
    dtype: Literal["bfloat16", "bf16"] = "bfloat16"
    gradient_checkpointing: bool = True
'''
TRAIN = '''import sys
from trl import TrlParser
from recipe.configs import ScriptArguments, TrainConfig

parser = TrlParser((ScriptArguments, TrainConfig))
'''


@pytest.fixture(autouse=True)
def fresh():
    identity.clear_caches()
    yield
    identity.clear_caches()


def _tree(tmp_path: Path, script: str, files: dict[str, str] | None = None) -> Path:
    base = {".git/HEAD": "", "recipe/__init__.py": "", "recipe/configs.py": CONFIGS, "recipe/train.py": TRAIN,
            "run.sh": script}
    for rel, text in {**base, **(files or {})}.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    return tmp_path


def _found(path: Path, target=SM61):
    return [f for f in api.scan_paths([str(path)], target, jobs=1).findings if f.code in CODES]


def test_defaults_left_by_the_command_are_reported_there_citing_the_field(tmp_path):
    root = _tree(tmp_path, "accelerate launch --mixed_precision no recipe/train.py \\\n    --dataset_name gsm8k\n")
    found = _found(root / "run.sh")
    assert {(f.code, f.location.line) for f in found} == {("RLC122", 1), ("RLC211", 1)}
    messages = " | ".join(f.message for f in found)
    assert "TrainConfig.bf16 defaults to True (recipe/configs.py:14)" in messages
    assert "ScriptArguments.attn_implementation defaults to flash_attention_2 (recipe/configs.py:8)" in messages
    # a Literal that does not list the replacement: reported, no fix, and the message says why
    (dtype,) = [f for f in found if ".dtype" in f.message]
    assert dtype.fix is None and "does not prove the parser takes float32" in dtype.message
    # a bool field: `--bf16 False` (string_to_bool takes it); a str field: `--attn_implementation sdpa`
    (bf16,) = [f for f in found if ".bf16" in f.message]
    assert bf16.fix is not None and [e.content for e in bf16.fix.edits] == [" --bf16 False"]
    # the same defaults are not this target's hazards on sm80
    assert not _found(root / "run.sh", SM80)


@pytest.mark.parametrize("flags", ["--bf16 False --attn_implementation sdpa", "--bf16=false --attn-implementation eager",
                                   "--no_bf16 --attn_implementation sdpa"])
def test_a_command_that_sets_the_field_safely_is_not_reported(tmp_path, flags):
    root = _tree(tmp_path, f"python recipe/train.py --dataset_name gsm8k {flags} --dtype bfloat16\n")
    assert [f for f in _found(root / "run.sh") if ".dtype" not in f.message] == []


def test_a_config_file_the_command_passes_sets_fields_for_it(tmp_path):
    root = _tree(tmp_path, "python recipe/train.py --config recipes/grpo.yaml\n",
                 {"recipes/grpo.yaml": "bf16: false\nattn_implementation: sdpa\ndtype: bf16\n"})
    assert _found(root / "run.sh") == []
    # a recipe file given as the first argument (HfArgumentParser.parse_yaml_file): its keys are set
    (root / "run.sh").write_text("python recipe/train.py recipes/grpo.yaml\n")
    identity.clear_caches()
    assert _found(root / "run.sh") == []
    (root / "recipes/grpo.yaml").write_text("bf16: false\n")
    assert sorted(f.message.split(" defaults")[0] for f in _found(root / "run.sh")) == [
        "ScriptArguments.attn_implementation", "TrainConfig.dtype"]
    # a --config rlcompat cannot read: what it sets is unknown, nothing is claimed
    (root / "run.sh").write_text("python recipe/train.py --config $CONFIG\n")
    identity.clear_caches()
    assert _found(root / "run.sh") == []


def test_a_class_subclassing_one_outside_the_tree_keeps_its_own_defaults(tmp_path):
    configs = ("from dataclasses import dataclass\nimport trl\n\n\n@dataclass\nclass GRPOScriptConfig(trl.GRPOConfig):\n"
               "    bf16: bool = True\n")
    root = _tree(tmp_path, "python recipe/train.py --output_dir o\n", {"recipe/configs.py": configs,
                 "recipe/train.py": "from trl import TrlParser\nfrom recipe.configs import GRPOScriptConfig\n"
                                    "parser = TrlParser((GRPOScriptConfig,))\n"})
    (bf16,) = _found(root / "run.sh")
    assert "GRPOScriptConfig.bf16 defaults to True (recipe/configs.py:7)" in bf16.message and bf16.fix is not None


def test_omegaconf_from_cli_gets_key_value_words_and_structured_without_cli_gets_no_fix(tmp_path):
    configs = ("from dataclasses import dataclass\n\n\n@dataclass\nclass PPOConfig:\n    bf16: bool = True\n"
               "    attn_impl: str = 'flash_attention_2'\n")
    entry = ("from omegaconf import OmegaConf\nfrom recipe.configs import PPOConfig\n\n"
             "cfg = OmegaConf.merge(OmegaConf.structured(PPOConfig()), OmegaConf.from_cli())\n")
    root = _tree(tmp_path, "python recipe/train.py seed=1\n", {"recipe/configs.py": configs, "recipe/train.py": entry})
    fixed = api.fix_paths([str(root / "run.sh")], SM61, jobs=1)
    assert (root / "run.sh").read_text() in ("python recipe/train.py seed=1 bf16=false attn_impl=sdpa\n",
                                             "python recipe/train.py seed=1 attn_impl=sdpa bf16=false\n")
    assert not [f for f in fixed.remaining if f.code in CODES]
    (root / "recipe/train_structured.py").write_text(entry.replace(", OmegaConf.from_cli()", ""))
    (root / "run.sh").write_text("python recipe/train_structured.py\n")
    identity.clear_caches()
    found = _found(root / "run.sh")
    assert len(found) == 2 and all(f.fix is None for f in found)
    # the reason is the missing command-line merge for both rules, not the field's annotation (`str` takes sdpa)
    assert all("no fix: the entry point merges no command-line words" in f.message for f in found)


def _parse_with_transformers(configs: Path, classes: tuple[str, ...], args: list[str]):
    """The tree's own parser, as its entry point builds it: transformers' HfArgumentParser over its dataclasses
    (the fixture's dataclasses import only the standard library)."""
    transformers = pytest.importorskip("transformers")
    spec = importlib.util.spec_from_file_location("fixture_configs", configs)
    module = importlib.util.module_from_spec(spec)
    sys.modules["fixture_configs"] = module
    spec.loader.exec_module(module)
    parser = transformers.HfArgumentParser(tuple(getattr(module, c) for c in classes))
    return parser.parse_args_into_dataclasses(args=args)


def test_the_fixed_fixture_command_parses_with_the_trees_own_parser(tmp_path):
    import shutil

    tree = tmp_path / "t"
    shutil.copytree(FIXTURE, tree)
    (tree / ".git").mkdir()
    report = api.fix_paths([str(tree / "train.sh")], SM61, jobs=1)
    assert not [f for f in report.remaining if f.code in CODES]
    assert report.load_checks and "1 command(s) parsed with the tree's dataclasses" in report.load_checks[0]
    (command,) = commands((tree / "train.sh").read_text())
    args = list(command.words[command.words.index("src/recipe/train.py") + 1:])
    model, train = _parse_with_transformers(tree / "src" / "recipe" / "configs.py",
                                            ("ModelArguments", "TrainArguments"), args)
    assert (model.attn_implementation, model.torch_dtype, train.bf16, train.precision) == ("sdpa", "float32", False, "fp32")


def test_the_load_check_refuses_an_option_or_value_the_parser_does_not_take(tmp_path):
    root = _tree(tmp_path, "")
    script_dir = str(root)
    words = ("python", "recipe/train.py", "--dataset_name", "x")
    parser = dataclass_parser(str(root), words, script_dir)
    assert parser is not None and parser.complete
    assert parse_error(parser, words) is None
    assert parse_error(parser, words + ("--bf16", "False", "--dtype", "bf16")) is None
    assert parse_error(parser, words + ("--use_torch_compile", "False")) == "error: unrecognized arguments: --use_torch_compile"
    assert "invalid value: 'maybe'" in parse_error(parser, words + ("--bf16", "maybe"))
    assert "invalid value: 'float32'" in parse_error(parser, words + ("--dtype=float32",))


def test_a_fix_the_parser_would_refuse_is_withheld(tmp_path, monkeypatch):
    """Force the rule to offer a value the Literal does not list: the load check parses the fixed command, refuses
    it, and `fix` writes nothing for that command; the finding stays and says why."""
    from rlcompat.analysis import recipe_defaults

    monkeypatch.setattr(recipe_defaults.LeftDefault, "accepts", lambda self, value: True)
    root = _tree(tmp_path, "python recipe/train.py --dataset_name x\n")
    before = (root / "run.sh").read_text()
    report = api.fix_paths([str(root / "run.sh")], SM61, jobs=1)
    assert (root / "run.sh").read_text() in (before, before.replace("\n", " --bf16 False --attn_implementation sdpa\n"),
                                              before.replace("\n", " --attn_implementation sdpa --bf16 False\n"))
    assert "--dtype" not in (root / "run.sh").read_text()
    withheld = [f for f in report.remaining if "fix withheld" in f.message]
    assert withheld and "invalid value: 'float32'" in withheld[0].message


# DeepSpeed-Chat's shape (microsoft/DeepSpeedExamples applications/DeepSpeed-Chat, step 3): plain argparse in main.py,
# launch scripts two folders below it, run from main.py's folder (`bash training_scripts/opt/run.sh`).
DS_MAIN = '''import argparse


def parse_args():
    parser = argparse.ArgumentParser()
    parser.add_argument("--offload", action="store_true")
    parser.add_argument("--attn-impl", dest="attn_implementation", default="flash_attention_2",
                        choices=["flash_attention_2", "sdpa"])
    parser.add_argument('--dtype',
                        type=str,
                        default='fp16',
                        choices=['fp16', 'bf16'])
    return parser.parse_args()
'''


def _ds_tree(tmp_path: Path, command: str, main: str = DS_MAIN) -> Path:
    files = {".git/HEAD": "", "app/step3/main.py": main, "app/step3/training_scripts/opt/run.sh": command}
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    return tmp_path / "app/step3/training_scripts/opt/run.sh"


def test_plain_argparse_defaults_left_by_the_command_are_reported_at_it(tmp_path):
    script = _ds_tree(tmp_path, "deepspeed --num_gpus 1 main.py \\\n   --offload --deepspeed\n")
    found = {f.code: f for f in _found(script)}
    assert set(found) == {"RLC122", "RLC211"}
    # fp16 below 7.0, citing the default's line; its choices hold no fp32, so no option is offered
    assert "--dtype defaults to fp16 (app/step3/main.py:11)" in found["RLC122"].message
    assert found["RLC122"].fix is None and "--dtype takes only 'fp16', 'bf16'" in found["RLC122"].message
    # an option spelled with a dash and a `dest=`: the fix writes the option as declared
    assert "--attn-impl defaults to flash_attention_2 (app/step3/main.py:7)" in found["RLC211"].message
    assert [e.content for e in found["RLC211"].fix.edits] == [" --attn-impl sdpa"]
    # sm75: fp16 is the card's mixed precision, FlashAttention-2 still is not
    assert [f.code for f in _found(script, SM75)] == ["RLC211"]
    assert not _found(script, SM80)


def test_a_plain_argparse_option_the_command_passes_is_not_reported(tmp_path):
    script = _ds_tree(tmp_path, "deepspeed main.py --dtype bf16 --attn_implementation sdpa\n")
    assert _found(script) == []  # --dtype bf16 is a bf16 selection: the flag rules judge it where it is written
    script.write_text("deepspeed main.py --dtype=bf16 --attn-impl sdpa\n")
    identity.clear_caches()
    assert _found(script) == []


def test_plain_argparse_switches_and_subcommands_leave_nothing(tmp_path):
    # a store_true switch's default False is what leaving it off means; a `bf16` switch declared that way selects
    # nothing when left off
    main = 'import argparse\np = argparse.ArgumentParser()\np.add_argument("--bf16", action="store_true")\n'
    script = _ds_tree(tmp_path, "python main.py --lr 1\n", main)
    assert _found(script) == []
    # subcommands: an option's default belongs to the subcommand that declares it, which the command may not run
    main = DS_MAIN.replace("parser = argparse.ArgumentParser()",
                           "parser = argparse.ArgumentParser()\n    sub = parser.add_subparsers()")
    script = _ds_tree(tmp_path, "deepspeed main.py\n", main)
    identity.clear_caches()
    assert _found(script) == []


def test_an_entry_script_is_not_looked_up_outside_the_tree_or_in_a_sibling_folder(tmp_path):
    script = _ds_tree(tmp_path, "deepspeed main.py\n")
    (tmp_path / "app/step2").mkdir()
    (tmp_path / "app/step3/main.py").rename(tmp_path / "app/step2/main.py")  # a sibling's main.py is another program
    identity.clear_caches()
    assert _found(script) == []
    (tmp_path / "app/step2/main.py").rename(tmp_path / "main.py")  # the tree's root is looked in, as before
    identity.clear_caches()
    assert [f.code for f in _found(script)] == ["RLC122", "RLC211"]
