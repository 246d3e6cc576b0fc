"""The wheel table (rlcompat.knowledge.torch_wheels): architectures, variants, what to install."""

from __future__ import annotations

import pytest

from rlcompat.knowledge import torch_wheels, versions


@pytest.mark.parametrize(
    "arch,cc,runs",
    [
        ("sm_60", (6, 1), True),  # a P40 runs the sm_60 cubin
        ("sm_60", (6, 2), False),  # ... a Jetson TX2 does not
        ("sm_61", (6, 0), False),  # never a higher minor
        ("sm_70", (7, 5), True),
        ("sm_75", (8, 0), False),  # never another major
        ("sm_86", (8, 9), True),
        ("sm_90a", (9, 0), True),
        ("sm_90a", (10, 0), False),  # arch-specific cubins only on their own capability
        ("compute_120", (12, 1), True),  # PTX JIT upwards
        ("compute_120", (9, 0), False),
        ("garbage", (9, 0), False),
    ],
)
def test_arch_runs_on(arch, cc, runs):
    assert torch_wheels.arch_runs_on(arch, cc) is runs


def test_release_and_tag():
    assert versions.release("2.8.0+cu128") == (2, 8, 0)
    assert versions.release("0.9.1.dev0") == (0, 9, 1)
    assert versions.local_tag("2.8.0+cu128") == "cu128" and versions.local_tag("2.8.0") is None
    assert versions.version_in("2.10.1", "2.8", "2.11") and not versions.version_in("2.11.0", "2.8", "2.11")


def test_variant_of_tagged_plain_and_cpu_versions():
    assert torch_wheels.variant("2.8.0+cu126").tag == "cu126"
    assert "sm_70" in torch_wheels.variant("2.9.0+cu128").arches  # 2.8-2.10 cu128 kept Volta
    assert "sm_70" not in torch_wheels.variant("2.11.0+cu128").arches  # 2.11 dropped it
    assert torch_wheels.variant("2.9.1").tag == "cu128"  # the PyPI default of 2.8-2.10
    assert torch_wheels.variant("2.11.0").tag == "cu130"
    assert torch_wheels.variant("2.13.0+cpu") is None
    assert torch_wheels.variant("2.4.0+rocm6.1") is None


def test_wheel_for_target_keeps_the_release_when_a_variant_fits():
    requirement, variant = torch_wheels.wheel_for_target("2.8.0+cu128", (6, 1))
    assert requirement == "torch==2.8.0" and variant.tag == "cu126"
    requirement, variant = torch_wheels.wheel_for_target("2.16.0", (6, 1))  # past the last cu126 release
    assert requirement == "torch==2.14.*" and variant.tag == "cu126"
    requirement, variant = torch_wheels.wheel_for_target("2.6.0+cu126", (12, 0))  # no Blackwell build of 2.6
    assert requirement.startswith("torch>=") and "sm_120" in variant.arches
    assert torch_wheels.wheel_for_target("2.8.0", (6, 2)) is None  # Jetson: no official wheel
    assert torch_wheels.index_url("cu126") == "https://download.pytorch.org/whl/cu126"


def test_every_held_back_release_has_a_known_torch():
    # a [[holds_back]] row is read only through the [[requires_torch]] row of the release it leaves: without one, a
    # requirement it holds back would resolve to nothing and its torch would go unjudged
    rows = torch_wheels.held_back()
    assert rows
    known = {(r.package, r.release) for r in torch_wheels.torch_requirements()}
    for row in rows:
        assert (row.holds, row.newest) in known, row
        assert "[S" in row.proof, row
