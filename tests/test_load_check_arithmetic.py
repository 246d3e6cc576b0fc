"""verify's load check and `$((...))`: arithmetic over integer literals and variables the script assigned such
values earlier is worked out (nothing is run), so the command is composed by hydra-core with the value; any other
arithmetic leaves the command unjudged, saying why. A placeholder inside `$((...))` used to reach Hydra as
`key=$((X + X))`, which its override parser refuses (7 of verl's example scripts at b178a3cd)."""

from __future__ import annotations

import json

import pytest

from rlcompat.lang.shellarith import Unknown, evaluate
from rlcompat.schema.loadcheck import commands

ENTRY = "python3 -m verl.trainer.main_ppo"


@pytest.mark.parametrize("expression, value", [
    ("1024 * 2", 2048), ("(a + b) * 3", 30), ("$a+${b}", 10), ("-7 / 2", -3), ("-7 % 2", -1), ("2 ** 3 ** 2", 512),
    ("010", 8), ("0x10", 16), ("a - -b", 10), ("  a  ", 2),
])
def test_integer_arithmetic_has_bashs_value(expression, value):
    assert evaluate(expression, {"a": 2, "b": 8}) == value


@pytest.mark.parametrize("expression, why", [
    ("c + 1", "`c` is not assigned"), ("$(nproc) * 2", "not plain integer arithmetic"), ("a > 1", "not plain"),
    ("1 / 0", "division by zero"), ("(1 + 2", "unbalanced"), ("2 ** 63", "outside 64-bit"),
    ("2 ** 99", "exponent outside"), ("09", "octal"),
    ("$1 + 1", "not plain"),
])
def test_other_arithmetic_has_no_value_and_says_why(expression, why):
    with pytest.raises(Unknown, match=why):
        evaluate(expression, {"a": 2})


def test_the_reader_follows_literal_assignments_only():
    text = ("a=$((1024 * 2))\nexport b=\"3\"\nn=${NNODES:-1}\nfor i in 1 2; do :; done\nc=1\nif x; then c=2; fi\n"
            f"{ENTRY} k.a=$((a + b)) k.n=$((n * 8))\n{ENTRY} k.i=$((i))\n{ENTRY} k.c=$((c))\n{ENTRY} k.b=$(( (b) ))\n"
            f"d=1\nd=2\n{ENTRY} k.d=$((d))\n")
    found = [c for c in commands(text) if "verl.trainer.main_ppo" in c.words]
    assert [c.words[3:] for c in found] == [("k.a=2051", "k.n=X"), ("k.i=X",), ("k.c=X",), ("k.b=3",), ("k.d=X",)]
    assert "`n` is set to `${NNODES:-1}`, not an integer literal" in found[0].unread
    assert "`i` is set by `for i in`" in found[1].unread
    assert "`c` is set inside a compound line" in found[2].unread
    assert found[3].unread == "" and "`d` is assigned 1 and 2 in the script" in found[4].unread


def test_the_load_check_composes_known_arithmetic_and_leaves_the_rest_unjudged(installed_verl_091, run_cli,
                                                                               tmp_path):
    """The key refused is found behind known arithmetic (hydra-core names it); a command whose arithmetic reads
    the environment is not judged, with the reason, and alone it leaves nothing checked (exit 2)."""
    (tmp_path / "run.sh").write_text(
        "#!/bin/bash\nmax_prompt_length=$((1024 * 2))\nmax_response_length=$((1024 * 8))\n"
        f"{ENTRY} \\\n    data.max_prompt_length=$max_prompt_length \\\n"
        "    actor_rollout_ref.rollout.max_num_batched_tokens=$((max_prompt_length + max_response_length)) \\\n"
        "    critic.model.fsdp_config.param_offload=True\n")
    code, out, err = run_cli("verify", installed_verl_091, "--load-check", "--script", str(tmp_path / "run.sh"),
                             "--output-format", "json", cwd=tmp_path)
    [command] = json.loads(out)["commands"]
    assert code == 1 and "Could not override 'critic.model.fsdp_config.param_offload'" in command["error"], out
    (tmp_path / "run.sh").write_text(f"#!/bin/bash\n{ENTRY} trainer.n_gpus_per_node=$((SLURM_GPUS_ON_NODE * 1))\n")
    code, out, err = run_cli("verify", installed_verl_091, "--load-check", "--script", str(tmp_path / "run.sh"),
                             "--output-format", "json", cwd=tmp_path)
    result = json.loads(out)
    assert code == 2 and result["commands"] == [], out
    [why] = result["not_checked"]
    assert why.endswith("run.sh:2: `$((SLURM_GPUS_ON_NODE * 1))` has no known value here: `SLURM_GPUS_ON_NODE` is "
                        "not assigned an integer literal earlier in the script; not load-checked"), why
