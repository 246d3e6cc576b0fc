"""A config file that leaves out a key whose framework default is a hazard (rlcompat/knowledge/data/frameworks: `omitted`), e.g. a
torchtitan train config without `[training] mixed_precision_param` (bfloat16): reported at the table, the key added
to it in the file's own format."""

from __future__ import annotations

import pytest

from rlcompat.knowledge import frameworks as fk
from rlcompat.api import scan_source
from rlcompat.pipeline.scanned_file import ScannedFile
from rlcompat.knowledge.identity import pinned
from rlcompat.lang import tomlfile
from rlcompat.lang.settings import ConfigView, Setting, Span
from rlcompat.rules import file_rules
from rlcompat.knowledge.targets import resolve_target

JOB = '[job]\ndump_folder = "./outputs"\n\n'


def _rlc118(text: str, target: str = "sm61"):
    return [f for f in scan_source(text, resolve_target(target), "train.toml", "toml") if f.code == "RLC118"]


def _fixed(text: str, finding) -> str:
    for edit in sorted(finding.fix.edits, reverse=True):
        text = text[:edit.start] + edit.content + text[edit.end:]
    return text


def test_the_key_goes_after_the_last_statement_of_its_table_even_a_multi_line_array():
    text = JOB + '[training]\nsteps = 10\ndatasets = [\n  "c4",\n  "c4_test",\n]  # both\n\n# next\n[compile]\nenable = false\n'
    (found,) = _rlc118(text)
    assert (found.location.line, found.source_line) == (4, "[training]")
    assert "[training] does not set mixed_precision_param, so torchtitan (0.1.0 to 0.2.2" in found.message
    assert "uses the default of training.mixed_precision_param, bfloat16 (torchtitan/config/job_config.py:282)" in found.message
    fixed = _fixed(text, found)
    assert fixed == text.replace(']  # both\n', ']  # both\nmixed_precision_param = "float32"\n')
    tomlfile.parse(fixed)
    assert not _rlc118(fixed)


def test_a_table_written_with_dotted_keys_is_reported_without_a_fix():
    text = 'training.steps = 10\n' + JOB  # a [training] header would define the table a second time
    (found,) = _rlc118(text)
    assert found.location.line == 1 and found.fix is None
    assert found.message.startswith("[training] does not set mixed_precision_param")


def test_a_key_set_by_a_dotted_key_or_an_inline_table_is_not_left_out():
    assert not _rlc118(JOB + 'training.mixed_precision_param = "float32"\n')
    assert not _rlc118(JOB + 'training = { mixed_precision_param = "float32" }\n')


def test_sm75_gets_float32_because_torchtitan_takes_no_fp16_for_this_key():
    (found,) = _rlc118(JOB + "[training]\nsteps = 10\n", "sm75")
    assert found.fix is not None and found.fix.safety.value == "safe"
    assert "torchtitan takes no fp16 here; fp32 trains, slower than fp16 would" in found.message


def test_only_a_torchtitan_train_config_is_judged():
    # no [job] table: not a torchtitan train config; [job] without a torchtitan word: another tool's file
    assert not _rlc118("[training]\nsteps = 10\ndump_folder = 'x'\n")
    assert not _rlc118('[job]\nname = "nightly"\n[training]\nsteps = 10\n')


def test_a_torchtitan_command_gets_no_default_claim_for_a_key_its_config_file_carries():
    # The command names the TOML file that may set the key; the file is where the default is judged.
    text = "torchrun --nproc_per_node 1 -m torchtitan.train --job.config_file llama3_8b.toml\n"

    view = ConfigView("command", [], anchor=Span(0, 8), command_words=tuple(text.split()))
    rules = [r(resolve_target("sm61")) for r in file_rules() if r.code == "RLC118"]
    scanned = ScannedFile("run.sh", pinned({"torchtitan": "0.2.2"}), text)
    found = scanned.run_config_rules([view], text, "run.sh", rules, resolve_target("sm61"))
    assert not [f for f in found if "mixed_precision_param" in f.message]


def test_omitted_needs_a_default_and_its_release_range():
    row = {"names": ["training.x"], "kind": "dtype", "role": "compute", "proof": "x.py:1",
           "omitted": {"format": "toml", "tables": ["job"], "proof": "x.py:2"}}
    with pytest.raises(ValueError, match=r"rlcompat/knowledge/data/frameworks/x/1\.0\.toml: \['training\.x'\]: a key with `omitted` "
                                         r"needs omitted\.releases, default"):
        fk._framework({"framework": "x", "label": "X", "version": "1.0", "key": [row]}, "1.0.toml")


def test_a_dtype_key_without_the_policy_spelling_takes_fp32_where_it_has_one():
    # torchtune's dtype takes fp32 but the policy's fp16 is not offered for it: fp32 (safe) on sm75
    text = "model:\n  _component_: torchtune.models.llama3_2.llama3_2_1b\ndtype: bf16\n"
    (found,) = [f for f in scan_source(text, resolve_target("sm75"), "1B_full.yaml", "yaml") if f.code == "RLC118"]
    assert [e.content for e in found.fix.edits] == ["fp32"] and found.fix.safety.value == "safe"
