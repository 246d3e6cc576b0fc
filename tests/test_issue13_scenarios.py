"""The user-side scenarios of issue 13, scanned end to end as files: a training script with an argparse dtype default
and `GRPOConfig(use_vllm=True)`, a launch line passing `--ds.param_dtype $MODEL_DTYPE`, OpenRLHF's
`read -r -d '' training_commands <<EOF ... EOF` + `deepspeed --module $training_commands`, and `trl vllm-serve`."""

from __future__ import annotations

from rlcompat.api import fix_paths, scan_paths
from rlcompat.knowledge.targets import resolve_target

TRAIN = '''import argparse

from trl import GRPOConfig

parser = argparse.ArgumentParser()
parser.add_argument("--dtype", default="bfloat16")
args = parser.parse_args()
cfg = GRPOConfig(output_dir="out", use_vllm=True)
'''

LAUNCH = "MODEL_DTYPE=bf16\ndeepspeed --module openrlhf.cli.train_sft --ds.param_dtype $MODEL_DTYPE --max_len 2048\n"

OPENRLHF_SFT = """set -x

read -r -d '' training_commands <<EOF
openrlhf.cli.train_sft \\
   --max_len 2048 \\
   --pretrain Qwen/Qwen2.5-7B \\
   --ds.param_dtype bf16 \\
   --ds.attn_implementation flash_attention_2 \\
   --ds.packing_samples
EOF

if [[ ${1} != "slurm" ]]; then
    deepspeed --module $training_commands
fi
"""


def _found(tmp_path, name: str, text: str, target: str) -> list[tuple[str, int]]:
    path = tmp_path / name
    path.write_text(text)
    return sorted((f.code, f.location.line) for f in scan_paths([str(path)], resolve_target(target)).findings)


def test_user_script_dtype_default_bf16_default_and_vllm_are_three_findings(tmp_path):
    assert _found(tmp_path, "train.py", TRAIN, "sm61") == [("RLC107", 6), ("RLC111", 8), ("RLC404", 8)]
    fixed = tmp_path / "train.py"
    fix_paths([str(fixed)], resolve_target("sm61"))
    assert 'default="float32"' in fixed.read_text() and "use_vllm=False, bf16=False" in fixed.read_text()
    # vLLM runs on sm75: the two bf16 findings stay.
    assert _found(tmp_path, "train.py", TRAIN, "sm75") == [("RLC107", 6), ("RLC111", 8)]


def test_a_dtype_passed_through_a_variable_is_reported_at_the_flag(tmp_path):
    assert ("RLC118", 2) in _found(tmp_path, "run.sh", LAUNCH, "sm61")


def test_openrlhf_heredoc_training_commands_are_read(tmp_path):
    found = _found(tmp_path, "train_sft.sh", OPENRLHF_SFT, "sm61")
    assert {("RLC118", 7), ("RLC207", 8), ("RLC207", 9)} <= set(found)


def test_trl_vllm_serve_is_a_vllm_server(tmp_path):
    text = "trl vllm-serve --model Qwen/Qwen2.5-7B --tensor_parallel_size 1\n"
    assert _found(tmp_path, "serve.sh", text, "sm61") == [("RLC407", 1)]
    assert _found(tmp_path, "serve.sh", text, "sm75") == []
