"""`verify --trainer` behind the CLI: check what it needs, run it, render it (kept out of command.py's imports)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from rlcompat.release import install_command


def run_trainer_mode(package: Path, target: str, device: str, steps: int, script: str | None, model_size: str,
                     algo: str, seed: int, keep: bool, timeout: float, fail, gpus: int = 1, trace: bool = False,
                     trace_from: str | None = None) -> dict:
    from rlcompat.verify.trainer import TrainerRequest, verify_trainer
    from rlcompat.verify.trainer_report import render_trainer_text

    # The command line first: a typo is reported as such, whatever this environment lacks.
    if model_size not in ("tiny", "0.5b"):
        raise fail(f"--model-size {model_size!r}: use tiny or 0.5b")
    if script is not None and not Path(script).is_file():
        raise fail(f"{script}: no such launch script")
    missing = [m for m in ("torch", "ray", "pandas", "transfer_queue", "verl") if importlib.util.find_spec(m) is None]
    if missing:
        raise fail(f"verify --trainer needs {', '.join(missing)}: {install_command('verl')}")
    if device == "auto":
        import torch

        device = "cuda" if torch.cuda.is_available() else "cpu"
    elif device == "cuda":
        import torch

        if not torch.cuda.is_available():
            raise fail("--device cuda given but torch.cuda.is_available() is False")
    if device == "cuda" and gpus > 1:
        import torch

        if torch.cuda.device_count() < gpus:
            raise fail(f"--gpus {gpus} given but this machine shows {torch.cuda.device_count()} CUDA device(s)")
    req = TrainerRequest(package=package, target=target, device=device, steps=steps,
                         script=Path(script) if script else None, model=model_size, algo=algo, seed=seed,
                         timeout=900.0 if timeout == 600.0 else timeout,  # 600 s is the fast mode's default
                         keep=keep, gpus=gpus, trace=trace,
                         trace_from=Path(trace_from) if trace_from else None)
    result = verify_trainer(req)
    result["_text"] = render_trainer_text(result)
    return result
