"""What verl 0.4.x's trainer configs needed (issue 28 recall round 2, the verl-0.4.0 dev corpus, a sibling of the
holdout verl-0.4.1): main_generation's rollout engine in generation.yaml. Each test builds a small verl package (its
version file and the config files the test needs)."""

from __future__ import annotations

import pytest

from rlcompat.api import scan_paths
from rlcompat.knowledge.targets import resolve_target
from tests.verl_trees import verl_package

SM61, SM75 = resolve_target("sm61"), resolve_target("sm75")

pytestmark = pytest.mark.usefixtures("fresh_verl_detection")


def _found(package, target):
    return [(f.path.split("config/")[-1], f.location.line, f.code) for f in scan_paths([str(package)], target).findings]


@pytest.mark.parametrize("version", ["0.4.1", "0.4.0"])
def test_main_generation_rollout_engine(tmp_path, version):
    package = verl_package(tmp_path, version, {"trainer/config/generation.yaml":
                                               "rollout:\n  name: vllm\n  dtype: bfloat16\n"})
    assert ("generation.yaml", 2, "RLC401") in _found(package, SM61)
    assert "RLC401" not in [code for _, _, code in _found(package, SM75)]  # vLLM runs on a T4 (fp16)
