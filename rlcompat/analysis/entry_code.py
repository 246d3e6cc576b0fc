"""What a launch command's own Python entry program writes in its code: bf16 that no option of the command changes.

A project's trainer may write the precision in its code instead of reading it from an option: open-instruct's
grpo_fast.py builds its DeepSpeed config with `get_train_ds_config(..., bf16=True)` and loads the policy with
`from_pretrained(..., dtype=torch.bfloat16)`; the vLLM engines of an OpenRLHF-derived package are built by a helper
that passes `dtype="bfloat16"` to every engine whatever the flags say (or takes a `vllm_dtype="bfloat16"` default the
entry never overrides). A scan of the launch script alone sees none of it, and the command is where the user starts
it, so RLC124 reports it there, citing the file:line. The tree's files are read with `ast` (nothing is imported or
run); a call is followed into the tree's own modules through the entry's imports, two re-exports deep at most, and
the builder's call may be one module away (the controller class of an OpenRLHF-derived package, which the entry
imports and calls, builds the engines).

The same program may force an attention implementation under one of its own switches (an OpenRLHF-derived CLI's
`if agent_config.get("packing_samples"): agent_config["attn_implementation"] = "flash_attention_2"`): where the
command passes that switch, the forced value is in force whatever its attention option says (RLC211 reports it at the
switch). `forced_values` finds such assignments.
"""

from __future__ import annotations

import ast
import os
from dataclasses import dataclass

from rlcompat.analysis.confighelpers import is_bf16
from rlcompat.analysis.tree_helpers import module_file  # the tree's own file of a dotted module
from rlcompat.lang.settings import ConfigView

# Keywords whose bf16 value is the precision a model is loaded or trained in; `bf16=True` is DeepSpeed's (and
# transformers') switch. Names are matched exactly: `mixed_precision_dtype=` of another API is not claimed.
DTYPE_KEYWORDS = frozenset({"dtype", "torch_dtype", "param_dtype"})
SWITCH_KEYWORDS = frozenset({"bf16"})
# Tests that choose bf16 only where the card has it: a value under them is no hard-coded bf16.
CAPABILITY_TESTS = ("get_device_capability", "is_bf16_supported", "bf16_supported", "compute_capability")
MAX_HOPS = 2


@dataclass(frozen=True)
class Site:
    """A place in the tree's code that writes bf16 for the run."""

    file: str  # relative to the tree's root
    line: int
    what: str  # `bf16=True`, `dtype=torch.bfloat16`, `vllm_dtype="bfloat16"` (a default the call leaves)

    def __str__(self) -> str:
        return f"{self.what} at {self.file}:{self.line}"


@dataclass(frozen=True)
class EntryCode:
    entry: str  # the entry program, relative to the tree's root
    learner: tuple[Site, ...]  # bf16 the entry's own calls write (the trained model, its DeepSpeed config)
    engines: Site | None  # the vLLM engines' bf16 in the builder the entry calls
    engines_guarded: bool  # the builder is called under an `if` (a count of engines that may be 0)


def entry_code(view: ConfigView, ctx) -> EntryCode | None:
    """The bf16 the tree's own entry program of this command writes in its code; None where the command runs no
    Python program of the tree or the program writes none. Asked once per command."""
    if view.kind != "command" or view.is_verl or not view.command_words:
        return None
    memo = ctx.memo.setdefault("entry_code", {})
    key = (view.anchor.start if view.anchor else -1, view.command_words)
    if key not in memo:
        memo[key] = _entry_code(view, ctx)
    return memo[key]


def _entry_code(view: ConfigView, ctx) -> EntryCode | None:
    program = _entry_program(view, ctx)
    if program is None:
        return None
    root, entry, tree = program
    reads = [entry]
    parents = _parents(tree)
    learner = tuple(Site(_rel(entry, root), line, what) for line, what in _bf16_keywords(tree, parents))
    imports = _imports(tree)
    engines, guarded = _engines(tree, parents, imports, root, reads)
    if engines is None:
        engines, guarded = _engines_of_callees(tree, imports, root, reads)
    ctx.record_reads(reads)
    if not learner and engines is None:
        return None
    return EntryCode(_rel(entry, root), learner, engines, guarded)


def _entry_program(view: ConfigView, ctx) -> tuple[str, str, ast.Module] | None:
    """(the tree's root, the entry program's path, its parsed module) of the Python program of the tree that the
    command runs; None where it runs none. Parsed once per command of the file (RLC124 and RLC211 both ask): the
    file's memo goes when the file is done, so no tree outlives its file."""
    if view.kind != "command" or view.is_verl or not view.command_words or not ctx.path or not os.path.isfile(ctx.path):
        return None
    memo = ctx.memo.setdefault("entry_program", {})
    key = (view.anchor.start if view.anchor else -1, view.command_words)
    if key not in memo:
        memo[key] = _read_entry_program(view, ctx.path)
    return memo[key]


def _read_entry_program(view: ConfigView, path: str) -> tuple[str, str, ast.Module] | None:
    from rlcompat.knowledge.identity import tree_root
    from rlcompat.schema import tree as launched

    launch = launched.read_command(view.command_words)
    if launch is None:
        return None
    root = tree_root(path)
    entry = launched.module_file(root, None, launch, os.path.dirname(os.path.abspath(path)), search_up=True)
    tree = _parse(entry) if entry else None
    return (root, entry, tree) if tree is not None else None


def _parse(path: str) -> ast.Module | None:
    try:
        with open(path, "rb") as fh:
            return ast.parse(fh.read(), filename=path)
    except (OSError, SyntaxError, ValueError):
        return None


def _rel(path: str, root: str) -> str:
    return os.path.relpath(path, root).replace(os.sep, "/")


def _parents(tree: ast.AST) -> dict[ast.AST, ast.AST]:
    return {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}


def _spells_bf16(node: ast.AST) -> bool:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return is_bf16(node.value)
    return isinstance(node, ast.Attribute) and is_bf16(ast.unparse(node))


def _capability_guarded(node: ast.AST, parents: dict) -> bool:
    while node in parents:
        node = parents[node]
        if isinstance(node, (ast.If, ast.IfExp)) and any(t in ast.unparse(node.test) for t in CAPABILITY_TESTS):
            return True
    return False


def _bf16_keywords(tree: ast.Module, parents: dict) -> list[tuple[int, str]]:
    """Literal bf16 keywords of the calls in the entry module, and dtype entries of its keyword-arguments dicts
    (`pipeline(..., model_kwargs={"torch_dtype": torch.bfloat16})`: the model the pipeline loads), outside capability
    checks."""
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            for kw in node.keywords:
                literal_true = isinstance(kw.value, ast.Constant) and kw.value.value is True
                if (kw.arg in SWITCH_KEYWORDS and literal_true) or (kw.arg in DTYPE_KEYWORDS and _spells_bf16(kw.value)):
                    if not _capability_guarded(node, parents):
                        out.append((kw.value.lineno, f"{kw.arg}={ast.unparse(kw.value)}"))
        elif isinstance(node, ast.Dict):
            for key, value in zip(node.keys, node.values):
                named = isinstance(key, ast.Constant) and key.value in DTYPE_KEYWORDS
                if named and _spells_bf16(value) and not _capability_guarded(node, parents):
                    out.append((value.lineno, f"{ast.unparse(key)}: {ast.unparse(value)}"))
    return out


def _guarded(call: ast.Call, parents: dict) -> bool:
    """Whether the call runs only under a test (`if args.vllm_num_engines > 0:`)."""
    node = call
    while node in parents:
        node = parents[node]
        if isinstance(node, (ast.If, ast.IfExp)):
            return True
    return False


def _engines(tree: ast.Module, parents: dict, imports: dict, root: str, reads: list) -> tuple[Site | None, bool]:
    """The bf16 of the engines a builder called in `tree` writes, and whether that call is under a test."""
    for call in (n for n in ast.walk(tree) if isinstance(n, ast.Call)):
        found = _builder(call, imports, root, reads)
        if found is None:
            continue
        builder, file = found
        site = _engine_bf16(builder, call, _rel(file, root))
        if site is not None:
            return site, _guarded(call, parents)
    return None, False


def _engines_of_callees(tree: ast.Module, imports: dict, root: str, reads: list) -> tuple[Site | None, bool]:
    """The engines built one module further: the entry calls a name it imports from a module of the tree (a
    controller class, a `train()` function) whose module calls the builder. Only names the entry calls are followed,
    so a module it imports for a constant says nothing."""
    called = {n.func.id for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}
    modules = dict.fromkeys(module for name, (module, attr) in imports.items() if attr and name in called)
    for module in modules:
        path = module_file(root, module)
        callee = _parse(path) if path else None
        if callee is None:
            continue
        reads.append(path)
        site, guarded = _engines(callee, _parents(callee), _imports(callee), root, reads)
        if site is not None:
            return site, guarded
    return None, False


def _imports(tree: ast.Module) -> dict[str, tuple[str, str]]:
    """Local name -> (module, attribute) for `from m import a [as b]`; (module, "") for `import m [as b]`."""
    out: dict[str, tuple[str, str]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for alias in node.names:
                out[alias.asname or alias.name] = (node.module, alias.name)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                bound = alias.asname or alias.name.split(".")[0]
                out[bound] = (alias.name if alias.asname else bound, "")
    return out


def _builder(call: ast.Call, imports: dict, root: str, reads: list) -> tuple[ast.FunctionDef, str] | None:
    """The tree's own function a call of the entry runs, where its module imports vLLM."""
    func = call.func
    if isinstance(func, ast.Name) and func.id in imports and imports[func.id][1]:
        module, name = imports[func.id]
    elif isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id in imports:
        module, attr = imports[func.value.id]
        module, name = (f"{module}.{attr}" if attr else module), func.attr
    else:
        return None
    return _find_def(root, module, name, reads, MAX_HOPS)


def _find_def(root: str, module: str, name: str, reads: list, hops: int) -> tuple[ast.FunctionDef, str] | None:
    path = module_file(root, module)
    tree = _parse(path) if path else None
    if tree is None:
        return None
    reads.append(path)
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == name:
            return (node, path) if _imports_vllm(tree) else None
    if hops == 0:
        return None
    package = module if path.endswith("__init__.py") else module.rpartition(".")[0]
    for node in tree.body:  # a re-export: `from .vllm_engine import create_vllm_engines`
        if isinstance(node, ast.ImportFrom) and any((a.asname or a.name) == name for a in node.names):
            source = node.module or ""
            if node.level:
                parts = package.split(".")
                source = ".".join(parts[:len(parts) - node.level + 1] + ([source] if source else []))
            original = next(a.name for a in node.names if (a.asname or a.name) == name)
            return _find_def(root, source, original, reads, hops - 1)
    return None


def _imports_vllm(tree: ast.Module) -> bool:
    for node in ast.walk(tree):
        if isinstance(node, ast.Import) and any(a.name.split(".")[0] == "vllm" for a in node.names):
            return True
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "vllm" and not node.level:
            return True
    return False


def _engine_bf16(builder: ast.FunctionDef, call: ast.Call, file: str) -> Site | None:
    """bf16 the engine builder writes: a `dtype=` bf16 literal of a call in its body, or a dtype parameter whose
    bf16 default the entry's call leaves."""
    for node in ast.walk(builder):
        if isinstance(node, ast.Call):
            for kw in node.keywords:
                if kw.arg in DTYPE_KEYWORDS and _spells_bf16(kw.value):
                    return Site(file, kw.value.lineno, f"{kw.arg}={ast.unparse(kw.value)}")
    args = builder.args
    positional = args.posonlyargs + args.args
    defaults = list(zip(positional[len(positional) - len(args.defaults):], args.defaults))
    defaults += [(a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None]
    passed = {kw.arg for kw in call.keywords}
    for arg, default in defaults:
        if "dtype" not in arg.arg or arg.arg in passed or not _spells_bf16(default):
            continue
        if arg in positional and positional.index(arg) < len(call.args):
            continue  # given positionally
        return Site(file, default.lineno, f"{arg.arg}={ast.unparse(default)} (a default the call leaves)")
    return None


@dataclass(frozen=True)
class Forced:
    """A value the entry module assigns to a field under `if <switch>:` (its body, not its `else`)."""

    field: str
    value: str
    switches: frozenset[str]  # the names the enclosing tests read (`packing_samples`)
    where: str  # "pkg/cli/train.py:840", relative to the tree's root


def forced_values(view: ConfigView, ctx, fields: tuple[str, ...]) -> tuple[Forced, ...]:
    """Literal string values the command's entry program assigns to one of `fields` (`args.attn_implementation = ...`,
    `config["attn_implementation"] = ...`), or `True` to a switch among them (`args.flash_attn = True`, as "True"),
    inside the body of an `if` testing a name; () where the command runs no Python program of the tree."""
    program = _entry_program(view, ctx)
    if program is None:
        return ()
    root, entry, tree = program
    ctx.record_reads([entry])
    parents = _parents(tree)
    out = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Assign) or not isinstance(node.value, ast.Constant):
            continue
        if not isinstance(node.value.value, str) and node.value.value is not True:
            continue
        for assigned in node.targets:
            field = _field_name(assigned)
            if field in fields:
                switches = _switches_above(node, parents)
                if switches:
                    out.append(Forced(field, str(node.value.value), switches, f"{_rel(entry, root)}:{node.lineno}"))
    return tuple(out)


def _field_name(assigned: ast.AST) -> str:
    """The field an assignment's left side names: `args.x` or `config["x"]` -> "x"."""
    if isinstance(assigned, ast.Attribute):
        return assigned.attr
    if isinstance(assigned, ast.Subscript) and isinstance(assigned.slice, ast.Constant):
        return str(assigned.slice.value)
    return ""


def _switches_above(node: ast.AST, parents: dict) -> frozenset[str]:
    """The names read by the tests of the `if`s whose body holds `node` (not negated: `if not x:` chooses the other
    way)."""
    names: set[str] = set()
    while node in parents:
        parent = parents[node]
        if isinstance(parent, ast.If) and node in parent.body and not isinstance(parent.test, ast.UnaryOp):
            for part in ast.walk(parent.test):
                if isinstance(part, ast.Attribute):
                    names.add(part.attr)
                elif isinstance(part, ast.Constant) and isinstance(part.value, str) and part.value.isidentifier():
                    names.add(part.value)
                elif isinstance(part, ast.Name):
                    names.add(part.id)
        node = parent
    return frozenset(names)
