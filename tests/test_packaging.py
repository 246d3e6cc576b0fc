"""The package imports the same way from a wheel as from the editable install, and the CLI starts light."""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def test_scan_imports_neither_torch_nor_verl(tmp_path):
    (tmp_path / "m.py").write_text("import torch\nx = t.to(torch.bfloat16)\n")
    code = (
        "import sys, json\n"
        "from rlcompat.cli import main\n"
        "sys.argv = ['rlcompat', 'scan', sys.argv[1], '--target', 'sm61', '--output-format', 'json']\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "heavy = sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'verl', 'transformers', 'triton'))\n"
        "print(json.dumps(heavy), file=sys.stderr)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert json.loads(proc.stdout)["summary"]["findings"] == 1
    assert json.loads(proc.stderr.strip().splitlines()[-1]) == []


@pytest.mark.parametrize("args", [["scan", "m.py"], ["fix", "--diff", "m.py"], ["doctor", "--output-format", "json"]])
def test_scan_fix_and_doctor_never_load_the_language_server(tmp_path, args):
    """pygls is the `lsp` extra's: only `rlcompat server` loads it, so every other command works without it."""
    (tmp_path / "m.py").write_text("import torch\nx = t.to(torch.bfloat16)\n")
    code = (
        "import sys, json\n"
        "from rlcompat.cli import main\n"
        "sys.argv = ['rlcompat', *sys.argv[1:], '--target', 'sm61']\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in ('pygls', 'lsprotocol', 'cattrs'))), file=sys.stderr)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert json.loads(proc.stderr.strip().splitlines()[-1]) == []


COMMAND_MODULES = ["rlcompat.doctor.command", "rlcompat.verify.command", "rlcompat.cli.matrix",
                   "rlcompat.server.command", "rlcompat.installed.command", "rlcompat.cli.app"]


@pytest.mark.parametrize("command_module", COMMAND_MODULES[:-1])
def test_a_command_module_loads_no_other_command(command_module):
    # Commands share rlcompat.cli.common; the cli package's __init__ must not pull the app (and with it every command).
    code = (
        f"import sys, json, {command_module}, rlcompat.cli.common\n"
        f"print(json.dumps([m for m in {COMMAND_MODULES!r} if m in sys.modules]))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert json.loads(proc.stdout) == [command_module]


def _modules_after_scan(args: list[str], cwd: Path, prefix: str = "libcst.") -> list[str]:
    code = (
        "import sys, json\n"
        "from rlcompat.cli import main\n"
        "prefix = sys.argv[1]\n"
        "sys.argv = ['rlcompat', 'scan', *sys.argv[2:]]\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        # `libcst` itself may be the unloaded stand-in of rlcompat.lang.pyspeed.lazy; its submodules are the real thing.
        "print(json.dumps(sorted(m for m in sys.modules if m.startswith(prefix))), file=sys.stderr)\n"
    )
    args = [prefix, *args]
    proc = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=120, cwd=cwd)
    return json.loads(proc.stderr.strip().splitlines()[-1])


def test_libcst_is_loaded_only_when_a_file_needs_parsing(tmp_path):
    """A pre-commit run on files without a trigger, or a cached re-scan, pays nothing for LibCST's import."""
    (tmp_path / "pyproject.toml").write_text('[tool.rlcompat]\ntarget = "sm61"\n')
    (tmp_path / "plain.py").write_text("import os\nprint(os.getcwd())\n")
    (tmp_path / "hazard.py").write_text("import torch\nx = t.to(torch.bfloat16)\n")
    assert _modules_after_scan(["plain.py", "--no-cache"], tmp_path) == []
    assert "libcst._nodes.module" in _modules_after_scan(["hazard.py"], tmp_path)  # parsed, and cached now
    assert _modules_after_scan(["hazard.py"], tmp_path) == []


def test_a_parallel_scan_of_a_tree_loads_libcst_once_before_its_workers_fork(tmp_path):
    """Forked workers share the parent's LibCST instead of each loading it; a parallel run of a commit's few files
    (under `PRELOAD_MIN_FILES`) still loads nothing when none needs parsing."""
    from rlcompat.pipeline.runner import PRELOAD_MIN_FILES

    (tmp_path / "pyproject.toml").write_text('[tool.rlcompat]\ntarget = "sm61"\n')
    few = tmp_path / "few"
    few.mkdir()
    for i in range(PRELOAD_MIN_FILES - 1):
        (few / f"m{i}.py").write_text("import os\nprint(os.getcwd())\n")
    assert _modules_after_scan(["few", "--no-cache", "-j", "2"], tmp_path) == []
    (few / "hazard.py").write_text("import torch\nx = t.to(torch.bfloat16)\n")
    # the workers parsed hazard.py; the parent, which parses nothing, loaded LibCST for them
    assert "libcst._nodes.module" in _modules_after_scan(["few", "--no-cache", "-j", "2"], tmp_path)


def test_a_scan_loads_neither_rich_nor_the_machine_rules_when_output_is_not_a_terminal(tmp_path):
    """What a pre-commit hook or CI job starts: plain text output needs no rich, files need no RLC5xx rule."""
    (tmp_path / "pyproject.toml").write_text('[tool.rlcompat]\ntarget = "sm61"\n')
    (tmp_path / "hazard.py").write_text("import torch\nx = t.to(torch.bfloat16)\n")
    assert _modules_after_scan(["hazard.py", "--no-cache"], tmp_path, prefix="rich") == []
    loaded_rules = _modules_after_scan(["hazard.py", "--no-cache"], tmp_path, prefix="rlcompat.rules.")
    assert "rlcompat.rules.dtype.torch_bfloat16_dtype" in loaded_rules
    assert not [m for m in loaded_rules if m.startswith("rlcompat.rules.environment")]


@pytest.mark.slow
def test_wheel_contains_rules_and_data_and_works(tmp_path):
    out = tmp_path / "dist"
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(out),
                            str(REPO)], check=True, capture_output=True, text=True, timeout=300)
    # A data folder that Python could import but the packages list leaves out costs 40 lines of warning per install.
    assert "is absent from the `packages` configuration" not in built.stdout + built.stderr
    wheel = next(out.glob("rlcompat-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    assert "rlcompat/knowledge/data/targets.toml" in names and "rlcompat/knowledge/data/sources.toml" in names
    assert "rlcompat/rules/dtype/torch_bfloat16_dtype.py" in names
    # Every module and knowledge file of the checkout ships, a new folder's too.
    in_wheel = {"rlcompat": "rlcompat", "rules": "rlcompat/rules"}  # package-dir maps rules/ to rlcompat.rules
    checkout = {f"{in_wheel[root]}/{path.relative_to(REPO / root).as_posix()}"
                for root in in_wheel for path in (REPO / root).rglob("*")
                if path.suffix in (".py", ".toml") and "__pycache__" not in path.parts}
    assert checkout - set(names) == set()
    assert not any(n.startswith(("tests/", "fixtures/", "rules/")) for n in names)
    # Import from the unpacked wheel alone (no editable finder) and scan with it.
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    (tmp_path / "m.py").write_text("import torch\nx = t.to(torch.bfloat16)\n")
    code = (
        "import sys; sys.path.insert(0, sys.argv[1])\n"
        "import rlcompat, rlcompat.rules\n"
        "assert rlcompat.__file__.startswith(sys.argv[1]), rlcompat.__file__\n"
        "from rlcompat import scan_paths, resolve_target\n"
        "r = scan_paths([sys.argv[2]], resolve_target('P40'), jobs=1)\n"
        "print(len(rlcompat.rules.all_rules()), [f.code for f in r.findings])\n"
    )
    # The wheel's copy comes first on sys.path, ahead of the editable install's finder (which Python asks last).
    proc = subprocess.run([sys.executable, "-c", code, str(site), str(tmp_path / "m.py")],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    from rlcompat.rules import all_rules

    assert proc.stdout.split()[0] == str(len(all_rules()))
    assert "RLC101" in proc.stdout
