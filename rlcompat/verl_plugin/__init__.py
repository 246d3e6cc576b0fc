"""rlcompat's `hf` rollout for verl: generation with plain transformers where vLLM/SGLang do not run (P40, P100).

verl 0.9.1 loads every `verl.plugins` entry point when `import verl` runs (verl/__init__.py:55-64); pyproject.toml
points one at `rlcompat.verl_plugin.entry`, which calls `register` below, so `actor_rollout_ref.rollout.name=hf` works once `rlcompat[verl]` is installed.
Nothing in rlcompat's scan/fix/doctor imports this package: it needs torch, Ray and verl.

Set by `rlcompat verify --trainer` (never needed for training on a GPU):
- RLCOMPAT_VERL_CPU=1: run verl's FSDP engines on a CPU (rlcompat/verify/cpu_adapt.py), in every Ray process;
- RLCOMPAT_VERIFY_GUARD=<target> and RLCOMPAT_VERIFY_GUARD_LOG=<file>: the target guard in every Ray process,
  its violations appended to the file as JSON lines.
"""

from __future__ import annotations

import logging
import os

SUPPORTED_VERL_VERSIONS = ("0.9.1",)
ROLLOUT_NAME = "hf"

logger = logging.getLogger(__name__)
_registered = False


class UnsupportedVerlVersion(RuntimeError):
    pass


def unsupported_message(found: str) -> str:
    return (f"rlcompat's hf rollout supports verl {', '.join(SUPPORTED_VERL_VERSIONS)} only; this is verl {found} "
            f"(pip install 'verl=={SUPPORTED_VERL_VERSIONS[-1]}', or choose another rollout.name)")


def installed_verl_version() -> str:
    import sys

    verl = sys.modules.get("verl")
    version = getattr(verl, "__version__", None)
    if version:
        return str(version)
    from importlib.metadata import version as dist_version

    return dist_version("verl")


def register() -> None:
    """The `verl.plugins` entry point: add the `hf` rollout to verl's registries (once per process).

    The registries live in modules that import Ray and verl's rollout stack (about a second); a process that never
    needs a rollout should not pay for that on `import verl`. So the `hf` entries are added right after those two
    modules are first imported, by whoever imports them (verl's trainer does), or at once if they already are.
    """
    global _registered
    if _registered:
        return
    _registered = True
    _verify_hooks()
    import sys

    for module in _REGISTRY_MODULES:
        if module in sys.modules:
            _add_to_registry(module)
        else:
            _after_import(module, _add_to_registry)


_REGISTRY_MODULES = ("verl.workers.rollout.base", "verl.workers.rollout.replica")


def _add_to_registry(module_name: str) -> None:
    import sys

    module = sys.modules[module_name]
    found = installed_verl_version()
    supported = found in SUPPORTED_VERL_VERSIONS
    if module_name.endswith(".base"):
        if supported:
            module._ROLLOUT_REGISTRY[(ROLLOUT_NAME, "async")] = "rlcompat.verl_plugin.rollout.HFServerAdapter"
        return
    if not supported:
        message = unsupported_message(found)
        logger.warning(message)

        def refuse():
            raise UnsupportedVerlVersion(message)

        module.RolloutReplicaRegistry.register(ROLLOUT_NAME, refuse)
        return

    def load_replica():
        from rlcompat.verl_plugin.rollout import HFReplica

        return HFReplica

    module.RolloutReplicaRegistry.register(ROLLOUT_NAME, load_replica)


def _after_import(name: str, then) -> None:
    """Call `then(name)` once module `name` has been executed by a normal import."""
    import importlib.abc
    import importlib.util
    import sys

    class _Finder(importlib.abc.MetaPathFinder):
        def find_spec(self, fullname, path, target=None):
            if fullname != name:
                return None
            sys.meta_path.remove(self)
            spec = importlib.util.find_spec(fullname)
            if spec is None or spec.loader is None:
                return spec
            run_module = spec.loader.exec_module

            def exec_module(module):
                run_module(module)
                then(fullname)

            spec.loader.exec_module = exec_module
            return spec

    sys.meta_path.insert(0, _Finder())


def _verify_hooks() -> None:
    """What `rlcompat verify --trainer` asks of every process that imports verl (a no-op otherwise)."""
    target = os.environ.get("RLCOMPAT_VERIFY_GUARD")
    if target:
        from rlcompat.verl_plugin.process_guard import install_process_guard

        install_process_guard(target, os.environ.get("RLCOMPAT_VERIFY_GUARD_LOG"),
                              os.environ.get("RLCOMPAT_VERIFY_TREE"))
    if os.environ.get("RLCOMPAT_VERIFY_TRACE"):  # before verl's own modules run: their import-time lines count
        from rlcompat.verify.line_trace import install

        install(os.environ["RLCOMPAT_VERIFY_TRACE"], os.environ["RLCOMPAT_VERIFY_TRACE_OUT"])
    if os.environ.get("RLCOMPAT_VERL_CPU") == "1":
        from rlcompat.verl_plugin.cpu_trainer import adapt_for_cpu

        adapt_for_cpu()
