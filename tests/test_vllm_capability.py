"""vLLM's minimum compute capability is one row of rlcompat/knowledge/data/capabilities.toml, per release (7.0 up to 0.19.1, 7.5 from
0.20.0: S7), and every rule that judges vLLM on a card gives the same answer from it: scan's RLC401 (verl's
rollout), RLC404 (a framework's vLLM switch), RLC407 (`vllm serve`) and RLC413 (`LLM(...)` in Python), which know no
release and judge the current one, doctor's RLC506, which judges the installed release, and RLC603, which judges the
release a declared requirement installs (pip's newest allowed)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rlcompat.knowledge import capabilities
from rlcompat.api import scan_paths
from rlcompat.doctor.snapshot import Environment
from rlcompat.rules.environment.vllm_unsupported_gpu import VllmUnsupportedGpu
from rlcompat.knowledge.targets import all_targets, resolve_target

# One file per rule, each starting vLLM on the card the scan is for.
STARTS_VLLM = {
    "RLC401": ("run.sh", "python3 -m verl.trainer.main_ppo \\\n    actor_rollout_ref.rollout.name=vllm \\\n"
                         "    actor_rollout_ref.rollout.dtype=float16\n"),
    "RLC404": ("trl.sh", "trl grpo --model_name_or_path Qwen/Qwen2.5-0.5B --use_vllm true\n"),
    "RLC407": ("serve.sh", "vllm serve Qwen/Qwen2.5-1.5B-Instruct --dtype float16\n"),
    "RLC413": ("gen.py", "from vllm import LLM\nllm = LLM(model='Qwen/Qwen2.5-0.5B-Instruct', dtype='float16')\n"),
}


def _reported(tmp_path: Path, target: str) -> dict[str, list[str]]:
    for name, text in STARTS_VLLM.values():
        (tmp_path / name).write_text(text)
    found = scan_paths([str(tmp_path)], resolve_target(target)).findings
    return {code: [f.message for f in found if f.code == code] for code in STARTS_VLLM}


def _declared(tmp_path: Path, spec: str, target: str) -> list[str]:
    (tmp_path / "requirements.txt").write_text(f"vllm{spec}\n")
    found = scan_paths([str(tmp_path / "requirements.txt")], resolve_target(target)).findings
    return [f.message for f in found if f.code == "RLC603"]


def _doctor(version: str, target: str) -> list:
    env = Environment.from_toml(f'[packages]\nvllm = "{version}"\n')
    return VllmUnsupportedGpu(resolve_target(target)).check(env)


def test_the_minimum_is_per_release():
    assert capabilities.min_capability("vllm").text == "7.5"  # no release named: the current one
    assert capabilities.min_capability("vllm", "0.11.0").text == "7.0"
    assert capabilities.min_capability("vllm", "0.19.1+cu128").text == "7.0"
    assert capabilities.min_capability("vllm", "0.20.0").text == "7.5"
    assert capabilities.min_capability("vllm", "0.33.0").text == "7.5"
    v100, p40, t4 = (resolve_target(t) for t in ("sm70", "sm61", "sm75"))
    assert capabilities.runs("vllm", v100, "0.19.1") and not capabilities.runs("vllm", v100, "0.20.0")
    assert not capabilities.runs("vllm", p40, "0.11.0") and capabilities.runs("vllm", t4, "0.33.0")
    assert [capabilities.last_release_that_runs("vllm", t) for t in (p40, v100, t4)] == [None, "0.19.1", None]


def test_the_target_fact_is_the_current_release():
    # targets.toml's `vllm` (what RLC401/RLC404/RLC413 read as target.vllm) is the current release's minimum.
    for t in all_targets():
        assert t.vllm == capabilities.runs("vllm", t), t.name
    assert not resolve_target("sm70").vllm


@pytest.mark.parametrize("target", ["sm61", "sm70"])
def test_every_scan_rule_reports_vllm_below_the_current_minimum_with_one_reason(tmp_path, target):
    reported = _reported(tmp_path, target)
    assert all(len(messages) == 1 for messages in reported.values()), reported
    reason = capabilities.min_capability("vllm").by_release()
    assert reason == "vLLM needs compute capability 7.5+ from 0.20.0 (7.0+ up to 0.19.1)"
    assert all(reason in messages[0] for messages in reported.values()), reported
    pinned = [code for code, messages in reported.items() if "pin vllm<=0.19.1" in messages[0]]
    # Where a user starts vLLM directly, a V100 can pin the last release built for it; a P40 cannot.
    assert pinned == (["RLC407", "RLC413"] if target == "sm70" else [])


def test_no_scan_rule_reports_vllm_where_the_current_release_runs(tmp_path):
    assert _reported(tmp_path, "sm75") == {code: [] for code in STARTS_VLLM}


@pytest.mark.parametrize("version", ["0.11.0", "0.19.1", "0.20.0", "0.33.0"])
@pytest.mark.parametrize("target", ["sm61", "sm70", "sm75"])
def test_doctor_judges_the_installed_release_by_the_same_row(version, target):
    findings = _doctor(version, target)
    assert bool(findings) == (not capabilities.runs("vllm", resolve_target(target), version))
    for f in findings:
        assert f.severity == "error"
        assert f"(needs {capabilities.min_capability('vllm', version).text}+)" in f.message


def test_on_a_v100_the_release_decides_and_scan_agrees_with_the_current_one(tmp_path):
    # Before the drop (0.19.1) the doctor finds nothing; from 0.20.0 it reports and, like scan's rules for a script
    # that names no release, points at the last release built for the card.
    assert _doctor("0.19.1", "sm70") == []
    [current] = _doctor("0.20.0", "sm70")
    assert "vllm<=0.19.1" in current.remedy
    assert _reported(tmp_path, "sm70")["RLC407"] and _doctor("0.33.0", "sm70")


# Releases whose torch pin rlcompat/knowledge/data/torch_wheels.toml does not know: RLC603 judges the engine by its
# own minimum. Where the torch is known (0.11.0, 0.24.0, 0.31.0, the newest 0.33.0), the engine is left to the config
# that selects it and the torch it brings to RLC601 (bench/coverage/README.md, "Engines in an extra").
@pytest.mark.parametrize("spec,installs", [("==0.10.2", "0.10.2"), (">=0.4.3,<=0.10.2", "0.10.2"), ("<0.20", "0.19.1"),
                                           ("~=0.19.0", "0.19.1"), ("==0.22.0", "0.22.0"), (">=0.8,<0.30", "0.29.0")])
@pytest.mark.parametrize("target", ["sm61", "sm70", "sm75"])
def test_a_requirement_is_judged_as_the_doctor_judges_the_release_it_installs(tmp_path, spec, installs, target):
    assert bool(_declared(tmp_path, spec, target)) == bool(_doctor(installs, target))


@pytest.mark.parametrize("spec", [">=0.8", "", ">=0.4.3,<=0.11.0"])
def test_a_release_whose_torch_is_known_is_judged_by_that_torch(tmp_path, spec):
    assert _declared(tmp_path, spec, "sm61") == []
    found = scan_paths([str(tmp_path / "requirements.txt")], resolve_target("sm61")).findings
    assert [f.code for f in found] == ["RLC601"]


def test_an_unpinned_requirement_agrees_with_the_scan_rules_on_a_v100(tmp_path):
    [message] = _declared(tmp_path, ">=0.8,<0.30", "sm70")
    assert "pin vllm<=0.19.1" in message and capabilities.min_capability("vllm").by_release() in message
    assert _declared(tmp_path, "==0.19.1", "sm70") == [] and _reported(tmp_path, "sm70")["RLC407"]


# --- VLLM_USE_V1=1 (RLC419) judged by the range a tree declares -------------------------------------------------

_USE_V1 = 'import os\nos.environ["VLLM_USE_V1"] = "1"\n'


@pytest.mark.parametrize("spec, reported", [
    (">=0.8.5,<=0.12.0", True),  # verl's `vllm` extra: allows 0.8.5 to 0.10.1, which refuse the variable
    (">0.9,<0.9.5", True),  # only 0.9.0.1 to 0.9.4: inside the refusing span
    (">=0.10.2", False),  # every allowed release runs V1 below 8.0 (or has no V0 to fall back to)
    ("<0.8", False),  # before 0.8.0 the variable is not refused
    ("", True),  # any version: not known, the plain warning
])
def test_use_v1_is_judged_by_the_declared_range(tmp_path, spec, reported):
    (tmp_path / "requirements.txt").write_text(f"vllm{spec}\n")
    (tmp_path / "train.py").write_text(_USE_V1)
    found = [f for f in scan_paths([str(tmp_path / "train.py")], resolve_target("sm75")).findings if f.code == "RLC419"]
    assert bool(found) is reported
    if found:
        assert found[0].severity == "warning" and found[0].fix is None  # which release is installed is not known
        assert ("requirements.txt:1" in found[0].message) is bool(spec)


def test_a_known_release_outranks_the_declared_range(tmp_path):
    (tmp_path / "requirements.txt").write_text("vllm==0.9.2\n")
    (tmp_path / "train.py").write_text(_USE_V1)
    found = [f for f in scan_paths([str(tmp_path / "train.py")], resolve_target("sm75")).findings if f.code == "RLC419"]
    assert [f.severity for f in found] == ["error"] and found[0].fix is not None  # the pinned release refuses it: the safe fix
