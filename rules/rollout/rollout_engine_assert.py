from __future__ import annotations

import libcst as cst

from rlcompat.knowledge import frameworks as fk
from rlcompat.analysis import pyhelpers as h
from rlcompat.contract import Bad, Good, PythonRule

ENGINE_KIND = "rollout-engine"


def _engines() -> dict[str, fk.Hazard]:
    """Engine name -> its hazard (the target fact it needs, why), from kinds.toml's rollout-engine kind."""
    return {value: hazard for hazard in fk.kinds()[ENGINE_KIND].hazards for value in hazard.values}


def _allowed(test: cst.BaseExpression, operator: type) -> tuple[str, ...] | None:
    """The strings of `X in ("vllm", "sglang")` (`operator` In) or `X not in (...)` (NotIn): a test on one value
    against a literal tuple, list or set of strings; None for any other test (`a and X not in (...)`)."""
    if not isinstance(test, cst.Comparison) or len(test.comparisons) != 1:
        return None
    comparison = test.comparisons[0]
    if not isinstance(comparison.operator, operator) or not isinstance(comparison.comparator,
                                                                       (cst.Tuple, cst.List, cst.Set)):
        return None
    values = [h.string_value(e.value) for e in comparison.comparator.elements]
    if not values or any(v is None for v in values):
        return None
    return tuple(v.lower() for v in values)


def _raises(body: cst.BaseSuite) -> bool:
    """Whether an `if` body's first statement raises (`if X not in (...): raise ValueError(...)`)."""
    if isinstance(body, cst.SimpleStatementSuite):
        small = body.body
    elif isinstance(body, cst.IndentedBlock) and body.body and isinstance(body.body[0], cst.SimpleStatementLine):
        small = body.body[0].body
    else:
        return False
    return bool(small) and isinstance(small[0], cst.Raise)


class RolloutEngineAssert(PythonRule):
    code = "RLC420"
    name = "rollout-engine-assert"
    title = "Code that allows only engines the GPU cannot run as its rollout (`assert name in (\"vllm\", \"sglang\")`)"
    what = (
        "Finds a check that refuses every rollout engine but vLLM and SGLang: `assert X in (\"vllm\", \"sglang\")` "
        "and `if X not in (...): raise ...`, where every allowed name is an engine the target cannot run (the "
        "`rollout-engine` kind of rlcompat/knowledge/data/frameworks/kinds.toml). A check that allows an engine the "
        "target runs, or that holds only together with another condition, is not a finding."
    )
    why = (
        "vLLM needs compute capability 7.0 (7.5 from 0.20.0) [S7] and SGLang 7.5 [S35]. On a card below both, the "
        "only rollout that runs is one that generates with the training model (transformers' `generate`, "
        "rlcompat's `hf` rollout for verl), and this check refuses it before the run starts: switching the engine "
        "in the config cannot help while the code allows only these."
    )
    fix_safety = (
        "No fix: allowing another name only helps where the code behind the check can generate with it; the "
        "finding says where the run is closed to a non-vLLM rollout."
    )
    names = ("vllm", "sglang")
    sources = ("S7", "S35")

    bad = (
        Bad('assert config.rollout.name in ("vllm", "sglang"), "unsupported rollout"\n'),
        Bad('if backend not in ["vllm", "sglang"]:\n    raise ValueError(backend)\n'),
        Bad('assert engine in {"vllm"}\n', target="sm61"),
    )
    good = (
        Good('assert config.rollout.name in ("vllm", "sglang")\n', target="sm80"),
        Good('assert config.rollout.name in ("vllm", "sglang", "hf")\n'),
        Good('assert engine in ("vllm",)\n', target="sm75"),  # vLLM runs from 7.0 (7.5 from 0.20.0)
        Good('if self.disaggregation.enabled and self.name not in ("sglang", "vllm"):\n    raise ValueError()\n'),
        Good('if name not in ("vllm", "sglang"):\n    logger.info(name)\n'),
        Good('assert dtype in ("bfloat16", "float16")\n'),
    )

    @classmethod
    def applies_to(cls, target) -> bool:
        return any(not target.fact(hazard.needs) for hazard in _engines().values())

    def visit_Assert(self, node: cst.Assert, ctx) -> None:
        self._judge(node, _allowed(node.test, cst.In), "assert", ctx)

    def visit_If(self, node: cst.If, ctx) -> None:
        if _raises(node.body):
            self._judge(node.test, _allowed(node.test, cst.NotIn), "check", ctx)

    def _judge(self, node: cst.CSTNode, allowed: tuple[str, ...] | None, what: str, ctx) -> None:
        engines = _engines()
        if not allowed or any(v not in engines for v in allowed):
            return
        if any(self.target.fact(engines[v].needs) for v in allowed):
            return  # an allowed engine runs here
        names = " and ".join(dict.fromkeys(allowed))
        reasons = "; ".join(dict.fromkeys(engines[v].why for v in allowed))
        ctx.report(node, f"this {what} allows only {names} as the rollout engine, and {self.target.name} "
                         f"({self.target.capability_text}) runs none of them ({reasons}): this run cannot use a "
                         f"non-vLLM rollout on {self.target.name}; allow an engine that generates with the "
                         "training model where the code has one (verl: hf), or run the rollout elsewhere")
