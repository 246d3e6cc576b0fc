"""The YAML and shell front ends: settings, positions, and edits that touch only the value."""

from __future__ import annotations

import pytest

from rlcompat.api import scan_source
from rlcompat.config import Options
from rlcompat.pipeline.runner import Checker
from rlcompat.pipeline.fixer import fix_source
from rlcompat.lang import shell, yaml as yaml_fe
from rlcompat.lang.settings import ConfigView
from rlcompat.pipeline.source import decode
from rlcompat.knowledge.targets import resolve_target
from tests.shell_views import config_views

SM61 = resolve_target("sm61")


def _views(module, text: str, path: str) -> list[ConfigView]:
    return config_views(module, text, path, SM61)


def _fix(text: str, path: str, language: str, target: str = "sm61", select=None, unsafe=False) -> str:
    checker = Checker(resolve_target(target), Options(select=select) if select else Options())
    return fix_source(checker, decode(path, text.encode(), language), language, unsafe).fixed


# --- YAML -------------------------------------------------------------------------------------------------

def test_yaml_group_file_is_mounted_where_verl_mounts_it():
    [view] = _views(yaml_fe, "dtype: bfloat16\n", "x/verl/trainer/config/rollout/rollout.yaml")
    assert view.get("actor_rollout_ref.rollout.dtype").value == "bfloat16"
    [plain] = _views(yaml_fe, "dtype: bfloat16\n", "rollout.yaml")
    assert plain.get("actor_rollout_ref.rollout.dtype") is None


@pytest.mark.parametrize("line,value", [
    ("dtype: bfloat16  # a comment", "bfloat16"),
    ("dtype: 'bfloat16'", "bfloat16"),
    ('dtype: "bfloat16" # c', "bfloat16"),
    ("dtype: it''s", "it''s"),
])
def test_yaml_value_span_is_the_scalar_inside_its_quotes(line, value):
    text = f"actor_rollout_ref:\n  rollout:\n    {line}\n"
    [view] = _views(yaml_fe, text, "c.yaml")
    s = view.get("actor_rollout_ref.rollout.dtype")
    assert text[s.value_span.start:s.value_span.end] == value.replace("''", "''")


def test_yaml_fix_keeps_flow_style_crlf_and_comments():
    text = ("# top\r\nactor_rollout_ref:\r\n  model: {path: m, override_config: {attn_implementation: flash_attention_2}}\r\n"
            "  rollout:\r\n    dtype: bfloat16   # keep me\r\n\r\n")
    fixed = _fix(text, "c.yaml", "yaml", select=("RLC104", "RLC204"))
    assert fixed == text.replace("flash_attention_2", "sdpa").replace("dtype: bfloat16", "dtype: float32")


def test_yaml_multi_document_and_merge_keys_do_not_break():
    text = ("first: 1\n---\nbase: &b\n  x: 1\nactor_rollout_ref:\n  rollout:\n    <<: *b\n    dtype: bfloat16\n"
            "    name: *b\n")
    codes = [f.code for f in scan_source(text, SM61, path="c.yaml", language="yaml")]
    assert "RLC104" in codes


def test_yaml_syntax_error_has_a_location():
    with pytest.raises(yaml_fe.PARSE_ERRORS) as info:
        yaml_fe.parse("a: [1, 2\nb: 3\n")
    line, column, message = yaml_fe.syntax_error_location(info.value)
    assert line >= 2 and message


# --- shell ------------------------------------------------------------------------------------------------

def test_shell_overrides_with_prefixes_quotes_and_variables():
    text = ('D=bfloat16\nENG=${ENG:-vllm}\n'
            'python3 -m verl.trainer.main_ppo --config-path=cfg --config-name=my_ppo \\\n'
            '  ++actor_rollout_ref.rollout.dtype="$D" \\\n  "+trainer.project_name=a b" \\\n'
            "  actor_rollout_ref.rollout.name=${ENG}\n")
    [view] = _views(shell, text, "run.sh")
    assert view.is_verl
    dtype = view.get("actor_rollout_ref.rollout.dtype")
    assert (dtype.prefix, dtype.value, text[dtype.value_span.start:dtype.value_span.end]) == ("++", "bfloat16", "bfloat16")
    assert dtype.value_span.start == text.index("bfloat16") and "line 1" in dtype.via
    assert view.get("trainer.project_name").value == "a b"
    name = view.get("actor_rollout_ref.rollout.name")
    assert name.value == "vllm" and text[name.value_span.start:name.value_span.end] == "vllm"


@pytest.mark.parametrize("launcher", [
    "torchrun --nproc_per_node=2 -m verl.trainer.main_ppo",
    "ray job submit --address=http://x:8265 -- python3 -m verl.trainer.main_ppo",
    "$PY verl.trainer.main_ppo",
    "CUDA_VISIBLE_DEVICES=0 python -m verl.trainer.main_ppo",
    "python3 verl/trainer/main_ppo.py",
])
def test_shell_finds_the_training_command_behind_launchers(launcher):
    text = f'PY="python3 -m"\n{launcher} actor_rollout_ref.rollout.dtype=bfloat16\n'
    views = [v for v in _views(shell, text, "run.sh") if v.is_verl]
    assert len(views) == 1 and views[0].get("actor_rollout_ref.rollout.dtype").value == "bfloat16"


def test_shell_heredoc_bodies_and_comments_are_not_commands():
    text = ("cat <<EOF > x.sh\npython3 -m verl.trainer.main_ppo actor_rollout_ref.rollout.dtype=bfloat16\nEOF\n"
            "# python3 -m verl.trainer.main_ppo actor_rollout_ref.rollout.dtype=bfloat16\n")
    assert not [v for v in _views(shell, text, "run.sh") if v.is_verl]


def test_shell_add_follows_the_scripts_indentation_and_single_line_style():
    multi = "python3 -m verl.trainer.main_ppo \\\n\ta=1 \\\n\tb=2 | tee log\n"
    [view] = [v for v in _views(shell, multi, "run.sh") if v.is_verl]
    edit = view.add("+x.y", "z")
    assert multi[:edit.start] + edit.content + multi[edit.end:] == "python3 -m verl.trainer.main_ppo \\\n\ta=1 \\\n\tb=2 \\\n\t+x.y=z | tee log\n"
    single = "python3 -m verl.trainer.main_ppo a=1\n"
    [view] = _views(shell, single, "run.sh")
    edit = view.add("x", "a b")
    assert single[:edit.start] + edit.content + single[edit.end:] == "python3 -m verl.trainer.main_ppo a=1 x='a b'\n"


def test_removing_a_flag_on_the_last_continued_line_drops_the_continuation():
    text = "deepspeed --module openrlhf.cli.train_sft \\\n  --zero_stage 2 \\\n  --bf16\necho done\n"
    assert _fix(text, "run.sh", "shell", select=("RLC107",)) == "deepspeed --module openrlhf.cli.train_sft \\\n  --zero_stage 2\necho done\n"


def test_value_built_from_several_pieces_is_reported_without_a_fix():
    text = 'python3 -m verl.trainer.main_ppo actor_rollout_ref.rollout.dtype=b"float"16\n'
    findings = [f for f in scan_source(text, SM61, path="run.sh", language="shell") if f.code == "RLC104"]
    assert len(findings) == 1 and findings[0].fix is None


def test_unresolvable_variable_is_not_guessed():
    text = 'python3 -m verl.trainer.main_ppo actor_rollout_ref.rollout.dtype=$1 actor_rollout_ref.rollout.name=vllm\n'
    assert "RLC104" not in [f.code for f in scan_source(text, SM61, path="run.sh", language="shell")]


def test_megatron_scripts_get_no_fsdp_findings():
    text = ("python3 -m verl.trainer.main_ppo --config-name=ppo_megatron_trainer "
            "actor_rollout_ref.actor.use_torch_compile=False\n")
    codes = [f.code for f in scan_source(text, SM61, path="run.sh", language="shell")]
    assert not {"RLC105", "RLC351", "RLC352"} & set(codes)


def test_scanned_verl_version_is_read_from_the_tree(tmp_path):
    from rlcompat.knowledge.identity import resolve, verl_of_file
    from rlcompat.knowledge.verl_config import knowledge_of

    (tmp_path / "verl" / "version").mkdir(parents=True)
    (tmp_path / "verl" / "version" / "version").write_text("0.9.3\n")
    (tmp_path / "verl" / "trainer" / "config" / "rollout").mkdir(parents=True)
    path = str(tmp_path / "verl" / "trainer" / "config" / "rollout" / "rollout.yaml")
    k = knowledge_of(verl_of_file(path, resolve(str(tmp_path)).get("verl")))
    # 0.9.3 is no release rlcompat has knowledge of: read as a fork, with the closest release's rule set and no claim
    # that needs the exact release.
    assert (k.version, k.detected) == ("0.9.1", "0.9.3") and k.label == "verl fork (closest release 0.9.1)"
    assert not k.version_known


def test_commands_in_functions_with_arithmetic_are_read():
    text = ("run()\n{\n  local n=$((2 * 4))\n"
            "  python3 -m verl.trainer.main_ppo actor_rollout_ref.rollout.dtype=bfloat16 trainer.n_gpus_per_node=$n\n}\n"
            "run\n")
    script = shell.parse(text)
    assert not script.skipped
    [view] = [v for v in _views(shell, text, "run.sh") if v.is_verl]
    assert view.get("actor_rollout_ref.rollout.dtype").value == "bfloat16"
    assert view.get("trainer.n_gpus_per_node").value is None  # $n is computed: not guessed


def test_commands_in_case_arms_are_read():
    text = ('case "$ENGINE" in\n'
            '  vllm) python3 -m verl.trainer.main_ppo actor_rollout_ref.rollout.dtype=bfloat16 ;;\n'
            '  sglang)\n    python3 -m verl.trainer.main_ppo \\\n      actor_rollout_ref.rollout.name=sglang\n    ;;\n'
            'esac\n')
    views = [v for v in _views(shell, text, "run.sh") if v.is_verl]
    assert len(views) == 2
    dtype = views[0].get("actor_rollout_ref.rollout.dtype")
    assert text[dtype.value_span.start:dtype.value_span.end] == "bfloat16"
    assert views[1].get("actor_rollout_ref.rollout.name").value == "sglang"


def test_a_command_chained_to_a_case_block_in_one_logical_line_is_read():
    # AReaL v1.0.4's Dockerfile:172-178: a RUN's `case ... esac && uv sync ...` joined by continuations
    text = ('case "$VARIANT" in \\\n  sglang) D=/tmp/s ;; \\\n  *) exit 1 ;; \\\nesac \\\n'
            '&& python3 -m verl.trainer.main_ppo actor_rollout_ref.rollout.dtype=bfloat16\n')
    script = shell.parse(text)
    assert not script.skipped
    [view] = [v for v in _views(shell, text, "run.sh") if v.is_verl]
    dtype = view.get("actor_rollout_ref.rollout.dtype")
    assert text[dtype.value_span.start:dtype.value_span.end] == "bfloat16"
