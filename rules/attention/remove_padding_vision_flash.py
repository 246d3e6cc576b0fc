from __future__ import annotations

import re

from rlcompat.analysis import confighelpers as h
from rlcompat.analysis.packages import package_file
from rlcompat.analysis.verlengines import role_built
from rlcompat.knowledge import verl_packing, versions
from rlcompat.contract import Bad, ConfigRule, FixSafety, Good, VERL_091

CMD = "python3 -m verl.trainer.main_ppo \\\n    actor_rollout_ref.model.path={model} \\\n    {extra}trainer.n_gpus_per_node=1\n"
KEY = "actor_rollout_ref.model.use_remove_padding"
OLD = CMD.format(model="Qwen/Qwen2.5-0.5B-Instruct", extra=f"{KEY}=True \\\n    ")
SP = "actor_rollout_ref.actor.ulysses_sequence_parallel_size"
CRITIC = "critic.model.use_remove_padding"
RM = "reward_model.model.use_remove_padding"


def _above_one(value: str | None) -> bool:
    """Whether a sequence-parallel size is (or, written as a variable, may be) above 1."""
    if value is None:
        return True  # computed or from a variable the script does not set: not known to be 1
    text = value.strip().strip("'\"")
    try:
        return int(text) > 1
    except ValueError:
        return bool(text)  # `$SP`: not known to be 1


def _uncapped(spec: str) -> bool:
    """Whether a specifier only bounds from below (`""`, `>=4.40.0`): pip installs the newest release it allows."""
    clauses = [c.strip() for c in spec.split(",") if c.strip()]
    return all(re.match(r"^(>=|>|!=)\s*[0-9]", c) for c in clauses)


class RemovePaddingVisionFlash(ConfigRule):
    code = "RLC206"
    name = "remove-padding-vision-flash"
    title = "`use_remove_padding` where verl's packed attention is FlashAttention-only (vision models; every model in verl 0.2-0.3)"
    what = (
        "Finds verl launch scripts and configs training a Qwen2-VL, Qwen2.5-VL, GLM-4V or Kimi-VL model (by its path) with "
        "`actor_rollout_ref.model.use_remove_padding` true, set or left at verl's default (true) [S51]. In a verl 0.2.x "
        "or 0.3.x tree (a fork's version file or a pin; rlcompat/knowledge/data/verl_packing.toml) it also finds "
        "`use_remove_padding` set true for the actor, critic (where the run trains one: GAE) or reward model (unless "
        "`reward_model.enable` is set false) whatever the model, unless transformers "
        "is known to be 4.54.0 or newer (a pin of such a release, or a requirement without an upper bound: pip "
        "installs the newest release, rlcompat/knowledge/data/verl_packing.toml `transformers_newest`) and no Ulysses "
        "sequence parallelism is set. Text-only models of newer verl "
        "releases are not reported: their remove-padding path does not need flash-attn."
    )
    why = (
        "For these model types verl replaces the attention forward with one that calls FlashAttention's varlen kernel "
        "when remove-padding is on, and FlashAttention-2 needs compute capability 8.0 [S10]. verl 0.2 and 0.3 pack "
        "every model's batch into one row (`attention_mask=None`, position ids restarting per sequence) and load it "
        "with FlashAttention-2, whose varlen path keeps the sequences apart [S148]; with that attention replaced "
        "(sdpa or eager, as on these GPUs) transformers before 4.54.0 masks the row as one causal sequence, so each "
        "sequence silently attends to the ones packed before it, and Ulysses patches only FlashAttention's forward "
        "[S149]."
    )
    fix_safety = ("`use_remove_padding=False` trains on padded batches: the same result with more compute, safe. Where "
                  "Ulysses sequence parallelism is set above 1 verl asserts remove-padding, so no fix is written there.")
    names = ("use_remove_padding",)
    verl_commands = True  # a verl launch command that leaves its key at the bad default
    sources = ("S10", "S51", "S148", "S149", "S480")

    bad = (
        Bad(CMD.format(model="Qwen/Qwen2.5-VL-3B-Instruct", extra=""), path="run.sh",
            fixed=CMD.format(model="Qwen/Qwen2.5-VL-3B-Instruct", extra="").replace("=1\n", f"=1 \\\n    {KEY}=False\n"),
            frameworks=VERL_091),
        Bad(CMD.format(model="Qwen/Qwen2-VL-7B", extra=f"{KEY}=True \\\n    "), path="run.sh",
            fixed=CMD.format(model="Qwen/Qwen2-VL-7B", extra=f"{KEY}=False \\\n    ")),
        # verl 0.2/0.3: any model's packed row is kept apart by FlashAttention-2 only.
        Bad(OLD, path="run.sh", target="sm75", fixed=OLD.replace(f"{KEY}=True", f"{KEY}=False"),
            frameworks={"verl": "0.3.0.post1"}),
        Bad(OLD, path="run.sh", fixed=OLD.replace(f"{KEY}=True", f"{KEY}=False"),
            frameworks={"verl": "0.2.0.post2", "transformers": "4.47.1"}),
        Bad("actor_rollout_ref:\n  model:\n    use_remove_padding: True\n", path="verl/trainer/config/ppo_trainer.yaml",
            fixed="actor_rollout_ref:\n  model:\n    use_remove_padding: False\n", frameworks={"verl": "0.2"}),
        Bad(OLD.replace("Qwen2.5-0.5B-Instruct", "Qwen2.5-VL-3B-Instruct"), path="run.sh",
            fixed=OLD.replace("Qwen2.5-0.5B-Instruct", "Qwen2.5-VL-3B-Instruct").replace(f"{KEY}=True", f"{KEY}=False"),
            frameworks={"verl": "0.3.0.post1", "transformers": "4.55.0"}),
        # GAE builds the critic (the estimator set, or left at verl's default gae).
        Bad(CMD.format(model="Qwen/Qwen2.5-0.5B-Instruct", extra=f"algorithm.adv_estimator=gae \\\n    {CRITIC}=True \\\n    "),
            path="run.sh", fixed=CMD.format(model="Qwen/Qwen2.5-0.5B-Instruct",
                                            extra=f"algorithm.adv_estimator=gae \\\n    {CRITIC}=False \\\n    "),
            frameworks={"verl": "0.3.0.post1"}),
        Bad(CMD.format(model="Qwen/Qwen2.5-0.5B-Instruct", extra=f"reward_model.enable=True \\\n    {RM}=True \\\n    "),
            path="run.sh", fixed=CMD.format(model="Qwen/Qwen2.5-0.5B-Instruct",
                                            extra=f"reward_model.enable=True \\\n    {RM}=False \\\n    "),
            frameworks={"verl": "0.2.0.post2"}),
        # Ulysses asserts remove-padding: reported, no fix.
        Bad(OLD.replace("trainer.n_gpus", f"{SP}=2 \\\n    trainer.n_gpus"), path="run.sh",
            frameworks={"verl": "0.3.0.post1", "transformers": "4.55.0"}),
    )
    good = (
        Good(CMD.format(model="Qwen/Qwen2.5-0.5B-Instruct", extra=""), path="run.sh"),
        Good(CMD.format(model="Qwen/Qwen2.5-VL-3B-Instruct", extra=""), path="run.sh", target="sm80"),
        Good("use_remove_padding: True\n", path="verl/trainer/config/model/hf_model.yaml"),
        Good(OLD, path="run.sh", target="sm80", frameworks={"verl": "0.3.0.post1"}),
        Good(OLD, path="run.sh", frameworks={"verl": "0.3.0.post1", "transformers": "4.55.0"}),
        # ... but a vision model's remove-padding patch is FlashAttention's whatever transformers does.
        Good(OLD.replace("Qwen2.5-0.5B-Instruct", "Qwen2.5-VL-3B-Instruct"), path="run.sh", target="sm80",
             frameworks={"verl": "0.3.0.post1", "transformers": "4.55.0"}),
        # ... but only for a model the run builds: no critic without GAE, no reward model when it is disabled [S480].
        Good(CMD.format(model="Qwen/Qwen2.5-0.5B-Instruct", extra=f"algorithm.adv_estimator=grpo \\\n    {CRITIC}=True \\\n    "),
             path="run.sh", frameworks={"verl": "0.3.0.post1"}),
        Good(CMD.format(model="Qwen/Qwen2.5-0.5B-Instruct", extra=f"reward_model.enable=False \\\n    {RM}=True \\\n    "),
             path="run.sh", frameworks={"verl": "0.2.0.post2"}),
        Good("critic:\n  model:\n    use_remove_padding: True\nalgorithm:\n  adv_estimator: grpo\n",
             path="verl/trainer/config/ppo_trainer.yaml", frameworks={"verl": "0.2"}),
        Good(OLD, path="run.sh", frameworks={"verl": "0.4.1"}),
        Good(OLD, path="run.sh"),  # verl's release unknown: nothing claimed for a text model
    )

    @classmethod
    def applies_to(cls, target) -> bool:
        return not target.flash_attn_2

    def check_config(self, view, ctx) -> None:
        if self._old_verl(view, ctx):
            return
        model = view.get("actor_rollout_ref.model.path")
        if model is None or model.value is None:
            return
        name = model.value.lower()
        if not any(p in name for p in ctx.verl.remove_padding_patterns):
            return
        target = ctx.target

        proof = ctx.verl.remove_padding_proof.split(";")[0]
        proof = proof if ctx.verl.version_known else ctx.verl.cite(proof)  # no file:line of another release

        def describe(key: str, value: str, origin: str) -> str:
            return (f"{key} is {value}{origin} for {model.value}: verl then patches its attention with FlashAttention's "
                    f"varlen kernel ({proof}), which needs compute capability 8.0+; "
                    f"{target.name} is {target.capability_text}: set it to False")

        h.set_or_add(view, ctx, "remove-padding", lambda v: v.strip().lower() in h.TRUE_WORDS,
                     lambda v: (False, FixSafety.SAFE), describe, roles=("actor",))

    def _old_verl(self, view, ctx) -> bool:
        """verl 0.2/0.3 (and forks carrying 0.2's path): every remove-padding switch set true is judged here. True
        where that settles the view; False where the release is another, or where transformers keeps text models'
        packed rows apart, so the vision-model check still runs."""
        verl = ctx.framework("verl") if ctx.framework is not None else None
        version = verl.version if verl is not None and verl.how != "declared" else None
        row = verl_packing.old_packing(
            version, lambda rel: package_file(ctx.path, verl, rel, ctx.record_reads) if verl.how == "fork" else None)
        if row is None:
            return False
        declared = ctx.framework("transformers") if ctx.framework is not None else None
        transformers = declared.release if declared is not None else None
        since = verl_packing.packed_masks_from()
        # a critic or reward model the run never builds (grpo; reward_model.enable false) never packs a batch
        ulysses = [s for k in row.ulysses if (s := view.get(k)) is not None and _above_one(s.value)
                   and role_built(view, k)]
        newest = (declared is not None and declared.how == "declared" and _uncapped(declared.spec)
                  and versions.release(verl_packing.transformers_newest()) >= versions.release(since))
        apart = newest or bool(transformers) and versions.release(transformers) >= versions.release(since)
        if apart and not ulysses:
            # text models are kept apart: by the release itself, or by the newest one, which a declaration without
            # an upper bound installs; a vision model's patched attention is still judged below
            return False
        target = ctx.target
        if apart:
            masks = ""
        elif transformers:
            masks = f"transformers {transformers}"
        elif declared is not None and declared.how == "declared" and declared.spec:
            masks = f"transformers before {since} (this tree declares transformers{declared.spec})"
        else:
            masks = f"transformers before {since} (no exact transformers release is known for this tree)"
        cited = row.proof.split(";")[0]
        if verl.how == "fork" and row.fork_code:
            cited = f"this fork's {row.fork_code} carries verl 0.2's remove-padding; {cited}"

        who = f"a verl fork (version file {version})" if verl.how == "fork" else f"verl {version}"

        def message(s) -> str:
            head = (f"{view.full_key(s)} is true in {who}: it packs the batch into one row that only "
                    f"FlashAttention-2's varlen path keeps apart ({cited}); {target.name} ({target.capability_text}) "
                    "has no FlashAttention-2" + (f", and with sdpa or eager {masks} masks the row as one sequence, so "
                                                 "packed sequences silently attend to each other" if masks else ""))
            if ulysses:
                size = ulysses[0].value if ulysses[0].value is not None else "a value not known to be 1"
                return (f"{head}; Ulysses ({ulysses[0].key}: {size}) patches only FlashAttention and "
                        "verl asserts remove-padding with it: set it to 1 and this to False")
            return f"{head}: set it to False"

        settings = [s for k in row.keys if (s := view.get(k)) is not None and role_built(view, k)]
        if ulysses:
            for s in settings:
                if s.as_bool() is True:
                    ctx.report(s.key_span, message(s))
            return True
        h.turn_off(settings, ctx, message, message)
        return True
