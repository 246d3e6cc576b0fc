from __future__ import annotations

import re

from rlcompat.knowledge.capabilities import min_capability, runs
from rlcompat.contract import Bad, ConfigRule, Good
from rlcompat.rules.rollout.helpers import unsupported_message, vllm_command
from rlcompat.knowledge import frameworks
from rlcompat.knowledge import vllm


_VLLM = min_capability("vllm")  # the current release's (a script names none); doctor's RLC506 reads the installed one's


class VllmServedOnUnsupportedGpu(ConfigRule):
    code = "RLC407"
    name = "vllm-served-on-unsupported-gpu"
    title = "vLLM launched directly on a GPU it does not run on, or with an attention backend the GPU lacks"
    what = (
        "Finds `vllm serve` and `python -m vllm.entrypoints...` commands in scripts, and framework commands the "
        "framework knowledge says start vLLM (`trl vllm-serve`: an `[[engine]]` row). Below the current vLLM "
        "release's minimum capability (rlcompat/knowledge/data/capabilities.toml `vllm`, the row RLC401/RLC413 read too) the command "
        "is reported, naming the last release that runs on the card where there is one; on any card, a "
        "`VLLM_ATTENTION_BACKEND=...` set on the command or earlier in the script naming a backend the card lacks "
        "(rlcompat/knowledge/data/vllm.toml `[attention_backend]`) is reported."
    )
    why = (
        f"{_VLLM.by_release()} [S7]; below its minimum a release's wheels have no kernels for the card "
        "(`no kernel image is available`), and below 7.0 V1 also compiles the model with Inductor, which refuses "
        "the card [S17][S52]. FLASH_ATTN and FLASHINFER accept capability 8.0+ only in vLLM 0.33.0; TRITON_ATTN "
        "runs anywhere [S56]."
    )
    fix_safety = (
        "No autofix: generation has to move to an older vLLM that still runs on the card (a V100: the release "
        "named in the message), another engine (transformers) or another card; a backend variable is better "
        "removed by hand (vLLM then picks one the card has)."
    )
    names = ("vllm",)
    sources = ("S7", "S17", "S52", "S56")
    prevents = ("E1",)
    languages = frozenset({"shell", "markdown"})

    bad = (
        Bad("vllm serve Qwen/Qwen2.5-1.5B-Instruct --dtype float16\n", path="serve.sh"),
        Bad("vllm serve Qwen/Qwen2.5-1.5B-Instruct --dtype float16\n", path="serve.sh", target="sm70"),
        Bad("VLLM_ATTENTION_BACKEND=FLASH_ATTN vllm serve m --dtype half\n", path="serve.sh", target="sm75"),
        Bad("export VLLM_ATTENTION_BACKEND=FLASHINFER\npython -m vllm.entrypoints.openai.api_server --model m\n",
            path="serve.sh", target="sm70"),
        Bad("trl vllm-serve --model Qwen/Qwen2.5-7B --tensor_parallel_size 1\n", path="serve.sh"),
    )
    good = (
        Good("vllm serve m --dtype half\n", path="serve.sh", target="sm75"),
        Good("VLLM_ATTENTION_BACKEND=TRITON_ATTN vllm serve m --dtype half\n", path="serve.sh", target="sm75"),
        Good("VLLM_ATTENTION_BACKEND=FLASH_ATTN vllm serve m\n", path="serve.sh", target="sm86"),
        Good("pip install vllm\n", path="setup.sh", target="sm75"),
        Good("trl vllm-serve --model Qwen/Qwen2.5-7B\n", path="serve.sh", target="sm75"),
        Good("trl sft --model_name_or_path Qwen/Qwen2.5-0.5B --use_vllm false\n", path="train.sh"),
    )

    @classmethod
    def applies_to(cls, target) -> bool:
        return True

    def check_config(self, view, ctx) -> None:
        if view.kind != "command" or not view.word_spans:
            return
        served = frameworks.engine_command(view.command_words, "vllm") if "vllm" in " ".join(view.command_words) else None
        if not vllm_command(view.command_words) and served is None:
            return
        cc = self.target.capability
        anchor = view.word_spans[0]
        if not runs("vllm", self.target):
            by = (f"{served[1]['commands'][0]} starts vLLM ({served[0].label} {served[0].version} knowledge: "
                  f"{served[1]['proof'].split(' (')[0]}); ") if served is not None and not vllm_command(view.command_words) else ""
            ctx.report(anchor, f"{by}{unsupported_message(self.target)}", [None])
            return
        before = ctx.source_text[:anchor.start]
        chosen = re.findall(r"\bVLLM_ATTENTION_BACKEND=[\"']?([A-Z_0-9]+)", before)
        if not chosen:
            return
        entry = vllm.refused("attention_backend", chosen[-1], cc)
        if entry is not None:
            ctx.report(anchor, f"VLLM_ATTENTION_BACKEND={chosen[-1]} needs compute capability "
                               f"{entry['min_capability']}+ in vLLM {vllm.table()['version']} "
                               f"({entry['where']}); {self.target.name} is {self.target.capability_text}: use "
                               f"TRITON_ATTN or leave it unset", [None])
