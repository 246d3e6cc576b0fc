"""A command that runs a shell script of the tree starting vLLM (RHLFlow/Online-RLHF's run_loop.sh:
`bash generation/register_server.sh $model_path`) is reported at the call below vLLM's minimum (RLC407)."""

from __future__ import annotations

from rlcompat.api import scan_paths
from rlcompat.knowledge.targets import resolve_target

SERVER = "#!/bin/bash\nfor i in 0 1\ndo\n    CUDA_VISIBLE_DEVICES=$i python -m vllm.entrypoints.api_server \\\n" \
         "        --model $1 --port $((8000+i)) &\ndone\n"


def _tree(tmp_path, loop: str, server: str = SERVER):
    (tmp_path / ".git").mkdir(exist_ok=True)
    (tmp_path / "generation").mkdir(exist_ok=True)
    (tmp_path / "generation" / "register_server.sh").write_text(server)
    (tmp_path / "run_loop.sh").write_text(loop)
    return str(tmp_path / "run_loop.sh")


def _calls(path: str, target: str) -> list[tuple[int, str]]:
    return [(f.location.line, f.message.split(";")[0]) for f in scan_paths([path], resolve_target(target)).findings
            if f.code == "RLC407"]


def test_a_called_script_that_starts_vllm_is_reported_at_the_call(tmp_path):
    loop = "run() {\n    bash generation/register_server.sh $1\n    sleep 140\n}\n"
    path = _tree(tmp_path, loop)
    assert _calls(path, "sm61") == [
        (2, "this runs generation/register_server.sh, which starts vLLM (generation/register_server.sh:4)")]
    assert _calls(path, "sm80") == []  # vLLM runs there


def test_every_way_of_running_it(tmp_path):
    for call in ("sh -x generation/register_server.sh m", "./generation/register_server.sh m",
                 "source generation/register_server.sh", ". generation/register_server.sh"):
        assert [line for line, _ in _calls(_tree(tmp_path, call + "\n"), "sm61")] == [1], call


def test_a_called_script_that_starts_no_vllm_is_not_reported(tmp_path):
    quiet = "# python -m vllm.entrypoints.api_server --model m\necho vllm\n"
    assert _calls(_tree(tmp_path, "bash generation/register_server.sh m\n", quiet), "sm61") == []
    # `bash -c CODE` runs code written at the call, and a script the tree lacks is not guessed at
    for call in ("bash -c 'echo generation/register_server.sh'", "bash generation/missing.sh",
                 "bash $DIR/register_server.sh"):
        assert _calls(_tree(tmp_path, call + "\n"), "sm61") == [], call
