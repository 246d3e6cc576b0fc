"""Framework keys read only under conditions (`when`: skyrl-train's DeepSpeed dtype only with the deepspeed strategy,
its reference model only with a KL term) and keys a YAML config leaves out (`omitted` with format "yaml": a
skyrl-train `fsdp_config` without `mixed_precision`), reported at the mapping that would carry them."""

from __future__ import annotations

import pytest

from rlcompat.knowledge import frameworks as fk
from rlcompat.api import scan_source
from rlcompat.lang import yaml as yaml_frontend
from rlcompat.knowledge.targets import resolve_target

BASE = "defaults:\n  - ppo_base_config\n  - _self_\n"


def _found(text: str, target: str = "sm61", path: str = "grpo.yaml", language: str = "yaml"):
    return [f for f in scan_source(text, resolve_target(target), path, language)
            if f.code in ("RLC118", "RLC207", "RLC404", "RLC003")]


def _fixed(text: str, finding) -> str:
    for edit in sorted(finding.fix.edits, reverse=True):
        text = text[:edit.start] + edit.content + text[edit.end:]
    return text


def test_a_key_left_out_of_a_yaml_mapping_is_reported_there_and_added_in_block_style():
    text = BASE + "trainer:\n  policy:\n    fsdp_config:\n      cpu_offload: false  # offload\n      fsdp_size: -1\n" \
                  "    # the next key's comment\n    sequence_parallel_size: 1\n"
    (found,) = _found(text)
    assert (found.code, found.location.line, found.source_line) == ("RLC118", 6, "    fsdp_config:")
    assert found.message.startswith("trainer.policy.fsdp_config does not set mixed_precision.param_dtype, so "
                                    "skyrl-train (0.3.1) uses the default of "
                                    "trainer.policy.fsdp_config.mixed_precision.param_dtype, bf16 "
                                    "(skyrl_train/distributed/fsdp_strategy.py:217-225)")
    assert found.message.endswith("add mixed_precision.param_dtype: fp32 under trainer.policy.fsdp_config")
    fixed = _fixed(text, found)
    assert fixed == text.replace("fsdp_size: -1\n", "fsdp_size: -1\n      mixed_precision:\n        param_dtype: fp32\n")
    assert not _found(fixed)


def test_sm75_gets_fp32_weights_too_because_skyrl_train_has_no_grad_scaler():
    (found,) = _found(BASE + "trainer:\n  policy:\n    fsdp_config:\n      fsdp_size: -1\n", "sm75")
    assert found.fix.safety.value == "safe" and [e.content for e in found.fix.edits] == [
        "      mixed_precision:\n        param_dtype: fp32\n"]


def test_crlf_files_keep_their_line_endings_and_a_flow_mapping_gets_a_flow_entry():
    text = BASE.replace("\n", "\r\n") + "trainer:\r\n  ref:\r\n    fsdp_config:\r\n      cpu_offload: true\r\n"
    (found,) = _found(text)
    assert _fixed(text, found).endswith("cpu_offload: true\r\n      mixed_precision:\r\n        param_dtype: fp32\r\n")
    text = BASE + "trainer:\n  policy:\n    fsdp_config: {cpu_offload: false}\n"
    (flow,) = _found(text)
    assert flow.location.line == 6
    fixed = _fixed(text, flow)
    assert fixed.endswith("fsdp_config: {cpu_offload: false, mixed_precision: {param_dtype: fp32}}\n")
    assert not _found(fixed)


def test_a_mapping_set_to_a_scalar_or_an_alias_on_the_way_gets_no_fix():
    # `mixed_precision: null` is written: adding a second `mixed_precision:` would repeat the key
    text = BASE + "trainer:\n  policy:\n    fsdp_config:\n      mixed_precision: null\n"
    (found,) = _found(text)
    assert found.fix is None
    aliased = "mp: &mp\n  reduce_dtype: fp32\n" + BASE + "trainer:\n  policy:\n    fsdp_config:\n      mixed_precision: *mp\n"
    (found,) = _found(aliased)
    assert found.fix is None and found.location.line == 8


def test_the_condition_decides_whether_a_key_is_read_at_all():
    # skyrl-train's DeepSpeed group file: read only with trainer.strategy=deepspeed (default fsdp2); known, so the
    # generic net stays out of it too
    group = "# @package deepspeed_config.train\ntorch_autocast:\n  enabled: true\n  dtype: bfloat16\n"
    assert not _found(group, path="skyrl_train/config/deepspeed_config/train.yaml")
    chosen = BASE + "trainer:\n  strategy: deepspeed\ndeepspeed_config:\n  train:\n    torch_autocast:\n      dtype: bfloat16\n"
    (found,) = _found(chosen)
    assert found.code == "RLC118" and found.location.line == 9
    # the FSDP mixed precision is not read by the DeepSpeed workers
    assert not _found(BASE + "trainer:\n  strategy: deepspeed\n  policy:\n    fsdp_config:\n      fsdp_size: -1\n")


def test_any_of_several_conditions_builds_the_reference_model():
    ref = "  ref:\n    fsdp_config:\n      cpu_offload: true\n"
    assert _found(BASE + "trainer:\n" + ref)  # use_kl_loss defaults to true
    assert not _found(BASE + "trainer:\n  algorithm:\n    use_kl_loss: false\n" + ref)
    assert _found(BASE + "trainer:\n  algorithm:\n    use_kl_loss: false\n    use_kl_in_reward: true\n" + ref)


def test_a_condition_reads_a_command_s_overrides():
    command = ("uv run --isolated --extra vllm -m skyrl_train.entrypoints.main_base \\\n  trainer.strategy={strategy} \\\n"
               "  deepspeed_config.train.torch_autocast.dtype=bfloat16\n")
    assert [f.code for f in _found(command.format(strategy="deepspeed"), path="run.sh", language="shell")] == ["RLC118"]
    assert not _found(command.format(strategy="fsdp2"), path="run.sh", language="shell")


def test_a_remote_engine_is_not_judged_on_this_gpu():
    assert [f.code for f in _found(BASE + "generator:\n  backend: vllm\n")] == ["RLC404"]
    assert not _found(BASE + "generator:\n  run_engines_locally: false\n  backend: vllm\n")


def test_a_condition_row_is_checked_when_the_knowledge_loads():
    row = {"names": ["a.b"], "kind": "dtype", "role": "compute", "proof": "x.py:1",
           "when": [{"key": "a.c", "default": "x", "proof": "x.py:2"}]}
    with pytest.raises(ValueError, match=r"rlcompat/knowledge/data/frameworks/x/1\.0\.toml: \['a\.b'\] `when`: a condition needs "
                                         r"values or other_than \(one of them\)"):
        fk._framework({"framework": "x", "label": "X", "version": "1.0", "key": [row]}, "1.0.toml")
    row["when"] = [{"any": [{"key": "a.c", "values": ["y"], "proof": "x.py:2"}]}]
    with pytest.raises(ValueError, match="a condition needs default"):
        fk._framework({"framework": "x", "label": "X", "version": "1.0", "key": [row]}, "1.0.toml")


def test_yaml_sections_know_their_key_their_indent_and_where_they_end():
    text = "a:\n  b: |\n    one\n    two\n  c:\n    - x\n    - y\nd: {e: 1}\n"
    (doc,) = yaml_frontend.parse(text)
    assert doc.sections["a"].indent == 2 and doc.sections["a"].last == (6, 7)  # the end of the list's last item
    assert doc.sections["d"].flow and doc.sections["d"].last == (7, 9)
    assert "a.c" not in doc.sections  # a list is no mapping
