"""The slime siblings of issue 28 round 12 (slime main after v0.3.1, the miles fork): slime 0.3.1's and miles 0.1.0's
bf16-unless-fp16 default at their training entries only, SGLang 0.5.16's unsuffixed image as its CUDA 13 lane, and
a glob over a folder of prebuilt wheels (`/tmp/wheels/flash_attn-*.whl`) read as that distribution's install."""

from __future__ import annotations

from pathlib import Path

from rlcompat.api import scan_paths
from rlcompat.knowledge.environment import torch_in_image
from rlcompat.knowledge.targets import resolve_target
from rlcompat.lang.declared import requirement_at

T4, P40 = resolve_target("sm75"), resolve_target("sm61")
SETUP = 'from setuptools import setup\nsetup(\n    name="{name}",\n    version="{version}",\n)\n'
TRAIN = "from {name}.utils.arguments import parse_args\n\nparse_args()\n"
HELPER = "import sys\n\nprint('--num-layers 24 --hidden-size 896')\n"
LAUNCH = ('MODEL_ARGS_LINE="$(python3 "${{SCRIPT_DIR}}/../{name}/utils/model_args_utils.py" "qwen2.5-0.5B")"\n'
          "ray job submit --address=http://127.0.0.1:8265 -- python3 train.py \\\n"
          "   --hf-checkpoint /root/Qwen2.5-0.5B {extra}\\\n   --colocate\n")


def _checkout(tmp_path: Path, name: str, version: str, extra: str = "") -> Path:
    root = tmp_path / name
    (root / "scripts").mkdir(parents=True)
    (root / name / "utils").mkdir(parents=True)
    (root / ".git").mkdir()
    (root / "setup.py").write_text(SETUP.format(name=name, version=version))
    (root / name / "__init__.py").write_text("")
    (root / name / "utils" / "model_args_utils.py").write_text(HELPER)
    (root / "train.py").write_text(TRAIN.format(name=name))
    (root / "scripts" / "run.sh").write_text(LAUNCH.format(name=name, extra=extra))
    return root


def _bf16(path: Path, target) -> list[tuple[int, str]]:
    return [(f.location.line, f.message) for f in scan_paths([str(path)], target).findings if f.code == "RLC118"]


def test_miles_and_slime_0_3_1_train_in_bf16_unless_fp16_is_passed(tmp_path):
    for name, version, proof in (("miles", "0.1.0", "arguments.py:22"), ("slime", "0.3.1", "arguments.py:157")):
        root = _checkout(tmp_path / "a", name, version)
        # the helper the launcher runs by path (a file of the checkout) prints flags: no trainer default applies there
        [(line, message)] = _bf16(root / "scripts" / "run.sh", T4)
        assert line == 2 and f"{name} {version} sets bf16 = not fp16" in message and proof in message
        assert [line for line, _ in _bf16(root / "scripts" / "run.sh", P40)] == [2]
        passed = _checkout(tmp_path / "b", name, version, extra="--fp16 ")
        assert _bf16(passed / "scripts" / "run.sh", T4) == []


def test_a_release_without_knowledge_gets_no_default_claim(tmp_path):
    root = _checkout(tmp_path, "miles", "0.2.0")
    assert _bf16(root / "scripts" / "run.sh", T4) == []


def test_sglang_0_5_16s_unsuffixed_image_is_its_cuda_13_lane():
    assert torch_in_image("lmsysorg/sglang", "v0.5.16")[1:3] == ("cu130", None)
    assert torch_in_image("lmsysorg/sglang", "v0.5.16-cu129")[1] == "cu129"
    assert torch_in_image("lmsysorg/sglang", "v0.5.15") is None  # no default read for it
    assert torch_in_image("slimerl/sglang", "v0.5.16") is None  # slime's images of 0.5.16 were not read


def test_the_cuda_13_base_image_is_reported_on_pascal_only(tmp_path):
    docker = tmp_path / "Dockerfile"
    docker.write_text("ARG SGLANG_IMAGE_TAG=v0.5.16\nFROM lmsysorg/sglang:${SGLANG_IMAGE_TAG}\nRUN pip install einops\n")
    codes = lambda target: [(f.code, f.location.line) for f in scan_paths([str(docker)], target).findings]
    assert codes(P40) == [("RLC602", 1)]
    assert codes(T4) == []


def test_a_glob_over_prebuilt_wheels_names_the_distribution_at_an_unknown_release():
    req = requirement_at("/tmp/wheels/flash_attn-*.whl", 0)
    assert (req.name, req.spec, req.version_known, req.editable) == ("flash-attn", "", False, False)
    assert requirement_at("/tmp/wheels/flash_attn_3-*.whl", 0).name == "flash-attn-3"
    assert requirement_at("/tmp/wheels/mooncake_transfer_engine*-*.whl", 0) is None  # a glob inside the name
    assert requirement_at("/tmp/wheels/*.whl", 0) is None
    assert requirement_at("flash_attn-2.8.3-cp312-cp312-linux_x86_64.whl", 0).spec == "==2.8.3"


def test_installing_flash_attention_wheels_from_a_folder_is_reported(tmp_path):
    docker = tmp_path / "Dockerfile"
    docker.write_text("FROM python:3.12\nRUN pip install /tmp/wheels/flash_attn-*.whl\n"
                      "RUN pip install /tmp/wheels/flash_attn_3-*.whl\nRUN pip install /tmp/wheels/causal_conv1d-*.whl\n")
    found = [(f.code, f.location.line) for f in scan_paths([str(docker)], T4).findings]
    assert found == [("RLC603", 2), ("RLC603", 3)]
    # a torch wheel of that folder is a build the text does not name: not judged as PyPI's newest torch
    docker.write_text("FROM python:3.12\nRUN pip install /tmp/wheels/torch-*.whl\n")
    assert [f.code for f in scan_paths([str(docker)], P40).findings] == []


def _sglang(path: Path, target) -> list[tuple[int, str]]:
    return [(f.location.line, f.message) for f in scan_paths([str(path)], target).findings if f.code == "RLC417"]


def test_a_training_command_of_slime_or_miles_starts_sglang_engines_sglang_refuses_below_7_5(tmp_path):
    for name, version in (("miles", "0.1.0"), ("slime", "0.3.1")):
        root = _checkout(tmp_path / "a", name, version, extra="--fp16 ")
        # the engine comes with the entry, not a flag: reported on the P40 even where --fp16 is passed
        [(line, message)] = _sglang(root / "scripts" / "run.sh", P40)
        assert line == 2 and f"{name} rolls out with SGLang engines" in message and "SGLang refuses" in message
        assert _sglang(root / "scripts" / "run.sh", T4) == []  # 7.5 runs SGLang
        # --debug-train-only starts no rollout servers; the helper run by path (line 1) starts no engine either
        debug = _checkout(tmp_path / "b", name, version, extra="--debug-train-only ")
        assert _sglang(debug / "scripts" / "run.sh", P40) == []


def test_a_slime_release_without_knowledge_gets_no_engine_claim(tmp_path):
    # the command names the framework's package (`slime.`), but slime 0.9.0 is a release rlcompat has not read
    root = _checkout(tmp_path, "slime", "0.9.0")
    (root / "scripts" / "run.sh").write_text("ray job submit -- python3 train.py --load slime.ckpt --colocate\n")
    assert _sglang(root / "scripts" / "run.sh", P40) == []


def test_a_train_py_of_a_tree_without_slime_knowledge_is_not_claimed(tmp_path):
    root = _checkout(tmp_path, "miles", "0.2.0")  # no knowledge of that release, and no other framework's checkout
    (root / "setup.py").write_text(SETUP.format(name="other", version="1.0"))
    assert _sglang(root / "scripts" / "run.sh", P40) == []


def test_every_sglang_engine_row_is_a_trigger_word_of_rlc417():
    from rlcompat.knowledge.frameworks import engine_rows
    from rlcompat.rules.rollout.sglang_served_on_unsupported_gpu import SglangServedOnUnsupportedGpu

    rows = engine_rows("sglang")
    assert {fw.name for fw, _ in rows} >= {"slime", "miles"}
    assert all(c in SglangServedOnUnsupportedGpu.names for _, row in rows for c in row["commands"])
