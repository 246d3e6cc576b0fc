"""On a machine with a GPU (the lead runs these on the device H100): what doctor reads through NVML matches what
torch reports, and --target sm61 reports the installed torch if it has no Pascal kernels."""

from __future__ import annotations

import json

import pytest



def _has_gpu() -> bool:
    # NVML first, so that a machine without a GPU does not pay for importing torch.
    from rlcompat.nvml import NvmlUnavailable, read_gpus

    try:
        if not read_gpus():
            return False
    except NvmlUnavailable:
        return False
    import torch

    return torch.cuda.is_available()


pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not _has_gpu(), reason="needs a CUDA GPU")]


@pytest.fixture(scope="module")
def torch():
    import torch

    return torch


def test_gpus_match_torch(run_cli, torch):
    code, out, err = run_cli("doctor", "--output-format", "json")
    doc = json.loads(out)
    gpus = doc["machine"]["gpus"]
    assert len(gpus) == torch.cuda.device_count(), err
    for i, g in enumerate(gpus):
        props = torch.cuda.get_device_properties(i)
        assert g["name"] == props.name
        assert g["capability"] == f"{props.major}.{props.minor}"
        # NVML's total includes memory the driver reserves; torch's total_memory is what CUDA can allocate.
        assert 0 <= g["memory_bytes"] - props.total_memory < 2 * 2**30
        assert g["driver_version"]
    lowest = min(gpus, key=lambda g: tuple(int(p) for p in g["capability"].split(".")))
    assert doc["target"]["capability"] == lowest["capability"]
    assert doc["stack"]["torch"]["arch_list"] == torch.cuda.get_arch_list()
    assert code in (0, 1)


def test_target_sm61_reports_a_torch_without_pascal_kernels(run_cli, torch):
    code, out, _ = run_cli("doctor", "--target", "sm61", "--output-format", "json")
    doc = json.loads(out)
    arches = torch.cuda.get_arch_list()
    pascal = any(a in ("sm_60", "sm_61") or (a.startswith("compute_") and int(a[8:]) <= 61) for a in arches)
    assert ("RLC501" in [f["code"] for f in doc["findings"]]) is (not pascal)
    assert code == (1 if doc["findings"] else 0)
