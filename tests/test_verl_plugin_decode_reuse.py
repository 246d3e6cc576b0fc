"""The hf rollout's decoders kept from batch to batch, and the guard watching each part of its loop once."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from rlcompat.knowledge.targets import resolve_target  # noqa: E402
from rlcompat.verify.guard import TargetGuard, TargetViolation  # noqa: E402
from rlcompat.verl_plugin.engine import HFGenerator, Request  # noqa: E402
from rlcompat.verl_plugin.watch_grain import WatchGrain  # noqa: E402

PROMPTS = ["What is 2 + 3?", "Betty has 5 apples and buys 7 more. How many?", "Natalia sold clips"]
OTHER = ["Weng earns $12 an hour for babysitting.", "James writes a 3-page letter", "How many pages a year?"]


def _ids(tok, texts):
    return [tok.apply_chat_template([{"role": "user", "content": p}], add_generation_prompt=True, tokenize=True,
                                    return_dict=False) for p in texts]


def _greedy(prompts, n=10):
    return [Request(p, max_tokens=n, temperature=0.0) for p in prompts]


def _generator(folder, device="cpu", attn="eager"):
    return HFGenerator.from_pretrained(str(folder), device=device, dtype=torch.float32, attn_implementation=attn)


def _reference(folder, prompts, n=10):
    model = transformers.AutoModelForCausalLM.from_pretrained(folder, attn_implementation="eager").eval()
    out = []
    for prompt in prompts:
        ids = torch.tensor([prompt])
        out.append(model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=n, min_new_tokens=n,
                                  do_sample=False, pad_token_id=0)[0, len(prompt):].tolist())
    return out


def _guard(device="cpu"):
    return TargetGuard(resolve_target("sm61"), None, enforce=True, device=device).install()


def test_a_kept_decoder_serves_the_next_batches_with_transformers_tokens(tiny):
    folder, tok = tiny
    gen = _generator(folder)
    first, other = _ids(tok, PROMPTS), _ids(tok, OTHER)
    want_first, want_other = _reference(folder, first), _reference(folder, other)
    assert [c.token_ids for c in gen.generate(_greedy(first))] == want_first
    (decoder,) = gen._decoders.values()
    # other prompts of another width in the same length bucket: the same decoder, reset in place
    assert [c.token_ids for c in gen.generate(_greedy(other))] == want_other
    assert list(gen._decoders.values()) == [decoder]
    assert [c.token_ids for c in gen.generate(_greedy(first))] == want_first
    # a batch of another size takes a second decoder; a third shape drops the least recently used
    gen.generate(_greedy(first[:2]))
    gen.generate(_greedy(first[:1]))
    assert len(gen._decoders) == 2 and decoder not in gen._decoders.values()
    gen.release_decoders()  # verl's release_kv_cache
    assert not gen._decoders
    assert [c.token_ids for c in gen.generate(_greedy(first))] == want_first


def test_the_guard_watches_each_part_once_then_checks_its_results(tiny):
    folder, tok = tiny
    gen = _generator(folder)
    prompts = _ids(tok, PROMPTS)
    unguarded = [c.token_ids for c in gen.generate(_greedy(prompts, 16))]
    guard = _guard()
    try:
        counts = []
        for _ in range(2):
            before = sum(guard.dtypes_seen.values())
            tokens = [c.token_ids for c in gen.generate(_greedy(prompts, 16))]
            counts.append(sum(guard.dtypes_seen.values()) - before)
            assert tokens == unguarded
    finally:
        guard.uninstall()
    assert not guard.violations
    # the first call passes every operator of prefill, one sampling step and one decode step through the watch;
    # the second only the results of each part, about ten tensors a step instead of a few hundred operators
    assert counts[1] < counts[0] / 3, counts


def test_a_part_run_unwatched_still_fails_on_a_bf16_result():
    grain = WatchGrain(torch.device("cpu"), torch.float32)
    guard = _guard()
    try:
        with grain.part("prefill") as first:
            torch.ones(2) * 2
        with grain.part("prefill") as again:
            made = torch.ones(2, dtype=torch.bfloat16)  # unwatched: no operator is looked at
            assert not guard.violations
            with pytest.raises(TargetViolation, match="bfloat16 tensor produced by hf rollout prefill on sm61"):
                again.check(torch.ones(2), made)
        with pytest.raises(TargetViolation, match="aten"):  # out of the part, the watch is back on every operator
            torch.ones(2, dtype=torch.bfloat16)
    finally:
        guard.uninstall()
    assert first.watched and not again.watched
    assert [v.kind for v in guard.violations] == ["bf16", "bf16"]


def test_autocast_brings_the_watch_back_operator_by_operator(tiny):
    folder, tok = tiny
    gen = _generator(folder)
    prompts = _ids(tok, PROMPTS)
    guard = _guard()
    try:
        gen.generate(_greedy(prompts, 4))
        with torch.autocast("cpu", dtype=torch.bfloat16), pytest.raises(TargetViolation) as raised:
            gen.generate(_greedy(prompts, 4))
    finally:
        guard.uninstall()
    assert "hf rollout" not in str(raised.value)  # caught at the operator, not at a part's results
    assert "aten." in str(raised.value)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA graphs need a GPU")
def test_a_captured_graph_is_replayed_in_later_batches_and_the_guard_changes_no_token(tiny):
    folder, tok = tiny
    gen = _generator(folder, device="cuda", attn="sdpa")
    prompts = _ids(tok, PROMPTS)
    first = [c.token_ids for c in gen.generate(_greedy(prompts, 40))]
    (decoder,) = gen._decoders.values()
    graph = decoder.graph
    assert graph is not None
    assert [c.token_ids for c in gen.generate(_greedy(prompts, 40))] == first
    assert decoder.graph is graph  # captured once for this shape and replayed
    guard = _guard(device="cuda")
    try:
        assert [c.token_ids for c in gen.generate(_greedy(prompts, 40))] == first
        watched = decoder.graph
        assert watched is not graph  # captured again where the new guard's watch sees every operator
        assert [c.token_ids for c in gen.generate(_greedy(prompts, 40))] == first
    finally:
        guard.uninstall()
    assert not guard.violations
    assert decoder.graph is watched  # and from then on replayed
    gen.sleep()
    assert not gen._decoders  # the weights left the device: the graphs that read them go
    gen.wake_up()
    assert [c.token_ids for c in gen.generate(_greedy(prompts, 40))] == first


def test_with_another_dispatch_mode_on_the_stack_nothing_is_paused_and_no_part_counts_as_first():
    from torch.utils._python_dispatch import TorchDispatchMode

    class Passthrough(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            return func(*args, **(kwargs or {}))

    grain = WatchGrain(torch.device("cpu"), torch.float32)
    guard = _guard()
    try:
        with grain.part("decode") as first:
            torch.ones(2) * 2
        with Passthrough(), grain.part("decode") as again:
            with pytest.raises(TargetViolation, match="aten"):  # still watched operator by operator
                torch.ones(2, dtype=torch.bfloat16)
    finally:
        guard.uninstall()
    assert first.watched and not again.watched  # a kept graph is not captured again step after step
