"""The one settings model: what each front end yields as `Setting`s (keys, origins, spans), the interface rules over
settings are written against. See rlcompat/lang/settings.py for the key rules."""

from __future__ import annotations

import pytest

from tests.verl_trees import verl_091_knowledge
from rlcompat.api import fix_paths, scan_paths
from rlcompat.lang import pysettings, shell
from rlcompat.lang.settings import ConfigRule, ConfigView, Setting, Span, flag_key
from rlcompat.knowledge.targets import resolve_target

SM61 = resolve_target("sm61")


class _Spy(ConfigRule):
    code, name = "X999", "spy"

    def __init__(self, target) -> None:
        super().__init__(target)
        self.views: list[ConfigView] = []

    def check_config(self, view, ctx) -> None:
        self.views.append(view)


def shell_views(text: str) -> list[ConfigView]:
    spy = _Spy(SM61)
    shell.check(shell.parse(text), text, "run.sh", [spy], SM61, scanned=verl_091_knowledge("run.sh"))
    return spy.views


def at(text: str, span: Span | None) -> str | None:
    return None if span is None else text[span.start:span.end]


@pytest.mark.parametrize("flag, key", [("--ds.param_dtype", "ds.param_dtype"), ("--flash-attn", "flash_attn"),
                                       ("--bf16", "bf16"), ("-x", "x"), ("--vllm.num-engines", "vllm.num_engines")])
def test_flag_keys_are_argparse_dests(flag, key):
    assert flag_key(flag) == key


def test_every_flag_of_any_command_is_a_setting_with_its_value_where_written():
    text = ("MODEL_DTYPE=bf16\n"
            "torchrun train.py --ds.param_dtype $MODEL_DTYPE --vllm.num_engines=2 --ds.packing_samples "
            "--bf16 --lr 1e-6 --flash-attn\n")
    (view,) = shell_views(text)
    flags = {s.key: s for s in view.settings if s.flag}
    assert set(flags) == {"ds.param_dtype", "vllm.num_engines", "ds.packing_samples", "bf16", "lr", "flash_attn"}
    assert flags["ds.param_dtype"].value == "bf16" and at(text, flags["ds.param_dtype"].value_span) == "bf16"
    assert flags["ds.param_dtype"].value_span.start < text.index("\n")  # the fix goes to MODEL_DTYPE=bf16
    assert "line 1" in flags["ds.param_dtype"].via
    assert flags["vllm.num_engines"].value == "2" and flags["lr"].value == "1e-6"
    assert flags["ds.packing_samples"].switch and flags["ds.packing_samples"].value == ""
    assert flags["flash_attn"].written == "--flash-attn" and flags["flash_attn"].label == "--flash-attn"
    assert all(s.origin == "flag" for s in flags.values())
    assert view.flags("--flash-attn", "--flash_attn") == [flags["flash_attn"]]  # either spelling asks for it


def test_env_vars_exported_and_inline_are_settings_keyed_by_name():
    text = "export VLLM_ATTENTION_BACKEND=FLASH_ATTN\nACCELERATE_MIXED_PRECISION=bf16 accelerate launch t.py\n"
    views = shell_views(text)
    command = next(v for v in views if v.kind == "command")
    env = {s.key: s for s in command.env("VLLM_ATTENTION_BACKEND", "ACCELERATE_MIXED_PRECISION")}
    assert at(text, env["VLLM_ATTENTION_BACKEND"].value_span) == "FLASH_ATTN"
    assert env["ACCELERATE_MIXED_PRECISION"].value == "bf16" and env["ACCELERATE_MIXED_PRECISION"].origin == "env"
    assert [s.key for s in next(v for v in views if v.kind == "env").settings] == ["VLLM_ATTENTION_BACKEND"]
    # env vars are not Hydra keys: get() and by_name() never return them
    assert command.get("VLLM_ATTENTION_BACKEND") is None and not command.by_name("VLLM_ATTENTION_BACKEND")


def test_heredoc_read_into_a_variable_gives_its_words_at_their_place_in_the_body():
    text = ("ATTN=flash_attention_2\n"
            "read -r -d '' training_commands <<EOF\n"
            "openrlhf.cli.train_sft \\\n"
            "   --ds.param_dtype bf16 \\\n"
            "   --ds.attn_implementation $ATTN \\\n"
            "   --ds.packing_samples\n"
            "EOF\n"
            "deepspeed --module $training_commands\n")
    (view,) = shell_views(text)
    assert view.command_words[:3] == ("deepspeed", "--module", "openrlhf.cli.train_sft")
    flags = {s.key: s for s in view.settings if s.flag}
    dtype = flags["ds.param_dtype"]
    assert dtype.value == "bf16" and text.index("--ds.param_dtype bf16") < dtype.value_span.start < text.rindex("EOF\n")
    assert at(text, dtype.key_span) == "--ds.param_dtype"
    attn = flags["ds.attn_implementation"]
    assert attn.value == "flash_attention_2" and at(text, attn.value_span) == "flash_attention_2"
    assert attn.value_span.start < text.index("read")  # through $ATTN to its assignment
    assert flags["ds.packing_samples"].switch


def test_a_quoted_heredoc_variable_and_a_quoted_use_are_not_split_wrongly():
    text = "read -r -d '' A <<'EOF'\n--bf16 \\\n--x 1\nEOF\nrun \"$A\"\nrun2 $A\n"
    views = shell_views(text)
    assert [s.key for s in views[0].settings if s.flag] == []  # "$A" in quotes is one argument
    assert {s.key for s in views[1].settings if s.flag} == {"bf16", "x"}


def test_array_items_are_words_of_the_command_that_expands_them():
    text = 'ARGS=(\n  --bf16  # why\n  --attn_implementation "flash_attention_2"\n)\nARGS+=(--lr 1)\ntrain "${ARGS[@]}"\n'
    (view,) = shell_views(text)
    flags = {s.key: s for s in view.settings if s.flag}
    assert set(flags) == {"bf16", "attn_implementation", "lr"}
    assert at(text, flags["attn_implementation"].value_span) == "flash_attention_2"


def test_python_in_a_heredoc_and_in_python_c_is_checked_and_fixed_in_place(tmp_path):
    script = tmp_path / "run.sh"
    text = ("python3 - <<'PY'\nimport torch\nx = torch.zeros(1, dtype=torch.bfloat16)\nPY\n"
            "python -c 'import torch; torch.ones(1, dtype=torch.bfloat16)'\n"
            "python -c \"import torch; torch.ones(1, dtype=\\\"bfloat16\\\")\"\n")
    script.write_text(text)
    report = scan_paths([str(script)], SM61)
    lines = text.splitlines()
    assert sorted((f.code, f.location.line, f.location.column) for f in report.findings) == [
        ("RLC101", 3, lines[2].index("torch.bf") + 1), ("RLC101", 5, lines[4].index("torch.bf") + 1),
        ("RLC102", 6, lines[5].index('\\"bfloat16') + 2)]
    fix_paths([str(script)], SM61)
    assert script.read_text() == text.replace("torch.bfloat16", "torch.float32").replace(
        '\\"bfloat16\\"', '\\"float32\\"')


def test_a_python_fix_that_would_need_shell_quoting_is_not_offered(tmp_path):
    # the fix would write `"` inside a double-quoted shell word: it would end the word, so it is left to the user
    from rlcompat.lang.embedded import Embedded, _map_fix
    from rlcompat.findings import Edit, Fix, FixSafety

    block = Embedded("python", [(c, 10 + i) for i, c in enumerate("x = 'a'")], forbidden='"$`\\')
    assert _map_fix(block, Fix((Edit(4, 7, '"b"'),), FixSafety.SAFE, "")) is None
    assert _map_fix(block, Fix((Edit(5, 6, "b"),), FixSafety.SAFE, "")).edits == (Edit(15, 16, "b"),)


PY = '''import argparse, os
from dataclasses import dataclass, field
os.environ["VLLM_ATTENTION_BACKEND"] = "FLASH_ATTN"
os.environ.setdefault("ACCELERATE_MIXED_PRECISION", "bf16")
p = argparse.ArgumentParser()
p.add_argument("--ds.param_dtype", type=str, default="bf16")
p.add_argument("--attn-implementation", dest="attn", default="flash_attention_2")
@dataclass
class Args:
    bf16: bool = True
    torch_dtype: str = field(default="bfloat16")
ds = {"bf16": {"enabled": True}, "fp16": {"enabled": "auto"}}
cfg = GRPOConfig(use_vllm=True, bf16=True, dtype=get())
if bf16:
    ds["x"] = {"bf16": True}
training_args.bf16 = True
ds["fp16"] = "bf16"
'''


def test_python_settings_cover_argparse_fields_dicts_environ_and_keywords():
    found = pysettings.settings_of(PY, ("bf16", "flash", "FLASH", "vllm", "dtype"))
    by = {(s.origin, s.key): s for s in found}
    arg = by[("argparse-default", "ds.param_dtype")]
    assert arg.flag and arg.written == "--ds.param_dtype" and at(PY, arg.value_span) == "bf16"
    assert by[("argparse-default", "attn")].value == "flash_attention_2"  # dest= wins
    assert at(PY, by[("env", "VLLM_ATTENTION_BACKEND")].value_span) == "FLASH_ATTN"
    assert by[("env", "ACCELERATE_MIXED_PRECISION")].value == "bf16"
    field_ = by[("python-field", "bf16")]
    assert field_.value == "True" and field_.call == "Args" and at(PY, field_.key_span) == "bf16"
    assert by[("python-field", "torch_dtype")].value == "bfloat16"
    assert by[("python-dict", "bf16.enabled")].value == "True" and by[("python-dict", "fp16.enabled")].value == "auto"
    kw = by[("python-keyword", "use_vllm")]
    assert kw.call == "GRPOConfig" and kw.value == "True" and at(PY, kw.key_span) == "use_vllm"
    assert by[("python-keyword", "dtype")].value is None and by[("python-keyword", "dtype")].value_span is None
    attr = by[("python-assign", "bf16")]
    assert attr.call == "training_args" and attr.value == "True" and at(PY, attr.key_span) == "bf16"
    assert by[("python-assign", "fp16")].value == "bf16" and by[("python-assign", "fp16")].call == "ds"
    # under `if bf16:` the dict only follows a choice made elsewhere
    assert not [s for s in found if s.origin == "python-dict" and s.key == "bf16" ]


def test_python_settings_are_not_double_reported_even_when_the_python_rule_is_ignored(tmp_path):
    path = tmp_path / "t.py"
    path.write_text('model = AutoModel.from_pretrained("m", attn_implementation="flash_attention_2")\n')
    codes = [f.code for f in scan_paths([str(path)], SM61).findings]
    assert codes == ["RLC201"]
    from rlcompat.config import Options

    ignoring = Options(ignore=("RLC201",))
    assert [f.code for f in scan_paths([str(path)], SM61, settings=ignoring).findings] == []


def test_setting_defaults_keep_old_callers_working():
    s = Setting("a.b", "x", Span(0, 1), Span(2, 3))
    assert s.origin == "" and not s.flag and not s.switch and s.label == "a.b" and not s.env


def test_bash_c_strings_are_scripts_with_findings_and_fixes_in_the_string(tmp_path):
    script = tmp_path / "run.sh"
    text = ('srun -N1 bash -c \\\n"pip install x==$V \\\n&& python3 train.py \\\n    --bf16 \\\n'
            '    --attn_implementation flash_attention_2 \\\n    --x 1" &>> log\n'
            "docker run img sh -c 'accelerate launch --mixed_precision=bf16 t.py'\n")
    script.write_text(text)
    found = sorted((f.code, f.location.line) for f in scan_paths([str(script)], SM61).findings)
    assert found == [("RLC107", 4), ("RLC107", 7), ("RLC204", 5)]
    fix_paths([str(script)], SM61)
    assert script.read_text() == (text.replace("    --bf16 \\\n", "").replace("flash_attention_2", "sdpa")
                                  .replace("=bf16", "=no"))


def test_overrides_of_other_hydra_entry_points_are_settings():
    text = ("torchrun --nnodes=1 sft.py model.torch_dtype=bfloat16 +trainer.x=1\n"
            "tune run lora --config c dtype=bf16\necho a.b=1\n")
    views = shell_views(text)
    keys = [[(s.origin, s.key, s.prefix) for s in v.settings if s.origin == "hydra-override"] for v in views]
    assert keys == [[("hydra-override", "model.torch_dtype", ""), ("hydra-override", "trainer.x", "+")],
                    [("hydra-override", "dtype", "")], []]
    assert not views[0].is_verl and views[0].get("model.torch_dtype").value == "bfloat16"
