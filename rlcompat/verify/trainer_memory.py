"""Measured memory of a `verify --trainer` run beside `rlcompat doctor --model-params`'s estimate for the same
settings, so a user can see how far the estimate they plan with is from what verl's trainer really used.

Compared where both count the same thing: the trainer worker's peak allocated memory during the actor and critic
updates (verl's `perf/max_memory_allocated_gb`, torch's allocator, so without the CUDA context the estimate adds).
The hf rollout server holds its own copy of the weights (moved to host memory while the trainer updates), in a
process of its own: its peak is shown beside the estimate of that copy (in the run's rollout dtype) plus the KV
cache, as a separate row.
"""

from __future__ import annotations

from rlcompat.knowledge.spellings import torch_dtype_name

GIB = 2**30
_TRUE = ("true", "1", "yes")


def run_settings(final: dict[str, str], params: int, batch: int, response: int, target: str, dtype: str) -> dict:
    """The settings of a run that doctor's estimate takes, from the run's final Hydra overrides."""
    algo = "ppo" if final.get("algorithm.adv_estimator", "gae") == "gae" else "grpo"
    use_ref = (final.get("algorithm.use_kl_in_reward", "false").lower() in _TRUE
               or final.get("actor_rollout_ref.actor.use_kl_loss", "false").lower() in _TRUE)
    return {
        "target": target,
        "dtype": dtype,
        "params": params,
        "algo": algo,
        "seq_len": int(final.get("data.max_prompt_length", 0)) + response,
        "micro_batch": int(final.get("actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu", batch)),
        "gpus": int(final.get("trainer.n_gpus_per_node", 1)) * int(final.get("trainer.nnodes", 1)),
        "use_ref": use_ref,
        "rollout_dtype": torch_dtype_name(final.get("actor_rollout_ref.rollout.dtype", "bfloat16")),
        "gradient_checkpointing": final.get("actor_rollout_ref.model.enable_gradient_checkpointing",
                                            "true").lower() in _TRUE,
    }


def doctor_command(s: dict) -> str:
    cmd = (f"rlcompat doctor --target {s['target']} --gpu-memory 80GiB --model-params {s['params']} --algo {s['algo']} "
           f"--seq-len {s['seq_len']} --micro-batch {s['micro_batch']} --rollout hf")
    if s.get("gpus", 1) > 1:
        cmd += f" --gpus {s['gpus']}"
    return cmd + ("" if s["use_ref"] else " --no-reference")


def compare(steps: list[dict], servers: list[dict], s: dict) -> list[dict]:
    """Rows of (what, measured GiB, estimated GiB, measured/estimated); empty without CUDA measurements."""
    from rlcompat.doctor import memory

    plan = memory.Plan(micro_batch=s["micro_batch"], gradient_checkpointing=s["gradient_checkpointing"])
    est = memory.estimate(s["params"], algo=s["algo"], dtype=s["dtype"], gpus=s.get("gpus", 1), seq_len=s["seq_len"],
                          rollout="hf",
                          plan=plan, use_ref=s["use_ref"])
    rows = []
    for phase, metric in (("actor update", "actor/perf/max_memory_allocated_gb"),
                          ("critic update", "critic/perf/max_memory_allocated_gb")):
        seen = [st["metrics"][metric] for st in steps if isinstance(st["metrics"].get(metric), (int, float))]
        if seen and phase in est.phases:
            rows.append(_row(f"trainer worker, {phase}", max(seen) * GIB, est.phases[phase] - memory.CUDA_CONTEXT))
    peaks = [x.get("peak_memory_bytes", 0) for x in servers if str(x.get("device", "")).startswith("cuda")]
    if peaks and rows and s["rollout_dtype"]:  # a dtype no spelling names ("auto"): no estimate of the copy
        # Each replica holds the whole model (tensor parallel size 1, one replica per GPU), not the FSDP rank's
        # shard that "actor weights" is: with 2 GPUs the shard is half of it (bench/results/verify_trainer_two_*).
        weights = s["params"] * memory.DTYPE_BYTES[s["rollout_dtype"]]
        kv = est.parts["rollout KV cache (HF generate)"]
        logits = s["micro_batch"] * est.shape.vocab * 4
        rows.append(_row("hf rollout server (weights + KV cache)", max(peaks), weights + kv + logits))
    return rows


def _row(what: str, measured: float, estimated: float) -> dict:
    return {"what": what, "measured_gib": round(measured / GIB, 2), "estimated_gib": round(estimated / GIB, 2),
            "ratio": round(measured / estimated, 2) if estimated else None}


def comparison_lines(result: dict) -> list[str]:
    rows = result.get("memory_vs_doctor") or []
    if not rows:
        return []
    out = [f"  memory, measured (max over steps) vs `{result['doctor_command']}`:"]
    width = max(len(r["what"]) for r in rows)
    for r in rows:
        out.append(f"    {r['what'].ljust(width)}  {r['measured_gib']:6.2f} GiB measured  "
                   f"{r['estimated_gib']:6.2f} GiB estimated  ({r['ratio']:.2f}x)")
    return out
