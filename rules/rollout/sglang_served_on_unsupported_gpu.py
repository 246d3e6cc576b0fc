from __future__ import annotations

from rlcompat.knowledge.capabilities import min_capability, runs
from rlcompat.contract import Bad, ConfigRule, Good

SGLANG_SERVERS = ("sglang.launch_server", "sglang_router.launch_server")  # `python -m MODULE` starts a server


def sglang_server(words: tuple[str, ...]) -> bool:
    """`python -m sglang.launch_server ...` (and SGLang's router, which starts the same server per worker)."""
    return any(w == "-m" and words[i + 1] in SGLANG_SERVERS for i, w in enumerate(words[:-1]))


class SglangServedOnUnsupportedGpu(ConfigRule):
    code = "RLC417"
    name = "sglang-served-on-unsupported-gpu"
    title = "SGLang server launched on a GPU SGLang refuses"
    what = (
        "Finds `python -m sglang.launch_server` (and `sglang_router.launch_server`) commands in scripts, job files "
        "and Makefile recipes, wherever they are wrapped (`srun`, `nohup`, `&`, `bash -c`, `sbatch --wrap`), and "
        "reports them below SGLang's minimum compute capability (rlcompat/knowledge/data/capabilities.toml "
        "`sglang`, the row RLC401 reads for `rollout.name=sglang`)."
    )
    why = (
        f"SGLang's model runner raises `SGLang only supports sm75 and above.` below "
        f"{min_capability('sglang').text} [S35]: the server stops while loading the model, after the job has "
        "waited for its allocation."
    )
    fix_safety = (
        "No autofix: the server has to run on another engine (transformers generation, or vLLM where it runs on the "
        "card) or on a card of compute capability 7.5+."
    )
    names = ("sglang",)
    sources = ("S35",)
    prevents = ("E19",)
    languages = frozenset({"shell", "markdown"})

    bad = (
        Bad("python -m sglang.launch_server --model-path Qwen/Qwen2.5-7B --port 30000 &\n", path="serve.sh"),
        Bad("srun --nodes=1 python3 -m sglang.launch_server --model-path m\n", path="serve.slurm", target="sm70"),
    )
    good = (
        Good("python -m sglang.launch_server --model-path m --dtype half\n", path="serve.sh", target="sm75"),
        Good("pip install 'sglang[all]'\n", path="setup.sh"),
        Good("python -m sglang.bench_serving --backend sglang\n", path="bench.sh"),
    )

    @classmethod
    def applies_to(cls, target) -> bool:
        return not runs("sglang", target)

    def check_config(self, view, ctx) -> None:
        if view.kind != "command" or not view.word_spans or not sglang_server(view.command_words):
            return
        ctx.report(view.word_spans[0],
                   f"SGLang refuses compute capability < {min_capability('sglang').text} (`SGLang only supports "
                   f"sm75 and above.`) and {self.target.name} is {self.target.capability_text}: serve with "
                   "transformers, or run the server on a 7.5+ card", [None])
