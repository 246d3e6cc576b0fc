"""A fixed declared environment still installs (issue 26, item 3): RLC601's fix moves everything that names the old
wheel variant with the index, bounds a torch range beside an added index, leaves other backends' files alone, and is
withheld (the finding saying why) where a file it cannot edit (a constraints file, uv.lock) keeps the old variant."""

from __future__ import annotations

from pathlib import Path

import pytest

from rlcompat.api import fix_paths, scan_paths
from rlcompat.knowledge.targets import resolve_target

CU = "https://download.pytorch.org/whl/"
P40 = resolve_target("sm61")


def _project(tmp_path: Path, files: dict[str, str]) -> Path:
    root = tmp_path / "proj"  # a folder whose name says nothing about a backend
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(text.encode())
    return root


def _fix(root: Path, unsafe: bool = False):
    report = fix_paths([str(root)], P40, unsafe=unsafe)
    assert not report.errors, report.errors
    assert not fix_paths([str(root)], P40, unsafe=unsafe).changed_files  # applied once
    return report


def _rlc601(root: Path):
    return [f for f in scan_paths([str(root)], P40).findings if f.code == "RLC601"]


def test_local_tags_of_torch_and_its_family_move_with_the_index(tmp_path):
    root = _project(tmp_path, {"requirements.txt": f"--extra-index-url {CU}cu128\r\ntorch==2.10.0+cu128\r\n"
                                                   "torchvision==0.25.0+cu128\r\ntransformers\r\n"})
    _fix(root)
    assert (root / "requirements.txt").read_bytes() == (
        f"--extra-index-url {CU}cu126\r\ntorch==2.10.0+cu126\r\ntorchvision==0.25.0+cu126\r\ntransformers\r\n").encode()
    assert not _rlc601(root)


def test_a_torch_line_for_another_platform_does_not_leave_the_linux_pin_on_the_old_tag(tmp_path):
    text = (f"--extra-index-url {CU}cu128\ntorch==2.10.0 ; sys_platform == 'darwin'\n"
            "torch==2.10.0+cu128 ; sys_platform == 'linux'\n")
    root = _project(tmp_path, {"requirements.txt": text})
    _fix(root)
    assert (root / "requirements.txt").read_text() == text.replace("cu128", "cu126")


def test_a_constraints_file_that_keeps_the_old_build_withholds_the_added_index(tmp_path):
    # the shape seen on a public repository: the fix added the cu126 index while torch==2.10.0+cu128 stayed pinned
    text = "-c constraints.txt\ntorch==2.10.0\naccelerate\n"
    root = _project(tmp_path, {"requirements.txt": text, "constraints.txt": "torch==2.10.0+cu128\n"})
    [finding] = [f for f in _rlc601(root) if f.path.endswith("requirements.txt")]
    assert finding.fix is None
    assert "constraints.txt:1 pins `torch==2.10.0+cu128`" in finding.message and "cu126 index" in finding.message
    _fix(root, unsafe=True)
    assert (root / "requirements.txt").read_text() == text
    # once the constraints file names the cu126 build, the fix is consistent and is made
    (root / "constraints.txt").write_text("torch==2.10.0+cu126\n")
    _fix(root, unsafe=True)
    assert (root / "requirements.txt").read_text() == f"-c constraints.txt\n--extra-index-url {CU}cu126\ntorch==2.10.0\naccelerate\n"


def test_an_included_file_on_the_old_index_withholds_the_retag(tmp_path):
    text = f"-r base.txt\n--index-url {CU}cu128\ntorch==2.9.0\n"
    root = _project(tmp_path, {"requirements.txt": text, "base.txt": f"--extra-index-url {CU}cu128\nnumpy\n"})
    [finding] = [f for f in _rlc601(root) if f.path.endswith("requirements.txt")]
    assert finding.fix is None and "base.txt:1 sets the cu128 index too" in finding.message
    _fix(root)
    assert (root / "requirements.txt").read_text() == text


def test_a_file_that_pins_hashes_is_not_retagged(tmp_path):
    text = (f"--index-url {CU}cu128\ntorch==2.8.0 \\\n    --hash=sha256:{'a' * 64}\n")
    root = _project(tmp_path, {"requirements.txt": text})
    [finding] = _rlc601(root)
    assert finding.fix is None and "pins wheel hashes" in finding.message and "--generate-hashes" in finding.message
    _fix(root)
    assert (root / "requirements.txt").read_text() == text


@pytest.mark.parametrize("name, text, fixed", [
    ("requirements.txt", "torch>=2.6\naccelerate\n", f"--extra-index-url {CU}cu126\ntorch>=2.6,<2.15\naccelerate\n"),
    ("requirements.txt", "torch\n", f"--extra-index-url {CU}cu126\ntorch<2.15\n"),
    ("requirements.txt", "torch>=2.6,<2.12\n", f"--extra-index-url {CU}cu126\ntorch>=2.6,<2.12\n"),  # bounded already
    ("install.sh", "pip install torch transformers\n", f"pip install 'torch<2.15' --extra-index-url {CU}cu126 transformers\n"),
    ("install.sh", "pip install 'torch>=2.9'\n", f"pip install 'torch>=2.9,<2.15' --extra-index-url {CU}cu126\n"),
])
def test_an_unpinned_torch_beside_an_added_index_stops_where_the_variant_stops(tmp_path, name, text, fixed):
    # pip takes the newest release PyPI or the index has: past the cu126 builds' last release
    # (rlcompat/knowledge/data/torch_wheels.toml, below 2.15) that is PyPI's default build again
    root = _project(tmp_path, {name: text})
    _fix(root, unsafe=True)
    assert (root / name).read_text() == fixed
    assert not _rlc601(root)


def test_a_range_beside_a_retagged_extra_index_is_bounded_too(tmp_path):
    root = _project(tmp_path, {"requirements.txt": f"--extra-index-url {CU}cu130\ntorch>=2.9\n"})
    _fix(root)
    assert (root / "requirements.txt").read_text() == f"--extra-index-url {CU}cu126\ntorch>=2.9,<2.15\n"


@pytest.mark.parametrize("name, text", [
    ("Dockerfile", "FROM ascendai/cann:8.1.rc1-910b-ubuntu22.04-py3.10\n"
                   "RUN pip install torch==2.8.0 torch-npu==2.8.0 transformers\n"),
    ("Dockerfile", "FROM quay.io/ascend/verl:latest\nRUN pip install torch==2.8.0\n"),
    ("requirements-npu.txt", "torch==2.8.0\ntorch_npu==2.8.0\n"),
    ("requirements.txt", "torch==2.8.0\ntorch-npu==2.8.0.post1\n"),
    ("docker/Dockerfile.rocm", "FROM rocm/pytorch:latest\nRUN pip install torch==2.8.0\n"),
    ("requirements.txt", f"--index-url {CU}rocm6.4\ntorch==2.8.0\n"),
    ("requirements-xpu.txt", f"--extra-index-url {CU}xpu\ntorch==2.8.0\n"),
    ("install.sh", "pip install torch==2.8.0 intel-extension-for-pytorch==2.8.10\n"),
    ("requirements-cpu.txt", "torch==2.8.0\n"),
])
def test_files_of_other_backends_are_left_alone(tmp_path, name, text):
    root = _project(tmp_path, {name: text})
    assert not _rlc601(root)
    _fix(root, unsafe=True)
    assert (root / name).read_text() == text


@pytest.mark.parametrize("name, text", [
    ("Dockerfile", "FROM python:3.11\nRUN pip install torch==2.8.0 transformers\n"),
    ("install.sh", "pip install torch==2.8.0  # not torch-npu: this one runs on the card\n"),
    ("run_cpu_offload.sh", "pip install torch==2.8.0\n"),
])
def test_an_nvidia_install_that_mentions_no_other_backend_is_still_fixed(tmp_path, name, text):
    root = _project(tmp_path, {name: text})
    assert len(_rlc601(root)) == 1
    _fix(root, unsafe=True)
    assert f"--extra-index-url {CU}cu126" in (root / name).read_text()


UV = ('[project]\nname = "x"\nversion = "0"\ndependencies = ["transformers"]\n\n[project.optional-dependencies]\n'
      'vllm = ["torch==2.8.0"]\nsglang = ["torch==2.9.0"]\n\n[tool.uv.sources]\ntorch = [\n'
      '  { index = "torch-vllm", extra = "vllm" },\n  { index = "torch-sglang", extra = "sglang" },\n'
      '  { index = "torch-cpu", marker = "sys_platform == \'darwin\'" },\n]\n\n'
      f'[[tool.uv.index]]\nname = "torch-vllm"\nurl = "{CU}cu128"\nexplicit = true\n\n'
      f'[[tool.uv.index]]\nname = "torch-sglang"\nurl = "{CU}cu128"\nexplicit = true\n\n'
      f'[[tool.uv.index]]\nname = "torch-cpu"\nurl = "{CU}cpu"\nexplicit = true\n')
LOCK = ('version = 1\nrequires-python = ">=3.10"\n\n[[package]]\nname = "torch"\nversion = "2.8.0+cu128"\n'
        f'source = {{ registry = "{CU}cu128" }}\n')


def _uv_routes(root: Path):
    """The finding at the first route row (with the fix) and the one at each other row that routes torch there."""
    found = [f for f in _rlc601(root) if "uv installs" in f.message]
    first = [f for f in found if "this row routes torch there too" not in f.message]
    return first, [f for f in found if f not in first]


def test_every_index_group_of_a_uv_project_is_repointed_together(tmp_path):
    root = _project(tmp_path, {"pyproject.toml": UV})
    [uv], [other] = _uv_routes(root)
    assert "1 more uv index" in uv.message
    # the sglang row is where `uv sync --extra sglang` is fixed too: reported, pointing at the one edit
    assert other.location.line == 13 and other.fix is None and "the fix is reported at line 12" in other.message
    _fix(root)
    fixed = (root / "pyproject.toml").read_text()
    assert fixed == UV.replace(f"{CU}cu128", f"{CU}cu126")  # both CUDA groups; the CPU (macOS) one is not ours
    assert not [f for f in _rlc601(root) if "uv installs" in f.message]


def test_a_uv_lock_on_the_old_index_withholds_the_fix_and_says_to_relock(tmp_path):
    root = _project(tmp_path, {"pyproject.toml": UV, "uv.lock": LOCK})
    [uv], _ = _uv_routes(root)
    assert uv.fix is None
    assert "uv.lock pins torch 2.8.0+cu128 from the cu128 index" in uv.message and "run `uv lock`" in uv.message
    _fix(root)
    assert (root / "pyproject.toml").read_text() == UV
    # relocked against cu126 (what the message asks for, after the index is changed by hand): nothing withheld
    (root / "uv.lock").write_text(LOCK.replace("cu128", "cu126"))
    _fix(root)
    assert (root / "pyproject.toml").read_text() == UV.replace(f"{CU}cu128", f"{CU}cu126")


def test_a_uv_pin_with_the_old_local_tag_moves_with_the_index(tmp_path):
    text = ('[project]\nname = "x"\nversion = "0"\ndependencies = ["torch==2.8.0+cu128", "torchaudio==2.8.0+cu128"]\n\n'
            f'[tool.uv]\nextra-index-url = ["{CU}cu128"]\n\n'
            f'[[tool.uv.index]]\nname = "pt"\nurl = "{CU}cu128"\n')
    root = _project(tmp_path, {"pyproject.toml": text})
    _fix(root)
    assert (root / "pyproject.toml").read_text() == text.replace("cu128", "cu126")
    assert not _rlc601(root)


def test_a_wheel_file_under_the_pytorch_index_is_not_repointed(tmp_path):
    # skyrl-train 0.3.1's shape: a package's wheel named by its URL under download.pytorch.org/whl/cu128/
    wheel = f"{CU}cu128/flashinfer/flashinfer_python-0.2.6.post1%2Bcu128torch2.7-cp39-abi3-linux_x86_64.whl"
    text = UV.replace("[tool.uv.sources]\n", f'[tool.uv.sources]\nflashinfer-python = {{ url = "{wheel}" }}\n')
    root = _project(tmp_path, {"pyproject.toml": text})
    _fix(root)
    fixed = (root / "pyproject.toml").read_text()
    assert wheel in fixed and fixed == text.replace(f'"{CU}cu128"', f'"{CU}cu126"')


def test_the_repointed_uv_index_serves_every_release_the_project_pins(tmp_path):
    # on a V100 only torch 2.7.1 lacks kernels on cu128 (2.8's cu128 build has sm_70); cu118 would serve 2.7.1 but
    # not the other extra's 2.8.0, so the index moves to cu126, which has both
    text = UV.replace('sglang = ["torch==2.9.0"]', 'sglang = ["torch==2.7.1"]')
    root = _project(tmp_path, {"pyproject.toml": text})
    fix_paths([str(root)], resolve_target("sm70"))
    assert (root / "pyproject.toml").read_text() == text.replace(f"{CU}cu128", f"{CU}cu126")


def test_an_extra_named_for_another_backend_is_not_an_nvidia_install(tmp_path):
    text = ('[project]\nname = "x"\nversion = "0"\n\n[project.optional-dependencies]\n'
            'cpu = ["torch==2.9.0"]\ngpu = ["torch==2.9.0"]\n')
    root = _project(tmp_path, {"pyproject.toml": text})
    assert [f.message.split(" from ")[0] for f in _rlc601(root)] == ["pip installs torch 2.9.0 (the `gpu` extra)"]


def test_a_conda_environment_pip_section_moves_its_pins_with_its_index(tmp_path):
    text = (f"name: rl\ndependencies:\n  - python=3.11\n  - pip:\n    - --extra-index-url {CU}cu128\n"
            "    - torch==2.8.0+cu128\n    - torchaudio==2.8.0+cu128\n")
    root = _project(tmp_path, {"environment.yml": text})
    _fix(root)
    assert (root / "environment.yml").read_text() == text.replace("cu128", "cu126")


def test_uv_s_torch_backend_is_the_pytorch_index_it_names(tmp_path):
    # uv pip install --torch-backend=cu128 / UV_TORCH_BACKEND=cu130 take torch from that PyTorch index [S180]; axolotl
    # 0.21.0's docker/Dockerfile-uv-base sets the variable from an ARG, reported (not edited) where the ARG writes it
    text = ('ARG PYTORCH_VERSION="2.14.1"\nARG TORCH_BACKEND="cu130"\n'
            'RUN UV_TORCH_BACKEND=$TORCH_BACKEND uv pip install torch==${PYTORCH_VERSION} torchvision\n'
            'RUN uv pip install torch==2.8.0 --torch-backend=cu128\n'
            'RUN uv pip install torch==2.8.0 --torch-backend cu126\n'
            # `auto` names no index (the driver decides): PyPI's torch 2.7.1 (cu126) as without the option
            'RUN uv pip install torch==2.7.1 --torch-backend=auto\n')
    root = _project(tmp_path, {"Dockerfile": text})
    assert [(f.location.line, f.fix is not None) for f in _rlc601(root)] == [(2, False), (4, True)]
    _fix(root)
    assert (root / "Dockerfile").read_text().splitlines()[3] == "RUN uv pip install torch==2.8.0 --torch-backend=cu126"


def test_an_install_a_later_exact_uv_sync_undoes_decides_nothing(tmp_path):
    # NeMo RL v0.4.0's docker/Dockerfile warms uv's cache in the project environment, then `uv sync` (exact unless
    # --inexact) leaves that environment as the lock says [S237]: the warm-up's torch and flash-attn do not stay
    warm = ('ENV UV_PROJECT_ENVIRONMENT=/opt/venv\n'
            'RUN VIRTUAL_ENV=$UV_PROJECT_ENVIRONMENT uv pip install torch==2.7.0 --torch-backend=cu128\n'
            'RUN VIRTUAL_ENV=$UV_PROJECT_ENVIRONMENT uv pip install flash-attn==2.7.4.post1 --no-build-isolation\n')

    def found(text: str):
        root = _project(tmp_path / str(len(list(tmp_path.iterdir()))), {"Dockerfile": text})
        return sorted((f.code, f.location.line) for f in scan_paths([str(root)], P40).findings
                      if f.code in ("RLC601", "RLC603"))

    both = [("RLC601", 2), ("RLC603", 3)]
    assert found(warm + "RUN uv sync --locked --no-install-project\n") == []
    assert found(warm) == both  # nothing undoes them
    # a sync before them, an inexact one, one that keeps build dependencies, one into the active environment, or a
    # comment does not undo them
    assert found(warm.replace("RUN", "RUN uv sync --locked\nRUN", 1)) == [("RLC601", 3), ("RLC603", 4)]
    for later in ("uv sync --inexact", "uv sync --no-build-isolation", "uv sync --active", "# uv sync"):
        assert found(warm + f"RUN {later}\n") == both, later
    # an install into another environment than the project's is not the sync's
    other = warm.replace("VIRTUAL_ENV=$UV_PROJECT_ENVIRONMENT", "VIRTUAL_ENV=/opt/other")
    assert found(other + "RUN uv sync --locked\n") == both
