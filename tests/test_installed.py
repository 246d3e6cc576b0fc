"""`rlcompat fix --installed` and `rlcompat restore` on a fake installed distribution (a package and its dist-info
with RECORD in a temporary site-packages folder, first on sys.path), and doctor's RLC516 over what they leave.
The real verl of the venv is never touched: the fake has its own name."""

from __future__ import annotations

import base64
import hashlib
import json
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rlcompat.cli.app import app
from rlcompat.doctor.snapshot import Environment
from rlcompat.installed import state
from rlcompat.knowledge.targets import resolve_target

DIST, VERSION = "rlcfakeverl", "0.9.1"
MODEL = "rlcfakeverl/utils/model.py"
# CRLF line endings and a non-ASCII comment: restore must give back these exact bytes, fix must keep them.
MODEL_BYTES = (
    "# -*- coding: utf-8 -*-\r\n"
    "# Modèle à tête de valeur\r\n"
    "from transformers import AutoModelForTokenClassification\r\n"
    "\r\n"
    "\r\n"
    "def load_valuehead_model(local_path, torch_dtype, model_config):\r\n"
    "    return AutoModelForTokenClassification.from_pretrained(\r\n"
    "        local_path,\r\n"
    "        torch_dtype=torch_dtype,\r\n"
    "        config=model_config,\r\n"
    "        attn_implementation=\"flash_attention_2\",\r\n"
    "    )\r\n"
).encode("utf-8")
CLEAN = b"def helper():\n    return 1\n"


def _record_hash(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def _install(site: Path, version: str = VERSION, model: bytes = MODEL_BYTES, editable: str | None = None) -> None:
    """What pip leaves: the package's files and a dist-info whose RECORD lists them with their hashes."""
    files = {"rlcfakeverl/__init__.py": b"", "rlcfakeverl/utils/__init__.py": b"", MODEL: model,
             "rlcfakeverl/utils/helpers.py": CLEAN}
    info = site / f"{DIST}-{version}.dist-info"
    for old in site.glob(f"{DIST}-*.dist-info"):
        for f in old.iterdir():
            f.unlink()
        old.rmdir()
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {DIST}\nVersion: {version}\n")
    if editable:
        (info / "direct_url.json").write_text(json.dumps({"url": f"file://{editable}", "dir_info": {"editable": True}}))
    for rel, data in files.items():
        (site / rel).parent.mkdir(parents=True, exist_ok=True)
        (site / rel).write_bytes(data)
    rows = [f"{rel},{_record_hash(data)},{len(data)}" for rel, data in files.items()]
    rows += [f"{info.name}/METADATA,,", f"{info.name}/RECORD,,", "../../../bin/rlcfakeverl-cli,,"]
    (info / "RECORD").write_text("\n".join(rows) + "\n")


@pytest.fixture
def site(tmp_path, monkeypatch):
    site = tmp_path / "site-packages"
    _install(site)
    monkeypatch.setattr(sys, "path", [str(site)] + sys.path)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    return site


def _run(*args: str):
    return CliRunner().invoke(app, list(args), catch_exceptions=False)


def _folder(site: Path) -> Path:
    return state.folder_for(DIST, site.resolve())


def _fix(*extra: str):
    return _run("fix", "--installed", DIST, "--target", "sm61", *extra)


def test_fix_installed_keeps_originals_manifest_and_diff_then_fixes_the_file(site):
    result = _fix()
    assert result.exit_code == 0, result.output
    fixed = (site / MODEL).read_bytes()
    assert b'attn_implementation="sdpa"' in fixed and b"flash_attention_2" not in fixed
    assert fixed.count(b"\r\n") == MODEL_BYTES.count(b"\r\n") and "Modèle".encode() in fixed  # endings, encoding kept
    assert (site / "rlcfakeverl/utils/helpers.py").read_bytes() == CLEAN

    folder = _folder(site)
    assert (folder / state.ORIGINALS / MODEL).read_bytes() == MODEL_BYTES
    assert sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()) == [
        "manifest.json", f"originals/{MODEL}", "patch.diff"]
    manifest = json.loads((folder / "manifest.json").read_text())
    assert (manifest["dist"], manifest["version"], manifest["target"], manifest["unsafe_fixes"]) == (DIST, VERSION, "sm61", False)
    assert manifest["site"] == str(site.resolve()) and manifest["rlcompat_version"] and manifest["time"].endswith("+00:00")
    entry = manifest["files"][MODEL]
    assert entry["record"] == _record_hash(MODEL_BYTES) and entry["matched_record"] is True
    assert entry["original_sha256"] == hashlib.sha256(MODEL_BYTES).hexdigest()
    assert entry["patched_sha256"] == hashlib.sha256(fixed).hexdigest()
    diff = (folder / "patch.diff").read_text()
    assert f"--- a/{MODEL}" in diff and '-        attn_implementation="flash_attention_2",' in diff
    assert '+        attn_implementation="sdpa",' in diff
    assert str(folder) in result.output and f"rlcompat restore {DIST}" in result.output


def test_a_second_run_keeps_the_first_original_and_changes_nothing(site):
    assert _fix().exit_code == 0
    folder = _folder(site)
    first = (folder / "manifest.json").read_text()
    patched = (site / MODEL).read_bytes()
    again = _fix()
    assert again.exit_code == 0, again.output
    assert (site / MODEL).read_bytes() == patched
    assert (folder / state.ORIGINALS / MODEL).read_bytes() == MODEL_BYTES
    assert (folder / "manifest.json").read_text() == first
    # After a reinstall (the originals are back), a fix re-applies the patch over the same backup.
    _install(site)
    assert _fix().exit_code == 0
    assert (site / MODEL).read_bytes() == patched
    assert (folder / state.ORIGINALS / MODEL).read_bytes() == MODEL_BYTES


def test_diff_writes_neither_the_package_nor_a_backup(site):
    result = _fix("--diff")
    assert result.exit_code == 1  # findings would be fixed: they are still there
    assert '+        attn_implementation="sdpa",' in result.output
    assert (site / MODEL).read_bytes() == MODEL_BYTES and not _folder(site).exists()


def test_restore_puts_back_the_exact_bytes_and_removes_the_backup(site):
    assert _fix().exit_code == 0
    result = _run("restore", DIST)
    assert result.exit_code == 0, result.output
    assert (site / MODEL).read_bytes() == MODEL_BYTES
    assert not _folder(site).exists()
    again = _run("restore", "--installed", DIST)
    assert again.exit_code == 2 and "nothing to restore" in again.output


def test_restore_refuses_a_file_edited_since_the_patch_unless_forced(site):
    assert _fix().exit_code == 0
    edited = (site / MODEL).read_bytes() + b"# my change\r\n"
    (site / MODEL).write_bytes(edited)
    result = _run("restore", DIST)
    assert result.exit_code == 2
    [line] = result.output.strip().splitlines()
    assert str(site / MODEL) in line and "edited" in line and f"rlcompat restore {DIST} --force" in line
    assert (site / MODEL).read_bytes() == edited and (_folder(site) / "manifest.json").is_file()
    forced = _run("restore", DIST, "--force")
    assert forced.exit_code == 0, forced.output
    assert (site / MODEL).read_bytes() == MODEL_BYTES and not _folder(site).exists()


def _doctor(site: Path, target: str = "sm61"):
    from rlcompat.doctor.checks import run_checks

    from rlcompat.doctor.environment import installed_patches

    env = Environment(installed_patches=installed_patches([str(site)]))
    return [f for f in run_checks(env, resolve_target(target)) if f.code == "RLC516"]


def test_doctor_says_when_a_reinstall_removed_the_patch_and_how_to_reapply_it(site):
    assert _fix().exit_code == 0
    assert _doctor(site) == []  # the patch is there
    _install(site)  # pip install --force-reinstall: the installed bytes are back
    [finding] = _doctor(site)
    assert finding.severity == "error" and "gone from every patched file" in finding.message
    assert finding.remedy == f"re-apply it: `rlcompat fix --installed {DIST} --target sm61`"
    assert _fix().exit_code == 0 and _doctor(site) == []  # re-applied


def test_doctor_lists_the_patch_beside_the_distribution(site):
    from rlcompat.doctor import render
    from rlcompat.doctor.environment import installed_patches, read_packages

    assert _fix().exit_code == 0
    _install(site)
    env = Environment(packages=read_packages([DIST]), installed_patches=installed_patches([str(site)]))
    result = render.DoctorResult(env, resolve_target("sm61"), "--target")
    [line] = [l for l in render.text(result).splitlines() if l.strip().startswith(DIST)]
    assert line.split()[:2] == [DIST, VERSION]
    assert line.endswith(f"  (rlcompat's patch of {VERSION} for sm61, 1 file: removed, see RLC516)")
    [patch] = json.loads(render.json_text(result))["stack"]["installed_patches"]
    assert (patch["state"], patch["unpatched"], patch["command"]) == (
        "removed", [MODEL], f"rlcompat fix --installed {DIST} --target sm61")


def test_doctor_says_when_another_version_replaced_the_patched_one(site):
    assert _fix().exit_code == 0
    _install(site, version="0.9.2")
    [finding] = _doctor(site)
    assert "0.9.2 is installed now" in finding.message and f"--installed {DIST} --target sm61" in finding.remedy
    # Fixing the new version replaces the stale backup; restoring the old one would write 0.9.1's files into 0.9.2.
    result = _fix()
    assert result.exit_code == 0 and "backup of 0.9.1" in result.output
    manifest = json.loads((_folder(site) / "manifest.json").read_text())
    assert manifest["version"] == "0.9.2"


def test_restore_after_an_upgrade_removes_the_stale_backup_and_writes_nothing(site):
    assert _fix().exit_code == 0
    _install(site, version="0.9.2", model=MODEL_BYTES + b"# 0.9.2\r\n")
    result = _run("restore", DIST)
    assert result.exit_code == 0 and "not the patched 0.9.1" in result.output
    assert (site / MODEL).read_bytes().endswith(b"# 0.9.2\r\n") and not _folder(site).exists()


def test_known_hazard_of_the_critic_is_not_reported_once_the_installed_verl_is_patched():
    from rlcompat.rules import environment_rules

    rule = next(r for r in environment_rules() if r.code == "RLC513")
    patch = ('[[installed_patch]]\ndist = "verl"\npatched_version = "0.9.1"\ninstalled_version = "0.9.1"\n'
             'target = "sm75"\nstate = "{state}"\npatched = ["verl/utils/model.py"]\n')
    base = '[packages]\nverl = "0.9.1"\n'
    before = rule(resolve_target("sm75")).check(Environment.from_toml(base))
    assert any("load_valuehead_model" in f.message for f in before)
    assert all("`rlcompat fix --installed verl --target sm75`" in f.remedy for f in before)
    after = rule(resolve_target("sm75")).check(Environment.from_toml(patch.format(state="applied") + base))
    assert not any("load_valuehead_model" in f.message for f in after) and len(after) == len(before) - 1
    removed = rule(resolve_target("sm75")).check(Environment.from_toml(patch.format(state="removed") + base))
    assert len(removed) == len(before)


def test_one_line_errors_exit_2(site, monkeypatch, tmp_path):
    missing = _run("fix", "--installed", "no-such-dist-rlc", "--target", "sm61")
    assert missing.exit_code == 2 and "no-such-dist-rlc is not installed in this Python" in missing.output
    with_paths = _run("fix", "some/path", "--installed", DIST, "--target", "sm61")
    assert with_paths.exit_code == 2 and "pass no paths" in with_paths.output

    import rlcompat.installed.locate as locate

    # Root may write anywhere, so a read-only site-packages is what os.access says of it here.
    monkeypatch.setattr(locate.os, "access", lambda path, mode: False)
    readonly = _fix()
    assert readonly.exit_code == 2
    [line] = readonly.output.strip().splitlines()
    assert "cannot write" in line and "python -m venv" in line and "never with sudo" in line
    assert (site / MODEL).read_bytes() == MODEL_BYTES and not _folder(site).exists()
    monkeypatch.undo()

    monkeypatch.setattr(sys, "path", [str(site)] + sys.path)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    _install(site, editable="/src/rlcfakeverl")
    editable = _fix()
    assert editable.exit_code == 2 and "editable install of /src/rlcfakeverl" in editable.output
    assert "rlcompat fix /src/rlcfakeverl" in editable.output


def test_findings_without_a_safe_fix_leave_exit_1(site):
    (site / "rlcfakeverl/utils/helpers.py").write_bytes(
        b"import torch\n\n\ndef step(model, x):\n    with torch.autocast('cuda', dtype=torch.bfloat16):\n"
        b"        return model(x)\n")
    result = _run("fix", "--installed", DIST, "--target", "sm75")
    assert result.exit_code == 1, result.output
    assert b"sdpa" in (site / MODEL).read_bytes()
    # The hint names the command that fixes the installed package: a plain `rlcompat fix` fixes the current folder.
    assert f"1 fixable with `rlcompat fix --installed {DIST} --target sm75 --unsafe-fixes`" in result.output


def test_doctor_says_when_the_patched_distribution_was_uninstalled(site):
    import shutil

    assert _fix().exit_code == 0
    shutil.rmtree(site / f"{DIST}-{VERSION}.dist-info")
    shutil.rmtree(site / "rlcfakeverl")
    [finding] = _doctor(site)
    assert finding.severity == "warning" and "no longer installed" in finding.message
    assert str(_folder(site)) in finding.remedy


def test_a_file_that_cannot_be_written_is_neither_kept_nor_named_in_the_manifest(site, monkeypatch):
    import rlcompat.pipeline.source as source

    other = "rlcfakeverl/utils/critic.py"
    (site / other).write_bytes(MODEL_BYTES.replace(b"load_valuehead_model", b"load_critic"))
    real = source.write_atomic

    def refuse_model(path, data):
        if path.endswith("model.py"):
            raise source.SourceError("is read-only; nothing was written: make it writable (chmod u+w) or exclude it")
        real(path, data)

    monkeypatch.setattr(source, "write_atomic", refuse_model)
    result = _fix()
    assert result.exit_code == 1 and "is read-only" in result.output
    assert (site / MODEL).read_bytes() == MODEL_BYTES and b"sdpa" in (site / other).read_bytes()
    manifest = json.loads((_folder(site) / "manifest.json").read_text())
    assert list(manifest["files"]) == [other] and not (_folder(site) / state.ORIGINALS / MODEL).exists()
    assert MODEL not in (_folder(site) / "patch.diff").read_text()
    monkeypatch.setattr(source, "write_atomic", real)
    assert _run("restore", DIST).exit_code == 0 and b"sdpa" not in (site / other).read_bytes()


def test_a_state_folder_that_cannot_be_written_stops_before_any_package_file(site, monkeypatch, tmp_path):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")
    monkeypatch.setenv("XDG_STATE_HOME", str(blocker))
    result = _fix()
    assert result.exit_code == 2
    [line] = result.output.strip().splitlines()
    assert "cannot use the backup folder" in line and "nothing was written" in line and "XDG_STATE_HOME" in line
    assert (site / MODEL).read_bytes() == MODEL_BYTES


def test_a_fix_or_restore_while_another_holds_the_lock_stops_before_writing(site):
    """Two runs at once could keep a file the other already patched as its original: the second one stops."""
    assert _fix().exit_code == 0
    patched = (site / MODEL).read_bytes()
    _install(site)  # a reinstall: the next fix has something to write
    with state.locked(_folder(site), "the test's hold"):
        fixing, restoring = _fix(), _run("restore", DIST)
    for result in (fixing, restoring):
        assert result.exit_code == 2
        [line] = result.output.strip().splitlines()
        assert "another rlcompat fix --installed or restore" in line and ".lock" in line
    assert (site / MODEL).read_bytes() == MODEL_BYTES and (_folder(site) / "manifest.json").exists()
    assert _fix().exit_code == 0 and (site / MODEL).read_bytes() == patched  # the lock went with its holder
