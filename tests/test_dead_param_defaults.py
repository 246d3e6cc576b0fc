"""A parameter default no call can leave in force is not reported (RLC101, RLC102, RLC201): a function or class of a
script run as `__main__` outside any package, whose every call in the files that can import it (the script's own
directory) passes the argument, by keyword or at its position. Anything else keeps the finding: a function of a
package module (users import it from outside the tree), a call that leaves the argument out or may (`*args`,
`**kwargs`), the callable handed on as a value, a subclass, no call at all."""

from __future__ import annotations

import pytest

from rlcompat.api import scan_paths
from rlcompat.knowledge.targets import resolve_target

SCRIPT = (
    "import argparse\n"                                                                                  # 1
    "import torch\n"                                                                                     # 2
    "from transformers import AutoModelForCausalLM\n\n\n"                                                # 3
    "def load(name, attn_implementation: str = \"flash_attention_2\", torch_dtype=\"bfloat16\",\n"      # 6
    "         dtype=torch.bfloat16):\n"                                                                  # 7
    "    return AutoModelForCausalLM.from_pretrained(name, attn_implementation=attn_implementation,\n"
    "                                                torch_dtype=torch_dtype)\n\n\n"
    "class Trainer:\n"                                                                                   # 12
    "    def __init__(self, model_id, attn_implementation=\"flash_attention_2\"):\n"                     # 13
    "        self.model = load(model_id, {load_args})\n\n\n"
    "if __name__ == \"__main__\":\n"
    "    p = argparse.ArgumentParser()\n"
    "    p.add_argument(\"--attn\", default=\"sdpa\")\n"
    "    a = p.parse_args()\n"
    "    {main}\n"
)
PASSED = "attn_implementation, torch_dtype=\"float16\", dtype=torch.float16"


def _found(tmp_path, load_args=PASSED, main="Trainer(a.model, a.attn)", package=False, sibling=None, target="sm75"):
    (tmp_path / ".git").mkdir(exist_ok=True)
    (tmp_path / "train.py").write_text(SCRIPT.format(load_args=load_args, main=main))
    if package:
        (tmp_path / "__init__.py").write_text("")
    if sibling is not None:
        (tmp_path / "other.py").write_text(sibling)
    report = scan_paths([str(tmp_path / "train.py")], resolve_target(target))
    return sorted((f.code, f.location.line) for f in report.findings)


def test_defaults_every_call_of_a_script_passes_are_not_reported(tmp_path):
    assert _found(tmp_path) == []


@pytest.mark.parametrize("main", [
    "Trainer(a.model, attn_implementation=a.attn)",
    "trainer_cls = Trainer if a.x else object\n    trainer_cls(a.model, attn_implementation=a.attn)",
])
def test_keyword_calls_and_a_class_chosen_into_a_name(tmp_path, main):
    assert ("RLC201", 13) not in _found(tmp_path, main=main)


@pytest.mark.parametrize("case", [
    dict(main="Trainer(a.model)"),  # the argument left out: the default applies
    dict(main="Trainer(*a.rest)"),  # may or may not carry it
    dict(main="Trainer(a.model, **vars(a))"),
    dict(main="make = Trainer\n    make(a.model, a.attn)\n    run(Trainer)"),  # handed on as a value
    dict(main="class Sub(Trainer):\n        pass"),  # a subclass's super().__init__ may leave it
    dict(main="pass"),  # no call in what rlcompat sees
    dict(package=True),  # a package module: users import Trainer from outside the tree
    dict(sibling="from train import Trainer\nTrainer('m')\n"),  # a script beside it imports it and leaves it out
])
def test_a_default_that_may_apply_is_reported(tmp_path, case):
    assert ("RLC201", 13) in _found(tmp_path, **case)


def test_a_call_that_leaves_out_one_argument_keeps_that_ones_finding_only(tmp_path):
    found = _found(tmp_path, load_args="attn_implementation, torch_dtype=\"float16\"")
    assert ("RLC101", 7) in found  # dtype= is left out by the one call
    assert ("RLC102", 6) not in found and ("RLC201", 6) not in found  # the others are passed


METHODS = (
    "from transformers import AutoModelForCausalLM\n\n\n"
    "def load(name, *, attn_implementation=\"flash_attention_2\"):\n"                                   # 4
    "    return AutoModelForCausalLM.from_pretrained(name, attn_implementation=attn_implementation)\n\n\n"
    "class Runner:\n"
    "    def build(self, name, attn_implementation=\"flash_attention_2\"):\n"                           # 9
    "        return load(name, attn_implementation=attn_implementation)\n\n"
    "    def go(self, a):\n"
    "        return self.build({build_args})\n\n\n"
    "if __name__ == \"__main__\":\n"
    "    Runner().go(None)\n"
)


@pytest.mark.parametrize("build_args, reported", [
    ("a.model, attn_implementation=a.attn", []),  # a keyword-only parameter passed, a method called through self
    ("a.model, a.attn", []),  # at its position, `self` not counted
    ("a.model", [("RLC201", 9)]),  # the method's default left in force
])
def test_keyword_only_parameters_and_methods(tmp_path, build_args, reported):
    (tmp_path / ".git").mkdir()
    (tmp_path / "run.py").write_text(METHODS.format(build_args=build_args))
    found = scan_paths([str(tmp_path / "run.py")], resolve_target("sm75")).findings
    assert sorted((f.code, f.location.line) for f in found if f.code == "RLC201") == reported


LOADER = ("import torch\n\n\n"
          "def load_pretrained_models(path, dtype: torch.dtype = torch.bfloat16):\n"            # 4
          "    return path, dtype\n\n\n"
          "def load_pretrained_image_diffusion_models(path, dtype: torch.dtype = torch.bfloat16, *, lora=False):\n"  # 8
          "    return path, dtype\n")
TRAINER = ("from {pkg}.models.pretrained_model import load_pretrained_image_diffusion_models, load_pretrained_models\n\n\n"
           "class Trainer:\n"
           "    def init_models(self):\n"
           "        self.model = load_pretrained_image_diffusion_models(self.path, lora=True, dtype=self.dtype)\n"
           "        self.actor = load_pretrained_models(self.path)\n")


def _package_tree(tmp_path, pkg, trainer=TRAINER):
    (tmp_path / ".git").mkdir(parents=True)
    for sub in ("models", "trainers"):
        (tmp_path / pkg / sub).mkdir(parents=True)
        (tmp_path / pkg / sub / "__init__.py").write_text("")
    (tmp_path / pkg / "__init__.py").write_text("")
    (tmp_path / pkg / "models" / "pretrained_model.py").write_text(LOADER)
    (tmp_path / pkg / "trainers" / "dpo_diffusion.py").write_text(trainer.format(pkg=pkg))
    report = scan_paths([str(tmp_path / pkg / "models" / "pretrained_model.py")], resolve_target("sm75"))
    return sorted((f.code, f.location.line) for f in report.findings)


def test_a_closed_package_s_default_every_call_in_the_tree_passes_is_not_reported(tmp_path):
    """align-anything (knowledge `closed_package`): installed from its checkout and run through its own modules, so
    its loaders' callers are its trainers; the diffusion loader's bf16 default is passed by every one, the text
    loader's is not."""
    assert _package_tree(tmp_path / "aa", "align_anything") == [("RLC101", 4)]
    # one call that leaves the dtype out keeps it
    lax = TRAINER + "        self.ref = load_pretrained_image_diffusion_models(self.path)\n"
    assert _package_tree(tmp_path / "lax", "align_anything", lax) == [("RLC101", 4), ("RLC101", 8)]


def test_another_package_s_function_keeps_its_finding_whatever_its_calls_pass(tmp_path):
    assert _package_tree(tmp_path, "other_pkg") == [("RLC101", 4), ("RLC101", 8)]
