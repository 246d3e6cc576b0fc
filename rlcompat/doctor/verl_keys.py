"""The verl overrides doctor recommends, named from the knowledge `scan` reads (rlcompat/knowledge/data/verl/<version>.toml through
rlcompat.knowledge.verl_config, chosen for the installed verl as scan chooses it for a tree): every key doctor names is a
live `[[setting]]` of that version, so doctor never recommends a key scan calls dead (RLC106). Without an installed
verl (version unknown) or for a release older than every rule set, doctor names no key rather than guess."""

from __future__ import annotations

from dataclasses import dataclass, field

from rlcompat.knowledge.verl_config import Knowledge

# The compute dtypes a plan sets where the target lacks bf16: (setting id, role, precision role of the value).
DTYPE_SETTINGS = (("param-dtype", "actor", "weights"), ("param-dtype", "ref", "weights"),
                  ("param-dtype", "critic", "weights"), ("rollout-dtype", "actor", "rollout"))


@dataclass
class Named:
    overrides: list[str] = field(default_factory=list)  # "key=value", with Hydra's `++` where the key must be added
    source: str = ""  # "verl 0.9.1 knowledge (rlcompat/knowledge/data/verl/0.9.1.toml)"
    problem: str = ""  # why no key is named
    unnamed: list[str] = field(default_factory=list)  # setting ids the version's knowledge has no key for


def name(knowledge: Knowledge | None, why: str, settings: list[tuple[str, str, str]], target, algo: str) -> Named:
    """`settings` ((id, role, value) from memory.Plan.settings) plus the compute dtypes the target needs, as
    overrides of `knowledge`'s keys."""
    if knowledge is None:
        return Named(problem=f"{why}: no verl keys are named (install verl, then run doctor again)")
    from rlcompat.analysis.confighelpers import dtype_replacement, is_bf16

    dtypes = []
    if not target.bf16_native:
        for setting_id, role, precision_role in DTYPE_SETTINGS:
            known = knowledge.setting(setting_id, role)
            if known is None or (role == "critic" and algo != "ppo") or not is_bf16(known.default):
                continue
            dtypes.append((setting_id, role, dtype_replacement(target, known.default, precision_role)[0]))
    wanted = settings[:1] + dtypes + settings[1:]
    out = Named(source=why)
    for setting_id, role, value in wanted:
        known = knowledge.setting(setting_id, role)
        if known is None or known.key in knowledge.dead:
            out.unnamed.append(f"{setting_id} ({role})")
            continue
        out.overrides.append(f"{known.add_prefix}{known.key}={value}")
    return out
