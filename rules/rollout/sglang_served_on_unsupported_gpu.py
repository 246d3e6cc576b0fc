from __future__ import annotations

from rlcompat.analysis import command_framework
from rlcompat.analysis.confighelpers import sglang_server
from rlcompat.analysis.knowledge_keys import attributed, chosen_version
from rlcompat.knowledge import frameworks
from rlcompat.knowledge.capabilities import min_capability, runs
from rlcompat.contract import Bad, ConfigRule, Good


def framework_engine(view, ctx):
    """(framework, row) when the command starts a training entry of a framework that rolls out with SGLang engines
    itself (slime's and miles' `train.py`: SGLang is their only rollout engine) and passes none of the row's `unless`
    flags; None otherwise."""
    for fw, row in frameworks.engine_commands(view.command_words, "sglang"):
        if chosen_version(view, ctx, fw.name)[0] != fw.version:
            continue  # what the row says is known of that release only
        if attributed(view, ctx, fw) or command_framework.own_entry(view, ctx, fw.name):
            return fw, row
    return None


class SglangServedOnUnsupportedGpu(ConfigRule):
    code = "RLC417"
    name = "sglang-served-on-unsupported-gpu"
    title = "SGLang server launched on a GPU SGLang refuses"
    what = (
        "Finds `python -m sglang.launch_server` (and `sglang_router.launch_server`) commands in scripts, job files "
        "and Makefile recipes, wherever they are wrapped (`srun`, `nohup`, `&`, `bash -c`, `sbatch --wrap`), and "
        "the training commands of frameworks that start SGLang engines themselves (an `[[engine]]` row of "
        "rlcompat/knowledge/data/frameworks/: slime's and miles' `python3 train.py`, in a script or a Python "
        "launcher), and reports them below SGLang's minimum compute capability "
        "(rlcompat/knowledge/data/capabilities.toml `sglang`, the row RLC401 reads for `rollout.name=sglang`)."
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
    # the `commands` of the `engine = "sglang"` rows of the framework knowledge too (tests/test_slime_siblings.py holds
    # every such row to these words; the catalog loads without reading the knowledge)
    names = ("sglang", "train.py", "train_async.py")
    sources = ("S35",)
    prevents = ("E19",)
    languages = frozenset({"shell", "markdown"})

    bad = (
        Bad("python -m sglang.launch_server --model-path Qwen/Qwen2.5-7B --port 30000 &\n", path="serve.sh"),
        Bad("srun --nodes=1 python3 -m sglang.launch_server --model-path m\n", path="serve.slurm", target="sm70"),
    )
    good = (
        Good("python -m sglang.launch_server --model-path m --dtype half\n", path="serve.sh", target="sm75"),
        # a training command of a tree that is no slime or miles checkout: its own program, its own engine (a slime
        # or miles checkout's: tests/test_slime_siblings.py)
        Good("python3 train.py --lr 1e-5\n", path="run.sh"),

        Good("pip install 'sglang[all]'\n", path="setup.sh"),
        Good("python -m sglang.bench_serving --backend sglang\n", path="bench.sh"),
    )

    @classmethod
    def applies_to(cls, target) -> bool:
        return not runs("sglang", target)

    def check_config(self, view, ctx) -> None:
        if view.kind != "command" or not view.word_spans:
            return
        refuses = (f"SGLang refuses compute capability < {min_capability('sglang').text} (`SGLang only supports sm75 "
                   f"and above.`) and {self.target.name} is {self.target.capability_text}")
        if sglang_server(view.command_words):
            ctx.report(view.word_spans[0], f"{refuses}: serve with transformers, or run the server on a 7.5+ card",
                       [None])
            return
        found = framework_engine(view, ctx)
        if found is not None:
            fw, row = found
            ctx.report(view.word_spans[0], f"{fw.label} rolls out with SGLang engines, its only rollout engine "
                                           f"({fw.label} knowledge: {row['proof'].split(' (')[0]}): {refuses}; no "
                                           f"flag of {fw.label} changes the engine: train on a 7.5+ card", [None])
