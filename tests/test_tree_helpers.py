"""RLC136 on a project's own helper, read from the tree (rlcompat/analysis/tree_helpers.py): a call in one file of a
function another file of the project defines, which returns bf16 under `torch.cuda.is_bf16_supported()` (litgpt
0.5.13: litgpt/pretrain.py:127 calls litgpt/utils.py:363-380's get_default_supported_precision)."""

from __future__ import annotations

from rlcompat.api import scan_paths
from rlcompat.config import Options
from rlcompat.knowledge import identity
from rlcompat.knowledge.targets import resolve_target

HELPER = '''import torch


def default_precision(training: bool) -> str:
    if torch.cuda.is_available():
        if torch.cuda.is_bf16_supported():
            return "bf16-mixed" if training else "bf16-true"
        return "16-mixed" if training else "16-true"
    return "bf16-mixed" if training else "bf16-true"
'''
CALLER = "from mypkg.utils import default_precision\n\nprecision = None\nprecision = precision or default_precision(True)\n"


def _findings(tmp_path, helper, target="sm75"):
    (tmp_path / ".git").mkdir(exist_ok=True)
    pkg = tmp_path / "mypkg"
    pkg.mkdir(exist_ok=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "utils.py").write_text(helper)
    (pkg / "train.py").write_text(CALLER)
    identity.clear_caches()
    report = scan_paths([str(pkg / "train.py")], resolve_target(target), Options(select=("RLC136",)))
    assert not report.errors, report.errors
    return [(f.location.line, f.code, f.message) for f in report.findings]


def test_a_caller_of_the_projects_bf16_helper_is_reported_with_the_helpers_line(tmp_path):
    (found,) = _findings(tmp_path, HELPER)
    assert found[:2] == (4, "RLC136")
    assert "mypkg/utils.py:6" in found[2] and "'bf16-mixed'" in found[2]


def test_not_on_a_card_with_bf16(tmp_path):
    assert _findings(tmp_path, HELPER, target="sm80") == []


def test_a_helper_that_tests_the_hardware_is_not_reported(tmp_path):
    helper = HELPER.replace("is_bf16_supported()", "is_bf16_supported(including_emulation=False)")
    assert _findings(tmp_path, helper) == []


def test_a_helper_without_a_bf16_branch_is_not_reported(tmp_path):
    helper = HELPER.replace('"bf16-mixed" if training else "bf16-true"', '"32-true"')
    assert _findings(tmp_path, helper) == []


def test_a_helper_spelling_the_probe_as_cpython_reads_it_is_found_and_one_without_it_is_not_parsed(tmp_path):
    # A file that cannot call is_bf16_supported is not parsed (torch's common_utils.py, 968 KB); a spelling CPython
    # reads as the same name (NFKC: a fullwidth letter) still can.
    from rlcompat.analysis import tree_helpers

    (found,) = _findings(tmp_path, HELPER.replace("cuda.is_bf16_supported", "cuda.\uff49s_bf16_supported"))
    assert found[:2] == (4, "RLC136")
    assert tree_helpers._may_probe("def f():\n    return 1\n") is False
    assert tree_helpers._may_probe("x = torch.cuda.is_bf16_supported()\n") is True
