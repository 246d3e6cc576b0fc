"""RLC603 and a FlashAttention 1 requirement (issue 28 round 15, from MOSS-RLHF 4865d82's `flash-attn==1.0.7`, which no
file of its tree imports): flash-attn releases before 2.0.0 are FlashAttention 1, which transformers never loads (it
takes flash-attn only from 2.3.3, [S540]); installing one selects nothing, so only a specifier that can install
FlashAttention 2 is reported (environment.toml `imported_only_below`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rlcompat.api import scan_paths
from rlcompat.knowledge.environment import environment_facts
from rlcompat.knowledge.targets import resolve_target
from rlcompat.rules.declared_environment.helpers import allows_only_below


def _rlc603(tmp_path: Path, text: str, target: str) -> list[int]:
    (tmp_path / ".git").mkdir()
    (tmp_path / "requirements.txt").write_text(text)
    found = scan_paths([str(tmp_path)], resolve_target(target), jobs=1).findings
    return sorted(f.location.line for f in found if f.code == "RLC603")


@pytest.mark.parametrize("spec, below", [
    ("==1.0.7", True), ("<2", True), ("<2.0.0", True), ("~=1.0.4", True), ("==1.0.*", True), (">=1.0,<=1.0.9", True),
    ("", False), (">=1.0.7", False), ("<=2.0.0", False), ("==2.0.0", False), ("==2.7.4.post1", False), ("<3", False),
    ("not a spec", False),
])
def test_a_specifier_that_allows_only_releases_below(spec, below):
    assert allows_only_below(spec, "2.0.0") is below


def test_the_knowledge_names_the_first_flashattention_2_release():
    assert environment_facts()["packages"]["flash-attn"]["imported_only_below"] == "2.0.0"


@pytest.mark.parametrize("target", ["sm61", "sm75"])
def test_a_flashattention_1_pin_is_not_reported(tmp_path, target):
    assert _rlc603(tmp_path, "transformers==4.30.2\nflash-attn==1.0.7\n", target) == []


@pytest.mark.parametrize("text, line", [("flash-attn==2.5.8\n", 1), ("torch\nflash-attn>=1.0.7\n", 2), ("flash-attn\n", 1)])
def test_a_specifier_that_can_install_flashattention_2_is(tmp_path, text, line):
    assert _rlc603(tmp_path, text, "sm75") == [line]
