"""The tiny model verify trains: deterministic, offline-loadable, with the tokens verl's pipeline needs."""

from __future__ import annotations

import pytest

pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from rlcompat.verify.tiny_model import EOS_TOKEN, PAD_TOKEN, TinyModelSpec, build_tiny_model  # noqa: E402


def test_same_seed_same_bytes_other_seed_other_weights(tmp_path):
    a = build_tiny_model(tmp_path / "a", seed=3)
    b = build_tiny_model(tmp_path / "b", seed=3)
    c = build_tiny_model(tmp_path / "c", seed=4)
    assert (a / "model.safetensors").read_bytes() == (b / "model.safetensors").read_bytes()
    assert (a / "tokenizer.json").read_bytes() == (b / "tokenizer.json").read_bytes()
    assert (a / "model.safetensors").read_bytes() != (c / "model.safetensors").read_bytes()


def test_loads_offline_with_chat_template_and_special_tokens(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    folder = build_tiny_model(tmp_path / "m", seed=0)
    tok = transformers.AutoTokenizer.from_pretrained(folder)
    model = transformers.AutoModelForCausalLM.from_pretrained(folder)
    spec = TinyModelSpec()
    assert type(model).__name__ == "Qwen2ForCausalLM"
    assert model.config.hidden_size == spec.hidden_size and model.config.vocab_size % spec.vocab_multiple == 0
    assert tok.pad_token == PAD_TOKEN and tok.eos_token == EOS_TOKEN and tok.pad_token_id != tok.eos_token_id
    text = tok.apply_chat_template([{"role": "user", "content": "What is 2 + 3?"}], tokenize=False,
                                   add_generation_prompt=True)
    assert text.endswith("<|im_start|>assistant\n")
    ids = tok(text).input_ids
    assert max(ids) < model.config.vocab_size
    assert tok.decode(tok("#### 72").input_ids) == "#### 72"  # the GSM8K scorer reads this back
    assert all(p.dtype.is_floating_point and str(p.dtype) == "torch.float32" for p in model.parameters())
