"""The tree's own schema decides which keys a fix may add (issue 26 items 2-3): fork-shaped trees written here from
the facts of Hydra's override grammar (https://hydra.cc/docs/advanced/override_grammar/basic/) and OmegaConf's
structured merge, not copied from any fork."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from rlcompat import api
from rlcompat.knowledge import identity
from rlcompat.findings import Edit, FileResult, Finding, Fix, FixSafety, Location
from rlcompat.pipeline.fixer import fix_source
from rlcompat.knowledge.targets import resolve_target
from rlcompat.schema import KeySchema
from rlcompat.schema.gate import spell
from rlcompat.schema.hydra_static import compose
from rlcompat.schema.structured import dataclass_fields, dataclass_keys, field_defaults
from rlcompat.pipeline.source import decode

ROOT = Path(__file__).resolve().parents[1]
DROPOUT_MODEL = ROOT / "fixtures" / "models" / "fa2_head_dim_256_rtx3090" / "input" / "models" / "gemma-7b-dropout"
ATTN = "actor_rollout_ref.model.override_config.attn_implementation"
HAS_HYDRA = subprocess.run([sys.executable, "-c", "import hydra, omegaconf"], capture_output=True).returncode == 0

# A verl-0.1-era layout: one ppo_trainer.yaml, no defaults list, no use_torch_compile.
FORK_CONFIG = """\
data:
  train_batch_size: 8
actor_rollout_ref:
  hybrid_engine: true
  model:
    path: ~/models/base
    external_lib: null
{override}  actor:
    strategy: fsdp
    fsdp_config:
      param_offload: false
  ref:
    fsdp_config:
      param_offload: false
  rollout:
    name: vllm
    dtype: bfloat16
algorithm:
  adv_estimator: gae
trainer:
  total_epochs: 1
"""
COMMAND = "python3 -m verl.trainer.main_ppo \\\n    algorithm.adv_estimator=grpo \\\n    actor_rollout_ref.model.path={model}\n"


def _tree(tmp_path: Path, version: str, config: str, entry: str | None = None, extra: dict | None = None) -> Path:
    identity.clear_caches()
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'fork'\n")
    package = tmp_path / "verl"
    (package / "version").mkdir(parents=True)
    (package / "version" / "version").write_text(version + "\n")
    (package / "__init__.py").write_text("")
    (package / "trainer" / "config").mkdir(parents=True)
    (package / "trainer" / "__init__.py").write_text("")
    (package / "trainer" / "config" / "ppo_trainer.yaml").write_text(config)
    if entry is not None:
        (package / "trainer" / "main_ppo.py").write_text(entry)
    for rel, text in (extra or {}).items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    model = tmp_path / "models" / "gemma-7b-dropout"
    model.mkdir(parents=True)
    (model / "config.json").write_text((DROPOUT_MODEL / "config.json").read_text())
    (tmp_path / "run.sh").write_text(COMMAND.format(model="models/gemma-7b-dropout"))
    return tmp_path


def _fix(tree: Path, target: str = "sm89", write: bool = True):
    return api.fix_paths([str(tree / "run.sh")], resolve_target(target), unsafe=True, write=write, jobs=1)


# --- the static Hydra composition -------------------------------------------------------------------------------

GROUPED = {
    "ppo_trainer.yaml": "defaults:\n  - actor@actor_rollout_ref.actor: ${engine}_actor\n  - engine: dp\n"
                        "  - rollout@actor_rollout_ref.rollout: vllm\n  - extra: base\n  - _self_\ntrainer:\n  n_gpus: 1\n",
    "engine/dp.yaml": "kind: dp\n",
    "engine/mega.yaml": "kind: mega\n",
    "actor/actor.yaml": "ppo_epochs: 1\nchecks: {}\n",
    "actor/dp_actor.yaml": "defaults:\n  - ../optim@optim: adam\n  - actor\n  - _self_\nuse_torch_compile: true\n",
    "actor/mega_actor.yaml": "defaults:\n  - actor\n  - _self_\nmegatron:\n  tp: 1\n",
    "optim/adam.yaml": "lr: 1.0e-6\n",
    "rollout/vllm.yaml": "# @package _group_\nname: vllm\ndtype: bfloat16\n",
    "extra/base.yaml": "# @package _global_\nseed: 1\n",
}


def _grouped(tmp_path: Path) -> Path:
    for rel, text in GROUPED.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    return tmp_path


def test_static_composition_follows_groups_packages_and_choices(tmp_path):
    config = _grouped(tmp_path)
    keys = compose(str(config), "ppo_trainer").keys
    assert {"actor_rollout_ref.actor.use_torch_compile", "actor_rollout_ref.actor.optim.lr",
            "actor_rollout_ref.actor.ppo_epochs", "engine.kind", "trainer.n_gpus"} <= keys
    assert "actor_rollout_ref.rollout.dtype" in keys  # the entry's package wins over the file's header
    assert "seed" in keys and "extra.seed" not in keys  # `# @package _global_`: at the root
    chosen = compose(str(config), "ppo_trainer", ["engine=mega"]).keys
    assert "actor_rollout_ref.actor.megatron.tp" in chosen and "actor_rollout_ref.actor.use_torch_compile" not in chosen
    assert compose(str(config), "ppo_trainer").open_maps == {"actor_rollout_ref.actor.checks"}


@pytest.mark.skipif(not HAS_HYDRA, reason="hydra-core is not importable here")
@pytest.mark.parametrize("overrides", [[], ["engine=mega"]])
def test_static_composition_agrees_with_hydra(tmp_path, overrides):
    config = _grouped(tmp_path)
    child = ("import json, sys\nfrom hydra import compose, initialize_config_dir\nfrom omegaconf import DictConfig\n"
             "keys = set()\ndef walk(c, p):\n    for k in c.keys():\n        full = f'{p}.{k}' if p else k\n"
             "        keys.add(full)\n        v = c._get_node(k)\n        if isinstance(v, DictConfig): walk(v, full)\n"
             "with initialize_config_dir(config_dir=sys.argv[1], version_base=None):\n"
             "    walk(compose(config_name='ppo_trainer', overrides=sys.argv[2:]), '')\nprint(json.dumps(sorted(keys)))\n")
    done = subprocess.run([sys.executable, "-c", child, str(config)] + overrides, capture_output=True, text=True,
                          check=True)
    assert set(json.loads(done.stdout)) == set(compose(str(config), "ppo_trainer", overrides).keys)


# --- the gate ------------------------------------------------------------------------------------------------------

def test_spelling_by_presence():
    hydra = KeySchema("hydra", "c.yaml", frozenset({"a", "a.b", "a.free"}), frozenset({"a.free"}))
    assert spell((hydra,), "a.b", "") == ("a.b", "")
    assert spell((hydra,), "a.b", "++") == ("++a.b", "")
    assert spell((hydra,), "a.free.x", "") == ("+a.free.x", "")
    assert spell((hydra,), "a.c", "")[0] is None and "has no key a.c" in spell((hydra,), "a.c", "")[1]
    assert spell((hydra,), "a.c", "", code_reads=True) == ("+a.c", "")  # a known release's code reads it
    structured = KeySchema("structured", "cfg.py (PPOConfig)", frozenset({"a", "a.b"}))
    assert spell((structured,), "a.b", "++") == ("a.b", "")  # from_cli takes no Hydra prefix
    assert spell((structured,), "a.c", "", code_reads=True)[0] is None  # ConfigKeyError, whatever the code reads


def test_fork_hydra_tree_without_the_key_gets_no_fix(tmp_path):
    tree = _tree(tmp_path, "0.1", FORK_CONFIG.format(override=""))
    report = _fix(tree)
    assert (tree / "run.sh").read_text() == COMMAND.format(model="models/gemma-7b-dropout")
    [finding] = [f for f in report.remaining if f.code == "RLC210"]
    assert finding.fix is None
    assert f"no fix: the tree's config (./verl/trainer/config/ppo_trainer.yaml) has no key {ATTN}" in finding.message


def test_fork_hydra_tree_with_a_free_mapping_gets_the_override(tmp_path):
    tree = _tree(tmp_path, "0.1", FORK_CONFIG.format(override="    override_config: {}\n"))
    report = _fix(tree)
    assert f"++{ATTN}=sdpa" in (tree / "run.sh").read_text()
    assert not [f for f in report.remaining if f.code == "RLC210"]
    if HAS_HYDRA:
        assert [c.rpartition("run.sh: ")[2] for c in report.load_checks] == ["1 command(s) composed with the tree's config"]


def test_known_release_with_its_own_config_adds_an_absent_key_with_plus(tmp_path):
    """verl/version/version says 0.4.1, whose knowledge proves the code reads use_torch_compile, but this tree's
    config does not write it: a plain `key=` would stop Hydra, `+key=` adds it."""
    tree = _tree(tmp_path, "0.4.1", FORK_CONFIG.format(override=""))
    (tree / "run.sh").write_text(COMMAND.format(model="Qwen/Qwen2.5-0.5B"))
    _fix(tree, "sm61")
    text = (tree / "run.sh").read_text()
    assert "    +actor_rollout_ref.actor.use_torch_compile=False" in text
    assert "    actor_rollout_ref.actor.use_torch_compile=False" not in text
    assert "    actor_rollout_ref.rollout.dtype=float32" in text  # written in the config: a plain override


STRUCTURED_ENTRY = """\
import hydra
from omegaconf import OmegaConf

from verl.trainer.ppo_config import PPOConfig


@hydra.main(config_path="config", config_name="ppo_trainer", version_base=None)
def main(config):
    config = OmegaConf.merge(OmegaConf.structured(PPOConfig()), config)
"""
STRUCTURED_CONFIG = """\
from dataclasses import dataclass, field
from typing import Optional


@dataclass
class ModelConfig:
    path: str = ""
    external_lib: Optional[str] = None
{extra}

@dataclass
class WorkerConfig:
    hybrid_engine: bool = True
    model: ModelConfig = field(default_factory=ModelConfig)
    actor: dict = field(default_factory=dict)
    ref: dict = field(default_factory=dict)
    rollout: dict = field(default_factory=dict)


@dataclass
class PPOConfig:
    data: dict = field(default_factory=dict)
    actor_rollout_ref: WorkerConfig = field(default_factory=WorkerConfig)
    algorithm: dict = field(default_factory=dict)
    trainer: dict = field(default_factory=dict)
"""


def test_structured_config_gets_no_fix_for_an_absent_field(tmp_path):
    tree = _tree(tmp_path, "0.2.0.dev", FORK_CONFIG.format(override="    override_config: {}\n"), STRUCTURED_ENTRY,
                 {"verl/trainer/ppo_config.py": STRUCTURED_CONFIG.format(extra="")})
    report = _fix(tree)
    assert "sdpa" not in (tree / "run.sh").read_text()
    [finding] = [f for f in report.remaining if f.code == "RLC210"]
    assert "./verl/trainer/main_ppo.py (PPOConfig)) has no key" in finding.message


def test_structured_config_with_the_field_declared_gets_the_fix(tmp_path):
    extra = "    override_config: dict = field(default_factory=dict)\n"
    tree = _tree(tmp_path, "0.2.0.dev", FORK_CONFIG.format(override="    override_config: {}\n"), STRUCTURED_ENTRY,
                 {"verl/trainer/ppo_config.py": STRUCTURED_CONFIG.format(extra=extra)})
    schema = dataclass_keys(str(tree), str(tree / "verl/trainer/main_ppo.py"), "PPOConfig")
    assert "actor_rollout_ref.model.override_config" in schema.open_maps
    _fix(tree)
    assert f"{ATTN}=sdpa" in (tree / "run.sh").read_text()


def test_script_of_a_tree_pinning_an_older_verl_keeps_that_release_knowledge(tmp_path):
    """No verl package in the tree, `verl==0.4.1` pinned: the installed verl plays no part, and with no config of
    its own the 0.4.1 knowledge spells the overrides, as before the schema gate."""
    identity.clear_caches()
    (tmp_path / "requirements.txt").write_text("verl==0.4.1\n")
    (tmp_path / "run.sh").write_text(COMMAND.format(model="Qwen/Qwen2.5-0.5B"))
    report = api.fix_paths([str(tmp_path / "run.sh")], resolve_target("sm61"), unsafe=True, jobs=1)
    text = (tmp_path / "run.sh").read_text()
    assert "actor_rollout_ref.actor.use_torch_compile=False" in text
    assert "++actor_rollout_ref.actor.fsdp_config.mixed_precision.param_dtype=fp32" in text
    assert all("verl 0.4.1" in f.message for f in report.applied)
    assert report.load_checks == []  # no config of the tree's own to load


@pytest.mark.skipif(not HAS_HYDRA, reason="hydra-core is not importable here")
def test_load_check_withholds_a_fix_that_stops_loading(tmp_path, monkeypatch):
    """A gate that let an absent key through as a plain override (as before the gate): the load check composes the
    tree's config with it, Hydra refuses, and the fix is not written."""
    from rlcompat.schema import gate

    monkeypatch.setattr(gate, "spell", lambda schemas, key, wanted, code_reads=False: (key, ""))
    tree = _tree(tmp_path, "0.1", FORK_CONFIG.format(override=""))
    report = _fix(tree)
    assert (tree / "run.sh").read_text() == COMMAND.format(model="models/gemma-7b-dropout")
    [finding] = [f for f in report.remaining if f.code == "RLC210"]
    assert "fix withheld: with it, ./verl/trainer/config does not load for the command at line 1" in finding.message
    assert "ConfigCompositionException" in finding.message and finding.fix is None
    assert [c.rpartition("run.sh: ")[2] for c in report.load_checks] == [
        "1 command(s) composed with the tree's config, 1 would not load with the fix, which was withheld"]


def test_load_check_says_when_it_cannot_run(tmp_path, monkeypatch):
    from rlcompat.schema import loadcheck

    tree = _tree(tmp_path, "0.1", FORK_CONFIG.format(override="    override_config: {}\n"))
    before = (tree / "run.sh").read_text()
    verdict = loadcheck.check_fixed(str(tree / "run.sh"), before, before.replace("0.5B", "0.5B x=1").rstrip() + " a=1\n",
                                    str(tree), str(tree / "verl"), python=str(tmp_path / "no-python"))
    assert not verdict.ran and "did not answer" in verdict.not_run


class _AppendsThatDoNotTake:
    """A rule whose finding comes back after its fix, as an override appended where the parser does not read it."""

    def check_source(self, source, language):
        end = len(source.text.rstrip("\n"))
        fix = Fix((Edit(end, end, " actor_rollout_ref.rollout.dtype=float32"),), FixSafety.SAFE, "add it")
        found = Finding("RLC104", "rollout-bf16-dtype", "rollout dtype is bf16", source.path, Location(1, 1, 1, 2),
                        "sm61", fix=fix)
        return FileResult(source.path, language, findings=[found])


def test_a_fix_is_applied_once():
    source = decode("cell.sh", b"python3 -m verl.trainer.main_ppo a=1\n", "shell")
    outcome = fix_source(_AppendsThatDoNotTake(), source, "shell", unsafe=False)
    assert outcome.fixed.count("actor_rollout_ref.rollout.dtype=float32") == 1
    assert len(outcome.applied) == 1


@pytest.mark.skipif(not HAS_HYDRA, reason="hydra-core is not importable here")
def test_verify_answers_a_fork_with_the_load_check(tmp_path):
    """A fork cannot run verify's step (it adapts verl 0.9.1's code): verify composes its launch scripts' configs."""
    from typer.testing import CliRunner

    from rlcompat.cli.app import app

    tree = _tree(tmp_path, "0.1", FORK_CONFIG.format(override=""))
    result = CliRunner().invoke(app, ["verify", str(tree), "--target", "sm61"])
    assert result.exit_code == 0, result.output
    assert "run.sh:1: loads (./verl/trainer/config/ppo_trainer.yaml)" in result.output
    (tree / "broken.sh").write_text("python3 -m verl.trainer.main_ppo actor_rollout_ref.actor.use_torch_compile=False\n")
    result = CliRunner().invoke(app, ["verify", "--load-check", str(tree), "--output-format", "json"])
    assert result.exit_code == 1
    [failed] = [c for c in json.loads(result.output)["commands"] if c["error"]]
    assert failed["script"] == "broken.sh" and "use_torch_compile" in failed["error"]


def test_a_recipe_config_found_through_its_searchpath(tmp_path):
    """A recipe's primary config that inherits verl's through `hydra.searchpath: [pkg://verl.trainer.config]`: the
    keys of both, and the load check hands Hydra the folder as a file:// path (no import of the package)."""
    from rlcompat.schema.tree import hydra_config_of

    tree = _tree(tmp_path, "0.1", FORK_CONFIG.format(override=""),
                 extra={"verl/recipe_x/config/x_trainer.yaml": "hydra:\n  searchpath:\n    - pkg://verl.trainer.config\n"
                                                              "defaults:\n  - ppo_trainer\n  - _self_\nextra_opt:\n  a: 1\n",
                        "verl/recipe_x/main_x.py": "import hydra\n\n@hydra.main(config_path='config', "
                                                   "config_name='x_trainer', version_base=None)\ndef main(c):\n    pass\n"})
    keys = compose(str(tree / "verl/recipe_x/config"), "x_trainer", bases=(str(tree),)).keys
    assert {"extra_opt.a", "actor_rollout_ref.rollout.dtype"} <= keys
    words = ("python3", "-m", "verl.recipe_x.main_x", "extra_opt.a=2")
    config_dir, name, overrides = hydra_config_of(str(tree), str(tree / "verl"), words, str(tree))
    assert (name, overrides) == ("x_trainer", ("extra_opt.a=2", f"hydra.searchpath=[file://{tree / 'verl/trainer/config'}]"))
    if HAS_HYDRA:
        from rlcompat.schema.loadcheck import compose_errors

        assert compose_errors([(config_dir, name, list(overrides))]) == [None]


def test_an_override_appended_to_a_notebook_cell_goes_after_its_closing_quote_once(tmp_path):
    """A `!` cell written as one JSON string whose command ends in a quoted word: the appended override went in
    before the last character (inside the closing quote, `\\"`), where the command never read it, and every pass
    appended it again (ten times). It goes after the quote, once."""
    identity.clear_caches()
    (tmp_path / "requirements.txt").write_text("verl==0.4.1\n")
    cell = "!python3 -m verl.trainer.main_ppo algorithm.adv_estimator=grpo \"trainer.logger=['console']\""
    notebook = {"cells": [{"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [], "source": cell}],
                "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    (tmp_path / "train.ipynb").write_text(json.dumps(notebook, indent=1))
    api.fix_paths([str(tmp_path / "train.ipynb")], resolve_target("sm61"), jobs=1)
    fixed = json.loads((tmp_path / "train.ipynb").read_text())["cells"][0]["source"]
    assert fixed.startswith(cell + " actor_rollout_ref.rollout.dtype=float32 ")
    assert fixed.count("actor_rollout_ref.rollout.dtype=float32") == 1


@pytest.mark.skipif(not HAS_HYDRA, reason="hydra-core is not importable here")
def test_load_check_withholds_a_notebook_cell_fix_that_stops_loading(tmp_path, monkeypatch):
    from rlcompat.schema import gate

    monkeypatch.setattr(gate, "spell", lambda schemas, key, wanted, code_reads=False: (key, ""))
    tree = _tree(tmp_path, "0.1", FORK_CONFIG.format(override=""))
    cell = ["%%bash\n", COMMAND.format(model="models/gemma-7b-dropout")]
    notebook = {"cells": [{"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [], "source": cell}],
                "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    (tree / "train.ipynb").write_text(json.dumps(notebook, indent=1))
    before = (tree / "train.ipynb").read_text()
    report = api.fix_paths([str(tree / "train.ipynb")], resolve_target("sm89"), unsafe=True, jobs=1)
    assert (tree / "train.ipynb").read_text() == before
    [finding] = [f for f in report.remaining if f.code == "RLC210"]
    assert "fix withheld: with it, ./verl/trainer/config does not load" in finding.message


@pytest.mark.parametrize("name, text", [
    ("task.yaml", "resources: {}\nrun: |\n  " + COMMAND.format(model="models/gemma-7b-dropout").replace("\n    ", "\n    ")),
    ("Dockerfile", "FROM python:3.11\nCMD " + COMMAND.format(model="models/gemma-7b-dropout")),
])
def test_load_check_withholds_a_job_spec_or_dockerfile_fix_that_stops_loading(tmp_path, monkeypatch, name, text):
    """The load check reads the shell code a YAML job spec or a Dockerfile holds, as a notebook's."""
    from rlcompat.schema import gate

    monkeypatch.setattr(gate, "spell", lambda schemas, key, wanted, code_reads=False: (key, ""))
    tree = _tree(tmp_path, "0.1", FORK_CONFIG.format(override=""))
    (tree / name).write_text(text)
    report = api.fix_paths([str(tree / name)], resolve_target("sm89"), unsafe=True, jobs=1)
    assert (tree / name).read_text() == text
    [finding] = [f for f in report.remaining if f.code == "RLC210"]
    assert "fix withheld: with it, ./verl/trainer/config does not load" in finding.message


RECIPE_TRAIN = '''from dataclasses import dataclass, field

from trl import GRPOConfig, ModelConfig, TrlParser


@dataclass
class ScriptArguments:
    dataset_name: str = "math"
    attn_implementation: str = field(default="flash_attention_2", metadata={"help": "attention"})
    bf16: bool = True
    reward_funcs: list = field(default_factory=lambda: ["accuracy"])


def main():
    parser = TrlParser((ScriptArguments, {second}))
    script_args, training_args, model_args = parser.parse_args_and_config()
'''


@pytest.mark.parametrize("second,complete", [("GRPOConfig, ModelConfig", False), ("ScriptArguments", True)])
def test_a_recipe_parsed_with_its_dataclasses_is_read_by_field_name_and_default(tmp_path, second, complete):
    """A TrlParser/HfArgumentParser recipe: its options are the dataclasses' field names, with their defaults as
    written; a class from outside the tree (TRL's GRPOConfig) leaves the schema incomplete, so a key the tree does
    not declare is not refused on its account (the framework's knowledge decides), while a parser over the tree's
    own dataclasses only refuses a key none of them declares."""
    from rlcompat.schema.tree import schemas_for

    (tmp_path / "train.py").write_text(RECIPE_TRAIN.replace("{second}", second))
    words = ("accelerate", "launch", "train.py", "--dataset_name", "gsm8k")
    (schema,) = schemas_for(str(tmp_path), None, words, str(tmp_path))
    assert schema.system == "argparse" and schema.complete is complete
    assert {"dataset_name", "attn_implementation", "bf16", "reward_funcs"} <= schema.keys
    defaults = dict(schema.defaults)
    assert defaults["attn_implementation"] == "'flash_attention_2'" and defaults["bf16"] == "True"
    assert defaults["reward_funcs"] is None  # a default_factory: computed, not written
    assert spell((schema,), "attn_implementation", "") == ("attn_implementation", "")
    spelled, why = spell((schema,), "gradient_checkpointing", "")
    if complete:
        assert spelled is None and "has no key gradient_checkpointing" in why
    else:
        assert spelled == "gradient_checkpointing"


def test_class_variables_are_neither_fields_nor_defaults(tmp_path):
    """`ClassVar` and `ClassVar[...]` are class attributes: dataclasses and OmegaConf read neither as a field."""
    (tmp_path / "cfg.py").write_text(
        "from dataclasses import dataclass\nfrom typing import ClassVar\n\n@dataclass\nclass Args:\n"
        "    registry: ClassVar[dict] = {}\n    count: ClassVar = 3\n    bf16: bool = True\n")
    cfg = str(tmp_path / "cfg.py")
    assert dataclass_fields(str(tmp_path), cfg, "Args") == {"bf16": "True"}
    assert dataclass_keys(str(tmp_path), cfg, "Args").keys == frozenset({"bf16"})
    assert [f.name for f in field_defaults(str(tmp_path), cfg, "Args")] == ["bf16"]
