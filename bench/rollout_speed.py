"""Decode speed of the hf rollout against transformers' static-cache generate, on one GPU, in one process.

For a random Qwen2 of Qwen2.5-0.5B's shape in fp32 (the model `verify --trainer --model-size 0.5b` trains), at each
batch x prompt x response size: milliseconds per decode step and tokens/s of
  - rollout:          rlcompat's HFGenerator (rlcompat/verl_plugin/engine.py) under the sm61 target guard, as it
                      runs in `verify --trainer`;
  - rollout_no_guard: the same without the guard;
  - hf_static:        `model.generate(cache_implementation="static")`, transformers' own fixed-cache path;
plus the memory-bandwidth bound of reading the weights once a step, on this device (its copy bandwidth measured here)
and on a Tesla P40 (346 GB/s, NVIDIA's Tesla P40 datasheet). Every figure counts the whole generate call (prefill
included) divided by the tokens decoded, the same way for all three; every row decodes exactly `response` tokens.
Each figure is the best timed call after one warm-up call of the same shape; for the guarded rollout the warm-up
call, in which the guard watches each part of the loop operator by operator (rlcompat/verl_plugin/watch_grain.py),
is also kept (`rollout_guard_first_call_ms_per_step`).

Runs on the device (see the top of bench/verify_trainer_on_device.sh for the machine; it needs only torch and
transformers there, and rlcompat installed with `pip install --no-deps --target`):
    python3 bench/rollout_speed.py --out $OUT/rollout_speed.json [--quick] [--mixed | --only-mixed]
`--mixed` adds what continuous batching changes (`mixed_cases`: mixed-length and staggered requests batch by batch
against continuously; wall time and decode steps).
Writes the table to stdout and the figures as JSON (bench/results/rollout_speed.json is a copy of a device run).
"""

from __future__ import annotations

import argparse
import json
import time

import torch

P40_BYTES_PER_SECOND = 346e9  # NVIDIA Tesla P40 datasheet: 346 GB/s GDDR5


def build_model(device: str) -> torch.nn.Module:
    from transformers import Qwen2Config, Qwen2ForCausalLM

    torch.manual_seed(0)
    config = Qwen2Config(hidden_size=896, num_hidden_layers=24, num_attention_heads=14, num_key_value_heads=2,
                         intermediate_size=4864, vocab_size=151936, max_position_embeddings=4096,
                         tie_word_embeddings=True)
    config._attn_implementation = "sdpa"
    return Qwen2ForCausalLM(config).to(device, torch.float32).eval()


def copy_bandwidth(device: str) -> float:
    """Bytes per second a device-to-device copy moves (read + write), the roofline's ceiling on this card."""
    src = torch.empty(2 ** 30 // 4, dtype=torch.float32, device=device)
    dst = torch.empty_like(src)
    for _ in range(3):
        dst.copy_(src)
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(10):
        dst.copy_(src)
    torch.cuda.synchronize()
    return 2 * src.numel() * 4 * 10 / (time.perf_counter() - start)


def timed(fn, reps: int) -> tuple[float, float]:
    """(the first call's seconds, the best of `reps` calls after it)."""
    torch.cuda.synchronize()
    start = time.perf_counter()
    fn()  # warm-up: allocator, kernels' first launch, the graph's capture, the guard's first look at each part
    torch.cuda.synchronize()
    first = time.perf_counter() - start
    best = float("inf")
    for _ in range(reps):
        torch.cuda.synchronize()
        start = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        best = min(best, time.perf_counter() - start)
    return first, best


def rollout_call(generator, prompts, response):
    from rlcompat.verl_plugin.engine import Request

    def call():
        out = generator.generate([Request(list(p), max_tokens=response, temperature=1.0) for p in prompts])
        assert all(len(c.token_ids) == response for c in out)
    return call


def hf_static_call(model, prompts, response):
    ids = torch.tensor(prompts, device=model.device)

    def call():
        out = model.generate(input_ids=ids, attention_mask=torch.ones_like(ids), max_new_tokens=response,
                             min_new_tokens=response, do_sample=True, temperature=1.0, top_p=1.0, top_k=0,
                             pad_token_id=0, cache_implementation="static")
        assert out.shape[1] - ids.shape[1] == response
    return call


def mixed_cases(generator, reps: int) -> list[dict]:
    """What continuous batching changes: the same requests decoded batch by batch (each batch to its longest
    response, a request arriving meanwhile waiting for the next; what the rollout did before) and continuously
    (rows refilled as they finish, arrivals joining free rows). Responses of mixed lengths stand in for answers
    that end at EOS; the random model never emits EOS, so each row decodes exactly its max tokens."""
    from rlcompat.verl_plugin.batching import Job
    from rlcompat.verl_plugin.engine import Request

    rng = torch.Generator().manual_seed(7)

    def requests(count, prompt, low, high):
        lengths = torch.randint(low, high + 1, (count,), generator=rng).tolist()
        return [Request(torch.randint(0, 150000, (prompt,), generator=rng).tolist(), max_tokens=n, temperature=1.0)
                for n in lengths]

    cases = [
        # verl's single-turn traffic: every request of the step arrives within ~10 ms, before the first step
        ("all at once, 8 requests, 32-512 tokens", requests(8, 96, 32, 512), [0] * 8, 8),
        # a straggler group (seen in 2 of 20 H100 steps): 6 requests, then 2 more arriving at decode step 4
        ("6 + 2 arriving at step 4, 32-512 tokens", requests(8, 96, 32, 512), [0] * 6 + [4] * 2, 8),
        # more requests than rows (batch x n above max_num_seqs, or many agent-loop workers): 32 on 8 rows
        ("32 requests on 8 rows, 32-512 tokens", requests(32, 96, 32, 512), [0] * 32, 8),
    ]
    out = []
    for name, reqs, arrive, rows in cases:
        generator.max_rows = rows

        def batch_by_batch():
            # a batch starts with whatever waits when the previous one ended, at most `rows` of them
            pending = list(zip(arrive, reqs))
            while pending:
                now = [r for a, r in pending if a == 0][:rows] or [pending[0][1]]
                generator.generate(now)
                pending = [(0, r) for a, r in pending if r not in now]

        def continuous():
            schedule = sorted(zip(arrive, range(len(reqs))))
            step = [-1]

            def take(n):
                step[0] += 1
                taken = []
                while schedule and schedule[0][0] <= step[0] and len(taken) < n:
                    taken.append(Job(reqs[schedule.pop(0)[1]], lambda c: None))
                return taken
            generator.serve(take)

        tokens = sum(r.max_tokens for r in reqs)
        before = generator.steps_decoded
        _, batched = timed(batch_by_batch, reps)
        batched_steps = (generator.steps_decoded - before) // (reps + 1)
        before = generator.steps_decoded
        _, cont = timed(continuous, reps)
        cont_steps = (generator.steps_decoded - before) // (reps + 1)
        row = {"case": name, "requests": len(reqs), "rows": rows, "tokens": tokens,
               "batch_by_batch_s": batched, "continuous_s": cont,
               "batch_by_batch_decode_steps": batched_steps, "continuous_decode_steps": cont_steps,
               "batch_by_batch_tokens_per_s": tokens / batched, "continuous_tokens_per_s": tokens / cont,
               "speedup": batched / cont}
        out.append(row)
        print(f"{name}: batch by batch {batched:.2f} s, continuous {cont:.2f} s ({row['speedup']:.2f}x), "
              f"{tokens} tokens, decode steps {batched_steps} / {cont_steps}", flush=True)
    generator.max_rows = 256
    return out


def guarded():
    from rlcompat.knowledge.targets import resolve_target
    from rlcompat.verify.guard import TargetGuard

    return TargetGuard(resolve_target("sm61"), None, enforce=True, device="cuda")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--quick", action="store_true", help="batch 8, prompt 96, response 64 only")
    parser.add_argument("--sizes", help="only these, as BATCHxPROMPTxRESPONSE[,...] (e.g. 32x96x64)")
    parser.add_argument("--reps", type=int, default=1, help="timed calls per figure after one warm-up (best kept)")
    parser.add_argument("--mixed", action="store_true",
                        help="also time mixed-length / staggered requests batch by batch and continuously")
    parser.add_argument("--only-mixed", action="store_true", help="the mixed cases only")
    parser.add_argument("--short-reps", type=int, default=3,
                        help="the same for 64-token responses, whose calls are short enough to repeat")
    args = parser.parse_args()

    from rlcompat.verl_plugin.engine import HFGenerator

    device = "cuda"
    model = build_model(device)
    weight_bytes = sum(p.numel() * p.element_size() for p in model.parameters())
    bandwidth = copy_bandwidth(device)
    generator = HFGenerator(model, device, pad_token_id=0)
    sizes = [tuple(int(n) for n in size.split("x")) for size in args.sizes.split(",")] if args.sizes else \
        [(8, 96, 64)] if args.quick else [
        (b, p, r) for r in (64, 512) for b in (1, 8, 32) for p in (96, 512)]  # short responses first
    if args.only_mixed:
        sizes = []
    rows = []
    for batch, prompt, response in sizes:
        prompts = torch.randint(0, 150000, (batch, prompt), generator=torch.Generator().manual_seed(batch)).tolist()
        reps = args.short_reps if response <= 64 else args.reps
        with torch.no_grad():
            _, plain = timed(rollout_call(generator, prompts, response), reps)
            # transformers compiles its static-cache generate (CompileConfig's mode "reduce-overhead": CUDA graph
            # trees); the rollout's kept graphs are dropped first so the two never share a run, and the guarded
            # calls below start from a new decoder, captured under the guard.
            generator.release_decoders()
            _, static = timed(hf_static_call(model, prompts, response), reps)
            guard = guarded().install()
            try:
                guard_first, with_guard = timed(rollout_call(generator, prompts, response), reps)
            finally:
                guard.uninstall()
            violations = [v.to_dict() for v in guard.violations]
        row = {
            "batch": batch, "prompt": prompt, "response": response,
            "rollout_ms_per_step": 1000 * with_guard / response,
            "rollout_no_guard_ms_per_step": 1000 * plain / response,
            # the first call under a new guard: each part of the loop watched operator by operator once
            "rollout_guard_first_call_ms_per_step": 1000 * guard_first / response,
            "hf_static_ms_per_step": 1000 * static / response,
            "rollout_tokens_per_s": batch * response / with_guard,
            "hf_static_tokens_per_s": batch * response / static,
            "guard_violations": len(violations),
            "timed_calls": reps,
        }
        row["rollout_vs_hf_static"] = row["rollout_ms_per_step"] / row["hf_static_ms_per_step"]
        row["guard_overhead"] = row["rollout_ms_per_step"] / row["rollout_no_guard_ms_per_step"] - 1
        rows.append(row)
        write(args.out, summary(rows, weight_bytes, bandwidth))  # a run cut short keeps what it measured
        print(f"batch {batch:3d} prompt {prompt:4d} response {response:4d}: rollout {row['rollout_ms_per_step']:.2f} "
              f"ms/step (no guard {row['rollout_no_guard_ms_per_step']:.2f}), hf static "
              f"{row['hf_static_ms_per_step']:.2f}: {row['rollout_vs_hf_static']:.2f}x, guard "
              f"{100 * row['guard_overhead']:+.0f}%, {row['rollout_tokens_per_s']:.0f} tokens/s, "
              f"{len(violations)} guard violations", flush=True)
    result = summary(rows, weight_bytes, bandwidth)
    if args.mixed or args.only_mixed:
        with torch.no_grad():
            result["mixed"] = mixed_cases(generator, 1)
    write(args.out, result)
    print(f"roofline: {result['roofline_ms_per_step']['device']:.2f} ms/step on this device, "
          f"{result['roofline_ms_per_step']['tesla_p40']:.2f} on a Tesla P40")


def summary(rows: list[dict], weight_bytes: int, bandwidth: float) -> dict:
    result = {
        "device": torch.cuda.get_device_name(),
        "torch": torch.__version__,
        "transformers": __import__("transformers").__version__,
        "weight_bytes": weight_bytes,
        "device_copy_bytes_per_s": bandwidth,
        "roofline_ms_per_step": {"device": 1000 * weight_bytes / bandwidth,
                                 "tesla_p40": 1000 * weight_bytes / P40_BYTES_PER_SECOND},
        "rows": rows,
    }
    headline = next((r for r in rows if (r["batch"], r["prompt"], r["response"]) == (8, 96, 64)), None)
    if headline:
        result.update(batch=8, rollout_ms_per_step=headline["rollout_ms_per_step"],
                      rollout_no_guard_ms_per_step=headline["rollout_no_guard_ms_per_step"],
                      hf_static_ms_per_step=headline["hf_static_ms_per_step"])
    # Set in the committed copy (bench/results/rollout_speed.json) from a two-GPU `verify --trainer` run
    # (bench/verify_trainer_on_device.sh two), with `sleep_wake`: this script measures one process on one GPU.
    result["two_gpu_pass"] = None
    return result


def write(path: str, result: dict) -> None:
    with open(path, "w", encoding="utf-8") as f:
        json.dump(result, f, indent=1)

if __name__ == "__main__":
    main()
