"""What verl 0.8.0's trainer configs needed (issue 13, the verl-0.8.0 coverage corpus): engine/fsdp.yaml leaving
`mixed_precision` out altogether (the key is added at the end of the root mapping), model/hf_model.yaml's
`override_config: {}`, the Megatron engine's settings with the only dtypes its config class accepts, and an engine
config no defaults list composes. Each test builds a small verl 0.8.0 package (its version file and the config files
the test needs)."""

from __future__ import annotations

import pytest
import yaml

from rlcompat.api import fix_paths, scan_paths
from rlcompat.knowledge.targets import resolve_target
from tests.verl_trees import verl_package

SM61, SM75, SM80 = resolve_target("sm61"), resolve_target("sm75"), resolve_target("sm80")
FSDP = "# Target class for this configuration\n_target_: verl.workers.config.FSDPEngineConfig\n\nmodel_dtype: fp32\n" \
       "strategy: fsdp\n\n# Mixed precision training param dtype\ndtype: bfloat16\n"
MEGATRON = "override_transformer_config:\n  attention_backend: flash\ndtype: bfloat16 # [\"bfloat16\", \"float16\"]\n"


pytestmark = pytest.mark.usefixtures("fresh_verl_detection")


def _package(tmp_path, files: dict[str, str], version: str = "0.8.0"):
    return verl_package(tmp_path, version, {f"trainer/config/{name}": text for name, text in files.items()})


def _findings(package, target):
    return [f for f in scan_paths([str(package)], target).findings]


def _found(package, target):
    return [(f.path.split("config/")[-1], f.location.line, f.code) for f in _findings(package, target)]


def test_fsdp_engine_file_without_mixed_precision_is_reported_and_fixed_at_its_root(tmp_path):
    package = _package(tmp_path, {"engine/fsdp.yaml": FSDP})
    found = _found(package, SM61)
    # one finding (the file is mounted for the actor, the ref and the critic), at the root mapping's first key
    assert found.count(("engine/fsdp.yaml", 2, "RLC105")) == 1
    assert not [f for f in found if f[2] == "RLC105" and f[1] != 2]
    assert "RLC105" not in [code for _, _, code in _found(package, SM80)]
    fix_paths([str(package)], SM75)
    fixed = (package / "trainer" / "config" / "engine" / "fsdp.yaml").read_text()
    assert fixed == FSDP + "mixed_precision:\n  param_dtype: fp32\n"
    # what verl 0.8.0's FSDP engine reads (transformer_impl.py:346-348): fp32 through PrecisionType
    assert yaml.safe_load(fixed)["mixed_precision"] == {"param_dtype": "fp32"}
    assert "RLC105" not in [code for _, _, code in _found(package, SM75)]  # idempotent: nothing left to add


def test_fsdp_engine_file_that_sets_mixed_precision_is_judged_by_its_value(tmp_path):
    package = _package(tmp_path, {"engine/fsdp.yaml": FSDP + "mixed_precision:\n  reduce_dtype: fp32\n"})
    fix_paths([str(package)], SM61)
    fixed = yaml.safe_load((package / "trainer" / "config" / "engine" / "fsdp.yaml").read_text())
    assert fixed["mixed_precision"] == {"reduce_dtype": "fp32", "param_dtype": "fp32"}  # added into its mapping


def test_omitted_mixed_precision_is_not_claimed_outside_verl_0_8_0(tmp_path):
    # 0.9.1's rule set has no omitted_in row for engine/fsdp.yaml, and a user's config is no verl file
    assert "RLC105" not in [c for _, _, c in _found(_package(tmp_path / "a", {"engine/fsdp.yaml": FSDP}, "0.9.1"), SM61)]
    user = tmp_path / "b" / "fsdp.yaml"
    user.parent.mkdir()
    user.write_text(FSDP)
    assert "RLC105" not in [f.code for f in scan_paths([str(user)], SM61).findings]


def test_hf_model_override_config_left_empty(tmp_path):
    package = _package(tmp_path, {"model/hf_model.yaml": "path: ~/models/x\noverride_config: {}\n"})
    assert ("model/hf_model.yaml", 2, "RLC204") in _found(package, SM75)
    fix_paths([str(package)], SM75)
    assert "override_config: {attn_implementation: sdpa}" in (
        package / "trainer" / "config" / "model" / "hf_model.yaml").read_text()


def test_megatron_dtype_fix_is_one_the_engine_accepts(tmp_path):
    package = _package(tmp_path, {"engine/megatron.yaml": MEGATRON})
    found = _found(package, SM61)
    assert found.count(("engine/megatron.yaml", 2, "RLC204")) == 1
    assert found.count(("engine/megatron.yaml", 3, "RLC120")) == 1
    (dtype,) = [f for f in _findings(package, SM61) if f.code == "RLC120"]
    # McoreEngineConfig asserts bfloat16 or float16 (engine.py:213): float32 would not start; fp16 is no choice on sm61
    assert dtype.fix is None and "accepts only bfloat16, float16" in dtype.message
    fix_paths([str(package)], SM75, unsafe=True)
    fixed = (package / "trainer" / "config" / "engine" / "megatron.yaml").read_text()
    assert "dtype: float16 #" in fixed and "attention_backend: unfused" in fixed
    assert not _found(package, SM80)


def test_megatron_command_gets_an_accepted_dtype_added(tmp_path):
    package = _package(tmp_path, {})
    script = tmp_path / "run.sh"
    script.write_text("python3 -m verl.trainer.main_ppo model_engine=megatron algorithm.adv_estimator=grpo\n")
    found = [f for f in scan_paths([str(script), str(package)], SM61).findings if f.code == "RLC120"]
    assert found and all(f.fix is None for f in found)


def test_engine_config_no_defaults_list_composes_is_not_read(tmp_path):
    package = _package(tmp_path, {"engine/automodel.yaml": "strategy: automodel\nattn_implementation: flash_attention_2\n"})
    result = scan_paths([str(package)], SM61)
    assert not result.findings
    assert any("automodel.yaml" in str(entry) for entry in result.not_read)
