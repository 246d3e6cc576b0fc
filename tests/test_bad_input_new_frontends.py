"""Bad input for the JSON and notebook front ends and the new shell constructs: never a crash, a one-line error
naming the file where the file is broken, the rest of the run goes on."""

from __future__ import annotations

import pytest

from rlcompat.api import fix_paths, scan_paths
from rlcompat.knowledge.targets import resolve_target

SM61 = resolve_target("sm61")


@pytest.mark.parametrize("name, raw", [
    ("empty.json", b""),
    ("bom_only.json", b"\xef\xbb\xbf"),
    ("latin1.json", b'{"dtype": "bfloat16", "x": "\xe9"}'),
    ("nul.json", b'{"bf16": true}\x00'),
    ("trailing.json", b'{"bf16": true,}'),
    ("comments.json", b'// bf16\n{"bf16": true}'),
    ("nan.json", b'{"bf16": NaN, "a": [1e400, -Infinity]}'),
    ("scalar.json", b'"bf16"'),
    ("nb_not_object.ipynb", b'["bfloat16"]'),
    ("nb_cells_dict.ipynb", b'{"cells": {"a": {"source": "torch.bfloat16"}}}'),
    ("nb_source_string.ipynb", b'{"cells": [{"cell_type": "code", "source": "import torch\\nx = torch.bfloat16"}]}'),
    ("nb_no_type.ipynb", b'{"cells": [{"source": ["import torch\\n", "torch.bfloat16"]}]}'),
    ("nb_bad_escape.ipynb", b'{"cells": [{"cell_type": "code", "source": ["\\ud800 torch.bfloat16"]}]}'),
    ("nb_magic_only.ipynb", b'{"cells": [{"cell_type": "code", "source": ["%%bash\\n", "echo bf16 \'\\n"]}]}'),
    ("unclosed_heredoc.sh", b"read -r -d '' A <<EOF\n--bf16\n"),
    ("unclosed_array.sh", b"A=(--bf16\ntrain \"${A[@]}\"\n"),
    ("python_c_broken.sh", b"python -c 'import torch; torch.bfloat16('\n"),
    ("bash_c_nested.sh", b"bash -c \"bash -c 'bash -c \\\"bash -c x --bf16\\\"'\"\n"),
])
def test_never_crashes_and_errors_are_one_line(tmp_path, name, raw):
    path = tmp_path / name
    path.write_bytes(raw)
    report = scan_paths([str(path)], SM61)
    for e in report.errors:
        assert "\n" not in e.one_line() and name in e.one_line()
    fixed = fix_paths([str(path)], SM61)
    assert not fixed.broken
    again = fix_paths([str(path)], SM61)
    assert not again.changed_files  # idempotent


def test_a_source_string_notebook_is_checked_and_fixed(tmp_path):
    path = tmp_path / "a.ipynb"
    path.write_text('{"cells": [{"cell_type": "code", "source": "import torch\\nx = torch.bfloat16"}]}')
    assert [f.code for f in scan_paths([str(path)], SM61).findings] == ["RLC101"]
    fix_paths([str(path)], SM61)
    assert "torch.float32" in path.read_text()
