"""Quantization read from a model's name (RLC416, rlcompat/knowledge/data/quantized_checkpoints.toml), axolotl's knowledge
(rlcompat/knowledge/data/frameworks/axolotl/0.21.0.toml) and LLaMA-Factory 0.9.5's fp8 keys, as a user meets them."""

from __future__ import annotations

import re

from rlcompat.knowledge import quantized_checkpoints
from rlcompat.api import scan_paths
from rlcompat.knowledge import files
from rlcompat.rules.rollout.quantized_checkpoint_name import QuantizedCheckpointName
from rlcompat.knowledge.targets import resolve_target


def _codes(tmp_path, name: str, text: str, target: str) -> list[tuple[str, int]]:
    path = tmp_path / name
    path.write_text(text)
    return sorted((f.code, f.location.line) for f in scan_paths([str(path)], resolve_target(target)).findings)


def test_a_format_is_a_whole_name_part():
    assert quantized_checkpoints.name_format("TechxGenus/Meta-Llama-3-8B-Instruct-AWQ").name == "AWQ"
    assert quantized_checkpoints.name_format("nvidia/Qwen3-30B-A3B-NVFP4").name == "NVFP4"
    assert quantized_checkpoints.name_format("Qwen/Qwen2.5-7B-Instruct-awq").name == "AWQ"
    assert quantized_checkpoints.name_format("someone/awqward-model") is None
    assert quantized_checkpoints.name_format("Qwen/Qwen2.5-7B-Instruct-GPTQ-Int4") is None


def test_a_framework_row_replaces_the_general_engines_in_that_frameworks_files():
    nvfp4 = quantized_checkpoints.name_format("x-NVFP4")
    assert min(e.min_capability for e in quantized_checkpoints.engines_for(nvfp4, set())) == (7, 5)
    assert [e.min_capability for e in quantized_checkpoints.engines_for(nvfp4, {"axolotl"})] == [(8, 0)]


def test_nvfp4_is_reported_on_a_t4_in_an_axolotl_config_only(tmp_path):
    assert _codes(tmp_path, "lora.yaml", "base_model: nvidia/Qwen3-30B-A3B-NVFP4\n", "sm75") == [("RLC416", 1)]
    assert _codes(tmp_path, "serve.yaml", "model: nvidia/Qwen3-30B-A3B-NVFP4\n", "sm75") == []
    assert _codes(tmp_path, "serve.yaml", "model: nvidia/Qwen3-30B-A3B-NVFP4\n", "sm61") == [("RLC416", 1)]


def test_the_finding_says_it_read_the_name_and_is_a_warning(tmp_path):
    path = tmp_path / "sft.yaml"
    path.write_text("model_name_or_path: TechxGenus/Meta-Llama-3-8B-Instruct-AWQ\n")
    [finding] = scan_paths([str(path)], resolve_target("sm61")).findings
    assert finding.severity == "warning" and finding.fix is None
    assert "read from the name only" in finding.message and "auto_awq.py:233-234" in finding.message


def test_every_token_of_the_table_triggers_the_rule():
    for fmt in quantized_checkpoints.formats():
        for token in fmt.tokens:
            for spelling in (token, token.upper()):
                assert any(t in spelling for t in QuantizedCheckpointName.triggers), spelling


def test_every_engine_row_cites_known_sources():
    known = set(files.load("sources.toml")["sources"])
    for fmt in quantized_checkpoints.formats():
        for engine in fmt.engines:
            assert engine.sources and set(engine.sources) <= known, (fmt.name, engine.engine)
            assert re.search(r":\d+|README", engine.where), engine.where


def test_liger_switches_need_the_plugin_and_axolotl_bf16_auto_is_on(tmp_path):
    config = ("base_model: Qwen/Qwen3-8B\nplugins:\n  - axolotl.integrations.liger.LigerPlugin\n"
              "liger_rope: true\nbf16: auto\ntf32: auto\n")
    assert _codes(tmp_path, "a.yaml", config, "sm61") == [("RLC118", 5), ("RLC355", 4)]
    assert _codes(tmp_path, "a.yaml", config, "sm75") == [("RLC118", 5)]
    without_plugin = "base_model: Qwen/Qwen3-8B\nliger_rope: true\n"
    assert _codes(tmp_path, "b.yaml", without_plugin, "sm61") == []


def test_fp8_options_are_left_to_the_fp8_switch(tmp_path):
    config = "bf16: false\nfp8: true\nfp8_backend: torchao\nfp8_enable_fsdp_float8_all_gather: true\n"
    assert _codes(tmp_path, "fp8.yaml", config, "sm61") == [("RLC118", 2)]
    assert _codes(tmp_path, "fp8.yaml", config, "sm89") == []
