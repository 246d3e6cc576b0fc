from __future__ import annotations

import os

from rlcompat.knowledge import versions
from rlcompat.knowledge.environment import environment_facts
from rlcompat.contract import Bad, EnvironmentRule, Good

GPU = '[[gpu]]\nname = "NVIDIA GeForce RTX 4090"\ncapability = "8.9"\ndriver = "{driver}"\n'


def p2p_facts() -> dict:
    return environment_facts()["nccl_p2p"]  # the entry RLC605 reads for launch scripts


class NcclP2pConsumerDriver(EnvironmentRule):
    code = "RLC515"
    name = "nccl-p2p-consumer-driver"
    title = "Several GeForce RTX 40xx GPUs under a driver whose NCCL peer-to-peer hangs"
    what = (
        "Reports two or more visible GPUs whose name contains `RTX 40` under a driver older than 550.40.07 "
        "(rlcompat/knowledge/data/environment.toml `[nccl_p2p]`, the entry the script rule RLC605 reads), unless this process has "
        "NCCL_P2P_DISABLE=1 and NCCL_IB_DISABLE=1 set."
    )
    why = (
        "accelerate applies the same test and refuses multi-GPU runs outside `accelerate launch` without both "
        "variables (`Using RTX 4000 series doesn't support faster communication broadband via P2P or IB. ...`); "
        "plain NCCL hangs at the first collective [S58]."
    )
    fix_safety = "No autofix: upgrade the driver to 550.40.07+, or export NCCL_P2P_DISABLE=1 NCCL_IB_DISABLE=1."
    sources = ("S58",)
    prevents = ("X10",)
    severity = "warning"

    bad = (Bad(GPU.format(driver="535.183.01") * 2, target="sm89", path="env.toml"),)
    good = (
        Good(GPU.format(driver="550.120") * 2, target="sm89", path="env.toml"),
        Good(GPU.format(driver="535.183.01"), target="sm89", path="env.toml"),
        Good('[[gpu]]\nname = "NVIDIA L4"\ncapability = "8.9"\ndriver = "535.183.01"\n' * 2, target="sm89",
             path="env.toml"),
    )

    def check(self, env):
        p2p = p2p_facts()
        cards = [g for g in env.gpus if p2p["gpu_name_contains"] in g.name]
        if len(cards) < 2 or versions.release(cards[0].driver_version) >= versions.release(p2p["driver_fixed"]):
            return []
        if all(os.environ.get(v) == "1" for v in ("NCCL_P2P_DISABLE", "NCCL_IB_DISABLE")):
            return []
        return [self.finding(
            f"{len(cards)} {cards[0].name} GPUs under driver {cards[0].driver_version}: NCCL peer-to-peer between "
            f"GeForce RTX 40xx cards hangs before driver {p2p['driver_fixed']}", error=p2p["error"],
            remedy=f"upgrade the driver to {p2p['driver_fixed']} or newer, or export NCCL_P2P_DISABLE=1 "
                   f"NCCL_IB_DISABLE=1 (accelerate launch sets both)")]
