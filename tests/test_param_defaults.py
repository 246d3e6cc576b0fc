"""A parameter default that every caller in the tree overrides is never in force (rlcompat/analysis/param_defaults.py):
the trainer class of a recipe built once by its entry point with the argument passed."""

from __future__ import annotations

import pytest

from rlcompat.api import scan_paths
from rlcompat.knowledge.targets import resolve_target

TRAINER = (
    "from transformers import AutoModelForCausalLM\n\n\n"
    "class RecipeTrainer:\n"
    "    def __init__(self, model_id, attn_implementation=\"flash_attention_2\", torch_dtype=\"bfloat16\"):\n"
    "        self.model = AutoModelForCausalLM.from_pretrained(model_id, attn_implementation=attn_implementation,\n"
    "                                                          torch_dtype=torch_dtype)\n"
)


def _codes(tmp_path, caller: str, trainer: str = TRAINER) -> list[tuple[str, int]]:
    (tmp_path / ".git").mkdir()
    (tmp_path / "trainer.py").write_text(trainer)
    if caller:
        (tmp_path / "train.py").write_text("from trainer import RecipeTrainer\n\n\n" + caller)
    found = scan_paths([str(tmp_path / "trainer.py")], resolve_target("sm75")).findings
    return sorted((f.code, f.location.line) for f in found)


def test_defaults_every_caller_overrides_are_not_reported(tmp_path):
    caller = ("def main(args):\n"
              "    return RecipeTrainer(args.model, attn_implementation=args.attn, torch_dtype=args.dtype)\n")
    assert _codes(tmp_path, caller) == []


def test_a_positional_argument_overrides_too(tmp_path):
    assert _codes(tmp_path, "def main(a):\n    return RecipeTrainer(a.model, a.attn, a.dtype)\n") == []


@pytest.mark.parametrize("caller", [
    "",  # no caller in the tree: the default is what a user gets
    "def main(a):\n    return RecipeTrainer(a.model, torch_dtype=a.dtype)\n",  # one argument left to its default
    "def main(a):\n    RecipeTrainer(a.m, attn_implementation=a.x, torch_dtype=a.d)\n    return RecipeTrainer(a.m)\n",
    "def main(a, kw):\n    return RecipeTrainer(a.model, **kw)\n",  # may or may not pass it
    "import functools\nmake = functools.partial(RecipeTrainer, attn_implementation='sdpa', torch_dtype='float32')\n",
    "class Sub(RecipeTrainer):\n    pass\n",  # a subclass's super().__init__ may leave the default
])
def test_a_default_some_use_may_leave_in_force_is_reported(tmp_path, caller):
    found = _codes(tmp_path, caller)
    assert ("RLC201", 5) in found
    if "torch_dtype=a.dtype" not in caller:
        assert ("RLC102", 5) in found


CHOSEN = ("class Other:\n    pass\n\n\n"
          "def main(a):\n    trainer_cls = RecipeTrainer if a.vision else Other\n"
          "    return trainer_cls(a.model, {args}torch_dtype=a.dtype)\n")


@pytest.mark.parametrize("args, reported", [("attn_implementation=a.attn, ", False), ("", True)])
def test_a_class_chosen_into_a_name_is_followed_to_the_calls_of_that_name(tmp_path, args, reported):
    assert (("RLC201", 5) in _codes(tmp_path, CHOSEN.format(args=args))) == reported
