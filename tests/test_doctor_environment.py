"""Reading the machine with fakes: NVML, installed-package metadata, the torch subprocess, nvcc."""

from __future__ import annotations

import importlib.metadata as metadata
import json
import subprocess
import sys
import pytest

from rlcompat.doctor import environment
from tests.doctor_fakes import H100, P40, FakeNvml
from rlcompat.doctor.snapshot import Environment


def test_read_machine_reports_every_field_and_applies_cuda_visible_devices():
    fake = FakeNvml([H100, P40])
    gpus, problem, total = environment.read_machine(fake, env={"CUDA_VISIBLE_DEVICES": "GPU-2222"})
    assert problem is None and total == 2 and fake.shutdown
    [p40] = gpus
    assert (p40.index, p40.name, p40.capability, p40.memory_total) == (1, "Tesla P40", (6, 1), 24 * 2**30)
    assert p40.driver_version == "580.159.04" and p40.cuda_driver_version == "13.0"
    gpus, _, _ = environment.read_machine(fake, env={})
    assert [g.name for g in gpus] == [H100[0], P40[0]]


def test_read_machine_says_why_there_is_no_gpu():
    missing = FakeNvml([], init_error=FakeNvml.NVMLError_LibraryNotFound("NVML Shared Library Not Found"))
    gpus, problem, _ = environment.read_machine(missing, env={})
    assert gpus == () and "libnvidia-ml.so.1" in problem
    gpus, problem, _ = environment.read_machine(FakeNvml([]), env={})
    assert gpus == () and "no GPU" in problem
    gpus, problem, total = environment.read_machine(FakeNvml([H100]), env={"CUDA_VISIBLE_DEVICES": ""})
    assert gpus == () and total == 1 and "CUDA_VISIBLE_DEVICES=''" in problem


def test_read_packages_reads_metadata_only(tmp_path):
    info = tmp_path / "flash_attn-2.8.3.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Name: flash_attn\nVersion: 2.8.3\n")
    known = {"flash-attn": metadata.PathDistribution(info)}

    def distribution(name):
        if name in known:
            return known[name]
        raise metadata.PackageNotFoundError(name)

    found = environment.read_packages(["torch", "flash-attn"], distribution=distribution)
    assert list(found) == ["flash-attn"]
    assert found["flash-attn"].version == "2.8.3"
    assert found["flash-attn"].metadata_path == str(info / "METADATA")


def _completed(stdout="", stderr="", returncode=0):
    return subprocess.CompletedProcess([], returncode, stdout=stdout, stderr=stderr)


@pytest.fixture
def torch_present(monkeypatch):
    monkeypatch.setattr(environment.importlib.util, "find_spec", lambda name: object() if name == "torch" else None)


def test_probe_torch_reads_the_child_json(torch_present):
    calls = []

    def run(cmd, **kwargs):
        calls.append((cmd, kwargs))
        return _completed(json.dumps({"version": "2.8.0+cu128", "cuda": "12.8", "hip": None,
                                      "arches": ["sm_70", "sm_75", "sm_80"]}) + "\n")

    build = environment.probe_torch(run=run, python="/venv/bin/python")
    assert (build.version, build.cuda, build.arches, build.arches_from) == ("2.8.0+cu128", "12.8", ("sm_70", "sm_75", "sm_80"), "torch")
    cmd, kwargs = calls[0]
    assert cmd[0] == "/venv/bin/python" and "get_arch_list" in cmd[2] and kwargs["timeout"] > 0


def test_probe_torch_falls_back_to_the_wheel_table(torch_present):
    def crash(cmd, **kwargs):
        return _completed(stderr="Traceback...\nImportError: libcudnn.so.9: cannot open shared object file", returncode=1)

    build = environment.probe_torch(run=crash, installed_version="2.9.1+cu128")
    assert build.arches_from == "table" and build.cuda == "12.8" and "libcudnn" in build.problem

    def hang(cmd, **kwargs):
        raise subprocess.TimeoutExpired(cmd, kwargs["timeout"])

    build = environment.probe_torch(run=hang, installed_version="2.13.0+cpu", timeout=5)
    assert build.arches_from == "unknown" and "longer than 5 s" in build.problem and not build.is_cpu_only


def test_probe_torch_without_torch_runs_nothing(monkeypatch):
    monkeypatch.setattr(environment.importlib.util, "find_spec", lambda name: None)
    assert environment.probe_torch(run=lambda *a, **k: pytest.fail("ran a subprocess")) is None


def test_nvcc_version_and_discovery(tmp_path):
    out = "nvcc: NVIDIA (R) Cuda compiler driver\nCuda compilation tools, release 12.9, V12.9.86\n"
    assert environment.nvcc_version("/x/nvcc", run=lambda *a, **k: _completed(out)) == "12.9"
    assert environment.nvcc_version(None) is None
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "nvcc").write_text("")
    assert environment.find_nvcc({"CUDA_HOME": str(tmp_path)}, which=lambda n: None) == str(tmp_path / "bin" / "nvcc")
    assert environment.find_nvcc({}, which=lambda n: None) is None


def test_snapshot_from_toml():
    env = Environment.from_toml('nvcc = "12.9"\n[[gpu]]\nname = "Tesla T4"\ncapability = "7.5"\nmemory_gib = 15\n'
                                '[torch]\nversion = "2.8.0+cu126"\ncuda = "12.6"\n[packages]\nFlash_Attn = "2.8.3"\n')
    assert env.gpus[0].capability == (7, 5) and env.gpus[0].memory_total == 15 * 2**30
    assert env.package("flash-attn").version == "2.8.3" and env.package("torch").version == "2.8.0+cu126"
    assert env.nvcc == "12.9" and env.gpu_problem is None
