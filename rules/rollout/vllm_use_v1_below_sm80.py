from __future__ import annotations

from rlcompat.contract import Bad, ConfigRule, FixSafety, Good
from rlcompat.knowledge import versions, vllm
from rlcompat.knowledge.environment import error_text
from rlcompat.rules.rollout.helpers import command_vllm_release

_TRUE = {"1", "true", "yes", "on"}


class VllmUseV1BelowSm80(ConfigRule):
    code = "RLC419"
    name = "vllm-use-v1-below-sm80"
    title = "`VLLM_USE_V1=1` forces vLLM's V1 engine, which vLLM 0.8.0 to 0.10.1 refuse below compute capability 8.0"
    what = (
        "Finds VLLM_USE_V1 set true: `os.environ[\"VLLM_USE_V1\"] = \"1\"` (and `setdefault`) in Python, `export "
        "VLLM_USE_V1=1` or `VLLM_USE_V1=1 python ...` in scripts, and a config key of that name (Ray's "
        "`runtime_env.env_vars`), a Dockerfile `ENV` and a container's `env:`. Reported where the vLLM that reads it "
        f"is one that refuses it ({vllm.use_v1()['first']} to {vllm.use_v1()['last']}): the release of the official "
        "vLLM image its container runs (`vllm/vllm-openai:v0.9.2`), else the tree's (its pin, package or installed "
        "release); where no vLLM version is known it is a warning that names those releases, and the tree's "
        "requirement where that allows one of them; a requirement that allows none of them is left alone, as is a "
        "newer or older known release."
    )
    why = (
        "Those releases need 8.0 for the V1 engine (its attention needed FlashAttention) and, with the variable set "
        "true, raise instead of falling back to the V0 engine, which runs on these cards: "
        f"`{error_text(vllm.use_v1()['error'])}` [S103]. Setting it in code hides it from the launch command."
    )
    fix_safety = ("`\"0\"` keeps vLLM on its V0 engine, the one those releases run without the variable here: safe. "
                  "Only where the vLLM that reads it is known to be one of them: vLLM removed V0 later, so an unknown "
                  "release gets the warning without a fix.")
    names = ("VLLM_USE_V1",)
    languages = ConfigRule.languages | {"python"}  # its settings written in Python too (lang/pysettings.py)
    sources = ("S103", "S216")

    bad = (
        Bad('import os\nos.environ["VLLM_USE_V1"] = "1"\n', path="train.py", target="sm75",
            fixed='import os\nos.environ["VLLM_USE_V1"] = "0"\n', frameworks={"vllm": "0.9.2"}),
        Bad("export VLLM_USE_V1=1\npython -m verl.trainer.main_ppo\n", path="run.sh", target="sm70",
            fixed="export VLLM_USE_V1=0\npython -m verl.trainer.main_ppo\n", frameworks={"vllm": "0.9.2"}),
        # no vLLM version known: a warning naming the releases, and no fix (a later vLLM has no V0 engine)
        Bad('import os\nos.environ.setdefault("VLLM_USE_V1", "1")\n', path="train.py", target="sm75"),
        # a Dockerfile's ENV read by the vLLM of its base image: that release is known, so the fix is safe
        Bad('FROM vllm/vllm-openai:v0.9.2\nENV VLLM_USE_V1=1\nCMD ["--model", "m", "--dtype", "half"]\n',
            path="Dockerfile", target="sm75",
            fixed='FROM vllm/vllm-openai:v0.9.2\nENV VLLM_USE_V1=0\nCMD ["--model", "m", "--dtype", "half"]\n'),
    )
    good = (
        Good('import os\nos.environ["VLLM_USE_V1"] = "1"\n', path="train.py", target="sm80", frameworks={"vllm": "0.9.2"}),
        Good('import os\nos.environ["VLLM_USE_V1"] = "1"\n', path="train.py", target="sm75",
             frameworks={"vllm": "0.11.0"}),
        Good('import os\nos.environ["VLLM_USE_V1"] = "0"\n', path="train.py", target="sm75"),
        # the container's official image holds a vLLM that runs V1 on the card, whatever the tree pins
        Good("kind: Pod\nspec:\n  containers:\n    - name: vllm\n      image: vllm/vllm-openai:v0.11.0\n"
             "      env:\n        - name: VLLM_USE_V1\n          value: \"1\"\n      args: [--model, m, --dtype, half]\n",
             path="pod.yaml", target="sm75", frameworks={"vllm": "0.9.2"}),
    )

    @classmethod
    def applies_to(cls, target) -> bool:
        return target.capability < versions.capability(vllm.use_v1()["min_capability"])

    def check_config(self, view, ctx) -> None:
        found = [s for s in view.settings if s.key.rsplit(".", 1)[-1] == "VLLM_USE_V1" and not s.flag]
        if not found:
            return
        release, how = command_vllm_release(view, ctx)
        row = vllm.use_v1()
        span = f"{row['first']} to {row['last']}"
        unknown = f"vLLM {span} refuse it (this tree's vLLM version is not known)"
        if release is None:
            declared = ctx.framework("vllm") if ctx.framework is not None else None
            if declared is not None and declared.how == "declared" and declared.spec:
                allows = versions.allows_between(declared.spec, row["first"], row["last"])
                if allows is False:
                    return  # no release the tree's requirement allows is one that refuses it
                if allows:
                    unknown = (f"the tree's requirement ({declared.evidence}) allows releases of vLLM {span}, which refuse it "
                               "(which release is installed is not known)")
        for s in found:
            if s.value is None or s.value.strip().lower() not in _TRUE:
                continue
            if release is not None and not vllm.refuses_use_v1(release, ctx.target.capability):
                continue
            which = f"{how}, which refuses it" if release is not None else unknown
            # Only for a known refusing release: vLLM removed the V0 engine later (0.11), so "0" is not a safe
            # answer where the release is not known.
            edits = [s.rewrite("0")] if release is not None else []
            ctx.report(s.key_span, f"{s.label}={s.value} forces vLLM's V1 engine, which needs compute capability "
                                   f"{row['min_capability']}+ in vLLM {span} ({row['where'].split(';')[0]}); "
                                   f"{ctx.target.name} is {ctx.target.capability_text}: {which} "
                                   f"(`{error_text(row['error'])}`); set it to 0 (the V0 engine)",
                       edits, FixSafety.SAFE, "set VLLM_USE_V1 to 0",
                       severity="" if release is not None else "warning")
