"""The JSON front end: settings with dotted keys and exact spans, located parse errors, byte-keeping fixes, and which
JSON files a directory walk reads."""

from __future__ import annotations

import json

import pytest

from rlcompat.api import fix_paths, scan_paths
from rlcompat.config import Options
from rlcompat.pipeline.discovery import JSON_MAX_BYTES, discover
from rlcompat.lang import jsonfile
from rlcompat.knowledge.targets import resolve_target

DS_CONFIG = """{
  "train_micro_batch_size_per_gpu": "auto",
  "bf16": {
    "enabled": true
  },
  "fp16": {"enabled": "auto", "loss_scale": 0},
  "zero_optimization": {"stage": 3, "offload": [1, {"x": "a\\"b"}], "empty": {}}
}
"""


def _settings(text):
    return {s.key: s for s in jsonfile.parse(text).settings}


def test_keys_are_dotted_paths_with_exact_value_spans():
    found = _settings(DS_CONFIG)
    assert set(found) == {"train_micro_batch_size_per_gpu", "bf16.enabled", "fp16.enabled", "fp16.loss_scale",
                          "zero_optimization.stage", "zero_optimization.offload.0", "zero_optimization.offload.1.x",
                          "zero_optimization.empty"}
    for key, value in [("bf16.enabled", "true"), ("fp16.enabled", "auto"), ("zero_optimization.stage", "3")]:
        s = found[key]
        assert s.value == value and s.origin == "json"
        assert DS_CONFIG[s.value_span.start:s.value_span.end] == value
        assert DS_CONFIG[s.key_span.start:s.key_span.end] == key.rsplit(".", 1)[1]
    assert found["bf16.enabled"].as_bool() is True
    # a string written with an escape is read, but never rewritten; an empty object is there with no value
    assert found["zero_optimization.offload.1.x"].value == 'a"b' and found["zero_optimization.offload.1.x"].value_span is None
    assert found["zero_optimization.empty"].value is None


@pytest.mark.parametrize("text, line, column", [('{"a": [1,}\n', 1, 10), ('{\n  "a": 1\n  "b": 2\n}', 3, 3),
                                                 ("", 1, 1), ('{"a": tru}', 1, 7)])
def test_parse_errors_name_line_and_column(text, line, column):
    with pytest.raises(jsonfile.JsonSyntaxError) as info:
        jsonfile.parse(text)
    assert (info.value.line, info.value.column) == (line, column)
    assert info.value.message.startswith("invalid JSON: ")


def test_broken_json_is_reported_and_other_files_still_run(tmp_path):
    (tmp_path / "bad.json").write_text('{"bf16": true,,}\n')
    (tmp_path / "good.json").write_text('{"bf16": true}\n')
    report = scan_paths([str(tmp_path)], resolve_target("sm61"))
    assert [e.path.endswith("bad.json") for e in report.errors] == [True]
    assert "bad.json:1:15:" in report.errors[0].one_line() and "invalid JSON" in report.errors[0].one_line()
    assert [f.code for f in report.findings] == ["RLC107"]


def test_deeply_nested_json_is_an_error_not_a_crash(tmp_path):
    (tmp_path / "deep.json").write_text("[" * 100_000 + '"bf16"' + "]" * 100_000)
    report = scan_paths([str(tmp_path / "deep.json")], resolve_target("sm61"))
    assert len(report.errors) == 1 and not report.findings


def test_fix_keeps_every_other_byte_bom_crlf_and_tabs(tmp_path):
    text = '{\r\n\t"bf16" :  true ,\r\n\t"torch_dtype":"bfloat16",\r\n\t"lr": 1e-6\r\n}'
    path = tmp_path / "args.json"
    path.write_bytes(b"\xef\xbb\xbf" + text.encode())
    fix_paths([str(path)], resolve_target("sm61"))
    assert path.read_bytes() == b"\xef\xbb\xbf" + text.replace("true", "false").replace('"bfloat16"', '"float32"').encode()
    again = fix_paths([str(path)], resolve_target("sm61"))
    assert not again.changed_files


def test_walk_reads_configs_but_not_checkpoint_or_tool_json_or_data(tmp_path):
    for name in ("ds_config.json", "config.json", "package-lock.json", "tokenizer_config.json", "big.json"):
        (tmp_path / name).write_text('{"bf16": {"enabled": true}}')
    (tmp_path / "big.json").write_text(json.dumps({"rows": ["x" * 100] * (JSON_MAX_BYTES // 100)}))
    files, _ = discover([str(tmp_path)], Options())
    assert [p.rsplit("/", 1)[1] for p, lang in files] == ["ds_config.json"]
    assert {lang for _, lang in files} == {"json"}
    # named on the command line (pre-commit names every staged file) the same files are left out, and said so
    not_read = []
    named, _ = discover([str(tmp_path / "config.json"), str(tmp_path / "ds_config.json")], Options(), not_read)
    assert [p.rsplit("/", 1)[1] for p, _ in named] == ["ds_config.json"]
    assert [(p.rsplit("/", 1)[1], why) for p, why in not_read] == [
        ("config.json", "a JSON file tools or checkpoints write, not a run's config")]


hypothesis = pytest.importorskip("hypothesis")
from hypothesis import given, settings, strategies as st  # noqa: E402

_scalars = st.one_of(st.booleans(), st.none(), st.integers(-10**6, 10**6), st.sampled_from(["bf16", "auto", "x y", 'q"'])
                     , st.floats(allow_nan=False, allow_infinity=False))
_json = st.recursive(_scalars, lambda kids: st.one_of(st.lists(kids, max_size=4),
                                                      st.dictionaries(st.text(max_size=5), kids, max_size=4)), max_leaves=20)


@given(_json, st.sampled_from([None, 2, "\t"]))
@settings(max_examples=150, deadline=None)
def test_every_scalar_is_a_setting_whose_span_holds_its_literal(value, indent):
    text = json.dumps(value, indent=indent)
    for s in jsonfile.parse(text).settings:
        if s.value_span is not None:
            assert text[s.value_span.start:s.value_span.end] == s.value


def test_reports_say_which_files_were_not_read_and_why(tmp_path):
    from tests.test_cli import invoke

    (tmp_path / "config.json").write_text('{"torch_dtype": "bfloat16"}')
    (tmp_path / "ds.json").write_text('{"bf16": true}')
    (tmp_path / "notes.txt").write_text("bf16")
    (tmp_path / "x.cfg").write_text("bf16 = true\n")
    code, out, _ = invoke("scan", ".", "x.cfg", "--target", "sm61", "--no-cache", cwd=tmp_path)
    assert code == 1
    assert ("Not read: 1 file (a JSON file tools or checkpoints write, not a run's config: config.json); "
            "1 file (named, but no front end reads .cfg files: x.cfg); "
            "1 file of types no front end reads (1 .txt).") in out
    code, out, _ = invoke("scan", ".", "--target", "sm61", "--no-cache", "--output-format", "json", cwd=tmp_path)
    doc = json.loads(out)
    assert doc["not_read"] == [{"path": "config.json", "reason": "a JSON file tools or checkpoints write, not a run's config"}]
    assert doc["not_read_other_types"] == 2
    # nothing left out: no line, and the text report is as before
    code, out, _ = invoke("scan", "ds.json", "--target", "sm61", "--no-cache", cwd=tmp_path)
    assert "Not read" not in out
