"""Run verl's trainer processes on a CPU (`rlcompat verify --trainer --device cpu`); never used on a GPU.

The same adaptations the fast verify harness makes in its one process (rlcompat/verify/cpu_adapt.py), made in every
Ray process that imports verl. The CPU platform names Ray's "GPU" resource, because verl's resource pools ask Ray for
one "GPU" per worker (single_controller/ray/base.py:147, :230); verify --trainer starts Ray with one fake GPU.
"""

from __future__ import annotations

_done = False


def adapt_for_cpu() -> None:
    global _done
    if _done:
        return
    _done = True
    from rlcompat.verify import cpu_adapt

    cpu_adapt.register_cpu_platform(ray_resource="GPU")
    cpu_adapt.patch_fsdp_engine_for_cpu("fsdp2")
    cpu_adapt.patch_fsdp_engine_for_cpu("fsdp")
    _gloo_only()
    _no_fsdp1_reload()


def _gloo_only() -> None:
    """verl asks for "cpu:gloo,<device>:<nccl backend>" (utils/distributed.py:89); on the CPU platform both halves
    name the CPU, which torch refuses as a duplicate. One gloo backend is what that string means there."""
    import torch.distributed as dist

    from rlcompat.verify import cpu_adapt

    original = dist.init_process_group

    def init_process_group(backend=None, *args, **kwargs):
        if isinstance(backend, str) and "," in backend and all(p.startswith("cpu:") for p in backend.split(",")):
            backend = "gloo"
        return original(backend, *args, **kwargs)

    dist.init_process_group = init_process_group
    cpu_adapt.ADAPTATIONS.append("torch.distributed: verl's 'cpu:gloo,cpu:gloo' backend string read as 'gloo'")


def _no_fsdp1_reload() -> None:
    """FSDP1's "load to GPU" builds the device string f"{device}:{index}" (utils/fsdp_utils.py:229), "cpu:cpu" on the
    CPU platform; the parameters never left the CPU, so there is nothing to load."""
    from verl.utils import fsdp_utils
    from verl.workers.engine.fsdp import transformer_impl

    from rlcompat.verify import cpu_adapt

    original = fsdp_utils.load_fsdp_model_to_gpu

    def load_fsdp_model_to_gpu(model):
        if fsdp_utils.fsdp_version(model) == 2 or fsdp_utils.fsdp_version(model) == 0:
            return original(model)
        return None

    fsdp_utils.load_fsdp_model_to_gpu = load_fsdp_model_to_gpu
    transformer_impl.load_fsdp_model_to_gpu = load_fsdp_model_to_gpu
    cpu_adapt.ADAPTATIONS.append("FSDP1: load_fsdp_model_to_gpu is a no-op (the parameters stay on the CPU)")
