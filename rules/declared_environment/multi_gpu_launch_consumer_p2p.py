from __future__ import annotations

import re

from rlcompat.knowledge.environment import environment_facts
from rlcompat.contract import Bad, ConfigRule, Edit, FixSafety, Good

VARIABLES = ("NCCL_P2P_DISABLE", "NCCL_IB_DISABLE")
# Launchers and the flag that says how many processes (GPUs) they start on this node.
PROCESS_FLAGS = {"torchrun": ("--nproc_per_node", "--nproc-per-node"),
                 "torch.distributed.run": ("--nproc_per_node", "--nproc-per-node"),
                 "torch.distributed.launch": ("--nproc_per_node", "--nproc-per-node"),
                 "deepspeed": ("--num_gpus", "--num-gpus")}


def launcher(words: tuple[str, ...]) -> tuple[str, int] | None:
    """(launcher, index of its word) for `torchrun ...`, `python -m torch.distributed.run ...`, `deepspeed ...`."""
    for i, w in enumerate(words):
        base = w.rsplit("/", 1)[-1]
        if base in ("torchrun", "deepspeed"):
            return base, i
        if w == "-m" and i + 1 < len(words) and words[i + 1] in PROCESS_FLAGS:
            return words[i + 1], i + 1
    return None


def processes(words: tuple[str, ...], flags: tuple[str, ...]) -> int | None:
    for i, w in enumerate(words):
        name, eq, inline = w.partition("=")
        if name in flags:
            value = inline if eq else (words[i + 1] if i + 1 < len(words) else "")
            return int(value) if value.isdigit() else None
    return None


class MultiGpuLaunchConsumerP2p(ConfigRule):
    code = "RLC605"
    name = "multi-gpu-launch-consumer-p2p"
    title = "Multi-GPU launch on GeForce RTX 40xx without NCCL_P2P_DISABLE=1 NCCL_IB_DISABLE=1"
    what = (
        "On a GeForce RTX 40xx target (`--target rtx4090`, or `auto` on such a card: targets.toml `[[product]]`), "
        "finds `torchrun --nproc_per_node N`, `python -m torch.distributed.run` and `deepspeed --num_gpus N` with "
        "N > 1 in scripts that set neither variable before the launch (exported earlier or on the command). "
        "`accelerate launch` is left alone: it sets both itself [S58]."
    )
    why = (
        "Peer-to-peer and InfiniBand transfers between GeForce RTX 40xx cards hang or fail under drivers before "
        "550.40.07; accelerate (and so TRL and the HF Trainer under torchrun or deepspeed) refuses to start: "
        "`Using RTX 4000 series doesn't support faster communication broadband via P2P or IB. Please set "
        "NCCL_P2P_DISABLE=\"1\" and NCCL_IB_DISABLE=\"1\" ...` [S58]. The driver is not known from a script, so "
        "this is a warning."
    )
    fix_safety = (
        "The fix puts the missing variables before the launcher (`NCCL_P2P_DISABLE=1 NCCL_IB_DISABLE=1 torchrun "
        "...`): NCCL then goes through host memory, slower but correct. Safe."
    )
    names = ("torchrun", "torch.distributed", "deepspeed")
    sources = ("S58",)
    severity = "warning"
    prevents = ("X10",)
    languages = frozenset({"shell", "markdown"})

    bad = (
        Bad("torchrun --nproc_per_node 2 train.py --bf16\n", path="run.sh", target="rtx4090",
            fixed="NCCL_P2P_DISABLE=1 NCCL_IB_DISABLE=1 torchrun --nproc_per_node 2 train.py --bf16\n"),
        Bad("export NCCL_P2P_DISABLE=1\ndeepspeed --num_gpus=4 train.py --deepspeed ds.json\n", path="run.sh",
            target="rtx4090",
            fixed="export NCCL_P2P_DISABLE=1\nNCCL_IB_DISABLE=1 deepspeed --num_gpus=4 train.py --deepspeed ds.json\n"),
        Bad("CUDA_VISIBLE_DEVICES=0,1 python -m torch.distributed.run --nproc-per-node=2 sft.py\n", path="run.sh",
            target="rtx4090", fixed="CUDA_VISIBLE_DEVICES=0,1 NCCL_P2P_DISABLE=1 NCCL_IB_DISABLE=1 python -m "
                                    "torch.distributed.run --nproc-per-node=2 sft.py\n"),
    )
    good = (
        Good("torchrun --nproc_per_node 2 train.py\n", path="run.sh", target="sm89"),
        Good("torchrun --nproc_per_node 1 train.py\n", path="run.sh", target="rtx4090"),
        Good("accelerate launch --num_processes 2 train.py\n", path="run.sh", target="rtx4090"),
        Good("export NCCL_P2P_DISABLE=1 NCCL_IB_DISABLE=1\ntorchrun --nproc_per_node 8 train.py\n", path="run.sh",
             target="rtx4090"),
    )

    @classmethod
    def applies_to(cls, target) -> bool:
        return target.nccl_p2p_broken

    def check_config(self, view, ctx) -> None:
        if view.kind != "command" or len(view.word_spans) != len(view.command_words):
            return
        found = launcher(view.command_words)
        if found is None:
            return
        name, at = found
        count = processes(view.command_words[at:], PROCESS_FLAGS[name])
        if count is None or count < 2:
            return
        before = ctx.source_text[:view.word_spans[at].start]
        missing = [v for v in VARIABLES if not re.search(rf"\b{v}=[\"']?1\b", before)]
        if not missing:
            return
        # The variables go right before the program word, after any `VAR=...` the command already has.
        program = view.word_spans[0] if name in ("torchrun", "deepspeed") or at < 2 else view.word_spans[at - 2]
        prefix = " ".join(f"{v}=1" for v in missing) + " "
        fixed = environment_facts()["nccl_p2p"]["driver_fixed"]  # the entry doctor's RLC515 reads
        ctx.report(view.word_spans[at], f"{count} processes on GeForce RTX 40xx cards without "
                                        f"{' and '.join(f'{v}=1' for v in missing)}: under drivers before {fixed} "
                                        f"NCCL peer-to-peer hangs and accelerate refuses to start",
                   [Edit(program.start, program.start, prefix)], FixSafety.SAFE, "disable NCCL P2P and IB")
