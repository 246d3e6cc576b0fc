"""Bad input and a hostile filesystem: every problem is one line naming the file and saying what to do, the rest of
the run goes on, and no user file is ever lost, half-written or replaced by something else.

docs/robustness.md has the table of these situations. What test_cli.py covers is not repeated here (a syntax
error, CRLF with a BOM, a latin-1 coding cookie).
"""

from __future__ import annotations

import errno
from dataclasses import replace
import os
import stat
import sys
import tempfile
import zlib

import pytest
from typer.testing import CliRunner

from rlcompat import cli
from rlcompat.cli.app import app

HAZARD = "import torch\nx = t.to(torch.bfloat16)\n"
FIXED = HAZARD.replace("bfloat16", "float32")


def invoke(*args, cwd):
    """The CLI in this process (so monkeypatches apply), one worker, no cache unless asked for."""
    old = os.getcwd()
    os.chdir(cwd)
    try:
        result = CliRunner().invoke(app, [*args, "--target", "sm61", "--jobs", "1"], catch_exceptions=False)
    finally:
        os.chdir(old)
    return result.exit_code, result.stdout, result.stderr


def error_lines(out: str) -> list[str]:
    return [line for line in out.splitlines() if line.startswith("error: ")]


def one_error_for(out: str, name: str) -> str:
    """The single `error:` line naming `name`, checked to be one complete line."""
    lines = [line for line in error_lines(out) if name in line]
    assert len(lines) == 1, out
    return lines[0]


def stray_temp_files(root) -> list[str]:
    return [os.path.join(d, f) for d, _, files in os.walk(root) for f in files if f.startswith(".rlcompat-")]


# --- what a file holds ---------------------------------------------------------------------------------------


def test_nul_bytes_are_one_error_and_the_file_is_never_rewritten(tmp_path):
    raw = b"import torch\nx = t.to(torch.bfloat16)\n\x00\x00junk\n"
    (tmp_path / "blob.py").write_bytes(raw)
    (tmp_path / "ok.py").write_text(HAZARD)
    code, out, _ = invoke("scan", ".", "--no-cache", cwd=tmp_path)
    assert code == 1
    line = one_error_for(out, "blob.py")
    assert "NUL bytes" in line and "exclude it" in line
    assert "ok.py:2:10: RLC101" in out  # the rest of the run went on
    code, out, _ = invoke("scan", "blob.py", "--no-cache", cwd=tmp_path)
    assert code == 1 and "No findings, 1 file error in 1 file" in out and "All clear" not in out
    code, out, _ = invoke("fix", ".", "--no-cache", cwd=tmp_path)
    assert code == 1 and "NUL bytes" in one_error_for(out, "blob.py")
    assert (tmp_path / "blob.py").read_bytes() == raw
    assert (tmp_path / "ok.py").read_text() == FIXED


def test_a_binary_file_without_nul_bytes_is_called_binary_and_skipped(tmp_path):
    # Compressed data with its NUL bytes taken out: not text in any encoding, yet no NUL to give it away. Before, the
    # .py one read "invalid or missing encoding declaration", sending the user to a coding cookie.
    blob = bytes(b for b in zlib.compress(bytes(range(256)) * 8, 9) if b) + b"\xff\x01\x02"
    assert b"\x00" not in blob
    (tmp_path / "weights.py").write_bytes(blob)
    (tmp_path / "weights.yaml").write_bytes(b"\xfe" + blob)
    (tmp_path / "ok.py").write_text(HAZARD)
    code, out, _ = invoke("scan", ".", "--no-cache", cwd=tmp_path)
    assert code == 1
    for name in ("weights.py", "weights.yaml"):
        line = one_error_for(out, name)
        assert "is a binary file, not text" in line and "skipped" in line and "exclude it" in line, line
        assert "encoding" not in line and "coding" not in line, line
    assert "ok.py:2:10: RLC101" in out  # the rest of the run went on
    code, out, _ = invoke("fix", ".", "--no-cache", cwd=tmp_path)
    assert "is a binary file" in one_error_for(out, "weights.py")
    assert (tmp_path / "weights.py").read_bytes() == blob


def test_text_in_an_undeclared_encoding_keeps_its_encoding_message(tmp_path):
    # The first line is not UTF-8, so Python's own cookie check fails: that is an encoding problem, not a binary file.
    (tmp_path / "legacy.py").write_bytes("# café\nimport torch\n".encode("latin-1"))
    code, out, _ = invoke("scan", ".", "--no-cache", cwd=tmp_path)
    line = one_error_for(out, "legacy.py")
    assert code == 1 and "invalid or missing encoding declaration" in line and "coding cookie" in line
    assert "binary" not in line


def test_non_utf8_bytes_without_a_cookie_are_located_and_left_alone(tmp_path):
    raw = "import torch\nname = 'café'\nx = t.to(torch.bfloat16)\n".encode("latin-1")
    (tmp_path / "legacy.py").write_bytes(raw)
    (tmp_path / "legacy.yaml").write_bytes("model: {dtype: bfloat16}\nowner: José\n".encode("latin-1"))
    code, out, _ = invoke("fix", ".", "--no-cache", cwd=tmp_path)
    assert code == 1
    py = one_error_for(out, "legacy.py")
    assert "not valid utf-8" in py and "byte 0xe9 at line 2, column 12" in py and "coding:" in py
    assert "save it as UTF-8" in one_error_for(out, "legacy.yaml")
    assert (tmp_path / "legacy.py").read_bytes() == raw


def test_mixed_line_endings_are_kept_byte_for_byte_outside_the_fix(tmp_path):
    raw = b"import torch\r\n\r\ny = 1\nx = t.to(torch.bfloat16)\r\nz = [\n  1,\r\n]\n# end\r"
    (tmp_path / "mixed.py").write_bytes(raw)
    code, out, _ = invoke("fix", ".", "--no-cache", cwd=tmp_path)
    assert code == 0, out
    assert (tmp_path / "mixed.py").read_bytes() == raw.replace(b"torch.bfloat16", b"torch.float32")


def test_a_huge_file_is_scanned_and_fixed(tmp_path):
    # ~3 MB: generated functions, a 1.7 MB string table and 1.2 MB of comments, with one hazard in the middle.
    parts = ["import torch\n"]
    parts += [f"def f{i}(a, b={i}):\n    # generated {i}\n    return a * b + {i}\n\n" for i in range(3000)]
    hazard_line = "".join(parts).count("\n") + 1
    parts.append("x = t.to(torch.bfloat16)\n")
    parts.append('TABLE = """\n' + "".join(f"row {i:07d} " + "abcdefgh" * 8 + "\n" for i in range(20000)) + '"""\n')
    parts.append("".join(f"# note {i:07d} " + "-" * 70 + "\n" for i in range(15000)))
    src = "".join(parts)
    assert len(src) > 3_000_000
    (tmp_path / "huge.py").write_text(src)
    code, out, _ = invoke("scan", ".", "--no-cache", cwd=tmp_path)
    assert code == 1 and f"huge.py:{hazard_line}:10: RLC101" in out
    code, out, _ = invoke("fix", ".", "--no-cache", cwd=tmp_path)
    assert code == 0, out
    assert (tmp_path / "huge.py").read_text() == src.replace("torch.bfloat16", "torch.float32")


def test_deeply_nested_valid_python_is_checked_not_a_crash(tmp_path):
    # 1,000 `elif`s (or terms of a sum) nest 1,000 levels of LibCST nodes: deeper than Python's recursion limit.
    chain = "if a:\n    pass\n" + "".join(f"elif a{i}:\n    pass\n" for i in range(1000))
    src = "import torch\n" + chain + "else:\n    x = t.to(torch.bfloat16)\ny = " + " + ".join(["a"] * 1000) + "\n"
    compile(src, "deep.py", "exec")  # valid Python
    (tmp_path / "deep.py").write_text(src)
    code, out, _ = invoke("fix", ".", "--no-cache", cwd=tmp_path)
    assert code == 0, out
    assert (tmp_path / "deep.py").read_text() == src.replace("torch.bfloat16", "torch.float32")


@pytest.mark.parametrize(
    "name, raw",
    [
        ("empty.py", b""),
        ("blank.py", b"   \n\n\t\n\x0c\n"),
        ("comments.py", b"# torch.bfloat16 is only mentioned here\n\n   # and flash_attention_2 here\n"),
        ("bom_only.py", b"\xef\xbb\xbf"),
        ("empty.yaml", b""),
        ("comments.yaml", b"# dtype: bfloat16\n---\n# use_torch_compile: true\n"),
        ("empty.sh", b""),
        ("comments.sh", b"#!/bin/bash\n# python3 -m verl.trainer.main_ppo actor_rollout_ref.rollout.dtype=bfloat16\n"),
    ],
)
def test_empty_and_comment_only_files_are_clean_and_untouched(tmp_path, name, raw):
    (tmp_path / name).write_bytes(raw)
    code, out, _ = invoke("scan", ".", "--no-cache", cwd=tmp_path)
    assert code == 0 and "All clear: no findings in 1 file" in out, out
    code, out, _ = invoke("fix", ".", "--no-cache", cwd=tmp_path)
    assert code == 0, out
    assert (tmp_path / name).read_bytes() == raw


# --- the tree: links, permissions, names ----------------------------------------------------------------------


@pytest.fixture
def linked_tree(tmp_path):
    """tree/ with a real file, links inside it, link loops, and links to a file and a directory outside it."""
    tree, outside = tmp_path / "tree", tmp_path / "outside"
    (tree / "sub").mkdir(parents=True)
    outside.mkdir()
    (tree / "real.py").write_text(HAZARD)
    (outside / "out.py").write_text(HAZARD)
    os.symlink("../real.py", tree / "sub" / "link.py")  # inside the tree, to a file of the tree
    os.symlink("..", tree / "sub" / "loop")  # a directory loop
    os.symlink("a.py", tree / "b.py")  # a file loop
    os.symlink("b.py", tree / "a.py")
    os.symlink("../outside/out.py", tree / "out_link.py")  # a file outside
    os.symlink("../../outside", tree / "sub" / "out_dir")  # a directory outside
    return tmp_path


def test_symlink_loops_end_and_links_inside_are_checked_once(linked_tree):
    code, out, _ = invoke("scan", "tree", "--no-cache", cwd=linked_tree)
    assert code == 1 and not error_lines(out), out
    assert out.count(": RLC101 ") == 1 and "tree/real.py:2:10: RLC101" in out  # not again as sub/link.py
    assert "out" not in out.split("Found")[0].replace("outside", "")  # nothing from outside the tree


def test_links_out_of_the_tree_are_not_followed_when_walking(linked_tree):
    code, out, _ = invoke("fix", "tree", "--no-cache", cwd=linked_tree)
    assert code == 0, out
    assert (linked_tree / "tree" / "real.py").read_text() == FIXED
    assert (linked_tree / "outside" / "out.py").read_text() == HAZARD  # not this tree's file to rewrite
    for link in ("sub/link.py", "out_link.py", "a.py", "b.py", "sub/loop", "sub/out_dir"):
        assert os.path.islink(linked_tree / "tree" / link), link


def test_a_link_named_on_the_command_line_is_fixed_through_and_stays_a_link(linked_tree):
    code, out, _ = invoke("fix", "tree/out_link.py", "--no-cache", cwd=linked_tree)
    assert code == 0, out
    assert os.path.islink(linked_tree / "tree" / "out_link.py")
    assert (linked_tree / "outside" / "out.py").read_text() == FIXED
    assert stray_temp_files(linked_tree) == []


def test_a_link_loop_named_on_the_command_line_is_a_usage_error(linked_tree):
    code, _, err = invoke("scan", "tree/a.py", "--no-cache", cwd=linked_tree)
    assert code == 2 and "tree/a.py: is a symbolic link loop" in err and err.count("\n") == 1


@pytest.mark.parametrize("make, words", [
    (lambda p: os.symlink("gone.py", p), "is a symbolic link to nothing"),
    (lambda p: os.mkfifo(p), "is neither a regular file nor a directory"),
    (lambda p: None, "no such file or directory"),
])
def test_a_named_path_that_cannot_be_checked_says_what_it_is(tmp_path, make, words):
    if "regular file" in words and not hasattr(os, "mkfifo"):
        pytest.skip("no FIFOs on this platform")
    make(tmp_path / "x.py")
    for command in ("scan", "fix"):
        code, _, err = invoke(command, "x.py", "--no-cache", cwd=tmp_path)
        assert code == 2 and f"x.py: {words}" in err and err.count("\n") == 1


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() == 0, reason="root reads a chmod 000 file anyway")
def test_unreadable_file_chmod_000(tmp_path):
    (tmp_path / "secret.py").write_text(HAZARD)
    (tmp_path / "ok.py").write_text(HAZARD)
    os.chmod(tmp_path / "secret.py", 0)
    try:
        code, out, _ = invoke("scan", ".", "--no-cache", cwd=tmp_path)
    finally:
        os.chmod(tmp_path / "secret.py", 0o644)
    assert code == 1 and "ok.py:2:10: RLC101" in out
    assert "cannot be read (Permission denied); check its permissions" in one_error_for(out, "secret.py")


def test_unreadable_file_simulated(tmp_path, monkeypatch):
    # Runs as root too: the read itself is refused, as chmod 000 does for a normal user.
    (tmp_path / "secret.py").write_text(HAZARD)
    (tmp_path / "ok.py").write_text(HAZARD)
    real_open = open

    def refusing_open(file, *args, **kwargs):
        if str(file).endswith("secret.py"):
            raise PermissionError(errno.EACCES, "Permission denied", str(file))
        return real_open(file, *args, **kwargs)

    monkeypatch.setattr("builtins.open", refusing_open)
    for command in ("scan", "fix"):
        code, out, _ = invoke(command, ".", "--no-cache", cwd=tmp_path)
        assert code == 1
        assert "cannot be read (Permission denied); check its permissions" in one_error_for(out, "secret.py")
    monkeypatch.undo()
    assert (tmp_path / "secret.py").read_text() == HAZARD
    assert (tmp_path / "ok.py").read_text() == FIXED


def test_read_only_file_under_fix_is_one_error_and_the_others_are_fixed(tmp_path):
    (tmp_path / "locked.py").write_text(HAZARD)
    (tmp_path / "ok.py").write_text(HAZARD)
    os.chmod(tmp_path / "locked.py", 0o444)
    code, out, _ = invoke("fix", ".", "--no-cache", cwd=tmp_path)
    assert code == 1
    line = one_error_for(out, "locked.py")
    assert "read-only" in line and "chmod u+w" in line
    assert (tmp_path / "locked.py").read_text() == HAZARD
    assert stat.S_IMODE(os.stat(tmp_path / "locked.py").st_mode) == 0o444
    assert (tmp_path / "ok.py").read_text() == FIXED
    # the unwritten fix is not counted as done: its finding is still reported
    assert "locked.py:2:10: RLC101" in out and "Fixed 1 finding, 1 remaining, 1 file error" in out


def test_a_directory_that_refuses_a_temporary_file(tmp_path, monkeypatch):
    (tmp_path / "a.py").write_text(HAZARD)

    def refuse(*args, **kwargs):
        raise PermissionError(errno.EACCES, "Permission denied")

    monkeypatch.setattr(tempfile, "mkstemp", refuse)
    code, out, _ = invoke("fix", ".", "--no-cache", cwd=tmp_path)
    assert code == 1
    line = one_error_for(out, "a.py")
    assert "temporary file (Permission denied)" in line and "check the permissions of the file and its directory" in line
    assert (tmp_path / "a.py").read_text() == HAZARD


def test_paths_with_spaces_and_unicode(tmp_path):
    d = tmp_path / "my project" / "ünïcødé 数据"
    d.mkdir(parents=True)
    (d / "train file ✓.py").write_text(HAZARD)
    (d / "run me.sh").write_text("python3 -m verl.trainer.main_ppo actor_rollout_ref.rollout.dtype=bfloat16\n")
    code, out, _ = invoke("scan", "my project", "--no-cache", cwd=tmp_path)
    assert code == 1
    assert "my project/ünïcødé 数据/train file ✓.py:2:10: RLC101" in out
    assert "my project/ünïcødé 数据/run me.sh:1:34: RLC104" in out
    code, out, _ = invoke("fix", "my project", "--no-cache", cwd=tmp_path)
    assert (d / "train file ✓.py").read_text() == FIXED
    assert "rollout.dtype=float32" in (d / "run me.sh").read_text()


# --- files that change, disks that fill, users that press Ctrl-C ----------------------------------------------


def test_file_changed_between_scan_and_fix_is_fixed_as_it_is_now(tmp_path):
    (tmp_path / "a.py").write_text(HAZARD)
    assert invoke("scan", ".", cwd=tmp_path)[0] == 1  # with the cache, as a user runs it
    edited = HAZARD + "y = t.to(torch.bfloat16)  # added after the scan\n"
    (tmp_path / "a.py").write_text(edited)
    code, out, _ = invoke("fix", ".", cwd=tmp_path)
    assert code == 0 and "Fixed 2 findings" in out, out
    assert (tmp_path / "a.py").read_text() == edited.replace("torch.bfloat16", "torch.float32")


def test_file_changed_while_being_fixed_is_not_clobbered(tmp_path, monkeypatch):
    from rlcompat.pipeline import fixer

    (tmp_path / "a.py").write_text(HAZARD)
    (tmp_path / "b.py").write_text(HAZARD)
    users_edit = HAZARD + "important = 'the user typed this meanwhile'\n"
    real_fix_source = fixer.fix_source

    def fix_source_while_user_edits(checker, source, language, unsafe, **options):
        outcome = real_fix_source(checker, source, language, unsafe, **options)
        if source.path.endswith("a.py"):
            with open(source.path, "w") as fh:
                fh.write(users_edit)
        return outcome

    monkeypatch.setattr(fixer, "fix_source", fix_source_while_user_edits)
    code, out, _ = invoke("fix", ".", "--no-cache", cwd=tmp_path)
    assert code == 1
    line = one_error_for(out, "a.py")
    assert "changed on disk while being fixed; nothing was written, run fix again" in line
    assert (tmp_path / "a.py").read_text() == users_edit
    assert (tmp_path / "b.py").read_text() == FIXED
    assert "Fixed 1 finding," in out  # only what was written


@pytest.fixture
def failing_temp_writes(monkeypatch):
    """Make os.write into rlcompat's temporary files under a directory named `full` write half, then ENOSPC."""
    real_mkstemp, real_write = tempfile.mkstemp, os.write
    doomed: set[int] = set()
    failed: list[int] = []

    def mkstemp(*args, **kwargs):
        fd, name = real_mkstemp(*args, **kwargs)
        if os.path.basename(os.path.dirname(name)) == "full":
            doomed.add(fd)
        return fd, name

    def write(fd, data):
        if fd in doomed:
            doomed.discard(fd)  # the descriptor number is free again once rlcompat closes it
            failed.append(fd)
            real_write(fd, bytes(data[: len(data) // 2]))
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_write(fd, data)

    monkeypatch.setattr(tempfile, "mkstemp", mkstemp)
    monkeypatch.setattr(os, "write", write)
    return failed


def test_disk_full_while_writing_keeps_the_original(tmp_path, failing_temp_writes):
    (tmp_path / "full").mkdir()
    (tmp_path / "roomy").mkdir()
    (tmp_path / "full" / "a.py").write_text(HAZARD)
    (tmp_path / "roomy" / "b.py").write_text(HAZARD)
    code, out, _ = invoke("fix", ".", "--no-cache", cwd=tmp_path)
    assert failing_temp_writes, "the write was never attempted"
    assert code == 1
    line = one_error_for(out, "a.py")
    assert "cannot be written (No space left on device); the file is unchanged: free some disk space" in line
    assert (tmp_path / "full" / "a.py").read_text() == HAZARD
    assert (tmp_path / "roomy" / "b.py").read_text() == FIXED
    assert stray_temp_files(tmp_path) == []


@pytest.mark.parametrize("when", ["write", "fsync", "after-replace"])
def test_ctrl_c_during_the_write_leaves_the_old_or_the_new_file_whole(tmp_path, monkeypatch, capsys, when):
    big = "import torch\n" + "".join(f"v{i} = {i}\n" for i in range(20000)) + "x = t.to(torch.bfloat16)\n"
    (tmp_path / "a.py").write_text(big)
    real = {"write": os.write, "fsync": os.fsync, "after-replace": os.replace}[when]

    def interrupted(*args):
        if when == "write":
            real(args[0], bytes(args[1][:100]))  # part of the data reaches the temporary file
        elif when == "after-replace":
            real(*args)
        raise KeyboardInterrupt

    monkeypatch.setattr(os, {"write": "write", "fsync": "fsync", "after-replace": "replace"}[when], interrupted)
    monkeypatch.setattr(sys, "argv", ["rlcompat", "fix", str(tmp_path), "--target", "sm61", "--no-cache", "--jobs", "1"])
    with pytest.raises(SystemExit) as exit_info:
        cli.main()
    monkeypatch.undo()
    assert exit_info.value.code == 130  # 128 + SIGINT, as a shell reports Ctrl-C
    err = capsys.readouterr().err
    assert err == "rlcompat: interrupted; files already written are complete, the rest untouched\n"
    expected = big.replace("torch.bfloat16", "torch.float32") if when == "after-replace" else big
    assert (tmp_path / "a.py").read_text() == expected
    assert stray_temp_files(tmp_path) == []


# --- configs and scripts that do not parse ----------------------------------------------------------------------


def test_yaml_that_does_not_parse_is_located_and_the_rest_still_runs(tmp_path):
    bad = "actor_rollout_ref:\n  rollout:\n    dtype: bfloat16\n    name: [vllm\n  model: {path: x\n"
    (tmp_path / "broken.yaml").write_text(bad)
    (tmp_path / "good.py").write_text(HAZARD)
    code, out, _ = invoke("fix", ".", "--no-cache", cwd=tmp_path)
    assert code == 1
    line = one_error_for(out, "broken.yaml")
    assert line.startswith("error: broken.yaml:5:") and "cannot be parsed" in line and "fix the syntax or exclude" in line
    assert (tmp_path / "broken.yaml").read_text() == bad
    assert (tmp_path / "good.py").read_text() == FIXED


def test_shell_script_that_does_not_parse_is_located_and_the_rest_still_runs(tmp_path):
    bad = ("#!/bin/bash\npython3 -m verl.trainer.main_ppo \\\n    actor_rollout_ref.rollout.dtype=bfloat16 \\\n"
           "    trainer.project_name='unterminated\n")
    (tmp_path / "broken.sh").write_text(bad)
    (tmp_path / "good.py").write_text(HAZARD)
    code, out, _ = invoke("fix", ".", "--no-cache", cwd=tmp_path)
    assert code == 1
    line = one_error_for(out, "broken.sh")
    assert line.startswith("error: broken.sh:4:26: cannot be parsed: unterminated ' quote; fix the syntax or exclude")
    assert (tmp_path / "broken.sh").read_text() == bad
    assert (tmp_path / "good.py").read_text() == FIXED


def test_shell_commands_bashlex_cannot_read_are_reported_and_the_rest_is_fixed(tmp_path):
    script = (
        "#!/bin/bash\n"
        "select o in a; do python3 -m verl.trainer.main_ppo trainer.x=1 actor_rollout_ref.rollout.dtype=bfloat16; done\n"
        "coproc python3 -m verl.trainer.main_ppo \\\n"
        "    actor_rollout_ref.model.override_config.attn_implementation=flash_attention_2\n"
        "[[ -f ckpt ]] && python3 -m verl.trainer.main_ppo actor_rollout_ref.rollout.dtype=bfloat16\n"
        "coproc echo 0 1 2 3\n"  # unread too, but nothing in it the rules look for
    )
    (tmp_path / "run.sh").write_text(script)
    code, out, _ = invoke("fix", "run.sh", "--no-cache", "--select", "RLC002,RLC104", cwd=tmp_path)
    assert code == 1 and not error_lines(out)
    assert "run.sh:2:1: RLC002 command not checked: the shell parser cannot read it (bashlex does not implement " \
           "select command) and it " \
           "mentions `bfloat16`; check it by hand for sm61, then add `# rlcompat: ignore[RLC002]` after it" in out
    assert "run.sh:3:1: RLC002 command not checked: the shell parser cannot read it (bashlex does not implement " \
           "coproc) and it mentions `flash_attention_2`" in out
    assert "run.sh:6" not in out
    # the `[[ ... ]] &&` command is read (the test is masked for bashlex) and fixed; the unread ones are untouched
    assert (tmp_path / "run.sh").read_text() == script.replace("main_ppo actor_rollout_ref.rollout.dtype=bfloat16",
                                                               "main_ppo actor_rollout_ref.rollout.dtype=float32")
    # checked by hand: a suppression after the command's last line silences it
    fixed = (tmp_path / "run.sh").read_text()
    (tmp_path / "run.sh").write_text(fixed.replace("flash_attention_2\n", "flash_attention_2  # rlcompat: ignore[RLC002]\n"))
    code, out, _ = invoke("scan", "run.sh", "--no-cache", "--select", "RLC002,RLC104", cwd=tmp_path)
    assert "run.sh:2:1: RLC002" in out and "run.sh:3:1" not in out and "1 suppressed" in out


def test_crlf_launch_script_is_read_as_meant_and_stays_crlf(tmp_path):
    # Saved on Windows: every line ends in CR LF, continuations included.
    script = ("#!/bin/bash\r\ncat > notes.txt <<'EOF'\r\nactor_rollout_ref.rollout.dtype=bfloat16 is text\r\nEOF\r\n"
              "python3 -m verl.trainer.main_ppo \\\r\n    actor_rollout_ref.rollout.dtype=bfloat16 \\\r\n"
              "    trainer.n_gpus_per_node=1\r\n")
    (tmp_path / "run.sh").write_bytes(script.encode())
    # The tree says which verl it runs: the defaults the fix adds are verl 0.9.1's, whatever is installed here.
    (tmp_path / "requirements.txt").write_text("verl==0.9.1\n")
    code, out, _ = invoke("fix", "run.sh", "--no-cache", "--select", "RLC002,RLC104,RLC351", cwd=tmp_path)
    assert code == 0, out
    fixed = (tmp_path / "run.sh").read_bytes()
    assert b"\n" not in fixed.replace(b"\r\n", b"")  # still CRLF throughout, the added override line too
    assert fixed.startswith(script.replace("dtype=bfloat16 \\", "dtype=float32 \\").encode().rstrip(b"\r\n"))
    assert fixed.endswith(b"trainer.n_gpus_per_node=1 \\\r\n    actor_rollout_ref.actor.fsdp_config.use_torch_compile=False"
                          b" \\\r\n    actor_rollout_ref.ref.fsdp_config.use_torch_compile=False \\\r\n"
                          b"    critic.fsdp.use_torch_compile=False\r\n")
    assert b"dtype=bfloat16 is text" in fixed  # the heredoc is text, not a command


def test_a_fix_that_would_break_a_file_spares_that_file_fixes_the_others_and_exits_2(tmp_path, monkeypatch):
    """A rule bug (its fix makes the file unparsable) is an internal error for that file only."""
    from rlcompat.lang import python as python_frontend

    (tmp_path / "a.py").write_text(HAZARD)
    (tmp_path / "b.yaml").write_text("actor_rollout_ref:\n  rollout:\n    dtype: bfloat16\n")
    real_check = python_frontend.check

    def breaking_check(*args, **kwargs):
        broken = []
        for f in real_check(*args, **kwargs):
            if f.fix:
                edits = tuple(replace(e, content="torch.(") for e in f.fix.edits)
                f = replace(f, fix=replace(f.fix, edits=edits))
            broken.append(f)
        return broken

    monkeypatch.setattr(python_frontend, "check", breaking_check)
    monkeypatch.setattr(sys, "argv", ["rlcompat", "fix", str(tmp_path), "--target", "sm61", "--no-cache", "--jobs", "1"])
    with pytest.raises(SystemExit) as exit_info:
        cli.main()
    assert exit_info.value.code == 2
    assert (tmp_path / "a.py").read_text() == HAZARD
    assert "float32" in (tmp_path / "b.yaml").read_text()
