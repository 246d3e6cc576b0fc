from __future__ import annotations

import os

from rlcompat.knowledge.capabilities import min_capability, runs
from rlcompat.contract import Bad, ConfigRule, Good
from rlcompat.rules.rollout.helpers import command_vllm_release, unsupported_message, vllm_command
from rlcompat.knowledge import frameworks, versions
from rlcompat.knowledge import vllm
from rlcompat.knowledge.environment import error_text
from rlcompat.analysis.called_scripts import called_script, first_command
from rlcompat.analysis.knowledge_keys import attributed


_VLLM = min_capability("vllm")  # the current release's (a script names none); doctor's RLC506 reads the installed one's


class VllmServedOnUnsupportedGpu(ConfigRule):
    code = "RLC407"
    name = "vllm-served-on-unsupported-gpu"
    title = ("vLLM launched directly on a GPU it does not run on, with an attention backend the GPU lacks, or with "
             "no dtype on a release that keeps a bf16 checkpoint in bf16")
    what = (
        "Finds `vllm serve` and `python -m vllm.entrypoints...` commands in scripts, and framework commands the "
        "framework knowledge says start vLLM (`trl vllm-serve`: an `[[engine]]` row). Below the current vLLM "
        "release's minimum capability (rlcompat/knowledge/data/capabilities.toml `vllm`, the row RLC401/RLC413 read too) the command "
        "is reported, naming the last release that runs on the card where there is one; on any card, a "
        "`VLLM_ATTENTION_BACKEND=...` set on the command or earlier in the script naming a backend the card lacks "
        "(rlcompat/knowledge/data/vllm.toml `[attention_backend]`) is reported. Below 8.0, a `vllm serve` or "
        "`vllm.entrypoints` command with no `--dtype` is reported where the vLLM that runs it is "
        f"{vllm.auto_dtype()['keeps_bf16_through']} or older: the release of the official image its container runs "
        "(`image: vllm/vllm-openai:v0.8.5` in a Kubernetes container or compose service), else the tree's (its pin, "
        "package or the installed one); an unknown release is not reported. Arguments alone given to vLLM's official "
        "image (a container's `args` without `command`, a compose `command` without `entrypoint`, a Dockerfile `CMD` "
        "array without `ENTRYPOINT`, the first word an option) are a command of the image's ENTRYPOINT, vLLM's OpenAI "
        "server. A framework's TOML config whose table starts vLLM (an `[[engine]]` row's `tables`: prime-rl's "
        "`[inference]`), or its YAML config holding that mapping (a dotted name: torchforge's `policy.engine_args`), "
        "is reported at that table below vLLM's minimum. A command running a shell script of the tree (`bash "
        "generation/register_server.sh`, `sh x.sh`, `./x.sh`, `source x.sh`; beside the script or at the tree's "
        "root) one of whose commands starts vLLM is reported there too below the minimum, naming that line."
    )
    why = (
        f"{_VLLM.by_release()} [S7]; below its minimum a release's wheels have no kernels for the card "
        "(`no kernel image is available`), and below 7.0 V1 also compiles the model with Inductor, which refuses "
        "the card [S17][S52]. FLASH_ATTN and FLASHINFER accept capability 8.0+ only in vLLM 0.33.0; TRITON_ATTN "
        "runs anywhere [S56]. Without a dtype vLLM takes the checkpoint's (bf16 for most current models); up to "
        f"{vllm.auto_dtype()['keeps_bf16_through']} it keeps bf16 and its worker raises below 8.0: "
        f"`{error_text(vllm.auto_dtype()['error'])}` [S105]; an image tagged with a release holds that release [S216]."
    )
    fix_safety = (
        "No autofix: generation has to move to an older vLLM that still runs on the card (a V100: the release "
        "named in the message), another engine (transformers) or another card; a backend variable is better "
        "removed by hand (vLLM then picks one the card has). `--dtype half` is not added for the missing dtype: "
        "bf16-pretrained models may overflow in fp16 (RLC418's unsafe fix says the same for Python)."
    )
    # ".sh": a command running a script of the tree that starts vLLM (`bash generation/register_server.sh`) spells
    # no "vllm" itself
    names = ("vllm", "[inference]", "engine_args", ".sh")
    sources = ("S7", "S17", "S52", "S56", "S105", "S216", "S217", "S400")
    prevents = ("E1",)
    languages = frozenset({"shell", "markdown", "toml", "yaml"})

    bad = (
        Bad("vllm serve Qwen/Qwen2.5-1.5B-Instruct --dtype float16\n", path="serve.sh"),
        Bad("vllm serve Qwen/Qwen2.5-1.5B-Instruct --dtype float16\n", path="serve.sh", target="sm70"),
        Bad("VLLM_ATTENTION_BACKEND=FLASH_ATTN vllm serve m --dtype half\n", path="serve.sh", target="sm75"),
        Bad("export VLLM_ATTENTION_BACKEND=FLASHINFER\npython -m vllm.entrypoints.openai.api_server --model m\n",
            path="serve.sh", target="sm70"),
        Bad("trl vllm-serve --model Qwen/Qwen2.5-7B --tensor_parallel_size 1\n", path="serve.sh"),
        Bad("vllm serve Qwen/Qwen2.5-7B-Instruct --port 8000\n", path="serve.sh", target="sm75",
            frameworks={"vllm": "0.8.5"}),
        Bad("kind: Pod\nspec:\n  containers:\n    - name: vllm\n      image: vllm/vllm-openai:v0.6.3\n"
            "      args: [--model, Qwen/Qwen2.5-7B-Instruct]\n      command: [python3, -m, vllm.entrypoints.openai.api_server]\n",
            path="pod.yaml", target="sm75"),
        Bad("services:\n  vllm:\n    image: vllm/vllm-openai\n    command: [--model, m, --dtype, half]\n",
            path="compose.yaml", target="sm61"),
        # prime-rl's RL config: the [inference] table starts its vLLM server
        Bad('[model]\nname = "m"\n\n[orchestrator]\nbatch_size = 8\n\n[inference]\n', path="rl.toml", target="sm61"),
        # torchforge's GRPO app config: its Generator builds vLLM from `policy.engine_args`, whatever it holds
        Bad("policy:\n  engine_args:\n    model: m\n    enforce_eager: false\ntrainer:\n  model:\n"
            "    hf_assets_path: hf://m\n", path="grpo.yaml", target="sm61"),
    )
    good = (
        Good("vllm serve m --dtype half\n", path="serve.sh", target="sm75"),
        Good("VLLM_ATTENTION_BACKEND=TRITON_ATTN vllm serve m --dtype half\n", path="serve.sh", target="sm75"),
        # named only in a comment, or as a Dockerfile ARG (a build-time variable, not the container's environment)
        Good("# VLLM_ATTENTION_BACKEND=FLASH_ATTN was slower\nvllm serve m --dtype half\n", path="serve.sh",
             target="sm75"),
        Good("FROM vllm/vllm-openai:v0.9.2\nARG VLLM_ATTENTION_BACKEND=FLASH_ATTN\nCMD vllm serve m --dtype half\n",
             path="Dockerfile", target="sm75"),
        Good("VLLM_ATTENTION_BACKEND=FLASH_ATTN vllm serve m\n", path="serve.sh", target="sm86"),
        Good("pip install vllm\n", path="setup.sh", target="sm75"),
        Good("trl vllm-serve --model Qwen/Qwen2.5-7B\n", path="serve.sh", target="sm75"),
        Good("trl sft --model_name_or_path Qwen/Qwen2.5-0.5B --use_vllm false\n", path="train.sh"),
        Good("vllm serve m --dtype half\n", path="serve.sh", target="sm75", frameworks={"vllm": "0.8.5"}),
        Good("vllm serve m\n", path="serve.sh", target="sm75", frameworks={"vllm": "0.9.2"}),
        Good("vllm serve m\n", path="serve.sh", target="sm75"),
        Good("kind: Pod\nspec:\n  containers:\n    - name: vllm\n      image: vllm/vllm-openai:v0.9.2\n"
             "      command: [vllm, serve, m]\n", path="pod.yaml", target="sm75", frameworks={"vllm": "0.8.5"}),
        Good("services:\n  vllm:\n    image: vllm/vllm-openai\n    command: [--model, m, --dtype, half]\n",
             path="compose.yaml", target="sm75"),
        Good("services:\n  web:\n    image: nginx\n    command: [--model, m]\n", path="compose.yaml", target="sm61"),
        Good('[model]\nname = "m"\n\n[orchestrator]\nbatch_size = 8\n\n[inference]\n', path="rl.toml", target="sm75"),
        Good('[model]\nname = "m"\n\n[inference]\n', path="other_tool.toml", target="sm61"),  # not prime-rl's
        Good("policy:\n  engine_args:\n    model: m\ntrainer:\n  model:\n    hf_assets_path: hf://m\n",
             path="grpo.yaml", target="sm75"),
        # a `policy.engine_args` mapping in a YAML file no framework's words claim
        Good("policy:\n  engine_args:\n    model: m\n", path="other_tool.yaml", target="sm61"),
    )

    @classmethod
    def applies_to(cls, target) -> bool:
        return True

    def check_config(self, view, ctx) -> None:
        if view.kind in ("toml", "yaml"):
            self._engine_table(view, ctx)
            return
        if view.kind != "command" or not view.word_spans:
            return
        served = frameworks.engine_command(view.command_words, "vllm") if "vllm" in " ".join(view.command_words) else None
        direct, through_image = vllm_command(view.command_words), _image_server(view)
        if not direct and served is None and not through_image:
            self._called_server(view, ctx)
            return
        cc = self.target.capability
        anchor = view.word_spans[0]
        if not runs("vllm", self.target):
            by = (f"{served[1]['commands'][0]} starts vLLM ({served[0].label} {served[0].version} knowledge: "
                  f"{served[1]['proof'].split(' (')[0]}); ") if served is not None and not direct else ""
            if through_image:
                by = f"the container's arguments run {view.image}'s ENTRYPOINT, vLLM's OpenAI server; "
            ctx.report(anchor, f"{by}{unsupported_message(self.target)}", [None])
            return
        if direct or through_image:
            self._check_dtype(view, ctx, anchor)
        # the environment in force for the command (exported before it, a Dockerfile's ENV, set inline): not an ARG
        # or a comment
        chosen = [s.value.strip().strip("\"'") for s in view.env("VLLM_ATTENTION_BACKEND") if s.value]
        if not chosen:
            return
        entry = vllm.refused("attention_backend", chosen[-1], cc)
        if entry is not None:
            ctx.report(anchor, f"VLLM_ATTENTION_BACKEND={chosen[-1]} needs compute capability "
                               f"{entry['min_capability']}+ in vLLM {vllm.table()['version']} "
                               f"({entry['where']}); {self.target.name} is {self.target.capability_text}: use "
                               f"TRITON_ATTN or leave it unset", [None])

    def _called_server(self, view, ctx) -> None:
        """A command running a shell script of the tree that starts vLLM (`bash generation/register_server.sh`),
        below vLLM's minimum: at the command, naming the line it reaches (the script's own line is reported too)."""
        if runs("vllm", self.target) or not ctx.path:
            return
        script = called_script(view.command_words, ctx.path)
        line = first_command(script, vllm_command) if script else None
        if line is None:
            return
        ctx.record_reads([script])
        shown = os.path.relpath(script, os.path.dirname(os.path.abspath(ctx.path))).replace(os.sep, "/")
        ctx.report(view.word_spans[0], f"this runs {shown}, which starts vLLM ({shown}:{line}); "
                                       f"{unsupported_message(self.target)}", [None])

    def _engine_table(self, view, ctx) -> None:
        """A framework's config whose table starts vLLM (`[[engine]]` `tables`; in YAML a dotted mapping name), below
        vLLM's minimum: at the table."""
        if runs("vllm", self.target):
            return
        starting = [(fw, row, table) for fw, row, table in frameworks.engine_tables("vllm")
                    if table in view.sections and attributed(view, ctx, fw)]
        if not starting:
            return
        # Two frameworks may both claim the file (prime-rl's `[trainer.` marker is in a verifiers vf-rl config's
        # `[trainer.args]`): the message names the one more of whose config markers the file holds.
        fw, row, table = max(starting, key=lambda found: sum(m in ctx.source_text for m in found[0].files))
        # a TOML table names a server process (prime-rl, verifiers); torchforge's YAML mapping is the engine's arguments
        shown, started = (f"[{table}]", "a vLLM server") if view.kind == "toml" else (f"`{table}`", "vLLM")
        ctx.report(view.sections[table], f"{shown} makes {fw.label} start {started} ({fw.label} "
                                         f"{fw.version} knowledge: {row['proof'].split(' (')[0]}); "
                                         f"{unsupported_message(self.target)}", [None])

    def _check_dtype(self, view, ctx, anchor) -> None:
        """A vLLM server (started by name, or by its image's ENTRYPOINT) given no dtype, run by a vLLM that keeps a bf16
        checkpoint in bf16, below the capability it needs."""
        row = vllm.auto_dtype()
        if ctx.target.capability >= versions.capability(row["min_capability"]):
            return
        if any(w == "--dtype" or w.startswith("--dtype=") for w in view.command_words):
            return
        release, how = command_vllm_release(view, ctx)
        if release is None or not vllm.keeps_checkpoint_bf16(release):
            return
        ctx.report(anchor, f"vLLM serves with no --dtype: {how} keeps a bf16 checkpoint in bf16 and refuses it on "
                           f"{ctx.target.name} ({ctx.target.capability_text}) (`{error_text(row['error'])}`, "
                           f"{row['where'].split(';')[0]}); pass --dtype half (or float32 for a model that overflows "
                           f"in fp16)", [None])


def _image_server(view) -> bool:
    """Whether the command is only arguments (its first word an option: no program is named) given to an official
    vLLM image, whose ENTRYPOINT, vLLM's OpenAI server, runs them (a container's `args` without `command`, a compose
    `command` without `entrypoint`, a Dockerfile `CMD` array without `ENTRYPOINT`) [S217]."""
    return bool(view.image and view.command_words and view.command_words[0].startswith("-")
                and vllm.image_entrypoint(view.image))

