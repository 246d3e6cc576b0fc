"""rlcompat's own options: `[tool.rlcompat]` in pyproject.toml, then command-line options on top (a setting found
in a scanned file is `rlcompat.lang.settings.Setting`)."""

from __future__ import annotations

import fnmatch
import os
import re
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path

from rlcompat._toml import TOMLDecodeError, load_toml_text

DEFAULT_EXCLUDE = (
    ".git", ".hg", ".svn", ".venv", "venv", ".tox", ".nox", ".mypy_cache", ".ruff_cache", ".pytest_cache",
    "__pycache__", "node_modules", "build", "dist", ".rlcompat_cache", ".eggs", "*.egg-info",
)
_KEYS = {
    "target", "select", "ignore", "extend-select", "exclude", "extend-exclude", "per-file-ignores",
    "respect-gitignore", "unsafe-fixes", "force-exclude", "cache-dir", "fail-on",
}


class ConfigError(Exception):
    """Bad configuration; the message names the file and the key."""


@dataclass(frozen=True)
class Options:
    target: str | None = None
    select: tuple[str, ...] = ("ALL",)
    ignore: tuple[str, ...] = ()
    exclude: tuple[str, ...] = DEFAULT_EXCLUDE
    extend_exclude: tuple[str, ...] = ()
    per_file_ignores: dict[str, tuple[str, ...]] = field(default_factory=dict)
    respect_gitignore: bool = True
    unsafe_fixes: bool = False
    force_exclude: bool = False  # also exclude explicitly named files (the pre-commit case)
    fail_on: str = "warning"  # the lowest severity (findings.SEVERITIES) a remaining finding makes scan/fix exit 1 for
    cache_dir: str | None = ".rlcompat_cache"
    root: str = "."  # where the config was found; exclude and per-file-ignores patterns are relative to it
    config_file: str | None = None

    def with_overrides(self, **changes) -> "Options":
        return replace(self, **{k: v for k, v in changes.items() if v is not None})

    def is_selected(self, code: str, path: str | None = None) -> bool:
        if not any(s == "ALL" or code.startswith(s) for s in self.select):
            return False
        if any(code.startswith(i) for i in self.ignore):
            return False
        if path is not None and self.per_file_ignores:
            rel = self.relative(path)
            for pattern, codes in self.per_file_ignores.items():
                if _path_matches(rel, pattern) and any(c == "ALL" or code.startswith(c) for c in codes):
                    return False
        return True

    def relative(self, path: str) -> str:
        try:
            return Path(os.path.abspath(path)).relative_to(os.path.abspath(self.root)).as_posix()
        except ValueError:
            return Path(path).as_posix()

    def is_excluded(self, path: str, walk_root: str | None = None) -> bool:
        """Name patterns (no `/`) match a component below the walk root, so scanning a tree that itself lives
        under `.venv/` works; path patterns match from the config root."""
        names, paths = self._exclude_matchers()
        rel_walk = _relative_to(path, walk_root) if walk_root else self.relative(path)
        if names is not None and any(names.fullmatch(part) for part in rel_walk.split("/")):
            return True
        return paths is not None and paths.fullmatch(self.relative(path)) is not None

    def is_name_excluded(self, name: str) -> bool:
        """The cheap check for a walk that already checked every parent directory."""
        names, _ = self._exclude_matchers()
        return names is not None and names.fullmatch(name) is not None

    def is_path_excluded(self, path: str) -> bool:
        _, paths = self._exclude_matchers()
        return paths is not None and paths.fullmatch(self.relative(path)) is not None

    def _exclude_matchers(self):
        return _compile_excludes(tuple(self.exclude) + tuple(self.extend_exclude))


@lru_cache(maxsize=32)
def _compile_excludes(patterns: tuple[str, ...]):
    """One regex for name patterns and one for path patterns (a path pattern also matches everything under it)."""
    names = [fnmatch.translate(p.rstrip("/")) for p in patterns if "/" not in p.rstrip("/")]
    paths = []
    for p in patterns:
        p = p.rstrip("/")
        if "/" in p:
            p = p[2:] if p.startswith("./") else p.lstrip("/")
            paths += [fnmatch.translate(p), fnmatch.translate(p + "/*")]
    return (re.compile("|".join(names)) if names else None, re.compile("|".join(paths)) if paths else None)


def _relative_to(path: str, base: str) -> str:
    try:
        return Path(os.path.abspath(path)).relative_to(os.path.abspath(base)).as_posix()
    except ValueError:
        return Path(path).as_posix()


def _path_matches(rel: str, pattern: str) -> bool:
    """A pattern without `/` matches any path component; one with `/` matches the path from the root."""
    pattern = pattern.rstrip("/")
    if "/" not in pattern:
        return any(fnmatch.fnmatchcase(part, pattern) for part in rel.split("/"))
    pattern = pattern.lstrip("./")
    return fnmatch.fnmatchcase(rel, pattern) or fnmatch.fnmatchcase(rel, pattern + "/*")


def find_config(start: str) -> Path | None:
    """The nearest pyproject.toml with a [tool.rlcompat] table, from `start` upward."""
    here = Path(os.path.abspath(start))
    if here.is_file():
        here = here.parent
    for directory in (here, *here.parents):
        candidate = directory / "pyproject.toml"
        if candidate.is_file():
            try:
                text = candidate.read_text("utf-8")
            except OSError:
                continue
            if "[tool.rlcompat" in text:
                return candidate
    return None


def load_options(paths: list[str], config_file: str | None = None) -> Options:
    if config_file is None:
        found = None
        for start in [*(paths[:1]), os.getcwd()]:
            found = find_config(start)
            if found:
                break
    else:
        found = Path(config_file)
        if not found.is_file():
            raise ConfigError(f"{config_file}: no such config file; pass a pyproject.toml path to --config")
    if found is None:
        return Options(root=os.getcwd())
    try:
        data = load_toml_text(found.read_text("utf-8"))
    except (TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{found}: not valid TOML ({exc}); fix the file or pass --config") from exc
    table = data.get("tool", {}).get("rlcompat", {})
    return settings_from_table(table, str(found))


def settings_from_table(table: dict, config_file: str) -> Options:
    unknown = set(table) - _KEYS
    if unknown:
        raise ConfigError(
            f"{config_file}: unknown key(s) in [tool.rlcompat]: {', '.join(sorted(unknown))}; known keys: {', '.join(sorted(_KEYS))}"
        )

    def strings(key: str) -> tuple[str, ...] | None:
        value = table.get(key)
        if value is None:
            return None
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ConfigError(f"{config_file}: [tool.rlcompat] {key} must be a list of strings")
        return tuple(value)

    def boolean(key: str) -> bool | None:
        value = table.get(key)
        if value is not None and not isinstance(value, bool):
            raise ConfigError(f"{config_file}: [tool.rlcompat] {key} must be true or false")
        return value

    target = table.get("target")
    if target is not None and not isinstance(target, str):
        raise ConfigError(f'{config_file}: [tool.rlcompat] target must be a string such as "sm61"')
    pfi = table.get("per-file-ignores", {})
    if not isinstance(pfi, dict):
        raise ConfigError(f"{config_file}: [tool.rlcompat] per-file-ignores must be a table of pattern = [codes]")
    from rlcompat.findings import SEVERITIES

    fail_on = table.get("fail-on", "warning")
    if fail_on not in SEVERITIES:
        raise ConfigError(f'{config_file}: [tool.rlcompat] fail-on must be "error" or "warning", not {fail_on!r}')
    select = strings("select")
    extend = strings("extend-select") or ()
    base = Options()
    return Options(
        target=target,
        select=tuple(s.upper() for s in (select or base.select)) + tuple(s.upper() for s in extend),
        ignore=tuple(s.upper() for s in strings("ignore") or ()),
        exclude=strings("exclude") or base.exclude,
        extend_exclude=strings("extend-exclude") or (),
        per_file_ignores={k: tuple(c.upper() for c in (v if isinstance(v, list) else [v])) for k, v in pfi.items()},
        respect_gitignore=boolean("respect-gitignore") if boolean("respect-gitignore") is not None else True,
        unsafe_fixes=bool(boolean("unsafe-fixes")),
        force_exclude=bool(boolean("force-exclude")),
        fail_on=fail_on,
        cache_dir=table.get("cache-dir", base.cache_dir),
        root=str(Path(config_file).parent),
        config_file=config_file,
    )
