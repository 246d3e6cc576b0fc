"""The child process of `rlcompat verify`: one PPO step through verl's own training code, under the target guard.

Run as `python -m rlcompat.verify.harness --result FILE ...` by rlcompat.verify.runner, with the tree under test
first on sys.path. It writes one JSON object to FILE (verl and transformers log freely to stdout/stderr).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import traceback
from contextlib import contextmanager

from rlcompat.release import install_command
from rlcompat.verify.result import EXIT_ENV, EXIT_FAIL, EXIT_PASS

# GSM8K-style prompts with their ground truths; half the responses are replaced by a correct "#### answer" so
# verl's scorer gives a mix of rewards and the advantages are not all zero.
PROMPTS = [
    ("Natalia sold clips to 48 of her friends in April, and then she sold half as many clips in May. "
     "How many clips did Natalia sell altogether?", "72"),
    ("Weng earns $12 an hour for babysitting. Yesterday, she did 50 minutes of babysitting. How much did she earn?", "10"),
    ("Betty needs $100 for a wallet and has half of it. Her parents give her $15 and her grandparents twice as much. "
     "How much more does she need?", "5"),
    ("James writes a 3-page letter to 2 different friends twice a week. How many pages does he write a year?", "624"),
]
INSTRUCTION = " Let's think step by step and output the final answer after \"####\"."
LOGPROB_TOLERANCE = {"float32": 1e-4, "other": 0.1}  # max |verl actor log-prob - HF forward log-prob|


class Harness:
    def __init__(self, args):
        self.args = args
        self.result: dict = {
            "status": "error", "exit_code": EXIT_ENV, "reason": None, "phases": [], "checks": [], "metrics": {},
            "settings": {}, "adaptations": [], "violations": [], "blocked_imports": [], "dtypes_seen": {},
            "guard_notes": [], "error": None,
        }
        self.guard = None

    # ---- bookkeeping --------------------------------------------------------------------------------------------
    @contextmanager
    def phase(self, name: str):
        start, cpu = time.perf_counter(), time.process_time()
        try:
            yield
        finally:
            self.result["phases"].append({"name": name, "seconds": round(time.perf_counter() - start, 3),
                                          "cpu_seconds": round(time.process_time() - cpu, 3)})

    def check(self, name: str, ok: bool, detail: str) -> None:
        self.result["checks"].append({"name": name, "ok": bool(ok), "detail": detail})

    def write(self) -> None:
        if self.guard is not None:
            self.result["violations"] = [v.to_dict() for v in self.guard.violations]
            self.result["blocked_imports"] = sorted(set(self.guard.blocked_imports))
            self.result["dtypes_seen"] = dict(self.guard.dtypes_seen.most_common())
            self.result["guard_notes"] = self.guard.notes
        from rlcompat.verify import cpu_adapt

        self.result["adaptations"] = list(cpu_adapt.ADAPTATIONS)
        with open(self.args.result, "w", encoding="utf-8") as f:
            json.dump(self.result, f, indent=2, default=str)

    # ---- the run ------------------------------------------------------------------------------------------------
    def run(self) -> int:
        a = self.args
        from rlcompat.knowledge.targets import resolve_target

        target = resolve_target(a.target)
        with self.phase("import torch"):
            try:
                import torch
            except ImportError as exc:
                return self.finish_env(f"torch is not importable ({exc}); {install_command('verify')}")
        device = self._pick_device(torch)
        if device is None:
            return self.finish_env("--device cuda given but torch.cuda.is_available() is False")
        native = device == "cuda" and same_generation(torch, target)
        self.result["device"] = self._describe_device(torch, device)
        self.result["target"] = {"name": target.name, "describe": target.describe(), "emulated": not native}
        self.result["torch"] = torch.__version__

        from rlcompat.verify.guard import TargetGuard

        self.guard = TargetGuard(target, a.tree, enforce=not native, device=device)
        self.guard.install_import_blocker()  # before anything imports flash_attn
        with self.phase("import verl"):
            try:
                import verl
                from verl.workers import engine_workers  # noqa: F401  (its imports are the heavy part)
            except Exception as exc:  # verl or one of its undeclared imports missing
                return self.finish_env(f"cannot import verl's training code: {type(exc).__name__}: {exc} "
                                       f"({install_command('verify')})", exc)
        verl_file = os.path.realpath(verl.__file__)
        self.result["verl"] = {"path": os.path.dirname(verl_file), "version": getattr(verl, "__version__", "?")}
        tree_root = os.path.realpath(a.tree)
        if not verl_file.startswith(tree_root + os.sep):
            return self.finish_env(f"verl was imported from {os.path.dirname(verl_file)}, not from the tree under test {tree_root}")
        import transformers

        self.result["transformers"] = transformers.__version__
        if device == "cpu":
            from rlcompat.verify import cpu_adapt

            cpu_adapt.register_cpu_platform()
        self._init_process_group(torch, device)

        from rlcompat.verify.tiny_model import build_tiny_model

        with self.phase("tiny model"):
            model_dir = build_tiny_model(os.path.join(a.workdir, "tiny-model"), seed=a.seed)

        try:
            with self.guard:
                if device == "cpu":
                    from rlcompat.verify import cpu_adapt

                    cpu_adapt.patch_fsdp_engine_for_cpu(a.strategy)
                self._ppo_step(torch, str(model_dir), device)
        except BaseException as exc:  # the step's own failure; classified below
            if isinstance(exc, KeyboardInterrupt):
                raise
            return self.finish_exception(exc, target)
        return self.finish_checks()

    def _pick_device(self, torch):
        want = self.args.device
        if want == "auto":
            return "cuda" if torch.cuda.is_available() else "cpu"
        if want == "cuda" and not torch.cuda.is_available():
            return None
        return want

    def _describe_device(self, torch, device):
        if device == "cuda":
            major, minor = torch.cuda.get_device_capability(0)
            return {"kind": "cuda", "name": torch.cuda.get_device_name(0), "capability": f"{major}.{minor}"}
        import platform

        return {"kind": "cpu", "name": platform.processor() or platform.machine(), "capability": None,
                "threads": torch.get_num_threads()}

    def _init_process_group(self, torch, device):
        import torch.distributed as dist

        if dist.is_initialized():
            return
        os.environ.setdefault("RANK", "0")
        os.environ.setdefault("WORLD_SIZE", "1")
        os.environ.setdefault("LOCAL_RANK", "0")
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        os.environ.setdefault("MASTER_PORT", str(_free_port()))  # verl's Worker reads it; the group uses a file store
        backend = "gloo" if device == "cpu" else "cpu:gloo,cuda:nccl"
        if device == "cuda":
            torch.cuda.set_device(0)
        dist.init_process_group(backend=backend, init_method=f"file://{os.path.join(self.args.workdir, 'pg')}",
                                rank=0, world_size=1)

    # ---- PPO step -----------------------------------------------------------------------------------------------
    def _configs(self, model_dir):
        """verl's own config dataclasses with their defaults, except test-scale sizes and the strategy asked for."""
        from verl.workers.config import (
            FSDPActorConfig, FSDPCriticConfig, FSDPEngineConfig, FSDPOptimizerConfig, HFModelConfig,
        )
        from verl.workers.config.engine import TrainingWorkerConfig

        a = self.args
        tokens = 4096
        self.result["settings"] = {
            "strategy": a.strategy, "algo": a.algo, "steps": a.steps, "seed": a.seed, "batch": len(PROMPTS),
            "max_new_tokens": a.max_new_tokens, "lr": 1e-3,
            "defaults_kept": "verl's dataclass defaults for dtype, mixed precision, attention, remove-padding, "
                             "torch.compile, gradient checkpointing",
        }

        def engine(forward_only=False):
            return FSDPEngineConfig(strategy=a.strategy, forward_only=forward_only, seed=a.seed,
                                    max_token_len_per_gpu=tokens, infer_max_token_len_per_gpu=tokens,
                                    micro_batch_size_per_gpu=len(PROMPTS), infer_micro_batch_size_per_gpu=len(PROMPTS))

        def optim():
            return FSDPOptimizerConfig(lr=1e-3, total_training_steps=a.steps)

        def model(model_type):
            return HFModelConfig(path=model_dir, model_type=model_type)

        actor_model = model("language_model")
        # What the tree chose, as transformers will see it.
        self.result["settings"]["attn_implementation"] = getattr(actor_model.hf_config, "_attn_implementation", None)
        self.result["settings"]["use_remove_padding"] = actor_model.use_remove_padding
        actor_engine = engine()
        self.result["settings"]["use_torch_compile"] = actor_engine.use_torch_compile
        self.result["settings"]["mixed_precision"] = actor_engine.mixed_precision
        actor_cfg = FSDPActorConfig(strategy=a.strategy, ppo_mini_batch_size=len(PROMPTS), rollout_n=1,
                                    use_kl_loss=True, ppo_epochs=a.ppo_epochs, engine=actor_engine, optim=optim(),
                                    model_config=actor_model, ppo_micro_batch_size_per_gpu=len(PROMPTS))
        critic_engine, critic_model = engine(), model("value_model")
        critic_cfg = FSDPCriticConfig(strategy=a.strategy, ppo_mini_batch_size=len(PROMPTS), rollout_n=1,
                                      ppo_epochs=a.ppo_epochs, engine=critic_engine, optim=optim(), model=critic_model,
                                      ppo_micro_batch_size_per_gpu=len(PROMPTS), shuffle=False)

        def worker(model_type, model_cfg, engine_cfg, optim_cfg):
            return TrainingWorkerConfig(model_type=model_type, model_config=model_cfg, engine_config=engine_cfg,
                                        optimizer_config=optim_cfg)

        return {
            "actor": (actor_cfg, worker("language_model", actor_model, actor_engine, actor_cfg.optim)),
            "ref": worker("language_model", model("language_model"), engine(forward_only=True), None),
            "critic": (critic_cfg, worker("value_model", critic_model, critic_engine, critic_cfg.optim)),
        }

    def _ppo_step(self, torch, model_dir, device):
        from functools import partial

        from verl.workers.engine_workers import TrainingWorker
        from verl.workers.utils.losses import ppo_loss, value_loss

        a = self.args
        torch.manual_seed(a.seed)
        with self.phase("build workers"):
            cfg = self._configs(model_dir)
            actor_cfg, actor_worker_cfg = cfg["actor"]
            actor = TrainingWorker(actor_worker_cfg)
            actor.reset()
            actor.set_loss_fn(partial(ppo_loss, config=actor_cfg))
            ref = TrainingWorker(cfg["ref"])
            ref.reset()
            critic = None
            if a.algo == "gae":
                critic_cfg, critic_worker_cfg = cfg["critic"]
                critic = TrainingWorker(critic_worker_cfg)
                critic.reset()
                critic.set_loss_fn(partial(value_loss, config=critic_cfg))
        actor_before = _param_snapshot(actor.engine.module)
        critic_before = _param_snapshot(critic.engine.module) if critic else None

        for step in range(a.steps):
            self._one_step(torch, model_dir, device, actor, ref, critic, step)

        with self.phase("checks"):
            changed = _changed(actor_before, actor.engine.module)
            self.check("actor weights changed", changed > 0, f"{changed} parameter tensors changed")
            if critic:
                changed = _changed(critic_before, critic.engine.module)
                self.check("critic weights changed", changed > 0, f"{changed} parameter tensors changed")

    def _one_step(self, torch, model_dir, device, actor, ref, critic, step):
        import numpy as np
        from verl.trainer.ppo import core_algos
        from verl.utils import tensordict_utils as tu
        from verl.utils.reward_score import gsm8k
        from verl.workers.utils.padding import left_right_2_no_padding, no_padding_2_padding

        a = self.args
        with self.phase("rollout (HF generate)"):
            batch, texts, hf_model = self._rollout(torch, model_dir, device, step)
        with self.phase("reward (verl gsm8k)"):
            scores = [float(gsm8k.compute_score(text, truth)) for text, (_, truth) in zip(texts, PROMPTS)]
            response_mask = batch["response_mask"]
            last = response_mask.sum(-1).long() - 1
            token_rewards = torch.zeros_like(response_mask, dtype=torch.float32)
            token_rewards[torch.arange(len(scores)), last] = torch.tensor(scores)
        self.result["metrics"]["rewards"] = scores

        def td(extra=None, **non_tensor):
            d = {k: v.clone() for k, v in batch.items()}
            d.update(extra or {})
            t = tu.get_tensordict(tensor_dict=d, non_tensor_dict={"temperature": 1.0})
            t = left_right_2_no_padding(t)
            tu.assign_non_tensor(t, **non_tensor)
            return t

        with self.phase("actor log-probs"):
            data = td(calculate_entropy=True, compute_loss=False)
            out = actor.infer_batch(data)
            old_log_probs = no_padding_2_padding(tu.get(out, "log_probs"), data).float()
            entropy = no_padding_2_padding(tu.get(out, "entropy"), data).float()
        with self.phase("ref log-probs"):
            data = td(calculate_entropy=False, compute_loss=False)
            ref_log_probs = no_padding_2_padding(tu.get(ref.infer_batch(data), "log_probs"), data).float()
        if step == 0:
            self._check_logprobs(torch, hf_model, batch, old_log_probs, response_mask)
        with self.phase("advantages"):
            if critic is not None:
                data = td(compute_loss=False)
                values = no_padding_2_padding(tu.get(critic.infer_batch(data), "values"), data).float()
                advantages, returns = core_algos.compute_gae_advantage_return(
                    token_level_rewards=token_rewards, values=values, response_mask=response_mask,
                    gamma=torch.tensor(1.0), lam=torch.tensor(1.0))
            else:
                index = np.array([f"group{i // 2}" for i in range(len(scores))], dtype=object)
                advantages, returns = core_algos.compute_grpo_outcome_advantage(
                    token_level_rewards=token_rewards, response_mask=response_mask, index=index)
        n = len(PROMPTS)
        if critic is not None:
            with self.phase("critic update"):
                data = td({"values": values, "returns": returns}, global_batch_size=n, mini_batch_size=n,
                          epochs=a.ppo_epochs, seed=a.seed, dataloader_kwargs={"shuffle": False})
                metrics = tu.get(critic.train_mini_batch(data), "metrics")
                self._record("critic", metrics)
        with self.phase("actor update"):
            data = td({"old_log_probs": old_log_probs, "ref_log_prob": ref_log_probs, "advantages": advantages},
                      calculate_entropy=False, global_batch_size=n, mini_batch_size=n, epochs=a.ppo_epochs,
                      seed=a.seed, dataloader_kwargs={"shuffle": False}, compute_loss=True)
            metrics = tu.get(actor.train_mini_batch(data), "metrics")
            self._record("actor", metrics)
        self.result["metrics"]["entropy"] = float(entropy[response_mask.bool()].mean())

    def _rollout(self, torch, model_dir, device, step):
        """Plain HF generation from the actor's starting weights (verl's rollout engines need vLLM/SGLang)."""
        from transformers import AutoModelForCausalLM, AutoTokenizer
        from verl.utils.model import compute_position_id_with_mask

        tok = AutoTokenizer.from_pretrained(model_dir)
        hf_model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32, attn_implementation="eager").to(device)
        hf_model.eval()
        chats = [[{"role": "user", "content": q + INSTRUCTION}] for q, _ in PROMPTS]
        prompts = tok.apply_chat_template(chats, add_generation_prompt=True, tokenize=False)
        enc = tok(prompts, return_tensors="pt", padding=True, padding_side="left").to(device)
        with torch.no_grad():
            gen = hf_model.generate(**enc, max_new_tokens=self.args.max_new_tokens, do_sample=False,
                                    pad_token_id=tok.pad_token_id, eos_token_id=tok.eos_token_id)
        prompt_len = enc.input_ids.shape[1]
        responses = []
        for i, seq in enumerate(gen[:, prompt_len:].tolist()):
            if i % 2 == 0:  # a correct answer, so the scorer has something to reward
                seq = tok(f"The answer is #### {PROMPTS[i][1]}").input_ids + [tok.eos_token_id]
            if tok.eos_token_id in seq:
                seq = seq[: seq.index(tok.eos_token_id) + 1]
            responses.append(seq)
        width = max(len(r) for r in responses)
        resp = torch.full((len(responses), width), tok.pad_token_id, dtype=torch.long)
        resp_mask = torch.zeros((len(responses), width), dtype=torch.long)
        for i, r in enumerate(responses):
            resp[i, : len(r)] = torch.tensor(r)
            resp_mask[i, : len(r)] = 1
        prompt_ids, prompt_mask = enc.input_ids.cpu(), enc.attention_mask.cpu()
        attention_mask = torch.cat([prompt_mask, resp_mask], dim=1)
        batch = {
            "prompts": prompt_ids, "responses": resp, "input_ids": torch.cat([prompt_ids, resp], dim=1),
            "attention_mask": attention_mask, "position_ids": compute_position_id_with_mask(attention_mask),
            "response_mask": resp_mask,
        }
        texts = [tok.decode(r, skip_special_tokens=True) for r in responses]
        return batch, texts, hf_model

    def _check_logprobs(self, torch, hf_model, batch, verl_log_probs, response_mask):
        with torch.no_grad():
            device = next(hf_model.parameters()).device
            logits = hf_model(input_ids=batch["input_ids"].to(device), attention_mask=batch["attention_mask"].to(device),
                              position_ids=batch["position_ids"].to(device)).logits.float().cpu()
        width = batch["responses"].shape[1]
        logp = torch.log_softmax(logits[:, -width - 1:-1], dim=-1)
        hf_log_probs = logp.gather(-1, batch["responses"].unsqueeze(-1)).squeeze(-1)
        mask = response_mask.bool()
        diff = float((hf_log_probs[mask] - verl_log_probs[mask]).abs().max())
        tol = LOGPROB_TOLERANCE["float32"] if self._all_fp32() else LOGPROB_TOLERANCE["other"]
        self.result["metrics"]["logprob_max_abs_diff"] = diff
        self.check("actor log-probs match a plain HF forward", diff <= tol,
                   f"max |diff| {diff:.2e} <= {tol:g}" if diff <= tol else f"max |diff| {diff:.2e} > {tol:g}")

    def _all_fp32(self) -> bool:
        seen = set(self.guard.dtypes_seen) if self.guard else set()
        return not (seen & {"bfloat16", "float16"})

    def _record(self, role, metrics):
        import math

        summary = {}
        for key, value in metrics.items():
            vals = value if isinstance(value, list) else [value]
            nums = [float(v) for v in vals if isinstance(v, (int, float)) or hasattr(v, "__float__")]
            if nums:
                summary[key] = nums[-1] if len(nums) == 1 else sum(nums) / len(nums)
        self.result["metrics"][role] = summary
        for key in ("loss", "grad_norm"):
            if key in summary:
                ok = math.isfinite(summary[key])
                self.check(f"{role} {key} finite", ok, f"{summary[key]:.4g}")
            else:
                self.check(f"{role} {key} finite", False, f"verl reported no {key}")

    # ---- outcomes -----------------------------------------------------------------------------------------------
    def finish_env(self, reason, exc=None) -> int:
        self.result.update(status="error", exit_code=EXIT_ENV, reason=reason)
        if exc is not None:
            self.result["error"] = _error_dict(exc, self.args.tree)
        self.write()
        return EXIT_ENV

    def finish_exception(self, exc, target) -> int:
        error = _error_dict(exc, self.args.tree)
        self.result["error"] = error
        if self.guard and self.guard.violations:
            v = self.guard.violations[0]
            self.result.update(status="fail", exit_code=EXIT_FAIL, reason=f"target violation: {v.message}")
        elif _flash_attn_unavailable(exc) and target.flash_attn_2:
            where = error.get("location") or {}
            self.result.update(
                status="error", exit_code=EXIT_ENV,
                reason=(f"the tree selects FlashAttention-2 (attn_implementation='flash_attention_2'"
                        f"{', at ' + where['file'] + ':' + str(where['line']) if where else ''}), which {target.name} supports, "
                        f"but flash-attn cannot run here ({'no CUDA device' if self.result['device']['kind'] == 'cpu' else 'flash_attn not installed'}); "
                        f"verify on a GPU with flash-attn installed, or against a tree that selects sdpa"))
        elif not error["in_tree"]:  # no frame of the tree in the traceback: the harness or its environment broke
            self.result.update(status="error", exit_code=EXIT_ENV,
                               reason=f"verify could not run the step (raised outside the tree under test) "
                                      f"{type(exc).__name__}: {_first_line(exc)}")
        else:
            self.result.update(status="fail", exit_code=EXIT_FAIL,
                               reason=f"the PPO step raised {type(exc).__name__}: {_first_line(exc)}")
        self.write()
        return self.result["exit_code"]

    def finish_checks(self) -> int:
        failed = [c for c in self.result["checks"] if not c["ok"]]
        if self.guard.violations:  # recorded in watch mode, or swallowed by the code under test
            v = self.guard.violations[0]
            self.result.update(status="fail", exit_code=EXIT_FAIL, reason=f"target violation: {v.message}")
        elif failed:
            self.result.update(status="fail", exit_code=EXIT_FAIL, reason=f"check failed: {failed[0]['name']} ({failed[0]['detail']})")
        else:
            self.result.update(status="pass", exit_code=EXIT_PASS, reason=None)
        self.write()
        return self.result["exit_code"]


def same_generation(torch, target) -> bool:
    """A GPU of the target's own architecture: the card is the judge, so the guard only watches."""
    from rlcompat.knowledge.targets import TargetError, target_for_capability

    try:
        return target_for_capability(*torch.cuda.get_device_capability(0)).architecture == target.architecture
    except TargetError:
        return False


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _param_snapshot(module):
    return {name: p.detach().float().cpu().clone() for name, p in _full_params(module)}


def _full_params(module):
    for name, p in module.named_parameters():
        full = p.full_tensor() if hasattr(p, "full_tensor") else p
        yield name, full


def _changed(before, module) -> int:
    import torch

    return sum(1 for name, p in _full_params(module) if name in before and not torch.equal(before[name], p.detach().float().cpu()))


def _flash_attn_unavailable(exc) -> bool:
    text = f"{exc} {exc.__cause__ or ''} {exc.__context__ or ''}"
    return "FlashAttention2" in text or "flash_attn" in text or "Flash Attention 2" in text


def _first_line(exc) -> str:
    text = str(exc).strip().splitlines()
    return text[0][:300] if text else ""


def _error_dict(exc, tree) -> dict:
    tree_root = os.path.realpath(tree) + os.sep
    frames = traceback.extract_tb(exc.__traceback__)
    # Follow the cause chain too: verl re-raises with `from e`, and the interesting frame is often in the cause.
    chained = exc
    while chained.__cause__ is not None or chained.__context__ is not None:
        chained = chained.__cause__ or chained.__context__
        frames = traceback.extract_tb(chained.__traceback__) + frames
    in_tree = [f for f in frames if os.path.realpath(f.filename).startswith(tree_root)]
    loc = in_tree[-1] if in_tree else (frames[-1] if frames else None)
    return {
        "type": type(exc).__name__, "message": str(exc)[:2000], "in_tree": bool(in_tree),
        "location": {"file": os.path.realpath(loc.filename), "line": loc.lineno, "function": loc.name} if loc else None,
        "traceback": "".join(traceback.format_exception(exc))[-6000:],
    }


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m rlcompat.verify.harness")
    p.add_argument("--tree", required=True, help="the verl package directory under test (its parent is on sys.path)")
    p.add_argument("--target", required=True)
    p.add_argument("--device", choices=["auto", "cpu", "cuda"], default="auto")
    p.add_argument("--strategy", choices=["fsdp2", "fsdp"], default="fsdp2")
    p.add_argument("--algo", choices=["gae", "grpo"], default="gae")
    p.add_argument("--steps", type=int, default=1)
    p.add_argument("--ppo-epochs", type=int, default=2)
    p.add_argument("--max-new-tokens", type=int, default=12)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--workdir", required=True)
    p.add_argument("--result", required=True)
    args = p.parse_args(argv)
    harness = Harness(args)
    try:
        return harness.run()
    except Exception as exc:  # a bug in the harness itself: still leave a result behind
        harness.result.update(status="error", exit_code=EXIT_ENV, reason=f"verify harness error: {type(exc).__name__}: {exc}")
        harness.result["error"] = _error_dict(exc, args.tree)
        harness.write()
        return EXIT_ENV


if __name__ == "__main__":
    sys.exit(main())
