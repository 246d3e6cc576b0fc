"""The guard's precision checks on sm70/sm75: fp16 parameters under a grad scaler, non-finite loss and logits."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

torch = pytest.importorskip("torch")

from rlcompat.knowledge.targets import resolve_target  # noqa: E402
from rlcompat.verify.guard import TargetGuard, TargetViolation  # noqa: E402


def guard(target="sm70", enforce=True):
    return TargetGuard(resolve_target(target), None, enforce=enforce, device="cpu")


def amp_step(param_dtype, scaler_method="step"):
    """One fp16-autocast step on CPU of a tiny linear model whose parameters are `param_dtype`."""
    model = torch.nn.Linear(8, 4).to(param_dtype)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    scaler = torch.amp.GradScaler("cpu")
    with torch.autocast("cpu", dtype=torch.float16):
        loss = model(torch.randn(2, 8, dtype=param_dtype)).float().pow(2).mean()
    scaler.scale(loss).backward()
    if scaler_method == "unscale_":
        scaler.unscale_(opt)
    scaler.step(opt)
    scaler.update()
    return model


@pytest.mark.parametrize("target", ["sm70", "sm75"])
@pytest.mark.parametrize("method", ["step", "unscale_"])
def test_fp16_parameters_under_a_grad_scaler_fail_the_step_naming_the_settings(target, method):
    with guard(target) as g:
        with pytest.raises(TargetViolation) as info:
            amp_step(torch.float16, method)
    v = g.first_violation
    assert v.kind == "fp16_params_scaler" and v.op == f"GradScaler.{method}"
    assert "2 of 2 parameters in float16" in v.message and "Attempting to unscale FP16 gradients" in v.message
    assert "autocast cpu float16" in v.message and "GradScaler in use" in v.message
    assert "torch_dtype=torch.float32" in str(info.value)


def test_without_the_guard_torch_itself_refuses_fp16_gradients():
    # The guard fails the step where the card would: torch's own scaler raises for the same combination.
    with pytest.raises(ValueError, match="Attempting to unscale FP16 gradients"):
        amp_step(torch.float16)


def test_fp32_weights_with_fp16_autocast_and_a_scaler_train_a_step():
    with guard("sm70") as g:
        model = amp_step(torch.float32)
    assert g.violations == []
    assert all(p.dtype == torch.float32 and torch.isfinite(p).all() for p in model.parameters())


def test_non_finite_loss_fails_at_backward_naming_the_settings():
    w = torch.ones(3, requires_grad=True)
    with guard("sm75") as g:
        with torch.autocast("cpu", dtype=torch.float16):
            loss = (w * torch.tensor([float("inf"), 1.0, 1.0])).sum()
        with pytest.raises(TargetViolation, match="loss turned non-finite"):
            loss.backward()
    assert g.first_violation.kind == "non_finite"
    assert "autocast cpu float16" in g.first_violation.message and "no grad scaler" in g.first_violation.message


def test_non_finite_logits_are_caught_in_the_forward_naming_parameter_dtypes():
    class Overflowing(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = torch.nn.Linear(4, 4).half()

        def forward(self, x):
            return SimpleNamespace(logits=self.proj(x) * 1e5)  # past fp16's 65504: inf

    with guard("sm70", enforce=False) as g:
        Overflowing()(torch.full((1, 4), 10.0, dtype=torch.float16))
    assert [v.kind for v in g.violations] == ["non_finite"]
    assert "logits of Overflowing" in g.violations[0].message and "model parameters float16" in g.violations[0].message


def test_finite_loss_and_logits_pass():
    with guard("sm70") as g:
        w = torch.ones(3, requires_grad=True)
        (w * 2).sum().backward()
    assert g.violations == []


def test_precision_checks_are_off_where_the_policy_is_not_fp16_autocast():
    # sm61 trains in fp32 (no autocast), sm80 in bf16: fp16 parameters meet torch's own error, not the guard's.
    for target in ("sm61", "sm80"):
        with guard(target, enforce=False) as g:
            with pytest.raises(ValueError, match="Attempting to unscale FP16 gradients"):
                amp_step(torch.float16)
        assert not [v for v in g.violations if v.kind in ("fp16_params_scaler", "non_finite")]


def test_uninstall_restores_torch():
    before = (torch.amp.GradScaler.step, torch.amp.GradScaler.unscale_, torch.amp.GradScaler.scale,
              torch.Tensor.backward, torch.autocast.__enter__)
    with guard("sm70"):
        assert torch.Tensor.backward is not before[3]
    assert (torch.amp.GradScaler.step, torch.amp.GradScaler.unscale_, torch.amp.GradScaler.scale,
            torch.Tensor.backward, torch.autocast.__enter__) == before
