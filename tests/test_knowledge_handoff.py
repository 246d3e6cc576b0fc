"""Framework knowledge reaches the front ends as data handed by the engine: switches, verl's config shape and entry
triggers are rows in rlcompat/knowledge/data/, and the matrix's families come from the code registry."""

from __future__ import annotations

import dataclasses

from rlcompat.knowledge import frameworks, verl_config
from rlcompat.analysis import confighelpers
from rlcompat.pipeline.scanned_file import ScannedFile
from rlcompat.knowledge import files
from rlcompat.knowledge.identity import pinned
from tests.verl_trees import verl_091_knowledge
from rlcompat.lang import shell
from rlcompat.lang import yaml as yaml_fe
from rlcompat.lang.settings import ConfigView
from tests.shell_views import CatchingViews
from rlcompat.report import matrix as matrix_report
from rlcompat.rules.codes import CODES, ENVIRONMENT_FAMILY, REPORT_NAMES


def _views(module, text: str, path: str, knowledge) -> list[ConfigView]:
    captured: list[ConfigView] = []
    module.check(module.parse(text), text, path, [], None, scanned=CatchingViews(knowledge, captured))
    return captured


def _flag(text: str, name: str, knowledge=None):
    [view] = _views(shell, text, "run.sh", knowledge or verl_091_knowledge("run.sh"))
    return next(s for s in view.settings if s.key == name)


def test_a_switch_is_a_data_row(monkeypatch):
    command = "python train.py --my_new_switch extra_word\n"
    taken = _flag(command, "my_new_switch")
    assert (taken.value, taken.switch) == ("extra_word", False)
    vocabulary = frameworks.vocabulary()
    grown = dataclasses.replace(vocabulary, switches=vocabulary.switches | {"my_new_switch"})
    monkeypatch.setattr(frameworks, "vocabulary", lambda: grown)
    bare = _flag(command, "my_new_switch")
    assert (bare.value, bare.switch) == ("", True)
    assert _flag("python train.py --my_new_switch true\n", "my_new_switch").value == "true"


def test_known_switches_come_from_the_vocabulary_file():
    assert not hasattr(shell, "SWITCHES")
    assert _flag("python train.py --adam_offload extra_word\n", "adam_offload").switch
    assert "adam_offload" in frameworks.vocabulary().switches


def test_every_switch_row_has_a_proof():
    rows = files.load("frameworks", "vocabulary.toml")["switch"]
    assert all(r.get("proof", "").count(":") >= 2 and "unproven" not in r for r in rows)
    assert len({r["flag"] for r in rows}) == len(rows)


def test_yaml_reads_verl_top_keys_from_what_it_is_handed():
    class NoVerl(ScannedFile):
        config_top_keys = frozenset()

    text = "trainer:\n  n_gpus_per_node: 1\n"
    [known] = _views(yaml_fe, text, "c.yaml", verl_091_knowledge("c.yaml"))
    [unknown] = _views(yaml_fe, text, "c.yaml", NoVerl("c.yaml", pinned({"verl": "0.9.1"})))
    assert known.is_verl and not unknown.is_verl


def test_shell_entry_points_come_from_what_it_is_handed():
    class OtherEntry(ScannedFile):
        def runs_entry_module(self, module: str) -> bool:
            return module == "mytool.train"

    text = "python3 -m mytool.train a.b=1\n"
    [plain] = _views(shell, text, "run.sh", verl_091_knowledge("run.sh"))
    [entry] = _views(shell, text, "run.sh", OtherEntry("run.sh", pinned({"verl": "0.9.1"})))
    assert not plain.is_verl and entry.is_verl


def test_entry_triggers_are_the_verl_rule_sets_triggers():
    union = {t for v in verl_config.available_versions() for t in verl_config.load_version(v).entry_triggers}
    assert set(confighelpers.ENTRY_TRIGGERS) == union
    assert all(confighelpers.ENTRY_TRIGGERS)
    newest = verl_config.load_version(verl_config.available_versions()[-1])
    # each trigger finds at least one entry module or prefix the newest rule set knows
    assert all(any(t in m for m in newest.entry_modules + newest.entry_prefixes) for t in confighelpers.ENTRY_TRIGGERS)


def test_matrix_families_come_from_the_code_registry():
    file_families = {location.split(".")[0] for location in CODES.values()} - {ENVIRONMENT_FAMILY}
    assert set(REPORT_NAMES) == file_families
    assert matrix_report.FAMILIES == matrix_report.report_families(CODES, REPORT_NAMES)
    grown = dict(CODES, RLC701="quantization.some_rule")
    families = matrix_report.report_families(grown, dict(REPORT_NAMES, quantization="quantization"))
    assert families[-1] == ("RLC7", "quantization")
    assert ("RLC1", "dtype") in families


def _keys(text: str, knowledge=None) -> list[str]:
    [view] = _views(shell, text, "run.sh", knowledge or verl_091_knowledge("run.sh"))
    return [s.key for s in view.settings]


def test_a_program_taking_key_value_overrides_is_a_data_row(monkeypatch):
    assert not hasattr(shell, "OVERRIDE_CLIS")
    assert _keys("tune run full_finetune_single_device --config c.yaml model.dtype=bf16\n") == ["model.dtype", "config"]
    command = "mytrainer train c.yaml model.dtype=bf16\n"
    assert _keys(command) == []
    vocabulary = frameworks.vocabulary()
    grown = dataclasses.replace(vocabulary, override_clis=vocabulary.override_clis | {"mytrainer"})
    monkeypatch.setattr(frameworks, "vocabulary", lambda: grown)
    assert _keys(command) == ["model.dtype"]
    assert _keys("/opt/bin/mytrainer train c.yaml model.dtype=bf16\n") == ["model.dtype"]


def test_every_override_program_row_has_a_proof():
    rows = files.load("frameworks", "vocabulary.toml")["override_cli"]
    assert all(r.get("proof", "").count(":") >= 2 and "unproven" not in r for r in rows)
    assert {r["program"] for r in rows} == frameworks.vocabulary().override_clis
