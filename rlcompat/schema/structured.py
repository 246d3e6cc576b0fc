"""Dataclass schemas read with `ast`: OmegaConf structured configs (`OmegaConf.structured(PPOConfig())`) and the
dataclasses HfArgumentParser/TrlParser turn into options. Nothing of the tree is imported.

A field is a key; a field whose type (or `default_factory`) is another dataclass of the tree is a mapping whose keys
are that class's fields; a field typed `dict`/`Dict[...]`/`Any` is a free mapping (`KeySchema.open_maps`). A class
the tree does not define, or one inheriting from a class it cannot find, raises `SchemaUnread`.
"""

from __future__ import annotations

import ast
import os
import re
from dataclasses import dataclass

from rlcompat.schema import KeySchema, SchemaUnread

_FREE = {"dict", "Dict", "Any", "DictConfig", "Mapping", "MutableMapping"}
_MAX_DEPTH = 20


def dataclass_keys(root: str, module_file: str, class_name: str, system: str = "structured") -> KeySchema:
    """The keys of dataclass `class_name`, found in `module_file` (or imported there from the tree at `root`)."""
    reader = _Reader(os.path.abspath(root))
    keys: set[str] = set()
    open_maps: set[str] = set()
    reader.fields(os.path.abspath(module_file), class_name, "", keys, open_maps, 0)
    shown = "./" + os.path.relpath(module_file, root).replace(os.sep, "/")
    return KeySchema(system, f"{shown} ({class_name})", frozenset(keys), frozenset(open_maps))


def dataclass_fields(root: str, module_file: str, class_name: str) -> dict[str, str | None]:
    """Each field of dataclass `class_name` (its bases' first, as `dataclasses` orders them) -> its default as
    written (`True`, `'flash_attention_2'`, `field(default="bf16")` -> `'bf16'`), None where it has none or one that
    is computed (`default_factory`, a call)."""
    reader = _Reader(os.path.abspath(root))
    out: dict[str, str | None] = {}
    reader.defaults(os.path.abspath(module_file), class_name, out, 0)
    return out


def parser_schema(root: str, module_file: str, classes: tuple[str, ...]) -> KeySchema:
    """The options an HfArgumentParser/TrlParser over `classes` takes (`--field`), from those of the classes the tree
    defines; a class it imports from elsewhere (TRL's GRPOConfig) leaves the schema incomplete."""
    read, complete = each_parser_class(classes, lambda name: dataclass_fields(root, module_file, name))
    defaults: dict[str, str | None] = {}
    for fields in read.values():
        defaults.update(fields)
    shown = "./" + os.path.relpath(module_file, root).replace(os.sep, "/")
    return KeySchema("argparse", f"{shown} ({', '.join(read) or 'no dataclass of the tree'})", frozenset(defaults),
                     complete=complete, defaults=tuple(sorted(defaults.items())))


def each_parser_class(classes: tuple[str, ...], read) -> tuple[dict, bool]:
    """`read(name)` for each dataclass a parser is built over, by name, for those the tree defines, and whether that
    is all of them: one it imports from elsewhere (TRL's GRPOConfig) raises SchemaUnread, and the parser's options
    are then known only in part."""
    out, complete = {}, True
    for name in classes:
        try:
            out[name] = read(name)
        except SchemaUnread:
            complete = False
    return out, complete


@dataclass(frozen=True)
class FieldDefault:
    """One field of a dataclass the tree defines, with its default as written and where."""

    name: str
    default: str | None  # as `_default_text` gives it: `True`, `'flash_attention_2'`; None: none or computed
    annotation: str  # the annotation's source: `bool`, `Optional[str]`, `Literal['bf16', 'fp32']`
    owner: str  # the class that declares it
    file: str  # absolute
    line: int


def parses(annotation: str, value: str) -> bool | None:
    """Whether HfArgumentParser takes `value` for a field of this annotation (transformers/hf_argparser.py [S156]): a
    `bool` through `string_to_bool`, a `Literal[...]` only its choices, a `str` anything; None where the annotation
    is not one of those (the parser's type function decides, which is not read here)."""
    plain = re.sub(r"^(?:typing\.)?Optional\[(.*)\]$", r"\1", annotation.strip())
    plain = re.sub(r"^(.*?)\s*\|\s*None$", r"\1", plain)
    if plain == "bool":
        return value.lower() in BOOL_WORDS
    if plain == "str":
        return True
    m = re.fullmatch(r"(?:typing\.)?Literal\[(.*)\]", plain)
    if m:
        try:
            choices = ast.literal_eval(f"[{m.group(1)}]")
        except (SyntaxError, ValueError):
            return None
        return value in [str(c) for c in choices]
    return None


# transformers/hf_argparser.py `string_to_bool` (:36-46): the words a bool field takes
BOOL_WORDS = frozenset({"yes", "true", "t", "y", "1", "no", "false", "f", "n", "0"})


def field_defaults(root: str, module_file: str, class_name: str) -> list[FieldDefault]:
    """The fields of dataclass `class_name` with their defaults and lines, bases first as `dataclasses` orders them (a
    subclass's field replaces its base's). Bases the tree does not define are skipped: their fields are not the tree's
    (TRL's GRPOConfig); the class's own fields still are. Raises SchemaUnread where the class is not in the tree."""
    reader = _Reader(os.path.abspath(root))
    out: dict[str, FieldDefault] = {}
    reader.lines(os.path.abspath(module_file), class_name, out, 0)
    return list(out.values())


def _parse(path: str) -> ast.Module:
    try:
        with open(path, "rb") as fh:
            return ast.parse(fh.read(), filename=path)
    except (OSError, SyntaxError, ValueError) as exc:
        raise SchemaUnread(f"{path}: cannot be read as Python ({type(exc).__name__})") from None


def _name(node: ast.AST | None) -> str:
    """The last name of an annotation or call target: `Optional[ActorConfig]` -> inner names are handled by callers."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value.strip("'\"")
    return ""



def _fields_of(node: ast.ClassDef):
    """The class body's annotated names that dataclasses and OmegaConf read as fields (a `ClassVar` is not one)."""
    for stmt in node.body:
        if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and not _is_class_var(stmt.annotation):
            yield stmt


def _is_class_var(annotation: ast.AST) -> bool:
    """`ClassVar` or `ClassVar[int]`: a class attribute, not a field the dataclass (or OmegaConf) reads."""
    if isinstance(annotation, ast.Subscript):
        annotation = annotation.value
    return _name(annotation) == "ClassVar"


class _Reader:
    """One read of a schema: each file is parsed once while it lasts, and no tree outlives it (a scan keeps one
    file's syntax tree alive at a time: tests/test_chunks.py)."""

    def __init__(self, root: str) -> None:
        self.root = root
        self._trees: dict[str, ast.Module] = {}

    def parse(self, path: str) -> ast.Module:
        if path not in self._trees:
            self._trees[path] = _parse(path)
        return self._trees[path]

    def find(self, module_file: str, name: str) -> tuple[str, ast.ClassDef] | None:
        """The class `name` as seen from `module_file`: defined there, or imported from a module of the tree."""
        tree = self.parse(module_file)
        for node in tree.body:
            if isinstance(node, ast.ClassDef) and node.name == name:
                return module_file, node
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module is not None or node.level):
                for alias in node.names:
                    if (alias.asname or alias.name) != name:
                        continue
                    target = self.module_path(module_file, node.module or "", node.level)
                    if target is not None:
                        found = self.find(target, alias.name)
                        if found is not None:
                            return found
        return None

    def module_path(self, importer: str, module: str, level: int) -> str | None:
        if level:
            base = os.path.dirname(importer)
            for _ in range(level - 1):
                base = os.path.dirname(base)
        else:
            base = self.root
        parts = [p for p in module.split(".") if p]
        for candidate in (os.path.join(base, *parts) + ".py", os.path.join(base, *parts, "__init__.py")):
            if os.path.isfile(candidate):
                return candidate
        return None

    def _class_at(self, module_file: str, class_name: str, depth: int) -> tuple[str, ast.ClassDef]:
        """The file and node of the class a dataclass walk reaches at `depth`, or SchemaUnread saying why not."""
        if depth > _MAX_DEPTH:
            raise SchemaUnread(f"{class_name}: dataclasses nest deeper than {_MAX_DEPTH}")
        found = self.find(module_file, class_name)
        if found is None:
            raise SchemaUnread(f"{os.path.relpath(module_file, self.root)}: no class {class_name} in the tree")
        return found

    def inherited_fields(self, module_file: str, class_name: str, depth: int, strict: bool,
                         skip: tuple[str, ...] = ("object", "Generic")):
        """(file, class, field statement, depth of that class) for each field of `class_name`, its bases' first as
        `dataclasses` orders them. A base named in `skip` is passed over; one the tree does not define too, or with
        `strict` it raises SchemaUnread (its fields are not known)."""
        where, node = self._class_at(module_file, class_name, depth)
        for base in node.bases:
            base_name = _name(base)
            if not base_name or base_name in skip:
                continue
            if self.find(where, base_name):
                yield from self.inherited_fields(where, base_name, depth + 1, strict, skip)
            elif strict:
                raise SchemaUnread(f"{class_name} subclasses {base_name}, which the tree does not define")
        for stmt in _fields_of(node):
            yield where, node, stmt, depth

    def fields(self, module_file: str, class_name: str, prefix: str, keys: set, open_maps: set, depth: int) -> None:
        for where, _node, stmt, level in self.inherited_fields(module_file, class_name, depth, strict=False,
                                                               skip=("object", "BaseConfig", "Generic")):
            key = f"{prefix}.{stmt.target.id}" if prefix else stmt.target.id
            keys.add(key)
            nested = self._nested_class(where, stmt)
            if nested is not None:
                self.fields(where, nested, key, keys, open_maps, level + 1)
            elif self._free(stmt.annotation):
                open_maps.add(key)

    def defaults(self, module_file: str, class_name: str, out: dict, depth: int) -> None:
        for _where, _node, stmt, _level in self.inherited_fields(module_file, class_name, depth, strict=True):
            out[stmt.target.id] = _default_text(stmt.value)

    def lines(self, module_file: str, class_name: str, out: dict, depth: int) -> None:
        for where, node, stmt, _level in self.inherited_fields(module_file, class_name, depth, strict=False):
            out[stmt.target.id] = FieldDefault(stmt.target.id, _default_text(stmt.value), ast.unparse(stmt.annotation),
                                               node.name, where, stmt.lineno)

    def _nested_class(self, where: str, stmt: ast.AnnAssign) -> str | None:
        candidates = []
        if isinstance(stmt.value, ast.Call) and _name(stmt.value.func) == "field":
            for kw in stmt.value.keywords:
                if kw.arg == "default_factory":
                    candidates.append(_name(kw.value))
        candidates.extend(_names_in(stmt.annotation))
        for name in candidates:
            if name and name not in _FREE and name[:1].isupper() and self.find(where, name) is not None:
                return name
        return None

    @staticmethod
    def _free(annotation: ast.AST) -> bool:
        return any(n in _FREE for n in _names_in(annotation))


def _names_in(annotation: ast.AST) -> list[str]:
    """Type names in an annotation: `Optional[ActorConfig]` -> [Optional, ActorConfig]; `"ActorConfig"` too."""
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
        try:
            annotation = ast.parse(annotation.value, mode="eval").body
        except SyntaxError:
            return []
    return [_name(n) for n in ast.walk(annotation) if isinstance(n, (ast.Name, ast.Attribute))]


def _default_text(value: ast.AST | None) -> str | None:
    """A field's default as written, where it is a literal: `= True`, `= field(default="bf16")`."""
    if isinstance(value, ast.Call) and _name(value.func) == "field":
        value = next((kw.value for kw in value.keywords if kw.arg == "default"), None)
    if isinstance(value, ast.Constant):
        return repr(value.value) if isinstance(value.value, str) else str(value.value)
    return None
