"""RLC123 and rlcompat/knowledge/data/verl_entry_code.toml: a command running verl's FSDP SFT trainer is judged with
what the trainer's own code writes in the release the tree runs, and where that release has no such module (verl
0.8.0 and later), the command is said not to start and judged with the releases that have it."""

from __future__ import annotations

from pathlib import Path

import pytest

from rlcompat.api import scan_source
from rlcompat.knowledge import verl_config, verl_entry_code
from rlcompat.knowledge.targets import resolve_target

CORPUS = Path(__file__).resolve().parents[1] / "bench" / ".corpus" / "coverage"
SFT = "verl.trainer.fsdp_sft_trainer"
JOB = ("#!/bin/bash\n#SBATCH --gres=gpu:2\nsrun torchrun --nnodes=1 --nproc_per_node=2 \\\n    -m " + SFT + " \\\n"
       "    model.partial_pretrain=Qwen/Qwen2.5-0.5B-Instruct \\\n    trainer.total_epochs=1\n")


def _found(text: str, target: str, verl: str, path: str = "job.sh", language: str = "shell"):
    return [f for f in scan_source(text, resolve_target(target), path, language, frameworks={"verl": verl})
            if f.code == "RLC123"]


def test_each_row_is_a_release_whose_knowledge_lists_the_module_and_later_releases_lack_it():
    for module in verl_entry_code.modules():
        having = verl_entry_code.releases_with(module)
        assert having, module
        for release in having:
            row = verl_entry_code.code_of(module, release)
            assert row is not None and row.bf16 and row.flash_attention_2, (module, release)
    assert verl_entry_code.releases_with(SFT) == ("0.4.1", "0.5.0", "0.6.1", "0.7.0")
    assert SFT not in verl_config.load_version("0.9.1").entry_modules


def test_a_release_with_the_module_is_judged_by_its_own_lines():
    (finding,) = _found(JOB, "sm75", "0.4.1")
    assert finding.location.line == 3
    assert "fsdp_sft_trainer.py:224" in finding.message and ":192" in finding.message
    assert "stops at startup" not in finding.message
    (sm61,) = _found(JOB, "sm61", "0.6.1")
    assert "fsdp_sft_trainer.py:285-286" in sm61.message


def test_a_release_without_the_module_says_the_command_cannot_start_and_cites_the_newest_release_with_it():
    (finding,) = _found(JOB, "sm61", "0.9.1")
    assert "has no module verl.trainer.fsdp_sft_trainer" in finding.message
    assert "0.4.1 to 0.7.0" in finding.message and "in verl 0.7.0" in finding.message


def test_cards_with_bf16_and_flash_attention_and_other_entry_modules_are_not_reported():
    assert not _found(JOB, "sm80", "0.9.1")
    assert not _found(JOB.replace(SFT, "verl.trainer.sft_trainer"), "sm75", "0.9.1")
    assert not _found(JOB.replace(SFT, "verl.trainer.main_ppo"), "sm75", "0.4.1")


def test_the_cited_lines_are_the_releases_own():
    # each bf16 / flash_attention_2 cite names a line of that release's sdist that writes it (bench/coverage.py
    # downloads the sdists into bench/.corpus)
    read = 0
    for module in verl_entry_code.modules():
        for release in verl_entry_code.releases_with(module):
            source = CORPUS / f"verl-{release}" / (module.replace(".", "/") + ".py")
            if not source.is_file():
                continue
            lines = source.read_text("utf-8").splitlines()
            read += 1
            row = verl_entry_code.code_of(module, release)
            fa2 = int(row.flash_attention_2.split(":")[1].split(" ")[0])
            assert "flash_attention_2" in lines[fa2 - 1], (release, fa2)
            bf16 = row.bf16.split(":")[1].split(" ")[0].split("-")[-1]
            assert "bfloat16" in lines[int(bf16) - 1], (release, bf16)
    if not read:
        pytest.skip("no verl sdist under bench/.corpus/coverage (run bench/coverage.py once)")
