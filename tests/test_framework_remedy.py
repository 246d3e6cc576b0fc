"""A framework key whose kind no value fixes (fix = "none") says what to do instead where that release has a way
out (its `remedy`, with a proof), and that no setting works where it has none: OpenRLHF 0.6.4 generates with the
actor's own model when no vLLM engine is asked for, 0.8.11 only through its vLLM engines."""

from __future__ import annotations

from rlcompat.api import scan_source
from rlcompat.knowledge.targets import resolve_target

LAUNCH = ("ray job submit -- python3 -m openrlhf.cli.train_ppo_ray \\\n    --pretrain Qwen/Qwen2.5-0.5B \\\n"
          "    --vllm_num_engines 2\n")


def _engine_findings(version: str):
    found = scan_source(LAUNCH, resolve_target("sm61"), "train.sh", "shell", frameworks={"openrlhf": version})
    return [f for f in found if "--vllm_num_engines" in f.message or "vllm_num_engines" in f.message]


def test_a_release_that_generates_without_vllm_names_that_way_out():
    findings = _engine_findings("0.6.4")
    assert findings and all("leave it unset or 0" in f.message and "experience_maker.py:695-696" in f.message
                            for f in findings), [f.message for f in findings]
    assert not any("no setting makes it work" in f.message for f in findings)


def test_a_release_that_generates_only_through_vllm_says_no_value_works():
    findings = _engine_findings("0.8.11")
    assert findings and all("no value of it works here" in f.message and "experience_maker.py:256-269" in f.message
                            for f in findings), [f.message for f in findings]
