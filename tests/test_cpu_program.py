"""A dtype flag's default in a program whose models stay on the CPU is no GPU hazard (rlcompat/analysis/cpu_program.py):
OpenRLHF's LoRA merge (openrlhf/cli/lora_combiner.py, 0.11.2) declares `--ds.param_dtype` with default "bf16" and
loads with `from_pretrained` and no device; the same flag in a program that moves the model to a GPU, or hands its
arguments to code the file does not show, is reported as before."""

from __future__ import annotations

from rlcompat.analysis.cpu_program import runs_on_cpu_only
from rlcompat.api import scan_paths
from rlcompat.knowledge import identity
from rlcompat.knowledge.targets import resolve_target

SM75 = resolve_target("sm75")

MERGE = '''import argparse

from peft import PeftModel
from transformers import AutoModelForCausalLM

from openrlhf.utils.utils import convert_to_torch_dtype


def apply_lora(model_path, lora_path, output_path, param_dtype):
    dtype = convert_to_torch_dtype(param_dtype)
    base = AutoModelForCausalLM.from_pretrained(model_path, torch_dtype=dtype, low_cpu_mem_usage=True)
    lora_model = PeftModel.from_pretrained(base, lora_path, torch_dtype=dtype)
    lora_model.merge_and_unload()
    base.save_pretrained(output_path)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--model_path", type=str, required=True)
    parser.add_argument("--lora_path", type=str, required=True)
    parser.add_argument("--output_path", type=str, required=True)
    parser.add_argument("--ds.param_dtype", type=str, default="bf16", choices=["bf16", "fp16"])
    args = parser.parse_args()
    apply_lora(args.model_path, args.lora_path, args.output_path, getattr(args, "ds.param_dtype"))
'''


def _codes(tmp_path, text):
    cli = tmp_path / "openrlhf" / "cli"
    cli.mkdir(parents=True)
    (cli / "lora_combiner.py").write_text(text)
    (tmp_path / "requirements.txt").write_text("openrlhf==0.11.2\n")
    (tmp_path / ".git").mkdir()
    identity.clear_caches()
    report = scan_paths([str(cli / "lora_combiner.py")], SM75)
    assert not report.errors, report.errors
    return [(f.location.line, f.code) for f in report.findings]


def test_merge_on_the_cpu_is_not_reported(tmp_path):
    assert runs_on_cpu_only(MERGE)
    assert _codes(tmp_path, MERGE) == []


def test_the_same_flag_is_reported_once_the_model_goes_to_the_gpu(tmp_path):
    text = MERGE.replace("low_cpu_mem_usage=True)", "low_cpu_mem_usage=True).cuda()")
    assert not runs_on_cpu_only(text)
    assert _codes(tmp_path, text) == [(22, "RLC118")]


def test_a_program_handing_its_arguments_to_other_code_is_not_a_cpu_program():
    text = MERGE.replace("    apply_lora(args.model_path", "    train(args)\n    apply_lora(args.model_path")
    text = text.replace("from peft import PeftModel", "from peft import PeftModel\nfrom mylib import train")
    assert not runs_on_cpu_only(text)


def test_a_module_that_is_no_program_is_not_a_cpu_program():
    assert not runs_on_cpu_only(MERGE.split('if __name__ == "__main__":')[0])


def test_a_flag_no_knowledge_names_is_not_matched_by_name_in_a_cpu_program(tmp_path):
    """OpenRLHF 0.9.9's merge (a dev corpus) spells the flag `--param_dtype`, which no knowledge row names: the
    name-only net (RLC003) leaves it alone in a CPU program too, and still reports it once the model goes to a GPU."""
    text = MERGE.replace("--ds.param_dtype", "--param_dtype").replace('getattr(args, "ds.param_dtype")',
                                                                       "args.param_dtype")
    cli = tmp_path / "merge"
    cli.mkdir()

    def codes(source):
        (cli / "lora_combiner.py").write_text(source)
        identity.clear_caches()
        return [(f.location.line, f.code) for f in scan_paths([str(cli / "lora_combiner.py")], SM75).findings]

    assert codes(text) == []
    assert codes(text.replace("low_cpu_mem_usage=True)", "low_cpu_mem_usage=True).cuda()")) == [(22, "RLC003")]
