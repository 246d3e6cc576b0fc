"""verl's configuration knowledge, per verl version, from rlcompat/knowledge/data/verl/<version>.toml.

Which version applies is the scanned tree's verl identity (rlcompat/knowledge/identity.py), resolved by the caller and passed
in; a file inside a verl package is judged by that package's own identity. A fork, or a version rlcompat has no
knowledge file of, is read with the closest release's rule set, and claims that need the exact release are withheld
(`version_known` is False).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Mapping

from rlcompat.knowledge import files
from rlcompat.knowledge.paths import nearest
from rlcompat.knowledge.versions import release


@dataclass(frozen=True)
class KnownSetting:
    id: str  # "torch-compile": the same hazard for several roles
    key: str  # full dotted Hydra key
    default: str
    proof: str
    role: str = "actor"
    add_prefix: str = ""  # "+" where the key is not in the YAML tree and Hydra must add it
    worker: str = ""  # "legacy" | "engine": read only by that worker; "" by whichever the run uses
    follows: str = ""  # the key whose value this one takes when unset (Hydra's oc.select)
    engine: str = ""  # read only by this training engine ("megatron", "fsdp_turbo"); "" by the default one
    selected_by: str = ""  # how a run selects that engine, for messages
    config: str = ""  # the top config the key belongs to ("generation.yaml"), when not the PPO trainer's
    # Why verl's composed config always sets `follows` (the proof): then the oc.select fallback in verl's own files
    # never applies, and the followed key's own line is where the value is judged.
    follows_always_set: str = ""
    # A config-group file of verl's own ("model/hf_model.yaml") that writes the key's parent mapping without the key,
    # so verl's default applies to every run composing it as written: the key is judged there, at the mapping.
    omitted_in: str = ""
    # The only values verl's config class for the key accepts (its proof in `proof`): a fix writes no other value.
    accepts: tuple[str, ...] = ()
    accepts_proof: str = ""


@dataclass(frozen=True)
class DeadKey:
    key: str
    use: str  # the live key to set instead
    why: str
    proof: str
    add_prefix: str = ""
    worker: str = ""  # dead only when the run uses this worker ("" for any)
    field: str = ""  # the Python declaration whose default nothing reads: "verl/workers/config/actor.py:ActorConfig.x"


@dataclass(frozen=True)
class RunOption:
    """Code and configs of the package that only a run selecting `option` reaches (`[[run_option]]`)."""

    name: str  # "megatron": what `rlcompat matrix --run` takes
    option: str  # how a run selects it, for messages
    files: tuple[str, ...]  # relative to the package; a trailing "/" is a folder
    proof: str
    # How a launch selects it: any of these tables, each of (a full Hydra key, the values that select it), all of a
    # table's keys matched; a key the launch leaves unset has its `[default_run]` `values` value.
    when: tuple[tuple[tuple[str, tuple[str, ...]], ...], ...] = ()
    code: tuple[str, ...] = ()  # "utils/model.py:load_valuehead_model": code it reaches that no override changes
    codes: tuple[str, ...] = ()  # the rule codes of the hazards `code` writes itself ("RLC201"); () for any
    avoid: str = ""  # another way to run without it, for messages
    # Code inside files every run imports that only this option's run executes: "file:Qualified.name", or
    # "file:Qualified.name|if TEST" / "|else TEST" for the body (or else-branch) of the `if` whose test reads TEST
    # (rlcompat/analysis/run_model.py)
    functions: tuple[str, ...] = ()

    def covers(self, relative: str) -> bool:
        return any(relative == f or (f.endswith("/") and relative.startswith(f)) for f in self.files)


@dataclass(frozen=True)
class ConfigHandle:
    """Tables of the run's config that stand for what a run option's code loads, where the code writes a hazard
    itself (`[[handle]]`): a fork's scanned primary config is told there (rlcompat/analysis/launch_path.py)."""

    option: str  # the `[[run_option]]` whose selection this needs; "" where the entry config itself selects the code
    code: str  # "workers/fsdp_workers.py:CriticWorker._build_critic_model_optimizer"
    codes: tuple[str, ...]  # the rule codes of the hazards it writes
    tables: tuple[str, ...]  # full Hydra keys of the tables the findings are reported on
    what: str  # what the tables configure, for messages
    remedy: str
    proof: str
    words: tuple[str, ...] = ()  # a code finding counts only when its line holds one of these ("param_dtype")
    unless: str = ""  # a key under the table that makes the code read the table's value instead
    mapped: str = ""  # a name the package's entry module must use in its code ("Role.RefPolicy"): the role is built
    # the entry config the tables are in, relative to the package, where it is not `[default_run]`'s
    # ("trainer/config/sft_trainer.yaml": the SFT trainer's own config)
    config: str = ""


@dataclass(frozen=True)
class RunModule:
    """Modules of the package a run imports once its config selects them (`[[run_module]]`: an engine, a rollout,
    a trainer picked by a key), which the entry point's own imports do not reach: they are imported inside the
    functions that read the key."""

    name: str
    modules: tuple[str, ...]  # dotted module names ("verl.workers.engine.fsdp.transformer_impl")
    proof: str
    when: tuple[tuple[tuple[str, tuple[str, ...]], ...], ...] = ()  # as RunOption.when; () = every run


@dataclass(frozen=True)
class Knowledge:
    version: str  # the rule set's version
    detected: str | None  # the version found for the scanned file, None if none was found
    rollout_engines: tuple[str, ...]
    rollout_engines_proof: str
    mounts: dict[str, tuple[str, ...]]  # "rollout/rollout.yaml" -> ("actor_rollout_ref.rollout",)
    settings: tuple[KnownSetting, ...]
    dead: dict[str, DeadKey]
    remove_padding_patterns: tuple[str, ...]
    remove_padding_proof: str
    entry_modules: tuple[str, ...]
    entry_prefixes: tuple[str, ...]
    default_worker: str = "engine"  # "legacy" (verl/workers/fsdp_workers.py) or "engine" (engine_workers.py)
    entry_triggers: tuple[str, ...] = ()  # words whose presence in a file may mean a command runs an entry point
    # Files of the verl package that no entry point of this version reads: path relative to the package -> why
    unread: dict[str, str] = field(default_factory=dict)
    # Files whose settings (all of them, or those under `keys`) only an option no shipped entry config selects reads:
    # path relative to the package -> (key prefixes, "" = whole file; the option). rlcompat/knowledge/verl_own_files.py
    unselected: dict[str, tuple[tuple[str, ...], str]] = field(default_factory=dict)
    # The tree's verl when it is not exactly this release (a rlcompat.knowledge.identity.FrameworkIdentity: `how`, `exact`)
    identity: object = field(default=None, compare=False)
    default_run: str = ""  # the run a launch without options gets, in words (`[default_run]`)
    run_options: tuple[RunOption, ...] = ()
    run_entry: tuple[str, ...] = ()  # the entry modules whose runs `[default_run]` and `[[run_option]]` describe
    run_config: str = ""  # the config they compose, relative to the package ("trainer/config/ppo_trainer.yaml")
    run_values: Mapping[str, str] = field(default_factory=dict)  # what a run gets for the keys `when` reads
    handles: tuple[ConfigHandle, ...] = ()
    run_modules: tuple[RunModule, ...] = ()
    # Keys (a table stands for every key under it) other releases' configs have and this release's `run_config`
    # composes without (`[[absent]]`): key -> proof. What RLC004 says of a pinned release with no package on disk.
    absent: Mapping[str, str] = field(default_factory=dict)

    @property
    def version_known(self) -> bool:
        """Whether the scanned tree's verl is exactly this rule set's release: only then may a rule say a key does
        nothing, or that a default applies (with its file:line)."""
        return self.detected == self.version and (self.identity is None or self.identity.exact)

    def by_id(self, setting_id: str) -> tuple[KnownSetting, ...]:
        return tuple(s for s in self.settings if s.id == setting_id)

    def setting(self, setting_id: str, role: str = "actor") -> KnownSetting | None:
        return next((s for s in self.settings if s.id == setting_id and s.role == role), None)

    def dead_aliases_of(self, live_key: str) -> tuple[str, ...]:
        return tuple(d.key for d in self.dead.values() if d.use == live_key)

    @property
    def label(self) -> str:
        """How messages name the version: `verl 0.9.1`, or which rule set was assumed."""
        if self.version_known:
            return f"verl {self.version}"
        if self.identity is not None and self.identity.how == "fork":
            return f"verl fork (closest release {self.version})"
        if self.detected:
            return f"verl {self.detected} (no knowledge; closest release {self.version})"
        return f"verl {self.version} (version not found; assumed)"

    def cite(self, proof: str) -> str:
        """How a message names what it knows: the release's file:line where the tree runs exactly that release; no
        location otherwise (a fork's own files differ; another release's line would point nowhere in the tree)."""
        if self.version_known:
            return f"{self.label} knowledge: {proof.split(' (')[0]}"
        return f"{self.label}; no file:line cited for this tree's verl"


@lru_cache(maxsize=1)
def available_versions() -> tuple[str, ...]:
    return tuple(sorted(files.names("verl"), key=release))


def choose_version(detected: str | None) -> str:
    """The newest rule set not newer than `detected`; the oldest if all are newer; the newest if unknown."""
    versions = available_versions()
    if detected is None:
        return versions[-1]
    wanted = release(detected)
    older = [v for v in versions if release(v) <= wanted]
    return older[-1] if older else versions[0]


@lru_cache(maxsize=None)
def _load(version: str, detected: str | None) -> Knowledge:
    data = _table(version)
    return Knowledge(
        version=data["version"],
        detected=detected,
        rollout_engines=tuple(data["rollout_engines"]),
        rollout_engines_proof=data["rollout_engines_proof"],
        mounts={m["file"]: tuple(m["at"]) for m in data.get("mount", ())},
        settings=tuple(
            KnownSetting(s["id"], s["key"], str(s["default"]), s["proof"], s.get("role", "actor"), s.get("add", ""),
                         s.get("worker", ""), s.get("follows", ""), s.get("engine", ""), s.get("selected_by", ""),
                         s.get("config", ""), s.get("follows_always_set", ""), s.get("omitted_in", ""),
                         tuple(s.get("accepts", ())), s.get("accepts_proof", ""))
            for s in data["setting"]
        ),
        dead={d["key"]: DeadKey(d["key"], d["use"], d["why"], d["proof"], d.get("add", ""), d.get("worker", ""),
                                d.get("field", "")) for d in data.get("dead", ())},
        remove_padding_patterns=tuple(data["remove_padding_flash"]["path_patterns"]),
        remove_padding_proof=data["remove_padding_flash"]["proof"],
        entry_modules=tuple(data["entry_points"]["modules"]),
        entry_prefixes=tuple(data["entry_points"]["module_prefixes"]),
        default_worker=data.get("default_worker", "engine"),
        entry_triggers=tuple(data["entry_points"].get("triggers", ())),
        unread={f: u["why"] for u in data.get("unread", ()) for f in u["files"]},
        unselected={f: (tuple(u.get("keys", ("",))), u["option"]) for u in data.get("unselected", ()) for f in u["files"]},
        default_run=data.get("default_run", {}).get("describe", ""),
        run_options=tuple(RunOption(r["name"], r["option"], tuple(r["files"]), r["proof"],
                                    tuple(tuple((k, tuple(str(v) for v in vs)) for k, vs in w.items()) for w in r.get("when", ())),
                                    tuple(r.get("code", ())), tuple(r.get("codes", ())), r.get("avoid", ""),
                                    tuple(r.get("functions", ())))
                          for r in data.get("run_option", ())),
        run_modules=tuple(RunModule(r["name"], tuple(r["modules"]), r["proof"], _when(r.get("when", ())))
                          for r in data.get("run_module", ())),
        run_entry=tuple(data.get("default_run", {}).get("entry", ())),
        run_config=data.get("default_run", {}).get("config", ""),
        run_values={k: _value_text(v) for k, v in data.get("default_run", {}).get("values", {}).items()},
        handles=tuple(ConfigHandle(h["option"], h["code"], tuple(h["codes"]), tuple(h["tables"]), h["what"],
                                   h["remedy"], h["proof"], tuple(h.get("words", ())), h.get("unless", ""),
                                   h.get("mapped", ""), h.get("config", ""))
                      for h in data.get("handle", ())),
        absent={a["key"]: a["proof"] for a in data.get("absent", ())},
    )


def _value_text(value) -> str:
    """A `[default_run]` value as a command line writes it: a list as `[a,b]` (a `when` "has:V" reads its items)."""
    return "[" + ",".join(str(v) for v in value) + "]" if isinstance(value, list) else str(value)


def _when(tables) -> tuple:
    return tuple(tuple((k, tuple(str(v) for v in vs)) for k, vs in w.items()) for w in tables)


def load_version(version: str) -> Knowledge:
    """One rule set by its own version (for messages that compare releases)."""
    return _load(version, version)


def other_verdicts(key: str) -> list[tuple[str, str]]:
    """(version, "live" | "dead") for every rule set that knows `key`: what a message can say when the scanned
    tree's version is unknown."""
    out = []
    for version in available_versions():
        known = load_version(version)
        if key in known.dead:
            out.append((version, "dead"))
        elif any(s.key == key for s in known.settings):
            out.append((version, "live"))
    return out


def respelled(key: str, knowledge: Knowledge) -> list[tuple[str, str]]:
    """(key, how it is known) for each way `knowledge`'s release may spell `key`, a key another release's knowledge
    has: the same setting (its `id` and `role`) there, or the same config-group file mounted for the same top-level
    key at another point (verl 0.7.0 mounts engine/fsdp.yaml at `critic.model.fsdp_config`, 0.9.1 at `critic.fsdp`).
    The caller keeps the ones the release's composed config has."""
    out: dict[str, str] = {}  # the first reason found for each key
    for version in available_versions():
        if version == knowledge.version:
            continue
        other = load_version(version)
        for old in (s for s in other.settings if s.key == key):
            new = knowledge.setting(old.id, old.role)
            if new is not None and new.key != key:
                out.setdefault(new.key, f"the same setting, `{old.id}` of the {old.role}: verl {version} "
                                        f"{old.proof}; verl {knowledge.version} {new.proof}")
        for file, points in other.mounts.items():
            for point in (p for p in points if key.startswith(p + ".")):
                rest = key[len(point) + 1:]
                top = point.split(".")[0]
                for new_point in knowledge.mounts.get(file, ()):
                    if new_point != point and new_point.split(".")[0] == top and new_point not in points:
                        out.setdefault(f"{new_point}.{rest}", f"verl {knowledge.version} mounts {file} at "
                                                              f"`{new_point}`, verl {version} at `{point}`")
    return list(out.items())


@lru_cache(maxsize=1)
def entry_triggers() -> tuple[str, ...]:
    """Every rule set's entry-point trigger words, newest rule set first: what a config rule that adds overrides to a
    verl command needs in a file before it runs (the scanned version is not known when rules are chosen)."""
    found: dict[str, None] = {}
    for version in reversed(available_versions()):
        found.update(dict.fromkeys(load_version(version).entry_triggers))
    return tuple(found)


@lru_cache(maxsize=None)
def omitted_mapping_names(setting_id: str) -> tuple[str, ...]:
    """The names of the mappings (`override_config`) in which verl's own files leave out a key of `setting_id`
    (`omitted_in`), in every rule set: such a file holds no word of the key itself, so a rule judging it needs the
    mapping's name among its triggers."""
    names = {s.key.rsplit(".", 2)[-2] for v in available_versions() for s in load_version(v).by_id(setting_id)
             if s.omitted_in}
    return tuple(sorted(names))


def knowledge_of(identity, package: str = "") -> Knowledge:
    """The rule set for a verl identity (rlcompat.knowledge.identity.FrameworkIdentity, resolved by the caller): exactly its
    release's, or the closest release's with the claims that need the exact release withheld. `package`: the verl
    package directory on disk (else the identity's own, where it is absolute): a tree that is not exactly a release
    mounts its config groups where its own run config's defaults list puts them (`own_mounts`), not where the closest
    release does."""
    if identity.exact:
        return _load(identity.version, identity.version)
    base = _load(choose_version(identity.version), None)
    package = package or (identity.package if os.path.isabs(identity.package or "") else "")
    own = own_mounts(os.path.abspath(package), base.run_config) if package and base.run_config else None
    if own is None:
        return replace(base, detected=identity.version, identity=identity)
    mounts, written = own
    # the tree's own composition sets the key a setting follows (`${oc.select:actor...use_torch_compile,true}` in
    # ref/ref.yaml, with actor/actor.yaml mounted first): the fallback never applies, the followed line is judged
    why = f"the tree's own {os.path.basename(base.run_config)} composes a value for it"
    settings = tuple(replace(s, follows_always_set=s.follows_always_set or why) if s.follows in written else s
                     for s in base.settings)
    return replace(base, detected=identity.version, identity=identity, mounts=mounts, settings=settings)


@lru_cache(maxsize=64)
def own_mounts(package: str, run_config: str) -> tuple[dict[str, tuple[str, ...]], frozenset[str]] | None:
    """Where the package's own run config (`trainer/config/ppo_trainer.yaml`) mounts each config-group file its
    defaults list reaches, as `[[mount]]` gives them (path relative to trainer/config -> packages), and the leaf keys
    that composition sets: a fork of 0.4.1 that carries 0.5.0's groups (`actor@actor_rollout_ref.actor: dp_actor`)
    reads actor/dp_actor.yaml's `fsdp_config` as `actor_rollout_ref.actor.fsdp_config`. Read statically
    (rlcompat/schema/hydra_static.py); None where the package has no such config, composes no group file, or its
    defaults list cannot be followed (then the closest release's `[[mount]]` rows stand)."""
    from rlcompat.schema import SchemaUnread
    from rlcompat.schema.hydra_static import compose_values, mounted_at

    config = os.path.join(package, run_config)
    if not os.path.isfile(config):
        return None
    folder, name, bases = os.path.dirname(config), os.path.basename(config), (os.path.dirname(package),)
    try:
        read = mounted_at(folder, name, bases)
        written = frozenset(compose_values(folder, name, (), bases))
    except (SchemaUnread, OSError, RecursionError):
        return None
    out = {os.path.relpath(file, folder).replace(os.sep, "/"): tuple(p for p in packages if p)
           for file, packages in read.items() if os.path.abspath(file) != os.path.abspath(config)}
    out = {file: packages for file, packages in out.items() if packages and not file.startswith("../")}
    return (out, written) if out else None


def group_prefixes(knowledge: Knowledge, package: str, path: str) -> tuple[str, ...]:
    """The keys under which the run config of `package` mounts the config-group file `path` (`knowledge.mounts`),
    or () for a file that is no mounted group file of that config."""
    folder = os.path.dirname(os.path.join(os.path.abspath(package), knowledge.run_config or "trainer/config/x"))
    relative = os.path.relpath(os.path.abspath(path), folder).replace(os.sep, "/")
    return () if relative.startswith("../") else tuple(knowledge.mounts.get(relative, ()))


def own_file_row(path: str, table: str) -> tuple[Knowledge, object] | None:
    """For a file of a verl package whose version is found in the tree itself: that version's knowledge and the
    file's row of `table` (a dict by path relative to the package: `unread`, `unselected`), else None. The
    installed verl says nothing about a copied tree, and an unknown version supports no claim about its files.
    Only that version's knowledge file is read, and none for a file outside a verl package."""
    full = os.path.abspath(path)
    root = package_root(os.path.dirname(full))
    if root is None:
        return None
    release = package_release(root)
    if release[0] is None or not release[1]:
        return None  # a fork's files are its own: no release's table describes them
    knowledge = _load(release[0], release[0])
    row = getattr(knowledge, table).get(os.path.relpath(full, root).replace(os.sep, "/"))
    return (knowledge, row) if row else None


@lru_cache(maxsize=256)
def package_root(directory: str) -> str | None:
    """The verl package directory (`.../verl`, holding `trainer/`) that contains `directory`, if any."""
    return nearest(directory, lambda d: os.path.basename(d) == "verl" and os.path.isdir(os.path.join(d, "trainer")))


@lru_cache(maxsize=None)
def detect_table(version: str) -> dict | None:
    """The rule set's `[detect]`: files present in, and absent from, that release's package."""
    return _table(version).get("detect")


@lru_cache(maxsize=None)
def _table(version: str) -> dict:
    """A release's knowledge file as parsed, read once (its `[detect]` and the rule set both come from it)."""
    return files.load("verl", f"{version}.toml")


def version_from_files(package: str) -> str | None:
    """The newest rule set whose `[detect]` files match a verl package (a copy without `version/version`)."""
    for version in reversed(available_versions()):
        detect = detect_table(version)
        if not detect:
            continue
        present = all(os.path.exists(os.path.join(package, p)) for p in detect.get("present", ()))
        absent = not any(os.path.exists(os.path.join(package, p)) for p in detect.get("absent", ()))
        if present and absent:
            return version
    return None


@lru_cache(maxsize=64)
def package_release(package: str) -> tuple[str | None, bool, str]:
    """What a verl package directory says of its release: (version, whether it is exactly a release rlcompat has
    knowledge of, the evidence). `verl/version/version` names the version; its files must then not be another
    release's (`[detect]`). A package without the file is the release whose files match, if any."""
    written = _first_line(os.path.join(package, "version", "version"))
    by_files = version_from_files(package)
    if written:
        evidence = f"verl/version/version says {written}"
        if written in available_versions() and (by_files is None or by_files == written or not detect_table(written)):
            return written, True, evidence
        if by_files and written in available_versions():
            return written, False, f"{evidence}, but its files are verl {by_files}'s"
        return written, False, f"{evidence}, a version rlcompat has no knowledge of"
    if by_files:
        return by_files, True, f"no version file; its files match verl {by_files}'s"
    return None, False, "no version file, and no release's files match"


def _first_line(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8") as fh:
            return fh.read().strip() or None
    except OSError:
        return None


def knowledge_for(version: str | None) -> tuple[Knowledge | None, str]:
    """The rule set scan would apply to a tree of this verl version, and its name; None with the reason when no
    rule set describes the version."""
    if version is None:
        return None, "verl is not installed here, so its version (and which keys it reads) is unknown"
    chosen = choose_version(version)
    if release(version) < release(chosen):
        return None, f"verl {version} is older than every rule set rlcompat has ({chosen} is the oldest)"
    label = f"verl {version}" if chosen == version else f"verl {version} (rules for {chosen})"
    return load_version(chosen), f"{label} knowledge (rlcompat/knowledge/data/verl/{chosen}.toml)"
