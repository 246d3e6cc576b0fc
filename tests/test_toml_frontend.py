"""The TOML front end: settings with dotted keys and exact spans (tables, dotted keys, inline tables, arrays, arrays
of tables), located parse errors, byte-keeping fixes, and which TOML files a directory walk reads."""

from __future__ import annotations

import re
from rlcompat._toml import load_toml_text
from pathlib import Path

import pytest

from rlcompat.api import fix_paths, scan_paths
from rlcompat.config import Options
from rlcompat.pipeline.discovery import TOML_MAX_BYTES, discover
from rlcompat.lang import tomlfile
from rlcompat.knowledge.targets import resolve_target

REPO = Path(__file__).resolve().parents[1]

TRAIN_CONFIG = '''# torchtitan Config.toml
[job]
dump_folder = "./outputs"   # where it writes
description = 'Llama 3 "8B" training'

[model]
name = "llama3"
converters = ["float8", 'mx']
"quoted key".x = 1

[training]
mixed_precision_param = "bfloat16" # bf16 mixed precision
dtype = """
float32"""
escaped = "a\\"b"
when = 1979-05-27 07:32:00Z
empty = []
inline = { a = true, b = { c = "bf16" } }

[[products]]
name = "a"
[[products.sub]]
x = 1
[[products]]
name = "b"

[compile]
enable = true
components = [
  "model", # the model
  "loss",
]
'''


def _settings(text):
    return {s.key: s for s in tomlfile.parse(text).settings}


def test_keys_are_dotted_paths_with_exact_spans():
    found = _settings(TRAIN_CONFIG)
    assert set(found) == {
        "job.dump_folder", "job.description", "model.name", "model.converters.0", "model.converters.1",
        "model.quoted key.x", "training.mixed_precision_param", "training.dtype", "training.escaped", "training.when",
        "training.empty", "training.inline.a", "training.inline.b.c", "products.0.name", "products.0.sub.0.x",
        "products.1.name", "compile.enable", "compile.components.0", "compile.components.1"}
    for key, value in [("training.mixed_precision_param", "bfloat16"), ("compile.enable", "true"),
                       ("model.converters.1", "mx"), ("training.when", "1979-05-27 07:32:00Z"),
                       ("training.inline.b.c", "bf16"), ("job.description", 'Llama 3 "8B" training')]:
        s = found[key]
        assert s.value == value and s.origin == "toml"
        assert TRAIN_CONFIG[s.value_span.start:s.value_span.end] == value
    s = found["training.mixed_precision_param"]
    assert TRAIN_CONFIG[s.key_span.start:s.key_span.end] == "mixed_precision_param"
    assert TRAIN_CONFIG[s.word_span.start:s.word_span.end] == '"bfloat16"'
    assert found["compile.enable"].as_bool() is True
    # multi-line and escaped strings are read (as the TOML parser decodes them) but never rewritten
    assert found["training.dtype"].value == "float32" and found["training.dtype"].value_span is None
    assert found["training.escaped"].value == 'a"b' and found["training.escaped"].value_span is None
    assert found["training.empty"].value is None


def test_values_agree_with_tomllib_on_a_real_shaped_file():
    data = load_toml_text(TRAIN_CONFIG)
    for key, s in _settings(TRAIN_CONFIG).items():
        node = data
        for part in key.split("."):
            node = node[int(part)] if isinstance(node, list) else node[part]
        if s.value is None:
            assert node in ([], {})
        elif isinstance(node, bool):
            assert s.value == str(node).lower()
        elif isinstance(node, str):
            assert s.value == node
        else:
            assert s.value  # numbers and dates: the literal as written


@pytest.mark.parametrize("text, line, column", [("[a\nx = 1\n", 1, 3), ("a = 1\na = 2\n", 2, 6),
                                                 ('x = "open\n', 1, 10), ("x = tru\n", 1, 5)])
def test_parse_errors_name_line_and_column(text, line, column):
    with pytest.raises(tomlfile.TomlSyntaxError) as info:
        tomlfile.parse(text)
    assert (info.value.line, info.value.column) == (line, column)
    assert info.value.message.startswith("invalid TOML: ") and "(at line" not in info.value.message


def test_broken_toml_is_reported_and_other_files_still_run(tmp_path):
    (tmp_path / "bad.toml").write_text("[training]\nmixed_precision_param = \n")
    (tmp_path / "good.toml").write_text('[training]\nmixed_precision_param = "bfloat16"\n')
    report = scan_paths([str(tmp_path)], resolve_target("sm61"))
    assert [e.path.endswith("bad.toml") for e in report.errors] == [True]
    assert "bad.toml:2:" in report.errors[0].one_line() and "invalid TOML" in report.errors[0].one_line()
    assert [(f.path.rsplit("/", 1)[1], f.location.line) for f in report.findings] == [("good.toml", 2)]


def test_deeply_nested_toml_is_an_error_not_a_crash(tmp_path):
    (tmp_path / "deep.toml").write_text("x = " + "[" * 100_000 + '"bf16"' + "]" * 100_000 + "\n")
    report = scan_paths([str(tmp_path / "deep.toml")], resolve_target("sm61"))
    assert len(report.errors) == 1 and not report.findings


def test_fix_keeps_every_other_byte_bom_crlf_comments_and_is_idempotent(tmp_path):
    text = ('# train\r\n[training]\r\nmixed_precision_param =  "bfloat16"   # bf16\r\n\r\n'
            '[compile]\r\n\tenable = true # compile\r\ncomponents = ["model"]\r\n')
    path = tmp_path / "llama3_8b.toml"
    path.write_bytes(b"\xef\xbb\xbf" + text.encode())
    fix_paths([str(path)], resolve_target("sm61"))
    expected = text.replace('"bfloat16"', '"float32"').replace("enable = true", "enable = false")
    assert path.read_bytes() == b"\xef\xbb\xbf" + expected.encode()
    again = fix_paths([str(path)], resolve_target("sm61"))
    assert not again.changed_files


def test_a_string_rewritten_to_a_boolean_loses_its_quotes():
    from rlcompat.findings import Edit

    s = _settings('[x]\nflag = "true"\n')["x.flag"]
    assert s.rewrite(False) == Edit(s.word_span.start, s.word_span.end, "false")


def test_walk_reads_trainer_configs_not_tool_files_and_pyproject_stays_declared(tmp_path):
    for name in ("llama3_8b.toml", "Cargo.toml", "ruff.toml", "big.toml"):
        (tmp_path / name).write_text('[training]\nmixed_precision_param = "bfloat16"\n')
    (tmp_path / "big.toml").write_text("rows = [" + ", ".join(['"xxxxxxxx"'] * (TOML_MAX_BYTES // 10)) + "]\n")
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\ndependencies = ["torch"]\n')
    not_read = []
    files, _ = discover([str(tmp_path)], Options(), not_read)
    assert [(p.rsplit("/", 1)[1], lang) for p, lang in files] == [("llama3_8b.toml", "toml"), ("pyproject.toml", "pyproject")]
    assert sorted(p.rsplit("/", 1)[1] for p, _ in not_read) == ["Cargo.toml", "big.toml", "ruff.toml"]
    # named on the command line (pre-commit names every staged file): the same files are left out, and said so
    not_read = []
    named, _ = discover([str(tmp_path / "Cargo.toml"), str(tmp_path / "llama3_8b.toml")], Options(), not_read)
    assert [p.rsplit("/", 1)[1] for p, _ in named] == ["llama3_8b.toml"]
    assert [(p.rsplit("/", 1)[1], why) for p, why in not_read] == [
        ("Cargo.toml", "a build or lint tool's TOML file, not a run's config")]


def test_precommit_hooks_name_toml_files():
    hooks = (REPO / ".pre-commit-hooks.yaml").read_text()
    patterns = re.findall(r"files: '([^']+)'", hooks)
    assert len(patterns) == 2
    for pattern in patterns:
        assert re.search(pattern, "torchtitan/models/llama3/train_configs/llama3_8b.toml")
        assert re.search(pattern, "pyproject.toml")
    assert hooks.count("toml]") == 2  # types_or


def test_notebook_writefile_toml_cell_is_read_as_toml(tmp_path):
    import json

    cell = {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
            "source": ["%%writefile train.toml\n", "[training]\n", "mixed_precision_param = \"bfloat16\"\n"]}
    nb = {"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    path = tmp_path / "t.ipynb"
    path.write_text(json.dumps(nb, indent=1))
    report = scan_paths([str(path)], resolve_target("sm61"))
    assert [f.location.line for f in report.findings] and all("(cell 1, line 3)" in f.message for f in report.findings)


hypothesis = pytest.importorskip("hypothesis")
from hypothesis import given, settings, strategies as st  # noqa: E402

_words = st.sampled_from(["bf16", "bfloat16", "auto", "x y", "a.b", "q'", "", "é"])
_scalars = st.one_of(st.booleans(), st.integers(-10**6, 10**6), _words)


def _literal(v, style):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    return f"'{v}'" if style and "'" not in v else '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'


@given(st.dictionaries(st.sampled_from(["training", "compile", "model", "a b"]),
                       st.dictionaries(st.sampled_from(["dtype", "enable", "x-y", "k"]),
                                       st.one_of(_scalars, st.lists(_scalars, max_size=3)), max_size=4), max_size=4),
       st.booleans(), st.sampled_from(["\n", "\r\n"]))
@settings(max_examples=150, deadline=None)
def test_every_scalar_is_a_setting_whose_span_holds_its_literal(tables, literal_style, newline):
    lines = []
    for table, body in tables.items():
        lines.append(f'["{table}"]' if " " in table else f"[{table}]")
        for key, value in body.items():
            if isinstance(value, list):
                lines.append(f"{key} = [ " + ", ".join(_literal(v, literal_style) for v in value) + " ] # c")
            else:
                lines.append(f"{key} = {_literal(value, literal_style)}")
    text = newline.join(lines) + newline
    data = load_toml_text(text)
    found = tomlfile.parse(text).settings
    for s in found:
        if s.value_span is not None:
            assert text[s.value_span.start:s.value_span.end] == s.value
    scalars = sum(max(1, len(v)) if isinstance(v, list) else 1 for body in data.values() for v in body.values())
    assert len(found) == scalars
