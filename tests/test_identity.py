"""The identity of a scanned tree (rlcompat/knowledge/identity.py): which framework releases its code runs with, decided from the
tree (its framework package, its pins) before the scanning environment, and what rules may claim with it.

The trees here are fork-shaped: a verl 0.1-style fork (its package at ./verl, `verl/version/version` says 0.1, a
Hydra `ppo_trainer.yaml` without the keys later releases added), a launch script whose tree pins an older verl than
the one installed, a TRL recipe repository that pins trl==0.18.0 and holds no verl, and a tree with no evidence."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rlcompat.knowledge import identity
from rlcompat.api import fix_paths, scan_paths, scan_source
from rlcompat.knowledge.declared_pins import pin_of
from rlcompat.report.knowledge_summary import identity_json, identity_lines, knowledge_applied
from rlcompat.report import Summary, render
from rlcompat.knowledge.targets import resolve_target

SM61 = resolve_target("sm61")
pytestmark = pytest.mark.usefixtures("fresh_verl_detection")

# verl 0.1's PPO trainer config has no use_torch_compile, no attn_implementation override, no rollout.dtype default
# other than bfloat16 (the layout of verl v0.1: verl/trainer/config/ppo_trainer.yaml, verl/trainer/main_ppo.py,
# verl/workers/fsdp_workers.py, verl/version/version).
FORK_PPO_YAML = """actor_rollout_ref:
  model:
    path: ~/models/deepseek-llm-7b-chat
    enable_gradient_checkpointing: False
  actor:
    strategy: fsdp
    ppo_mini_batch_size: 256
  rollout:
    name: vllm
    dtype: bfloat16
trainer:
  n_gpus_per_node: 8
"""
FORK_SCRIPT = """python3 -m verl.trainer.main_ppo \\
    data.train_files=$HOME/data/train.parquet \\
    actor_rollout_ref.rollout.name=vllm \\
    trainer.n_gpus_per_node=1
"""
DEAD_091_SCRIPT = ("python3 -m verl.trainer.main_ppo \\\n    algorithm.adv_estimator=grpo \\\n"
                   "    actor_rollout_ref.actor.use_torch_compile=False \\\n    trainer.n_gpus_per_node=1\n")


@pytest.fixture
def installed(monkeypatch):
    """The scanning environment as the test says (verl 0.9.1 and TRL 0.25.1 installed), whatever this venv holds."""
    versions = {"verl": "0.9.1", "trl": "0.25.1"}
    monkeypatch.setattr(identity, "installed_version", lambda distribution: versions.get(distribution))
    identity.clear_caches()
    yield versions
    identity.clear_caches()


def _write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def _fork(tmp_path: Path) -> Path:
    return _write(tmp_path / "fork", {
        "verl/version/version": "0.1\n", "verl/__init__.py": "", "verl/trainer/main_ppo.py": "",
        "verl/trainer/config/ppo_trainer.yaml": FORK_PPO_YAML, "verl/workers/fsdp_workers.py": "",
        "scripts/train.sh": FORK_SCRIPT, "requirements.txt": "torch==2.4.0\nvllm==0.6.3\n"})


def _trl_recipe(tmp_path: Path) -> Path:
    return _write(tmp_path / "recipe", {
        "requirements.txt": "accelerate>=1.4.0\ndatasets\ntrl==0.18.0\n",
        "recipes/grpo.yaml": ("# trl grpo --config recipes/grpo.yaml\nmodel_name_or_path: Qwen/Qwen2.5-0.5B-Instruct\n"
                              "use_vllm: true\nvllm_mode: colocate\n"),
        "train.py": "from trl import GRPOConfig, GRPOTrainer\n"})


def test_a_verl_01_fork_is_a_fork_with_its_own_config(tmp_path, installed):
    root = _fork(tmp_path)
    verl = identity.resolve(str(root)).get("verl")
    assert (verl.how, verl.version, verl.closest, verl.package) == ("fork", "0.1", "0.4.1", "./verl")
    assert not verl.exact
    assert verl.describe() == ("verl fork at ./verl (verl/version/version says 0.1, a version rlcompat has no knowledge "
                               "of; closest release 0.4.1; config read from ./verl/trainer/config)")


def test_a_verl_checkout_vendored_as_a_submodule_is_the_trees_verl(tmp_path, installed):
    # A recipe repository with verl's whole repository at ./verl (its package at ./verl/verl) and a launch script
    # outside it: the script runs that copy, not the installed verl.
    root = _write(tmp_path / "recipe", {
        "verl/verl/version/version": "0.1\n", "verl/verl/trainer/main_ppo.py": "",
        "verl/verl/trainer/config/ppo_trainer.yaml": FORK_PPO_YAML, "verl/pyproject.toml": "[project]\nname='verl'\n",
        "setup.py": "from setuptools import setup\nsetup(name='recipe', install_requires=['torch==2.4.0'])\n",
        "scripts/train.sh": FORK_SCRIPT})
    verl = identity.resolve(str(root)).get("verl")
    assert (verl.how, verl.version, verl.package) == ("fork", "0.1", "./verl/verl")
    fixed = fix_paths([str(root / "scripts" / "train.sh")], SM61, unsafe=True, write=False)
    assert not [f for f in fixed.applied if f.fix and "use_torch_compile" in f.fix.description]


@pytest.mark.parametrize("files, package", [
    # ReCall's layout: the fork's package under src/, installed by the checkout's setup.py (package_dir {'': 'src'})
    ({"setup.py": "from setuptools import setup, find_packages\nsetup(name='re-call', package_dir={'': 'src'}, "
                  "packages=find_packages(where='src'))\n",
      "src/verl/version/version": "0.2.0.dev\n", "src/verl/trainer/main_ppo.py": "",
      "src/verl/trainer/config/ppo_trainer.yaml": FORK_PPO_YAML}, "./src/verl"),
    # a project vendored one level down holding a whole verl checkout (<project>/verl/verl, its own setup.py)
    ({"README.md": "", "project/setup.py": "from setuptools import setup\nsetup(name='project')\n",
      "project/verl/setup.py": "from setuptools import setup\nsetup(name='verl')\n",
      "project/verl/verl/version/version": "0.2.0.dev\n", "project/verl/verl/trainer/main_ppo.py": "",
      "project/verl/verl/trainer/config/ppo_trainer.yaml": FORK_PPO_YAML}, "./project/verl/verl"),
])
def test_a_verl_package_a_project_of_the_tree_installs_from_deeper_down_is_the_trees_verl(tmp_path, installed,
                                                                                          files, package):
    # The launch script outside the package runs that copy (python3 -m verl.trainer.main_ppo imports it once the
    # project is installed), not the verl of the scanning environment.
    root = _write(tmp_path / "fork", {**files, "scripts/train/train.sh": FORK_SCRIPT, ".git/HEAD": ""})
    verl = identity.resolve(str(root)).get("verl")
    assert (verl.how, verl.version, verl.package) == ("fork", "0.2.0.dev", package)
    report = scan_paths([str(root / "scripts" / "train" / "train.sh")], SM61)
    assert report.findings and not [f for f in report.findings if "verl 0.9.1" in f.message]


def test_a_fork_gets_no_claim_that_needs_the_exact_release(tmp_path, installed):
    root = _fork(tmp_path)
    script = root / "scripts" / "train.sh"
    report = scan_paths([str(script)], SM61)
    messages = [f.message for f in report.findings]
    # The rollout the script selects is still judged (a value the script writes) ...
    assert any(f.code == "RLC401" for f in report.findings)
    # ... but no default of another release is added (0.4.1's `use_torch_compile` is not in this fork's config), no
    # key is called dead or live, and no knowledge file:line is cited.
    assert not [m for m in messages if "uses its default" in m or "does nothing in verl" in m]
    cited = [m for m in messages if "ppo_trainer.yaml:" in m or "knowledge: verl/" in m]
    # The one file:line cited is the fork's own config, which the run composes (rlcompat/analysis/launch_path.py): its
    # `rollout.dtype: bfloat16`, which the command leaves to it.
    own = (root / "verl" / "trainer" / "config" / "ppo_trainer.yaml").resolve()
    assert len(cited) == 1 and cited[0].startswith("this run composes "), cited
    where = cited[0][len("this run composes "):].split(",")[0]
    path, line = where.rsplit(":", 1)
    assert Path(path).resolve() == own and "dtype: bfloat16" in own.read_text().splitlines()[int(line) - 1]
    fixed = fix_paths([str(script)], SM61, unsafe=True, write=False)
    added = [f.fix.description for f in fixed.applied if f.fix]
    assert not [d for d in added if "use_torch_compile" in d or d.startswith("add ")]
    assert "verl fork (closest release 0.4.1)" in knowledge_applied([str(script)], report.findings, report.identities)


def test_the_forks_own_yaml_is_read_as_the_fork(tmp_path, installed):
    root = _fork(tmp_path)
    findings = scan_paths([str(root / "verl/trainer/config/ppo_trainer.yaml")], SM61).findings
    assert not [f for f in findings if "uses its default" in f.message or "knowledge: verl/" in f.message]


def test_a_tree_pinning_an_older_verl_than_installed_is_judged_by_its_pin(tmp_path, installed):
    root = _write(tmp_path / "proj", {"requirements.txt": "ray\nverl==0.7.0\n", "run.sh": DEAD_091_SCRIPT})
    verl = identity.resolve(str(root)).get("verl")
    assert (verl.how, verl.version, verl.evidence, verl.exact) == ("pinned", "0.7.0", "requirements.txt:2", True)
    report = scan_paths([str(root / "run.sh")], SM61)
    # 0.7.0's legacy worker reads actor.use_torch_compile: not called dead as in 0.9.1, the installed release.
    assert not [f for f in report.findings if "does nothing in verl" in f.message]
    (line,) = identity_lines([str(root / "run.sh")], report.identities)
    assert line.endswith(": verl 0.7.0 pinned in requirements.txt:2")
    # Unpinned, the same script runs the installed verl 0.9.1, where the key is dead.
    (tmp_path / "bare").mkdir()
    (tmp_path / "bare" / "run.sh").write_text(DEAD_091_SCRIPT)
    bare = scan_paths([str(tmp_path / "bare" / "run.sh")], SM61).findings
    assert [f for f in bare if "does nothing in verl 0.9.1" in f.message]


def test_a_trl_recipe_pinning_0_18_is_not_judged_as_the_installed_trl_or_verl(tmp_path, installed):
    root = _trl_recipe(tmp_path)
    tree = identity.resolve(str(root))
    trl = tree.get("trl")
    assert (trl.how, trl.version, trl.evidence, trl.exact, trl.closest) == ("pinned", "0.18.0", "requirements.txt:3",
                                                                            False, "0.25.1")
    assert trl.describe() == ("TRL 0.18.0 pinned in requirements.txt:3; no knowledge for 0.18.0: values judged with "
                              "the keys of TRL 0.25.1; its defaults, dead and live keys and file:lines withheld")
    assert tree.get("verl").how == "installed"  # the tree declares no verl ...
    report = scan_paths([str(root)], SM61)
    applied = knowledge_applied([str(root)], report.findings, report.identities)
    # ... and no file of it uses verl: the installed verl 0.9.1 and TRL 0.25.1 are not what this code runs with.
    assert not [label for label in applied if label.startswith("verl") or label == "TRL 0.25.1"]
    (vllm,) = [f for f in report.findings if f.code == "RLC404"]
    assert "TRL 0.18.0 pinned in requirements.txt:3: no knowledge of that release" in vllm.message
    assert "knowledge: trl/" not in vllm.message  # no file:line of a release this code does not run
    assert "TRL 0.25.1 keys, values only (for TRL 0.18.0)" in applied  # what is used, and for what


def test_a_tree_with_no_evidence_is_unknown(tmp_path, monkeypatch):
    monkeypatch.setattr(identity, "installed_version", lambda distribution: None)
    identity.clear_caches()
    root = _write(tmp_path / "bare", {"run.sh": DEAD_091_SCRIPT})
    tree = identity.resolve(str(root))
    assert all(f.how == "unknown" for f in tree.frameworks) and not tree.found
    assert tree.describe("bare") == ("bare: no framework package or pin in the tree (installed frameworks apply to the "
                                     "files that use them)")
    findings = scan_paths([str(root / "run.sh")], SM61).findings
    assert not [f for f in findings if "does nothing in verl" in f.message or "uses its default" in f.message]


def test_the_installed_framework_applies_only_to_files_that_use_it(tmp_path, installed):
    root = _write(tmp_path / "p", {"config.yaml": "actor_rollout_ref:\n  actor:\n    use_torch_compile: true\n"})
    from rlcompat.pipeline.scanned_file import ScannedFile

    tree = identity.resolve(str(root))
    assert ScannedFile(str(root / "config.yaml"), tree, "a: 1\n").framework("verl").how == "unknown"
    assert ScannedFile(str(root / "run.sh"), tree, DEAD_091_SCRIPT).framework("verl").version == "0.9.1"


def test_pins_are_read_from_every_kind_of_declaration(tmp_path):
    root = _write(tmp_path / "t", {
        "setup.py": '_deps = [\n    "accelerate>=1.4.0",\n    "trl==0.16.1",\n]\nsetup(name="x", install_requires=_deps)\n',
        "docker/Dockerfile": "FROM python:3.11\nRUN pip install -U pip && \\\n    pip install openrlhf==0.6.4 deepspeed\n",
        "environment.yml": "name: x\ndependencies:\n  - python=3.10\n  - pip:\n    - verl==0.5.0\n"})
    assert (pin_of(str(root), "trl").version, pin_of(str(root), "trl").where) == ("0.16.1", "setup.py:3")
    assert (pin_of(str(root), "openrlhf").version, pin_of(str(root), "openrlhf").where) == ("0.6.4", "docker/Dockerfile:3")
    assert (pin_of(str(root), "verl").version, pin_of(str(root), "verl").where) == ("0.5.0", "environment.yml:5")
    assert pin_of(str(root), "deepspeed").version is None  # declared, no version
    assert identity.resolve(str(root)).get("deepspeed").how == "declared"


def test_a_framework_package_in_the_tree_wins_over_its_pins(tmp_path, installed):
    root = _write(tmp_path / "t", {"trl/__init__.py": '__version__ = "0.19.0.dev0"\n', "requirements.txt": "trl==0.25.1\n"})
    trl = identity.resolve(str(root)).get("trl")
    assert (trl.how, trl.version, trl.package) == ("fork", "0.19.0.dev0", "./trl")


def test_examples_pin_their_frameworks_whatever_is_installed(installed):
    found = scan_source(DEAD_091_SCRIPT, SM61, "run.sh", "shell", frameworks={"verl": "0.7.0"})
    assert not [f for f in found if "does nothing in verl" in f.message]
    found = scan_source(DEAD_091_SCRIPT, SM61, "run.sh", "shell", frameworks={"verl": "0.9.1"})
    assert [f for f in found if "does nothing in verl 0.9.1" in f.message]


def test_the_report_says_the_identity_in_text_and_json(tmp_path, installed):
    root = _trl_recipe(tmp_path)
    report = scan_paths([str(root)], SM61)
    from rlcompat.report.knowledge_summary import identity_json

    summary = Summary("scan", SM61, report.findings, report.errors, report.files_checked,
                      identity=identity_lines([str(root)], report.identities),
                      identity_json=identity_json([str(root)], report.identities))
    text = render("text", summary)
    assert "Identity: " in text and "TRL 0.18.0 pinned in requirements.txt:3" in text
    (tree,) = json.loads(render("json", summary))["identity"]
    (trl,) = [f for f in tree["frameworks"] if f["framework"] == "trl"]
    assert trl["how"] == "pinned" and trl["version"] == "0.18.0" and trl["exact"] is False
    assert trl["closest_release"] == "0.25.1" and trl["evidence"] == "requirements.txt:3"


def test_an_empty_report_is_not_all_clear_for_a_release_rlcompat_has_no_knowledge_of(tmp_path, installed):
    # verl 0.9.1 leaves the rollout in bf16 by default (RLC104 at the command). For 0.4.0 rlcompat withholds
    # defaults, so a script that sets nothing is not judged: the summary must not promise "All clear".
    script = "python3 -m verl.trainer.main_ppo trainer.total_epochs=1\n"

    def summary_line(version: str) -> tuple[str, list[str]]:
        root = _write(tmp_path / version, {"requirements.txt": f"verl=={version}\n", "run.sh": script})
        report = scan_paths([str(root / "run.sh")], SM61)
        paths = [str(root / "run.sh")]
        summary = Summary("scan", SM61, report.findings, report.errors, report.files_checked,
                          identity=identity_lines(paths, report.identities),
                          identity_json=identity_json(paths, report.identities))
        return render("text", summary).splitlines()[-1], [f.code for f in report.findings]

    line, codes = summary_line("0.4.0")
    assert codes == [] and not line.startswith("All clear")
    assert line.startswith("No findings (verl 0.4.0's defaults not judged)")
    line, codes = summary_line("0.9.1")
    assert "RLC104" in codes and line.startswith("Found ")


def test_a_fork_is_not_told_which_rollout_engines_it_registers(tmp_path, installed):
    root = _fork(tmp_path)
    (root / "scripts" / "train.sh").write_text(FORK_SCRIPT.replace("rollout.name=vllm", "rollout.name=trtllm"))
    findings = scan_paths([str(root / "scripts" / "train.sh")], SM61).findings
    # verl 0.4.1 registers no trtllm, but this fork is not 0.4.1: what it registers is its own code's business.
    assert not [f for f in findings if "is not registered" in f.message]
    pinned = _write(tmp_path / "p", {"requirements.txt": "verl==0.4.1\n",
                                     "train.sh": FORK_SCRIPT.replace("rollout.name=vllm", "rollout.name=trtllm")})
    (claim,) = [f for f in scan_paths([str(pinned / "train.sh")], SM61).findings if "is not registered" in f.message]
    assert "not registered in verl 0.4.1 (only hf, vllm, sglang: verl/workers/fsdp_workers.py:409" in claim.message


OPENRLHF_SCRIPT = """ray job submit -- python3 -m openrlhf.cli.train_ppo_ray \\
    --pretrain Qwen/Qwen2.5-7B \\
    --vllm_num_engines 1 \\
    --flash_attn \\
    --packing_samples
"""


def test_an_openrlhf_fork_vendored_as_a_project_is_read_from_its_version_file(tmp_path, installed):
    """OpenRLHF 0.5-style fork vendored one level down (`OpenRLHF-RAG/openrlhf`), its version in the `version.txt` its
    setup.py reads: a fork at that version for the tree whose script runs it, never a release's knowledge by the
    flags the script passes (markers), and no verl rule set named for a tree that holds no verl."""
    root = _write(tmp_path / "repo", {
        ".git/HEAD": "", "scripts/train.sh": OPENRLHF_SCRIPT,
        "OpenRLHF-RAG/setup.py": "def _fetch_version():\n    return open('version.txt').read().strip()\n",
        "OpenRLHF-RAG/version.txt": "0.5.5.post2\n", "OpenRLHF-RAG/openrlhf/__init__.py": "",
        "OpenRLHF-RAG/requirements.txt": "deepspeed==0.15.0\n"})
    tree = identity.resolve(str(root))
    fork = tree.get("openrlhf")
    assert (fork.how, fork.version, fork.package) == ("fork", "0.5.5.post2", "./OpenRLHF-RAG/openrlhf")
    assert fork.evidence == "OpenRLHF-RAG/version.txt says 0.5.5.post2 (read by its setup.py)"
    report = scan_paths([str(root / "scripts" / "train.sh")], SM61)
    assert report.findings, "the flags are still judged by their values"
    for f in report.findings:
        assert "knowledge: openrlhf/" not in f.message, f.message  # no release file:line for a fork
    applied = knowledge_applied([str(root / "scripts" / "train.sh")], report.findings, report.identities)
    assert not [label for label in applied if label.startswith("verl")], applied
    # A version.txt that no setup.py reads says nothing.
    (root / "OpenRLHF-RAG" / "setup.py").write_text("from setuptools import setup\nsetup(name='x')\n")
    identity.clear_caches()
    assert identity.resolve(str(root)).get("openrlhf").version is None


def test_a_requirement_range_is_not_overruled_by_a_dockerfile_pin(tmp_path):
    root = _write(tmp_path / "r", {"requirements.txt": "vllm<=0.6.3\naccelerate\n",
                                   "docker/Dockerfile": "FROM python:3.10\nRUN pip install vllm==0.6.3.post1 accelerate==1.0.0\n"})
    assert pin_of(str(root), "vllm").where == "requirements.txt:1"
    assert pin_of(str(root), "accelerate").where == "docker/Dockerfile:2"  # no version in the requirements


def test_a_framework_declared_without_a_version_gets_no_release_file_line(tmp_path, installed):
    """`deepspeed` unpinned: pip resolves a release nobody knows here, so the message names the key it judged by and
    no DeepSpeed release's file:line."""
    root = _write(tmp_path / "d", {"requirements.txt": "deepspeed\n",
                                   "ds_config.json": '{\n  "bf16": {\n    "enabled": true\n  }\n}\n'})
    report = scan_paths([str(root / "ds_config.json")], SM61)
    (bf16,) = [f for f in report.findings if f.code == "RLC118"]
    assert "DeepSpeed declared without a version (requirements.txt:1: deepspeed)" in bf16.message
    assert "knowledge: deepspeed/" not in bf16.message


# A recipe repository whose Python project sits in src/<name> with its own setup.py pins, and whose root setup.sh
# installs that project and then another vLLM (the install-order construct of issue 26 item 1, labeled here first).
RECIPE_SETUP_PY = ('from setuptools import setup\n_deps = [\n    "trl==0.14.0",\n    "vllm==0.6.6.post1",\n]\n'
                   'setup(name="recipe", install_requires=_deps)\n')


def _nested_recipe(tmp_path: Path, script: str) -> Path:
    return _write(tmp_path / "repo", {".git/HEAD": "", "setup.sh": script, "src/recipe/setup.py": RECIPE_SETUP_PY,
                                      "src/recipe/train.py": "from trl import GRPOTrainer\n"})


def test_an_install_script_that_installs_the_framework_after_the_project_decides_its_version(tmp_path, installed):
    root = _nested_recipe(tmp_path, "# set up\ncd src/recipe\npip install -e \".[dev]\"\ncd ../..\n\n"
                                    "pip install vllm==0.7.2 && pip install flash-attn --no-build-isolation\n")
    tree = identity.resolve(str(root / "src" / "recipe"))
    vllm = tree.get("vllm")
    assert (vllm.how, vllm.version) == ("pinned", "0.7.2")
    assert vllm.evidence == ("../../setup.sh:6, installed after the project (../../setup.sh:3), overriding "
                             "setup.py:4 (vllm==0.6.6.post1)")
    assert "vLLM 0.7.2 pinned in ../../setup.sh:6, installed after the project" in tree.describe()
    assert tree.get("trl").version == "0.14.0"  # the script installs no other TRL: the project's pin stands


@pytest.mark.parametrize("script, expected", [
    # the framework first, the project after: pip replaces it with the project's exact pin
    ("pip install vllm==0.7.2\ncd src/recipe && pip install -e .\n", ("0.6.6.post1", "setup.py:4")),
    # the project installed without its requirements: its pin never applied
    ("cd src/recipe && pip install --no-deps -e .\ncd ../.. && pip install vllm==0.7.2\n", ("0.6.6.post1", "setup.py:4")),
    # a script that never installs this project is another way to install, not a later step
    ("pip install vllm==0.7.2\n", ("0.6.6.post1", "setup.py:4")),
    # an unpinned install after the project keeps the pinned one (pip: requirement already satisfied)
    ("cd src/recipe\npip install -e .\npip install vllm\n", ("0.6.6.post1", "setup.py:4")),
])
def test_install_order_decides_only_where_the_framework_comes_after_the_project(tmp_path, installed, script, expected):
    root = _nested_recipe(tmp_path, script)
    vllm = identity.resolve(str(root / "src" / "recipe")).get("vllm")
    assert (vllm.version, vllm.evidence) == expected


def test_a_dockerfile_that_installs_the_requirements_then_a_framework_pins_that_framework(tmp_path, installed):
    root = _write(tmp_path / "d", {"requirements.txt": "vllm==0.6.3\ntorch==2.4.0\n",
                                   "docker/Dockerfile": ("FROM python:3.10\nCOPY . /app\nWORKDIR /app\n"
                                                         "RUN pip install -r requirements.txt && \\\n"
                                                         "    pip install -U vllm==0.8.5\n")})
    vllm = identity.resolve(str(root)).get("vllm")
    assert (vllm.version, vllm.evidence) == ("0.8.5", "docker/Dockerfile:5, installed after the project "
                                                      "(docker/Dockerfile:4), overriding requirements.txt:1 (vllm==0.6.3)")
    assert pin_of(str(root), "torch").where == "requirements.txt:2"


def test_an_install_script_pins_a_framework_the_project_does_not_declare(tmp_path, installed):
    root = _write(tmp_path / "s", {".git/HEAD": "", "scripts/install_env.sh": "pip install trl==0.16.0 'deepspeed>=0.15'\n",
                                   "train.py": "from trl import GRPOTrainer\n"})
    trl = identity.resolve(str(root)).get("trl")
    assert (trl.how, trl.version, trl.evidence) == ("pinned", "0.16.0", "scripts/install_env.sh:1")
    assert identity.resolve(str(root)).get("deepspeed").how == "declared"


def test_a_fork_between_two_known_releases_is_described_as_its_keys_are_judged(tmp_path):
    """An OpenRLHF fork at 0.11.0 (knowledge of 0.6.4, 0.8.11 and 0.11.2): each setting is judged by the newest
    release whose knowledge has its key, and the identity line says so, naming the release the findings name."""
    (tmp_path / "openrlhf").mkdir()
    (tmp_path / "openrlhf" / "__init__.py").write_text('__version__ = "0.11.0"\n')
    (tmp_path / "train.sh").write_text("deepspeed --module openrlhf.cli.train_ppo_ray --ds.param_dtype bf16\n")
    tree = identity.resolve(str(tmp_path))
    fork = tree.get("openrlhf")
    assert (fork.how, fork.version) == ("fork", "0.11.0")
    assert "values judged with the keys of OpenRLHF 0.11.2, 0.8.11, 0.6.4 (each key by the newest that has it)" in \
        fork.describe()
    report = scan_paths([str(tmp_path)], SM61)
    assert any("judged by the value with OpenRLHF 0.11.2's key" in f.message for f in report.findings)
    assert "closest release" not in fork.describe()  # verl's rule-set wording, not how these keys are chosen


def test_a_checkout_whose_pyproject_reads_its_version_from_a_module_is_that_release(tmp_path, installed):
    """Unsloth's checkout: no `__version__` in unsloth/__init__.py; pyproject.toml's `dynamic = ["version"]` has
    setuptools read `unsloth.models._utils.__version__`. That module's value is the release; another attr, or one whose
    module says nothing, gives no version."""
    pyproject = ('[project]\nname = "unsloth"\ndynamic = ["version"]\n\n[tool.setuptools.dynamic]\n'
                 'version = {attr = "unsloth.models._utils.__version__"}\n')
    root = _write(tmp_path / "repo", {
        ".git/HEAD": "", "pyproject.toml": pyproject, "unsloth/__init__.py": "from .models import *\n",
        "unsloth/models/__init__.py": "", "unsloth/models/_utils.py": '__version__ = "2025.5.1"\n'})
    found = identity.resolve(str(root)).get("unsloth")
    assert (found.how, found.version, found.exact) == ("release", "2025.5.1", True)
    assert found.evidence == "unsloth/models/_utils.py says unsloth 2025.5.1 (no __version__ in its __init__.py)"
    (root / "pyproject.toml").write_text(pyproject.replace("__version__", "VERSION"))
    identity.clear_caches()
    assert identity.resolve(str(root)).get("unsloth").version is None


def test_a_folder_that_is_no_project_of_its_own_takes_the_pins_of_the_project_around_it(tmp_path):
    # ColossalChat's layout (hpcaitech/ColossalAI v0.4.9 applications/ColossalChat): setup.py reads requirements.txt
    # (transformers==4.39.3); examples/requirements.txt adds colossalai and names no transformers
    (tmp_path / "setup.py").write_text("from setuptools import setup\nsetup(name='coati')\n")
    (tmp_path / "requirements.txt").write_text("transformers==4.39.3\ncolossalai>=0.4.7\n")
    examples = tmp_path / "examples"
    examples.mkdir()
    (examples / "requirements.txt").write_text("colossalai==0.4.7\n")
    (examples / "train.py").write_text("import transformers\n")
    identity.clear_caches()
    found = identity.resolve(identity.tree_root(str(examples / "train.py"))).get("transformers")
    assert (found.how, found.version, found.evidence) == ("pinned", "4.39.3", "../requirements.txt:1")
    # a project of its own (its own setup.py) does not inherit: its own install decides
    (examples / "setup.py").write_text("from setuptools import setup\nsetup(name='examples')\n")
    identity.clear_caches()
    assert identity.resolve(identity.tree_root(str(examples / "train.py"))).get("transformers").how != "pinned"


def test_a_verl_package_scanned_where_it_is_installed_does_not_take_a_project_aboves_pins(tmp_path):
    # verl's package inside the user's venv (its own tree root: a framework package) names no transformers; the
    # project the venv sits in is not that package's install, so its pin does not become the package's identity.
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "app"\ndependencies = ["transformers==4.39.3"]\n')
    verl = tmp_path / ".venv" / "lib" / "site-packages" / "verl"
    (verl / "trainer").mkdir(parents=True)
    (verl / "__init__.py").write_text("")
    identity.clear_caches()
    root = identity.tree_root(str(verl / "__init__.py"))
    assert root == str(verl)
    assert identity.resolve(root).get("transformers").how != "pinned"
