"""The target guard on its own: what it refuses on an old card, what it lets through, and where it says it happened."""

from __future__ import annotations

import importlib
import importlib.util
import sys

import pytest

torch = pytest.importorskip("torch")

from rlcompat.knowledge.targets import resolve_target  # noqa: E402
from rlcompat.verify.guard import TargetGuard, TargetViolation, check_triton_smem  # noqa: E402

THIS_FILE = __file__


def guard(target="sm61", enforce=True, tree=None):
    return TargetGuard(resolve_target(target), tree, enforce=enforce, device="cpu")


def test_bf16_tensor_creation_raises_naming_op_and_frame():
    with guard() as g:
        with pytest.raises(TargetViolation) as info:
            torch.ones(2, dtype=torch.bfloat16)
    v = g.first_violation
    assert v.kind == "bf16" and "aten.ones" in v.op
    assert v.location.file == THIS_FILE and v.location.function == "test_bf16_tensor_creation_raises_naming_op_and_frame"
    assert "sm61" in str(info.value) and THIS_FILE in str(info.value)


def test_bf16_cast_and_autocast_raise():
    x = torch.randn(4, 4)
    with guard():
        with pytest.raises(TargetViolation, match="_to_copy"):
            x.to(torch.bfloat16)
        with pytest.raises(TargetViolation):
            with torch.autocast("cpu", dtype=torch.bfloat16):
                x @ x


def test_fp32_work_passes_and_dtypes_are_counted():
    with guard() as g:
        x = torch.randn(8, 8)
        (x @ x).sum()
    assert g.violations == []
    assert g.dtypes_seen["float32"] >= 3


def test_bf16_is_allowed_on_ampere_but_counted():
    with guard("sm80") as g:
        torch.ones(2, dtype=torch.bfloat16) * 2
    assert g.violations == [] and g.dtypes_seen["bfloat16"] >= 2


def test_watch_mode_records_without_raising():
    with guard(enforce=False) as g:
        torch.zeros(3, dtype=torch.bfloat16)
    assert [v.kind for v in g.violations] == ["bf16"]


def test_guard_uninstalls_cleanly():
    with guard():
        pass
    torch.ones(1, dtype=torch.bfloat16)  # no mode left behind


def test_frames_inside_the_tree_are_reported_first(tmp_path):
    tree = tmp_path / "verl"
    tree.mkdir()
    (tree / "make.py").write_text("import torch\n\ndef make():\n    return torch.empty(1, dtype=torch.bfloat16)\n")
    sys.path.insert(0, str(tree))
    try:
        make = importlib.import_module("make").make
        with guard(tree=str(tree)) as g:
            with pytest.raises(TargetViolation):
                make()
    finally:
        sys.path.remove(str(tree))
        sys.modules.pop("make", None)
    v = g.first_violation
    assert v.in_tree and v.location.file.endswith("make.py") and v.location.line == 4


@pytest.fixture
def fake_flash_attn(tmp_path, monkeypatch):
    pkg = tmp_path / "flash_attn"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("__version__ = '2.8.3'\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.invalidate_caches()
    yield
    sys.modules.pop("flash_attn", None)


def test_flash_attn_import_fails_as_on_the_card(fake_flash_attn):
    g = guard()
    g.install_import_blocker()
    try:
        with pytest.raises(ImportError, match="sm61"):
            import flash_attn  # noqa: F401
    finally:
        g.uninstall()
    assert g.blocked_imports == ["flash_attn"]
    import flash_attn  # noqa: F401,F811  (importable again once the guard is gone)


def test_flash_attn_import_allowed_on_ampere(fake_flash_attn):
    g = guard("sm80")
    g.install_import_blocker()
    try:
        import flash_attn  # noqa: F401
    finally:
        g.uninstall()


def test_absent_flash_attn_still_looks_absent():
    if importlib.util.find_spec("flash_attn") is not None:
        pytest.skip("flash_attn is installed here")
    g = guard()
    g.install_import_blocker()
    try:
        assert importlib.util.find_spec("flash_attn") is None  # as transformers' availability check expects
    finally:
        g.uninstall()


def test_flash_attention_2_selection_is_refused():
    transformers = pytest.importorskip("transformers")
    config = transformers.Qwen2Config(vocab_size=64, hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                                      num_attention_heads=2, num_key_value_heads=1)
    with guard() as g:
        with pytest.raises(TargetViolation, match="flash_attention_2"):
            transformers.Qwen2ForCausalLM._from_config(config, attn_implementation="flash_attention_2")
        transformers.Qwen2ForCausalLM._from_config(config, attn_implementation="sdpa")
    assert [v.kind for v in g.violations] == ["flash_attn_selected"]


def test_compile_is_refused_below_sm70_when_called():
    def double(x):
        return x * 2

    with guard() as g:
        compiled = torch.compile(double)  # lazily, like inductor on the card
        assert g.violations == []
        with pytest.raises(TargetViolation, match="inductor"):
            compiled(torch.ones(2))
    v = g.first_violation
    assert v.kind == "inductor" and "compiled at" in v.message and THIS_FILE in v.message


def test_compile_untouched_on_volta_and_non_inductor_backends_pass():
    original = torch.compile
    with guard("sm70"):
        assert torch.compile is original
    with guard() as g:
        eager = torch.compile(lambda x: x + 1, backend="eager")
        assert torch.equal(eager(torch.ones(2)), torch.full((2,), 2.0))
    assert g.violations == []
    assert torch.compile is original


def test_triton_shared_memory_limit_comes_from_the_target():
    with pytest.raises(TargetViolation, match="49152"):
        check_triton_smem(guard(), "attn_fwd", 65536)
    check_triton_smem(guard(), "small", 49152)
    check_triton_smem(guard("sm80"), "attn_fwd", 65536)
