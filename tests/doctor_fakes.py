"""Fakes for the doctor's tests: an NVML module and two GPUs."""

from __future__ import annotations

from types import SimpleNamespace


class FakeNvml:
    """The slice of pynvml that rlcompat.nvml uses, over a list of (name, uuid, capability, memory) tuples."""

    class NVMLError(Exception):
        pass

    class NVMLError_LibraryNotFound(NVMLError):
        pass

    def __init__(self, gpus, driver="580.159.04", cuda=13000, init_error=None):
        self.gpus, self.driver, self.cuda, self.init_error = gpus, driver, cuda, init_error
        self.shutdown = False

    def nvmlInit(self):
        if self.init_error:
            raise self.init_error

    def nvmlShutdown(self):
        self.shutdown = True

    def nvmlSystemGetDriverVersion(self):
        return self.driver.encode()  # old pynvml returned bytes

    def nvmlSystemGetCudaDriverVersion(self):
        return self.cuda

    def nvmlDeviceGetCount(self):
        return len(self.gpus)

    def nvmlDeviceGetHandleByIndex(self, i):
        return i

    def nvmlDeviceGetName(self, h):
        return self.gpus[h][0]

    def nvmlDeviceGetUUID(self, h):
        return self.gpus[h][1]

    def nvmlDeviceGetCudaComputeCapability(self, h):
        return self.gpus[h][2]

    def nvmlDeviceGetMemoryInfo(self, h):
        return SimpleNamespace(total=self.gpus[h][3], free=self.gpus[h][3], used=0)


H100 = ("NVIDIA H100 80GB HBM3", "GPU-1111aaaa-0000-0000-0000-000000000000", (9, 0), 85520809984)
P40 = ("Tesla P40", "GPU-2222bbbb-0000-0000-0000-000000000000", (6, 1), 24 * 2**30)
