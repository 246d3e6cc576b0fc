"""Framework knowledge applied to settings: one checker for every rule backed by rlcompat/knowledge/data/frameworks/ data.

For each setting of a view, the framework keys whose names match it (rlcompat.knowledge.frameworks) decide whether
its value is a hazard on the target (rlcompat/knowledge/data/frameworks/kinds.toml) and what to write instead (the key's spellings,
chosen by its precision role: rlcompat.knowledge.precision). For a command of a known framework version, hazardous
defaults of flags the command does not pass are reported at the command, with the flag to add.

Its parts: analysis/knowledge_keys.py (which key and release a setting stands for, and whether its value is a
hazard), analysis/knowledge_report.py (the finding's words and fix), analysis/knowledge_defaults.py (what a run
leaves out).
"""

from __future__ import annotations

from rlcompat.analysis import cpu_program, entry_switches, guarded_reads, vllm_backend_request
from rlcompat.analysis.confighelpers import follows_bf16_switch, is_bf16
from rlcompat.analysis.knowledge_defaults import command_defaults, omitted_defaults, parameter_defaults, unset_parents
from rlcompat.analysis.knowledge_keys import RESOLVED_ORIGINS, hazard_of, matching_key, resolved_key, selected
from rlcompat.analysis.knowledge_report import report, report_resolved
from rlcompat.knowledge import frameworks as fk
from rlcompat.lang.settings import ConfigContext, ConfigView, Setting


def check(view: ConfigView, ctx: ConfigContext, kinds: frozenset[str]) -> None:
    target = ctx.target
    hazards = []
    cpu_only = view.kind == "python" and cpu_program.runs_on_cpu_only(ctx.source_text)
    candidates = fk.candidates
    for setting in view.settings:
        if cpu_only and setting.origin == "argparse-default":
            continue  # a flag of a program whose models stay on the CPU (analysis/cpu_program.py)
        if not candidates(setting.key):
            continue  # no framework key may describe it (what `resolved_key` and `matching_key` look among): a big
            # table's thousands of keyword arguments cost one look-up each
        value = setting.value
        key = resolved_key(view, ctx, setting, kinds) if value is None else None
        if key is not None:
            match, value = (key, True), key.default
        else:
            match = matching_key(view, ctx, setting, kinds)
        if match is None:
            continue
        key, version_known = match
        if not selected(view, key):
            continue  # another setting of the run leaves this key unread (a strategy that is not selected)
        found = hazard_of(key, value, target, bare=setting.switch)
        if found is not None and any(hazard_of(key, v, target) is None for v in getattr(setting, "alternatives", ())):
            found = None  # a default computed as one of several values (lang/pysettings.py): a hazard only if each is
        if found is not None and is_bf16(value) and follows_bf16_switch(setting):
            continue  # `elif self.bf16: self.mixed_precision = "bf16"` passes a switch on: reported at the switch
        if found is not None and entry_switches.forced_in_no_launch(view, ctx, setting):
            continue  # forced only under a switch the parser leaves off and no launch file of the tree passes
        if found is not None and guarded_reads.read_only_while_off(view, ctx, setting):
            continue  # the tree's code takes it only while a sibling this file sets otherwise holds (analysis/guarded_reads.py)
        if found is not None and vllm_backend_request.replaced(view, ctx, key, value):
            continue  # a backend the tree's vLLM swaps for one that runs on this card (the request changes nothing)
        if found is not None and not _feature_off_by_default(view, setting, key):
            hazards.append((setting, key, version_known, value, *found))
    # A switch the code turns on that only matters through a value the same code then forces (kinds.toml `forces`:
    # OpenRLHF turns packing on for ring attention, then forces flash_attention_2 for packing): one hazard, reported
    # where the forced value is written.
    forced = {key.kind for setting, key, *_ in hazards if setting.origin == "python-forced"}
    for setting, key, version_known, value, hazard, kind in hazards:
        if setting.origin == "python-forced" and kind.forces in forced:
            continue
        if setting.origin in RESOLVED_ORIGINS:
            report_resolved(ctx, setting, key, value, version_known, hazard, kind)
        else:
            report(view, ctx, setting, key, version_known, hazard, kind)
    if view.kind == "command":
        command_defaults(view, ctx, kinds)
    else:
        omitted_defaults(view, ctx, kinds)
    if view.kind == "python":
        unset_parents(view, ctx, kinds)
        parameter_defaults(view, ctx, kinds)


OFF_VALUES = ("", "none", "null", "0", "false")


def _feature_off_by_default(view: ConfigView, setting: Setting, key: fk.FrameworkKey) -> bool:
    """An argparse default of a key whose default matters only with another flag (`requires`: vLLM's eager mode only
    with `--vllm.num_engines`), in a parser whose own defaults for those flags leave the feature off: a run gets the
    feature only by passing one of them, and such a command is judged where it is given (`_defaults`)."""
    if setting.origin != "argparse-default" or not key.requires:
        return False
    required = [s for s in view.settings if s.origin == "argparse-default" and fk.normalise(s.key) in key.requires]
    return bool(required) and all((s.value or "").strip().lower() in OFF_VALUES for s in required)


class DataExamples:
    """A rule's `bad`/`good` examples: the ones written in the rule plus the rows of the framework keys of its
    kinds (`bad = [{text, fixed, path, target, unsafe}]` in rlcompat/knowledge/data/frameworks/*/*.toml), read on first use."""

    def __init__(self, which: str, written: tuple = ()) -> None:
        self.which, self.written = which, written
        self._cache: dict[type, tuple] = {}

    def __get__(self, obj, cls):
        if cls not in self._cache:
            from rlcompat.rule import Bad, Good

            rows = []
            for fw in fk.frameworks():
                for key in fw.keys:
                    if key.kind not in cls.kinds:
                        continue
                    for which, row in key.examples:
                        if which != self.which:
                            continue
                        extra = {"target": row.get("target", "sm61"), "path": row.get("path", "config.yaml"),
                                 "frameworks": dict(row.get("frameworks", {}))}  # the releases the example runs
                        if which == "bad":
                            rows.append(Bad(row["text"], fixed=row.get("fixed"), unsafe=row.get("unsafe", False), **extra))
                        else:
                            rows.append(Good(row["text"], **extra))
            self._cache[cls] = tuple(self.written) + tuple(rows)
        return self._cache[cls]
