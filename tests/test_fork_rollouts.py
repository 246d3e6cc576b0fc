"""A verl fork's own rollout names (rlcompat/analysis/fork_rollouts.py): ReCall's `vllm_with_tool`, dispatched in its
worker code to a class defined in a module that imports vLLM, is judged as vLLM by RLC401, at the shell variable
that names it when the launch script's option parser may replace it (rlcompat/lang/shell.py `_past_arguments`)."""

from __future__ import annotations

import json

from rlcompat.analysis import fork_rollouts
from rlcompat.lang import shell
from tests.verl_trees import verl_package

WORKERS = '''
class ActorRolloutRefWorker:
    def _build_rollout(self):
        rollout_name = self.config.rollout.name
        if rollout_name == 'hf':
            from verl.workers.rollout import HFRollout
            rollout = HFRollout()
        elif self.config.rollout.name == 'vllm_with_tool':
            from verl.workers.rollout.vllm_rollout import vLLMRolloutWithTool
            rollout = vLLMRolloutWithTool()
        elif self.config.rollout.name == 'mixed_tool':
            from verl.workers.rollout.mixed import MixedRollout
            rollout = MixedRollout()
'''
FILES = {
    "workers/fsdp_workers.py": WORKERS,
    "workers/rollout/__init__.py": "from .hf_rollout import HFRollout\n",
    "workers/rollout/hf_rollout.py": "import torch\n\n\nclass HFRollout:\n    pass\n",
    "workers/rollout/vllm_rollout/__init__.py": "from .vllm_rollout_spmd import vLLMRolloutWithTool\n",
    "workers/rollout/vllm_rollout/vllm_rollout_spmd.py": ("from vllm import LLM\n\n\nclass vLLMRollout:\n    pass\n\n\n"
                                                         "class vLLMRolloutWithTool(vLLMRollout):\n    pass\n"),
    "workers/rollout/mixed.py": "import vllm\nimport sglang\n\n\nclass MixedRollout:\n    pass\n",
    "trainer/main_ppo.py": "def main():\n    pass\n",
    "trainer/config/ppo_trainer.yaml": "actor_rollout_ref:\n  rollout:\n    name: vllm\n",
}


def test_a_forks_own_rollout_name_is_the_engine_its_class_imports(tmp_path, fresh_verl_detection):
    package = verl_package(tmp_path, "0.2.0.dev", FILES)
    found = fork_rollouts.dispatched(str(package), "vllm_with_tool")
    assert (found.engine, found.cls, found.where) == ("vllm", "vLLMRolloutWithTool", "workers/fsdp_workers.py:8")
    assert found.defined == "workers/rollout/vllm_rollout/vllm_rollout_spmd.py:8"
    assert fork_rollouts.dispatched(str(package), "hf") is None  # transformers: no engine claimed
    assert fork_rollouts.dispatched(str(package), "mixed_tool") is None  # two engines imported: no claim
    assert fork_rollouts.dispatched(str(package), "other") is None


def test_a_forks_registry_row_is_the_engine_its_class_imports(tmp_path, fresh_verl_detection):
    """verl 0.5+ maps rollout names to class paths in `workers/rollout/base.py`'s `_ROLLOUT_REGISTRY`; a fork's own
    row there is judged as a worker's `==` test is. The release's own rows are known from knowledge."""
    files = {**FILES, "workers/rollout/base.py": (
        "_ROLLOUT_REGISTRY = {\n"
        "    (\"vllm_tool\", \"async\"): \"verl.workers.rollout.vllm_rollout.vllm_rollout_spmd.vLLMRolloutWithTool\",\n"
        "    (\"hf_tool\", \"async\"): \"verl.workers.rollout.hf_rollout.HFRollout\",\n"
        "}\n")}
    package = verl_package(tmp_path, "0.5.0.dev", files)
    found = fork_rollouts.dispatched(str(package), "vllm_tool")
    assert (found.engine, found.cls, found.where) == ("vllm", "vLLMRolloutWithTool", "workers/rollout/base.py:2")
    assert fork_rollouts.dispatched(str(package), "hf_tool") is None


SCRIPT = """ROLLOUT_NAME={name}
while [[ $# -gt 0 ]]; do
    case "$1" in
        --rollout_name) ROLLOUT_NAME="$2"; shift 2;;
    esac
done
python3 -m verl.trainer.main_ppo \\
    actor_rollout_ref.rollout.name=${{ROLLOUT_NAME}}
"""


def test_rlc401_judges_a_forks_own_name_where_the_variable_names_it(run_cli, tmp_path, fresh_verl_detection):
    verl_package(tmp_path, "0.2.0.dev", FILES)
    for name, reported in (("vllm_with_tool", True), ("hf", False), ("mixed_tool", False)):
        (tmp_path / "train.sh").write_text(SCRIPT.format(name=name))
        for target, expected in (("sm61", reported), ("sm75", False)):
            code, out, err = run_cli("scan", "train.sh", "--target", target, "--output-format", "json", "--no-cache",
                                     "--select", "RLC401", cwd=tmp_path)
            found = [f for f in json.loads(out)["findings"] if f["code"] == "RLC401"]
            assert bool(found) == expected, (name, target, found, err)
            if found:
                assert found[0]["line"] == 1 and "vLLMRolloutWithTool" in found[0]["message"]


def test_a_default_an_option_parser_may_replace_is_the_value_of_a_run_without_arguments():
    text = SCRIPT.format(name="vllm_with_tool")
    value, span, where = _value(text)
    assert value == "vllm_with_tool" and text[span.start:span.end] == "vllm_with_tool"
    assert "default" in where
    only_argument = "ROLLOUT_NAME=\"$2\"\npython3 -m verl.trainer.main_ppo actor_rollout_ref.rollout.name=$ROLLOUT_NAME\n"
    assert _value(only_argument)[0] is None  # no default before it: not known


def _value(text: str):
    settings = [s for _, _, group in shell.entry_commands(shell.parse(text), _Scanned()) for s in group]
    setting = next(s for s in settings if s.key == "actor_rollout_ref.rollout.name")
    return setting.value, setting.value_span, setting.via


class _Scanned:
    """The few parts of a ScannedView entry_commands reads: verl's main_ppo runs as an entry module."""

    def runs_entry_module(self, module: str) -> bool:
        return module == "verl.trainer.main_ppo"

    def runs_entry_script(self, path: str) -> bool:
        return False

    switches = frozenset()
    override_clis = ()
