"""`rlcompat verify --trainer`: run verl's own entry point, `python -m verl.trainer.main_ppo`, for a few tiny steps.

Everything the user's launch would run runs: Hydra config, Ray started locally, the Ray worker groups, the agent loop,
the rollout replicas (rlcompat's `hf` rollout by default, or whatever the script names), the reward loop, critic and
actor updates, and weight sync after each step. Only the scale is swapped: a tiny random Qwen2 made on the spot, a
tiny GSM8K-style parquet, batch sizes and the step count. The target guard is installed in every process that
imports verl (rlcompat/verl_plugin/process_guard.py); its violations, verl's per-step metrics (its `file` logger)
and the rollout servers' figures come back as files in the run folder.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from rlcompat.verify.result import EXIT_ENV, EXIT_FAIL, EXIT_PASS

GSM8K_ROWS = [
    ("Natalia sold clips to 48 of her friends in April, and then she sold half as many clips in May. "
     "How many clips did Natalia sell altogether in April and May?", "72"),
    ("Weng earns $12 an hour for babysitting. Yesterday, she just did 50 minutes of babysitting. How much did she earn?",
     "10"),
    ("Betty is saving money for a new wallet which costs $100. Betty has only half of the money she needs. "
     "How much more money does Betty need?", "5"),
    ("James writes a 3-page letter to 2 different friends twice a week. How many pages does he write a year?", "624"),
]
INSTRUCTION = "Let's think step by step and output the final answer after \"####\"."


@dataclass
class TrainerRequest:
    package: Path
    target: str
    device: str = "cpu"  # cpu | cuda
    steps: int = 2
    script: Path | None = None
    model: str = "tiny"  # tiny | 0.5b (a random Qwen2 of Qwen2.5-0.5B's shape)
    algo: str = "gae"
    seed: int = 0
    timeout: float = 900.0
    keep: bool = False
    extra_overrides: list[str] = field(default_factory=list)
    trace: bool = False  # watch which of scan's findings in the tree run (rlcompat/verify/line_trace.py)
    trace_from: Path | None = None  # watch the findings of this tree (before `fix`), moved onto the verified one
    gpus: int = 1  # trainer.n_gpus_per_node: FSDP across this many GPUs (or CPU processes), one hf replica on each
    rollout: str = "hf"  # the rollout the run ended up with (the script may name another)
    fp32: bool = True


def write_dataset(folder: Path, rows: int) -> tuple[Path, Path]:
    """GSM8K-style parquet in the columns verl's RLHFDataset and its gsm8k scorer read (examples/data_preprocess)."""
    import pandas as pd

    folder.mkdir(parents=True, exist_ok=True)
    records = []
    for i in range(rows):
        question, answer = GSM8K_ROWS[i % len(GSM8K_ROWS)]
        records.append({
            "data_source": "openai/gsm8k",
            "prompt": [{"role": "user", "content": f"{question} {INSTRUCTION}"}],
            "ability": "math",
            "reward_model": {"style": "rule", "ground_truth": answer},
            "extra_info": {"split": "train", "index": i, "answer": answer, "question": question},
        })
    train, val = folder / "train.parquet", folder / "val.parquet"
    pd.DataFrame(records).to_parquet(train)
    pd.DataFrame(records[: max(2, len(GSM8K_ROWS))]).to_parquet(val)
    return train, val


def build_model(folder: Path, kind: str, seed: int) -> Path:
    from rlcompat.verify.tiny_model import TinyModelSpec, build_tiny_model

    if kind == "0.5b":
        # Qwen2.5-0.5B's shape: hidden 896, 24 layers, 14/2 heads, 151936 embedding rows, tied output layer
        # (494M parameters). The tiny tokenizer knows 400 of the rows; ids past it decode to nothing.
        spec = TinyModelSpec(hidden_size=896, intermediate_size=4864, num_hidden_layers=24, num_attention_heads=14,
                             num_key_value_heads=2, max_position_embeddings=4096, vocab_multiple=151936,
                             tie_word_embeddings=True)
        return build_tiny_model(folder, seed=seed, spec=spec)
    return build_tiny_model(folder, seed=seed)


# What verify sets for a tiny run, by Hydra key. A launch script's own value for one of these keys is swapped out
# (and reported); every other override of the script is kept.
def tiny_overrides(model: Path, train: Path, val: Path, steps: int, batch: int, device: str, algo: str,
                   metrics_file: Path, gpus: int = 1) -> dict[str, str]:
    # verl divides each mini-batch over the data-parallel ranks and asks that the share be a whole number of
    # micro-batches (fsdp_workers.py's normalisation): one micro-batch of the rank's whole share.
    per_rank = str(max(1, batch // gpus))
    o = {
        "algorithm.adv_estimator": algo,
        "data.train_files": str(train),
        "data.val_files": str(val),
        "data.train_batch_size": str(batch),
        "data.max_prompt_length": "96",
        "data.max_response_length": "16",
        "data.dataloader_num_workers": "0",
        "actor_rollout_ref.model.path": str(model),
        "actor_rollout_ref.actor.optim.lr": "1e-3",
        "actor_rollout_ref.actor.ppo_mini_batch_size": str(batch),
        "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu": per_rank,
        "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu": per_rank,
        "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu": per_rank,
        "actor_rollout_ref.rollout.n": "1" if algo == "gae" else "2",
        "actor_rollout_ref.rollout.agent.num_workers": "1",
        "actor_rollout_ref.rollout.tensor_model_parallel_size": "1",
        "actor_rollout_ref.rollout.gpu_memory_utilization": "0.3",
        "critic.model.path": str(model),
        "critic.optim.lr": "1e-3",
        "critic.ppo_mini_batch_size": str(batch),
        "critic.ppo_micro_batch_size_per_gpu": per_rank,
        "reward.num_workers": "1",
        "trainer.n_gpus_per_node": str(gpus),
        "trainer.nnodes": "1",
        "trainer.total_training_steps": str(steps),
        "trainer.total_epochs": "1",
        "trainer.val_before_train": "False",
        "trainer.test_freq": "-1",
        "trainer.save_freq": "-1",
        "trainer.logger": "[console,file]",
        "trainer.project_name": "rlcompat_verify",
        "trainer.experiment_name": "trainer",
        "trainer.default_local_dir": str(metrics_file.parent / "checkpoints"),
        # Ray's CPUs are logical: enough slots for the TaskRunner, workers, agent loop, reward loop and
        # TransferQueue actors, however few cores the machine has; one storage unit instead of eight.
        "ray_kwargs.ray_init.num_cpus": "16",
        "transfer_queue.backend.SimpleStorage.num_data_storage_units": "1",
        "+ray_kwargs.ray_init.include_dashboard": "False",
        "+ray_kwargs.ray_init._temp_dir": str(metrics_file.parent / "ray"),
    }
    if device == "cpu":
        # verl asks Ray for one "GPU" per worker; the CPU platform uses it
        o["+ray_kwargs.ray_init.num_gpus"] = str(gpus)
    return o


# What a run needs that is not a size: the hf rollout on a target without vLLM, kept only without a script.
DEFAULT_RUN_SETTINGS = {
    "actor_rollout_ref.rollout.name": "hf",
    "actor_rollout_ref.rollout.dtype": "float32",
}

def replay_poll_overrides(final: dict[str, str]) -> list[str]:
    """verl's replay buffer with a 50 ms poll instead of 2 s (rlcompat/verl_plugin/replay_poll.py says why), for a
    run on the hf rollout whose settings that buffer serves as verl's own: v1 trainer, no custom sampler, no DAPO
    group filter, no refill of failed groups (verl passes a custom sampler none of those)."""
    def setting(key: str, default: str) -> str:
        return final.get(key, default).strip().lower()

    if setting("actor_rollout_ref.rollout.name", "vllm") != "hf" or setting("trainer.use_v1", "true") != "true":
        return []
    if setting("algorithm.filter_groups.enable", "false") == "true" \
            or setting("trainer.v1.sampler.sync_refill_failed_groups", "false") == "true" \
            or setting("trainer.v1.sampler.custom_sampler.path", "null") not in ("null", "none", ""):
        return []
    name = "PromptPollReplayBuffer" if setting("trainer.v1.trainer_mode", "sync") == "sync" \
        else "PromptPollReplayBufferAsync"
    return ["trainer.v1.sampler.custom_sampler.path=pkg://rlcompat.verl_plugin.replay_poll",
            f"trainer.v1.sampler.custom_sampler.name={name}"]


# Keys a launch script sets that describe the real run's scale or data: swapped for the tiny run's values.
SWAP_PREFIXES = (
    "data.train_files", "data.val_files", "data.train_batch_size", "data.val_batch_size", "data.max_prompt_length",
    "data.max_response_length", "data.dataloader_num_workers", "actor_rollout_ref.model.path", "critic.model.path",
    "actor_rollout_ref.actor.ppo_mini_batch_size", "actor_rollout_ref.actor.ppo_micro_batch_size",
    "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu", "actor_rollout_ref.rollout.log_prob_micro_batch_size",
    "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu", "actor_rollout_ref.ref.log_prob_micro_batch_size",
    "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu", "actor_rollout_ref.rollout.n",
    "actor_rollout_ref.rollout.tensor_model_parallel_size", "actor_rollout_ref.rollout.agent.num_workers",
    "critic.ppo_mini_batch_size", "critic.ppo_micro_batch_size", "critic.ppo_micro_batch_size_per_gpu",
    "trainer.n_gpus_per_node", "trainer.nnodes", "trainer.total_epochs", "trainer.total_training_steps",
    "trainer.logger", "trainer.test_freq", "trainer.save_freq", "trainer.val_before_train", "trainer.project_name",
    "trainer.experiment_name", "trainer.default_local_dir", "actor_rollout_ref.actor.optim.lr", "critic.optim.lr",
    "actor_rollout_ref.rollout.gpu_memory_utilization", "reward.num_workers", "ray_kwargs.ray_init.num_cpus",
    "transfer_queue.backend.SimpleStorage.num_data_storage_units",
    "algorithm.adv_estimator",
)


def _key(override: str) -> str:
    return override.split("=", 1)[0].lstrip("+~")


def merge_overrides(script_overrides: list[str], tiny: dict[str, str], keep_algo: bool) -> tuple[list[str], list[str]]:
    """The script's overrides with its scale swapped for `tiny`'s; returns (overrides, swapped keys)."""
    swapped: list[str] = []
    kept: list[str] = []
    for ov in script_overrides:
        key = _key(ov)
        if keep_algo and key == "algorithm.adv_estimator":
            kept.append(ov)
            continue
        if key in SWAP_PREFIXES or key in tiny:
            swapped.append(key)
            continue
        kept.append(ov)
    tiny = dict(tiny)
    if keep_algo and any(_key(o) == "algorithm.adv_estimator" for o in kept):
        tiny.pop("algorithm.adv_estimator", None)
    return kept + [f"{k}={v}" for k, v in tiny.items()], sorted(set(swapped))


def script_overrides(script: Path) -> list[str]:
    """The Hydra overrides of the first `verl.trainer.main_ppo` call in a launch script (rlcompat's shell reader)."""
    from rlcompat.verify.launch_script import main_ppo_overrides

    return main_ppo_overrides(script)


def child_env(req: TrainerRequest, workdir: Path, guard_log: Path, metrics_file: Path) -> dict[str, str]:
    from rlcompat.verify.runner import child_environment

    env = child_environment(req.package)
    env.update(
        RLCOMPAT_VERIFY_GUARD=req.target, RLCOMPAT_VERIFY_GUARD_LOG=str(guard_log),
        RLCOMPAT_VERIFY_TREE=str(req.package), RLCOMPAT_VERIFY_STATS=str(workdir / "rollout_stats.jsonl"),
        VERL_FILE_LOGGER_PATH=str(metrics_file),
        RAY_DISABLE_IMPORT_WARNING="1", RAY_USAGE_STATS_ENABLED="0", RAY_DEDUP_LOGS="0",
        RAY_ENABLE_UV_RUN_RUNTIME_ENV="0", RAY_enable_open_telemetry="0",
        TMPDIR=str(workdir / "tmp"),
    )
    (workdir / "tmp").mkdir(exist_ok=True)
    if req.device == "cpu":
        env["RLCOMPAT_VERL_CPU"] = "1"
        env.pop("CUDA_VISIBLE_DEVICES", None)  # Ray refuses a fake GPU when the variable lists none
    else:
        env.pop("RLCOMPAT_VERL_CPU", None)
    return env


def run_trainer(req: TrainerRequest, workdir: Path) -> dict:
    """Run main_ppo in a child process; return verify's result dict."""
    result: dict = {"mode": "trainer", "phases": [], "checks": [], "metrics": {}, "violations": [], "steps": []}
    t0 = time.perf_counter()
    metrics_file = workdir / "metrics.jsonl"
    guard_log = workdir / "violations.jsonl"
    model = build_model(workdir / "model", req.model, req.seed)
    batch, response = (8, 64) if req.model == "0.5b" else (4, 16)
    batch = -(-batch // req.gpus) * req.gpus  # every rank gets the same whole share of the batch
    train, val = write_dataset(workdir / "data", rows=batch * req.steps)
    result["phases"].append({"name": "tiny model and dataset", "seconds": round(time.perf_counter() - t0, 2)})
    tiny = tiny_overrides(model, train, val, req.steps, batch, req.device, req.algo, metrics_file, req.gpus)
    tiny["data.max_response_length"] = str(response)
    if req.script is not None:
        found = script_overrides(req.script)
        overrides, swapped = merge_overrides(found, tiny, keep_algo=True)
        result["script"] = {"path": str(req.script), "overrides": found, "swapped": swapped}
    else:
        overrides, _ = merge_overrides([], {**DEFAULT_RUN_SETTINGS, **tiny}, keep_algo=False)
    overrides += req.extra_overrides
    final = {_key(o): o.split("=", 1)[1] for o in overrides if "=" in o}
    poll = replay_poll_overrides(final)
    overrides += poll
    req.rollout = final.get("actor_rollout_ref.rollout.name", "vllm")
    req.fp32 = final.get("actor_rollout_ref.rollout.dtype", "bfloat16") in ("float32", "fp32")
    result["settings"] = {"steps": req.steps, "batch": batch, "model": req.model, "device": req.device,
                          "gpus": req.gpus, "rollout": req.rollout, "rollout_dtype": final.get("actor_rollout_ref.rollout.dtype"),
                          "algo": final.get("algorithm.adv_estimator", "gae"),
                          "replay_buffer": poll[1].split("=", 1)[1] if poll else
                          final.get("trainer.v1.sampler.custom_sampler.name", "verl's own (2 s poll)")}
    result["overrides"] = overrides
    cmd = [sys.executable, "-m", "verl.trainer.main_ppo", *overrides]
    result["command"] = shlex.join(cmd)
    env = child_env(req, workdir, guard_log, metrics_file)
    watch = _start_trace(req, workdir, env) if req.trace else None
    log_file = workdir / "main_ppo.log"
    start = time.perf_counter()
    with open(log_file, "wb") as log:
        proc = subprocess.Popen(cmd, cwd=workdir, env=env, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True)
        try:
            rc = proc.wait(timeout=req.timeout)
        except subprocess.TimeoutExpired:
            rc = None
        finally:
            _stop_group(proc)
    result["phases"].append({"name": "main_ppo (wall)", "seconds": round(time.perf_counter() - start, 2)})
    result["steps"] = read_steps(metrics_file)
    result["rollout_servers"] = _read_jsonl(workdir / "rollout_stats.jsonl")
    if req.device == "cuda":
        from rlcompat.verify import trainer_memory

        from rlcompat.knowledge.targets import resolve_target

        settings = trainer_memory.run_settings(final, _parameter_count(model), batch, response, req.target,
                                               resolve_target(req.target).training_dtype)
        result["memory_vs_doctor"] = trainer_memory.compare(result["steps"], result["rollout_servers"], settings)
        result["doctor_command"] = trainer_memory.doctor_command(settings)
    result["violations"] = _read_jsonl(guard_log)
    if watch is not None:
        from rlcompat.verify import line_trace

        points, untraceable = watch
        result["trace"] = line_trace.classify(points, untraceable, line_trace.read_hits(workdir / "trace"),
                                              req.package.parent)
    log_text = log_file.read_text("utf-8", errors="replace")
    result["log_tail"] = "\n".join(log_text.splitlines()[-40:])
    return judge(result, rc, req, log_text)


def _start_trace(req: TrainerRequest, workdir: Path, env: dict[str, str]):
    """Scan the tree for the target and have every process of the run watch the findings' statements."""
    from rlcompat.api import scan_paths
    from rlcompat.knowledge.targets import resolve_target
    from rlcompat.verify import line_trace

    scanned = req.trace_from or req.package
    report = scan_paths([str(scanned)], resolve_target(req.target))
    points, untraceable = line_trace.watch_points(report.findings)
    if req.trace_from is not None:
        points, lost = line_trace.mapped_onto(points, req.trace_from, req.package)
        untraceable += lost
    (workdir / "trace").mkdir(exist_ok=True)
    line_trace.write_spec(points, workdir / "trace" / "watch.json")
    env.update(RLCOMPAT_VERIFY_TRACE=str(workdir / "trace" / "watch.json"),
               RLCOMPAT_VERIFY_TRACE_OUT=str(workdir / "trace"))
    return points, untraceable


def _parameter_count(model: Path) -> int:
    """The built model's parameter count, from its safetensors header (no tensor is loaded)."""
    from safetensors import safe_open

    count = 0
    for shard in sorted(model.glob("*.safetensors")):
        with safe_open(str(shard), "pt") as f:
            for name in f.keys():
                shape = f.get_slice(name).get_shape()
                n = 1
                for dim in shape:
                    n *= dim
                count += n
    return count


def verify_trainer(req: TrainerRequest) -> dict:
    """The whole `verify --trainer` run in a fresh temp folder (kept with --keep): verify's result dict."""
    import shutil
    import tempfile

    from rlcompat.knowledge.targets import resolve_target

    workdir = Path(tempfile.mkdtemp(prefix="rlcompat-verify-trainer-"))
    start = time.perf_counter()
    target = resolve_target(req.target)
    try:
        result = run_trainer(req, workdir)
    except Exception as exc:  # a launch script that cannot be read, a dataset that cannot be written
        result = {"mode": "trainer", "status": "error", "exit_code": EXIT_ENV, "reason": f"{type(exc).__name__}: {exc}",
                  "phases": [], "checks": [], "violations": [], "steps": []}
    result["wall_seconds"] = round(time.perf_counter() - start, 2)
    native = False
    result["device"] = {"kind": req.device}
    if req.device == "cuda":
        import torch

        from rlcompat.verify.harness import same_generation

        native = torch.cuda.is_available() and same_generation(torch, target)
        if torch.cuda.is_available():  # the record names the card it ran on (bench/trainer_memory.py's plot title)
            result["device"]["name"] = torch.cuda.get_device_name(0)
    result["target"] = {"name": target.name, "describe": target.describe(), "emulated": not native}
    result["verl"] = {"path": str(req.package), "version": _tree_version(req.package)}
    if req.keep:
        result["workdir"] = str(workdir)
    else:
        shutil.rmtree(workdir, ignore_errors=True)
    return result


def _tree_version(package: Path) -> str:
    try:
        return (package / "version" / "version").read_text("utf-8").strip()
    except OSError:
        return "?"


def judge(result: dict, rc: int | None, req: TrainerRequest, log_text: str) -> dict:
    steps = result["steps"]
    if result["violations"]:
        v = result["violations"][0]
        result.update(status="fail", exit_code=EXIT_FAIL, reason=f"target violation: {v['message']}")
        return result
    if rc is None:
        result.update(status="error", exit_code=EXIT_ENV, reason=f"main_ppo timed out after {req.timeout:g} s")
        return result
    if rc != 0:
        result.update(status="fail", exit_code=EXIT_FAIL, reason=f"main_ppo exited with {rc}: {first_error(log_text)}")
        return result
    checks = []
    checks.append(("steps completed", len(steps) >= req.steps, f"{len(steps)} of {req.steps}"))
    for s in steps:
        for key in ("actor/pg_loss", "critic/vf_loss", "actor/grad_norm", "critic/grad_norm"):
            if key in s["metrics"]:
                val = s["metrics"][key]
                checks.append((f"step {s['step']} {key} finite", _finite(val), f"{val:.4g}"))
        # verl compares the rollout's log-probs with the actor's for the same tokens; after step 1 they agree only
        # if the rollout received the updated weights
        diff = s["metrics"].get("training/rollout_probs_diff_max")
        if diff is not None and req.rollout == "hf":
            bound = 1e-3 if req.fp32 else 5e-2
            checks.append((f"step {s['step']} rollout and actor probabilities agree (weights in sync)",
                           float(diff) <= bound, f"max |p_rollout - p_actor| {float(diff):.2e} <= {bound:g}"))
    servers = result.get("rollout_servers") or []
    if req.rollout == "hf":
        loads = max((int(x.get("weight_loads", 0)) for x in servers), default=0)
        checks.append(("actor weights synced to the hf rollout each step", loads >= req.steps,
                       f"{loads} weight loads for {req.steps} steps"))
    result["checks"] = [{"name": n, "ok": ok, "detail": d} for n, ok, d in checks]
    failed = [c for c in result["checks"] if not c["ok"]]
    if failed:
        result.update(status="fail", exit_code=EXIT_FAIL, reason=f"check failed: {failed[0]['name']} ({failed[0]['detail']})")
    else:
        result.update(status="pass", exit_code=EXIT_PASS, reason=None)
    return result


def _finite(x) -> bool:
    try:
        return float(x) == float(x) and abs(float(x)) != float("inf")
    except (TypeError, ValueError):
        return False


_ERROR_LINE = re.compile(r"^(?:\w+\.)*\w*(?:Error|Exception|Violation)\b.*$")


def first_error(log_text: str) -> str:
    """The innermost exception line of the child's log (Ray wraps the worker's error in its own)."""
    lines = [ln.strip() for ln in log_text.splitlines()]
    hits = [ln for ln in lines if _ERROR_LINE.match(ln) and "RayTaskError" not in ln]
    if hits:
        return hits[-1][:400]
    return (lines[-1] if lines else "no output")[:400]


def read_steps(metrics_file: Path) -> list[dict]:
    steps = []
    for rec in _read_jsonl(metrics_file):
        data = rec.get("data", {})
        steps.append({"step": rec.get("step"), "metrics": data})
    return steps


def _read_jsonl(path: Path) -> list[dict]:
    if not path.is_file():
        return []
    out = []
    for line in path.read_text("utf-8", errors="replace").splitlines():
        line = line.strip()
        if line:
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError:
                continue
    return out


def _stop_group(proc: subprocess.Popen) -> None:
    """main_ppo starts a local Ray cluster (raylet, GCS, workers) in its own session; after a crash or a timeout
    some of it can outlive the driver. Stop that session's processes: only the ones this run started."""
    import signal

    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        pass
