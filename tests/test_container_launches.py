"""Launch commands outside shell scripts (issue 28 item 1): a Dockerfile's CMD and ENTRYPOINT (shell form and exec
form), and YAML job specs whose values are shell or argument lists (SkyPilot `run:`/`setup:`, GitHub Actions steps,
Kubernetes containers, a KubeRay RayJob's entrypoint, compose services). Each command is judged as the same command
in a script is, at the line it is written on; fixes edit the file in its own syntax, or are refused with a reason."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from rlcompat.api import scan_paths
from rlcompat.knowledge.targets import resolve_target
from rlcompat.lang.languages import refined
from tests.test_cli import invoke

SM61, SM75 = resolve_target("sm61"), resolve_target("sm75")


def _findings(path, target=SM75):
    report = scan_paths([str(path)], target)
    assert not report.errors, report.errors
    return sorted(report.findings, key=lambda f: (f.path, f.location.line, f.location.column, f.code))


def _hits(path, target=SM75):
    return [(f.location.line, f.location.column, f.code) for f in _findings(path, target)]


def _fix(tmp_path, *names, remaining=False):
    code, out, err = invoke("fix", "--unsafe-fixes", "--target", "sm75", "--no-cache", *names, cwd=tmp_path)
    assert code == (1 if remaining else 0), out + err
    return out


def _same_as_script(tmp_path, command: str, target=SM75):
    """The findings of `command` as one line of a shell script: (column offset from the command, code, message)."""
    (tmp_path / "same.sh").write_text(command + "\n")
    found = _findings(tmp_path / "same.sh", target)
    (tmp_path / "same.sh").unlink()
    return [(f.location.column, f.code, f.message) for f in found]


# --- Dockerfile ---------------------------------------------------------------------------------------------------

def test_shell_form_entrypoint_and_cmd_are_judged_as_in_a_script(tmp_path):
    command = "accelerate launch --mixed_precision bf16 train.py --attn_implementation flash_attention_2"
    (tmp_path / "Dockerfile").write_text(f"FROM python:3.11\nENTRYPOINT {command}\nCMD vllm serve m --dtype bfloat16\n")
    found = _findings(tmp_path / "Dockerfile")
    script = _same_as_script(tmp_path, command)
    assert script, "the command is a hazard in a script"
    assert [(f.location.column - len("ENTRYPOINT "), f.code, f.message) for f in found if f.location.line == 2] == script
    assert [f.code for f in found if f.location.line == 3] == ["RLC107"]


def test_shell_form_fix_edits_the_dockerfile(tmp_path):
    (tmp_path / "Dockerfile").write_text("FROM python:3.11\nCMD accelerate launch \\\n    --mixed_precision bf16 train.py\n")
    _fix(tmp_path, "Dockerfile")
    assert (tmp_path / "Dockerfile").read_text() == (
        "FROM python:3.11\nCMD accelerate launch \\\n    --mixed_precision fp16 train.py\n")


def test_exec_form_cmd_continued_over_lines(tmp_path):
    (tmp_path / "Dockerfile").write_text(
        'FROM vllm/vllm-openai:latest\nCMD ["--host", "0.0.0.0",\\\n     "--model", "Qwen/Qwen2.5-0.5B", \\\n'
        '     "--dtype", "bfloat16", \\\n     "--enforce-eager"]\n')
    assert _hits(tmp_path / "Dockerfile") == [(4, 7, "RLC107")]
    _fix(tmp_path, "Dockerfile")
    assert '"--dtype", "float32", \\\n' in (tmp_path / "Dockerfile").read_text()
    assert _hits(tmp_path / "Dockerfile") == []


def test_exec_form_entrypoint_takes_the_stage_cmd_words(tmp_path):
    (tmp_path / "Dockerfile").write_text(
        'FROM python:3.11\nENTRYPOINT ["python3", "-m", "verl.trainer.main_ppo"]\n'
        'CMD ["actor_rollout_ref.rollout.name=vllm", "actor_rollout_ref.rollout.dtype=bfloat16"]\n'
        'FROM python:3.11 AS other\nCMD ["actor_rollout_ref.rollout.dtype=bfloat16"]\n')
    found = _findings(tmp_path / "Dockerfile")
    # the CMD of the first stage runs through verl's entry point; the next stage's CMD has no ENTRYPOINT array
    assert [(f.location.line, f.code) for f in found if f.code == "RLC104"] == [(3, "RLC104")]
    assert [(c, code) for c, code, _ in _same_as_script(
        tmp_path, "python3 -m verl.trainer.main_ppo actor_rollout_ref.rollout.name=vllm "
                  "actor_rollout_ref.rollout.dtype=bfloat16") if code == "RLC104"] == [(70, "RLC104")]
    _fix(tmp_path, "Dockerfile", remaining=True)  # the critic's model in verl's own code (RLC201), as in a script
    cmd = (tmp_path / "Dockerfile").read_text().splitlines()[2]
    assert cmd.startswith('CMD ["actor_rollout_ref.rollout.name=vllm", "actor_rollout_ref.rollout.dtype=float16", ')


def test_exec_form_fix_adds_and_removes_whole_elements(tmp_path):
    (tmp_path / "Dockerfile").write_text(
        'FROM python:3.11\nENTRYPOINT ["python3", "-m", "verl.trainer.main_ppo", "algorithm.adv_estimator=grpo", '
        '"actor_rollout_ref.rollout.name=hf"]\n')
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "Dockerfile").write_text('FROM python:3.11\nCMD ["python", "train.py", "--bf16", "--output_dir", "out"]\n')
    _fix(tmp_path, "Dockerfile", "d/Dockerfile")
    entry = (tmp_path / "Dockerfile").read_text().splitlines()[1]
    assert entry.startswith('ENTRYPOINT ["python3", "-m", "verl.trainer.main_ppo", "algorithm.adv_estimator=grpo", '
                            '"actor_rollout_ref.rollout.name=hf", ')
    assert '"actor_rollout_ref.rollout.dtype=float16"' in entry and entry.endswith('"]')
    assert (tmp_path / "d" / "Dockerfile").read_text() == 'FROM python:3.11\nCMD ["python", "train.py", "--output_dir", "out"]\n'
    assert _hits(tmp_path / "Dockerfile") == [] and _hits(tmp_path / "d" / "Dockerfile") == []
    before = (tmp_path / "Dockerfile").read_text()
    _fix(tmp_path, "Dockerfile")
    assert (tmp_path / "Dockerfile").read_text() == before  # idempotent


def test_exec_form_element_written_with_escapes_keeps_its_finding_without_a_fix(tmp_path):
    text = 'FROM python:3.11\nCMD ["vllm", "serve", "m", "--dtype", "bfloat\\u0031\\u0036"]\n'
    (tmp_path / "Dockerfile").write_text(text)
    found = _findings(tmp_path / "Dockerfile")
    assert [f.location.line for f in found] == [2]  # (RLC118: RLC107's trigger words are not spelled in the file)
    assert found[0].fix is None and "(no fix: an exec-form array" in found[0].message
    _fix(tmp_path, "Dockerfile", remaining=True)
    assert (tmp_path / "Dockerfile").read_text() == text


def test_run_commands_are_shell_code_too(tmp_path):
    (tmp_path / "Dockerfile").write_text("FROM python:3.11\nRUN python -m vllm.entrypoints.openai.api_server --model m --dtype bfloat16\n")
    assert _hits(tmp_path / "Dockerfile") == [(2, 60, "RLC107")]


def test_a_cmd_that_is_not_json_is_not_read_as_an_array(tmp_path):
    (tmp_path / "Dockerfile").write_text("FROM python:3.11\nCMD [\"vllm\", 'serve', \"--dtype\", \"bfloat16\"]\n")
    assert _hits(tmp_path / "Dockerfile") == []


# --- Dockerfile ENV: the container's environment ---------------------------------------------------------------------

def test_env_is_exported_as_in_a_script_and_fixed_in_place(tmp_path):
    """`ENV K=V` is the environment of the stage's containers: the environment rules read it as `export K=V`."""
    text = ("FROM python:3.11\nENV VLLM_USE_V1=1 VLLM_ATTENTION_BACKEND=FLASH_ATTN  \\\n    HF_HOME=/cache\n"
            "RUN pip install vllm\n")
    (tmp_path / "Dockerfile").write_text(text)
    script = _same_as_script(tmp_path, "export VLLM_USE_V1=1 VLLM_ATTENTION_BACKEND=FLASH_ATTN")
    assert {code for _, code, _ in script} == {"RLC419", "RLC207"}
    found = [(f.location.line, f.location.column, f.code, f.message) for f in _findings(tmp_path / "Dockerfile")
             if f.code in ("RLC419", "RLC207")]
    # at the key, as `export KEY=...` is reported at its key (the script's columns shifted by "ENV " vs "export ")
    assert sorted(found) == sorted((2, column - len("export ") + len("ENV "), code, message)
                                   for column, code, message in script)
    _fix(tmp_path, "Dockerfile", remaining=True)  # RLC419 has no fix: it says what to set
    fixed = text.replace("VLLM_ATTENTION_BACKEND=FLASH_ATTN", "VLLM_ATTENTION_BACKEND=FLEX_ATTENTION")
    assert (tmp_path / "Dockerfile").read_text() == fixed
    _fix(tmp_path, "Dockerfile", remaining=True)
    assert (tmp_path / "Dockerfile").read_text() == fixed  # idempotent


def test_legacy_env_form_is_read_and_fixed_in_its_own_spelling(tmp_path):
    text = 'FROM python:3.11\nENV VLLM_ATTENTION_BACKEND   "FLASH_ATTN"\nENV VLLM_USE_V1 1\nENV NOTE two words\n'
    (tmp_path / "Dockerfile").write_text(text)
    assert {(line, code) for line, _, code in _hits(tmp_path / "Dockerfile")} == {(2, "RLC207"), (3, "RLC419")}
    _fix(tmp_path, "Dockerfile", remaining=True)
    assert (tmp_path / "Dockerfile").read_text() == text.replace('"FLASH_ATTN"', '"FLEX_ATTENTION"')


def test_arg_is_build_time_only(tmp_path):
    (tmp_path / "Dockerfile").write_text(
        "FROM python:3.11\nARG VLLM_USE_V1=1\nARG VLLM_ATTENTION_BACKEND=FLASH_ATTN\nRUN pip install vllm\n")
    assert [code for _, _, code in _hits(tmp_path / "Dockerfile") if code in ("RLC419", "RLC207")] == []


def test_env_overridden_the_way_docker_runs_it(tmp_path):
    """A later ENV of the name replaces the value the containers get; a RUN's `export`/`unset` ends with that RUN's
    own `/bin/sh -c`, so the ENV is still the containers' environment."""
    (tmp_path / "Dockerfile").write_text(
        "FROM python:3.11\nENV VLLM_USE_V1=1\nRUN pip install vllm\nENV VLLM_USE_V1=0\n")
    assert [code for _, _, code in _hits(tmp_path / "Dockerfile") if code == "RLC419"] == []
    (tmp_path / "Dockerfile").write_text(
        "FROM python:3.11\nENV VLLM_USE_V1=1\nRUN unset VLLM_USE_V1 && export VLLM_USE_V1=0 && pip install vllm\n")
    assert [(line, code) for line, _, code in _hits(tmp_path / "Dockerfile") if code == "RLC419"] == [(2, "RLC419")]
    # a CMD that sets the variable for its own program leaves the image's environment as the ENV set it (a
    # `docker run IMAGE other-command` or `docker exec` gets 1): still reported at the ENV line
    (tmp_path / "Dockerfile").write_text("FROM python:3.11\nENV VLLM_USE_V1=1\nCMD VLLM_USE_V1=0 vllm serve m\n")
    assert [(line, code) for line, _, code in _hits(tmp_path / "Dockerfile") if code == "RLC419"] == [(2, "RLC419")]
    (tmp_path / "Dockerfile").write_text(  # each build stage is an image of its own (`docker build --target`)
        "FROM python:3.11 AS serve\nENV VLLM_USE_V1=1\nFROM python:3.11\nENV VLLM_USE_V1=0\n")
    assert [(line, code) for line, _, code in _hits(tmp_path / "Dockerfile") if code == "RLC419"] == [(2, "RLC419")]


def test_env_that_selects_nothing_the_card_lacks_is_not_reported(tmp_path):
    (tmp_path / "Dockerfile").write_text(
        "FROM python:3.11\nENV VLLM_USE_V1=0 VLLM_ATTENTION_BACKEND=TRITON_ATTN\nRUN pip install vllm\n"
        "CMD vllm serve m --dtype half\n")
    assert [code for _, _, code in _hits(tmp_path / "Dockerfile") if code in ("RLC419", "RLC207", "RLC003")] == []


# --- YAML job specs -----------------------------------------------------------------------------------------------

SKYPILOT = """resources:
  accelerators: T4:1

setup: |
  pip install verl

run: |
  if [ "$SKYPILOT_NODE_RANK" == "0" ]; then
    python3 -m verl.trainer.main_ppo \\
      actor_rollout_ref.rollout.name=vllm \\
      trainer.n_gpus_per_node=1
  fi
"""


def test_skypilot_run_is_judged_at_the_yaml_line(tmp_path):
    (tmp_path / "task.yaml").write_text(SKYPILOT)
    sm61 = _hits(tmp_path / "task.yaml", SM61)
    assert (10, 7, "RLC401") in sm61
    assert {code for line, _, code in sm61 if line == 9} >= {"RLC104", "RLC105", "RLC204"}
    script = "\n".join(line[2:] for line in SKYPILOT.splitlines()[7:])
    (tmp_path / "same.sh").write_text(script + "\n")
    # with what the run reaches in verl's own code (analysis/launch_path.py: RLC201 for the critic's model)
    in_script = sorted((f.location.line + 7, f.code) for f in _findings(tmp_path / "same.sh", SM61))
    assert "RLC201" in {code for _, code in in_script}
    (tmp_path / "same.sh").unlink()
    assert sorted((line, code) for line, _, code in sm61) == in_script


def test_skypilot_fix_keeps_the_block_indentation_and_the_rest_of_the_file(tmp_path):
    (tmp_path / "task.yaml").write_text(SKYPILOT)
    _fix(tmp_path, "task.yaml", remaining=True)  # RLC201: verl's own code, no line of the task changes it
    fixed = (tmp_path / "task.yaml").read_text()
    head, tail = SKYPILOT.split("      trainer.n_gpus_per_node=1\n")
    assert fixed.startswith(head + "      trainer.n_gpus_per_node=1 \\\n      actor_rollout_ref.rollout.dtype=float16")
    assert fixed.endswith("\n  fi\n") and fixed.count("\n") > SKYPILOT.count("\n")
    for added in fixed[len(head):].splitlines()[:-1]:
        assert added.startswith("      "), added  # inside the block scalar
    import yaml

    assert yaml.safe_load(fixed)["run"].startswith('if [ "$SKYPILOT_NODE_RANK" == "0" ]; then\n')
    assert {code for _, _, code in _hits(tmp_path / "task.yaml")} == {"RLC201"}


WORKFLOW = """on: push
jobs:
  serve:
    runs-on: [self-hosted, t4]
    steps:
      - uses: actions/checkout@v4
      - name: serve
        run: |
          vllm serve m \\
            --dtype bfloat16 &
      - name: one line
        run: accelerate launch --mixed_precision bf16 train.py
      - name: not shell
        shell: python
        run: print("--bf16")
      - uses: some/action@v1
        with:
          script: |
            vllm serve m --dtype bfloat16
"""


def test_github_actions_steps_run_and_nothing_else(tmp_path):
    (tmp_path / "wf.yml").write_text(WORKFLOW)
    assert refined("yaml", WORKFLOW) == "jobspec"
    assert _hits(tmp_path / "wf.yml") == [(10, 13, "RLC107"), (12, 32, "RLC107")]
    _fix(tmp_path, "wf.yml")
    assert (tmp_path / "wf.yml").read_text() == WORKFLOW.replace("--dtype bfloat16 &", "--dtype float16 &").replace(
        "--mixed_precision bf16 train.py", "--mixed_precision fp16 train.py")


def test_github_expressions_are_values_nothing_knows(tmp_path):
    (tmp_path / "wf.yml").write_text(
        "on: push\njobs:\n  t:\n    steps:\n      - run: |\n"
        "          python -m sglang.launch_server --model-path ${{ matrix.model }} --dtype ${{ matrix.dtype }}\n"
        "          vllm serve ${{ matrix.model }} --dtype bfloat16 &\n")
    assert _hits(tmp_path / "wf.yml") == [(7, 42, "RLC107")]


KUBERNETES = """apiVersion: apps/v1
kind: Deployment
spec:
  template:
    spec:
      containers:
        - name: vllm
          image: vllm/vllm-openai:latest
          command: ["python3", "-m", "vllm.entrypoints.openai.api_server"]
          args:
            - --model=/models/llama
            - --dtype=bfloat16    # BF16 precision
            - --port=8000
        - name: trainer
          image: trainer:1
          command:
            - /bin/bash
            - -c
            - accelerate launch --mixed_precision bf16 train.py
"""


def test_kubernetes_container_command_and_args_are_one_command(tmp_path):
    (tmp_path / "deploy.yaml").write_text(KUBERNETES)
    assert _hits(tmp_path / "deploy.yaml") == [(12, 15, "RLC107"), (19, 33, "RLC107")]
    assert ("RLC407" in {c for _, _, c in _hits(tmp_path / "deploy.yaml", SM61)})
    _fix(tmp_path, "deploy.yaml")
    assert (tmp_path / "deploy.yaml").read_text() == KUBERNETES.replace(
        "--dtype=bfloat16    # BF16", "--dtype=float16    # BF16").replace("--mixed_precision bf16", "--mixed_precision fp16")


def test_kubernetes_list_fix_adds_an_item_in_the_list_style(tmp_path):
    spec = ("kind: Job\nspec:\n  template:\n    spec:\n      containers:\n      - name: t\n        image: verl:1\n"
            "        command:\n        - python3\n        - -m\n        - verl.trainer.main_ppo\n"
            "        - actor_rollout_ref.rollout.name=hf\n")
    (tmp_path / "job.yaml").write_text(spec)
    _fix(tmp_path, "job.yaml", remaining=True)  # RLC201: verl's own code
    fixed = (tmp_path / "job.yaml").read_text()
    assert fixed.startswith(spec) and "\n        - actor_rollout_ref.rollout.dtype=float16" in fixed
    import yaml

    command = yaml.safe_load(fixed)["spec"]["template"]["spec"]["containers"][0]["command"]
    assert command[:4] == ["python3", "-m", "verl.trainer.main_ppo", "actor_rollout_ref.rollout.name=hf"]
    assert all(" " not in word for word in command)


def test_rayjob_entrypoint_and_compose_command(tmp_path):
    (tmp_path / "rayjob.yaml").write_text(
        "apiVersion: ray.io/v1\nkind: RayJob\nspec:\n  entrypoint: python3 -m verl.trainer.main_ppo "
        "actor_rollout_ref.rollout.name=vllm actor_rollout_ref.rollout.dtype=bfloat16\n")
    (tmp_path / "compose.yaml").write_text(
        "services:\n  vllm:\n    image: vllm/vllm-openai:latest\n    command: --model m --dtype bfloat16\n"
        "  train:\n    build: .\n    command: [\"accelerate\", \"launch\", \"--mixed_precision\", \"bf16\", \"t.py\"]\n")
    assert sorted((line, code) for line, _, code in _hits(tmp_path / "rayjob.yaml", SM61)
                  if code in ("RLC104", "RLC401")) == [(4, "RLC104"), (4, "RLC401")]
    assert _hits(tmp_path / "compose.yaml") == [(4, 24, "RLC107"), (7, 40, "RLC107")]
    _fix(tmp_path, "compose.yaml")
    assert '"--mixed_precision", "fp16", "t.py"]' in (tmp_path / "compose.yaml").read_text()


def test_a_job_specs_environment_is_the_commands(tmp_path):
    """`env:`/`envs:`/`environment:` set variables for the command as `export` does in a script."""
    (tmp_path / "deploy.yaml").write_text(
        "kind: Deployment\nspec:\n  template:\n    spec:\n      containers:\n        - name: vllm\n"
        "          image: vllm/vllm-openai:latest\n          env:\n            - name: VLLM_ATTENTION_BACKEND\n"
        "              value: FLASH_ATTN\n            - name: HF_TOKEN\n              valueFrom: {secretKeyRef: {name: x, key: y}}\n"
        "          command: [vllm, serve, m]\n")
    (tmp_path / "compose.yaml").write_text(
        "services:\n  a:\n    image: vllm/vllm-openai\n    environment:\n      - VLLM_ATTENTION_BACKEND=FLASH_ATTN\n"
        "    command: vllm serve m\n")
    (tmp_path / "task.yaml").write_text("resources: {accelerators: T4}\nenvs:\n  VLLM_USE_V1: 1\nrun: |\n  vllm serve m\n")
    script = _same_as_script(tmp_path, "export VLLM_ATTENTION_BACKEND=FLASH_ATTN; vllm serve m")
    assert {code for _, code, _ in script} == {"RLC207", "RLC407"}
    assert {(line, code) for line, _, code in _hits(tmp_path / "deploy.yaml")} == {(9, "RLC207"), (13, "RLC407")}
    assert {(line, code) for line, _, code in _hits(tmp_path / "compose.yaml")} == {(5, "RLC207"), (6, "RLC407")}
    assert ("RLC419" in {code for _, _, code in _hits(tmp_path / "task.yaml")})
    _fix(tmp_path, "deploy.yaml", "compose.yaml")
    assert "              value: FLEX_ATTENTION\n" in (tmp_path / "deploy.yaml").read_text()
    assert "      - VLLM_ATTENTION_BACKEND=FLEX_ATTENTION\n" in (tmp_path / "compose.yaml").read_text()


def test_the_vllm_a_container_runs_is_its_images_release(tmp_path):
    """A Kubernetes container or compose service on vLLM's official image runs that image's release: a server with
    no --dtype on a release that keeps a bf16 checkpoint in bf16 (0.8.5 or older) is refused below 8.0."""
    pod = ("kind: Pod\nspec:\n  containers:\n    - name: vllm\n      image: vllm/vllm-openai:{tag}\n"
           "      command: [sh, -c]\n      args:\n        - \"ray start --head; python3 -m vllm.entrypoints.openai.api_server"
           " --model m{dtype}\"\n")
    compose = "services:\n  vllm:\n    image: docker.io/vllm/vllm-openai:{tag}\n    command: vllm serve m{dtype}\n"
    for name, text in (("pod.yaml", pod), ("compose.yaml", compose)):
        (tmp_path / name).write_text(text.format(tag="v0.8.5", dtype=""))
        found = [f for f in _findings(tmp_path / name) if f.code == "RLC407"]
        assert [f.location.line for f in found] == [8 if name == "pod.yaml" else 4], name
        assert "vLLM 0.8.5 (the container's image" in found[0].message and "--dtype half" in found[0].message
        assert [f for f in _findings(tmp_path / name, SM61) if "no --dtype" in f.message] == []  # vLLM cannot run
        for tag, dtype in (("v0.9.2", ""), ("latest", ""), ("v0.8.5", " --dtype half")):
            (tmp_path / name).write_text(text.format(tag=tag, dtype=dtype))
            assert [f for f in _findings(tmp_path / name) if f.code == "RLC407"] == [], (name, tag, dtype)


def test_a_dockerfile_stage_runs_in_its_base_image(tmp_path):
    (tmp_path / "Dockerfile").write_text(
        'FROM vllm/vllm-openai:v0.8.5\nENTRYPOINT ["python3", "-m", "vllm.entrypoints.openai.api_server"]\n'
        'CMD ["--model", "m"]\n')
    assert [line for line, _, code in _hits(tmp_path / "Dockerfile") if code == "RLC407"] == [2]
    # two stages: the shell-form code of both is one script, whose image is not one of them
    (tmp_path / "Dockerfile").write_text(
        "FROM vllm/vllm-openai:v0.8.5 AS a\nFROM python:3.11\nCMD vllm serve m\n")
    assert [code for _, _, code in _hits(tmp_path / "Dockerfile") if code == "RLC407"] == []


def test_arguments_alone_run_the_vllm_images_entrypoint(tmp_path):
    """A container's `args` without `command` (a compose `command` without `entrypoint`, a Dockerfile CMD array
    without ENTRYPOINT) are passed to the image's ENTRYPOINT: on vLLM's image, its OpenAI server."""
    (tmp_path / "pod.yaml").write_text("kind: Pod\nspec:\n  containers:\n  - name: vllm\n    image: vllm/vllm-openai\n"
                                       '    args: ["--model", "m", "--dtype", "float16"]\n')
    (tmp_path / "compose.yaml").write_text("services:\n  vllm:\n    image: vllm/vllm-openai:latest\n"
                                           "    command: --model m --dtype half\n")
    (tmp_path / "Dockerfile").write_text('FROM vllm/vllm-openai:v0.9.2\nCMD ["--model", "m"]\n')
    for name, line in (("pod.yaml", 6), ("compose.yaml", 4), ("Dockerfile", 2)):
        assert [ln for ln, _, code in _hits(tmp_path / name, SM61) if code == "RLC407"] == [line], name
        assert [code for _, _, code in _hits(tmp_path / name) if code == "RLC407"] == [], name  # fp16, or >= 0.9
    (tmp_path / "pod.yaml").write_text("kind: Pod\nspec:\n  containers:\n  - name: web\n    image: my/server\n"
                                       '    args: ["--model", "m"]\n')
    assert [code for _, _, code in _hits(tmp_path / "pod.yaml", SM61) if code == "RLC407"] == []


def test_shell_code_that_does_not_parse_is_the_files_error_at_its_line(tmp_path):
    (tmp_path / "t.yaml").write_text("resources: {}\nrun: |\n  echo ok\n  vllm serve m --dtype \"bfloat16\n")
    report = scan_paths([str(tmp_path / "t.yaml")], SM75)
    assert [(e.line, e.column) for e in report.errors] == [(4, 24)]
    assert "shell code of a job spec" in report.errors[0].message


@pytest.mark.parametrize("text", [
    "actor_rollout_ref:\n  rollout:\n    dtype: bfloat16\n",
    "model:\n  args:\n    - a\n  command: x\n",  # no containers, services or RayJob around them
    "run: python train.py\n",  # a lone `run:` key is no SkyPilot task
])
def test_a_config_is_not_read_as_a_job_spec(text):
    assert refined("yaml", text) == "yaml"


# --- a closed stdout ----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("args", [["--help"], ["rules"]])
def test_a_reader_that_closes_the_pipe_ends_the_run_quietly(args):
    read, write = os.pipe()
    os.close(read)  # the reader is gone before the first write (`| head -0`)
    try:
        done = subprocess.run([sys.executable, "-c", "from rlcompat.cli import main; main()", *args],
                              stdout=write, stderr=subprocess.PIPE, text=True, timeout=120)
    finally:
        os.close(write)
    assert (done.returncode, done.stderr) == (0, "")
