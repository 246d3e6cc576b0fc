"""A config class's field default that every subclass of the tree sets itself reaches no run
(rlcompat/analysis/class_overrides.py): Open-Reasoner-Zero's `BasePPOExpConfig.vllm_num_engines = 4`, which each
playground config sets, is not reported; its `bf16 = True`, which none sets, is."""

from __future__ import annotations

from pathlib import Path

from rlcompat.analysis import class_overrides
from rlcompat.api import scan_paths
from rlcompat.knowledge.targets import resolve_target

BASE = ("from dataclasses import dataclass\nimport ray\n\n\n@dataclass\nclass BaseExpConfig:\n"
        "    vllm_num_engines: int = 4\n    bf16: bool = True\n")
SUB = ("from dataclasses import dataclass\nfrom pkg.base import BaseExpConfig\n\n\n@dataclass\n"
       "class {name}(BaseExpConfig):\n    vllm_num_engines: int = 1\n\n\nconfig = {name}()\n")


def _tree(tmp_path: Path, files: dict[str, str]) -> Path:
    root = tmp_path / "proj"
    (root / "pkg").mkdir(parents=True)
    (root / "pyproject.toml").write_text('[project]\nname = "proj"\nversion = "0"\n')
    for name, text in {"pkg/base.py": BASE, **files}.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    class_overrides._index.cache_clear()
    return root


def _base_findings(root: Path) -> list[tuple[str, int]]:
    found = scan_paths([str(root / "pkg" / "base.py")], resolve_target("sm61")).findings
    return sorted((f.code, f.location.line) for f in found)


def test_a_default_every_subclass_sets_is_not_reported_and_one_none_sets_is(tmp_path):
    root = _tree(tmp_path, {"runs/a.py": SUB.format(name="A"), "runs/b.py": SUB.format(name="B")})
    assert _base_findings(root) == [("RLC107", 8)]
    assert class_overrides.overridden_everywhere(str(root), "BaseExpConfig", "vllm_num_engines") == (
        str(root / "runs" / "a.py"), str(root / "runs" / "b.py"))
    assert class_overrides.overridden_everywhere(str(root), "BaseExpConfig", "bf16") is None


def test_the_default_stays_live_where_a_run_can_get_it(tmp_path):
    # no subclass at all
    assert ("RLC404", 7) in _base_findings(_tree(tmp_path / "1", {}))
    # a subclass that leaves the field (its instances get the default)
    leaves = SUB.format(name="C").replace("    vllm_num_engines: int = 1\n", "    seed: int = 1\n")
    assert ("RLC404", 7) in _base_findings(_tree(tmp_path / "2", {"runs/a.py": SUB.format(name="A"), "runs/c.py": leaves}))
    # the tree builds the base class itself
    built = {"runs/a.py": SUB.format(name="A"), "runs/main.py": "from pkg.base import BaseExpConfig\ncfg = BaseExpConfig()\n"}
    assert ("RLC404", 7) in _base_findings(_tree(tmp_path / "3", built))
    # a subclass of a subclass: covered where the middle class is never built and its own subclasses set the field
    middle = SUB.format(name="M").replace("    vllm_num_engines: int = 1\n", "    seed: int = 1\n").replace(
        "config = M()\n", "")
    deep = {"runs/m.py": middle, "runs/d.py": SUB.format(name="D").replace("BaseExpConfig", "M").replace(
        "from pkg.base import M", "from runs.m import M")}
    assert _base_findings(_tree(tmp_path / "4", deep)) == [("RLC107", 8)]
