from __future__ import annotations

import json

from tests.test_cli import invoke

CODE = "import torch\n\ndef load(p):\n    return AutoModel.from_pretrained(p, torch_dtype=torch.bfloat16)\n"


def test_baseline_hides_known_findings_and_reports_new_ones(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    (src / "a.py").write_text(CODE)
    base = tmp_path / "rlcompat-baseline.json"
    code, _, err = invoke("scan", str(src), "--target", "sm61", "--write-baseline", str(base))
    assert code == 0 and "Wrote 1 finding" in err
    doc = json.loads(base.read_text())
    assert doc["findings"][0]["path"] == "src/a.py" and doc["findings"][0]["code"] == "RLC101"

    code, out, _ = invoke("scan", str(src), "--target", "sm61", "--baseline", str(base))
    assert code == 0 and "All clear" in out

    # Moving code around (new lines above, re-indentation) keeps the finding known.
    moved = "import torch\n\n\nX = 1\n\nclass Loader:\n    def load(self, p):\n        return AutoModel.from_pretrained(p, torch_dtype=torch.bfloat16)\n"
    (src / "a.py").write_text(moved)
    assert invoke("scan", str(src), "--target", "sm61", "--baseline", str(base))[0] == 0

    # One new hazard is reported, alone, and fails the gate.
    (src / "a.py").write_text(moved + "\nmp = MixedPrecision(param_dtype=torch.bfloat16)\n")
    code, out, _ = invoke("scan", str(src), "--target", "sm61", "--baseline", str(base), "--output-format", "json")
    doc = json.loads(out)
    assert code == 1 and [f["line"] for f in doc["findings"]] == [10]


def test_a_second_identical_line_is_new(tmp_path):
    (tmp_path / "a.py").write_text(CODE)
    base = tmp_path / "b.json"
    invoke("scan", str(tmp_path / "a.py"), "--target", "sm61", "--write-baseline", str(base))
    (tmp_path / "a.py").write_text(CODE + "    return AutoModel.from_pretrained(p, torch_dtype=torch.bfloat16)\n")
    code, out, _ = invoke("scan", str(tmp_path / "a.py"), "--target", "sm61", "--baseline", str(base), "--output-format", "json")
    assert code == 1 and json.loads(out)["summary"]["findings"] == 1


def test_missing_baseline_is_a_usage_error(tmp_path):
    (tmp_path / "a.py").write_text(CODE)
    code, _, err = invoke("scan", str(tmp_path), "--target", "sm61", "--baseline", str(tmp_path / "nope.json"))
    assert code == 2 and "nope.json" in err and "--write-baseline" in err
