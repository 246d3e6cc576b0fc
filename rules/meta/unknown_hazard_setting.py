from __future__ import annotations

import os
import re

from rlcompat.analysis import cpu_program, pyentry_switches
from rlcompat.analysis.confighelpers import remove_flag, where
from rlcompat.contract import Bad, ConfigRule, FixSafety, Good
from rlcompat.knowledge import config_class_defaults, verl_layout
from rlcompat.knowledge.spellings import bf16_replacements, flash_attention, flash_attention_backends, fp8_names

DTYPE_WORDS = {"dtype", "precision", "mp", "amp"}
ATTN_WORDS = {"attn", "attention"}


def name_tokens(key: str) -> set[str]:
    """`--ds.param_dtype` -> {ds, param, dtype}; `VLLM_ATTENTION_BACKEND` -> {vllm, attention, backend}."""
    return {t for t in re.split(r"[._\-\s]+", key.lstrip("-").lower()) if t}


NEGATIONS = frozenset({"disable", "disabled", "no", "not", "without", "skip", "off"})
# A true switch selects its hazard only when its own name (the last key segment) says so, or says "enabled" under a
# parent that does (`bf16: {enabled: true}`): `torch_compile_options.shape_padding` tunes a compile something else
# turns on. Names that describe a state, a capability, logging, a scope or a package's build select nothing at run
# time: transformers' `_supports_flash_attn = True`, torch's `log_pt2_compile_event=True`, `compile_only=True`,
# `include_bfloat16=True`, flash-attn's `FLASH_ATTENTION_FORCE_BUILD=TRUE` (compile the package from source rather
# than download a wheel: whether it can run is the install's question, RLC603).
ENABLING_LEAVES = frozenset({"enabled", "enable", "use", "on", "active"})
DESCRIPTIVE = frozenset({"supports", "supported", "support", "can", "has", "have", "been", "is", "was", "patched",
                         "log", "logging", "event", "debug", "only", "include", "exclude", "context", "build"})

class UnknownHazardSetting(ConfigRule):
    code = "RLC003"
    name = "unknown-hazard-setting"
    title = "A setting rlcompat has no knowledge of whose name and value say bf16, FlashAttention or compile"
    what = (
        "The net under the framework knowledge: any config key, flag or environment variable that no file in "
        "rlcompat/knowledge/data/frameworks/ or rlcompat/knowledge/data/verl/ describes, whose name says what it selects (a name part `dtype`, "
        "`precision`, `attn`/`attention`, `flash`, `compile`, `bf16`, `fp8`) and whose value is a hazard on the target "
        "(`bf16`, `bfloat16`, `torch.bfloat16`, `flash_attention_2`, `fa2`, `FLASH_ATTN`, `fp8`, or true for a "
        "bf16/flash/compile switch). It is a warning whose message says the key is not in the knowledge base: the "
        "name is all rlcompat knows. A key that a knowledge-backed or written rule reports is not reported again."
    )
    why = (
        "A framework rlcompat has no file for still selects bf16 or FlashAttention by such settings; a linter that "
        "says `All clear` for them is worse than none. bf16 needs compute capability 8.0 [S1], FlashAttention-2 8.0 "
        "[S10], torch.compile's Inductor 7.0 [S17], fp8 8.9 [S20]."
    )
    fix_safety = (
        "Where the value is a literal: bf16 spellings become fp32 (sm5x/sm6x, safe) or fp16 (sm70/sm75, unsafe) in "
        "the same spelling family, FlashAttention names become `sdpa` (safe), switches are turned off (safe). A "
        "backend name of an environment variable is not guessed: no fix."
    )
    severity = "warning"
    languages = ConfigRule.languages | {"python"}  # its settings written in Python too (lang/pysettings.py)
    names = ("bf16", "bfloat16", "BF16", "BFLOAT16", "flash", "FLASH", "fa2", "fa3", "compile", "COMPILE", "fp8",
                "FP8")
    sources = ("S1", "S10", "S17", "S20")
    # narrower than its triggers: the statements these words mark are read for every config rule (ConfigRule)
    python_triggers = ("bf16", "bfloat16", "flash_attention", "FLASH_ATTN", "fp8")
    precedence = 2

    bad = (
        Bad("model:\n  param_dtype: bf16\n", fixed="model:\n  param_dtype: fp32\n", path="mytool.yaml"),
        Bad("trainer:\n  attention_impl: flash_attention_2\n", fixed="trainer:\n  attention_impl: sdpa\n",
            path="mytool.yaml"),
        Bad("trainer:\n  use_flash: true\n", fixed="trainer:\n  use_flash: false\n", path="mytool.yaml"),
        Bad("trainer:\n  enable_compile: True\n", fixed="trainer:\n  enable_compile: False\n", path="mytool.yaml"),
        Bad("model:\n  torch_compile:\n    enabled: true\n", fixed="model:\n  torch_compile:\n    enabled: false\n",
            path="mytool.yaml"),
        Bad("MyConfig(use_bf16=True)\n", fixed="MyConfig(use_bf16=False)\n", path="train.py"),
        Bad("runtime:\n  compute_precision: bfloat16\n", target="sm75", unsafe=True,
            fixed="runtime:\n  compute_precision: float16\n", path="mytool.yaml"),
    )
    good = (
        Good("model:\n  param_dtype: fp32\n", path="mytool.yaml"),
        Good("model:\n  param_dtype: bf16\n", path="mytool.yaml", target="sm80"),
        Good("notes: bf16 is not used\nname: flash_attention_2\n", path="mytool.yaml"),
        Good("trainer:\n  enable_compile: True\n", path="mytool.yaml", target="sm70"),
        Good("kernels:\n  disable_bf16_reduced_precision_matmul: true\n", path="mytool.yaml"),
        Good("# Megatron engine\ndtype: bfloat16\n", path="verl/trainer/config/engine/megatron.yaml"),
        Good("class MyModel(PreTrainedModel):\n    _supports_flash_attn = True\n", path="modeling_my.py"),
        Good("run(graph, log_compile_event=True, compile_only=True)\n", path="driver.py"),
        Good("export FLASH_ATTENTION_FORCE_BUILD=TRUE\nexport MAX_JOBS=4\n", path="build_flash.sh"),
        Good("trainer:\n  compile_options:\n    shape_padding: true\n", path="mytool.yaml"),
    )

    @classmethod
    def applies_to(cls, target) -> bool:
        return not target.fp8

    def check_config(self, view, ctx) -> None:
        from rlcompat.analysis.knowledge_keys import known

        verl_keys = {s.key for s in ctx.verl.settings} | set(ctx.verl.dead)
        in_verl = view.is_verl or "verl/trainer/config/" in ctx.path.replace(os.sep, "/")
        # verl's knowledge covers its FSDP engine; in verl's own configs the net leaves the other training engines'
        # files and sections alone rather than guess which engine a run uses (engine/megatron.yaml, turbo_config).
        others = verl_layout.layout().other_engines
        if in_verl and others & name_tokens(os.path.basename(ctx.path)):
            return
        cpu_only = view.kind == "python" and cpu_program.runs_on_cpu_only(ctx.source_text)
        for s in view.settings:
            if s.value is None:
                continue
            if cpu_only and s.origin == "argparse-default":
                continue  # a flag of a program whose models stay on the CPU, as for known keys (analysis/cpu_program.py)
            if known(view, ctx, s):
                continue
            if not s.flag and verl_keys & set(view.paths_of(s)):
                continue
            if in_verl and others & name_tokens(s.key):
                continue
            if s.guards and view.kind == "python" and pyentry_switches.setting_unpassed(ctx, s):
                continue  # only under a switch the parser leaves off and no launch file of the tree passes
            if view.kind == "python" and s.call and config_class_defaults.unread_name(
                    s.call, s.key.rsplit(".", 1)[-1], config_class_defaults.release_in(ctx)):
                continue  # a field no code of the tree's release reads (config_class_defaults.toml [[unread]])
            base = f"{ctx.verl.label} knowledge (its FSDP-engine keys)" if in_verl else "framework knowledge"
            self._check(s, ctx, name_tokens(s.key), f"`{s.label}` is not in rlcompat's {base}, so this is matched by "
                                                    "name only (low confidence)")

    def _check(self, s, ctx, tokens: set[str], note: str) -> None:
        target, value = ctx.target, s.value.strip()
        low = value.lower()
        is_switch = (s.flag and value == "") or low in ("true", "yes", "on")
        if tokens & DTYPE_WORDS or "mixed" in tokens:
            if low in bf16_replacements() and not target.bf16_native:
                fp32, fp16 = bf16_replacements()[low]
                new, safety = (fp16, FixSafety.UNSAFE) if target.training_dtype == "float16" else (fp32, FixSafety.SAFE)
                if value.isupper():
                    new = new.upper()
                self._report(ctx, s, f"{s.label} is {value}{where(s)}: bf16 has no hardware on {target.name} "
                                     f"({target.capability_text}); use {new}. {note}", s.rewrite(new), safety,
                             f"use {new}")
                return
            if low in fp8_names() and not target.fp8:
                self._report(ctx, s, f"{s.label} is {value}{where(s)}: fp8 needs compute capability 8.9, {target.name} "
                                     f"is {target.capability_text}. {note}", None)
                return
        if tokens & ATTN_WORDS:
            fa2, fa3 = flash_attention(2).names, flash_attention(3).names
            if (low in fa3 and not target.flash_attn_3) or (low in fa2 and not target.flash_attn_2):
                self._report(ctx, s, f"{s.label} is {value}{where(s)}: FlashAttention needs compute capability "
                                     f"{'9.0' if low in fa3 else '8.0'}+, {target.name} is {target.capability_text}; "
                                     f"use sdpa. {note}", None if value.isupper() else s.rewrite("sdpa"),
                             FixSafety.SAFE, "use sdpa")
                return
            if value.isupper() and low in flash_attention_backends() and not target.flash_attn_2:
                self._report(ctx, s, f"{s.label} is {value}{where(s)}: a FlashAttention backend, which needs compute "
                                     f"capability 8.0+; {target.name} is {target.capability_text}. {note}", None)
                return
        if not is_switch or tokens & NEGATIONS:
            return  # `disable_bf16_...=True`, `no_flash=True` switch the thing off
        leaf = re.split(r"[.:]", s.key.lstrip("-"))[-1]
        own = name_tokens(leaf)
        if leaf.startswith("_") or own & DESCRIPTIVE:
            return  # private state (`self._te_fp8_patched = True`) or a description, not a selection
        if not own <= ENABLING_LEAVES:
            tokens = own  # the switch's own name, not its parents', says what it turns on
        for words, ok, what in ((("bf16", "bfloat16"), target.bf16_native, "bf16"),
                                (("flash",), target.flash_attn_2, "FlashAttention"),
                                (("compile",), target.inductor, "torch.compile (Inductor needs 7.0+)"),
                                (("fp8",), target.fp8, "fp8")):
            if ok or not tokens & set(words):
                continue
            if s.flag and value == "" and s.word_span is not None:
                edit, how = remove_flag(ctx.source_text, s.word_span), "drop the flag"
            else:
                edit, how = s.rewrite(False), "set it to false"
            self._report(ctx, s, f"{s.label} turns on {what}, which {target.name} ({target.capability_text}) lacks; "
                                 f"{how}. {note}", edit, FixSafety.SAFE, how)
            return

    @staticmethod
    def _report(ctx, s, message, edit, safety=FixSafety.SAFE, description="") -> None:
        ctx.report(s.key_span, message, [edit] if edit is not None else [], safety, description)
