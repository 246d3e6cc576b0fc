"""Run the harness in a child process against the tree under test, and collect its JSON result.

The child imports verl from the tree given, not from wherever pip put it: the tree's parent directory goes first on
PYTHONPATH. Hub access is off and the working directory is a fresh temp folder. Like any import, it may write
__pycache__/ next to the tree's modules; it changes nothing else there.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from rlcompat.verify.result import EXIT_ENV


class VerifyUsageError(Exception):
    """Bad input (path, option); the message is one line for the user."""


@dataclass(frozen=True)
class VerifyRequest:
    package: Path  # the verl package directory under test
    target: str  # a target name from rlcompat's table (sm61)
    device: str = "auto"
    strategy: str = "fsdp2"
    algo: str = "gae"
    steps: int = 1
    seed: int = 0
    keep: bool = False
    timeout: float = 600.0


def resolve_package(path: str | os.PathLike) -> Path:
    """PATH is the verl package itself (…/verl with __init__.py) or a directory that contains `verl/`."""
    p = Path(path)
    if not p.exists():
        raise VerifyUsageError(f"{path}: no such directory")
    if not p.is_dir():
        raise VerifyUsageError(f"{path}: not a directory; pass the verl package directory or the one that contains it")
    if (p / "__init__.py").is_file():
        if p.resolve().name != "verl":
            raise VerifyUsageError(f"{path}: a Python package named {p.resolve().name!r}, not 'verl'; "
                                   "pass the verl package directory or the directory that contains verl/")
        return p.resolve()
    if (p / "verl" / "__init__.py").is_file():
        return (p / "verl").resolve()
    raise VerifyUsageError(f"{path}: no verl package here (neither {p}/__init__.py nor {p}/verl/__init__.py); "
                           "pass the verl package directory or the directory that contains verl/")


def child_environment(package: Path) -> dict[str, str]:
    env = dict(os.environ)
    rlcompat_root = str(Path(__file__).resolve().parents[2])  # so the child finds rlcompat even from a checkout
    paths = [str(package.parent), rlcompat_root] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))
    env.update(
        HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", HF_DATASETS_OFFLINE="1", TOKENIZERS_PARALLELISM="false",
        VERL_LOGGING_LEVEL=env.get("VERL_LOGGING_LEVEL", "WARN"),
        RAY_DEDUP_LOGS="0", WANDB_MODE="disabled",
    )
    # Progress bars are noise in a log whose tail verify shows: huggingface_hub reads HF_HUB_DISABLE_PROGRESS_BARS
    # at import (huggingface_hub/constants.py:273 in 1.x) and transformers follows it (transformers 5.10.4
    # utils/logging.py:55, "Writing model shards", "Loading weights"); tqdm >= 4.66 takes any default of `tqdm()`
    # from a TQDM_* variable (tqdm 4.70.1 std.py:958, `envwrap("tqdm")`), so TQDM_DISABLE=1 silences bars of other
    # libraries (verl, ray, datasets). A value the user set is kept.
    env.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    env.setdefault("TQDM_DISABLE", "1")
    return env


def run_verify(req: VerifyRequest) -> dict:
    """Run the child; return its result dict, with `workdir`, `log` and `wall_seconds` added."""
    workdir = Path(tempfile.mkdtemp(prefix="rlcompat-verify-"))
    result_file = workdir / "result.json"
    log_file = workdir / "child.log"
    cmd = [
        sys.executable, "-m", "rlcompat.verify.harness",
        "--tree", str(req.package), "--target", req.target, "--device", req.device, "--strategy", req.strategy,
        "--algo", req.algo, "--steps", str(req.steps), "--seed", str(req.seed),
        "--workdir", str(workdir), "--result", str(result_file),
    ]
    start = time.perf_counter()
    cpu_before = _children_cpu()
    with open(log_file, "wb") as log:
        try:
            proc = subprocess.run(cmd, cwd=workdir, env=child_environment(req.package), stdout=log,
                                  stderr=subprocess.STDOUT, timeout=req.timeout)
            rc = proc.returncode
        except subprocess.TimeoutExpired:
            rc = None
    wall = time.perf_counter() - start
    cpu = _children_cpu() - cpu_before
    log_tail = _tail(log_file)
    if result_file.is_file():
        result = json.loads(result_file.read_text("utf-8"))
    else:
        why = f"timed out after {req.timeout:g} s" if rc is None else f"exited with {rc} and wrote no result"
        result = {"status": "error", "exit_code": EXIT_ENV, "reason": f"the verify child process {why}",
                  "phases": [], "checks": [], "metrics": {}, "violations": []}
    result["wall_seconds"] = round(wall, 2)
    result["cpu_seconds"] = round(cpu, 2)  # user+sys of the child: a figure that a busy machine inflates less
    result["command"] = cmd
    result["log_tail"] = log_tail
    if req.keep:
        result["workdir"] = str(workdir)
    else:
        shutil.rmtree(workdir, ignore_errors=True)
    return result


def _children_cpu() -> float:
    try:
        import resource
    except ImportError:  # Windows
        return 0.0
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _tail(path: Path, lines: int = 25) -> str:
    try:
        text = path.read_text("utf-8", errors="replace")
    except OSError:
        return ""
    return "\n".join(text.splitlines()[-lines:])
