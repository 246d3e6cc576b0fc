from __future__ import annotations

from rlcompat.contract import Bad, ConfigRule, FixSafety, Good

CMD = "python3 -m verl.trainer.main_ppo \\\n    actor_rollout_ref.model.use_fused_kernels={fused} \\\n    {extra}trainer.n_gpus_per_node=1\n"
BACKEND = "actor_rollout_ref.model.fused_kernel_options.impl_backend"


class FusedKernelsTriton(ConfigRule):
    code = "RLC353"
    name = "fused-kernels-triton"
    title = "verl's fused kernels with the Triton backend on a GPU Triton does not run on"
    what = (
        "Finds `use_fused_kernels: true` together with `fused_kernel_options.impl_backend: triton` (verl's model config, "
        "or Hydra overrides) [S51]."
    )
    why = (
        "The Triton backend compiles Triton kernels for the fused linear + log-prob computation; Triton needs compute "
        "capability 7.0 at the very least (torch refuses older cards) and supports 8.0+ officially [S17][S18]."
    )
    fix_safety = "`impl_backend: torch` computes the same fused op with PyTorch ops: safe."
    names = ("impl_backend",)
    sources = ("S17", "S18", "S51")

    bad = (
        Bad(CMD.format(fused="True", extra=f"{BACKEND}=triton \\\n    "), path="run.sh",
            fixed=CMD.format(fused="True", extra=f"{BACKEND}=torch \\\n    ")),
        Bad("actor_rollout_ref:\n  model:\n    use_fused_kernels: true\n    fused_kernel_options:\n      impl_backend: triton\n",
            fixed="actor_rollout_ref:\n  model:\n    use_fused_kernels: true\n    fused_kernel_options:\n      impl_backend: torch\n",
            path="ppo.yaml"),
    )
    good = (
        Good(CMD.format(fused="False", extra=f"{BACKEND}=triton \\\n    "), path="run.sh"),
        Good(CMD.format(fused="True", extra=f"{BACKEND}=triton \\\n    "), path="run.sh", target="sm80"),
    )

    @classmethod
    def applies_to(cls, target) -> bool:
        return not target.inductor

    def check_config(self, view, ctx) -> None:
        for prefix in ("actor_rollout_ref.model", "critic.model"):
            fused, backend = view.get(f"{prefix}.use_fused_kernels"), view.get(f"{prefix}.fused_kernel_options.impl_backend")
            if fused is None or fused.as_bool() is not True or backend is None or backend.value != "triton":
                continue
            ctx.report(backend.key_span, f"{prefix}.fused_kernel_options.impl_backend is triton with use_fused_kernels "
                                         f"on: Triton does not run on {ctx.target.name} (compute capability "
                                         f"{ctx.target.capability_text}); use torch",
                       [backend.rewrite("torch")], FixSafety.SAFE, "use torch")
