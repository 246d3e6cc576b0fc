"""Property-based fuzzing of the check-and-fix pipeline, in process, on generated Python, YAML and launch scripts.

The generators build *valid* input out of the shapes the rules look at (import aliases, `getattr(torch,
"bfloat16")`, `.to(...)`, `torch_dtype=`, `attn_implementation=`, `.get("dtype", "bfloat16")`, comparisons that
are not findings, nesting, comments in odd places, f-strings, walrus, match, annotations; CRLF and BOM), then
check, for every example:
- nothing crashes, and valid input gives no file error;
- the fixed text still parses (compile() / ruamel.yaml / `bash -n`);
- fixing twice gives what fixing once gave, and leaves nothing it could still fix;
- Python: the fixed AST equals the original everywhere except inside the ranges the reported fixes edit
  (so the number of statements never changes); YAML: the same keys; BOM and line-ending style are kept.

Run time is bounded by a profile (docs/robustness.md, "Fuzzing"):
    .venv/bin/python -m pytest -q tests/test_fuzz.py                               # ci: 100 examples a test
    HYPOTHESIS_PROFILE=long .venv/bin/python -m pytest -q tests/test_fuzz.py       # long: 3,000 a test
"""

from __future__ import annotations

import ast
import bisect
import io
import os
import re
import shutil
import subprocess
import warnings

import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, example, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from rlcompat.config import Options  # noqa: E402
from rlcompat.pipeline.runner import Checker  # noqa: E402
from rlcompat.pipeline.fixer import fix_source  # noqa: E402
from rlcompat.pipeline.source import decode, encode  # noqa: E402
from rlcompat.knowledge.targets import resolve_target  # noqa: E402

_COMMON = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
               print_blob=True)
settings.register_profile("ci", max_examples=100, **_COMMON)
settings.register_profile("long", max_examples=3000, **_COMMON)
PROFILE = settings.get_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
# `bash -n` forks a shell per example: a tenth of the examples, at least 10.
SHELL_SYNTAX_PROFILE = settings(PROFILE, max_examples=max(10, PROFILE.max_examples // 10))

_CHECKERS: dict[str, Checker] = {}


def checker(target: str) -> Checker:
    if target not in _CHECKERS:
        _CHECKERS[target] = Checker(resolve_target(target), Options())
    return _CHECKERS[target]


def run_pipeline(raw: bytes, path: str, language: str, target: str, unsafe: bool):
    """Check and fix `raw` as rlcompat fix would, and check the properties every language shares.

    Returns (source, first check, fix outcome, fixed bytes)."""
    chk = checker(target)
    source = decode(path, raw, language)
    first = chk.check_source(source, language)
    assert first.error is None, first.error.one_line()
    outcome = fix_source(chk, source, language, unsafe)  # FixBroke (an unparsable fix) fails the test
    assert outcome.remaining is not None and outcome.remaining.error is None
    stuck = [f for f in outcome.remaining.findings if f.fix is not None and f.fix.applies(unsafe)]
    assert not stuck, f"fix left fixable findings: {[(f.code, f.location) for f in stuck]}"
    fixed_raw = encode(source, outcome.fixed)
    again = fix_source(chk, decode(path, fixed_raw, language), language, unsafe)
    assert again.fixed == outcome.fixed, "fixing twice differs from fixing once"
    assert not again.applied
    # Nothing of the file's encoding is lost: BOM kept, no lone \n brought into a CRLF file.
    assert fixed_raw.startswith(b"\xef\xbb\xbf") == raw.startswith(b"\xef\xbb\xbf")
    if b"\r\n" in raw and b"\n" not in raw.replace(b"\r\n", b""):
        assert b"\n" not in fixed_raw.replace(b"\r\n", b""), "the fix mixed line endings into a CRLF file"
    for f in first.findings:
        assert 1 <= f.location.line <= f.location.end_line <= source.text.count("\n") + 2
    return source, first, outcome, fixed_raw


# --- Python ------------------------------------------------------------------------------------------------------

IMPORTS = [
    ("import torch", "torch", None),
    ("import torch as th", "th", None),
    ("import torch\nfrom torch import bfloat16 as bf", "torch", "bf"),
    ("import torch as th\nfrom torch import bfloat16", "th", "bfloat16"),
]
ATTN = ['"flash_attention_2"', "'flash_attention_3'", '"sdpa"', "'eager'"]
DTYPE_STRINGS = ['"bfloat16"', "'bf16'", '"float32"', "'fp16'", '"auto"']
BOOLS = ["True", "False"]
COMMENTS = ["", "  # set for speed", "  # torch.bfloat16 here is only a comment", "  # ünïcødé ✓", "  #"]


@st.composite
def python_statement(draw, t: str, bf: str | None) -> list[tuple[int, str]]:
    """One statement as (indent level, line) pairs; valid anywhere a statement is."""
    dt = draw(st.sampled_from([f"{t}.bfloat16", f'getattr({t}, "bfloat16")', f"{t}.float32", f"{t}.float16"]
                              + ([bf] if bf else [])))
    attn, s, b = draw(st.sampled_from(ATTN)), draw(st.sampled_from(DTYPE_STRINGS)), draw(st.sampled_from(BOOLS))
    c = draw(st.sampled_from(COMMENTS))
    name = draw(st.sampled_from(["x", "model", "dtype_", "数据", "_y1"]))
    templates = [
        [(0, f"{name} = t.to({dt}){c}")],
        [(0, f"m = AutoModelForCausalLM.from_pretrained(p, torch_dtype={dt}, attn_implementation={attn}){c}")],
        [(0, f"m = load(  {c.strip() or '# open'}"), (1, f"p, torch_dtype={dt},{c}"), (2, f"attn_implementation={attn},"),
         (0, ")")],
        [(0, f'd = cfg.get("dtype", {s}){c}')],
        [(0, f'impl = self.override_config.get("attn_implementation", {attn})')],
        [(0, f"config._attn_implementation = {attn}{c}")],
        [(0, f"if dtype == {dt}:{c}"), (1, "pass")],
        [(0, f"same = {dt} is {t}.bfloat16 or {dt} != {t}.float16")],
        [(0, f"table = {{{t}.bfloat16: 2, {t}.float32: 4, 'bf16': {s}}}")],
        [(0, f'kwargs = {{"torch_dtype": {dt}, "attn_implementation": {attn}}}')],
        [(0, f'msg = f"""using {{{dt}}} and {{{attn}!r:>20}}"""')],
        [(0, f"if ({name} := {dt}) is not None:"), (1, f"print({name})")],
        [(0, f"match dtype:{c}"), (1, f"case {t}.bfloat16:"), (2, f"d = {dt}"), (1, "case _:"), (2, "d = None")],
        [(0, f"def load(path: str, dtype: {t}.dtype = {dt}) -> {t}.dtype:"), (1, "return dtype")],
        [(0, f"v: {t}.dtype = {dt}")],
        [(0, f"use_torch_compile: bool = {b}")],
        [(0, f"with {t}.autocast(device_type='cuda', dtype={dt}):{c}"), (1, "y = f(x)")],
        [(0, f"args = TrainingArguments(output_dir='o', bf16={b})")],
        [(0, f'overrides = {{"use_torch_compile": {b}, "use_liger": {b}}}')],
        [(0, f"m = AutoModel.from_pretrained(p, use_flash_attention_2={b})")],
        [(0, f"model = {t}.compile(model, dynamic={b})")],
        [(0, f"@{t}.compile"), (0, "def step(x):"), (1, "return x")],
        [(0, f"@decorator(dtype={dt}){c}"), (0, "# between the decorator and the def"), (0, "def g():"), (1, f"return {dt}")],
        [(0, f"x = \\"), (1, f"{dt}")],
        [(0, f"a = 1; {name} = t.to({dt}); b = 2")],
        [(0, '"""A docstring that mentions torch.bfloat16 and "flash_attention_2"."""')],
        [(0, f"f = lambda d={dt}: d")],
        [(0, f"xs = [{dt} for _ in range(3) if _]")],
        [(0, f"d = {t}.float32 if training else {dt}")],
        [(0, f"mp = MixedPrecision(param_dtype={dt}, reduce_dtype={dt}, buffer_dtype={t}.float32)")],
        [(0, f"f(*args, dtype={dt}, **kw)")],
        [(0, "async def run():"), (1, f"async with ctx(dtype={dt}) as c:"), (2, "await c")],
        [(0, "try:"), (1, "import flash_attn"), (0, "except ImportError:"), (1, "flash_attn = None")],
        [(0, f"acc = Accelerator(mixed_precision={s})")],
        [(0, f"p = PrecisionType.to_dtype(mp.get('param_dtype', {s}))")],
    ]
    return draw(st.sampled_from(templates))


@st.composite
def python_block(draw, t: str, bf: str | None, depth: int) -> list[tuple[int, str]]:
    lines: list[tuple[int, str]] = []
    for _ in range(draw(st.integers(1, 4))):
        if depth < 3 and draw(st.integers(0, 3)) == 0:
            header = draw(st.sampled_from([
                ["def f(a, b=None):"], ["class C(Base):"], ["if cond:  # odd place for a comment"],
                ["for i in range(3):"], ["while not done:"], ["with open(p) as fh:"], ["async def h():"],
                ["@decorator", "@other(1)", "def decorated():"], ["@dataclass", "class Config:"],
            ]))
            body = draw(python_block(t, bf, depth + 1))
            lines += [(0, h) for h in header] + [(lvl + 1, text) for lvl, text in body]
            if header[0] == "if cond:  # odd place for a comment" and draw(st.booleans()):
                lines += [(0, "else:"), (1, "pass")]
        elif draw(st.integers(0, 5)) == 0:
            lines.append((0, draw(st.sampled_from(["", "# a comment line", "    # an indented comment"]))))
        else:
            lines += draw(python_statement(t, bf))
    if all(not text or text.lstrip().startswith("#") for _, text in lines):
        lines.append((0, "pass"))  # a body of comments alone is not a body
    return lines


@st.composite
def python_source(draw) -> bytes:
    header, t, bf = draw(st.sampled_from(IMPORTS))
    body = draw(python_block(t, bf, 0))
    unit = draw(st.sampled_from(["    ", "  ", "\t"]))
    newline = draw(st.sampled_from(["\n", "\r\n"]))
    lines = header.split("\n") + [unit * lvl + text if text else "" for lvl, text in body]
    text = newline.join(lines) + (newline if draw(st.booleans()) else "")
    raw = text.encode("utf-8")
    return (b"\xef\xbb\xbf" + raw) if draw(st.booleans()) else raw


def _line_starts(text: str) -> list[int]:
    """Offsets where each line starts, with Python's own line breaks (not str.splitlines's)."""
    return [0] + [m.end() for m in re.finditer(r"\r\n|\r|\n", text)]


def _span(node: ast.AST, text: str, starts: list[int]) -> tuple[int, int]:
    """A node's [start, end) in characters of `text` (ast counts columns in UTF-8 bytes)."""

    def offset(line: int, col: int) -> int:
        begin = starts[line - 1]
        line_text = text[begin: starts[line] if line < len(starts) else len(text)]
        return begin + len(line_text.encode("utf-8")[:col].decode("utf-8", "replace"))

    return offset(node.lineno, node.col_offset), offset(node.end_lineno, node.end_col_offset)


def ast_differences(a: ast.AST, b: ast.AST, text: str) -> list[tuple[int, int]]:
    """Character spans (in `text`, a's source) of the smallest positioned nodes of `a` where `b` differs."""
    starts = _line_starts(text)
    out: list[tuple[int, int]] = []

    def walk(x, y, owner) -> None:
        if isinstance(x, ast.AST) and hasattr(x, "lineno") and hasattr(x, "end_lineno"):
            owner = x
        if type(x) is not type(y):
            out.append(_span(owner, text, starts))
        elif isinstance(x, ast.AST):
            for field in x._fields:
                walk(getattr(x, field, None), getattr(y, field, None), owner)
        elif isinstance(x, list):
            if len(x) != len(y):
                out.append(_span(owner, text, starts))
            else:
                for i, j in zip(x, y):
                    walk(i, j, owner)
        elif x != y:
            out.append(_span(owner, text, starts))

    walk(a, b, a)
    return out


@given(python_source(), st.sampled_from([("sm61", False), ("sm75", True), ("sm70", False)]))
@example(  # found by this test: a `match` kept last by lang/pyspeed/narrow.py crashed the check (IndexError)
    b"import torch\nmatch dtype:\n    case torch.bfloat16:\n        d = torch.bfloat16\n    case _:\n        d = None\n"
    b"x = t.to(torch.float32)", ("sm61", False))
@example(  # found by this test: a fix on a `\` continuation line in an indented block ran past the value
    b"import torch\ndef f(a, b=None):\n    x = \\\n        torch.bfloat16\n    def f(a, b=None):\n\n        pass",
    ("sm61", False))
@example(b"import torch\r\ndef f(a, b=None):\r\n\tx = \\\r\n\t\ttorch.bfloat16\r\n", ("sm61", False))  # ate the CR
@example(  # found by this test: the fp16 autocast a fix writes makes the fp16 weights an RLC108 finding (next pass)
    b"import torch\nwith torch.autocast(device_type='cuda', dtype=torch.bfloat16):\n    y = f(x)\n"
    b"m = AutoModelForCausalLM.from_pretrained(p, torch_dtype=torch.float16, attn_implementation=\"flash_attention_2\")",
    ("sm75", True))
@settings(PROFILE)
def test_python_fixes_parse_are_idempotent_and_touch_only_fix_sites(raw, target_unsafe):
    target, unsafe = target_unsafe
    original_ast = ast.parse(raw.decode("utf-8-sig"))  # the generator's promise: valid Python
    source, first, outcome, fixed_raw = run_pipeline(raw, "gen.py", "python", target, unsafe)
    fixed_ast = ast.parse(compile(fixed_raw, "gen.py", "exec", ast.PyCF_ONLY_AST))
    assert len(fixed_ast.body) == len(original_ast.body)
    # Every node that changed lies on an edit of a fix that was applied (edits are in the original's offsets).
    applied = {(f.code, f.location) for f in outcome.applied}
    sites = [(e.start, e.end) for f in first.findings if f.fix and (f.code, f.location) in applied for e in f.fix.edits]
    # A fix can make another finding (bf16 autocast -> fp16 makes fp16 weights under fp16 AMP an RLC108 finding);
    # those are found on a later pass, in text whose columns moved, so their lines are what is compared.
    first_found = {(f.code, f.location) for f in first.findings}
    later_lines = {line for f in outcome.applied if (f.code, f.location) not in first_found
                   for line in range(f.location.line, f.location.end_line + 1)}
    starts = [0] + [i + 1 for i, ch in enumerate(source.text) if ch == "\n"]
    for start, end in ast_differences(original_ast, fixed_ast, source.text):
        line = bisect.bisect_right(starts, start)
        assert line in later_lines or any(start < e_end and e_start < end or start <= e_start <= end
                                          for e_start, e_end in sites), (
            f"the fix changed {source.text[start:end]!r}, which no applied fix covers"
        )
    if not outcome.applied:
        assert fixed_raw == raw


# --- YAML ------------------------------------------------------------------------------------------------------

LEAVES = {
    "dtype": ["bfloat16", "'bfloat16'", '"bf16"', "float32", "fp16", "null"],
    "param_dtype": ["bf16", "fp32", "'bfloat16'"],
    "use_torch_compile": ["true", "True", "false", "'true'"],
    "attn_implementation": ["flash_attention_2", '"flash_attention_2"', "sdpa", "eager"],
    "enforce_eager": ["false", "true", "False"],
    "name": ["vllm", "sglang", "hf"],
    "bf16": ["true", "false"],
    "torch_dtype": ["bfloat16", "auto"],
    "mixed_precision": ["bf16", "'no'"],
    "lr": ["1e-6", "0.5"],
    "path": ["Qwen/Qwen2.5-0.5B", "'~/models/x'", "'${oc.env:MODEL}'"],
}
SECTIONS = ["actor_rollout_ref", "rollout", "actor", "ref", "fsdp_config", "model", "override_config", "trainer",
            "critic", "engine", "data"]
YAML_PATHS = ["config.yaml", "examples/grpo.yml", "verl/trainer/config/ppo_trainer.yaml",
              "verl/trainer/config/engine/fsdp.yaml", "verl/trainer/config/rollout/rollout.yaml"]


@st.composite
def yaml_mapping(draw, indent: int, depth: int) -> list[str]:
    lines: list[str] = []
    pad = " " * indent
    keys = draw(st.lists(st.sampled_from(sorted(LEAVES) + (SECTIONS if depth < 4 else [])), min_size=1, max_size=5,
                         unique=True))
    for key in keys:
        comment = draw(st.sampled_from(["", "  # why", "  # bfloat16: not here", "   #"]))
        if key in LEAVES:
            lines.append(f"{pad}{key}: {draw(st.sampled_from(LEAVES[key]))}{comment}")
        elif draw(st.integers(0, 4)) == 0:  # a flow mapping of leaves
            inner = draw(st.lists(st.sampled_from(sorted(LEAVES)), min_size=1, max_size=3, unique=True))
            flow = ", ".join(f"{k}: {draw(st.sampled_from(LEAVES[k]))}" for k in inner)
            lines.append(f"{pad}{key}: {{{flow}}}{comment}")
        elif draw(st.integers(0, 5)) == 0:  # a list of mappings
            lines.append(f"{pad}{key}:{comment}")
            for _ in range(draw(st.integers(1, 2))):
                item = draw(yaml_mapping(indent + 4, depth + 1))
                lines.append(f"{pad}  - {item[0].lstrip()}")
                lines += item[1:]  # already at the item's column
        else:
            lines.append(f"{pad}{key}:{comment}")
            lines += draw(yaml_mapping(indent + 2, depth + 1))
        if draw(st.integers(0, 6)) == 0:
            lines.append(draw(st.sampled_from(["", f"{pad}# a comment line", "# at column 0"])))
    return lines


@st.composite
def yaml_source(draw) -> bytes:
    docs = [draw(yaml_mapping(0, 0)) for _ in range(draw(st.integers(1, 2)))]
    newline = draw(st.sampled_from(["\n", "\r\n"]))
    text = newline.join((["# generated config"] if draw(st.booleans()) else []) + docs[0])
    for doc in docs[1:]:
        text += newline + "---" + newline + newline.join(doc)
    text += newline if draw(st.booleans()) else ""
    raw = text.encode("utf-8")
    return (b"\xef\xbb\xbf" + raw) if draw(st.booleans()) else raw


def _yaml_keys(text: str) -> list:
    from ruamel.yaml import YAML

    def keys(node, prefix=()):
        if isinstance(node, dict):
            for k, v in node.items():
                yield prefix + (k,)
                yield from keys(v, prefix + (k,))
        elif isinstance(node, list):
            for i, v in enumerate(node):
                yield from keys(v, prefix + (i,))

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        docs = list(YAML(typ="rt").load_all(io.StringIO(text)))
    return [sorted(keys(d), key=repr) for d in docs]


@given(yaml_source(), st.sampled_from(YAML_PATHS), st.sampled_from([("sm61", False), ("sm75", True)]))
@settings(PROFILE)
def test_yaml_fixes_load_are_idempotent_and_keep_every_key(raw, path, target_unsafe):
    target, unsafe = target_unsafe
    before = _yaml_keys(raw.decode("utf-8-sig"))  # the generator's promise: valid YAML
    source, _, outcome, fixed_raw = run_pipeline(raw, path, "yaml", target, unsafe)
    assert _yaml_keys(fixed_raw.decode("utf-8-sig")) == before  # values change, never the structure
    if not outcome.applied:
        assert fixed_raw == raw


# --- shell ------------------------------------------------------------------------------------------------------

OVERRIDES = {
    "actor_rollout_ref.rollout.dtype": ["bfloat16", "float32", "bf16", "$DTYPE", "${DTYPE}"],
    "actor_rollout_ref.actor.fsdp_config.param_dtype": ["bf16", "fp32"],
    "actor_rollout_ref.model.override_config.attn_implementation": ["flash_attention_2", "sdpa"],
    "actor_rollout_ref.actor.use_torch_compile": ["True", "False", "true"],
    "actor_rollout_ref.rollout.enforce_eager": ["False", "True"],
    "actor_rollout_ref.rollout.name": ["vllm", "hf", "$ENGINE"],
    "actor_rollout_ref.model.path": ["Qwen/Qwen2.5-0.5B-Instruct", "$HOME/models/qwen"],
    "algorithm.adv_estimator": ["grpo", "gae"],
    "trainer.n_gpus_per_node": ["1", "$((2 * 1))"],
    "trainer.logger": ["'[\"console\"]'"],
}


@st.composite
def shell_source(draw) -> bytes:
    lines = []
    if draw(st.booleans()):
        lines.append(draw(st.sampled_from(["#!/bin/bash", "#!/usr/bin/env bash"])))
    if draw(st.booleans()):
        lines.append(draw(st.sampled_from(["set -x", "set -euo pipefail"])))
    for assignment in draw(st.lists(st.sampled_from([
        "DTYPE=${DTYPE:-bfloat16}", "DTYPE=bfloat16", 'ENGINE="vllm"', 'PY="python3 -m"', "N=$((2 * 1))",
        "export VLLM_ATTENTION_BACKEND=XFORMERS", "# a comment: actor_rollout_ref.rollout.dtype=bfloat16",
    ]), max_size=4, unique=True)):
        lines.append(assignment)
    if draw(st.integers(0, 4)) == 0:
        lines += ["cat > notes.txt <<'EOF'", "actor_rollout_ref.rollout.dtype=bfloat16 is only text here", "EOF"]
    for _ in range(draw(st.integers(1, 2))):
        launcher = draw(st.sampled_from(["python3 -m verl.trainer.main_ppo", "$PY verl.trainer.main_ppo",
                                         "torchrun --nproc_per_node=1 -m verl.trainer.main_ppo",
                                         "ray job submit -- python3 -m verl.trainer.main_ppo"]))
        if launcher.startswith("$PY") and 'PY="python3 -m"' not in lines:
            lines.append('PY="python3 -m"')
        keys = draw(st.lists(st.sampled_from(sorted(OVERRIDES)), min_size=1, max_size=6, unique=True))
        words = []
        for key in keys:
            value = draw(st.sampled_from(OVERRIDES[key]))
            prefix = draw(st.sampled_from(["", "", "+", "++"]))
            quote = draw(st.sampled_from(["", '"', "'"])) if not value.startswith(("$", "'")) else ""
            words.append(f"{quote}{prefix}{key}={value}{quote}")
        suffix = draw(st.sampled_from(["", " 2>&1 | tee log.txt", " $@", ' "$@"']))
        if draw(st.booleans()):
            command = launcher + " \\\n" + " \\\n".join(f"    {w}" for w in words) + suffix
        else:
            command = " ".join([launcher, *words]) + suffix
        wrap = draw(st.sampled_from(["plain", "and", "if", "for"]))
        if wrap == "and":
            command = f"[[ -f ckpt ]] && {command}"
        elif wrap == "if":
            command = f'if [ -n "$RUN" ]; then\n  {command}\nfi'
        elif wrap == "for":
            command = f"for seed in 1 2; do\n  {command}\ndone"
        lines.append(command)
    if draw(st.booleans()):
        lines.append("accelerate launch --mixed_precision=bf16 train.py --bf16 --attn_implementation flash_attention_2")
    # Words a command gets from a heredoc read into a variable, from an array; Python inside the script.
    flags = draw(st.lists(st.sampled_from(["--bf16", "--flash_attn", "--ds.param_dtype bf16", "--dtype $DTYPE",
                                           '--attn_implementation "flash_attention_2"', "--lr 1e-6",
                                           "--ds.packing_samples"]), max_size=4, unique=True))
    if flags and draw(st.booleans()):
        lines += ["read -r -d '' ARGS_H <<EOF", "my.cli.train \\", *[f"   {f} \\" for f in flags[:-1]],
                  f"   {flags[-1]}", "EOF", "deepspeed --module $ARGS_H"]
    if flags and draw(st.booleans()):
        lines += ["EXTRA=(", *[f"  {f}  # why" for f in flags], ")", 'accelerate launch t.py "${EXTRA[@]}"']
    if draw(st.integers(0, 3)) == 0:
        lines += [draw(st.sampled_from(["python3 - <<'PY'", "python - <<PY"])), "import torch",
                  "x = torch.zeros(1, dtype=torch.bfloat16)", "PY"]
    if draw(st.integers(0, 3)) == 0:
        lines.append(draw(st.sampled_from(["python3 -c 'import torch; torch.ones(1, dtype=torch.bfloat16)'",
                                           'python -c "import torch; torch.ones(1, dtype=\\"bfloat16\\")"'])))
    newline = draw(st.sampled_from(["\n", "\n", "\r\n"]))
    return (newline.join("\n".join(lines).split("\n")) + newline).encode("utf-8")


@given(shell_source(), st.sampled_from([("sm61", False), ("sm75", True)]))
@settings(PROFILE)
def test_shell_fixes_are_idempotent(raw, target_unsafe):
    target, unsafe = target_unsafe
    _, _, outcome, fixed_raw = run_pipeline(raw, "run.sh", "shell", target, unsafe)
    if not outcome.applied:
        assert fixed_raw == raw


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
@given(shell_source())
@settings(SHELL_SYNTAX_PROFILE)
def test_fixed_shell_scripts_pass_bash_n(raw):
    raw = raw.replace(b"\r\n", b"\n")  # bash reads a CR as part of a word; the syntax is what is checked here
    assert subprocess.run(["bash", "-n"], input=raw, capture_output=True).returncode == 0  # the generator's promise
    _, _, _, fixed_raw = run_pipeline(raw, "run.sh", "shell", "sm61", False)
    check = subprocess.run(["bash", "-n"], input=fixed_raw, capture_output=True)
    assert check.returncode == 0, check.stderr.decode() + "\n" + fixed_raw.decode()
