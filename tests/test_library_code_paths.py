"""Issue 28, item 3: knowledge of library code paths no config key names, judged in real trees by the versions the
tree declares (or, where it declares nothing, has installed): TRL's Triton kernels by Triton release (RLC130), TRL's
asynchronous GRPO trainer (RLC430), and old verl's remove-padding packing without FlashAttention-2 (RLC206)."""

from __future__ import annotations

import pytest

from rlcompat.knowledge import identity
from rlcompat.api import fix_paths, scan_paths
from rlcompat.config import Options
from rlcompat.knowledge import trl_paths, verl_packing
from rlcompat.knowledge.targets import resolve_target

TRAIN = ("from trl import GRPOConfig, GRPOTrainer\n"
         "args = GRPOConfig(output_dir='o')\n"
         "trainer = GRPOTrainer(model='Qwen/Qwen2.5-0.5B', reward_funcs=[r], args=args, train_dataset=ds)\n")
ASYNC = ("from trl.experimental.async_grpo import AsyncGRPOTrainer\n"
         "trainer = AsyncGRPOTrainer(model='Qwen/Qwen2.5-0.5B', reward_funcs=[r], train_dataset=ds)\n")
RUN = ("python3 -m verl.trainer.main_ppo \\\n"
       "    actor_rollout_ref.model.path=Qwen/Qwen2.5-0.5B-Instruct \\\n"
       "    actor_rollout_ref.model.use_remove_padding=True \\\n"
       "    critic.model.use_remove_padding=True \\\n"
       "    trainer.n_gpus_per_node=1\n")


@pytest.fixture(autouse=True)
def _fresh_identities():
    identity.clear_caches()
    yield
    identity.clear_caches()


def _tree(tmp_path, files: dict[str, str]):
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return tmp_path


def _findings(tree, code: str, target: str = "sm75"):
    report = scan_paths([str(tree)], resolve_target(target), Options(select=[code]), jobs=1)
    return [f for f in report.findings if f.code == code]


# --- the knowledge tables ----------------------------------------------------------------------------------------


def test_triton_releases_are_judged_by_the_measured_thresholds():
    assert trl_paths.triton_fails_bf16("3.1.0") is True
    assert trl_paths.triton_fails_bf16("3.2.0") is True
    assert trl_paths.triton_fails_bf16("3.3.0") is None  # not measured: no claim
    assert trl_paths.triton_fails_bf16("3.3.1") is False
    assert trl_paths.triton_of_torch("2.6.0+cu124") == "3.2.0"
    assert trl_paths.triton_of_torch("2.5.1") == "3.1.0"
    assert trl_paths.triton_of_torch("2.7.0") is None


def test_kernel_paths_start_with_trl_1_14_and_stop_at_the_last_release_read():
    assert trl_paths.kernel_path("1.13.0") is None
    assert "AsyncGRPOTrainer" not in trl_paths.kernel_path("1.14.2").trainers
    assert "AsyncGRPOTrainer" in trl_paths.kernel_path("1.15.0").trainers
    assert trl_paths.kernel_path("1.17.0") is None  # not read: no claim
    for path in trl_paths.kernel_paths():
        assert set(path.sites) == set(path.trainers)


def test_async_grpo_attention_by_release():
    assert trl_paths.async_grpo("1.6.0").attention == ""
    assert trl_paths.async_grpo("1.7.0").site("1.7.0").endswith("async_grpo_trainer.py:412")
    assert trl_paths.async_grpo("1.14.2").site("1.14.2").endswith(":1076")
    assert trl_paths.async_grpo("1.16.0").attention_spelling == "tree_fa3"


def test_old_verl_rows_cover_0_2_and_0_3_only():
    assert verl_packing.old_packing("0.1") is None  # no use_remove_padding key in 0.1
    assert verl_packing.old_packing("0.2.0.post2").releases == ("0.2", "0.3")
    assert ":706" in verl_packing.old_packing("0.3.0.post1").proof
    assert verl_packing.old_packing("0.4.1") is None
    assert verl_packing.old_packing(None) is None


# --- RLC130 in trees ---------------------------------------------------------------------------------------------


def test_a_torch_pin_below_2_7_makes_the_trainer_a_finding_with_the_pin_cited(tmp_path):
    tree = _tree(tmp_path, {"requirements.txt": "trl==1.16.0\ntorch==2.6.0\n", "train.py": TRAIN})
    found = _findings(tree, "RLC130")
    assert len(found) == 1 and found[0].location.line == 3
    assert "Triton 3.2.0" in found[0].message and "requirements.txt:2" in found[0].message
    assert "grpo_trainer.py:1068" in found[0].message


@pytest.mark.parametrize("pins", ["trl==1.16.0\ntorch==2.7.0\n", "trl==1.16.0\ntriton==3.3.1\n",
                                  "trl==1.13.0\ntorch==2.6.0\n", "trl>=1.14\ntorch==2.6.0\n",
                                  "trl==1.16.0\ntorch>=2.4\n"])
def test_no_finding_without_a_known_old_triton_and_a_known_kernel_release(tmp_path, pins):
    tree = _tree(tmp_path, {"requirements.txt": pins, "train.py": TRAIN})
    assert _findings(tree, "RLC130") == []


def test_no_finding_on_ampere_even_with_an_old_triton(tmp_path):
    tree = _tree(tmp_path, {"requirements.txt": "trl==1.16.0\ntriton==3.2.0\n", "train.py": TRAIN})
    assert len(_findings(tree, "RLC130")) == 1
    assert _findings(tree, "RLC130", target="sm80") == []


def test_the_installed_triton_applies_only_where_the_tree_declares_neither(tmp_path, monkeypatch):
    installed = {"trl": "1.15.0", "triton": "3.1.0"}
    monkeypatch.setattr(identity, "installed_version", lambda name: installed.get(name))
    tree = _tree(tmp_path, {"train.py": TRAIN, ".git/HEAD": ""})
    found = _findings(tree, "RLC130", target="sm61")
    assert len(found) == 1 and "installed here" in found[0].message
    assert "no official support" in found[0].message  # below 7.0
    identity.clear_caches()
    (tmp_path / "requirements.txt").write_text("torch>=2.1\n")  # declared, version unknown: no claim
    assert _findings(tree, "RLC130", target="sm61") == []


# --- RLC430 in trees ---------------------------------------------------------------------------------------------


def test_async_grpo_of_a_pinned_release_cites_that_release_line(tmp_path):
    tree = _tree(tmp_path, {"requirements.txt": "trl==1.14.2\n", "train.py": ASYNC})
    found = _findings(tree, "RLC430", target="sm86")
    assert len(found) == 1 and found[0].severity == "error"
    assert "async_grpo_trainer.py:1076" in found[0].message and "TypeError" in found[0].message
    assert _findings(tree, "RLC430", target="sm90") == []


def test_async_grpo_before_1_7_is_judged_on_vllm_only(tmp_path):
    tree = _tree(tmp_path, {"requirements.txt": "trl==1.4.0\nvllm==0.17.1\n", "train.py": ASYNC})
    assert _findings(tree, "RLC430", target="sm70") == []
    found = _findings(tree, "RLC430", target="sm61")
    assert len(found) == 1 and "vLLM 0.17.1 needs compute capability 7.0+" in found[0].message


# --- RLC206 on old verl ------------------------------------------------------------------------------------------


def _verl_fork(tmp_path, version: str, extra: dict[str, str] | None = None):
    return _tree(tmp_path, {"verl/__init__.py": "", "verl/version/version": version + "\n",
                            "verl/trainer/__init__.py": "", "run.sh": RUN, **(extra or {})})


def test_a_verl_0_3_fork_gets_every_remove_padding_switch_turned_off(tmp_path):
    tree = _verl_fork(tmp_path, "0.3.0.post1")
    found = _findings(tree, "RLC206", target="sm75")
    assert [f.location.line for f in found] == [3, 4]
    assert "fsdp_workers.py:202, :706, :965" in found[0].message
    report = fix_paths([str(tree / "run.sh")], resolve_target("sm75"), Options(select=["RLC206"]), jobs=1)
    assert report is not None
    text = (tree / "run.sh").read_text()
    assert "model.use_remove_padding=False" in text and "=True" not in text
    identity.clear_caches()
    assert _findings(tree, "RLC206", target="sm75") == []  # idempotent: nothing left


def test_transformers_4_54_keeps_packed_rows_apart_unless_ulysses_is_on(tmp_path):
    tree = _verl_fork(tmp_path, "0.2.0.post2", {"requirements.txt": "transformers==4.55.0\n"})
    assert _findings(tree, "RLC206") == []
    identity.clear_caches()
    (tree / "run.sh").write_text(RUN.replace("trainer.n_gpus", "actor_rollout_ref.actor.ulysses_sequence_parallel_size=2 \\\n    trainer.n_gpus"))
    found = _findings(tree, "RLC206")
    assert len(found) == 2 and all(f.fix is None for f in found)  # verl asserts remove-padding with Ulysses: no fix
    assert "set it to 1" in found[0].message


def test_a_verl_0_1_fork_is_judged_only_where_its_own_code_carries_remove_padding(tmp_path):
    carrying = {"verl/workers/actor/dp_actor.py": "self.use_remove_padding = self.config.get('use_remove_padding')\n"}
    found = _findings(_verl_fork(tmp_path / "a", "0.1", carrying), "RLC206")
    assert len(found) == 2 and "verl fork (version file 0.1)" in found[0].message
    assert "this fork's workers/actor/dp_actor.py carries verl 0.2's remove-padding" in found[0].message
    identity.clear_caches()
    assert _findings(_verl_fork(tmp_path / "b", "0.1", {"verl/workers/actor/dp_actor.py": "pass\n"}), "RLC206") == []
    identity.clear_caches()
    assert _findings(_verl_fork(tmp_path / "c", "0.1"), "RLC206") == []  # no such file: the tag v0.1's layout


def test_a_pinned_verl_0_1_and_newer_releases_are_not_judged_for_text_models(tmp_path):
    tree = _tree(tmp_path / "a", {"requirements.txt": "verl==0.1\n", "run.sh": RUN})
    assert _findings(tree, "RLC206") == []
    identity.clear_caches()
    assert _findings(_verl_fork(tmp_path / "b", "0.4.1"), "RLC206") == []
    identity.clear_caches()
    tree = _tree(tmp_path / "c", {"requirements.txt": "verl==0.2.0.post2\n", "run.sh": RUN})
    assert [f.location.line for f in _findings(tree, "RLC206")] == [3, 4]


def test_a_sequence_parallel_size_from_an_unset_variable_gets_no_fix(tmp_path):
    run = RUN.replace("trainer.n_gpus", "actor_rollout_ref.actor.ulysses_sequence_parallel_size=$SP \\\n    trainer.n_gpus")
    found = _findings(_verl_fork(tmp_path / "a", "0.3.0.post1", {"run.sh": run}), "RLC206")
    assert len(found) == 2 and all(f.fix is None for f in found)
    identity.clear_caches()
    found = _findings(_verl_fork(tmp_path / "b", "0.3.0.post1", {"run.sh": "SP=1\n" + run}), "RLC206")
    assert len(found) == 2 and all(f.fix is not None for f in found)  # the script sets it to 1


def test_a_triton_pin_added_after_a_cached_scan_is_seen(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    tree = _tree(tmp_path / "src", {"requirements.txt": "trl==1.16.0\n", "train.py": TRAIN})

    def scan():
        identity.clear_caches()
        report = scan_paths([str(tree)], resolve_target("sm75"), Options(select=["RLC130"]), jobs=1, use_cache=True)
        return [f for f in report.findings if f.code == "RLC130"]

    assert scan() == []
    (tree / "requirements.txt").write_text("trl==1.16.0\ntriton==3.2.0\n")
    assert len(scan()) == 1


def test_a_trl_training_command_in_a_job_file_is_judged_by_the_tree_pins(tmp_path):
    job = ("#!/bin/bash\n#SBATCH --gres=gpu:1\n"
           "srun accelerate launch --num_processes 1 -m trl.scripts.grpo --model_name_or_path m --output_dir o\n")
    tree = _tree(tmp_path, {"requirements.txt": "trl==1.15.0\ntorch==2.5.1\n", "train.slurm": job})
    found = _findings(tree, "RLC131", target="sm70")
    assert len(found) == 1 and found[0].location.line == 3
    assert "grpo_trainer.py:1042" in found[0].message and "Triton 3.1.0" in found[0].message
    identity.clear_caches()
    (tmp_path / "train.slurm").write_text(job.replace("--output_dir o", "--output_dir o --bf16 false"))
    assert _findings(tree, "RLC131", target="sm70") == []


def test_a_transformers_requirement_without_an_upper_bound_installs_the_newest_release(tmp_path):
    """ReCall/ReSearch's setup.py asks for transformers>=4.40.0, code-r1's requirements.txt for `transformers`: pip
    installs the newest release (5.24.0, [S362]), which keeps packed rows apart for sdpa and eager [S149]; a cap
    below 4.54.0 (Skywork-OR1's transformers<4.48) does not, and Ulysses patches FlashAttention only either way."""
    for spec in ("transformers>=4.40.0\n", "transformers\n"):
        identity.clear_caches()
        tree = _verl_fork(tmp_path / spec.strip().replace(">=", "-"), "0.2.0.post2", {"requirements.txt": spec})
        assert _findings(tree, "RLC206") == []
    identity.clear_caches()
    found = _findings(_verl_fork(tmp_path / "capped", "0.2.0.post2", {"requirements.txt": "transformers<4.48\n"}), "RLC206")
    assert len(found) == 2 and "this tree declares transformers<4.48" in found[0].message
    identity.clear_caches()
    run = RUN.replace("trainer.n_gpus", "actor_rollout_ref.actor.ulysses_sequence_parallel_size=2 \\\n    trainer.n_gpus")
    found = _findings(_verl_fork(tmp_path / "sp", "0.2.0.post2", {"requirements.txt": "transformers\n", "run.sh": run}),
                      "RLC206")
    assert len(found) == 2 and "set it to 1" in found[0].message and "masks the row" not in found[0].message
