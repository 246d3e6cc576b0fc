"""Where a Python call loads a model: its `attn_implementation=` keyword and the model path it names (RLC209,
RLC357 read the model's config.json through rlcompat.analysis.model_config)."""

from __future__ import annotations

import libcst as cst

from rlcompat.analysis import pyhelpers as h

MODEL_KEYWORDS = ("pretrained_model_name_or_path", "model_name_or_path", "model_id", "model")


def keyword(node: cst.Call, name: str) -> cst.Arg | None:
    return next((a for a in node.args if a.keyword is not None and a.keyword.value == name), None)


def attention_and_model_path(node: cst.Call, implementation: str) -> tuple[cst.Arg, str] | None:
    """(the `attn_implementation=` argument, the model path string) when the call selects `implementation` and names
    its model by a string literal (first argument or a model keyword); else None."""
    impl = keyword(node, "attn_implementation")
    if impl is None or h.string_value(impl.value) != implementation:
        return None
    model = next((a for a in node.args if a.keyword is not None and a.keyword.value in MODEL_KEYWORDS), None)
    if model is None and node.args and node.args[0].keyword is None and node.args[0].star == "":
        model = node.args[0]
    path = h.string_value(model.value) if model is not None else None
    return (impl, path) if path else None
