"""The `hf` rollout for verl: its generator against transformers, weight sync, log-probs, and its registration."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from rlcompat.verify.tiny_model import build_tiny_model  # noqa: E402
from rlcompat.verl_plugin.engine import HFGenerator, Request  # noqa: E402

PROMPTS = ["What is 2 + 3?", "Betty has 5 apples and buys 7 more. How many?", "Natalia sold clips"]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    folder = build_tiny_model(tmp_path_factory.mktemp("tiny") / "m", seed=0)
    tok = transformers.AutoTokenizer.from_pretrained(folder)
    return folder, tok


def _prompt_ids(tok):
    return [tok.apply_chat_template([{"role": "user", "content": p}], add_generation_prompt=True, tokenize=True,
                                    return_dict=False) for p in PROMPTS]


def _generator(folder):
    return HFGenerator.from_pretrained(str(folder), device="cpu", dtype=torch.float32, attn_implementation="eager")


def test_greedy_matches_transformers_generate_token_for_token(tiny):
    folder, tok = tiny
    gen = _generator(folder)
    reference = transformers.AutoModelForCausalLM.from_pretrained(folder, attn_implementation="eager").eval()
    prompts = _prompt_ids(tok)
    assert len({len(p) for p in prompts}) > 1  # different lengths: the batch is left-padded
    ours = gen.generate([Request(p, max_tokens=12, temperature=0.0, stop_ids=frozenset({tok.eos_token_id}))
                         for p in prompts])
    for prompt, completion in zip(prompts, ours):
        ids = torch.tensor([prompt])
        want = reference.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=12, do_sample=False,
                                  eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id)[0, len(prompt):]
        want = want.tolist()
        if tok.eos_token_id in want:  # HF pads after EOS; we stop there
            want = want[: want.index(tok.eos_token_id) + 1]
        assert completion.token_ids == want
        assert len(completion.token_ids) == 12 or completion.finish_reason == "stop"


def test_log_probs_match_a_plain_forward(tiny):
    folder, tok = tiny
    gen = _generator(folder)
    prompt = _prompt_ids(tok)[1]
    (c,) = gen.generate([Request(prompt, max_tokens=8, temperature=1.0, want_logprobs=True, seed=3)])
    assert c.log_probs is not None and len(c.log_probs) == len(c.token_ids) == 8
    full = torch.tensor([prompt + c.token_ids])
    with torch.no_grad():
        logits = gen.model(full).logits[0, len(prompt) - 1: -1].float()
    want = torch.log_softmax(logits, -1).gather(-1, torch.tensor(c.token_ids).unsqueeze(-1)).squeeze(-1)
    assert torch.allclose(torch.tensor(c.log_probs), want, atol=1e-4)
    (g,) = gen.generate([Request(prompt, max_tokens=4, temperature=0.0)])
    assert g.log_probs is None  # only when asked


def test_sampling_settings_are_honoured(tiny):
    folder, tok = tiny
    gen = _generator(folder)
    prompt = _prompt_ids(tok)[0]
    a = gen.generate([Request(prompt, max_tokens=10, temperature=1.0, seed=7)])[0].token_ids
    b = gen.generate([Request(prompt, max_tokens=10, temperature=1.0, seed=7)])[0].token_ids
    c = gen.generate([Request(prompt, max_tokens=10, temperature=1.0, seed=8)])[0].token_ids
    assert a == b and a != c  # seeded rows repeat; another seed differs
    greedy = gen.generate([Request(prompt, max_tokens=10, temperature=0.0)])[0].token_ids
    top1 = gen.generate([Request(prompt, max_tokens=10, temperature=1.5, top_k=1, seed=1)])[0].token_ids
    tiny_p = gen.generate([Request(prompt, max_tokens=10, temperature=1.5, top_p=1e-6, seed=2)])[0].token_ids
    assert top1 == greedy == tiny_p  # top_k=1 and a vanishing top_p both leave only the argmax
    stop = greedy[3]
    stopped = gen.generate([Request(prompt, max_tokens=10, temperature=0.0, stop_ids=frozenset({stop}))])[0]
    assert stopped.token_ids == greedy[: greedy.index(stop) + 1] and stopped.finish_reason == "stop"
    mixed = gen.generate([Request(prompt, max_tokens=3, temperature=0.0), Request(prompt, max_tokens=6, temperature=0.0)])
    assert [m.token_ids for m in mixed] == [greedy[:3], greedy[:6]]


def test_weight_sync_changes_outputs_and_sleep_keeps_them(tiny):
    folder, tok = tiny
    gen = _generator(folder)
    actor = transformers.AutoModelForCausalLM.from_pretrained(folder)
    prompt = _prompt_ids(tok)[0]
    before = gen.generate([Request(prompt, max_tokens=10, temperature=0.0)])[0].token_ids
    with torch.no_grad():  # an "actor update": the output layer learns to prefer one token
        actor.lm_head.weight.mul_(0.0)
        actor.lm_head.weight[42].fill_(1.0)
        actor.lm_head.bias = None
    gen.sleep()
    with pytest.raises(RuntimeError, match="asleep"):
        gen.generate([Request(prompt, max_tokens=2)])
    gen.wake_up()
    copied = gen.load_weights((n, p.detach().clone()) for n, p in actor.state_dict().items())
    assert copied == len(actor.state_dict())
    after = gen.generate([Request(prompt, max_tokens=10, temperature=0.0)])[0].token_ids
    assert after != before
    want = actor.generate(torch.tensor([prompt]), max_new_tokens=10, do_sample=False, eos_token_id=None,
                          pad_token_id=tok.pad_token_id)[0, len(prompt):].tolist()
    assert after == want
    with pytest.raises(ValueError, match="no weights named"):
        gen.load_weights([("model.nope.weight", torch.zeros(1))])
    with pytest.raises(ValueError, match="shape"):
        gen.load_weights([("lm_head.weight", torch.zeros(3, 3))])


def _in_child(code: str) -> dict:
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_import_verl_registers_the_hf_rollout():
    pytest.importorskip("verl")
    out = _in_child(
        "import json, verl\n"
        "from verl.workers.rollout.replica import get_rollout_replica_class\n"
        "from verl.workers.rollout.base import get_rollout_class\n"
        "print(json.dumps({'replica': get_rollout_replica_class('hf').__name__,\n"
        "                  'adapter': get_rollout_class('hf', 'async').__name__}))\n"
    )
    assert out == {"replica": "HFReplica", "adapter": "HFServerAdapter"}


def test_other_verl_versions_are_refused_with_one_line():
    pytest.importorskip("verl")
    out = _in_child(
        "import json, verl\n"
        "verl.__version__ = '0.8.0'\n"
        "import rlcompat.verl_plugin as p\n"
        "p._registered = False\n"
        "p.register()\n"
        "from verl.workers.rollout.replica import RolloutReplicaRegistry\n"
        "try:\n    RolloutReplicaRegistry.get('hf')\nexcept Exception as e:\n    msg = str(e)\n"
        "print(json.dumps({'msg': msg}))\n"
    )
    assert "supports verl 0.9.1 only; this is verl 0.8.0" in out["msg"] and "\n" not in out["msg"]


def test_tied_output_layer_takes_either_name(tmp_path):
    from rlcompat.verify.tiny_model import TinyModelSpec

    folder = build_tiny_model(tmp_path / "tied", seed=1, spec=TinyModelSpec(tie_word_embeddings=True))
    gen = _generator(folder)
    assert gen.model.lm_head.weight is gen.model.model.embed_tokens.weight
    new = torch.randn_like(gen.model.lm_head.weight)
    assert gen.load_weights([("lm_head.weight", new)]) == 1
    assert torch.equal(gen.model.model.embed_tokens.weight, new)  # one tensor, two names
