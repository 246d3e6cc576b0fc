"""The overrides `fix` writes into launch scripts are valid Hydra for verl's real config tree.

Composes verl's ppo_trainer config (YAML only: neither verl nor torch is imported) with every override of
each fixed fixture script. Skipped where verl or hydra is not installed.
"""

from __future__ import annotations

import importlib.util
import shlex
from pathlib import Path

import pytest

from tests.shell_views import shell_views

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "scripts"
pytest.importorskip("hydra")
VERL = importlib.util.find_spec("verl")
pytestmark = pytest.mark.skipif(VERL is None, reason="verl is not installed")


def _overrides(text: str) -> list[list[str]]:
    """Each verl command's Hydra overrides, as the shell would pass them (words with variables left out)."""
    out = []
    for view in shell_views(text):
        if not view.is_verl:
            continue
        words = [text[s.word_span.start:s.word_span.end] for s in view.settings if not s.flag and s.word_span]
        out.append([shlex.split(w)[0] for w in words if "$" not in w])
    return out


def _compose(overrides: list[str]):
    from hydra import compose, initialize_config_dir

    config_dir = Path(list(VERL.submodule_search_locations)[0]) / "trainer" / "config"
    with initialize_config_dir(config_dir=str(config_dir), version_base=None):
        return compose("ppo_trainer", overrides=overrides)


def _shell_codes(path: Path) -> list[str]:
    """The shell code of a fixed fixture: a script's text, or each command a Dockerfile holds (its exec-form
    arrays as the command lines they make)."""
    if path.suffix == ".sh":
        return [path.read_text()]
    from rlcompat.lang import dockerfile

    return [block.code for block, _ in dockerfile.shell_blocks(dockerfile.parse(path.read_text()))]


@pytest.mark.parametrize("case", sorted(p.name for p in FIXTURES.iterdir() if p.is_dir()))
def test_fixed_script_overrides_compose(case):
    [expected] = (FIXTURES / case).glob("expected.*")
    for code in _shell_codes(expected):
        for overrides in _overrides(code):
            _compose(overrides)  # raises on an unknown key, a `+` for an existing key, or a bad value


def test_fixed_script_sets_what_the_findings_promised():
    [overrides] = _overrides((FIXTURES / "grpo_vllm_bf16" / "expected.sh").read_text())
    cfg = _compose(overrides)
    arr = cfg.actor_rollout_ref
    assert arr.rollout.dtype == "float32" and arr.rollout.enforce_eager is True
    assert arr.actor.fsdp_config.mixed_precision.param_dtype == "fp32"
    assert arr.ref.fsdp_config.mixed_precision.param_dtype == "fp32"
    assert arr.actor.fsdp_config.use_torch_compile is False and arr.ref.fsdp_config.use_torch_compile is False
    assert arr.model.override_config.attn_implementation == "sdpa"
