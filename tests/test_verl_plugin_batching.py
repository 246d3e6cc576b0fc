"""Continuous batching in the hf rollout: requests arriving during a decode take free rows, finished rows are
refilled, and every request still gets the tokens transformers' `generate` gives it alone (greedy, on a CPU)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from rlcompat.verify.tiny_model import build_tiny_model  # noqa: E402
from rlcompat.verl_plugin.batching import Job, rows_for  # noqa: E402
from rlcompat.verl_plugin.engine import HFGenerator, Request  # noqa: E402

TEXTS = ["What is 2 + 3?", "Betty has 5 apples and buys 7 more. How many?", "Natalia sold clips",
         "Weng earns $12 an hour for babysitting.", "James writes a 3-page letter to 2 friends twice a week.",
         "How many pages a year?"]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    folder = build_tiny_model(tmp_path_factory.mktemp("tiny") / "m", seed=0)
    tok = transformers.AutoTokenizer.from_pretrained(folder)
    prompts = [tok.apply_chat_template([{"role": "user", "content": t}], add_generation_prompt=True, tokenize=True,
                                       return_dict=False) for t in TEXTS]
    model = transformers.AutoModelForCausalLM.from_pretrained(folder, attn_implementation="eager").eval()
    return folder, tok, prompts, model


def _alone(model, prompt, n, eos=None):
    """transformers' greedy tokens for one prompt on its own (no padding, no other rows)."""
    ids = torch.tensor([prompt], device=model.device)
    kwargs = {"eos_token_id": eos} if eos is not None else {"min_new_tokens": n}
    out = model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=n, do_sample=False, pad_token_id=0,
                         **kwargs)[0, len(prompt):].tolist()
    return out[: out.index(eos) + 1] if eos is not None and eos in out else out


class Arrivals:
    """A `take` that hands out each job at the decode step it arrives at, and records when jobs finish."""

    def __init__(self, schedule):  # [(step, Request)]
        self.schedule = sorted(schedule, key=lambda s: s[0])
        self.step = -1
        self.results, self.finished_at, self.groups = {}, {}, []

    def take(self, n):
        self.step += 1  # called once per decode step
        out = []
        while self.schedule and self.schedule[0][0] <= self.step and len(out) < n:
            _, request = self.schedule.pop(0)
            out.append(Job(request, self._finisher(request)))
        return out

    def _finisher(self, request):
        def finish(completion):
            self.results[id(request)] = completion
            self.finished_at[id(request)] = self.step
        return finish


@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=[
    pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA graphs need a GPU")])])
def test_staggered_arrivals_and_mixed_lengths_give_each_request_generate_alone_tokens(tiny, device):
    folder, _tok, prompts, model = tiny
    gen = HFGenerator.from_pretrained(str(folder), device=device, dtype=torch.float32,
                                      attn_implementation="eager" if device == "cpu" else "sdpa")
    if device == "cuda":  # the decode step replayed from a CUDA graph while rows are filled around it
        model = gen.model
    gen.max_rows = 4  # verl's max_num_seqs: at most 4 rows, so later arrivals must wait for rows to free
    lengths = [20, 3, 12, 7, 9, 5]
    requests = [Request(p, max_tokens=n, temperature=0.0) for p, n in zip(prompts, lengths)]
    # three at once, then one at step 2 (a free row: the decoder has 4), then two more while all rows are busy
    arrivals = Arrivals([(0, requests[0]), (0, requests[1]), (0, requests[2]), (2, requests[3]), (4, requests[4]),
                         (6, requests[5])])
    gen.serve(arrivals.take, on_group=arrivals.groups.append)
    assert rows_for(3, 256) == 4 and len(gen._decoders) == 1  # one decoder of 4 rows served all six
    for request, n in zip(requests, lengths):
        got = arrivals.results[id(request)]
        assert got.token_ids == _alone(model, request.prompt_ids, n), request.max_tokens
        assert got.finish_reason == "length"
    # the one arriving at step 2 started at once, beside the running rows, and did not wait for the longest
    assert arrivals.groups[:2] == [3, 1]
    assert arrivals.finished_at[id(requests[3])] < arrivals.finished_at[id(requests[0])]
    # the later two took rows freed by finished requests while the 20-token request was still decoding
    assert arrivals.finished_at[id(requests[4])] < arrivals.finished_at[id(requests[0])]
    assert len(arrivals.groups) >= 4 and sum(arrivals.groups) == 6
    if device == "cuda":
        (decoder,) = gen._decoders.values()
        assert decoder.graph is not None


def test_a_row_freed_by_a_stop_id_is_refilled_and_the_stop_ends_that_request_only(tiny):
    folder, _tok, prompts, model = tiny
    gen = HFGenerator.from_pretrained(str(folder), device="cpu", dtype=torch.float32, attn_implementation="eager")
    gen.max_rows = 2
    free_run = _alone(model, prompts[1], 30)
    stop = free_run[4]  # a token this prompt produces fifth: its request stops there
    requests = [Request(prompts[1], max_tokens=30, temperature=0.0, stop_ids=frozenset({stop})),
                Request(prompts[0], max_tokens=30, temperature=0.0),
                Request(prompts[2], max_tokens=6, temperature=0.0)]
    arrivals = Arrivals([(0, requests[0]), (0, requests[1]), (1, requests[2])])  # 2 rows: the third must wait
    gen.serve(arrivals.take, on_group=arrivals.groups.append)
    first = arrivals.results[id(requests[0])]
    assert first.token_ids == _alone(model, prompts[1], 30, eos=stop) and first.finish_reason == "stop"
    assert len(first.token_ids) <= 5
    assert arrivals.results[id(requests[1])].token_ids == _alone(model, prompts[0], 30)
    assert arrivals.results[id(requests[2])].token_ids == _alone(model, prompts[2], 6)
    assert arrivals.groups == [2, 1]  # the third went into the row the stopped request freed
    assert arrivals.finished_at[id(requests[2])] < arrivals.finished_at[id(requests[1])]


def test_more_arrivals_than_free_rows_or_slots_move_the_busy_rows_to_a_larger_decoder(tiny):
    folder, _tok, prompts, model = tiny
    gen = HFGenerator.from_pretrained(str(folder), device="cpu", dtype=torch.float32, attn_implementation="eager")
    first = Request(prompts[0], max_tokens=24, temperature=0.0)  # alone at first: a decoder of one row
    late = [Request(p, max_tokens=n, temperature=0.0) for p, n in zip(prompts[1:4], (5, 8, 6))]
    longer = Request(prompts[4], max_tokens=90, temperature=0.0)  # more slots than the decoder has
    arrivals = Arrivals([(0, first)] + [(3, r) for r in late] + [(6, longer)])
    gen.serve(arrivals.take, on_group=arrivals.groups.append)
    for request in [first, *late, longer]:
        assert arrivals.results[id(request)].token_ids == _alone(model, request.prompt_ids, request.max_tokens)
    assert arrivals.groups == [1, 3, 1]  # the late ones started together at step 3, beside the first
    assert all(arrivals.finished_at[id(r)] < arrivals.finished_at[id(first)] for r in late)
    assert {key[:2] for key in gen._decoders} == {(4, 64), (8, 192)}  # 1 row, then 4, then 8 x 192 slots


def test_a_failure_reaches_every_job_in_flight(tiny):
    folder, _tok, prompts, _model = tiny
    gen = HFGenerator.from_pretrained(str(folder), device="cpu", dtype=torch.float32, attn_implementation="eager")
    failed = []
    jobs = [Job(Request(p, max_tokens=4, temperature=0.0), lambda c: None, failed.append) for p in prompts[:2]]
    jobs.append(Job(Request([10 ** 9], max_tokens=4, temperature=0.0), lambda c: None, failed.append))  # no such token
    handed = list(jobs)

    def take(n):
        out, handed[:] = handed[:n], handed[n:]
        return out

    with pytest.raises(IndexError):
        gen.serve(take)
    assert len(failed) == 3 and all(isinstance(e, IndexError) for e in failed)


def _finishes(server, coroutine_fn, timeout: float):
    """Run `asyncio.run(coroutine_fn())` on a thread: (whether it returned within `timeout` s, its result). Where it
    did not, the server's loop task is cancelled once more so that the thread ends and no test hangs."""
    import asyncio
    import threading

    out = []
    runner = threading.Thread(target=lambda: out.append(asyncio.run(coroutine_fn())), daemon=True)
    runner.start()
    runner.join(timeout=timeout)
    returned = not runner.is_alive()
    if not returned and server._loop_task is not None:
        try:
            server._loop_task.get_loop().call_soon_threadsafe(server._loop_task.cancel)
        except RuntimeError:  # that task's loop is closed: the hung run has none of its own to cancel
            pass
        runner.join(timeout=10)
    return returned, (out[0] if out else None)


def _cpu_server(tiny):
    """The hf rollout server on the CPU with the tiny model (4 greedy tokens a request), and the prompts."""
    from types import SimpleNamespace

    from rlcompat.verl_plugin.server import HFRolloutServer

    folder, _tok, prompts, _model = tiny
    config = SimpleNamespace(dtype="float32", max_num_seqs=8, response_length=4, prompt_length=64,
                             max_model_len=None, ignore_eos=True)
    model_config = SimpleNamespace(path=str(folder), local_path=str(folder), trust_remote_code=False,
                                   override_config={"attn_implementation": "eager"})
    return HFRolloutServer(config, model_config, device="cpu"), prompts


def test_the_server_loop_ends_when_cancelled_while_its_decoding_thread_is_still_returning(tiny):
    """The decoding thread hands each result to the event loop as its row finishes, so the callers can be done
    while the thread is still on its way out of `serve` (on a GPU: a few lines after its last host sync, or longer
    with another thread holding the GIL). Cancelling the server's loop then (asyncio.run does it at its end, Ray at
    shutdown) must end it, not leave it waiting for a wake-up that never comes (it hung on an H200 this way); and a
    later event loop gets a loop task of its own."""
    pytest.importorskip("verl")
    import asyncio
    import time

    server, prompts = _cpu_server(tiny)
    serve = server.engine.serve

    def slow_to_return(take, on_group=None):  # every result is handed back inside `serve`; the thread lingers
        serve(take, on_group)
        time.sleep(0.5)

    server.engine.serve = slow_to_return

    async def agent_loop():
        return await asyncio.gather(*[server.generate(p, {"temperature": 0.0}, f"r{i}")
                                      for i, p in enumerate(prompts[:3])])

    returned, outputs = _finishes(server, agent_loop, timeout=20)
    assert returned, "asyncio.run did not return: the server's loop swallowed its cancellation"
    assert [len(o.token_ids) for o in outputs] == [4, 4, 4]
    first_task = server._loop_task
    assert first_task.cancelled()
    server.engine.serve = serve
    returned, again = _finishes(server, agent_loop, timeout=20)
    assert returned, "a second event loop's requests were never served"
    assert [o.token_ids for o in again] == [o.token_ids for o in outputs]
    assert server._loop_task is not first_task


def test_requests_parked_by_an_abort_do_not_hold_the_drain_and_run_after_resume(tiny):
    """verl's weight sync aborts, drains and later resumes (as at its vLLM server): a request that arrives behind
    the closed gate is parked, the drain returns while it waits, and resume serves it. With `reject_request` (a
    replica leaving service) waiting and new requests fail at once instead of waiting for a resume."""
    pytest.importorskip("verl")
    import asyncio

    from rlcompat.verl_plugin.server import OUT_OF_SERVICE

    server, prompts = _cpu_server(tiny)

    async def weight_sync():
        await server.abort_all_requests()
        parked = asyncio.ensure_future(server.generate(prompts[0], {"temperature": 0.0}, "parked"))
        await asyncio.sleep(0.05)
        await asyncio.wait_for(server.wait_for_requests_to_drain(), 5)
        waited = not parked.done()
        await server.resume_generation()
        served = await asyncio.wait_for(parked, 20)
        await server.abort_all_requests(reject_request=True)
        try:
            await server.generate(prompts[1], {"temperature": 0.0}, "rejected")
            rejected = None
        except RuntimeError as exc:
            rejected = str(exc)
        await server.resume_generation()
        again = await asyncio.wait_for(server.generate(prompts[1], {"temperature": 0.0}, "after"), 20)
        return waited, served, rejected, again

    returned, result = _finishes(server, weight_sync, timeout=60)
    assert returned, "the drain or the resumed request never ended"
    waited, served, rejected, again = result
    assert waited and len(served.token_ids) == 4
    assert rejected == OUT_OF_SERVICE and len(again.token_ids) == 4
