"""action.yml: its structure against GitHub's action metadata syntax, and its shell steps run here with bash.

The schema is written from GitHub's documented metadata syntax for actions
(https://docs.github.com/en/actions/sharing-automations/creating-actions/metadata-syntax-for-github-actions):
`name`, `description` and `runs` are required; each input has a `description`; a composite action's outputs each
have a `value`; `runs.using` is `composite` with `steps`, where a step either `uses` an action or `run`s a script,
and a `run` step must name its `shell`.

The local run plays the runner's part: `${{ inputs.x }}` and `${{ github.action_path }}` are substituted, a step's
`if:` is evaluated, `uses:` steps are skipped (setup-python: this interpreter; upload-sarif: GitHub's side), and
each `run:` script goes to `bash --noprofile --norc -eo pipefail` as GitHub runs `shell: bash`.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import site
import sys
from importlib import metadata
from pathlib import Path

import pytest
import yaml

jsonschema = pytest.importorskip("jsonschema")

REPO = Path(__file__).resolve().parents[1]
ACTION = yaml.safe_load((REPO / "action.yml").read_text("utf-8"))

_STRING_OR_EXPR = {"type": ["string", "number", "boolean"]}
STEP_KEYS = {"id", "if", "name", "uses", "with", "env", "run", "shell", "working-directory", "continue-on-error", "timeout-minutes"}
METADATA_SCHEMA = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "type": "object",
    "required": ["name", "description", "runs"],
    "additionalProperties": False,
    "properties": {
        "name": {"type": "string", "minLength": 1},
        "author": {"type": "string"},
        "description": {"type": "string", "minLength": 1},
        "branding": {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "icon": {"type": "string"},
                "color": {"enum": ["white", "black", "yellow", "blue", "green", "orange", "red", "purple", "gray-dark"]},
            },
        },
        "inputs": {
            "type": "object",
            "propertyNames": {"pattern": "^[_a-zA-Z][a-zA-Z0-9_-]*$"},
            "additionalProperties": {
                "type": "object",
                "required": ["description"],
                "additionalProperties": False,
                "properties": {
                    "description": {"type": "string", "minLength": 1},
                    "required": {"type": "boolean"},
                    "default": {"type": "string"},
                    "deprecationMessage": {"type": "string"},
                },
            },
        },
        "outputs": {
            "type": "object",
            "propertyNames": {"pattern": "^[_a-zA-Z][a-zA-Z0-9_-]*$"},
            "additionalProperties": {
                "type": "object",
                "required": ["description", "value"],
                "additionalProperties": False,
                "properties": {"description": {"type": "string"}, "value": {"type": "string"}},
            },
        },
        "runs": {
            "type": "object",
            "required": ["using", "steps"],
            "additionalProperties": False,
            "properties": {
                "using": {"const": "composite"},
                "steps": {
                    "type": "array",
                    "minItems": 1,
                    "items": {
                        "type": "object",
                        "propertyNames": {"enum": sorted(STEP_KEYS)},
                        "oneOf": [
                            {"required": ["uses"], "not": {"anyOf": [{"required": ["run"]}, {"required": ["shell"]}]}},
                            {"required": ["run", "shell"], "not": {"anyOf": [{"required": ["uses"]}, {"required": ["with"]}]}},
                        ],
                        "properties": {
                            "id": {"type": "string", "pattern": "^[_a-zA-Z][a-zA-Z0-9_-]*$"},
                            "if": {"type": "string"},
                            "name": {"type": "string"},
                            "uses": {"type": "string", "pattern": "^[^@\\s]+@[^@\\s]+$"},  # an action pinned to a ref
                            "with": {"type": "object", "additionalProperties": _STRING_OR_EXPR},
                            "env": {"type": "object", "additionalProperties": _STRING_OR_EXPR},
                            "run": {"type": "string", "minLength": 1},
                            "shell": {"enum": ["bash", "pwsh", "python", "sh", "cmd", "powershell"]},
                            "working-directory": {"type": "string"},
                            "continue-on-error": {"type": ["boolean", "string"]},
                        },
                    },
                },
            },
        },
    },
}

EXPRESSION = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")


def test_action_metadata_follows_the_documented_syntax():
    jsonschema.Draft7Validator.check_schema(METADATA_SCHEMA)
    jsonschema.validate(ACTION, METADATA_SCHEMA)


def test_the_schema_rejects_what_github_rejects():
    """The schema is not vacuous: a run step without shell, a step with both uses and run, an input without a
    description and a JavaScript `runs` all fail it."""
    import copy

    broken = []
    for mutate in (
        lambda a: a["runs"]["steps"][1].pop("shell"),
        lambda a: a["runs"]["steps"][1].update(uses="actions/checkout@v4"),
        lambda a: a["inputs"]["paths"].pop("description"),
        lambda a: a["runs"].update(using="node20"),
        lambda a: a.pop("description"),
    ):
        action = copy.deepcopy(ACTION)
        mutate(action)
        broken.append(action)
    for action in broken:
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(action, METADATA_SCHEMA)


def _expressions(node) -> list[str]:
    if isinstance(node, dict):
        return [e for v in node.values() for e in _expressions(v)]
    if isinstance(node, list):
        return [e for v in node for e in _expressions(v)]
    return EXPRESSION.findall(node) if isinstance(node, str) else []


def test_every_expression_names_a_declared_input_or_step():
    steps = ACTION["runs"]["steps"]
    ids = [s["id"] for s in steps if "id" in s]
    assert len(ids) == len(set(ids))
    for expr in _expressions(ACTION):
        for name in re.findall(r"\binputs\.([A-Za-z0-9_-]+)", expr):
            assert name in ACTION["inputs"], expr
        for step in re.findall(r"\bsteps\.([A-Za-z0-9_-]+)\.outputs\.([A-Za-z0-9_-]+)", expr):
            assert step[0] in ids, expr
    # Scripts read inputs from env only: an input pasted into a script could run as shell code.
    assert not [s["name"] for s in steps if "run" in s and EXPRESSION.search(s["run"])]


def test_the_action_uploads_sarif_and_annotates():
    steps = ACTION["runs"]["steps"]
    uses = [s["uses"].split("@")[0] for s in steps if "uses" in s]
    assert uses == ["actions/setup-python", "github/codeql-action/upload-sarif"]
    runs = " ".join(s["run"] for s in steps if "run" in s)
    assert "--output-format sarif" in runs and "--output-format github" in runs


# --- running the shell steps ---------------------------------------------------------------------------------

def _evaluate(expr: str, inputs: dict, github: dict) -> str:
    m = re.fullmatch(r"inputs\.([A-Za-z0-9_-]+)", expr)
    if m:
        return inputs[m.group(1)]
    m = re.fullmatch(r"github\.([a-z_]+)", expr)
    if m:
        return github[m.group(1)]
    m = re.fullmatch(r"inputs\.([A-Za-z0-9_-]+)\s*==\s*'([^']*)'", expr)
    if m:
        return "true" if inputs[m.group(1)] == m.group(2) else "false"
    raise AssertionError(f"the local runner does not evaluate ${{{{ {expr} }}}}; extend tests/test_action.py")


def _substitute(text: str, inputs: dict, github: dict) -> str:
    return EXPRESSION.sub(lambda m: _evaluate(m.group(1), inputs, github), text)


def run_action(inputs: dict, workspace: Path, python_bin: Path, action_path: Path, tmp: Path) -> list[tuple[str, subprocess.CompletedProcess]]:
    """Run the shell steps in order, as a runner would, until one fails. Returns (step name, process) per step run."""
    values = {name: spec.get("default", "") for name, spec in ACTION["inputs"].items()}
    values.update(inputs)
    github = {"action_path": str(action_path), "workspace": str(workspace)}
    output = tmp / "github_output"
    output.write_text("")
    ran = []
    for step in ACTION["runs"]["steps"]:
        if "if" in step:
            condition = _substitute(step["if"], values, github)
            assert condition in ("true", "false"), condition
            if condition == "false":
                continue
        if "uses" in step:
            continue
        env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "RLCOMPAT_", "PIP_"))}
        env.update({k: _substitute(str(v), values, github) for k, v in step.get("env", {}).items()})
        env.update(PATH=f"{python_bin}{os.pathsep}{env.get('PATH', '')}", GITHUB_OUTPUT=str(output),
                   GITHUB_WORKSPACE=str(workspace), GITHUB_ACTION_PATH=str(action_path), NO_COLOR="1")
        script = tmp / f"step-{len(ran)}.sh"
        script.write_text(step["run"])
        proc = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)], cwd=workspace,
                              env=env, capture_output=True, text=True, timeout=300)
        ran.append((step["name"], proc))
        if proc.returncode != 0:
            break
    return ran


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """A venv that sees this environment's dependencies, with rlcompat installed by the action's own install step
    from a copy of the action's checkout."""
    root = tmp_path_factory.mktemp("action")
    action_path = root / "action-checkout"
    action_path.mkdir()
    for name in ("action.yml", "pyproject.toml", "README.md"):
        shutil.copy2(REPO / name, action_path / name)
    for name in ("rlcompat", "rules"):
        shutil.copytree(REPO / name, action_path / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, capture_output=True, timeout=120)
    bin_dir = venv / ("Scripts" if sys.platform == "win32" else "bin")
    purelib = subprocess.run([str(bin_dir / "python"), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             check=True, capture_output=True, text=True).stdout.strip()
    # The dependencies (libcst, typer, ...) come from this environment rather than PyPI: the install step then only
    # builds and installs rlcompat itself.
    Path(purelib, "outer_env.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    ran = run_action({"sarif": "false", "paths": "nothing-here"}, root, bin_dir, action_path, root)
    name, proc = ran[0]
    if proc.returncode != 0 and re.search(r"(?i)connection|network|resolve|timed out|proxy", proc.stderr):
        pytest.skip("PyPI is not reachable to fetch the build backend")
    assert name == "Install rlcompat" and proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == f"rlcompat {metadata.version('rlcompat')}"
    return bin_dir, action_path


@pytest.fixture
def workspace(tmp_path):
    ws = tmp_path / "repo"
    ws.mkdir()
    (ws / "train.py").write_text("import torch\nmodel = AutoModelForCausalLM.from_pretrained('m', torch_dtype=torch.bfloat16)\n")
    (ws / "clean.py").write_text("x = 1\n")
    return ws


@pytest.mark.slow
def test_shell_steps_write_sarif_and_annotations_and_fail_on_findings(installed, workspace, tmp_path):
    bin_dir, action_path = installed
    ran = run_action({"target": "sm61"}, workspace, bin_dir, action_path, tmp_path)
    assert [name for name, _ in ran] == ["Install rlcompat", "Scan to SARIF", "Annotate the pull request"]
    install, sarif_step, annotate = (p for _, p in ran)
    assert sarif_step.returncode == 0, sarif_step.stderr
    sarif = json.loads((workspace / "rlcompat.sarif").read_text("utf-8"))
    [result] = sarif["runs"][0]["results"]
    assert result["ruleId"] == "RLC101"
    assert result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "train.py"
    outputs = dict(line.split("=", 1) for line in (tmp_path / "github_output").read_text().splitlines())
    assert outputs == {"sarif-file": "rlcompat.sarif", "findings": "1"}
    assert annotate.returncode == 1  # findings remain: the job fails, like `rlcompat scan`
    assert annotate.stdout.startswith("::error file=train.py,line=2,col=")
    assert "RLC101" in annotate.stdout and annotate.stdout.count("::error") == 1


@pytest.mark.slow
def test_inputs_reach_the_scan_target_from_config_args_and_no_sarif(installed, workspace, tmp_path):
    bin_dir, action_path = installed
    (workspace / "pyproject.toml").write_text('[tool.rlcompat]\ntarget = "sm80"\n')
    ran = run_action({"sarif": "false"}, workspace, bin_dir, action_path, tmp_path)
    assert [name for name, _ in ran] == ["Install rlcompat", "Annotate the pull request"]
    assert ran[-1][1].returncode == 0 and ran[-1][1].stdout == ""  # bf16 runs on sm80: nothing to annotate
    assert not (workspace / "rlcompat.sarif").exists()
    ran = run_action({"target": "sm61", "paths": "clean.py train.py", "args": "--exit-zero --ignore RLC2",
                      "sarif-file": "out/r.sarif"}, workspace, bin_dir, action_path, tmp_path)
    (workspace / "out").mkdir(exist_ok=True)
    assert ran[1][1].returncode != 0  # the SARIF file's folder does not exist: the step fails, the job stops
    ran = run_action({"target": "sm61", "paths": "clean.py train.py", "args": "--exit-zero --ignore RLC2",
                      "sarif-file": "out/r.sarif"}, workspace, bin_dir, action_path, tmp_path)
    assert [p.returncode for _, p in ran] == [0, 0, 0]
    assert ran[-1][1].stdout.count("::error file=train.py") == 1
    assert json.loads((workspace / "out" / "r.sarif").read_text())["runs"][0]["results"][0]["ruleId"] == "RLC101"
