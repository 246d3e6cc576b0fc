"""Python launchers that hand a framework's launch helper the training command's flags as strings (miles' and
slime's `execute_train`, rlcompat/knowledge/data/launch_helpers.toml): the call is read as the shell command the
helper runs (rlcompat/lang/pylaunch.py), and the flag knowledge of the framework judges it as it judges the same
command in a script."""

from __future__ import annotations

from pathlib import Path

from rlcompat.api import fix_text, scan_paths, scan_source
from rlcompat.knowledge import launch_helpers
from rlcompat.knowledge.targets import resolve_target
from rlcompat.lang.pylaunch import UNREAD, launch_blocks

SM61, SM75 = resolve_target("sm61"), resolve_target("sm75")
MILES = {"miles": "0.1.0"}
IMPORT = "import miles.utils.external_utils.command_utils as U\n\n\n"

LAUNCHER = IMPORT + '''def execute(args):
    model_path = f"{args.model_dir}/Qwen3-0.6B"
    ckpt_args = f"--hf-checkpoint {model_path} " f"--ref-load {model_path} "
    sglang_args = (
        "--rollout-num-gpus-per-engine 1 "
        "--sglang-attention-backend fa3 "
    )
    backend_args = (
        "--train-backend fsdp "
        "--attn-implementation flash_attention_3 "
    )
    U.execute_train(
        train_args=(
            f"{ckpt_args} "
            f"{sglang_args} "
            f"{backend_args} "
            f"{args.extra_args} "
        ),
        config=args,
        num_gpus_per_node=4,
        megatron_model_type=None,
    )
'''


def _checkout(tmp_path: Path, launcher: str, name: str = "miles", version: str = "0.1.0") -> Path:
    """A checkout of the framework's release (its package, setup.py and train.py) holding `launcher`: its path."""
    root = tmp_path / name
    (root / "scripts").mkdir(parents=True)
    (root / name).mkdir()
    (root / ".git").mkdir()
    (root / "setup.py").write_text(f'from setuptools import setup\nsetup(name="{name}", version="{version}")\n')
    (root / name / "__init__.py").write_text("")
    (root / "train.py").write_text(f"from {name}.utils.arguments import parse_args\n\nparse_args()\n")
    (root / "scripts" / "run_qwen3.py").write_text(launcher)
    return root / "scripts" / "run_qwen3.py"


def _scan(path: Path, target) -> list:
    return scan_paths([str(path)], target).findings


def _blocks(text: str):
    return launch_blocks(text, launch_helpers.helpers())


def _codes(findings) -> list[tuple[str, int]]:
    return sorted((f.code, f.location.line) for f in findings)


def _line_of(text: str, needle: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if needle in line)


def test_the_call_reads_as_the_command_the_helper_runs():
    [block] = _blocks(LAUNCHER)
    words = block.code.split()
    assert words[:2] == ["python3", "train.py"]
    assert words[2:4] == ["--hf-checkpoint", f"{UNREAD}/Qwen3-0.6B"]  # f-string fields: names followed, the rest unread
    assert " ".join(words[6:]).startswith("--rollout-num-gpus-per-engine 1 --sglang-attention-backend fa3 "
                                          "--train-backend fsdp --attn-implementation flash_attention_3")
    assert words[-1] == UNREAD  # args.extra_args: a value from elsewhere


def test_each_flag_is_reported_at_its_literal_and_the_default_at_the_call(tmp_path):
    found = _scan(_checkout(tmp_path, LAUNCHER), SM61)
    assert _codes(found) == sorted([("RLC207", _line_of(LAUNCHER, "fa3")),
                                    ("RLC204", _line_of(LAUNCHER, "flash_attention_3")),
                                    ("RLC118", _line_of(LAUNCHER, "U.execute_train(")),
                                    # the SGLang engines miles' training entry starts, at the call that runs it
                                    ("RLC417", _line_of(LAUNCHER, "U.execute_train("))]), [f.message for f in found]
    bf16 = next(f for f in found if f.code == "RLC118")
    assert "--fp16 is not passed" in bf16.message and "miles 0.1.0" in bf16.message


def test_fp16_passed_in_a_literal_leaves_no_bf16_default(tmp_path):
    text = LAUNCHER.replace('"--train-backend fsdp "', '"--train-backend fsdp --fp16 "')
    assert "RLC118" not in {f.code for f in _scan(_checkout(tmp_path, text), SM75)}
    # a release without knowledge gets no default claim
    assert "RLC118" not in {f.code for f in _scan(_checkout(tmp_path / "b", LAUNCHER, version="0.2.0"), SM75)}


def test_a_launcher_whose_flags_come_from_elsewhere_is_not_judged(tmp_path):
    """Nothing of the flags is read: no command, so no finding (not even the bf16 default a command without --fp16
    leaves: the flags may hold --fp16), and nothing the file could be called clean of."""
    text = IMPORT + "def execute(train_args, args):\n    U.execute_train(train_args=train_args, config=args, " \
                    "num_gpus_per_node=4, megatron_model_type=None)\n"
    assert _blocks(text) == []
    assert _scan(_checkout(tmp_path, text), SM61) == []


def test_names_bound_twice_or_under_a_branch_are_unread():
    text = IMPORT + '''def execute(args, fast):
    attn = "--attn-implementation flash_attention_3 "
    if fast:
        attn = "--attn-implementation sdpa "
    U.execute_train(f"--hf-checkpoint /m {attn}", 4, None)
'''
    [block] = _blocks(text)
    assert "flash_attention_3" not in block.code and block.code.split()[-1] == UNREAD
    assert "RLC204" not in {f.code for f in scan_source(text, SM61, "scripts/run.py", frameworks=MILES)}


def test_a_model_type_adds_words_the_file_does_not_hold_and_an_entry_script_is_read():
    text = IMPORT + 'U.execute_train("--hf-checkpoint /m --fp16 ", 8, "qwen3-4B", "train_async.py")\n'
    [block] = _blocks(text)
    assert block.code.split()[:3] == ["python3", "train_async.py", UNREAD]
    unknown_entry = IMPORT + 'U.execute_train("--hf-checkpoint /m ", 8, None, train_script=SCRIPT)\n'
    assert _blocks(unknown_entry) == []  # which script runs is not read


def test_other_calls_and_other_modules_are_not_launchers():
    other = 'import other.command_utils as U\nU.execute_train("--attn-implementation flash_attention_3", 1, None)\n'
    assert _blocks(other) == []
    assert _blocks("def execute_train(a): pass\nexecute_train('--bf16')\n") == []


def test_slime_helper_imported_by_name():
    text = ("from slime.utils.external_utils.command_utils import execute_train\n"
            "ARGS = '--hf-checkpoint /m --attn-implementation flash_attention_2 '\n"
            "execute_train(train_args=ARGS + '--colocate', num_gpus_per_node=8, megatron_model_type=None)\n")
    [block] = _blocks(text)
    assert block.code == "python3 train.py --hf-checkpoint /m --attn-implementation flash_attention_2 --colocate"


def test_fix_edits_inside_the_literal_and_is_idempotent():
    fixed = fix_text(LAUNCHER, SM75, "scripts/run_qwen3.py", "python").fixed
    assert '"--attn-implementation sdpa "' in fixed and "flash_attention_3" not in fixed
    compile(fixed, "run.py", "exec")  # still Python
    assert fix_text(fixed, SM75, "scripts/run_qwen3.py", "python").fixed == fixed


def test_no_fix_where_the_value_is_not_written_as_one_plain_literal():
    text = IMPORT + 'U.execute_train("--attn-implementation flash_attention_" "3 --hf-checkpoint /m", 1, None)\n'
    found = [f for f in scan_source(text, SM61, "scripts/run.py", frameworks=MILES) if f.code == "RLC204"]
    assert found and found[0].fix is None and "no fix:" in found[0].message, [f.message for f in found]
    escaped = IMPORT + 'U.execute_train("--attn-implementation\\tflash_attention_3 --hf-checkpoint /m", 1, None)\n'
    found = [f for f in scan_source(escaped, SM61, "scripts/run.py", frameworks=MILES) if f.code == "RLC204"]
    assert found and found[0].fix is None, [f.message for f in found]


def test_offsets_follow_python_line_breaks():
    """CRLF files and a form feed inside a line (which str.splitlines breaks at, CPython does not): each flag's
    characters are still at their place in the file."""
    text = (IMPORT.replace("\n", "\r\n") + "# \x0c page\r\nA = \"--attn-implementation flash_attention_3 \"\r\n"
            "U.execute_train(A + \"--colocate\", 1, None)\r\n")
    [block] = _blocks(text)
    i = block.code.index("flash_attention_3")
    assert text[block.chars[i][1]:block.chars[i][1] + len("flash_attention_3")] == "flash_attention_3"


def test_several_targets_in_one_pass_find_what_each_target_alone_finds():
    """`rlcompat matrix` checks every target over one parse: each group gets the launcher's findings of its own."""
    from rlcompat.config import Options
    from rlcompat.knowledge.identity import pinned
    from rlcompat.pipeline.runner import Checker
    from rlcompat.pipeline.source import SourceFile

    source = SourceFile("scripts/run_qwen3.py", LAUNCHER, "utf-8", False, LAUNCHER.encode())
    sm90 = resolve_target("sm90")
    together = Checker([SM61, sm90], Options(), identity=pinned(MILES, "the test")).check(source, "python")
    assert [_codes(r.findings) for r in together] == [
        _codes(scan_source(LAUNCHER, t, "scripts/run_qwen3.py", frameworks=MILES)) for t in (SM61, sm90)]
    assert {f.code for f in together[0].findings} >= {"RLC204", "RLC207"}
    assert not together[1].findings  # Hopper runs FlashAttention-3, SGLang's fa3 and bf16


def test_appends_extend_a_name_and_a_conditional_one_adds_an_unread_part():
    text = IMPORT + '''def execute(args):
    ckpt_args = "--hf-checkpoint /m "
    ckpt_args += "--attn-implementation flash_attention_2 "
    if args.save:
        ckpt_args += "--fp16 "
    U.execute_train(ckpt_args, 4, None)
    ckpt_args += "--bf16 "
'''
    [block] = _blocks(text)
    assert block.code.split()[2:] == ["--hf-checkpoint", "/m", "--attn-implementation", "flash_attention_2", UNREAD]
    found = scan_source(text, SM61, "scripts/run.py", frameworks=MILES)
    assert [(f.code, f.location.line) for f in found if f.code == "RLC204"] == [
        ("RLC204", _line_of(text, "flash_attention_2"))]


def test_an_invalid_escape_in_the_launcher_warns_nothing():
    """CPython warns of `"\\d"` when it parses the file: the scan's output is not the place for it."""
    import warnings

    text = IMPORT + 'PATTERN = "\\d+"\nU.execute_train("--attn-implementation\\tflash_attention_3 --x \\d", 1, None)\n'
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        [block] = _blocks(text)
    assert "flash_attention_3" in block.code and seen == []


def test_a_python_file_that_calls_no_launch_helper_leaves_the_shell_front_end_unloaded(tmp_path):
    # The reader and the shell front end it hands commands to (bashlex's parser tables: ~0.1 s of a one-file scan)
    # load only for a file that spells a helper's name.
    import subprocess
    import sys

    path = tmp_path / "model.py"
    path.write_text("import torch\nx = torch.zeros(2, dtype=torch.bfloat16)\n")
    code = ("import sys; from rlcompat.api import scan_paths; from rlcompat.knowledge.targets import resolve_target; "
            f"found = scan_paths([{str(path)!r}], resolve_target('sm61'), jobs=1).findings; "
            "print(len(found), 'bashlex' in sys.modules, 'rlcompat.lang.pylaunch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out[0] != "0" and out[1:] == ["False", "False"]
