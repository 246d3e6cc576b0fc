from __future__ import annotations


from rlcompat.knowledge import hf_rollout
from rlcompat.knowledge import precision, vllm_pascal
from rlcompat.knowledge.capabilities import last_release_that_runs, min_capability, runs
from rlcompat.analysis import entry_workers, fork_rollouts
from rlcompat.analysis.packages import package_dir
from rlcompat.analysis.verlengines import in_its_config
from rlcompat.contract import Bad, ConfigRule, FixSafety, Good, VERL_091
from rlcompat.rules.rollout.helpers import unsupported_reason

CMD = "python3 -m verl.trainer.main_ppo \\\n    actor_rollout_ref.rollout.name={name} \\\n    trainer.n_gpus_per_node=1\n"
REWARD_CMD = ("python3 -m verl.trainer.main_ppo \\\n    actor_rollout_ref.rollout.name={actor} \\\n"
              "    reward_model.rollout.name={reward} \\\n    trainer.n_gpus_per_node=1\n")


HF_ROLLOUT = hf_rollout.NAME


def hf_rollout_available() -> bool:
    """rlcompat's `hf` rollout can be selected (rlcompat/knowledge/hf_rollout.py: entry point metadata, nothing imported)."""
    return hf_rollout.installed()


def engine_runs(engine: str, target) -> tuple[bool, str]:
    """Whether the engine runs on `target` (rlcompat/knowledge/hf_rollout.py, which doctor and matrix ask too), and why not."""
    reasons = {
        "vllm": lambda: unsupported_reason(target),
        "sglang": lambda: (f"SGLang refuses compute capability < {min_capability('sglang').text} "
                           "(`SGLang only supports sm75 and above.`)"),
        "trtllm": lambda: f"TensorRT-LLM supports Ampere ({min_capability('trtllm').text}) and newer",
    }
    if hf_rollout.engine_runs_on(engine, target):
        return True, ""
    return False, reasons.get(engine, lambda: "")()


def pascal_advice(verl, target, key: str) -> str | None:
    """vllm-pascal, where the scanned verl release rolls out with a published build on this card
    (rlcompat/knowledge/vllm_pascal.py); None for an unknown release or fork, and wherever no build fits."""
    if not verl.version_known:
        return None
    dtype_key = key.rsplit(".", 1)[0] + ".dtype"  # rollout.name's sibling: actor's or reward model's rollout
    return vllm_pascal.advice(verl.version, target, precision.dtype_for(target, "rollout"), dtype_key)


def _with_pascal(advice: str, engine: str, key: str, pascal: str | None) -> str:
    if pascal is None:
        return advice
    switch = "" if engine == "vllm" else f" ({key}=vllm)"
    return f"{advice}; or roll out with vLLM{switch}: {pascal}"


def _set_true(setting) -> bool:
    """The command sets the key true (a default the command leaves is not known here: no claim)."""
    return setting is not None and (setting.value or "").lower() in ("true", "1")


def _named_at(setting):
    """Where the engine is named: the value's own text where a shell variable set earlier writes it
    (`ROLLOUT_NAME=vllm_with_tool`, passed as `rollout.name=${ROLLOUT_NAME}`), the place to change it; else the key."""
    return setting.value_span if setting.via and setting.value_span is not None else setting.key_span


class RolloutEngineUnsupported(ConfigRule):
    code = "RLC401"
    name = "rollout-engine-unsupported"
    title = "verl's rollout engine cannot run on the target GPU"
    what = (
        "Reports `actor_rollout_ref.rollout.name` (YAML or Hydra override) when the engine it names does not run on the "
        "target, and says which engines the scanned verl version registers that do. verl 0.9.1 registers only vllm, "
        "sglang and trtllm [S51]. In a verl fork, a rollout name of the fork's own that its worker code dispatches "
        "(`rollout.name == 'vllm_with_tool'`) is judged as the engine the class it builds imports (vLLM), read from "
        "the fork's files. A name a shell variable holds is reported where the variable is set. A value that makes "
        "the command's own entry module build a worker of the tree's that runs an engine (General-Reasoner's "
        "`reward_model.strategy=verifier` picks its vLLM verifier, `main_ppo.py:143-144`) is reported there [S561]."
    )
    why = (
        f"{min_capability('vllm').by_release()} [S7]; SGLang raises `SGLang only supports sm75 and "
        "above.` [S35]; TensorRT-LLM supports Ampere and newer [S53]. Where none runs, no configuration change helps: "
        "the rollout needs other hardware or another verl. On sm60/sm61 a community build, vllm-pascal, runs vLLM's "
        "V0 engine [S95][S96]; vLLM runs V1 below 8.0 only from 0.10.2, which no such build reaches [S97], so it "
        f"serves only the verl releases whose default rollout builds `vllm.LLM` ({', '.join(vllm_pascal.served_releases())}) "
        "[S98]: the message names the build for those, and nowhere else."
    )
    fix_safety = (
        "Unsafe fix, only where no engine verl registers runs on the target and rlcompat's `hf` rollout is installed "
        "(rlcompat's `verl` extra, found through verl's `verl.plugins` entry point) or asked for "
        "(RLCOMPAT_HF_ROLLOUT=1): `rollout.name=hf` generates with plain transformers. Same algorithm, same "
        "samples for the same weights, but slower than vLLM (no paged KV cache). "
        "Elsewhere no autofix: switching engines changes the whole rollout."
    )
    names = ("rollout",)
    sources = ("S7", "S35", "S51", "S53", "S95", "S96", "S97", "S98", "S561")

    bad = (
        Bad(CMD.format(name="vllm"), path="run.sh", unsafe=True, fixed=CMD.format(name="hf"), frameworks=VERL_091),
        Bad("reward_model:\n  rollout:\n    name: sglang\n", path="ppo.yaml", target="sm60", unsafe=True,
            fixed="reward_model:\n  rollout:\n    name: hf\n", frameworks=VERL_091),
        Bad(CMD.format(name="sglang"), path="run.sh", target="sm70", unsafe=True, fixed=CMD.format(name="hf"),
            frameworks=VERL_091),
        Bad(CMD.format(name="trtllm"), path="run.sh", target="sm75"),
        Bad("actor_rollout_ref:\n  rollout:\n    name: vllm\n", path="ppo.yaml", unsafe=True,
            fixed="actor_rollout_ref:\n  rollout:\n    name: hf\n", frameworks=VERL_091),
        Bad(REWARD_CMD.format(actor="sglang", reward="vllm"), path="run.sh", target="sm70", unsafe=True,
            fixed=REWARD_CMD.format(actor="hf", reward="hf"), frameworks=VERL_091),
        # the engine held in a variable: reported, and rewritten, where the variable is set
        Bad("ENGINE=vllm\n" + CMD.format(name="$ENGINE"), path="run.sh", unsafe=True,
            fixed="ENGINE=hf\n" + CMD.format(name="$ENGINE"), frameworks=VERL_091),
        Bad(CMD.format(name="vllm"), path="run.sh", frameworks={"verl": "0.6.1"}),  # names vllm-pascal 0.9.1
        Bad(CMD.format(name="vllm"), path="run.sh", target="sm52", frameworks={"verl": "0.6.1"}),  # no build for sm52
    )
    good = (
        Good(CMD.format(name="vllm"), path="run.sh", target="sm75"),
        Good(CMD.format(name="vllm"), path="run.sh", target="sm70", frameworks={"verl": "0.6.1"}),  # pins vllm<=0.11.0
        Good(CMD.format(name="hf"), path="run.sh"),
        Good("name: ???\n", path="verl/trainer/config/rollout/rollout.yaml"),
        Good("name: vllm\n", path="docker-compose.yaml"),
    )

    @classmethod
    def applies_to(cls, target) -> bool:
        return not runs("trtllm", target)

    @staticmethod
    def _declared_vllm_runs(verl, target) -> bool:
        """The release pins a vLLM no newer than the last one built for the card (verl 0.6.1's vllm<=0.11.0 on a
        V100, whose kernels vLLM dropped in 0.20.0): the rollout it installs runs there."""
        last = last_release_that_runs("vllm", target)
        return bool(verl.version_known and last and vllm_pascal.declared_vllm_at_most(verl.version, last))

    def check_config(self, view, ctx) -> None:
        # The actor's rollout and, where the version has one, the reward model's (reward_model.rollout.name).
        keys = [k.key for k in ctx.verl.by_id("rollout-name") if in_its_config(view, ctx, k)] or ["actor_rollout_ref.rollout.name"]
        for key in keys:
            setting = view.get(key)
            if setting is not None and setting.value and setting.value not in ("???", "null"):
                self._check(setting, key, ctx)
        if view.kind == "command":
            self._check_entry_workers(view, ctx)

    def _check(self, setting, key, ctx) -> None:
        engine, target, verl = setting.value, ctx.target, ctx.verl
        registered = ", ".join(verl.rollout_engines)
        at = _named_at(setting)
        if engine == HF_ROLLOUT:
            return  # rlcompat's own plugin: registered on `import verl` where it is installed
        if engine not in verl.rollout_engines:
            if not verl.version_known:
                self._check_fork_name(setting, key, ctx)  # a name of the fork's own, where its code says which engine
                return
            ctx.report(at, f"rollout engine {engine!r} is not registered in {verl.label} "
                           f"(only {registered}: {verl.rollout_engines_proof})")
            return
        runs, reason = engine_runs(engine, target)
        if runs or (engine == "vllm" and self._declared_vllm_runs(verl, target)):
            return
        usable = [e for e in verl.rollout_engines if engine_runs(e, target)[0]]
        pascal = pascal_advice(verl, target, key)
        if usable:
            advice = _with_pascal(f"use {' or '.join(usable)} ({key}={usable[0]})", engine, key, pascal)
            ctx.report(at, f"rollout engine {engine} cannot run on {target.name} "
                           f"({target.capability_text}): {reason}; {advice}")
            return
        supported = hf_rollout.supports(verl)
        if supported and hf_rollout_available():
            how = hf_rollout.how_installed()
            ctx.report(at,
                       f"rollout engine {engine} cannot run on {target.name} ({target.capability_text}): {reason}; "
                       f"no engine {verl.label} registers ({registered}) runs there. rlcompat's hf rollout does "
                       f"({how}): {hf_rollout.override(key)}, the same algorithm on plain transformers, much slower than vLLM",
                       [setting.rewrite(HF_ROLLOUT)], FixSafety.UNSAFE,
                       "set it to hf (rlcompat's HF-transformers rollout; slower than vLLM, same algorithm)")
            return
        install = (f"{hf_rollout.INSTALL} for rlcompat's HF-transformers rollout (rollout.name=hf: same "
                   "algorithm, slower than vLLM)" if supported else
                   "rlcompat's HF-transformers rollout supports verl 0.9.1 only")
        advice = _with_pascal(
            f"no rollout engine {verl.label} registers ({registered}) runs on {target.name}: {install}; or run the "
            f"rollout on a GPU with compute capability {min_capability('vllm').text}+ (a standalone rollout pool, "
            "rollout.nnodes > 0)", engine, key, pascal)
        ctx.report(at, f"rollout engine {engine} cannot run on {target.name} "
                       f"({target.capability_text}): {reason}; {advice}")

    def _check_entry_workers(self, view, ctx) -> None:
        """A value that makes the command's own entry module build a worker of the tree's that runs an engine
        (rlcompat/analysis/entry_workers.py: General-Reasoner's `reward_model.strategy=verifier`)."""
        entry = entry_workers.entry_module(view.command_words, ctx.path)
        if entry is None:
            return
        for setting in view.settings:
            found = entry_workers.chosen(entry, setting.key, setting.value) if setting.value and not setting.flag \
                else None
            if found is None or view.get(setting.key) is not setting or not all(
                    _set_true(view.get(k)) for k in found.needs):
                continue  # not the run's last word on the key, or a switch around the branch the command leaves
            ctx.record_reads(list(found.files))
            runs, reason = engine_runs(found.engine, ctx.target)
            if not runs:
                ctx.report(_named_at(setting),
                           f"{setting.key}={setting.value} makes this run's entry module build the tree's own "
                           f"{found.cls} ({found.where}; {found.defined}), a {found.engine} engine: {reason}; pick "
                           f"another {setting.key}, or run it on a GPU with compute capability "
                           f"{min_capability(found.engine).text}+")

    def _check_fork_name(self, setting, key, ctx) -> None:
        """A rollout name a fork's own worker code dispatches (rlcompat/analysis/fork_rollouts.py): judged as the
        engine the class it builds runs."""
        fork = ctx.framework("verl") if ctx.framework is not None else None
        package = package_dir(ctx.path, fork) if fork is not None and fork.how == "fork" else None
        found = fork_rollouts.dispatched(package, setting.value) if package else None
        if found is None:
            return  # which engines a fork (or an unknown release) registers is not known: no claim
        ctx.record_reads(list(found.files))
        runs, reason = engine_runs(found.engine, ctx.target)
        if runs:
            return
        ctx.report(_named_at(setting),
                   f"rollout {setting.value!r} is this fork's own: its worker code builds {found.cls} for it "
                   f"(verl/{found.where}), a {found.engine} rollout (verl/{found.defined}); {reason}; use a rollout "
                   f"the fork builds on another engine for {key}, or run the rollout on a GPU with compute capability "
                   f"{min_capability(found.engine).text}+ (a standalone rollout pool)")
