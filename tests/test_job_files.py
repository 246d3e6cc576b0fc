"""Launchers that are not `*.sh` (issue 28): Slurm job files, extension-less shell scripts and Makefile recipes are
read by a directory walk, and the commands wrapped in them (srun, sbatch --wrap, nohup, `&`, `$(...)`, a final
`\\`) are checked at their own file:line. `scan .` ends with what it did not read."""

from __future__ import annotations

import pytest

from rlcompat.api import scan_paths
from rlcompat.knowledge.targets import resolve_target
from tests.test_cli import invoke

SM61, SM75 = resolve_target("sm61"), resolve_target("sm75")


def _hits(tmp_path, target=SM75) -> list[tuple[str, int, str]]:
    report = scan_paths([str(tmp_path)], target)
    assert not report.errors, report.errors
    return sorted((f.path.rsplit("/", 1)[-1], f.location.line, f.code) for f in report.findings)


def test_slurm_job_with_sbatch_directives(tmp_path):
    (tmp_path / "grpo.slurm").write_text(
        "#!/bin/bash\n#SBATCH --gres=gpu:8\n#SBATCH --nodes=1\n\n"
        "CUDA_VISIBLE_DEVICES=0 trl vllm-serve --model Qwen/Qwen2.5-7B &\n"
        "accelerate launch --num_processes 7 grpo.py --bf16 true\n")
    assert _hits(tmp_path, SM61) == [("grpo.slurm", 5, "RLC407"), ("grpo.slurm", 6, "RLC107")]


def test_sglang_server_in_a_job_is_found_where_sglang_does_not_run(tmp_path):
    (tmp_path / "serve.sbatch").write_text(
        "#!/bin/bash\n#SBATCH --gres=gpu:1\nsrun python -m sglang.launch_server --model-path m --port 30000 &\n"
        "sleep 60\n")
    assert _hits(tmp_path, SM61) == [("serve.sbatch", 3, "RLC417")]
    assert _hits(tmp_path, SM75) == []


@pytest.mark.parametrize("name", ["job.sbatch", "train.job"])
def test_other_job_file_extensions(tmp_path, name):
    (tmp_path / name).write_text("#!/bin/bash\nvllm serve m --dtype bfloat16\n")
    assert (name, 2, "RLC107") in _hits(tmp_path)


@pytest.mark.parametrize("head", ["#!/bin/bash\n", "#!/usr/bin/env bash\n", "#!/bin/sh -l\n", "#SBATCH -N 1\n",
                                  "#PBS -l select=1\n"])
def test_file_without_extension_read_by_its_first_line(tmp_path, head):
    (tmp_path / "launch").write_text(head + "vllm serve m --dtype bfloat16\n")
    assert _hits(tmp_path) == [("launch", 2, "RLC107")]


def test_file_without_extension_and_without_shell_head_is_not_read(tmp_path):
    (tmp_path / "launch").write_text("#!/usr/bin/env python\nvllm serve m --dtype bfloat16\n")
    (tmp_path / "NOTES").write_text("vllm serve m --dtype bfloat16\n")
    (tmp_path / "blob").write_bytes(b"#!/bin/bash\n\0\0\0vllm serve m --dtype bfloat16\n")
    assert _hits(tmp_path) == []


def test_makefile_recipe_with_make_variables(tmp_path):
    (tmp_path / "Makefile").write_text(
        "MODEL ?= Qwen/Qwen2.5-7B\nDTYPE := bfloat16  # what the checkpoint holds\n\n"
        ".PHONY: serve\nserve:\n\t@echo $(MODEL)\n\t-vllm serve $(MODEL) --dtype $(DTYPE) &\n"
        "train: data\n\taccelerate launch train.py \\\n\t\t--bf16 true\n\techo $$HOME $(wildcard *.py)\n")
    report = scan_paths([str(tmp_path)], SM75)
    assert not report.errors
    found = sorted((f.location.line, f.location.column, f.code) for f in report.findings)
    # The value comes from the definition: the finding points at the recipe's flag, the fix at `DTYPE := ...`.
    assert found == [(7, 23, "RLC107"), (10, 3, "RLC107")]
    dtype = next(f for f in report.findings if f.location.line == 7)
    assert "line 2" in dtype.message


def test_makefile_fix_rewrites_the_definition_and_the_recipe(tmp_path):
    make = tmp_path / "rules.mk"
    make.write_text("DTYPE = bfloat16\nserve:\n\tvllm serve m --dtype $(DTYPE)\ntrain:\n\ttorchrun t.py --bf16 true\n")
    code, _, _ = invoke("fix", "--unsafe-fixes", "--target", "sm75", "--no-cache", ".", cwd=tmp_path)
    assert code == 0
    assert make.read_text() == "DTYPE = float16\nserve:\n\tvllm serve m --dtype $(DTYPE)\ntrain:\n\ttorchrun t.py --bf16 false\n"


def test_gnumakefile_recipe_found_on_sm61(tmp_path):
    (tmp_path / "GNUmakefile").write_text("serve:\n\ttrl vllm-serve --model m\n")
    assert _hits(tmp_path, SM61) == [("GNUmakefile", 2, "RLC407")]


def test_makefile_unterminated_quote_is_located_in_the_makefile(tmp_path):
    (tmp_path / "Makefile").write_text("X = 1\n\nrun:\n\tvllm serve 'oops\n")
    report = scan_paths([str(tmp_path)], SM75)
    assert len(report.errors) == 1 and report.errors[0].line == 4


@pytest.mark.parametrize("line", [
    'sbatch --partition=gpu --wrap "accelerate launch train.py --bf16 true"',
    "sbatch --wrap='accelerate launch train.py --bf16 true'",
    'srun --nodes=1 --ntasks=1 accelerate launch train.py --bf16 true',
    'srun --overlap bash -c "accelerate launch train.py --bf16 true" &',
    'nohup accelerate launch train.py --bf16 true > train.log 2>&1 &',
    'OUT=$(accelerate launch train.py --bf16 true)',
    'echo "started $(accelerate launch train.py --bf16 true)"',
    'mpirun -np 2 python train.py --bf16 true',
])
def test_wrapped_commands_are_checked_where_written(tmp_path, line):
    (tmp_path / "run.sh").write_text(f"echo start\n{line}\n")
    assert ("run.sh", 2, "RLC107") in _hits(tmp_path)


def test_sbatch_wrap_fix_lands_inside_the_quotes(tmp_path):
    script = tmp_path / "submit.sh"
    script.write_text('sbatch --wrap "accelerate launch train.py --bf16 true"\n')
    invoke("fix", "--target", "sm75", "--no-cache", ".", cwd=tmp_path)
    assert script.read_text() == 'sbatch --wrap "accelerate launch train.py --bf16 false"\n'


@pytest.mark.parametrize("ending", ["\\", "\\\n", "\\\n\n  \n"])
def test_script_ending_in_a_backslash_is_read(tmp_path, ending):
    (tmp_path / "run.sh").write_text("vllm serve m \\\n    --dtype bfloat16 " + ending)
    report = scan_paths([str(tmp_path)], SM75)
    assert [(f.location.line, f.code) for f in report.findings] == [(2, "RLC107")]


def test_escaped_backslash_at_the_end_is_not_a_continuation(tmp_path):
    (tmp_path / "run.sh").write_text("vllm serve m --dtype bfloat16 x\\\\\n")
    assert [(f.location.line, f.code) for f in scan_paths([str(tmp_path)], SM75).findings] == [(1, "RLC107")]


def test_scan_of_a_tree_ends_with_what_it_did_not_read(tmp_path):
    (tmp_path / "run.sh").write_text("echo hi\n")
    (tmp_path / "README.md").write_text("# x\n")
    (tmp_path / "data.csv").write_text("a,b\n")
    (tmp_path / "more.csv").write_text("a,b\n")
    (tmp_path / "LICENSE").write_text("MIT\n")
    (tmp_path / "config.json").write_text('{"torch_dtype": "bfloat16"}')
    code, out, _ = invoke("scan", ".", "--target", "sm75", "--no-cache", cwd=tmp_path)
    lines = out.strip().splitlines()
    assert lines[-2] == ("Not read: 1 file (a JSON file tools or checkpoints write, not a run's config: config.json); "
                         "4 files of types no front end reads (2 .csv, 1 .md, 1 without an extension).")
    assert lines[-1] == "All clear: no findings in 1 file for sm75 (7.5, Turing)."
    code, out, _ = invoke("scan", ".", "--target", "sm75", "--no-cache", "--verbose", cwd=tmp_path)
    assert "  LICENSE: no front end reads this file type" in out.splitlines()
    assert "  config.json: a JSON file tools or checkpoints write, not a run's config" in out.splitlines()


@pytest.mark.parametrize("text, line", [
    ("OUT=$(cd /work && accelerate launch train.py --bf16 true)\n", 1),
    ("PID=$(nohup accelerate launch train.py --bf16 true > log 2>&1 & echo $!)\n", 1),
    ("X=`cd /work && accelerate launch train.py --bf16 true`\n", 1),
    ('echo "$(echo \'a)b\' && accelerate launch train.py --bf16 true)"\n', 1),
    ("R=$(accelerate launch train.py \\\n    --bf16 true)\n", 2),
    ("OUT=$(\n  accelerate launch train.py --bf16 true\n)\n", 2),
])
def test_commands_inside_command_substitutions(tmp_path, text, line):
    """bashlex reads only a single command inside `$(...)` and backquotes, and drops a continuation there from its
    positions: a list (`&&`, `&`) is read as a script of its own, and the flag is found on its own line."""
    (tmp_path / "run.sh").write_text(text)
    assert _hits(tmp_path) == [("run.sh", line, "RLC107")]


def test_fix_inside_a_command_substitution_with_a_list(tmp_path):
    script = tmp_path / "run.sh"
    script.write_text("OUT=$(cd /work && accelerate launch train.py \\\n  --bf16 true)\n")
    invoke("fix", "--target", "sm75", "--no-cache", ".", cwd=tmp_path)
    assert script.read_text() == "OUT=$(cd /work && accelerate launch train.py \\\n  --bf16 false)\n"


def test_an_sglang_servers_bf16_dtype_is_not_reported_where_sglang_serves_in_float16(tmp_path):
    # SGLang's model runner serves in float16 on any card below 8.0 whatever --dtype says (sglang 0.5.4
    # model_runner.py:825-832): nothing to change on a T4; a P40 gets the server itself (RLC417) and, as before, the
    # flag.
    (tmp_path / "serve.sh").write_text("python -m sglang.launch_server --model-path m --dtype bfloat16\n")
    assert _hits(tmp_path, SM75) == []
    assert ("serve.sh", 1, "RLC417") in _hits(tmp_path, SM61)
