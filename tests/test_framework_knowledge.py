"""Framework knowledge as data (rlcompat/knowledge/data/frameworks/): the schema holds, every row is sourced and reachable, the
knowledge-backed rules and the generic net read settings from any front end, and neither repeats a finding."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.verl_trees import verl_091_knowledge
from rlcompat.knowledge import frameworks as fk
from rlcompat.api import fix_paths, scan_paths, scan_source
from rlcompat.lang.settings import ConfigView, Setting, Span
from rlcompat.rules import file_rules
from rlcompat.knowledge.targets import resolve_target

PROOF = re.compile(r"[\w./-]+\.(py|yaml|toml|json)(:\d+(-\d+)?)?|https?://")
RULES = {r.code: r for r in file_rules()}
KNOWLEDGE_RULES = [RULES[c] for c in ("RLC118", "RLC135", "RLC207", "RLC355", "RLC404")]


def test_every_framework_file_loads_with_sourced_rows():
    fws = fk.frameworks()
    assert {f.name for f in fws} >= {"openrlhf", "trl", "transformers", "accelerate", "deepspeed", "vllm", "sglang",
                                     "llamafactory", "torchtune", "ms-swift", "unsloth"}
    assert {f.version for f in fws if f.name == "openrlhf"} == {"0.6.4", "0.8.11", "0.11.2"}
    for fw in fws:
        assert fw.keys, fw
        for key in fw.keys:
            assert key.names and PROOF.search(key.proof), (fw.name, key.names, key.proof)
            if key.kind == "dtype":
                assert key.role in ("weights", "compute", "inference"), key.names
            kind = fk.kinds().get(key.kind)
            if kind is not None and kind.fix == "value":
                # without `safe` (no value every release reading the file accepts: prime-rl 0.8 refuses sdpa) the
                # finding says what to do per release (`remedy`)
                assert key.safe or key.remedy, \
                    f"{fw.name} {key.names}: kind {key.kind} is fixed by value but has no `safe` and no `remedy`"


def test_every_kind_names_facts_the_target_table_has():
    sm61 = resolve_target("sm61")
    for kind in fk.kinds().values():
        for hazard in kind.hazards:
            assert isinstance(getattr(sm61, hazard.needs), bool), hazard.needs
            assert hazard.sources, kind.name


def test_every_key_is_reached_by_a_rule_and_its_triggers():
    handled = {kind: rule for rule in KNOWLEDGE_RULES for kind in rule.kinds}
    for fw in fk.frameworks():
        for key in fw.keys:
            if key.kind == "none":
                continue
            rule = handled[key.kind]  # KeyError: a kind no rule reads
            # a key is reached by its name, or by its value where every hazard value of its kind is a trigger
            # (skyrl-train's `generator.backend: vllm`: a file with a hazard spells `vllm` or `sglang`)
            by_value = all(any(t in v for t in rule.triggers) for h in fk.kinds()[key.kind].hazards for v in h.values)
            for name in key.names:
                assert by_value or any(t in name for t in rule.triggers), \
                    f"{rule.code} never runs on a file with only `{name}`"
            if key.omitted is not None:  # a file that leaves the key out must still run the rule: a table header
                # (TOML `[job]`) or a mapping's key (YAML `fsdp_config:`)
                heads = [f"[{t}]" if key.omitted.format == "toml" else t.rsplit(".", 1)[-1] + ":"
                         for t in key.omitted.tables]
                assert any(h in rule.triggers for h in heads), \
                    f"{rule.code} never runs on a {key.omitted.format} file that leaves out {key.names[0]}"


def test_a_bad_framework_file_names_the_file_and_the_row():
    with pytest.raises(ValueError, match=r"rlcompat/knowledge/data/frameworks/x/1\.0\.toml: unknown kind 'colour'"):
        fk._framework({"framework": "x", "label": "X", "version": "1.0",
                       "key": [{"names": ["a"], "kind": "colour", "proof": "x.py:1"}]}, "1.0.toml")
    with pytest.raises(ValueError, match="has no proof"):
        fk._framework({"framework": "x", "label": "X", "version": "1.0", "key": [{"names": ["a"], "kind": "dtype"}]},
                      "1.0.toml")
    # an off flag only where the switch is a flag that is on by default: elsewhere removing the flag turns it off
    with pytest.raises(ValueError, match=r"\['a'\] has a `negation` but is not a switch flag that defaults to true"):
        fk._framework({"framework": "x", "label": "X", "version": "1.0",
                       "key": [{"names": ["a"], "form": "flag", "kind": "bf16-switch", "default": "false",
                                "negation": "no-a", "proof": "x.py:1"}]}, "1.0.toml")


def test_a_switch_on_by_default_is_fixed_with_its_off_flag_in_any_script_form(tmp_path):
    """oat 0.2.3 parses with tyro, whose `bf16: bool = True` stays on without `--bf16`: the fix writes `--no-bf16`
    (written inline, with `=`-less flags around it), and the fixed script has nothing left to report."""
    script = tmp_path / "run.sh"
    script.write_text("python -m oat.experiment.run_math_rl --flash-attn --bf16 --beta 0\n"
                      "python -m trl.scripts.sft --bf16\n")
    sm61 = resolve_target("sm61")
    by_code = {(f.code, f.location.line) for f in scan_paths([str(script)], sm61).findings}
    assert by_code == {("RLC207", 1), ("RLC118", 1), ("RLC107", 2)}
    fix_paths([str(script)], sm61)
    assert script.read_text() == ("python -m oat.experiment.run_math_rl --no-flash-attn --no-bf16 --beta 0\n"
                                  "python -m trl.scripts.sft\n")
    assert scan_paths([str(script)], sm61).findings == []


def test_oat_s_switches_are_oat_s_only(tmp_path):
    """`bf16` and `flash_attn` name other frameworks' switches too: OpenRLHF's entry point forcing
    `args.flash_attn = True` is judged with OpenRLHF's knowledge, never cited as oat's."""
    entry = tmp_path / "openrlhf" / "cli" / "train_ppo_ray.py"
    entry.parent.mkdir(parents=True)
    entry.write_text("import argparse\n\nfrom openrlhf.trainer import ppo\n\nparser = argparse.ArgumentParser()\n"
                     "parser.add_argument(\"--flash_attn\", action=\"store_true\", default=False)\n"
                     "parser.add_argument(\"--packing_samples\", action=\"store_true\", default=False)\n"
                     "args = parser.parse_args()\nif args.packing_samples and not args.flash_attn:\n"
                     "    args.flash_attn = True\n")
    found = [f for f in scan_paths([str(entry)], resolve_target("sm61")).findings if f.code == "RLC207"]
    assert found and all("oat" not in f.message and "OpenRLHF" in f.message for f in found)


# Settings as the front ends being generalised on issue 13 will yield them: a dotted flag without dashes, an
# environment variable, a JSON path. Built by hand where today's front ends do not read them yet.
TEXT = "deepspeed --module openrlhf.cli.train_sft --ds.zero_stage 2 --ds.param_dtype bf16\n"


def _command_view(settings, words=("deepspeed", "--module", "openrlhf.cli.train_sft", "--ds.zero_stage", "2")):
    return ConfigView("command", settings, anchor=Span(0, 9), command_words=tuple(words))


def _setting(text: str, key: str, value: str, flag: bool = True) -> Setting:
    start = text.index(value, text.index(key.lstrip("-")))
    k = text.index(key.lstrip("-"))
    return Setting(key, value, Span(k, k + len(key.lstrip("-"))), Span(start, start + len(value)), flag=flag)


def _run(views, text, target, codes):
    rules = [RULES[c](resolve_target(target)) for c in codes]
    return verl_091_knowledge("run.sh").run_config_rules(views, text, "run.sh", rules, resolve_target(target))


def test_openrlhf_param_dtype_has_no_fp32_spelling_so_sm61_gets_no_fix():
    view = _command_view([_setting(TEXT, "ds.param_dtype", "bf16")])
    found = [f for f in _run([view], TEXT, "sm61", ["RLC118"]) if f.location.line == 1 and "is bf16" in f.message]
    assert len(found) == 1
    assert "OpenRLHF 0.11.2 knowledge: openrlhf/cli/train_sft.py:179-185" in found[0].message
    assert "no fp32 spelling" in found[0].message and found[0].fix is None


def test_openrlhf_param_dtype_becomes_fp16_on_sm75_as_an_unsafe_fix():
    view = _command_view([_setting(TEXT, "ds.param_dtype", "bf16")])
    (found,) = [f for f in _run([view], TEXT, "sm75", ["RLC118"]) if "is bf16" in f.message]
    assert found.fix is not None and found.fix.safety.value == "unsafe"
    assert [e.content for e in found.fix.edits] == ["fp16"]


def test_defaults_of_a_known_openrlhf_version_are_reported_at_the_command():
    view = _command_view([])
    messages = [f.message for f in _run([view], TEXT, "sm61", ["RLC118", "RLC207"])]
    assert any(m.startswith("--ds.attn_implementation is not passed, so OpenRLHF 0.11.2 uses its default, "
                            "flash_attention_2") and "pass --ds.attn_implementation sdpa" in m for m in messages)
    assert any(m.startswith("--ds.param_dtype is not passed") for m in messages)
    # Without a marker of the CLI generation (and no OpenRLHF in the tree's identity) the version is unknown: no default
    # claims.
    plain = _command_view([], words=("deepspeed", "--module", "openrlhf.cli.train_sft", "--max_len", "2048"))
    assert not _run([plain], TEXT, "sm61", ["RLC118", "RLC207"])  # (the tree pins no OpenRLHF)


def test_vllm_attention_backend_env_var():
    text = "export VLLM_ATTENTION_BACKEND=FLASH_ATTN\n"
    start = text.index("FLASH_ATTN", 20)
    env = Setting("VLLM_ATTENTION_BACKEND", "FLASH_ATTN", Span(7, 29), Span(start, start + 10))
    (found,) = _run([ConfigView("command", [env], anchor=Span(0, 6))], text, "sm75", ["RLC207"])
    assert "vLLM 0.11.0 knowledge: vllm/envs.py:612-614" in found.message
    assert [e.content for e in found.fix.edits] == ["FLEX_ATTENTION"]
    assert not _run([ConfigView("command", [env], anchor=Span(0, 6))], text, "sm80", ["RLC207"])


def test_deepspeed_auto_bf16_follows_the_trainer_flag_and_is_not_reported():
    """"auto" takes TrainingArguments.bf16 (transformers/integrations/deepspeed.py:120-121, :197); writing false
    while that flag stays on raises transformers' mismatch error, so the flag is where the hazard is reported."""
    text = '{"bf16": {"enabled": "auto"}}'
    start = text.index("auto")
    auto = Setting("bf16.enabled", "auto", Span(text.index("enabled"), text.index("enabled") + 7),
                   Span(start, start + 4))
    assert not _run([ConfigView("json", [auto])], text, "sm61", ["RLC118"])
    on = Setting("bf16.enabled", "true", auto.key_span, Span(start, start + 4))
    (found,) = _run([ConfigView("json", [on])], text, "sm61", ["RLC118"])
    assert "DeepSpeed 0.18.1 knowledge" in found.message and [e.content for e in found.fix.edits] == ["false"]


def test_a_data_row_is_enough_to_add_a_key(monkeypatch):
    """A key only the data knows (here a made-up one) is found and fixed with no code change."""
    base = fk.frameworks()
    row = fk._framework({"framework": "newtool", "label": "NewTool", "version": "1.0", "key": [
        {"names": ["model.precision_mode"], "kind": "dtype", "role": "compute", "spellings": {"fp32": "fp32"},
         "proof": "newtool/config.py:12"}]}, "1.0.toml")
    monkeypatch.setattr(fk, "frameworks", lambda: base + (row,))
    fk._index.cache_clear()
    try:
        (found,) = scan_source("model:\n  precision_mode: bf16\n", resolve_target("sm61"), "tool.yaml", "yaml")
        assert found.code == "RLC118" and "NewTool 1.0 knowledge: newtool/config.py:12" in found.message
    finally:
        fk._index.cache_clear()


def test_the_net_reports_unknown_names_once_and_leaves_known_ones_to_the_knowledge():
    text = "python -m openrlhf.cli.train_ppo_ray --model.dtype bfloat16 --ds.param_dtype bf16\n"
    unknown = _setting(text, "--model.dtype", "bfloat16")
    known = _setting(text, "--ds.param_dtype", "bf16")
    view = _command_view([unknown, known], words=tuple(text.split()))
    found = _run([view], text, "sm61", ["RLC003", "RLC118"])
    net = [f for f in found if f.code == "RLC003"]
    assert len(net) == 1 and net[0].severity == "warning"
    assert "`--model.dtype` is not in rlcompat's framework knowledge" in net[0].message
    assert [e.content for e in net[0].fix.edits] == ["float32"]


def test_no_finding_is_repeated_by_the_knowledge_rules_or_the_net():
    text = "deepspeed --module openrlhf.cli.train_ppo_ray --bf16 --attn_implementation flash_attention_2\n"
    found = scan_source(text, resolve_target("sm61"), "run.sh", "shell")
    spans = [(f.location.line, f.location.column) for f in found]
    assert len(spans) == len(set(spans)), [(f.code, f.message) for f in found]
    assert {f.code for f in found} >= {"RLC107", "RLC204"}


def test_accelerate_s_tpu_downcast_option_is_known_and_selects_nothing_on_a_gpu():
    # downcast_bf16 is read only where the run is XLA on a TPU; the GPU run's bf16 is mixed_precision's alone
    cfg = "distributed_type: FSDP\ndowncast_bf16: 'yes'\nmixed_precision: 'bf16'\n"
    sh = "accelerate launch --mixed_precision bf16 --downcast_bf16 train.py\nexport ACCELERATE_DOWNCAST_BF16=true\n"
    for target in ("sm61", "sm75"):
        found = scan_source(cfg, resolve_target(target), "accelerate_configs/fsdp.yaml", "yaml")
        assert [(f.code, f.location.line) for f in found] == [("RLC107", 3)]
        found = scan_source(sh, resolve_target(target), "run.sh", "shell")
        assert [(f.code, f.location.line, f.location.column) for f in found] == [("RLC107", 1, 19)]


def test_no_all_clear_for_bf16_in_an_unknown_tool():
    found = scan_source("optim:\n  lr: 1e-5\nmodel:\n  compute_dtype: torch.bfloat16\n", resolve_target("sm61"),
                        "unknown_tool.yaml", "yaml")
    assert [f.code for f in found] == ["RLC003"]
    assert found[0].fix.edits[0].content == "torch.float32"


def test_loading_the_catalog_does_not_read_the_framework_files():
    import subprocess
    import sys

    code = ("import rlcompat.rules as r, rlcompat.knowledge.frameworks as fk; r.file_rules(); "
            "print(fk.frameworks.cache_info().currsize, fk.kinds.cache_info().currsize)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["0", "0"]


TITAN_010 = "[model]\nname = \"llama3\"\nconverters = [\"float8\"]\n\n[float8]\nenable_fsdp_float8_all_gather = true\n"
TITAN_022 = "[model]\nname = \"llama3\"\nconverters = [\"float8\"]\n\n[training]\nmixed_precision_param = \"float32\"\n"


def _converter_findings(text: str, target: str = "sm61", frameworks=None):
    return [f for f in scan_source(text, resolve_target(target), "llama3_405b.toml", "toml", frameworks=frameworks)
            if f.code == "RLC135"]


def test_a_converter_name_is_judged_by_the_release_that_registers_it():
    # torchtitan 0.1.0 registers `float8` (components/quantization/float8.py:131); its [float8] table marks the file.
    (old,) = _converter_findings(TITAN_010)
    assert "torchtitan 0.1.0 knowledge" in old.message and old.location.line == 3
    # 0.2.2 registers only quantize.*.float8: `float8` there is a KeyError on every GPU, no GPU hazard.
    assert not _converter_findings(TITAN_022)
    assert _converter_findings(TITAN_022.replace('["float8"]', '["quantize.linear.float8"]'))
    # Without a marker the tree's release decides (its identity: rlcompat/knowledge/identity.py).
    assert _converter_findings(TITAN_022, frameworks={"torchtitan": "0.1.0"})


def test_key_values_must_be_hazard_values_of_their_kind():
    row = {"names": ["model.converters"], "kind": "low-precision-training", "values": ["float8", "fp4"], "proof": "x.py:1"}
    with pytest.raises(ValueError, match="fp4"):
        fk._values(row, "torchtitan", "0.0.0.toml")
    assert fk._values({**row, "values": ["Float8"]}, "torchtitan", "0.0.0.toml") == ("float8",)


# skyrl's trainer config (0.4.0 config.py:225-251): an Optional nested config left at None, which its FSDP strategy
# runs in bf16 (a key's `parent`)
_SKYRL_CONFIG = ("from dataclasses import dataclass, field\nfrom typing import Optional\n\n"
                 "from skyrl.train.config import BaseConfig\n\n\n"
                 "@dataclass\nclass MixedPrecisionConfig(BaseConfig):\n    param_dtype: str = \"bf16\"\n"
                 "    reduce_dtype: str = \"fp32\"\n\n\n"
                 "@dataclass\nclass FSDPConfig(BaseConfig):\n    cpu_offload: bool = False\n"
                 "    mixed_precision: Optional[MixedPrecisionConfig] = None\n")
_SKYRL_PATH = "skyrl/train/config/config.py"


def test_every_parent_field_marks_the_statement_its_rule_reads():
    """The line `mixed_precision: Optional[...] = None` spells no dtype: the field's name must be one of the Python
    triggers of the rule for the key's kind, or the settings reader never reads that statement."""
    handled = {kind: rule for rule in KNOWLEDGE_RULES for kind in rule.kinds}
    parents = [key for fw in fk.frameworks() for key in fw.keys if key.parent is not None]
    assert {(k.framework.version, k.parent.field) for k in parents if k.framework.name == "skyrl"} >= {
        ("0.4.0", "FSDPConfig.mixed_precision"), ("0.2.0", "FSDPConfig.mixed_precision"),
        ("0.1.0", "FSDPConfig.mixed_precision"), ("0.3.0", "FSDPConfig.mixed_precision")}
    for key in parents:
        assert key.parent.attr in handled[key.kind].python_triggers, (key.framework.name, key.parent.field)
        assert PROOF.search(key.parent.proof), key.parent.proof


def test_a_parent_needs_a_class_field_what_it_holds_and_a_proof():
    row = {"names": ["fsdp_config.mixed_precision.param_dtype"], "kind": "dtype", "role": "weights", "default": "bf16",
           "proof": "x.py:1", "parent": {"field": "mixed_precision", "holds": "MixedPrecisionConfig", "proof": "x.py:2"}}
    with pytest.raises(ValueError, match=r"skyrl/9\.9\.toml.*parent\.field is `Class\.field`"):
        fk._framework({"framework": "skyrl", "label": "skyrl", "version": "9.9", "key": [row]}, "9.9.toml")
    row["parent"] = {"field": "FSDPConfig.mixed_precision", "proof": "x.py:2"}
    with pytest.raises(ValueError, match="needs parent.holds"):
        fk._framework({"framework": "skyrl", "label": "skyrl", "version": "9.9", "key": [row]}, "9.9.toml")


@pytest.mark.parametrize("annotation, holds", [
    ("Optional[MixedPrecisionConfig]", "MixedPrecisionConfig"), ("MixedPrecisionConfig | None", "MixedPrecisionConfig"),
    ("typing.Union[cfg.MixedPrecisionConfig, None]", "MixedPrecisionConfig"), ("MixedPrecisionConfig", ""),
    ("Union[A, B]", ""), ("Optional[List[int]]", "")])
def test_the_settings_reader_names_the_class_an_optional_field_holds(annotation, holds):
    from rlcompat.lang.pysettings import settings_of

    text = f"class FSDPConfig:\n    mixed_precision: {annotation} = None\n"
    (setting,) = [s for s in settings_of(text, ("mixed_precision",)) if s.key == "mixed_precision"]
    assert setting.origin == "python-field" and setting.call == "FSDPConfig" and setting.value == "None"
    assert getattr(setting, "holds", "") == holds


def _skyrl(text: str, target: str = "sm61", version: str | None = "0.4.0"):
    return scan_source(text, resolve_target(target), _SKYRL_PATH, "python",
                       frameworks={"skyrl": version} if version else None)


@pytest.mark.parametrize("version, line", [("0.4.0", "fsdp_strategy.py:204-210"), ("0.2.0", "fsdp_strategy.py:224-232"),
                                           ("0.1.0", "fsdp_strategy.py:216-222"), ("0.3.0", "fsdp_strategy.py:200-207")])
def test_an_optional_nested_config_left_at_none_is_reported_where_it_defaults(version, line):
    found = _skyrl(_SKYRL_CONFIG, version=version)
    # one finding, at the None default; MixedPrecisionConfig's own bf16 is read only by a run that sets the field
    assert [(f.code, f.location.line) for f in found] == [("RLC118", 16)], [(f.code, f.message) for f in found]
    assert f"FSDPConfig.mixed_precision defaults to None, so skyrl {version} uses param_dtype bf16" in found[0].message
    assert line in found[0].message


def test_the_fix_builds_the_nested_config_in_fp32_and_the_class_still_constructs(tmp_path, monkeypatch):
    """The fixed dataclass runs: FSDPConfig() then holds MixedPrecisionConfig(param_dtype="fp32"), fp32 being a
    spelling skyrl's PrecisionType takes (fsdp_utils.py:269), the same on sm75 (weights: no fp16, no grad scaler)."""
    import sys
    import types

    for target in ("sm61", "sm75"):
        path = tmp_path / target / _SKYRL_PATH
        path.parent.mkdir(parents=True)
        (tmp_path / target / "skyrl" / "__init__.py").write_text('__version__ = "0.4.0"\n')  # the tree's release
        (tmp_path / target / "pyproject.toml").write_text('[project]\nname = "skyrl"\nversion = "0.4.0"\n')
        path.write_text(_SKYRL_CONFIG)
        fix_paths([str(path)], resolve_target(target))
        fixed = path.read_text()
        assert fixed == _SKYRL_CONFIG.replace(
            "= None", '= field(default_factory=lambda: MixedPrecisionConfig(param_dtype="fp32"))'), fixed
        stub = types.ModuleType("skyrl.train.config")
        stub.BaseConfig = type("BaseConfig", (), {})
        monkeypatch.setitem(sys.modules, "skyrl.train.config", stub)
        namespace: dict = {}
        exec(compile(fixed, str(path), "exec"), namespace)
        built = namespace["FSDPConfig"]()
        assert built.mixed_precision.param_dtype == "fp32" and built.mixed_precision.reduce_dtype == "fp32"
        assert namespace["FSDPConfig"]().mixed_precision is not built.mixed_precision  # a factory, not a shared default
        assert not [f for f in scan_paths([str(path)], resolve_target(target)).findings if f.location.line in (9, 16)]


def test_a_nested_config_default_is_judged_where_the_release_is_not_known_or_every_run_builds_it():
    # no release known: None means nothing rlcompat can cite, and the class default is judged as written
    found = _skyrl(_SKYRL_CONFIG, version=None)
    assert [(f.code, f.location.line) for f in found] == [("RLC102", 9)]
    # a default factory that builds the class with its own defaults: every run reads param_dtype = "bf16"
    built = _SKYRL_CONFIG.replace("= None", "= field(default_factory=MixedPrecisionConfig)")
    assert [(f.code, f.location.line) for f in _skyrl(built)] == [("RLC102", 9)]
    assert not _skyrl(_SKYRL_CONFIG, target="sm80")

def test_an_empty_value_is_null_and_only_a_bare_flag_turns_a_switch_on():
    """YAML `tf32:` with nothing after it is null (axolotl passes tf32=True only when the value is True:
    core/builders/base.py:320 of 0.21.0); `--bf16` with no value on a command line is the switch turned on."""
    target = resolve_target("sm75")
    codes = {"RLC115", "RLC118"}
    empty = scan_source("base_model: m\nbf16: false\ntf32:\n", target, path="lora.yaml", language="yaml")
    assert not [f for f in empty if f.code in codes]
    on = scan_source("base_model: m\nbf16: false\ntf32: true\n", target, path="lora.yaml", language="yaml")
    assert [f.location.line for f in on if f.code in codes] == [3]
    bare = scan_source("deepspeed --module openrlhf.cli.train_sft --bf16 --zero_stage 2\n", target, path="run.sh",
                       language="shell")
    assert [f.location.line for f in bare if f.code in {"RLC107", "RLC118"}] == [1]

def test_prime_rl_defaults_a_config_leaves_out_are_reported_at_the_table_that_names_the_model(tmp_path):
    """prime-rl's RL config names the trainer's model in its shared [model] table and leaves [trainer.model] out:
    attention (flash_attention_2 in 0.7, auto = FA2 below SM90 in 0.8) and torch.compile (on) are reported there;
    the fix adds [trainer.model] with compile = "None" (prime-rl's own spelling) and no attn (0.8 refuses sdpa)."""
    import tomllib

    rl = tmp_path / "rl.toml"
    rl.write_text('max_steps = 20\n\n[model]\nname = "Qwen/Qwen3-0.6B"\n\n[orchestrator]\nbatch_size = 128\n\n'
                  '[trainer.optim]\nlr = 3e-6\n\n[inference]\n')
    sft = tmp_path / "sft.toml"
    sft.write_text('max_steps = 100\n\n[ckpt]\n\n[model]\nname = "m"\n\n[data]\nseq_len = 4096\n')
    sm61, sm75 = resolve_target("sm61"), resolve_target("sm75")
    found = {(Path(f.path).name, f.code, f.location.line) for f in scan_paths([str(rl), str(sft)], sm61).findings}
    # and the [inference] table starts prime-rl's vLLM server (no vLLM wheel runs on sm61)
    assert found == {("rl.toml", "RLC207", 3), ("rl.toml", "RLC355", 3), ("rl.toml", "RLC407", 12),
                     ("sft.toml", "RLC207", 5), ("sft.toml", "RLC355", 5)}
    assert {(Path(f.path).name, f.code) for f in scan_paths([str(rl), str(sft)], sm75).findings} == {
        ("rl.toml", "RLC207"), ("sft.toml", "RLC207")}  # compile runs on 7.5
    fix_paths([str(rl), str(sft)], sm61, unsafe=True, write=True)
    fixed = tomllib.loads(rl.read_text())
    assert fixed["trainer"]["model"] == {"compile": "None"} and fixed["model"] == {"name": "Qwen/Qwen3-0.6B"}
    assert tomllib.loads(sft.read_text())["model"] == {"name": "m", "compile": "None"}
