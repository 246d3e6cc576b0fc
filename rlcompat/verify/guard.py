"""The target guard: make a process behave, for the code under test, as it would on the target GPU.

While installed it
- sees every tensor an ATen op creates or computes (a TorchDispatchMode) and, on a target without native bf16,
  raises on the first bfloat16 one, naming the op and the Python frame that asked for it;
- makes `flash_attn` (and FlashAttention-3's modules) fail to import where the target has no such kernels, and
  refuses `attn_implementation="flash_attention_2"/"flash_attention_3"` in transformers' model construction;
- turns the SDPA flash backend off where the target lacks it (CUDA only; CPU SDPA has no such backend);
- makes functions compiled with torch.compile's default (inductor) backend raise when first called below sm70,
  as inductor does on the card ("GPU too old");
- checks each Triton kernel's shared memory against the target's opt-in limit before it is loaded;
- on targets whose precision policy is fp16 autocast (sm70, sm75: docs/precision.md), fails an optimizer step taken
  under a grad scaler while the optimizer holds fp16 parameters (on the card: `Attempting to unscale FP16
  gradients.`), and a loss or logits that turn non-finite, naming the dtypes, autocast and scaler that led there.

`enforce=False` (running on a GPU of the target's own generation) only records: the card itself is the judge.
Every violation is recorded before it is raised, so code that swallows exceptions (verl's value-head loader catches
BaseException) cannot hide the first one.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.abc
import importlib.machinery
import os
import sys
import threading
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable

from rlcompat.knowledge.spellings import flash_attention

# Modules that hold FlashAttention kernels, and transformers' attn_implementation values selecting them, by the
# target fact that says whether the card can run them (rlcompat/knowledge/data/spellings.toml).
FLASH_MODULES = {m: fa.fact for fa in map(flash_attention, (2, 3)) for m in fa.modules}
FLASH_IMPLEMENTATIONS = {fa.implementations[0]: fa.fact for fa in map(flash_attention, (2, 3))}

_THIS_DIR = os.path.dirname(os.path.abspath(__file__))


class TargetViolation(RuntimeError):
    """Code under test used something the target GPU does not have."""


@dataclass(frozen=True)
class Frame:
    file: str
    line: int
    function: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line} in {self.function}"


@dataclass
class Violation:
    kind: str  # bf16 | flash_attn_import | flash_attn_selected | inductor | triton_smem | fp16_params_scaler | non_finite
    message: str
    op: str
    location: Frame | None  # innermost frame inside the tree under test (or first frame outside torch)
    in_tree: bool
    stack: list[Frame] = field(default_factory=list)  # frames inside the tree, innermost first

    def to_dict(self) -> dict:
        return {
            "kind": self.kind, "message": self.message, "op": self.op, "in_tree": self.in_tree,
            "location": _frame_dict(self.location), "stack": [_frame_dict(f) for f in self.stack],
        }


def _frame_dict(f: Frame | None) -> dict | None:
    return None if f is None else {"file": f.file, "line": f.line, "function": f.function}


def _is_library_frame(filename: str) -> bool:
    """Frames from torch, the guard itself, and the import machinery are never 'where it came from'."""
    if filename.startswith(_THIS_DIR) or filename.startswith("<frozen"):
        return True
    parts = filename.replace("\\", "/").split("/")
    return any(p in ("torch", "torchgen", "functorch", "triton", "contextlib.py", "functools.py") for p in parts)


class TargetGuard:
    def __init__(self, target, tree_root: str | None, enforce: bool, device: str):
        self.target = target
        self.tree_root = os.path.realpath(tree_root) + os.sep if tree_root else None
        self.enforce = enforce
        self.device = device
        self.violations: list[Violation] = []
        self.blocked_imports: list[str] = []
        self.dtypes_seen: Counter[str] = Counter()
        self.notes: list[str] = []
        self.precision = PrecisionTrail()
        self._undo: list[Callable[[], None]] = []
        self._lock = threading.Lock()  # backward may run on autograd's device threads

    # ---- recording ---------------------------------------------------------------------------------------
    def locate(self) -> tuple[Frame | None, bool, list[Frame]]:
        frame = sys._getframe(1)
        in_tree: list[Frame] = []
        first_outside: Frame | None = None
        while frame is not None:
            filename = frame.f_code.co_filename
            if not filename.startswith("<"):  # "<frozen ...>", "<string>" have no real path
                filename = os.path.realpath(filename)
            here = Frame(filename, frame.f_lineno, frame.f_code.co_name)
            if self.tree_root and filename.startswith(self.tree_root):
                in_tree.append(here)
            elif first_outside is None and not _is_library_frame(filename):
                first_outside = here
            frame = frame.f_back
        if in_tree:
            return in_tree[0], True, in_tree[:8]
        return first_outside, False, []

    def violation(self, kind: str, op: str, message: str) -> None:
        """Record a violation where the caller stands; raise it unless only watching."""
        location, in_tree, stack = self.locate()
        v = Violation(kind, message, op, location, in_tree, stack)
        with self._lock:
            self.violations.append(v)
        if self.enforce:
            where = f" at {location}" if location else ""
            raise TargetViolation(f"[rlcompat guard, {self.target.name}] {message}{where}")

    @property
    def first_violation(self) -> Violation | None:
        return self.violations[0] if self.violations else None

    # ---- installation ------------------------------------------------------------------------------------
    def install_import_blocker(self) -> None:
        blocked = {m for m, fact in FLASH_MODULES.items() if not self.target.fact(fact)}
        if not blocked or not self.enforce:
            return
        finder = _BlockingFinder(blocked, self)
        sys.meta_path.insert(0, finder)
        self._undo.append(lambda: sys.meta_path.remove(finder))
        for name in list(sys.modules):
            if name.split(".")[0] in blocked:
                self.notes.append(f"{name} was already imported before the guard; it was unloaded")
                del sys.modules[name]

    def install(self) -> "TargetGuard":
        """Everything but the import blocker, which runner code installs first (before verl is imported)."""
        self._install_dtype_mode()
        self._install_attention_checks()
        self._install_sdpa_policy()
        self._install_compile_block()
        self._install_triton_check()
        self._install_amp_checks()
        return self

    def uninstall(self) -> None:
        while self._undo:
            self._undo.pop()()

    def __enter__(self) -> "TargetGuard":
        return self.install()

    def __exit__(self, *exc) -> None:
        self.uninstall()

    def _install_dtype_mode(self) -> None:
        import torch
        from torch.utils._python_dispatch import TorchDispatchMode

        guard = self
        bf16_banned = not self.target.bf16_native
        bfloat16 = torch.bfloat16

        class _DtypeWatch(TorchDispatchMode):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                out = func(*args, **(kwargs or {}))
                self.check(_tensors(out), func)
                return out

            def check(self, tensors, op) -> None:
                """What the watch does with each operator's results; `paused_dtype_watch` callers use it on the
                results of a block they ran unwatched."""
                for t in tensors:
                    guard.dtypes_seen[str(t.dtype).replace("torch.", "")] += 1
                    if bf16_banned and t.dtype is bfloat16:
                        guard.violation(
                            "bf16", str(op),
                            f"bfloat16 tensor produced by {op} on {guard.target.name}, which has no bf16 hardware "
                            f"(use float32{' or float16' if guard.target.fp16_tensor_cores else ''})",
                        )
                        break

        mode = _DtypeWatch()
        mode.__enter__()
        self._undo.append(lambda: mode.__exit__(None, None, None))

    def _install_attention_checks(self) -> None:
        try:
            from transformers import PreTrainedModel
        except ImportError:
            return
        original = PreTrainedModel._check_and_adjust_attn_implementation
        guard = self

        @functools.wraps(original)
        def checked(model_self, attn_implementation, *args, **kwargs):
            requested = attn_implementation or ""
            for impl, fact in FLASH_IMPLEMENTATIONS.items():
                if impl in requested and not guard.target.fact(fact):
                    guard.violation(
                        "flash_attn_selected", f"attn_implementation={requested!r}",
                        f"attn_implementation={requested!r} selected for {type(model_self).__name__}; "
                        f"{guard.target.name} has no {'FlashAttention-2' if fact == 'flash_attn_2' else 'FlashAttention-3'} "
                        f"kernels (use 'sdpa' or 'eager')",
                    )
            return original(model_self, attn_implementation, *args, **kwargs)

        PreTrainedModel._check_and_adjust_attn_implementation = checked
        self._undo.append(lambda: setattr(PreTrainedModel, "_check_and_adjust_attn_implementation", original))

    def _install_sdpa_policy(self) -> None:
        import torch

        if self.device != "cuda" or self.target.sdpa_flash:
            return
        was = torch.backends.cuda.flash_sdp_enabled()
        torch.backends.cuda.enable_flash_sdp(False)
        self.notes.append(f"SDPA flash backend off ({self.target.name} lacks it); math/mem-efficient backends remain")
        self._undo.append(lambda: torch.backends.cuda.enable_flash_sdp(was))

    def _install_compile_block(self) -> None:
        import torch

        if self.target.inductor or not self.enforce:
            return
        guard = self
        original_compile = torch.compile

        @functools.wraps(original_compile)
        def compile_(model=None, *args, backend="inductor", **kwargs):
            if model is None:  # used as @torch.compile(...)
                return lambda fn: compile_(fn, *args, backend=backend, **kwargs)
            if backend != "inductor":
                return original_compile(model, *args, backend=backend, **kwargs)
            return _refuse_when_called(model, guard, "torch.compile", guard.locate()[0])

        torch.compile = compile_
        self._undo.append(lambda: setattr(torch, "compile", original_compile))

        import torch._dynamo as dynamo

        original_optimize = dynamo.optimize

        @functools.wraps(original_optimize)
        def optimize(*args, **kwargs):
            backend = kwargs.get("backend", args[0] if args else "inductor")
            if backend not in ("inductor", None):
                return original_optimize(*args, **kwargs)
            where = guard.locate()[0]
            return lambda fn: _refuse_when_called(fn, guard, "torch._dynamo.optimize", where)

        dynamo.optimize = optimize
        self._undo.append(lambda: setattr(dynamo, "optimize", original_optimize))

    def _install_triton_check(self) -> None:
        # Only where triton is importable (CUDA torch wheels): the CPU wheel has no Triton and nothing can launch.
        import importlib.util

        if importlib.util.find_spec("triton") is None:
            return
        try:
            from triton.compiler.compiler import CompiledKernel
        except Exception as exc:  # a Triton too different to hook; say so rather than pretend
            self.notes.append(f"Triton present but its launch path could not be watched: {exc}")
            return
        original = CompiledKernel._init_handles
        guard = self

        def init_handles(kernel_self, *args, **kwargs):
            shared = getattr(getattr(kernel_self, "metadata", None), "shared", None)
            name = getattr(kernel_self, "name", "?")
            check_triton_smem(guard, name, shared)
            return original(kernel_self, *args, **kwargs)

        CompiledKernel._init_handles = init_handles
        self._undo.append(lambda: setattr(CompiledKernel, "_init_handles", original))

    def _install_amp_checks(self) -> None:
        from rlcompat.knowledge.precision import dtype_for

        if dtype_for(self.target, "autocast") != "float16":
            return
        import torch

        guard, trail = self, self.precision
        scalers = [torch.amp.GradScaler]
        try:
            from torch.distributed.fsdp.sharded_grad_scaler import ShardedGradScaler

            scalers.append(ShardedGradScaler)
        except ImportError:  # torch built without distributed
            pass
        for cls in scalers:
            for method in ("unscale_", "step"):
                original = cls.__dict__.get(method)
                if original is None:
                    continue
                setattr(cls, method, _checked_scaler_method(original, guard))
                self._undo.append(lambda cls=cls, method=method, original=original: setattr(cls, method, original))
            original_scale = cls.__dict__.get("scale")
            if original_scale is not None:
                def scale(scaler_self, outputs, _original=original_scale, _cls=cls):
                    trail.scaler = _cls.__name__
                    check_finite(guard, "loss", outputs)
                    return _original(scaler_self, outputs)

                setattr(cls, "scale", functools.wraps(original_scale)(scale))
                self._undo.append(lambda cls=cls, original=original_scale: setattr(cls, "scale", original))

        original_enter = torch.autocast.__enter__

        def enter(autocast_self):
            if getattr(autocast_self, "_enabled", True):
                trail.autocast.add(f"{autocast_self.device} {str(autocast_self.fast_dtype).replace('torch.', '')}")
            return original_enter(autocast_self)

        torch.autocast.__enter__ = enter
        self._undo.append(lambda: setattr(torch.autocast, "__enter__", original_enter))

        original_backward = torch.Tensor.backward

        def backward(tensor_self, *args, **kwargs):
            if tensor_self.dim() == 0:
                check_finite(guard, "loss", tensor_self)
            return original_backward(tensor_self, *args, **kwargs)

        torch.Tensor.backward = functools.wraps(original_backward)(backward)
        self._undo.append(lambda: setattr(torch.Tensor, "backward", original_backward))

        def logits_hook(module, inputs, output):
            logits = getattr(output, "logits", None)
            if isinstance(logits, torch.Tensor):
                trail.parameters = sorted({str(p.dtype).replace("torch.", "") for p in module.parameters()})
                check_finite(guard, f"logits of {type(module).__name__}", logits)

        handle = torch.nn.modules.module.register_module_forward_hook(logits_hook)
        self._undo.append(handle.remove)


@dataclass
class PrecisionTrail:
    """The precision settings seen so far, named when a step fails."""

    autocast: set[str] = field(default_factory=set)
    scaler: str | None = None
    parameters: list[str] = field(default_factory=list)

    def describe(self) -> str:
        parts = [f"autocast {', '.join(sorted(self.autocast))}" if self.autocast else "no autocast"]
        parts.append(f"{self.scaler} in use" if self.scaler else "no grad scaler")
        if self.parameters:
            parts.append(f"model parameters {'/'.join(self.parameters)}")
        return "; ".join(parts)


def check_finite(guard: TargetGuard, what: str, value) -> None:
    """Fail through the guard when a loss or logits tensor holds nan or inf."""
    import torch

    if not isinstance(value, torch.Tensor) or not value.is_floating_point():
        return
    with torch.no_grad():
        finite = bool(torch.isfinite(value).all())
    if finite:
        return
    guard.violation(
        "non_finite", what,
        f"{what} turned non-finite ({str(value.dtype).replace('torch.', '')}) on {guard.target.name}; settings: "
        f"{guard.precision.describe()}. A bf16-pretrained model can overflow in fp16: keep weights in float32 and "
        f"check the model type against docs/precision.md",
    )


def _checked_scaler_method(original, guard: TargetGuard):
    """`GradScaler.unscale_`/`step` that first refuse an optimizer holding fp16 parameters."""

    @functools.wraps(original)
    def checked(scaler_self, optimizer, *args, **kwargs):
        import torch

        guard.precision.scaler = type(scaler_self).__name__
        half = [p for g in optimizer.param_groups for p in g["params"]
                if isinstance(p, torch.Tensor) and p.dtype == torch.float16 and p.requires_grad]
        if half and getattr(scaler_self, "_enabled", True):
            total = sum(1 for g in optimizer.param_groups for _ in g["params"])
            guard.violation(
                "fp16_params_scaler", f"{type(scaler_self).__name__}.{original.__name__}",
                f"optimizer step under {type(scaler_self).__name__} with {len(half)} of {total} parameters in float16 on "
                f"{guard.target.name} (the scaler raises `Attempting to unscale FP16 gradients.`); settings: "
                f"{guard.precision.describe()}. fp16 AMP needs fp32 master weights: load the model in float32 "
                f"(torch_dtype=torch.float32) and keep fp16 for autocast only (fp16=True)",
            )
        return original(scaler_self, optimizer, *args, **kwargs)

    return checked


def check_triton_smem(guard: TargetGuard, kernel: str, shared_bytes: int | None) -> None:
    """Raise (through the guard) when a Triton kernel needs more shared memory per block than the target opts into."""
    limit = guard.target.smem_per_block_optin
    if shared_bytes is not None and shared_bytes > limit:
        guard.violation(
            "triton_smem", f"triton kernel {kernel}",
            f"Triton kernel {kernel} needs {shared_bytes} bytes of shared memory per block; "
            f"{guard.target.name} allows at most {limit} (smaller BLOCK sizes or num_stages)",
        )


def _refuse_when_called(fn: Any, guard: TargetGuard, entry: str, compiled_at: Frame | None):
    """What inductor does on a card below sm70: compiling succeeds lazily, the first call fails."""
    name = getattr(fn, "__qualname__", None) or type(fn).__name__
    origin = f" (compiled at {compiled_at.file}:{compiled_at.line})" if compiled_at else ""

    @functools.wraps(fn)
    def refused(*args, **kwargs):
        guard.violation(
            "inductor", f"{entry}({name})",
            f"{entry}'d {name}{origin} called on {guard.target.name}: inductor/Triton need sm70+ "
            f"(turn compilation off there, e.g. use_torch_compile=False)",
        )
        return fn(*args, **kwargs)  # watch mode: behave as uncompiled

    return refused


class _BlockingFinder(importlib.abc.MetaPathFinder):
    """Gives a spec whose loading fails, so `find_spec` still answers (as transformers expects) but import raises."""

    def __init__(self, blocked: set[str], guard: TargetGuard):
        self.blocked = blocked
        self.guard = guard

    def find_spec(self, fullname, path=None, target=None):
        if fullname.split(".")[0] not in self.blocked:
            return None
        # Absent anyway: stay out of the way, so `find_spec` says "not installed" exactly as without the guard.
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            if finder.find_spec(fullname, path, target) is not None:
                return importlib.machinery.ModuleSpec(fullname, _BlockedLoader(self.guard))
        return None


class _BlockedLoader(importlib.abc.Loader):
    def __init__(self, guard: TargetGuard):
        self.guard = guard

    def create_module(self, spec):
        self.guard.blocked_imports.append(spec.name)
        raise ImportError(
            f"{spec.name} is not importable on {self.guard.target.name} (rlcompat guard: no FlashAttention kernels "
            f"for this GPU)", name=spec.name,
        )

    def exec_module(self, module):  # pragma: no cover - create_module always raises
        raise ImportError(module.__name__)


def active_dtype_watch():
    """The guard's dtype watch on this thread's dispatch mode stack, or None (no guard, or watching off here)."""
    try:
        from torch.utils._python_dispatch import _get_current_dispatch_mode_stack
    except ImportError:  # pragma: no cover - torch without Python dispatch modes
        return None
    for mode in _get_current_dispatch_mode_stack():
        if type(mode).__name__ == "_DtypeWatch" and hasattr(mode, "check"):
            return mode
    return None


@contextlib.contextmanager
def paused_dtype_watch():
    """Run a block without the dtype watch's per-operator check; yields whether it was paused.

    For code whose every operator was already seen by the watch on the same inputs' dtypes (the hf rollout's own
    decode loop, docs/verify.md "The guard"): the caller then checks what the block produced with the watch's
    `check`. Only the watch is taken off: with any other dispatch mode on the stack nothing is paused.
    """
    try:
        from torch.utils._python_dispatch import _disable_current_modes, _get_current_dispatch_mode_stack
    except ImportError:  # pragma: no cover
        yield False
        return
    stack = _get_current_dispatch_mode_stack()
    if not stack or any(type(m).__name__ != "_DtypeWatch" for m in stack):
        yield False
        return
    with _disable_current_modes():
        yield True


def _tensors(out):
    import torch

    if isinstance(out, torch.Tensor):
        yield out
    elif isinstance(out, (tuple, list)):
        for o in out:
            if isinstance(o, torch.Tensor):
                yield o
