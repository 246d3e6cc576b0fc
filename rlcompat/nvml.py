"""Reading the machine's GPUs through NVML (the `nvidia-ml-py` distribution, `import pynvml`).

NVML numbers GPUs physically and ignores CUDA_VISIBLE_DEVICES, so visible devices are matched by UUID
(or by physical index when the variable lists plain integers, which is how CUDA reads them too).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from rlcompat.knowledge.versions import capability_text


class NvmlUnavailable(Exception):
    """No NVML library, no driver, or no GPU. The message says which, in one line."""


@dataclass(frozen=True)
class Gpu:
    index: int  # NVML (physical) index
    name: str
    uuid: str
    capability: tuple[int, int]
    memory_total: int  # bytes
    driver_version: str
    cuda_driver_version: str | None  # "13.0", from nvmlSystemGetCudaDriverVersion

    @property
    def capability_text(self) -> str:
        return capability_text(self.capability)


def _as_text(value) -> str:
    # Old pynvml releases returned bytes; nvidia-ml-py returns str.
    return value.decode() if isinstance(value, bytes) else str(value)


def read_gpus(pynvml_module=None) -> list[Gpu]:
    """Every GPU NVML sees, in physical order. Raises NvmlUnavailable with the reason."""
    try:
        pynvml = pynvml_module or __import__("pynvml")
    except ImportError as exc:  # pragma: no cover - nvidia-ml-py is a declared dependency
        raise NvmlUnavailable("the nvidia-ml-py package is not installed (pip install nvidia-ml-py)") from exc
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError as exc:
        raise NvmlUnavailable(_explain_init_error(pynvml, exc)) from exc
    except OSError as exc:
        raise NvmlUnavailable(f"no NVIDIA driver library (libnvidia-ml.so.1): {exc}") from exc
    try:
        driver = _as_text(pynvml.nvmlSystemGetDriverVersion())
        try:
            raw = pynvml.nvmlSystemGetCudaDriverVersion()
            cuda = f"{raw // 1000}.{(raw % 1000) // 10}"
        except pynvml.NVMLError:
            cuda = None
        gpus = []
        for i in range(pynvml.nvmlDeviceGetCount()):
            h = pynvml.nvmlDeviceGetHandleByIndex(i)
            major, minor = pynvml.nvmlDeviceGetCudaComputeCapability(h)
            gpus.append(
                Gpu(
                    index=i,
                    name=_as_text(pynvml.nvmlDeviceGetName(h)),
                    uuid=_as_text(pynvml.nvmlDeviceGetUUID(h)),
                    capability=(int(major), int(minor)),
                    memory_total=int(pynvml.nvmlDeviceGetMemoryInfo(h).total),
                    driver_version=driver,
                    cuda_driver_version=cuda,
                )
            )
        return gpus
    finally:
        try:
            pynvml.nvmlShutdown()
        except Exception:  # noqa: BLE001 - shutdown failures change nothing for the caller
            pass


def _explain_init_error(pynvml, exc) -> str:
    text = str(exc)
    if isinstance(exc, getattr(pynvml, "NVMLError_LibraryNotFound", ())):
        return "no NVIDIA driver library (libnvidia-ml.so.1 not found): no driver is installed or visible here"
    if isinstance(exc, getattr(pynvml, "NVMLError_DriverNotLoaded", ())):
        return "the NVIDIA driver is installed but not loaded (NVML: Driver Not Loaded)"
    if isinstance(exc, getattr(pynvml, "NVMLError_LibRmVersionMismatch", ())):
        return "the NVML library and the loaded kernel driver differ in version (reboot or reinstall the driver)"
    return f"NVML failed to start: {text}"


def visible_gpus(gpus: list[Gpu], env: dict[str, str] | None = None) -> list[Gpu]:
    """Apply CUDA_VISIBLE_DEVICES as CUDA does: integers are physical indices, else UUID prefixes; the list stops at the first invalid entry."""
    env = os.environ if env is None else env
    value = env.get("CUDA_VISIBLE_DEVICES")
    if value is None:
        return list(gpus)
    chosen: list[Gpu] = []
    for token in (t.strip() for t in value.split(",")):
        if not token:
            break
        if token.isdigit() or (token.startswith("-") and token[1:].isdigit()):
            idx = int(token)
            match = next((g for g in gpus if g.index == idx), None)
        else:
            match = next((g for g in gpus if g.uuid.startswith(token) or g.uuid.startswith("GPU-" + token)), None)
        if match is None:
            break  # CUDA ignores everything from the first entry that names no device
        if match not in chosen:
            chosen.append(match)
    return chosen
