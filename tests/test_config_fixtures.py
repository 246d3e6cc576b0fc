"""Golden-file tests for YAML configs and launch scripts: fix a copy, compare, `bash -n`, fix again (no change)."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
from pathlib import Path

import pytest

from rlcompat.release import install_command
from rlcompat._toml import load_toml_text
from rlcompat.api import fix_paths, scan_paths
from rlcompat.knowledge.targets import resolve_target

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
CASES = sorted(p for kind in ("scripts", "yaml", "markdown", "python", "json", "pysettings", "notebooks", "toml") for p in (FIXTURES / kind).iterdir() if p.is_dir())


def _case(case: Path, tmp_path: Path):
    """The input copied into a tree of its own whose requirements.txt pins what the fixture assumes (its
    `frameworks`, as {distribution = version}): the tree's identity (rlcompat/knowledge/identity.py) is then the same in
    every environment."""
    source = next(case.glob("input.*"))
    options = load_toml_text((case / "fixture.toml").read_text())
    work = tmp_path / f"{case.name}{source.suffix}"
    shutil.copy(source, work)
    pins = "".join(f"{name}=={version}\n" for name, version in options.get("frameworks", {}).items())
    (tmp_path / "requirements.txt").write_text(pins)
    return source, work, resolve_target(options["target"]), options.get("unsafe", False)


@pytest.fixture(autouse=True)
def _nothing_installed(monkeypatch):
    """Goldens never depend on what the scanning environment has installed: only their pins count."""
    from rlcompat.knowledge import identity

    monkeypatch.setattr(identity, "installed_version", lambda distribution: None)
    identity.clear_caches()
    yield
    identity.clear_caches()


@pytest.mark.parametrize("case", CASES, ids=[f"{c.parent.name}/{c.name}" for c in CASES])
def test_fix_matches_golden_file_and_is_idempotent(case, tmp_path):
    source, work, target, unsafe = _case(case, tmp_path)
    expected = (case / f"expected{source.suffix}").read_text()
    assert expected != source.read_text(), "a fixture whose fix changes nothing tests nothing"
    report = fix_paths([str(work)], target, unsafe=unsafe)
    assert not report.errors, report.errors
    assert work.read_text() == expected
    again = fix_paths([str(work)], target, unsafe=unsafe)
    assert not again.changed_files, "a second fix changed the file again"
    if source.suffix == ".sh" and shutil.which("bash"):
        result = subprocess.run(["bash", "-n", str(work)], capture_output=True, text=True)
        assert result.returncode == 0, result.stderr


def test_script_fix_keeps_every_line_it_does_not_own(tmp_path):
    # Only values change in place and whole override lines are added: every original line survives, in order,
    # apart from the lines whose value was rewritten.
    case = FIXTURES / "scripts" / "grpo_vllm_bf16"
    source, work, target, unsafe = _case(case, tmp_path)
    fix_paths([str(work)], target, unsafe=unsafe)
    before, after = source.read_text().splitlines(), work.read_text().splitlines()
    kept = [line for line in before if line in after]
    assert len(kept) == len(before) - 2  # the rollout dtype value and the last line (now continued)
    assert [line for line in after if line in before] == kept


def test_unfixable_engine_error_remains_and_says_what_to_do(tmp_path, monkeypatch):
    monkeypatch.setenv("RLCOMPAT_HF_ROLLOUT", "0")  # without rlcompat's hf rollout nothing can replace the engine
    script = tmp_path / "run.sh"
    script.write_text("python3 -m verl.trainer.main_ppo actor_rollout_ref.rollout.name=vllm trainer.nnodes=1\n")
    (tmp_path / "requirements.txt").write_text("verl==0.9.1\n")  # the release rlcompat's hf rollout supports
    report = scan_paths([str(script)], resolve_target("sm61"))
    engine = [f for f in report.findings if f.code == "RLC401"]
    assert len(engine) == 1 and engine[0].fix is None and engine[0].severity == "error"
    assert install_command("verl") in engine[0].message and "vllm, sglang, trtllm" in engine[0].message
    fix_paths([str(script)], resolve_target("sm61"))
    assert "RLC401" in [f.code for f in scan_paths([str(script)], resolve_target("sm61")).findings]


def test_suppression_after_a_continued_command_covers_its_lines(tmp_path):
    script = tmp_path / "run.sh"
    script.write_text("python3 -m verl.trainer.main_ppo \\\n    actor_rollout_ref.rollout.dtype=bfloat16 \\\n"
                      "    actor_rollout_ref.rollout.name=vllm  # rlcompat: ignore[RLC104]\n")
    codes = [f.code for f in scan_paths([str(script)], resolve_target("sm61")).findings]
    assert "RLC104" not in codes and "RLC001" not in codes and "RLC401" in codes


def test_yaml_suppression_comment(tmp_path):
    config = tmp_path / "ppo.yaml"
    config.write_text("actor_rollout_ref:\n  rollout:\n    dtype: bfloat16  # rlcompat: ignore[RLC104]\n")
    assert "RLC104" not in [f.code for f in scan_paths([str(config)], resolve_target("sm61")).findings]


def test_shell_construct_bashlex_cannot_read_costs_only_that_command(tmp_path):
    script = tmp_path / "run.sh"
    script.write_text("N=$((1 + 1))\ncase $N in 2) echo two;; esac\n"
                      "python3 -m verl.trainer.main_ppo actor_rollout_ref.rollout.dtype=bfloat16\n")
    report = scan_paths([str(script)], resolve_target("sm61"))
    assert not report.errors
    hits = [f for f in report.findings if f.code == "RLC104"]
    assert [f.location.line for f in hits] == [3]


def test_unterminated_quote_is_a_located_parse_error(tmp_path):
    script = tmp_path / "run.sh"
    script.write_text('python3 -m verl.trainer.main_ppo \\\n  trainer.name="oops\n')
    report = scan_paths([str(script)], resolve_target("sm61"))
    assert len(report.errors) == 1 and report.errors[0].line == 2 and "quote" in report.errors[0].message


def _verl_config_dir() -> Path | None:
    spec = importlib.util.find_spec("verl")  # locates the package without importing it
    if spec is None or not spec.submodule_search_locations:
        return None
    config = Path(list(spec.submodule_search_locations)[0]) / "trainer" / "config"
    return config if (config / "rollout" / "rollout.yaml").is_file() else None


@pytest.mark.skipif(_verl_config_dir() is None, reason="verl is not installed")
def test_fix_on_verl_yaml_changes_only_the_reported_values(tmp_path):
    config = _verl_config_dir()
    root = tmp_path / "verl"
    shutil.copytree(config.parent.parent / "version", root / "version")  # so the version is read from the tree
    shutil.copytree(config, root / "trainer" / "config", ignore=shutil.ignore_patterns("*.py", "__pycache__"))
    sm61 = resolve_target("sm61")
    report = fix_paths([str(root)], sm61)
    assert not report.errors and report.changed_files
    rollout = (root / "trainer/config/rollout/rollout.yaml").read_text()
    assert "\ndtype: float32\n" in rollout
    assert "\nenforce_eager: False\n" in rollout  # vLLM's switch waits for `name: ???` to choose vLLM (RLC402)
    assert "\nuse_torch_compile: false\n" in (root / "trainer/config/engine/fsdp.yaml").read_text()
    for changed in report.changed_files:
        before = changed.original.splitlines(keepends=True)
        after = changed.fixed.splitlines(keepends=True)
        assert len(before) == len(after), f"{changed.path}: lines were added or removed"
        fixed_lines = {f.location.line for f in changed.applied}
        for number, (old, new) in enumerate(zip(before, after), start=1):
            if old == new:
                continue
            assert number in fixed_lines, f"{changed.path}:{number} changed without a finding"
            key = old.split(":", 1)[0]
            assert new.startswith(key + ":") and old.split("#", 1)[1:] == new.split("#", 1)[1:]
    # sm80 needs none of these changes
    assert not [f for f in scan_paths([str(config / "rollout"), str(config / "engine" / "fsdp.yaml")],
                                      resolve_target("sm80")).findings]


def test_markdown_is_checked_only_when_named(tmp_path):
    readme = tmp_path / "README.md"
    shutil.copy(FIXTURES / "markdown" / "readme_blocks" / "input.md", readme)
    sm61 = resolve_target("sm61")
    assert scan_paths([str(tmp_path)], sm61).files_checked == 0
    named = scan_paths([str(readme)], sm61)
    assert named.files_checked == 1 and {f.location.line for f in named.findings} >= {8, 18}


@pytest.mark.parametrize("case", [c for c in CASES if "codes" in load_toml_text((c / "fixture.toml").read_text())],
                         ids=lambda c: f"{c.parent.name}/{c.name}")
def test_fixture_input_reports_the_rules_it_was_written_for(case):
    options = load_toml_text((case / "fixture.toml").read_text())
    source = next(case.glob("input.*"))
    found = {f.code for f in scan_paths([str(source)], resolve_target(options["target"])).findings}
    assert set(options["codes"]) <= found, found
