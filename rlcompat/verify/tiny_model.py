"""A tiny Qwen2-style causal LM and an offline tokenizer, written to a folder so `from_pretrained(folder)` works offline.

verl's examples train Qwen2/Qwen2.5; the same architecture at hidden size 64 exercises the same transformers code
paths (GQA attention, RoPE, RMSNorm, SwiGLU) in a fraction of a second. Everything is seeded: the same seed gives
byte-identical weights and the same tokenizer.
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

PAD_TOKEN = "<|endoftext|>"
BOS_CHAT = "<|im_start|>"
EOS_TOKEN = "<|im_end|>"

# A Qwen-style chat template: what verl's data pipeline applies to GSM8K prompts.
CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)

# The text the BPE merges are learned from: GSM8K-style questions and answers, so prompts tokenise compactly.
_CORPUS = [
    "Natalia sold clips to 48 of her friends in April, and then she sold half as many clips in May.",
    "How many clips did Natalia sell altogether in April and May? Let's think step by step.",
    "Weng earns $12 an hour for babysitting. Yesterday, she just did 50 minutes of babysitting.",
    "Betty is saving money for a new wallet which costs $100. Betty has only half of the money she needs.",
    "James writes a 3-page letter to 2 different friends twice a week. How many pages does he write a year?",
    "Output the final answer after #### . The answer is #### 72 #### 10 #### 5 #### 624",
    "user assistant system question answer step total each many how much what is the of and to in",
    "0 1 2 3 4 5 6 7 8 9 10 12 24 48 50 72 100 + - * / = $ % ( ) , . ? !",
]


@dataclass(frozen=True)
class TinyModelSpec:
    hidden_size: int = 64
    intermediate_size: int = 128
    num_hidden_layers: int = 2
    num_attention_heads: int = 4
    num_key_value_heads: int = 2
    vocab_size: int = 400  # BPE vocabulary before padding
    vocab_multiple: int = 64  # embedding rows are padded to a multiple of this, as real checkpoints do
    max_position_embeddings: int = 512
    tie_word_embeddings: bool = False

    @property
    def padded_vocab_size(self) -> int:
        m = self.vocab_multiple
        return (self.vocab_size + m - 1) // m * m


def build_tokenizer(spec: TinyModelSpec = TinyModelSpec()):
    """A byte-level BPE learned from a fixed corpus (deterministic), wrapped for transformers."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=spec.vocab_size,
        special_tokens=[PAD_TOKEN, BOS_CHAT, EOS_TOKEN],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(_CORPUS, trainer=trainer)
    return PreTrainedTokenizerFast(
        tokenizer_object=tok, pad_token=PAD_TOKEN, eos_token=EOS_TOKEN, chat_template=CHAT_TEMPLATE,
        padding_side="left",
    )


def build_tiny_model(folder: str | Path, seed: int = 0, spec: TinyModelSpec = TinyModelSpec()) -> Path:
    """Write a randomly initialised Qwen2ForCausalLM (fp32) and its tokenizer to `folder`; return the folder."""
    import torch
    from transformers import GenerationConfig, Qwen2Config, Qwen2ForCausalLM

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    tokenizer = build_tokenizer(spec)
    config = Qwen2Config(
        vocab_size=spec.padded_vocab_size,
        hidden_size=spec.hidden_size,
        intermediate_size=spec.intermediate_size,
        num_hidden_layers=spec.num_hidden_layers,
        num_attention_heads=spec.num_attention_heads,
        num_key_value_heads=spec.num_key_value_heads,
        max_position_embeddings=spec.max_position_embeddings,
        tie_word_embeddings=spec.tie_word_embeddings,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
        bos_token_id=None,
        dtype="float32",
    )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = Qwen2ForCausalLM(config)
    model.generation_config = GenerationConfig(
        pad_token_id=tokenizer.pad_token_id, eos_token_id=tokenizer.eos_token_id, do_sample=False
    )
    with _no_progress_bars():  # "Writing model shards" would land on the terminal of `verify --trainer`
        model.save_pretrained(folder)
        tokenizer.save_pretrained(folder)
    return folder


@contextmanager
def _no_progress_bars():
    """transformers' own switch (utils/logging.py `disable_progress_bar`), put back as it was."""
    from transformers.utils import logging as hf_logging

    was_on = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        if was_on:
            hf_logging.enable_progress_bar()
