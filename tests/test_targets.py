from __future__ import annotations

import types

import pytest

from rlcompat import nvml
from rlcompat.knowledge.targets import (
    TargetError,
    all_targets,
    lowest_visible_target,
    resolve_target,
    sources,
    target_for_capability,
)


@pytest.mark.parametrize(
    "spec,name",
    [("sm61", "sm61"), ("sm_61", "sm61"), ("6.1", "sm61"), ("61", "sm61"), ("P40", "sm61"), ("tesla-p40", "sm61"),
     ("Tesla P40", "sm61"), ("V100", "sm70"), ("T4", "sm75"), ("A100", "sm80"), ("3090", "sm86"), ("RTX 4090", "sm89-geforce"), ("L4", "sm89"),
     ("H100", "sm90"), ("p100", "sm60"), ("B200", "sm100"), ("rtx5090", "sm120")],
)
def test_resolve_accepts_capabilities_and_gpu_names(spec, name):
    assert resolve_target(spec).name == name


def test_unknown_target_is_one_line_with_suggestion():
    with pytest.raises(TargetError) as err:
        resolve_target("sm611")
    msg = str(err.value)
    assert "\n" not in msg and "sm611" in msg and "rlcompat targets" in msg


def test_table_covers_sm50_to_sm120_and_every_fact_has_a_known_source():
    names = [t.name for t in all_targets()]
    for required in ("sm50", "sm60", "sm61", "sm70", "sm75", "sm80", "sm86", "sm89", "sm90", "sm100", "sm120"):
        assert required in names
    known = sources()
    for t in all_targets():
        for key, fact in t.facts.items():
            assert fact.sources, f"{t.name}.{key} has no source"
            assert all(s in known for s in fact.sources), f"{t.name}.{key} cites an unknown source"


def test_thresholds_are_monotonic_across_capabilities():
    # Each "needs at least X" fact, once true, stays true for every newer non-Jetson architecture.
    for key in ("bf16_native", "inductor", "fp16_tensor_cores", "triton_pipelining", "vllm", "flash_attn_2"):
        seen = False
        for t in all_targets():
            if t.fact(key):
                seen = True
            elif seen:
                pytest.fail(f"{key} is true below {t.name} but false there")


def test_training_dtype_follows_the_hardware():
    assert resolve_target("sm61").training_dtype == "float32"  # fp16 at 1/64 rate [S8]
    assert resolve_target("sm60").training_dtype == "float32"  # no tensor cores
    assert resolve_target("sm70").training_dtype == "float16"
    assert resolve_target("sm75").training_dtype == "float16"
    assert resolve_target("sm80").training_dtype == "bfloat16"


def test_limits_match_the_research_notes():
    assert resolve_target("sm61").smem_per_block_optin == 49152
    assert resolve_target("sm75").smem_per_block_optin == 65536
    assert resolve_target("sm86").smem_per_block_optin == 101376
    assert resolve_target("sm90").smem_per_block_optin == 232448


def test_unknown_minor_falls_back_to_closest_lower_entry():
    assert target_for_capability(8, 8).name == "sm87"
    with pytest.raises(TargetError):
        target_for_capability(3, 5)


# --- NVML / --target auto -------------------------------------------------------------------------------------


class _NVMLError(Exception):
    pass


def fake_pynvml(gpus, init_error=None):
    """A stand-in for the pynvml module: gpus is a list of (name, uuid, (major, minor), total_bytes)."""

    class LibraryNotFound(_NVMLError):
        pass

    def init():
        if init_error is not None:
            raise init_error(LibraryNotFound) if callable(init_error) else init_error

    mod = types.SimpleNamespace(
        NVMLError=_NVMLError,
        NVMLError_LibraryNotFound=LibraryNotFound,
        nvmlInit=init,
        nvmlShutdown=lambda: None,
        nvmlSystemGetDriverVersion=lambda: "580.159.04",
        nvmlSystemGetCudaDriverVersion=lambda: 13000,
        nvmlDeviceGetCount=lambda: len(gpus),
        nvmlDeviceGetHandleByIndex=lambda i: i,
        nvmlDeviceGetName=lambda h: gpus[h][0].encode(),  # old pynvml returned bytes
        nvmlDeviceGetUUID=lambda h: gpus[h][1],
        nvmlDeviceGetCudaComputeCapability=lambda h: gpus[h][2],
        nvmlDeviceGetMemoryInfo=lambda h: types.SimpleNamespace(total=gpus[h][3]),
    )
    return mod


GPUS = [("NVIDIA H100 80GB HBM3", "GPU-aaaa-1111", (9, 0), 80 << 30), ("Tesla P40", "GPU-bbbb-2222", (6, 1), 24 << 30)]


def test_auto_takes_the_lowest_visible_capability():
    assert lowest_visible_target(fake_pynvml(GPUS), env={}).name == "sm61"


def test_auto_maps_cuda_visible_devices_by_index_and_uuid():
    mod = fake_pynvml(GPUS)
    assert lowest_visible_target(mod, env={"CUDA_VISIBLE_DEVICES": "0"}).name == "sm90"
    assert lowest_visible_target(mod, env={"CUDA_VISIBLE_DEVICES": "GPU-bbbb"}).name == "sm61"
    # CUDA stops at the first entry that names no device
    assert lowest_visible_target(mod, env={"CUDA_VISIBLE_DEVICES": "0,7,1"}).name == "sm90"


def test_auto_with_nothing_visible_says_so_in_one_line():
    with pytest.raises(TargetError) as err:
        lowest_visible_target(fake_pynvml(GPUS), env={"CUDA_VISIBLE_DEVICES": ""})
    assert "none visible" in str(err.value) and "--target" in str(err.value)


def test_auto_without_nvml_library_is_a_clear_error():
    mod = fake_pynvml([], init_error=lambda cls: cls("NVML Shared Library Not Found"))
    with pytest.raises(TargetError) as err:
        lowest_visible_target(mod, env={})
    msg = str(err.value)
    assert "libnvidia-ml" in msg and "--target" in msg and "\n" not in msg


def test_auto_without_gpus():
    with pytest.raises(TargetError) as err:
        lowest_visible_target(fake_pynvml([]), env={})
    assert "no GPU" in str(err.value)


def test_gpu_names_are_text_even_from_old_pynvml():
    gpus = nvml.read_gpus(fake_pynvml(GPUS))
    assert gpus[1].name == "Tesla P40" and gpus[1].capability_text == "6.1" and gpus[0].cuda_driver_version == "13.0"
