"""A Dockerfile `RUN` heredoc that a shell reads (`RUN <<EOF`, `RUN <<"EOF" bash -exu`: NeMo RL v0.4.0's
docker/Dockerfile installs flash-attn that way) is read as the script it is; a heredoc handed to another program is
not, and the lines after the delimiter are instructions again."""

from __future__ import annotations

from rlcompat.api import scan_source
from rlcompat.knowledge.targets import resolve_target
from rlcompat.lang import dockerfile

BODY = "uv venv /x\nVIRTUAL_ENV=/x uv pip install flash-attn==2.7.4.post1 --no-build-isolation\n"


def _codes(text: str, target: str = "sm75") -> list[tuple[str, int]]:
    return [(f.code, f.location.line) for f in scan_source(text, resolve_target(target), "Dockerfile", "dockerfile")
            if f.code.startswith("RLC6")]


def test_a_heredoc_a_shell_reads_is_scanned_as_its_script():
    for opener in ('RUN <<"EOF" bash -exu -o pipefail', "RUN <<EOF", "RUN <<-'EOF' /bin/sh -e"):
        text = f"FROM python:3.12\n{opener}\n{BODY}EOF\nRUN pip install torch==2.8.0\n"
        assert _codes(text, "sm75") == [("RLC603", 4)], opener  # flash-attn 2 needs 8.0
        assert _codes(text, "sm61") == [("RLC603", 4), ("RLC601", 6)], opener  # and the RUN after the delimiter


def test_a_heredoc_another_program_reads_is_not_a_script_and_offsets_are_kept():
    text = f"FROM python:3.12\nRUN <<EOF python3\n{BODY}EOF\n"
    assert _codes(text) == []
    view = dockerfile.parse(f"FROM python:3.12\nRUN <<EOF\n{BODY}EOF\n").shell_view
    assert view.splitlines()[3] == BODY.splitlines()[1] and "FROM" not in view and "EOF" not in view


def test_an_unterminated_heredoc_reads_to_the_end_of_the_file():
    assert _codes(f"FROM python:3.12\nRUN <<EOF\n{BODY}") == [("RLC603", 4)]
