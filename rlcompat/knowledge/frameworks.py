"""Framework knowledge as data: rlcompat/knowledge/data/frameworks/<framework>/<version>.toml, and the hazard kinds in
rlcompat/knowledge/data/frameworks/kinds.toml. Loaded on first use (a scan that never meets a framework key never reads them).

A `FrameworkKey` is one setting a framework reads: its spellings (a flag without dashes, a dotted config key, an
environment variable), what it selects (`kind`), the precision role of a dtype, its default and whether that is
resolved at run time, and the file:line that proves it. docs/knowledge.md describes the schema.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache

from rlcompat.knowledge import files
from rlcompat.knowledge.versions import release


@dataclass(frozen=True)
class Hazard:
    values: tuple[str, ...]  # lower-cased; ">1" / ">0" match integers above that
    needs: str  # the targets.toml fact the target must have
    why: str
    sources: tuple[str, ...]

    def matches(self, value: str) -> bool:
        low = value.strip().strip("'\"").lower()
        for v in self.values:
            if v.startswith(">") and re.fullmatch(r"\d+", low):
                if int(low) > int(v[1:]):
                    return True
            elif low == v:
                return True
        return False


@dataclass(frozen=True)
class Kind:
    name: str
    fix: str  # "dtype" | "off" | "on" | "value" | "none"
    hazards: tuple[Hazard, ...]
    forces: str = ""  # the kind of the value this switch makes the framework's code force (kinds.toml)


@dataclass(frozen=True)
class Omitted:
    """Which config files of a framework would carry a key, so that leaving it out there selects its default: files
    of one `format` (the front end's view kind: "toml", "yaml") holding every table (TOML) or mapping (YAML, a dotted
    path) in `tables`. `releases` says in which releases reading that format the default is the same, so the finding
    needs no version of the framework."""
    format: str
    tables: tuple[str, ...]
    releases: str
    proof: str
    # where the finding goes when the key's own table is absent, if the file has this table: prime-rl's RL config
    # names the trainer's model in its shared [model] table, and the trainer's [trainer.model] is added for the fix
    at: str = ""


@dataclass(frozen=True)
class Parent:
    """Where a key's value lives in a framework's dataclass config: a field of the class `holds`, itself the value
    of the Optional field `field` (`"FSDPConfig.mixed_precision"`) that defaults to None. With None the framework's
    code uses the key's `default` (skyrl's FSDP strategy: bf16), and the fields of `holds` are read only where a run
    sets `field`."""
    field: str  # "Class.attr"
    holds: str  # the nested config class
    proof: str  # where the field defaults to None and what the code makes of None

    @property
    def owner(self) -> str:
        return self.field.rpartition(".")[0]

    @property
    def attr(self) -> str:
        return self.field.rpartition(".")[2]


@dataclass(frozen=True)
class Condition:
    """When a framework reads a key at all (`when`): another setting of the same run has one of `values` (or, with
    `other_than`, any value but those), `default` standing for it where the run leaves it unset. `any` holds
    alternatives instead: the condition holds when one of them does (skyrl-train builds a reference model when
    either KL switch is on)."""
    key: str = ""
    values: tuple[str, ...] = ()  # lower-cased
    other_than: tuple[str, ...] = ()  # lower-cased; the condition holds for any value but these
    default: str = ""
    proof: str = ""
    any: tuple["Condition", ...] = ()

    def holds(self, value_of) -> bool:
        """`value_of(key)` -> the value a run gives `key` (None: not set)."""
        if self.any:
            return any(c.holds(value_of) for c in self.any)
        value = value_of(self.key)
        low = (self.default if value is None else value).strip().strip("'\"").lower()
        return low not in self.other_than if self.other_than else low in self.values


@dataclass(frozen=True)
class FrameworkKey:
    framework: "Framework" = field(repr=False, compare=False, hash=False)
    names: tuple[str, ...] = ()
    form: str = "any"  # "flag" | "key" | "env" | "any"
    kind: str = "none"
    role: str = ""  # precision role of a dtype: weights | compute | inference
    spellings: dict = field(default_factory=dict, compare=False, hash=False)  # {"fp32": "float32", "fp16": ...}
    safe: str = ""  # the value that avoids the hazard, for kinds fixed by value
    default: str = ""
    default_at: str = "parse"  # "parse" (a literal default) | "runtime" (resolved when the program runs)
    auto: str = ""  # how the framework resolves an "auto" value to on at start (then "auto" is reported as on)
    live: bool = True
    scoped: bool = False  # only in commands or files of this framework (a generic name like `dtype`)
    proof: str = ""
    commands: tuple[str, ...] = ()  # the commands this key belongs to, when narrower than the framework's
    requires: tuple[str, ...] = ()  # its default matters only when one of these flags is passed
    only_with: tuple[str, ...] = ()  # read only when the file (or script) also holds one of these texts (a plugin)
    examples: tuple = field(default=(), compare=False, hash=False)  # ("bad"|"good", dict) rows for the rule catalog
    resolves: str = ""  # the expression the framework's code gives an unset key (`not fp16`): its `default`
    auto_follows: str = ""  # the setting an "auto" value copies (then "auto" is not reported: that setting is)
    judged_by: str = ""  # the table and rules that judge this key's values (then no kind's hazard list does)
    omitted: "Omitted | None" = field(default=None, compare=False, hash=False)  # its default in a file that leaves it out
    values: tuple[str, ...] = ()  # the kind's hazard values this release accepts (lower-cased); () = all of them
    when: tuple[Condition, ...] = field(default=(), compare=False, hash=False)  # all must hold for the key to be read
    remedy: str = ""  # what to do instead, for a kind no value fixes, where this release has a way out (its proof)
    # A switch on by default whose parser gives it an off flag (tyro's `--no-bf16`): passing the bare flag or leaving
    # it out both leave it on, so the fix writes this flag (without dashes) instead of removing the bare one
    negation: str = ""
    # (optional) the Optional nested config field whose None leaves this key at `default` (`parent`, docs/knowledge.md)
    parent: "Parent | None" = field(default=None, compare=False, hash=False)
    # A value that names the choice before this separator and more after it (AReaL's rollout.backend
    # `sglang:d4p1t1`: the engine, then its parallel layout): only the part before it is judged
    head: str = ""

    @property
    def label(self) -> str:
        return f"{self.framework.label} {self.framework.version}"


@dataclass(frozen=True)
class Framework:
    name: str
    label: str
    version: str
    distribution: str
    commands: tuple[str, ...]  # substrings of a command (or a file's text) that run this framework
    markers: tuple[str, ...]  # flag-name prefixes only this version's CLI has
    files: tuple[str, ...]  # substrings of a config file's text that make it this framework's
    keys: tuple[FrameworkKey, ...] = ()
    config_markers: tuple[str, ...] = ()  # key prefixes only this version's config files have (torchtitan's tables)
    engines: tuple[dict, ...] = ()  # `[[engine]]`: commands of this framework that start a generation engine
    launcher: bool = False  # its commands start another Python program, whose own flags follow (accelerate launch)
    # Its commands set config keys as Hydra overrides (`trainer.bf16=false`) of the entry point's config, whose
    # top-level sections these are (`trainer.`): a `key`-form key under one of them that a command leaves out runs at
    # its default (analysis/knowledge_defaults.py `command_defaults`); a key of a config group (`torch_autocast.dtype`) is not one
    hydra_roots: tuple[str, ...] = ()
    # The entry config those overrides apply to, as a path inside the installed package's folder
    # ("skyrl_train/config/ppo_base_config.yaml"): where the scanned tree holds that file, its values are the defaults
    # a command runs with, not the release's (analysis/hydra_entry_config.py)
    hydra_config: str = ""
    # The YAML a command's Python module reads, named by the module (align-anything: `--module
    # align_anything.trainers.text_to_text.ppo` reads align_anything/configs/train/text_to_text/ppo.yaml):
    # analysis/module_entry_config.py
    module_config: ModuleConfig | None = None
    # Its package, where only its own modules call its functions: users run its modules and install it from its
    # checkout, so a parameter default every call in the tree passes is never in force (analysis/param_defaults.py)
    closed_package: str = ""
    # `[detect]`: how a checkout of this release is told from its neighbours where its version file does not say the
    # release (XTuner V1's xtuner/version.py says 0.2.0 at v1.0.0rc0 and v1.0.1): `says` (what that file says
    # there), `present` and `absent` (paths inside the package directory), each read from that release's tree
    detect: dict = field(default_factory=dict, compare=False, hash=False)


@dataclass(frozen=True)
class ModuleConfig:
    prefix: str  # the modules it covers ("align_anything.trainers.")
    path: str  # where the tree holds a module's config: `{task}` is the module's name after `prefix`, dots as slashes
    proof: str


@lru_cache(maxsize=1)
def kinds() -> dict[str, Kind]:
    from rlcompat.knowledge.targets import FACT_NAMES

    out = {}
    for name, body in files.load("frameworks", "kinds.toml").items():
        unknown = sorted({h["needs"] for h in body.get("hazards", ())} - FACT_NAMES)
        if unknown:
            raise ValueError(f"rlcompat/knowledge/data/frameworks/kinds.toml [{name}]: needs = {unknown[0]!r} is not a fact of "
                             "rlcompat/knowledge/data/targets.toml (rlcompat.knowledge.targets.FACT_NAMES)")
        hazards = tuple(Hazard(tuple(v.lower() for v in h["values"]), h["needs"], _why(h["why"]), tuple(h.get("sources", ())))
                        for h in body.get("hazards", ()))
        out[name] = Kind(name, body.get("fix", "none"), hazards, body.get("forces", ""))
    for kind in out.values():
        if kind.forces and kind.forces not in out:
            raise ValueError(f"rlcompat/knowledge/data/frameworks/kinds.toml [{kind.name}]: forces = {kind.forces!r} is not a kind of this file")
    return out


class _Minimums:
    """`{minimum[vllm]}` in a hazard's why: rlcompat/knowledge/data/capabilities.toml's row, per release ("vLLM needs compute
    capability 7.5+ from 0.20.0 (7.0+ up to 0.19.1)"), so the numbers are written in one place."""

    def __getitem__(self, name: str) -> str:
        from rlcompat.knowledge.capabilities import min_capability

        return min_capability(name).by_release()


def _why(text: str) -> str:
    return text.format(minimum=_Minimums()) if "{minimum[" in text else text


@lru_cache(maxsize=1)
def frameworks() -> tuple[Framework, ...]:
    """Every framework version file, newest version first within a framework."""
    found = []
    for folder in sorted(files.folders("frameworks")):
        for name in files.names("frameworks", folder):
            found.append(_framework(files.load("frameworks", folder, f"{name}.toml"), f"{name}.toml"))
    return tuple(sorted(found, key=lambda f: (f.name, tuple(-p for p in release(f.version)))))


def python_key_words(kinds: frozenset[str]) -> frozenset[str] | None:
    """What a Python file spells where a setting of it can be a key of these kinds: the keys' last name parts
    (`candidates` finds a setting's keys by its own), lower case, `-` as `_` (argparse's dest); None where a key
    of these kinds judges Python that leaves it out (`omitted`), so no word is needed. Computed from the knowledge
    once per run (per knowledge: a test may swap it)."""
    known = frameworks()
    cached = _KEY_WORDS.get(kinds)
    if cached is None or cached[0] is not known:
        cached = _KEY_WORDS[kinds] = (known, _key_words(known, kinds))
    return cached[1]


_KEY_WORDS: dict[frozenset[str], tuple] = {}


def parameter_key_words(kinds: frozenset[str]) -> frozenset[str]:
    """The names of the keys of these kinds that are a function's parameters (form `param`), lower case."""
    return frozenset(n.lower() for fw in frameworks() for key in fw.keys
                     if key.form == "param" and key.kind in kinds for n in key.names)


def _key_words(known: tuple[Framework, ...], kinds: frozenset[str]) -> frozenset[str] | None:
    words = set()
    for fw in known:
        for key in fw.keys:
            if key.kind not in kinds:
                continue
            if key.omitted is not None and key.omitted.format == "python":
                return None
            words.update(n.rsplit(".", 1)[-1].lower().replace("-", "_") for n in key.names)
    return frozenset(words)


def _hydra_roots(value, filename: str) -> tuple[str, ...]:
    roots = tuple(value)
    if any(not isinstance(r, str) or not r.endswith(".") or r.count(".") != 1 for r in roots):
        raise ValueError(f"rlcompat/knowledge/data/frameworks/.../{filename}: `hydra_roots` lists top-level config "
                         f"sections, each ending in a dot (\"trainer.\"), not {value!r}")
    return roots


def _hydra_config(value, filename: str) -> str:
    if not isinstance(value, str) or (value and (not value.endswith(".yaml") or value.startswith("/") or ".." in value)):
        raise ValueError(f"rlcompat/knowledge/data/frameworks/.../{filename}: `hydra_config` is the entry config's "
                         f"path inside the package's folder (\"pkg/config/name.yaml\"), not {value!r}")
    return value


def _module_config(value, filename: str) -> ModuleConfig | None:
    if value is None:
        return None
    if (not isinstance(value, dict) or not str(value.get("prefix", "")).endswith(".") or "{task}" not in str(value.get("path", ""))
            or not str(value.get("path")).endswith(".yaml") or not value.get("proof")):
        raise ValueError(f"rlcompat/knowledge/data/frameworks/.../{filename}: `module_config` needs a `prefix` ending in a dot, "
                         f"a `path` ending in .yaml with `{{task}}` in it, and a `proof`, not {value!r}")
    return ModuleConfig(value["prefix"], value["path"], value["proof"])


def _closed_package(value, filename: str) -> str:
    if value is None:
        return ""
    if not isinstance(value, dict) or not str(value.get("name", "")).isidentifier() or not value.get("proof"):
        raise ValueError(f"rlcompat/knowledge/data/frameworks/.../{filename}: `closed_package` needs a `name` (the "
                         f"package's top-level import name) and a `proof`, not {value!r}")
    return value["name"]


@lru_cache(maxsize=1)
def closed_packages() -> frozenset[str]:
    """The top-level packages framework knowledge names closed (`closed_package`)."""
    return frozenset(fw.closed_package for fw in frameworks() if fw.closed_package)


def _framework(data: dict, filename: str) -> Framework:
    for required in ("framework", "label", "version"):
        if required not in data:
            raise ValueError(f"rlcompat/knowledge/data/frameworks/.../{filename}: `{required}` is missing")
    fw = Framework(data["framework"], data["label"], data["version"], data.get("distribution", data["framework"]),
                   tuple(data.get("commands", ())), tuple(data.get("markers", ())), tuple(data.get("files", ())),
                   config_markers=tuple(data.get("config_markers", ())), launcher=bool(data.get("launcher", False)),
                   hydra_roots=_hydra_roots(data.get("hydra_roots", ()), filename),
                   hydra_config=_hydra_config(data.get("hydra_config", ""), filename),
                   module_config=_module_config(data.get("module_config"), filename),
                   closed_package=_closed_package(data.get("closed_package"), filename),
                   detect=_detect(data.get("detect"), data["framework"], filename))
    keys = []
    for row in data.get("key", ()):
        if row.get("kind", "none") not in kinds() and row.get("kind", "none") != "none":
            raise ValueError(f"rlcompat/knowledge/data/frameworks/{fw.name}/{filename}: unknown kind {row['kind']!r} for {row['names']}")
        if not row.get("proof"):
            raise ValueError(f"rlcompat/knowledge/data/frameworks/{fw.name}/{filename}: {row['names']} has no proof")
        examples = tuple(("bad", e) for e in row.get("bad", ())) + tuple(("good", e) for e in row.get("good", ()))
        keys.append(FrameworkKey(
            fw, tuple(row["names"]), row.get("form", "any"), row.get("kind", "none"), row.get("role", ""),
            dict(row.get("spellings", {})), row.get("safe", ""), str(row.get("default", "")),
            row.get("default_at", "parse"), row.get("auto", ""), row.get("live", True), row.get("scoped", False),
            row["proof"], tuple(row.get("commands", ())), tuple(row.get("requires", ())),
            tuple(row.get("only_with", ())), examples, row.get("resolves", ""), row.get("auto_follows", ""),
            row.get("judged_by", ""), _omitted(row, fw.name, filename), _values(row, fw.name, filename),
            tuple(_condition(c, f"rlcompat/knowledge/data/frameworks/{fw.name}/{filename}: {row['names']} `when`")
                  for c in row.get("when", ())), row.get("remedy", ""), _negation(row, fw.name, filename),
            _parent(row, fw.name, filename), row.get("head", "")))
    object.__setattr__(fw, "keys", tuple(keys))
    for row in data.get("engine", ()):
        if not row.get("proof") or not row.get("commands") or not row.get("engine"):
            raise ValueError(f"rlcompat/knowledge/data/frameworks/{fw.name}/{filename}: an [[engine]] needs engine, commands and proof")
    object.__setattr__(fw, "engines", tuple(dict(row) for row in data.get("engine", ())))
    return fw


def _detect(table, framework: str, filename: str) -> dict:
    if table is None:
        return {}
    if not isinstance(table, dict) or not table.get("present") or not table.get("proof"):
        raise ValueError(f"rlcompat/knowledge/data/frameworks/{framework}/{filename}: [detect] needs `present` paths "
                         "and a `proof`")
    return dict(table)


def release_by_files(name: str, package: str, says: str | None) -> Framework | None:
    """The newest release of framework `name` whose `[detect]` matches the package directory `package` (its
    `present` paths there, its `absent` ones not) and whose version file says `says` there (a release whose `says`
    differs is not this tree); None where none does: the package is then a fork (knowledge/identity.py)."""
    import os

    for fw in frameworks():  # newest first within a framework
        detect = fw.detect
        if fw.name != name or not detect or detect.get("says", says) != says:
            continue
        if all(os.path.exists(os.path.join(package, p)) for p in detect["present"]) and \
                not any(os.path.exists(os.path.join(package, p)) for p in detect.get("absent", ())):
            return fw
    return None


def engine_tables(engine: str) -> list[tuple[Framework, dict, str]]:
    """(framework, its `[[engine]]` row, table) for each config table whose presence in a config file of that
    framework starts `engine` (prime-rl's RL config starts a vLLM server for its `[inference]` table)."""
    return [(fw, row, table) for fw, row in engine_rows(engine) for table in row.get("tables", ())]


def engine_rows(engine: str) -> list[tuple[Framework, dict]]:
    """(framework, its `[[engine]]` row) of each framework command that starts `engine`, newest release first."""
    return [(fw, row) for fw in frameworks() for row in fw.engines if row["engine"] == engine]


def engine_commands(words: tuple[str, ...], engine: str) -> list[tuple[Framework, dict]]:
    """(framework, its `[[engine]]` row) of each row whose commands a command's words run (`trl vllm-serve` starts
    vLLM) and none of whose `unless` flags they pass (slime's `--debug-train-only` starts no engine)."""
    line = " ".join(words)
    return [(fw, row) for fw, row in engine_rows(engine) if any(c in line for c in row["commands"])
            and not any(u in words for u in row.get("unless", ()))]


def engine_command(words: tuple[str, ...], engine: str) -> tuple[Framework, dict] | None:
    """The first of `engine_commands`, or None."""
    found = engine_commands(words, engine)
    return found[0] if found else None


def _negation(row: dict, framework: str, filename: str) -> str:
    """`negation`: the off flag of a default-on switch flag; only where turning it off is the fix."""
    negation = row.get("negation", "")
    kind = kinds().get(row.get("kind", "none"))
    if negation and (row.get("form") != "flag" or str(row.get("default", "")).lower() != "true"
                     or kind is None or kind.fix != "off"):
        raise ValueError(f"rlcompat/knowledge/data/frameworks/{framework}/{filename}: {row['names']} has a `negation` "
                         "but is not a switch flag that defaults to true and is fixed by turning it off")
    return negation


def _values(row: dict, framework: str, filename: str) -> tuple[str, ...]:
    """`values`: which of its kind's hazard values this release accepts (converter names change between releases);
    each must be one of the kind's, or it would never be judged."""
    values = tuple(str(v).lower() for v in row.get("values", ()))
    kind = kinds().get(row.get("kind", "none"))
    unknown = [v for v in values if kind is None or not any(h.matches(v) for h in kind.hazards)]
    if unknown:
        raise ValueError(f"rlcompat/knowledge/data/frameworks/{framework}/{filename}: {row['names']} `values` {unknown} are not hazard "
                         f"values of kind {row.get('kind')!r} (rlcompat/knowledge/data/frameworks/kinds.toml)")
    return values


def _condition(row: dict, where: str) -> Condition:
    """A `when` row: `{ key, values | other_than, default, proof }`, or `{ any = [rows] }`."""
    if "any" in row:
        if set(row) != {"any"} or not row["any"]:
            raise ValueError(f"{where}: an `any` row holds alternatives only")
        return Condition(any=tuple(_condition(r, where) for r in row["any"]))
    missing = [f for f in ("key", "default", "proof") if f not in row]
    if ("values" in row) == ("other_than" in row):
        missing.append("values or other_than (one of them)")
    if missing:
        raise ValueError(f"{where}: a condition needs {', '.join(missing)}")
    return Condition(row["key"], tuple(str(v).lower() for v in row.get("values", ())),
                     tuple(str(v).lower() for v in row.get("other_than", ())), str(row["default"]), row["proof"])


def _default_table(row: dict, name: str, required: tuple[str, ...], framework: str,
                   filename: str) -> tuple[dict, str] | None:
    """A key's sub-table that says where its `default` applies (`omitted`, `parent`): the table and where the row is,
    for further errors; None where the row has none. Refuses a table without its `required` fields, or a row
    without the `default` it speaks of."""
    spec = row.get(name)
    if spec is None:
        return None
    where = f"rlcompat/knowledge/data/frameworks/{framework}/{filename}: {row['names']}"
    missing = [f"{name}.{f}" for f in required if not spec.get(f)]
    missing += [] if "default" in row else ["default"]
    if missing:
        raise ValueError(f"{where}: a key with `{name}` needs {', '.join(missing)}")
    return spec, where


def _omitted(row: dict, framework: str, filename: str) -> Omitted | None:
    found = _default_table(row, "omitted", ("format", "releases", "proof"), framework, filename)
    if found is None:
        return None
    spec, where = found
    if "." not in row["names"][0]:
        raise ValueError(f"{where}: `omitted` needs a dotted name (its table is where the key is added)")
    return Omitted(spec["format"], tuple(spec.get("tables", ())), spec["releases"], spec["proof"], spec.get("at", ""))


def _parent(row: dict, framework: str, filename: str) -> Parent | None:
    found = _default_table(row, "parent", ("field", "holds", "proof"), framework, filename)
    if found is None:
        return None
    spec, where = found
    if spec["field"].count(".") != 1:
        raise ValueError(f"{where}: parent.field is `Class.field` (got {spec['field']!r})")
    return Parent(spec["field"], spec["holds"], spec["proof"])


def _parents() -> dict[str, tuple[FrameworkKey, ...]]:
    """`Class.field` and the nested class it holds -> the keys whose `parent` names them (per knowledge: a test may
    swap it)."""
    known = frameworks()
    if _PARENTS.get("of") is not known:
        _PARENTS["of"], _PARENTS["index"] = known, _parents_of(known)
    return _PARENTS["index"]


_PARENTS: dict = {}


def _parents_of(known: tuple[Framework, ...]) -> dict[str, tuple[FrameworkKey, ...]]:
    index: dict[str, list[FrameworkKey]] = {}
    for fw in known:
        for key in fw.keys:
            if key.parent is not None:
                index.setdefault(key.parent.field, []).append(key)
                index.setdefault("holds:" + key.parent.holds, []).append(key)
    return {k: tuple(v) for k, v in index.items()}


def under_parent(owner: str, attr: str) -> tuple[FrameworkKey, ...]:
    """The keys whose value the Optional field `owner.attr` holds (their `parent`), newest release first."""
    return _parents().get(f"{owner}.{attr}", ())


def held_in(class_name: str) -> tuple[FrameworkKey, ...]:
    """The keys whose `parent` says `class_name` is the nested config an Optional field holds."""
    return _parents().get("holds:" + class_name, ())


def normalise(name: str) -> str:
    """A setting's name as the knowledge spells it: no leading dashes (`--ds.param_dtype` -> `ds.param_dtype`)."""
    return name.lstrip("-")


@lru_cache(maxsize=1)
def _index() -> dict[str, tuple[FrameworkKey, ...]]:
    """Last name part -> keys that may match (a key `model_init_kwargs.torch_dtype` is found under `torch_dtype`)."""
    index: dict[str, list[FrameworkKey]] = {}
    for fw in frameworks():
        for key in fw.keys:
            for name in key.names:
                index.setdefault(name.rsplit(".", 1)[-1].lower(), []).append(key)
    return {k: tuple(v) for k, v in index.items()}


_ITEM_INDEX = re.compile(r"(?:\.\d+)+$")


def candidates(setting_key: str) -> tuple[FrameworkKey, ...]:
    return _index().get(_last_name_part(setting_key), ())


@lru_cache(maxsize=4096)  # every knowledge rule asks for every setting: about twenty thousand times in verl
def _last_name_part(setting_key: str) -> str:
    return _ITEM_INDEX.sub("", normalise(setting_key)).rsplit(".", 1)[-1].lower()


def name_matches(key: FrameworkKey, setting_key: str) -> bool:
    """`bf16.enabled` matches the setting `bf16.enabled` and `zero.bf16.enabled`; flags match whole. An item of a
    list key (`model.converters.0` from JSON or TOML) matches the list's key."""
    name = _ITEM_INDEX.sub("", normalise(setting_key).lower())
    return any(name == n.lower() or name.endswith("." + n.lower()) for n in key.names)



@dataclass(frozen=True)
class Vocabulary:
    """rlcompat/knowledge/data/frameworks/vocabulary.toml: the words front ends need to read commands and configs."""
    switches: frozenset[str]  # flags (argparse dest) that take no value
    verl_config_top_keys: frozenset[str]  # top-level keys that make a YAML file a verl config
    override_clis: frozenset[str] = frozenset()  # programs whose `key=value` words are config overrides


@lru_cache(maxsize=1)
def vocabulary() -> Vocabulary:
    data = files.load("frameworks", "vocabulary.toml")
    for table, name in (("switch", "flag"), ("override_cli", "program")):
        for row in data.get(table, ()):
            if not row.get("proof"):
                raise ValueError(f"rlcompat/knowledge/data/frameworks/vocabulary.toml: {table} {row.get(name)!r} has no proof: add the "
                                 "file:line of the framework release that reads it")
    return Vocabulary(frozenset(row["flag"] for row in data.get("switch", ())),
                      frozenset(data["verl_config"]["top_keys"]),
                      frozenset(row["program"] for row in data.get("override_cli", ())))
