"""The target guard in every process of a verl run (`rlcompat verify --trainer`).

verl's trainer spreads over Ray processes (the driver's TaskRunner, the actor/critic workers, the agent loop
workers, the rollout servers); each imports verl and so this plugin, which installs rlcompat's TargetGuard there.
Violations are appended as JSON lines to one log file that verify reads after the run: the first line is the first
violation of the run. The bf16 watch is a TorchDispatchMode, which is per thread; Ray runs actor methods on its own
threads, so the mode is also entered in each thread the first time a module is called there.
"""

from __future__ import annotations

import json
import os
import threading

_guard = None


def install_process_guard(target_name: str, log_path: str | None, tree: str | None) -> None:
    global _guard
    if _guard is not None:
        return
    import torch

    from rlcompat.knowledge.targets import resolve_target
    from rlcompat.verify.guard import TargetGuard
    from rlcompat.verify.harness import same_generation

    target = resolve_target(target_name)
    device = "cuda" if torch.cuda.is_available() and os.environ.get("RLCOMPAT_VERL_CPU") != "1" else "cpu"
    native = device == "cuda" and same_generation(torch, target)
    guard = TargetGuard(target, tree, enforce=not native, device=device)
    guard.install_import_blocker()
    _log_violations(guard, log_path)
    guard.install()
    _guard = guard
    _enter_dtype_watch_per_thread(guard)


def _log_violations(guard, log_path: str | None) -> None:
    original = guard.violation
    lock = threading.Lock()

    def violation(kind, op, message):
        try:
            original(kind, op, message)
        finally:
            if log_path:
                v = guard.violations[-1]
                line = dict(v.to_dict(), pid=os.getpid())
                with lock, open(log_path, "a", encoding="utf-8") as f:
                    f.write(json.dumps(line, default=str) + "\n")

    guard.violation = violation


def _enter_dtype_watch_per_thread(guard) -> None:
    import torch
    from torch.utils._python_dispatch import _get_current_dispatch_mode_stack

    mode_type = None
    for mode in _get_current_dispatch_mode_stack():
        if type(mode).__name__ == "_DtypeWatch":
            mode_type = type(mode)
    if mode_type is None:
        return
    watched = threading.local()
    original_call = torch.nn.Module.__call__

    def call(self, *args, **kwargs):
        if not getattr(watched, "on", False):
            watched.on = True
            if not any(isinstance(m, mode_type) for m in _get_current_dispatch_mode_stack()):
                mode_type().__enter__()  # stays on for the thread's life, like the main thread's
        return original_call(self, *args, **kwargs)

    torch.nn.Module.__call__ = call
