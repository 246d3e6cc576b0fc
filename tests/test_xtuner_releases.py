"""XTuner V1 checkouts: which release a tree runs, and what rlcompat may claim with it.

xtuner/version.py says 0.2.0 at the v1.0.0rc0 and v1.0.1 tags alike (hatchling reads it: `[tool.hatch.version]`), so
the release is told by the files of each tag (the knowledge files' `[detect]`, S490/S491); the config-class rows and
the unread RolloutConfig.dtype are each one release's, and a tree of neither release gets no claim of them."""

from __future__ import annotations

from pathlib import Path

import pytest

from rlcompat.api import scan_paths
from rlcompat.knowledge import identity
from rlcompat.knowledge.targets import resolve_target

SM61, SM75 = resolve_target("sm61"), resolve_target("sm75")
pytestmark = pytest.mark.usefixtures("fresh_verl_detection")

PYPROJECT = ('[build-system]\nrequires = ["hatchling"]\nbuild-backend = "hatchling.build"\n\n[project]\n'
             'dynamic = ["version"]\nname = "xtuner"\n\n[tool.hatch.version]\npath = "xtuner/version.py"\n')
RC0_FILES = ("xtuner/v1/datasets/resume.py", "xtuner/v1/ray/config/worker.py")
V101_FILES = ("xtuner/v1/rl/advantage/grpo.py", "xtuner/v1/datasets/rl_tokenize_fn/rl_tokenize_fn.py")
CONFIG = ("from pathlib import Path\n"
          "from xtuner.v1.config import FSDPConfig\n"
          "from xtuner.v1.model import get_model_config_from_hf\n"
          "from xtuner.v1.ray.config.worker import RolloutConfig\n"
          "rollout_config = RolloutConfig(model_path='m', dtype=\"bfloat16\")\n"
          "model_cfg = get_model_config_from_hf(Path('m'))\n"
          "fsdp_cfg = FSDPConfig(torch_compile=False, ep_size=1)\n")


def _tree(root: Path, files: tuple[str, ...], version: str = "0.2.0") -> Path:
    written = {"pyproject.toml": PYPROJECT, "xtuner/__init__.py": "# from .version import __version__\n",
               "xtuner/version.py": f'__version__ = "{version}"\nshort_version = __version__\n',
               "examples/v1/config/rl.py": CONFIG}
    written.update({f: "" for f in files})
    for name, text in written.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def _xtuner(root: Path):
    return identity.resolve(str(root)).get("xtuner")


@pytest.mark.parametrize("files, release", [(RC0_FILES, "1.0.0rc0"), (V101_FILES, "1.0.1")])
def test_a_checkout_whose_version_file_says_0_2_0_is_the_release_its_files_are(tmp_path, files, release):
    found = _xtuner(_tree(tmp_path / "x", files))
    assert (found.how, found.version, found.exact) == ("release", release, True)
    assert "xtuner/version.py says xtuner 0.2.0" in found.evidence and f"XTuner {release}'s" in found.evidence


def test_files_of_neither_release_or_another_version_file_make_a_fork(tmp_path):
    # files of v1.0.1 and of later main (text_tokenize_fn.py): no release rlcompat has read
    later = _xtuner(_tree(tmp_path / "main", V101_FILES + ("xtuner/v1/datasets/rl_tokenize_fn/text_tokenize_fn.py",)))
    assert (later.how, later.version, later.exact) == ("fork", "0.2.0", False)
    # v1.0.1's files, but a version file that says what neither tag says
    other = _xtuner(_tree(tmp_path / "other", V101_FILES, version="0.3.0"))
    assert (other.how, other.exact) == ("fork", False)


def _messages(root: Path, target, code: str) -> list[str]:
    report = scan_paths([str(root / "examples/v1/config/rl.py")], target)
    return [f.message for f in report.findings if f.code == code]


def test_each_release_is_judged_with_its_own_rows(tmp_path):
    rc0 = _messages(_tree(tmp_path / "rc0", RC0_FILES), SM75, "RLC125")
    v101 = _messages(_tree(tmp_path / "v101", V101_FILES), SM75, "RLC125")
    fsdp_rc0 = next(m for m in rc0 if m.startswith("FSDPConfig"))
    fsdp_101 = next(m for m in v101 if m.startswith("FSDPConfig"))
    assert "XTuner 1.0.0rc0: xtuner/v1/config/fsdp.py:24-25" in fsdp_rc0 and "accepts no other dtype" in fsdp_rc0
    assert "XTuner 1.0.1: xtuner/v1/config/fsdp.py:23-24" in fsdp_101 and "param_dtype=torch.float32" in fsdp_101
    # get_model_config_from_hf is a row of 1.0.1 only: the rc0 tree's file is judged with it as a release not known
    assert any(m.startswith("get_model_config_from_hf builds its config itself") and "(XTuner 1.0.1:" in m for m in v101)
    assert any(m.startswith("get_model_config_from_hf") and "the tree's release not known" in m for m in rc0)


def test_a_fork_is_judged_with_the_newest_row_and_told_so(tmp_path):
    fork = _messages(_tree(tmp_path / "fork", ()), SM75, "RLC125")
    fsdp = next(m for m in fork if m.startswith("FSDPConfig"))
    assert "the tree's release not known; as in XTuner 1.0.1" in fsdp


@pytest.mark.parametrize("files", [RC0_FILES, V101_FILES])
def test_the_rollout_dtype_no_backend_reads_is_left_alone_in_those_releases(tmp_path, files):
    root = _tree(tmp_path / "x", files)
    report = scan_paths([str(root / "examples/v1/config/rl.py")], SM61)
    assert not [f for f in report.findings if f.location.line == 5], [f.message for f in report.findings]


def test_the_rollout_dtype_is_judged_where_the_release_is_not_known(tmp_path):
    root = _tree(tmp_path / "fork", ())
    report = scan_paths([str(root / "examples/v1/config/rl.py")], SM61)
    assert [f.code for f in report.findings if f.location.line == 5] == ["RLC102"]
