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
