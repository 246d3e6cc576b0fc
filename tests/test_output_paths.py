"""File names in JSON and SARIF output: UTF-8 documents whatever the names' bytes, and a lossless URI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from urllib.parse import unquote_to_bytes

import pytest

NAME = b"caf\xe9 #1.py"  # Latin-1: not UTF-8


@pytest.fixture
def tree(tmp_path):
    try:
        with open(os.path.join(os.fsencode(tmp_path), NAME), "wb") as fh:
            fh.write(b"import torch\nx = t.to(torch.bfloat16)\n")
    except OSError:
        pytest.skip("this file system does not take names that are not UTF-8")
    (tmp_path / "d\u00e9j\u00e0.py").write_text("import torch\nx = t.to(torch.bfloat16)\n")
    return tmp_path


def _run(tree, fmt: str) -> bytes:
    env = dict(os.environ, LC_ALL="C.UTF-8", PYTHONIOENCODING="utf-8")  # strict UTF-8 stdout, as in CI
    proc = subprocess.run([sys.executable, "-m", "rlcompat", "scan", ".", "--target", "sm61", "--no-cache",
                           "--output-format", fmt], cwd=tree, capture_output=True, env=env, timeout=120)
    assert proc.returncode == 1, proc.stderr.decode(errors="replace")
    return proc.stdout


def test_json_writes_names_that_are_not_utf8_as_text_and_as_a_percent_encoded_uri(tree):
    doc = json.loads(_run(tree, "json").decode("utf-8"))  # strict: the document is valid UTF-8
    by_uri = {f["uri"]: f for f in doc["findings"]}
    assert sorted(unquote_to_bytes(u) for u in by_uri) == sorted([NAME, "d\u00e9j\u00e0.py".encode()])
    latin = next(f for u, f in by_uri.items() if unquote_to_bytes(u) == NAME)
    assert latin["path"] == "caf\ufffd #1.py" and latin["uri"] == "caf%E9%20%231.py"
    utf8 = next(f for f in doc["findings"] if f is not latin)
    assert utf8["path"] == "d\u00e9j\u00e0.py"  # a UTF-8 name is written as it is


def test_json_and_sarif_give_the_same_uris(tree):
    doc = json.loads(_run(tree, "json").decode("utf-8"))
    sarif = json.loads(_run(tree, "sarif").decode("utf-8"))
    sarif_uris = [r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in sarif["runs"][0]["results"]]
    assert sorted(f["uri"] for f in doc["findings"]) == sorted(sarif_uris)


def test_json_errors_carry_the_uri_too(tmp_path):
    (tmp_path / "bad file.py").write_text("import torch\nx = torch.bfloat16(\n")
    env = dict(os.environ, LC_ALL="C.UTF-8")
    proc = subprocess.run([sys.executable, "-m", "rlcompat", "scan", ".", "--target", "sm61", "--no-cache",
                           "--output-format", "json"], cwd=tmp_path, capture_output=True, env=env, timeout=120)
    errors = json.loads(proc.stdout)["errors"]
    assert proc.returncode == 1 and [(e["path"], e["uri"]) for e in errors] == [("bad file.py", "bad%20file.py")]
