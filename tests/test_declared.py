"""Declared environments: golden fixes of fixtures/declared, discovery by name and content, the front ends' edges."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from rlcompat._toml import load_toml_text
from rlcompat.api import fix_paths, scan_paths
from rlcompat.config import Options
from rlcompat.pipeline.discovery import discover, language_from_content, language_of
from rlcompat.lang import condaenv, dockerfile, requirements
from rlcompat.knowledge.targets import resolve_target

CASES = sorted(p for p in (Path(__file__).resolve().parents[1] / "fixtures" / "declared").iterdir() if p.is_dir())


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_fix_matches_golden_file_and_is_idempotent(case, tmp_path):
    options = load_toml_text((case / "fixture.toml").read_text())
    name, target, unsafe = options["file"], resolve_target(options["target"]), options.get("unsafe", False)
    work = tmp_path / name
    shutil.copy(case / "input" / name, work)
    expected = (case / "expected" / name).read_bytes()
    assert expected != (case / "input" / name).read_bytes(), "a fixture whose fix changes nothing tests nothing"
    report = fix_paths([str(tmp_path)], target, unsafe=unsafe)
    assert not report.errors, report.errors
    assert work.read_bytes() == expected  # line endings and every unowned byte kept
    assert not fix_paths([str(tmp_path)], target, unsafe=unsafe).changed_files
    left = sorted({f.code for f in scan_paths([str(tmp_path)], target).findings})
    assert left == sorted(options["remaining"])


@pytest.mark.parametrize("path, language", [
    ("requirements.txt", "requirements"), ("requirements-dev.txt", "requirements"),
    ("deps/requirements/base.txt", "requirements"), ("constraints.txt", "requirements"), ("notes.txt", None),
    ("Dockerfile", "dockerfile"), ("docker/Dockerfile.cuda", "dockerfile"), ("gpu.dockerfile", "dockerfile"), ("cicd/Dockerfile-uv.jinja", None),
    ("environment.yml", "conda"), ("environment-cuda.yaml", "conda"), ("conf/ppo.yaml", "yaml"),
    ("pyproject.toml", "pyproject"), ("setup.cfg", "setupcfg"), ("setup.py", "python"),
])
def test_declared_files_are_known_by_name(path, language):
    assert language_of(path) == language


def test_a_conda_environment_named_otherwise_is_read_by_content():
    env = "name: x\nchannels:\n  - nvidia\ndependencies:\n  - pip:\n    - torch==2.9.0\n"
    assert language_from_content("yaml", env) == "conda"
    assert language_from_content("yaml", "trainer:\n  dependencies: 3\n") == "yaml"
    assert language_from_content("shell", env) == "shell"


def test_walk_finds_declared_files(tmp_path):
    (tmp_path / "docker").mkdir()
    for name in ("requirements.txt", "docker/Dockerfile", "environment.yml", "README.txt"):
        (tmp_path / name).write_text("x\n")
    found, _ = discover([str(tmp_path)], Options(root=str(tmp_path), respect_gitignore=False))
    assert sorted((Path(p).relative_to(tmp_path).as_posix(), lang) for p, lang in found) == [
        ("docker/Dockerfile", "dockerfile"), ("environment.yml", "conda"), ("requirements.txt", "requirements")]


def test_requirement_lines_keep_offsets_through_continuations_and_comments():
    text = "torch==2.8.0 \\\n    --hash=sha256:abc  # pinned\n-i https://download.pytorch.org/whl/cu126\n"
    group = requirements.parse(text)
    torch = group.requirement("torch")
    assert text[torch.span.start:torch.span.end] == "torch==2.8.0" and torch.spec == "==2.8.0"
    assert [i.pytorch_tag for i in group.indexes] == ["cu126"]


def test_dockerfile_reads_images_variables_and_leaves_other_instructions_out():
    text = 'FROM pytorch/pytorch:2.8.0-cuda12.8-cudnn9-devel\nARG TORCH_CUDA_ARCH_LIST="8.0 8.6"\nCOPY . /app\n'
    parsed = dockerfile.parse(text)
    image = parsed.group.images[0]
    assert (image.cuda, image.torch_version) == ("12.8", "2.8.0")
    assert parsed.group.variable("TORCH_CUDA_ARCH_LIST").value == "8.0 8.6"
    # no RUN body: the shell front end sees only the ARG, as an assignment
    assert parsed.shell_view.strip() == 'TORCH_CUDA_ARCH_LIST="8.0 8.6"'


def test_conda_packages_and_pip_section():
    group = condaenv.parse("dependencies:\n  - pytorch::pytorch=2.1.0\n  - pytorch-cuda=12.1\n  - pip:\n    - vllm\n")
    assert [(r.name, r.spec, r.conda) for r in group.requirements] == [
        ("pytorch", "=2.1.0", True), ("pytorch-cuda", "=12.1", True), ("vllm", "", False)]


def test_broken_pyproject_is_reported_and_the_rest_runs(tmp_path):
    (tmp_path / "pyproject.toml").write_text("[project\ndependencies = [\"torch\"]\n")
    (tmp_path / "requirements.txt").write_text("flash-attn\n")
    report = scan_paths([str(tmp_path)], resolve_target("sm61"))
    assert len(report.errors) == 1 and "pyproject.toml" in report.errors[0].path
    assert [f.code for f in report.findings] == ["RLC603"]


def test_unpinned_torch_on_a_card_every_wheel_supports_is_clean(tmp_path):
    (tmp_path / "requirements.txt").write_text("torch\n--extra-index-url https://download.pytorch.org/whl/cu130\n")
    assert not scan_paths([str(tmp_path)], resolve_target("sm86")).findings
    assert [f.code for f in scan_paths([str(tmp_path)], resolve_target("sm70")).findings] == ["RLC601"]


@pytest.mark.parametrize("name, text", [
    ("Dockerfile", "ARG TORCH_INDEX=https://download.pytorch.org/whl/cu130\nFROM python:3.11\n"
                   "RUN pip install torch==2.9.1 --index-url ${TORCH_INDEX}\n"),
    ("setup.sh", 'IDX=https://download.pytorch.org/whl/cu130\npip install torch==2.9.1 --index-url $IDX\n'),
])
def test_an_index_from_a_variable_is_reported_but_never_edited_where_it_is_used(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    found = scan_paths([str(path)], resolve_target("sm61")).findings
    assert [f.code for f in found] == ["RLC601"] and found[0].fix is None
    assert "cu126" in found[0].message
    fix_paths([str(path)], resolve_target("sm61"), unsafe=True)
    assert path.read_text() == text


def test_an_index_the_front_end_cannot_resolve_is_not_taken_for_pypi(tmp_path):
    path = tmp_path / "setup.sh"
    path.write_text('pip install torch==2.9.1 --index-url "$TORCH_INDEX"\n')
    assert not scan_paths([str(path)], resolve_target("sm61")).findings


@pytest.mark.parametrize("test, reported", [
    ('[ "${INSTALL_FLASHATTN}" == "true" ]', False),  # false with the ARG's default: the branch does not run
    ('[ "$INSTALL_FLASHATTN" = false ]', True),
    ('[ "$INSTALL_FLASHATTN" != "true" ]', True),
    ('test "$INSTALL_FLASHATTN" == "true"', False),
    ('[ "$UNSET_ELSEWHERE" == "true" ]', True),  # a value the file does not set: the branch may run
    ('[ -f /opt/flash ]', True),
])
def test_a_branch_whose_test_is_false_with_the_file_own_values_is_not_read(tmp_path, test, reported):
    dockerfile = tmp_path / "Dockerfile"
    dockerfile.write_text(f"FROM python:3.11\nARG INSTALL_FLASHATTN=false\nRUN if {test}; then \\\n"
                          "        pip install flash-attn; \\\n    fi\n")
    found = [f.location.line for f in scan_paths([str(dockerfile)], resolve_target("sm75")).findings if f.code == "RLC603"]
    assert found == ([4] if reported else [])


def test_else_branches_and_nested_ifs_of_a_script(tmp_path):
    script = tmp_path / "install.sh"
    script.write_text("USE_FA=0\nif [ \"$USE_FA\" = 1 ]; then\n  pip install flash-attn==2.6.3\nelse\n"
                      "  pip install vllm==0.11.0\nfi\nif [ \"$USE_FA\" = 0 ]; then\n  if [ \"$USE_FA\" = 1 ]; then\n"
                      "    pip install flash-attn==2.7.4\n  fi\n  pip install sglang\nfi\n")
    found = sorted((f.location.line, f.code) for f in scan_paths([str(script)], resolve_target("sm61")).findings
                   if f.code in ("RLC601", "RLC603"))
    # the else branch and the outer body run; the two flash-attn installs do not. vllm 0.11.0 is judged by the torch
    # it pins (2.8.0, no sm61 kernels: RLC601); an unbounded SGLang by the torch its newest release pins (0.5.23:
    # 2.14.1, PyPI's cu130 build: RLC601).
    assert found == [(5, "RLC601"), (11, "RLC601")]


@pytest.mark.parametrize("word, name, spec", [
    ("flash_attn-2.7.4.post1+cu12torch2.6cxx11abiFALSE-cp311-cp311-linux_x86_64.whl", "flash-attn",
     "==2.7.4.post1+cu12torch2.6cxx11abiFALSE"),
    ("https://host/dl/v2.8.3/flash_attn-2.8.3-1-cp311-cp311-linux_x86_64.whl?raw=1", "flash-attn", "==2.8.3"),
    ("./wheels/torch-2.8.0+cu128-cp311-cp311-manylinux_2_28_x86_64.whl", "torch", "==2.8.0+cu128"),
])
def test_a_wheel_file_names_its_distribution_and_version(word, name, spec):
    from rlcompat.lang.declared import requirement_at

    req = requirement_at(word, 10)
    assert (req.name, req.spec, req.span.start, req.span.end, req.spec_span, req.editable) == \
        (name, spec, 10, 10 + len(word), None, False)
    assert requirement_at("./dist/not-a-wheel.tar.gz", 0) is None and requirement_at("${WHEEL}.whl", 0) is None


@pytest.mark.parametrize("word, spec", [
    ("flash_attn-2.8.0.post2+cu12torch2.7cxx11abi${ABI_FLAG}-cp312-cp312-linux_x86_64.whl", "==2.8.0.post2"),
    ("/tmp/flash_attn-2.8.3-$(uname -m).whl", "==2.8.3"),
    ("flash_attn-2.8.0${POST}-cp312-cp312-linux_x86_64.whl", None),  # the unknown part may extend the version
    ("flash_attn-${FA_VERSION}+cu12-cp312-cp312-linux_x86_64.whl", None),
    ("flash_attn${SUFFIX}-2.8.0-cp312-cp312-linux_x86_64.whl", None),
])
def test_a_wheel_file_name_with_an_unknown_part_names_only_what_it_spells(word, spec):
    from rlcompat.lang.declared import requirement_at

    req = requirement_at(word, 0)
    assert (req.name, req.spec, req.editable) == ("flash-attn", spec, False) if spec else req is None


DOUBLE_QUOTED_WHEEL = """FROM nvcr.io/nvidia/pytorch:25.02-py3
RUN ABI_FLAG=$(python -c "import torch; print('TRUE' if torch._C._GLIBCXX_USE_CXX11_ABI else 'FALSE')") && \\
    VERSION=2.8.0.post2 && \\
    FILE="flash_attn-${VERSION}+cu12torch2.7cxx11abi${ABI_FLAG}-cp312-cp312-linux_x86_64.whl" && \\
    wget -nv "https://github.com/Dao-AILab/flash-attention/releases/download/v${VERSION}/${FILE}" && \\
    pip install --no-cache-dir "${FILE}"
"""


def test_a_double_quoted_wheel_variable_partly_unknown_is_judged_by_what_it_spells(tmp_path):
    """`"${FILE}"` is one word; its value's `${VERSION}` is known and `${ABI_FLAG}` (a command's output) is not:
    the wheel it names is flash-attn 2.8.0.post2 with some local label, reported where the file is installed."""
    (tmp_path / "Dockerfile").write_text(DOUBLE_QUOTED_WHEEL)
    findings = [f for f in scan_paths([str(tmp_path)], resolve_target("sm75")).findings if f.code == "RLC603"]
    assert [(f.location.line, f.location.column) for f in findings] == [(6, 32)]
    assert "flash-attn" in findings[0].message
    assert not fix_paths([str(tmp_path)], resolve_target("sm75")).changed_files  # the value is not written there
    # A quoted value with a blank in it is no requirement (pip refuses it), and an unknown name names nothing.
    (tmp_path / "Dockerfile").write_text(DOUBLE_QUOTED_WHEEL.replace("flash_attn-${VERSION}", "${PKG}-${VERSION}"))
    assert not [f for f in scan_paths([str(tmp_path)], resolve_target("sm75")).findings if f.code == "RLC603"]
    (tmp_path / "install.sh").write_text('PKGS="vllm==0.10.0 flash-attn==2.8.0"\npip install "$PKGS"\n')
    (tmp_path / "Dockerfile").unlink()
    assert not [f for f in scan_paths([str(tmp_path)], resolve_target("sm75")).findings if f.code.startswith("RLC6")]
    (tmp_path / "install.sh").write_text('FA=flash-attn==2.8.0\npip install "$FA"\n')  # known: one word, read
    assert [(f.location.line, f.code) for f in scan_paths([str(tmp_path)], resolve_target("sm75")).findings] == \
        [(2, "RLC603")]


def test_no_deps_or_a_constraints_file_brings_no_torch_of_a_requirement(tmp_path):
    """torchvision's newest release asks for torch>=2.14.0 (RLC601, [[requires_torch]] newest), but `--no-deps`
    installs it without, and a constraints file may hold torch: neither is reported (a plain one is)."""
    from rlcompat.api import scan_paths
    from rlcompat.config import Options
    from rlcompat.knowledge.targets import resolve_target

    def codes(text):
        (tmp_path / "requirements.txt").write_text(text)
        report = scan_paths([str(tmp_path / "requirements.txt")], resolve_target("sm61"), Options(select=("RLC601",)))
        return [f.location.line for f in report.findings]

    assert codes("torchvision\n") == [1]
    assert codes("-c constraints.txt\ntorchvision\n") == []
    assert codes("--no-deps\ntorchvision\n") == []


def test_a_torch_pinned_through_a_variable_in_the_same_install_holds_torch(tmp_path):
    """`uv pip install torch==${PYTORCH_VERSION} torchvision` (axolotl 0.20.0 docker/Dockerfile-uv-base:44, a dev
    corpus): torch is pinned to one release in the same install, so torchvision's newest release does not bring its
    own torch (RLC601 stays silent); without the pin it is reported."""
    from rlcompat.api import scan_paths
    from rlcompat.config import Options
    from rlcompat.knowledge.targets import resolve_target

    def lines(command):
        (tmp_path / "install.sh").write_text(f"#!/bin/bash\nPYTORCH_VERSION=$1\n{command}\n")
        report = scan_paths([str(tmp_path / "install.sh")], resolve_target("sm61"), Options(select=("RLC601",)))
        return [f.location.line for f in report.findings]

    assert lines("uv pip install torch==${PYTORCH_VERSION} torchvision") == []
    assert lines("pip install torch==$PYTORCH_VERSION torchvision") == []
    assert lines("pip install torchvision") == [3]


SETUP_WITH_EXTRAS = """from setuptools import setup

setup(
    name="proj",
    install_requires=["numpy"],
    extras_require={"vllm": ["vllm>=0.8.5,<=0.12.0"], "test": ["pytest"]},
)
"""


def _install_line_findings(tree, target="sm61"):
    return sorted((f.path.rsplit("/", 1)[-1], f.location.line, f.location.column, f.code)
                  for f in scan_paths([str(tree)], resolve_target(target)).findings
                  if f.code.startswith("RLC6") and not f.path.endswith(("setup.py", "pyproject.toml")))


def test_an_install_of_the_trees_own_project_with_an_extra_installs_that_extras_requirements(tmp_path, monkeypatch):
    """`pip install -e .[vllm]` installs the project's `vllm` extra: vLLM 0.8.5-0.12.0 has no sm61 kernels, reported at
    the install word as the same requirement written there would be; another extra, a project the tree does not hold
    (`cd sub` where no sub/ is) and another card give nothing."""
    (tmp_path / "setup.py").write_text(SETUP_WITH_EXTRAS)
    script = ("pip3 install -v -e .[vllm]\npip install -e \".[test]\"\ncd sub && pip install -e .[vllm]\n"
              "pip install --no-deps -e .[vllm]\ncd / && pip install -e .[vllm]\n")
    (tmp_path / "install.sh").write_text(script)
    tasks = tmp_path / "sky"
    tasks.mkdir()
    (tasks / "task.yaml").write_text("resources:\n  accelerators: H100:1\nsetup: |\n  git clone https://x.org/y.git\n"
                                     "  pip3 install -e .[vllm]\nrun: |\n  echo done\n")
    assert _install_line_findings(tmp_path) == [("install.sh", 1, 20, "RLC603"), ("task.yaml", 5, 19, "RLC603")]
    assert _install_line_findings(tmp_path, "sm75") == []
    # the finding says which extra, and where in the project, the requirement comes from
    [message] = {f.message for f in scan_paths([str(tmp_path / "install.sh")], resolve_target("sm61")).findings
                 if f.code == "RLC603"}
    assert message.startswith("vllm>=0.8.5,<=0.12.0 (the `vllm` extra, setup.py:")
    monkeypatch.chdir(tmp_path.parent)  # a tree given by a relative path reads the same
    assert _install_line_findings(Path(tmp_path.name)) == [("install.sh", 1, 20, "RLC603"),
                                                          ("task.yaml", 5, 19, "RLC603")]
    fix_paths([str(tmp_path)], resolve_target("sm61"))
    assert (tmp_path / "install.sh").read_text() == script  # the requirement's text is setup.py's, not the line's


def test_a_pyproject_extra_is_read_and_an_extra_not_in_the_tree_gives_nothing(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "pyproject.toml").write_text(
        '[project]\nname = "pkg"\nversion = "0.1"\n[project.optional-dependencies]\n'
        'vllm = ["vllm>=0.8.5,<=0.12.0"]\n')
    # (the rule wakes on a file that spells its packages: here the extra's name does)
    (tmp_path / "setup.sh").write_text("pip install ./pkg[vllm]\npip install ./other[vllm]\n")
    assert _install_line_findings(tmp_path) == [("setup.sh", 1, 13, "RLC603")]
    (tmp_path / "pkg" / "pyproject.toml").unlink()
    assert _install_line_findings(tmp_path) == []


def test_an_extra_of_a_known_repository_cloned_at_run_time_installs_what_every_release_declares(tmp_path):
    """verl's SkyPilot tasks (v0.7.0 examples/skypilot): `git clone .../verl.git`, `cd verl`, `pip3 install -v -e
    .[vllm]`. The clone is not in the tree; rlcompat/knowledge/data/environment.toml `[[package_extras]]` says every verl
    release's `vllm` extra installs vLLM, which no release runs below 7.0: reported at the install word on sm61, with
    the minimum every release shares (no one release's torch pin: the version cloned is not known)."""
    (tmp_path / "task.yaml").write_text(
        "resources:\n  accelerators: H100:1\nsetup: |\n  rm -rf verl\n  git clone https://github.com/volcengine/verl.git\n"
        "  cd verl\n  pip3 install -v -e .[vllm]\nrun: |\n  echo done\n")
    (tmp_path / "setup.sh").write_text(
        "git clone --depth 1 -b v0.5.0 git@github.com:volcengine/verl.git src/v && cd src/v && pip install -e '.[vllm]'\n"
        "cd /tmp && git clone https://github.com/OpenRLHF/OpenRLHF && cd OpenRLHF && pip install -e .[vllm]\n"
        "cd /tmp && git clone https://example.org/other/verl.git && cd verl && pip install -e .[vllm]\n"
        "cd /tmp && git clone https://github.com/volcengine/verl.git && cd verl && pip install -e .[test]\n")
    assert _install_line_findings(tmp_path) == [("setup.sh", 1, 102, "RLC603"), ("setup.sh", 2, 92, "RLC603"),
                                                ("task.yaml", 7, 22, "RLC603")]
    assert _install_line_findings(tmp_path, "sm75") == []
    [message] = {f.message for f in scan_paths([str(tmp_path / "task.yaml")], resolve_target("sm61")).findings
                 if f.code == "RLC603"}
    assert message.startswith("vllm (the `vllm` extra, verl cloned from github.com/volcengine/verl (every release")
    assert "needs compute capability 7.0+" in message
    # a clone the tree holds is read from its own files instead (a vLLM release whose torch pin torch_wheels.toml
    # does not hold: one it holds is an install whose torch is judged, the engine left to where it is selected)
    (tmp_path / "src" / "v").mkdir(parents=True)
    (tmp_path / "src" / "v" / "setup.py").write_text(SETUP_WITH_EXTRAS.replace('"vllm>=0.8.5,<=0.12.0"', '"vllm==0.9.1"'))
    [own] = {f.message for f in scan_paths([str(tmp_path / "setup.sh")], resolve_target("sm61")).findings
             if f.code == "RLC603" and f.location.line == 1}
    assert own.startswith("vllm==0.9.1 (the `vllm` extra, src/v/setup.py:")


def test_install_steps_know_what_a_clone_holds_and_skip_uv_option_values():
    from rlcompat.knowledge.install_steps import repository, steps_in

    steps = steps_in("git clone --depth 1 https://github.com/volcengine/verl.git && cd verl && pip install -e .[vllm]\n"
                     "cd /w && git clone git@github.com:OpenRLHF/OpenRLHF.git rl && pip install -e rl[vllm]\n"
                     "uv pip install --torch-backend cu126 torch==2.7.1\n", "/w/s.sh", "/w")
    assert [(s.kind, s.target, s.extras, s.clone) for s in steps] == [
        ("project", "/w/verl", ("vllm",), "github.com/volcengine/verl"),
        ("project", "/w/rl", ("vllm",), "github.com/openrlhf/openrlhf"),
        ("package", "torch", (), "")]  # `cu126` is the option's value, not a package
    assert repository("ssh://git@github.com/volcengine/verl") == repository("https://github.com/volcengine/verl/")


def test_a_known_distribution_installed_by_name_with_an_extra_installs_what_the_extra_does(tmp_path):
    """`pip install "verl[vllm]==0.7.0"`, `openrlhf[vllm]` in a requirements file, `verl[sglang]` in pyproject
    dependencies: environment.toml `[[package_extras]]` rows say what the extra installs in every release (a vLLM or SGLang
    that does not run on a P40); not with --no-deps, not for an extra the row does not list, not on a T4."""
    (tmp_path / "run.sh").write_text('pip install "verl[vllm]==0.7.0"\npip install openrlhf[vllm_latest]\n'
                                     'pip install --no-deps "verl[vllm]"\npip install "verl[test]"\n')
    (tmp_path / "requirements.txt").write_text("openrlhf[vllm]==0.9.9\n")
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\nversion = "0"\ndependencies = ["verl[sglang]"]\n')
    found = sorted((f.path.rsplit("/", 1)[-1], f.location.line, f.code) for f in
                   scan_paths([str(tmp_path)], resolve_target("sm61")).findings if f.code.startswith("RLC6"))
    assert found == [("pyproject.toml", 4, "RLC603"), ("requirements.txt", 1, "RLC603"), ("run.sh", 1, "RLC603"),
                     ("run.sh", 2, "RLC603")]
    assert not [f for f in scan_paths([str(tmp_path)], resolve_target("sm75")).findings if f.code.startswith("RLC6")]
    messages = {f.message for f in scan_paths([str(tmp_path / "run.sh")], resolve_target("sm61")).findings}
    assert any(m.startswith("vllm (the `vllm_latest` extra of OpenRLHF (every release") for m in messages)
    fix_paths([str(tmp_path)], resolve_target("sm61"))
    assert (tmp_path / "requirements.txt").read_text() == "openrlhf[vllm]==0.9.9\n"  # the text is the extra's, not edited
