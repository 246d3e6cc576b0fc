"""Target facts are declared, typed fields: a misspelt fact fails here, not as a silent None in a rule."""

from __future__ import annotations

import ast
from dataclasses import fields
from pathlib import Path

import pytest

from rlcompat.knowledge import frameworks
from rlcompat.knowledge import targets
from rlcompat.knowledge.targets import FACT_NAMES, Target, all_targets, products, resolve_target

ROOT = Path(__file__).resolve().parent.parent
# Names code gives a Target: `target.x`, `self.target.x`, `ctx.target.x`, `guard.target.x`, `tgt.x`.
TARGET_NAMES = {"target", "tgt"}
# Attributes of other things code also calls `target` (an assignment's AST target, a tensor, a report dict).
NOT_GPU_TARGETS = {"value", "target", "id", "attr", "get", "shape", "dtype", "copy_"}


def _target_attribute_reads(tree: ast.AST):
    for node in ast.walk(tree):
        if not isinstance(node, ast.Attribute):
            continue
        owner = node.value
        name = owner.attr if isinstance(owner, ast.Attribute) else owner.id if isinstance(owner, ast.Name) else None
        if name in TARGET_NAMES:
            yield node


def test_every_target_attribute_read_in_the_code_is_declared():
    known = {f.name for f in fields(Target)} | {n for n in dir(Target) if not n.startswith("__")}
    assert not NOT_GPU_TARGETS & known
    known |= NOT_GPU_TARGETS
    wrong = []
    for folder in ("rlcompat", "rules"):
        for path in (ROOT / folder).rglob("*.py"):
            tree = ast.parse(path.read_text("utf-8"))
            for node in _target_attribute_reads(tree):
                # `ctx.target` where ctx is a verify/doctor object is not a Target: only plain reads of facts count
                if node.attr not in known:
                    wrong.append(f"{path.relative_to(ROOT)}:{node.lineno}: target.{node.attr}")
    assert not wrong, "undeclared target facts read:\n" + "\n".join(wrong)


def test_every_fact_in_the_table_is_a_typed_field_with_its_sources():
    for t in (*all_targets(), *products()):
        assert set(t.facts) <= FACT_NAMES
        for name, fact in t.facts.items():
            assert getattr(t, name) == fact.value
            assert fact.sources, f"{t.name}.{name} has no source"
    assert resolve_target("rtx4090").nccl_p2p_broken and not resolve_target("sm89").nccl_p2p_broken
    assert "nccl_p2p_broken" in resolve_target("rtx4090").facts
    assert isinstance(resolve_target("sm61").smem_per_block_optin, int)


def test_a_misspelt_fact_raises_instead_of_reading_none():
    t = resolve_target("sm61")
    with pytest.raises(AttributeError):
        t.bf16_nativ  # noqa: B018
    with pytest.raises(KeyError, match="not a target fact"):
        t.fact("bf16_nativ")
    with pytest.raises(Exception):
        t.bf16_native = True  # frozen


def test_an_undeclared_or_mistyped_fact_in_the_table_is_refused(monkeypatch):
    entry = {"name": "sm61", "facts": {"bf16_nativ": {"value": False, "sources": ["S1"]}}}
    with pytest.raises(targets.TargetError, match="unknown fact 'bf16_nativ'"):
        targets._facts(entry, "sm61")
    entry = {"name": "sm61", "facts": {"smem_per_block": {"value": "48 KB", "sources": ["S1"]}}}
    with pytest.raises(targets.TargetError, match="is not a int"):
        targets._facts(entry, "sm61")
    with pytest.raises(targets.TargetError, match="missing fact"):
        targets._target("sm61", (6, 1), "Pascal", (), (), {})


def test_a_knowledge_hazard_needing_an_unknown_fact_fails_at_load(monkeypatch):
    bad = {"dtype": {"hazards": [{"values": ["bf16"], "needs": "bf16_nativ", "why": "x"}]}}
    monkeypatch.setattr(frameworks.files, "load", lambda *parts: bad)
    frameworks.kinds.cache_clear()
    try:
        with pytest.raises(ValueError, match="bf16_nativ"):
            frameworks.kinds()
    finally:
        frameworks.kinds.cache_clear()
