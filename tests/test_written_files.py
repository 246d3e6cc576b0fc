"""A shell heredoc copied into a file (`cat <<EOF > cfg.yaml`) is checked as that file: RLHFlow/Online-RLHF's
run_loop.sh writes its DPO config this way (`bf16: true`) and hands it to `accelerate launch run_dpo.py cfg.yaml`."""

from __future__ import annotations

from rlcompat.api import fix_paths, scan_paths
from rlcompat.knowledge.targets import resolve_target

SM75 = resolve_target("sm75")

LOOP = """run() {
    cat <<EOT > dpo_config.yaml
run_name: $1
bf16: true
EOT
    accelerate launch train.py dpo_config.yaml
}
"""


def _found(tmp_path, text: str, name: str = "loop.sh") -> list[tuple[str, int]]:
    path = tmp_path / name
    path.write_text(text)
    return sorted((f.code, f.location.line) for f in scan_paths([str(path)], SM75).findings)


def test_a_heredoc_written_to_a_yaml_file_is_read_as_that_file(tmp_path):
    assert _found(tmp_path, LOOP) == [("RLC107", 4)]
    path = tmp_path / "loop.sh"
    fix_paths([str(path)], SM75)
    assert path.read_text() == LOOP.replace("bf16: true", "bf16: false")


def test_every_spelling_of_the_copy(tmp_path):
    for first in ("cat > cfg.yml <<'EOF'", "cat <<-EOF >>\"$OUT/cfg.yaml\"", "tee -a cfg.yaml <<EOF >/dev/null",
                  "cat << EOF | sudo tee cfg.yaml"):
        text = f"{first}\nbf16: true\nEOF\n"
        assert _found(tmp_path, text) == [("RLC107", 2)], first


def test_a_json_heredoc_is_read_as_json(tmp_path):
    text = 'cat > ds_config.json <<EOF\n{"bf16": {"enabled": true}}\nEOF\ndeepspeed train.py --deepspeed ds_config.json\n'
    assert [code for code, line in _found(tmp_path, text) if line == 2]


def test_a_heredoc_that_writes_no_config_is_not_read_as_one(tmp_path):
    # the body goes to a file of no config language, to a command, or is printed: not a config the run reads
    for first in ("cat <<EOF > notes.txt", "cat <<EOF", "python - <<EOF > out.yaml", "cat <<EOF 2>err.yaml",
                  "cat <<EOF > train.py"):
        text = f"{first}\nbf16: true\nEOF\n"
        assert _found(tmp_path, text) == [], first


def test_an_unquoted_body_forbids_what_the_shell_expands_there():
    from rlcompat.lang.written_files import heredoc_file

    text = "cat <<EOF > c.yaml\nk: v\nEOF\n"
    word = text.index("EOF")
    heredoc = (word, word + 3, text.index("k:"), text.rindex("EOF"))
    assert heredoc_file("cat", text, 0, heredoc, quoted=False).forbidden == "$`\\"
    assert heredoc_file("cat", text, 0, heredoc, quoted=True).forbidden == ""
    assert heredoc_file("cat", text, 0, heredoc, quoted=True).code == "k: v\n"
