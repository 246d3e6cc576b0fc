"""A model's shape read from a local checkpoint directory's config.json, for rules whose hazard depends on it.

Only a directory that exists next to the scanned file (or above it) is read: a hub id or a path that is not there
says nothing, and nothing is claimed. Reading a file other than the one scanned makes the result depend on it, so
every look-up is recorded in the list the caller passes (`reads`: the scanned file's, rlcompat/pipeline/scanned_file.py) and
the runner does not cache such a file's result.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from itertools import islice

from rlcompat.knowledge.paths import upwards

_MAX_CONFIG_BYTES = 1 << 20
_LEVELS_UP = 4  # a launch script in examples/x/ may name ./models/m relative to the repository root
_DROPOUT_KEYS = ("attention_dropout", "attn_pdrop", "attention_probs_dropout_prob")


@dataclass(frozen=True)
class ModelShape:
    config_path: str  # the config.json read, spelled from the model path as written
    head_dim: int
    attention_dropout: float | None  # None: the config does not say
    head_dim_key: str  # "head_dim" or "hidden_size / num_attention_heads"
    dtype: str | None = None  # the checkpoint's `dtype` / `torch_dtype` ("bfloat16"), what `dtype="auto"` loads


def _looks_like_path(value: str) -> bool:
    return bool(value) and len(value) < 1024 and "://" not in value and not any(c.isspace() for c in value) \
        and "$" not in value and "{" not in value


def find_config(model_path: str, scanned_file: str, reads: list[str] | None = None) -> str | None:
    """The config.json of `model_path` if it is a local directory: absolute, or relative to the scanned file's
    directory or one of the few directories above it. A path looked for is added to `reads`."""
    if not _looks_like_path(model_path):
        return None
    if reads is not None:
        reads.append(model_path)
    if os.path.isabs(model_path):
        bases = [""]
    else:
        bases = list(islice(upwards(os.path.dirname(os.path.abspath(scanned_file))), _LEVELS_UP + 1))
    for base in bases:
        candidate = os.path.join(base, model_path, "config.json")
        if os.path.isfile(candidate):
            return candidate
    return None


def _int(value) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def _shape_of(config: dict, path: str) -> ModelShape | None:
    head_dim = _int(config.get("head_dim"))
    key = "head_dim"
    if head_dim is None:
        hidden, heads = _int(config.get("hidden_size")), _int(config.get("num_attention_heads"))
        if hidden is None or heads is None or hidden % heads:
            return None
        head_dim, key = hidden // heads, "hidden_size / num_attention_heads"
    dropout = None
    for k in _DROPOUT_KEYS:
        v = config.get(k)
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            dropout = float(v)
            break
    dtype = config.get("dtype", config.get("torch_dtype"))
    return ModelShape(path, head_dim, dropout, key, dtype if isinstance(dtype, str) else None)


def model_shape(model_path: str, scanned_file: str, reads: list[str] | None = None) -> ModelShape | None:
    """head_dim (its own key, else hidden_size / num_attention_heads) and attention dropout of a local model;
    a multimodal config's `text_config` when the top level has no attention shape. None when unknown."""
    path = find_config(model_path, scanned_file, reads)
    if path is None:
        return None
    try:
        if os.path.getsize(path) > _MAX_CONFIG_BYTES:
            return None
        with open(path, encoding="utf-8") as fh:
            config = json.load(fh)
    except (OSError, ValueError):
        return None
    if not isinstance(config, dict):
        return None
    shown = os.path.join(model_path, "config.json")
    shape = _shape_of(config, shown)
    if shape is None and isinstance(config.get("text_config"), dict):
        shape = _shape_of(config["text_config"], shown)
    return shape
