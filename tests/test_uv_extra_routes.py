"""uv routes written the way AReaL 1.0.3's pyproject.toml writes them (issue 28 round 10, dev sibling areal-1.0.3):
two `[tool.uv.sources]` rows sending two extras' torch to one explicit index, extras that declare a bare `torch` held
by the core dependencies' cap, a torch release the wheel table has no row of on that index (judged where every row
it has of the index lacks the card), and a dependency for macOS only."""

from __future__ import annotations

import tomllib
from pathlib import Path

from rlcompat.api import fix_paths, scan_paths
from rlcompat.knowledge.targets import resolve_target

CU = "https://download.pytorch.org/whl/"
PROJECT = ('[project]\nname = "x"\nversion = "0"\ndependencies = [\n'
           '    "torch>=2.9.1,<2.11; sys_platform != \'darwin\'",\n'
           '    "torch<2.9.1; sys_platform == \'darwin\' and platform_machine == \'x86_64\'",\n]\n\n'
           '[project.optional-dependencies]\nsglang = [\n    "torch; sys_platform == \'linux\'",\n]\n'
           'cuda = [\n    "torch; sys_platform == \'linux\'",\n]\n\n'
           f'[[tool.uv.index]]\nname = "pytorch-cu129"\nurl = "{CU}cu129"\nexplicit = true\n\n'
           '[tool.uv.sources]\ntorch = [\n    { index = "pytorch-cu129", extra = "sglang" },\n'
           '    { index = "pytorch-cu129", extra = "cuda" },\n]\n')


def _findings(path: Path, target: str):
    return [(f.location.line, f.message, f.fix) for f in scan_paths([str(path)], resolve_target(target)).findings
            if f.code == "RLC601"]


def test_each_route_row_and_each_extras_torch_is_judged_by_the_index(tmp_path):
    path = tmp_path / "pyproject.toml"
    path.write_text(PROJECT)
    found = {line: message for line, message, _ in _findings(path, "sm61")}
    # 5: the core torch from PyPI (cu128 for 2.10); 6 (macOS only) is not an install here
    assert sorted(found) == [5, 11, 14, 24, 25]
    assert "`uv sync --extra sglang` installs torch 2.10" in found[11] and "line 24" in found[11]
    assert "`uv sync --extra cuda`" in found[14] and "line 25" in found[14]
    assert "no row of torch 2.10 there, and no cu129 build it has" in found[24]
    assert "the fix is reported at line 24" in found[25]
    assert not _findings(path, "sm75")  # cu129 builds carry sm_75
    fix_paths([str(path)], resolve_target("sm61"))
    fixed = path.read_text()
    assert fixed == PROJECT.replace(f"{CU}cu129", f"{CU}cu126")  # one URL, edited once for both rows
    tomllib.loads(fixed)
    assert sorted(line for line, _, _ in _findings(path, "sm61")) == [5]
