"""The configuration schema a scanned tree ships: which keys exist, read from the tree itself, never by running it.

- `hydra_static`: a Hydra config directory composed statically (defaults lists, `_self_`, config groups, `@package`);
- `structured`: OmegaConf structured configs and HfArgumentParser dataclasses, read with `ast`;
- `tree`: which schema a launch command reads (its entry point's `@hydra.main`, `--config-path/--config-name`, an
  `OmegaConf.structured(...)` merge), resolved per tree and cached;
- `gate`: how a fix may spell a key it adds (`key=`, `+key=`, `++key=`), or why it may not add it at all;
- `loadcheck`: composing a fixed launch command's config with the tree's own loader in a child process.

Knowledge files keep what a key does; the schema says whether the tree has it (docs/configs-and-scripts.md).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class KeySchema:
    """The keys one config system of a tree accepts.

    `system` is "hydra" (a composed Hydra config: an absent key can be added with `+key=`, `++key=` adds or
    overrides) or "structured" (an OmegaConf structured merge: an absent field cannot be added at all, ConfigKeyError).
    `keys` holds every dotted path, mappings included; `open_maps` the mappings whose keys are free (`{}` in YAML, a
    `Dict[...]` field): code reads them whole, so a key under one is the config's even when it is not written.
    `source` is where it was read, as the report shows it ("./verl/trainer/config/ppo_trainer.yaml").
    """

    system: str
    source: str
    keys: frozenset[str]
    open_maps: frozenset[str] = frozenset()
    # False where part of the config is declared outside the tree (a TrlParser over TRL's own GRPOConfig): then a
    # key the tree does not declare may still exist, and only the framework's knowledge can say.
    complete: bool = True
    defaults: tuple[tuple[str, str | None], ...] = ()  # (field, its default as written) of a dataclass schema

    def has(self, key: str) -> bool:
        return key in self.keys

    def open_parent(self, key: str) -> str | None:
        """The free mapping `key` would sit in (its nearest ancestor that is one), or None."""
        parent = key.rpartition(".")[0]
        while parent:
            if parent in self.open_maps:
                return parent
            if parent in self.keys:
                return None  # a written mapping with fixed keys stands between
            parent = parent.rpartition(".")[0]
        return None


class SchemaUnread(Exception):
    """The tree's config could not be read statically (a file missing, YAML that does not parse, a defaults entry
    whose option is computed): nothing about its keys is proven. The message says which file and why."""
