"""torchforge's install files and GRPO app config (issue 28 round 12, dev sibling torchforge-6e77f0b): a vLLM taken
from another project's index with `--index-url` (its build is not PyPI's release), a `[tool.uv.sources]` row sending
torch to a uv index that is not `explicit`, and the app config whose `policy.engine_args` makes the Generator start
vLLM."""

from __future__ import annotations

import tomllib
from pathlib import Path

from rlcompat.api import fix_paths, scan_paths
from rlcompat.knowledge.targets import resolve_target

CU = "https://download.pytorch.org/whl/"
FORGE_INDEX = "https://download.pytorch.org/whl/preview/forge"


def _found(path: Path, target: str, code: str) -> dict[int, str]:
    return {f.location.line: f.message for f in scan_paths([str(path)], resolve_target(target)).findings
            if f.code == code}


def test_a_vllm_from_a_foreign_index_brings_no_pypi_torch(tmp_path):
    script = tmp_path / "install.sh"
    script.write_text("#!/bin/bash\n"
                      f"pip install torch==2.9.0 --index-url {CU}cu126\n"
                      f"python -m pip install vllm --no-cache-dir --index-url {FORGE_INDEX}\n"
                      "pip install vllm\n"
                      "pip install vllm --index-url https://mirrors.aliyun.com/pypi/simple\n")
    found = _found(script, "sm61", "RLC601")
    # line 3: forge's index serves its own vLLM build; PyPI's release metadata says nothing of it.
    # Lines 4 and 5 (PyPI, a PyPI mirror) take PyPI's newest vllm, which pins a torch without sm_61 kernels.
    assert sorted(found) == [4, 5], found
    assert "installs torch" in found[4]


def test_a_torch_route_to_a_plain_uv_index_is_reported_on_the_route(tmp_path):
    path = tmp_path / "pyproject.toml"
    text = ('[project]\nname = "x"\nversion = "0"\ndependencies = [\n    "torch==2.9.0",\n]\n\n'
            f'[[tool.uv.index]]\nname = "pytorch-cu128"\nurl  = "{CU}cu128"\n\n'
            f'[[tool.uv.index]]\nname = "vllm-forge"\nurl = "{FORGE_INDEX}"\n\n'
            '[tool.uv.sources]\ntorch = { index = "pytorch-cu128" }\nvllm = { index = "vllm-forge" }\n')
    path.write_text(text)
    found = _found(path, "sm61", "RLC601")
    assert sorted(found) == [5, 17], found  # the pin (pip: PyPI's cu128 build) and the route row, not line 10's URL
    assert "[tool.uv.sources] sends torch to it" in found[17]
    assert not _found(path, "sm75", "RLC601")
    fix_paths([str(path)], resolve_target("sm61"))
    fixed = path.read_text()
    tomllib.loads(fixed)
    assert f'url  = "{CU}cu126"' in fixed and FORGE_INDEX in fixed


def test_a_grpo_config_starts_vllm_below_its_minimum(tmp_path):
    path = tmp_path / "qwen3_1_7b.yaml"
    path.write_text("model: Qwen/Qwen3-1.7B\npolicy:\n  engine_args:\n    model: ${model}\n    enforce_eager: false\n"
                    "trainer:\n  model:\n    name: qwen3\n    hf_assets_path: hf://${model}\n  training:\n"
                    "    dtype: float32\n")
    found = _found(path, "sm61", "RLC407")
    assert list(found) == [3] and "`policy.engine_args` makes torchforge start vLLM" in found[3]
    assert not _found(path, "sm75", "RLC407")
    other = tmp_path / "serve.yaml"
    other.write_text("policy:\n  engine_args:\n    model: m\n")  # no torchforge words: another tool's file
    assert not _found(other, "sm61", "RLC407")
