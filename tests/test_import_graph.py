"""The import graph of rlcompat/ and rules/ has no cycles, and no module reaches into another's private names.

Every import statement counts, those inside functions included (a function-level import hides a cycle, it does
not remove it); only `if TYPE_CHECKING:` blocks are left out, since they never run.
"""

from __future__ import annotations

import ast
from pathlib import Path


REPO = Path(__file__).resolve().parent.parent
ROOTS = {"rlcompat": REPO / "rlcompat", "rlcompat.rules": REPO / "rules"}


def _modules() -> dict[str, Path]:
    found = {}
    for package, root in ROOTS.items():
        for path in root.rglob("*.py"):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            name = ".".join([package, *parts])
            if package == "rlcompat" and name.startswith("rlcompat.rules"):
                continue
            found[name] = path
    return found


MODULES = _modules()


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _runtime_imports(tree: ast.AST):
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.If) and _is_type_checking(node):
            yield from (n for child in node.orelse for n in _runtime_imports_of(child))
            continue
        yield from _runtime_imports_of(node)


def _runtime_imports_of(node: ast.AST):
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        yield node
    elif isinstance(node, ast.If) and _is_type_checking(node):
        for child in node.orelse:
            yield from _runtime_imports_of(child)
    else:
        for child in ast.iter_child_nodes(node):
            yield from _runtime_imports_of(child)


def _absolute(module: str, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    is_package = MODULES[module].name == "__init__.py"
    base = module.split(".")
    base = base if is_package else base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _edges(module: str) -> list[tuple[str, str | None]]:
    """(imported module, name taken from it or None) for each runtime import of `module` inside the project."""
    tree = ast.parse(MODULES[module].read_text(encoding="utf-8"))
    out = []
    for node in _runtime_imports(tree):
        if isinstance(node, ast.Import):
            out.extend((alias.name, None) for alias in node.names if alias.name in MODULES)
            continue
        source = _absolute(module, node)
        if source not in MODULES:
            continue
        for alias in node.names:
            submodule = f"{source}.{alias.name}"
            out.append((submodule, None) if submodule in MODULES else (source, alias.name))
    return out


GRAPH = {module: _edges(module) for module in MODULES}


def _cycles() -> list[list[str]]:
    """Strongly connected components with more than one module, or a module importing itself (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target, _ in GRAPH[node]:
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1 or any(t == node for t, _ in GRAPH[node]):
                found.append(sorted(component))

    for module in sorted(GRAPH):
        if module not in index:
            visit(module)
    return found


def test_graph_sees_the_project():
    assert "rlcompat.pipeline.runner" in MODULES and "rlcompat.rules" in MODULES
    assert any(target == "rlcompat.rule" for target, _ in GRAPH["rlcompat.pipeline.runner"]) or any(
        "rlcompat.rule" in target for edges in GRAPH.values() for target, _ in edges
    )


def test_no_import_cycles():
    assert _cycles() == []


def _private_uses() -> list[str]:
    bad = []
    for module, edges in GRAPH.items():
        for source, name in edges:
            if name and name.startswith("_") and not name.startswith("__") and source != module:
                bad.append(f"{module} imports {source}.{name}")
    return sorted(bad)


def test_no_module_imports_another_modules_private_name():
    assert _private_uses() == []


def test_cycle_finder_finds_a_cycle(monkeypatch):
    monkeypatch.setitem(GRAPH, "a", [("b", None)])
    monkeypatch.setitem(GRAPH, "b", [("a", "x")])
    assert ["a", "b"] in _cycles()


def test_no_rule_imports_another_rule():
    """What rules share lives in their family's helpers.py or below rules/, never in another rule's file."""
    from rlcompat.rules.codes import CODES

    rule_modules = {f"rlcompat.rules.{location}" for location in CODES.values()}
    offenders = [f"{module} imports {target}" for module in rule_modules for target, _ in GRAPH[module]
                 if target in rule_modules]
    assert offenders == []


def test_front_ends_hold_no_rule_helper_library():
    """rlcompat/lang/ is front ends only: the rule helper libraries live in rlcompat/analysis/."""
    helpers = ("pyhelpers", "confighelpers", "deadkeys", "deadfields", "knowledgecheck", "pymodel")
    assert {f"rlcompat.analysis.{name}" for name in helpers} <= set(MODULES)
    assert not {f"rlcompat.lang.{name}" for name in helpers} & set(MODULES)


# Modules and packages that hold or read knowledge: the engine hands what a front end needs (rlcompat/lang/scanned.py).
FRAMEWORK_KNOWLEDGE = ("rlcompat.knowledge.verl_config", "rlcompat.knowledge.frameworks", "rlcompat.pipeline.scanned_file",
                       "rlcompat.knowledge", "rlcompat.rules")


def _front_ends_knowing_frameworks() -> list[str]:
    return sorted(f"{module} imports {target}" for module, edges in GRAPH.items() if module.startswith("rlcompat.lang.")
                  for target, _ in edges
                  if any(target == k or target.startswith(k + ".") for k in FRAMEWORK_KNOWLEDGE))


def test_front_ends_import_no_framework_knowledge_nor_rules():
    """A language knows no framework: rlcompat/lang/ imports neither knowledge modules nor rules/, not even inside a
    function; the engine resolves the knowledge for each file and hands it over."""
    assert _front_ends_knowing_frameworks() == []


def test_front_end_check_sees_a_function_level_knowledge_import(monkeypatch):
    monkeypatch.setitem(GRAPH, "rlcompat.lang.shell", GRAPH["rlcompat.lang.shell"] + [("rlcompat.knowledge.verl_config", None)])
    monkeypatch.setitem(GRAPH, "rlcompat.lang.yaml", GRAPH["rlcompat.lang.yaml"] + [("rlcompat.rules.codes", None)])
    assert _front_ends_knowing_frameworks() == ["rlcompat.lang.shell imports rlcompat.knowledge.verl_config",
                                                "rlcompat.lang.yaml imports rlcompat.rules.codes"]
    source = "def check():\n    from rlcompat.knowledge.verl_config import knowledge_of\n"
    assert [node.module for node in _runtime_imports(ast.parse(source))] == ["rlcompat.knowledge.verl_config"]


def test_private_name_check_sees_a_private_import(monkeypatch):
    monkeypatch.setitem(GRAPH, "rlcompat.lang.yaml", GRAPH["rlcompat.lang.yaml"] + [("rlcompat.pipeline.runner", "_size")])
    assert _private_uses() == ["rlcompat.lang.yaml imports rlcompat.pipeline.runner._size"]


def _module_names_bound(module: str, tree: ast.AST) -> dict[str, str]:
    """Names an import binds to a project module (`from rlcompat.lang import shell` -> shell, `import rlcompat.pipeline.runner
    as e` -> e, `import rlcompat.pipeline.runner` -> rlcompat), imports inside functions included."""
    bound: dict[str, str] = {}
    for node in _runtime_imports(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname and alias.name in MODULES:
                    bound[alias.asname] = alias.name
                elif not alias.asname and alias.name.split(".")[0] == "rlcompat":
                    bound["rlcompat"] = "rlcompat"
            continue
        source = _absolute(module, node)
        for alias in node.names:
            if f"{source}.{alias.name}" in MODULES:
                bound[alias.asname or alias.name] = f"{source}.{alias.name}"
    return bound


def _module_of(node: ast.expr, bound: dict[str, str]) -> str | None:
    """The project module an expression names (`shell`, `rlcompat.lang.shell`), or None."""
    if isinstance(node, ast.Name):
        return bound.get(node.id)
    if isinstance(node, ast.Attribute):
        outer = _module_of(node.value, bound)
        if outer is not None and f"{outer}.{node.attr}" in MODULES:
            return f"{outer}.{node.attr}"
    return None


def _private_attribute_uses(module: str, source: str) -> list[str]:
    tree = ast.parse(source)
    bound = _module_names_bound(module, tree)
    out = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Attribute) or not node.attr.startswith("_") or node.attr.startswith("__"):
            continue
        owner = _module_of(node.value, bound)
        if owner is not None and owner != module and f"{owner}.{node.attr}" not in MODULES:
            out.append(f"{module} uses {owner}.{node.attr}")
    return sorted(out)


def test_no_module_uses_another_modules_private_name_by_attribute():
    """`shell._commands(...)` reaches into a module as much as `from shell import _commands` does."""
    bad = [use for module, path in sorted(MODULES.items())
           for use in _private_attribute_uses(module, path.read_text(encoding="utf-8"))]
    assert bad == []


def test_private_attribute_check_sees_module_attribute_access():
    source = ("from rlcompat.lang import shell\nimport rlcompat.pipeline.runner as eng\nimport rlcompat.knowledge.targets\n\n"
              "def f(x):\n    from rlcompat import nvml\n"
              "    return shell._commands(x), eng._size, rlcompat.knowledge.targets._table, nvml._read, x._private, shell.parse\n")
    assert _private_attribute_uses("rlcompat.verify.launch_script", source) == [
        "rlcompat.verify.launch_script uses rlcompat.knowledge.targets._table",
        "rlcompat.verify.launch_script uses rlcompat.lang.shell._commands",
        "rlcompat.verify.launch_script uses rlcompat.nvml._read",
        "rlcompat.verify.launch_script uses rlcompat.pipeline.runner._size",
    ]
    # a module's own private names, and an object that is no module, are its business
    assert _private_attribute_uses("rlcompat.lang.shell", "from rlcompat.lang import shell\nshell._commands\n") == []


# The layers above the front ends: a front end is run by them and is handed what it needs (rlcompat/lang/scanned.py);
# it imports nothing of the pipeline, not even its text helpers (line positions live in lang/textpos.py), nor of the
# analyses rules share (what the narrowing asks of an expression's role is lang/pyroles.py).
ABOVE_FRONT_ENDS = ("rlcompat.pipeline", "rlcompat.analysis", "rlcompat.cli", "rlcompat.report")


def _front_ends_reaching_up() -> list[str]:
    return sorted(f"{module} imports {target}" for module, edges in GRAPH.items() if module.startswith("rlcompat.lang.")
                  for target, _ in edges
                  if any(target == k or target.startswith(k + ".") for k in ABOVE_FRONT_ENDS))


def test_front_ends_import_neither_the_engine_nor_the_commands_nor_the_reports():
    assert _front_ends_reaching_up() == []


def test_layer_check_sees_a_front_end_importing_the_engine(monkeypatch):
    monkeypatch.setitem(GRAPH, "rlcompat.lang.notebook", GRAPH["rlcompat.lang.notebook"] + [("rlcompat.pipeline.runner", None)])
    monkeypatch.setitem(GRAPH, "rlcompat.lang.yaml", GRAPH["rlcompat.lang.yaml"] + [("rlcompat.report.text", "x")])
    monkeypatch.setitem(GRAPH, "rlcompat.lang.shell", GRAPH["rlcompat.lang.shell"] + [("rlcompat.cli.common", None)])
    assert {"rlcompat.lang.notebook imports rlcompat.pipeline.runner", "rlcompat.lang.shell imports rlcompat.cli.common",
            "rlcompat.lang.yaml imports rlcompat.report.text"} <= set(_front_ends_reaching_up())



def _contract_bypasses() -> list[str]:
    from rlcompat import contract

    return sorted(f"{module} takes {name} from {target}" for module, edges in GRAPH.items()
                  if module.startswith("rlcompat.rules.") for target, name in edges
                  if name in contract.__all__ and target != "rlcompat.contract")


def test_rules_take_the_rule_contract_from_one_module():
    """A rule file imports the rule kinds, contexts, examples and fix types from rlcompat.contract only, so that it
    names none of the machinery that defines them (the front ends, doctor, the pipeline)."""
    assert _contract_bypasses() == []


def test_rule_contract_check_sees_a_kind_taken_from_its_front_end(monkeypatch):
    monkeypatch.setitem(GRAPH, "rlcompat.rules.dtype.x", [("rlcompat.lang.python", "PythonRule"),
                                                        ("rlcompat.contract", "Bad")])
    assert _contract_bypasses() == ["rlcompat.rules.dtype.x takes PythonRule from rlcompat.lang.python"]


# What a rule file may import of rlcompat besides the contract: the knowledge, the analyses rules of several families
# share, and the catalog's own helpers.
RULE_IMPORTS = ("rlcompat.contract", "rlcompat.knowledge", "rlcompat.analysis", "rlcompat.rules")


def _rules_reaching_into_machinery() -> list[str]:
    return sorted(f"{module} imports {target}" for module, edges in GRAPH.items()
                  if module.startswith("rlcompat.rules.") for target, _ in edges
                  if target.startswith("rlcompat.")
                  and not any(target == k or target.startswith(k + ".") for k in RULE_IMPORTS))


def test_rules_name_no_machinery():
    """A rule reads the front ends, doctor and the pipeline only through the contract (the parts it needs are
    gathered there), so that moving a piece of machinery never touches a rule file."""
    assert _rules_reaching_into_machinery() == []


def test_machinery_check_sees_a_rule_importing_a_front_end(monkeypatch):
    monkeypatch.setitem(GRAPH, "rlcompat.rules.dtype.x", [("rlcompat.lang.pyspeed.chunks", "chunks"),
                                                        ("rlcompat.knowledge.targets", "Target")])
    assert _rules_reaching_into_machinery() == ["rlcompat.rules.dtype.x imports rlcompat.lang.pyspeed.chunks"]


# The Python front end's speed machinery, as seen from outside rlcompat/lang/: its switch and its hooks, nothing else.
PYSPEED_DOORS = ("rlcompat.lang.pyspeed", "rlcompat.lang.pyspeed.hooks")


def _speed_machinery_reached() -> list[str]:
    return sorted(f"{module} imports {target}" for module, edges in GRAPH.items()
                  if not module.startswith("rlcompat.lang.") for target, _ in edges
                  if target.startswith("rlcompat.lang.pyspeed") and target not in PYSPEED_DOORS)


def test_the_speed_machinery_is_the_python_front_ends_private_detail():
    """The pipeline, the CLI and the rule catalog reach lang/pyspeed only through its `plain` switch and `hooks`."""
    assert _speed_machinery_reached() == []


def test_speed_machinery_check_sees_the_pipeline_importing_a_module_of_it(monkeypatch):
    monkeypatch.setitem(GRAPH, "rlcompat.pipeline.catalog", GRAPH["rlcompat.pipeline.catalog"]
                        + [("rlcompat.lang.pyspeed.gate", "holds")])
    assert _speed_machinery_reached() == ["rlcompat.pipeline.catalog imports rlcompat.lang.pyspeed.gate"]
