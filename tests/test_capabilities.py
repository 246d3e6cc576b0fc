"""rlcompat/knowledge/data/capabilities.toml is the one source of minimum capabilities: targets.toml's threshold booleans agree with
it, environment.toml's package minimums are read from it, and the rules ask it."""

from __future__ import annotations

import pytest

from rlcompat.knowledge import capabilities
from rlcompat.knowledge.environment import environment_facts
from rlcompat.knowledge import files
from rlcompat.knowledge.targets import FACT_NAMES, all_targets, products, resolve_target, sources


def test_every_row_has_known_sources_and_a_declared_target_fact():
    known = sources()
    for row in capabilities.table().values():
        assert row.sources and all(s in known for s in row.sources), row.name
        assert row.target_fact is None or row.target_fact in FACT_NAMES, row.name


@pytest.mark.parametrize("row", [r for r in capabilities.table().values() if r.target_fact], ids=lambda r: r.name)
def test_targets_booleans_agree_with_the_threshold(row):
    for t in (*all_targets(), *products()):
        assert t.fact(row.target_fact) == (t.capability >= row.capability), (
            f"rlcompat/knowledge/data/targets.toml {t.name}.{row.target_fact} = {t.fact(row.target_fact)} but rlcompat/knowledge/data/capabilities.toml "
            f"{row.name} needs {row.text}")


def test_the_rollout_engines_and_their_packages_have_rows():
    for name in ("vllm", "sglang", "trtllm"):
        assert capabilities.min_capability(name).capability >= (7, 0)
    assert capabilities.runs("trtllm", resolve_target("sm80")) and not capabilities.runs("trtllm", resolve_target("sm75"))
    with pytest.raises(KeyError, match="capabilities.toml"):
        capabilities.min_capability("vlm")


def test_environment_packages_name_their_row_instead_of_a_number():
    text = files.path("environment.toml").read_text("utf-8")
    packages = text[text.index("[packages."):text.index("[[triton_min_version")]
    assert "min_capability = " not in packages and "warn_below = " not in packages
    pkgs = environment_facts()["packages"]
    assert pkgs["vllm"]["min_capability"] == capabilities.min_capability("vllm").text
    assert pkgs["sglang"]["min_capability"] == capabilities.min_capability("sglang").text
    assert pkgs["flash-attn"]["new_arch"]["min_capability"] == "10.0"
    for name, entry in pkgs.items():
        for key in ("min_capability", "warn_below"):
            if f"{key}_of" in entry:
                assert entry[key] == capabilities.min_capability(entry[f"{key}_of"]).text, name
