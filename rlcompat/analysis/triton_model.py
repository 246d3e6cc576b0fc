"""A static model of what a Triton kernel needs from a GPU target: its launch configurations and shared memory.

Pure Python over LibCST nodes; Triton is never imported. For each `@triton.jit` function (or one behind a local
wrapper of `triton.jit`, see `is_triton_kernel`) it reads

- the configurations it can run with: `@triton.autotune(configs=[triton.Config({...}, num_stages=, num_warps=)])`
  (inline or a module-level list), `@triton.heuristics({...: lambda args: 64})`, `tl.constexpr` defaults and the
  meta-parameters passed at launch sites in the same file (`kernel[grid](..., BLOCK=128, num_stages=2)`);
- the tiles that reach each `tl.dot`: their shapes in constexpr block sizes (from `tl.arange`, `tl.zeros`,
  pointer arithmetic, broadcasting, `.T`), element sizes (the pointer's element type, `.to(...)` casts) and the
  loop each was produced in.

Shared memory of one configuration is then estimated per target. Below 8.0 (no pipelining [S20], FMA dot [S19])
operands are staged as fp32, one after the other unless produced before the dot's loop. From 8.0 an operand loaded
in an innermost loop is held in one buffer per pipeline stage (`pipeline_buffers`). The kernel's need is its
largest dot. Calibrated against Triton's compiler; docs/triton.md gives the measured error and what is not modelled
(epilogue layout conversions, reduction scratch).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Callable, Iterable

import libcst as cst

QualName = Callable[["cst.CSTNode"], "str | None"]

DEFAULT_NUM_STAGES = 3  # triton's CUDA backend default
DEFAULT_NUM_WARPS = 4
# Element size of a pointer argument whose dtype the file does not show: RL trainers launch kernels on
# bf16/fp16 activations and weights.
DEFAULT_POINTER_BYTES = 2

DTYPE_BYTES = {
    "float64": 8, "fp64": 8, "int64": 8, "uint64": 8,
    "float32": 4, "fp32": 4, "int32": 4, "uint32": 4, "tf32": 4,
    "float16": 2, "fp16": 2, "bfloat16": 2, "bf16": 2, "int16": 2, "uint16": 2,
    "float8e4nv": 1, "float8e5": 1, "float8e4b15": 1, "int8": 1, "uint8": 1, "int1": 1,
}
_ELEMENTWISE = frozenset(
    {"exp", "exp2", "log", "log2", "sqrt", "rsqrt", "abs", "sigmoid", "maximum", "minimum", "where", "fma",
     "fdiv", "div_rn", "cos", "sin", "erf", "floor", "ceil", "clamp", "softmax"}
)
_REDUCTIONS = frozenset({"max", "min", "sum", "argmax", "argmin", "xor_sum", "reduce", "cumsum", "cumprod"})

@dataclass(frozen=True)
class Tile:
    """What the model knows about a value in a kernel."""

    shape: tuple | None = None  # dims, each int | str (constexpr name) | None; None: not a tensor we follow
    nbytes: int | None = None  # element size now
    wide_nbytes: int | None = None  # widest element size it was computed in (before narrowing casts)
    pointer: str | None = None  # the pointer parameter it is derived from (pointer arithmetic)
    loaded: bool = False  # comes straight from tl.load (possibly cast or transposed)
    load_nbytes: int | None = None  # element size as loaded from memory
    made_in: int = 0  # id of the innermost loop it was loaded or computed in (0: not in a loop)


@dataclass(frozen=True)
class DotSite:
    node: cst.Call
    a: Tile
    b: Tile
    loop: int  # innermost loop the dot runs in (0: none)
    loop_is_innermost: bool = True  # no loop nested inside it (Triton pipelines innermost loops)


@dataclass(frozen=True)
class LaunchConfig:
    """One configuration a kernel can run with."""

    constexprs: dict = field(hash=False)
    num_stages: int = DEFAULT_NUM_STAGES
    num_warps: int = DEFAULT_NUM_WARPS
    node: cst.Call | None = None  # the triton.Config(...) call, when it comes from an autotune list
    dict_node: cst.Dict | None = None

    def describe(self) -> str:
        sizes = ", ".join(f"{k}={v}" for k, v in self.constexprs.items() if v is not None)
        return f"{{{sizes}}}, num_stages={self.num_stages}, num_warps={self.num_warps}"


@dataclass
class Kernel:
    name: str
    node: cst.FunctionDef
    params: list[str]
    constexpr_params: list[str]
    pointer_bytes: dict[str, int]
    configs: list[LaunchConfig]
    autotuned: bool
    configs_complete: bool  # every config could be read (a list we could not read means: don't drop any)
    dots: list[DotSite]
    configs_list_node: cst.List | None = None


@dataclass(frozen=True)
class Estimate:
    nbytes: int
    dot: DotSite | None
    detail: str  # how the figure is made up, for messages


# ---------------------------------------------------------------------------------------------------------------
# Reading decorators and launch sites


def is_jit(decorator: cst.Decorator, qualname: QualName) -> bool:
    expr = decorator.decorator
    if isinstance(expr, cst.Call):
        expr = expr.func
    return qualname(expr) in ("triton.jit", "triton.runtime.jit.jit")


_CONSTEXPR = ("triton.language.constexpr", "triton.language.core.constexpr")


def is_triton_kernel(func: cst.FunctionDef, qualname: QualName) -> bool:
    """`@triton.jit`, or any decorator on a function with a `tl.constexpr` parameter: only Triton's JIT reads those,
    so the decorator is a local wrapper of `triton.jit` (TRL 1.16 decorates its kernels with `_jit`, which calls
    `triton.jit` when Triton is installed, trl/kernels/chunked_logprob.py:39)."""
    if not func.decorators:
        return False
    return any(is_jit(d, qualname) for d in func.decorators) or any(
        _param_annotation_is(p, qualname, _CONSTEXPR) for p in func.params.params)


def int_value(expr: cst.BaseExpression | None, constants: dict[str, int] | None = None) -> int | None:
    """An int literal, a module constant, or simple arithmetic over them (`2 * 64`, `1 << 7`)."""
    if expr is None:
        return None
    if isinstance(expr, cst.Integer):
        return int(expr.evaluated_value)
    if isinstance(expr, cst.Name) and constants is not None:
        return constants.get(expr.value)
    if isinstance(expr, cst.BinaryOperation):
        left, right = int_value(expr.left, constants), int_value(expr.right, constants)
        if left is None or right is None:
            return None
        op = type(expr.operator)
        ops = {cst.Multiply: lambda a, b: a * b, cst.Add: lambda a, b: a + b, cst.Subtract: lambda a, b: a - b,
               cst.FloorDivide: lambda a, b: a // b if b else None, cst.LeftShift: lambda a, b: a << b}
        return ops[op](left, right) if op in ops else None
    return None


def module_constants(module: cst.Module) -> tuple[dict[str, int], dict[str, cst.BaseExpression]]:
    """Module-level `NAME = <int>` and every module-level `NAME = <expr>` (for config lists)."""
    ints: dict[str, int] = {}
    exprs: dict[str, cst.BaseExpression] = {}
    for stmt in module.body:
        if not isinstance(stmt, cst.SimpleStatementLine):
            continue
        for small in stmt.body:
            if isinstance(small, cst.Assign) and len(small.targets) == 1 and isinstance(small.targets[0].target, cst.Name):
                name = small.targets[0].target.value
                exprs[name] = small.value
                value = int_value(small.value, ints)
                if value is not None:
                    ints[name] = value
    return ints, exprs


def _kwarg(call: cst.Call, name: str) -> cst.BaseExpression | None:
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == name:
            return arg.value
    return None


def _config_from_call(call: cst.Call, qualname: QualName, ints: dict[str, int]) -> LaunchConfig | None:
    if qualname(call.func) not in ("triton.Config", "triton.runtime.Config", "triton.runtime.autotuner.Config"):
        return None
    kwargs = call.args[0].value if call.args and call.args[0].keyword is None else _kwarg(call, "kwargs")
    if not isinstance(kwargs, cst.Dict):
        return None
    constexprs = {}
    for element in kwargs.elements:
        if not isinstance(element, cst.DictElement) or not isinstance(element.key, cst.SimpleString):
            return None
        key = element.key.evaluated_value
        constexprs[key] = int_value(element.value, ints)
    stages = int_value(_kwarg(call, "num_stages"), ints)
    warps = int_value(_kwarg(call, "num_warps"), ints)
    return LaunchConfig(constexprs, stages if stages is not None else DEFAULT_NUM_STAGES,
                        warps if warps is not None else DEFAULT_NUM_WARPS, call, kwargs)


def _heuristic_values(call: cst.Call, ints: dict[str, int]) -> dict[str, int | None]:
    values: dict[str, int | None] = {}
    table = call.args[0].value if call.args else None
    if isinstance(table, cst.Dict):
        for element in table.elements:
            if isinstance(element, cst.DictElement) and isinstance(element.key, cst.SimpleString):
                body = element.value.body if isinstance(element.value, cst.Lambda) else element.value
                values[element.key.evaluated_value] = int_value(body, ints)
    return values


def _param_annotation_is(param: cst.Param, qualname: QualName, names: Iterable[str]) -> bool:
    if param.annotation is None:
        return False
    return qualname(param.annotation.annotation) in names


class LaunchSites:
    """The `kernel[grid](...)` calls of one module, by kernel name: one traversal of the module on first use, however
    many kernels it has (the scanned file keeps one for its module: `ScannedFile.derived`)."""

    def __init__(self, module: cst.Module) -> None:
        self.module = module
        self._table: dict[str, list[cst.Call]] | None = None

    def of(self, kernel_name: str) -> list[cst.Call]:
        if self._table is None:
            table: dict[str, list[cst.Call]] = {}

            class _Finder(cst.CSTVisitor):
                def visit_Call(self, node: cst.Call) -> None:
                    func = node.func
                    if isinstance(func, cst.Subscript) and isinstance(func.value, cst.Name):
                        table.setdefault(func.value.value, []).append(node)

            self.module.visit(_Finder())
            self._table = table
        return self._table.get(kernel_name, [])


def read_kernel(func: cst.FunctionDef, module: cst.Module, qualname: QualName,
                pointer_bytes_hint: dict[str, int] | None = None, launches: LaunchSites | None = None) -> Kernel:
    """`launches`: the module's launch sites, where they are kept for more than one kernel."""
    ints, exprs = module_constants(module)
    params = [p.name.value for p in func.params.params]
    constexpr_params = [
        p.name.value for p in func.params.params
        if _param_annotation_is(p, qualname, _CONSTEXPR)
    ]
    fixed: dict[str, int | None] = {}
    for p in func.params.params:
        if p.name.value in constexpr_params and p.default is not None:
            fixed[p.name.value] = int_value(p.default, ints)
    configs: list[LaunchConfig] = []
    autotuned = False
    complete = True
    list_node = None
    for decorator in func.decorators:
        call = decorator.decorator
        if not isinstance(call, cst.Call):
            continue
        name = qualname(call.func)
        if name == "triton.autotune":
            autotuned = True
            listed = _kwarg(call, "configs") or (call.args[0].value if call.args and call.args[0].keyword is None else None)
            if isinstance(listed, cst.Name):
                listed = exprs.get(listed.value)
            if isinstance(listed, cst.List):
                list_node = listed
                for element in listed.elements:
                    config = _config_from_call(element.value, qualname, ints) if isinstance(element.value, cst.Call) else None
                    if config is None:
                        complete = False
                    else:
                        configs.append(config)
            else:
                complete = False
        elif name == "triton.heuristics":
            fixed.update(_heuristic_values(call, ints))
    pointer_bytes = dict(pointer_bytes_hint or {})
    dots = _TileWalker(params, constexpr_params, pointer_bytes, qualname).walk(func)
    # Launch sites cost a second pass over the module: look only when a dot dimension is still unknown.
    dims = {d for dot in dots for t in (dot.a, dot.b) for d in (t.shape or ()) if isinstance(d, str)}
    known = bool(configs) and all(c.constexprs.get(d, fixed.get(d)) is not None for c in configs for d in dims)
    sites = (launches or LaunchSites(module)).of(func.name.value) if dots and not known else []
    if not autotuned:
        for launch in sites:
            constexprs = {k: v for k, v in fixed.items()}
            for arg in launch.args:
                if arg.keyword is not None and arg.keyword.value in constexpr_params:
                    constexprs[arg.keyword.value] = int_value(arg.value, ints)
            stages = int_value(_kwarg(launch, "num_stages"), ints)
            warps = int_value(_kwarg(launch, "num_warps"), ints)
            configs.append(LaunchConfig(constexprs, stages or DEFAULT_NUM_STAGES, warps or DEFAULT_NUM_WARPS))
        if not sites and fixed:
            configs.append(LaunchConfig(dict(fixed)))
    else:
        configs = [replace(c, constexprs={**fixed, **c.constexprs}) for c in configs]
        # meta-parameters every launch site passes as literals apply to every config
        common: dict[str, int | None] = {}
        for launch in sites:
            for arg in launch.args:
                if arg.keyword is not None and arg.keyword.value in constexpr_params:
                    common[arg.keyword.value] = int_value(arg.value, ints)
        configs = [replace(c, constexprs={**common, **c.constexprs}) for c in configs]
    return Kernel(func.name.value, func, params, constexpr_params, pointer_bytes, configs, autotuned, complete, dots,
                  list_node)


# ---------------------------------------------------------------------------------------------------------------
# Following tiles through a kernel body


def _broadcast(a: tuple | None, b: tuple | None) -> tuple | None:
    if a is None:
        return b
    if b is None:
        return a
    n = max(len(a), len(b))
    a = (1,) * (n - len(a)) + tuple(a)
    b = (1,) * (n - len(b)) + tuple(b)
    return tuple(y if x == 1 else x for x, y in zip(a, b))


def _max_opt(*values):
    present = [v for v in values if v is not None]
    return max(present) if present else None


class _TileWalker:
    def __init__(self, params, constexpr_params, pointer_bytes, qualname: QualName) -> None:
        self.constexprs = set(constexpr_params)
        self.env: dict[str, Tile] = {}
        for p in params:
            if p not in self.constexprs and p.endswith("ptr"):
                self.env[p] = Tile(shape=(), pointer=p)
        self.pointer_bytes = pointer_bytes
        self.qualname = qualname
        self.dots: list[DotSite] = []
        self.loop_ids = 0
        self.loop_stack: list[int] = [0]
        self.outer_loops: set[int] = set()  # loops with a loop nested inside

    def walk(self, func: cst.FunctionDef) -> list[DotSite]:
        self._block(func.body)
        return [replace(d, loop_is_innermost=d.loop not in self.outer_loops) for d in self.dots]

    # statements ----------------------------------------------------------------------------------------------
    def _block(self, block) -> None:
        for stmt in getattr(block, "body", ()):
            self._stmt(stmt)

    def _stmt(self, stmt) -> None:
        if isinstance(stmt, cst.SimpleStatementLine):
            for small in stmt.body:
                self._small(small)
        elif isinstance(stmt, (cst.For, cst.While)):
            self.loop_ids += 1
            self.outer_loops.add(self.loop_stack[-1])
            self.loop_stack.append(self.loop_ids)
            self._block(stmt.body)
            self.loop_stack.pop()
        elif isinstance(stmt, cst.If):
            self._block(stmt.body)
            orelse = stmt.orelse
            while orelse is not None:
                if isinstance(orelse, cst.If):
                    self._block(orelse.body)
                    orelse = orelse.orelse
                else:
                    self._block(orelse.body)
                    orelse = None
        elif isinstance(stmt, (cst.With, cst.Try)):
            self._block(stmt.body)

    def _small(self, small) -> None:
        if isinstance(small, cst.Assign):
            value = self._expr(small.value)
            for target in small.targets:
                if isinstance(target.target, cst.Name):
                    self.env[target.target.value] = value
        elif isinstance(small, cst.AnnAssign) and small.value is not None and isinstance(small.target, cst.Name):
            self.env[small.target.value] = self._expr(small.value)
        elif isinstance(small, cst.AugAssign) and isinstance(small.target, cst.Name):
            old = self.env.get(small.target.value, Tile())
            new = self._expr(small.value)
            if old.pointer is not None:
                self.env[small.target.value] = replace(old, shape=_broadcast(old.shape, new.shape))
            else:
                self.env[small.target.value] = self._combine(old, new)
        elif isinstance(small, cst.Expr):
            self._expr(small.value)

    # expressions ---------------------------------------------------------------------------------------------
    def _dim(self, expr) -> object:
        if isinstance(expr, cst.Integer):
            return int(expr.evaluated_value)
        if isinstance(expr, cst.Name) and expr.value in self.constexprs:
            return expr.value
        return None

    def _dtype_bytes(self, expr) -> int | None:
        name = self.qualname(expr) or ""
        last = name.rsplit(".", 1)[-1] if name else ""
        if last in DTYPE_BYTES:
            return DTYPE_BYTES[last]
        if isinstance(expr, cst.SimpleString):
            return DTYPE_BYTES.get(str(expr.evaluated_value))
        # `x_ptr.dtype.element_ty`
        if isinstance(expr, cst.Attribute) and expr.attr.value == "element_ty" and isinstance(expr.value, cst.Attribute):
            base = expr.value.value
            if isinstance(base, cst.Name) and base.value in self.env and self.env[base.value].pointer:
                return self.pointer_bytes.get(self.env[base.value].pointer, DEFAULT_POINTER_BYTES)
        return None

    def _combine(self, *tiles: Tile) -> Tile:
        shape = None
        for t in tiles:
            shape = _broadcast(shape, t.shape) if t.shape is not None else shape
        pointer = next((t.pointer for t in tiles if t.pointer), None)
        tensor = [t for t in tiles if t.shape]
        nbytes = _max_opt(*(t.nbytes for t in tensor)) if tensor else None
        wide = _max_opt(*(t.wide_nbytes or t.nbytes for t in tensor)) if tensor else None
        return Tile(shape=shape, nbytes=nbytes, wide_nbytes=wide, pointer=pointer, made_in=self.loop_stack[-1])

    def _expr(self, expr) -> Tile:
        if isinstance(expr, cst.Name):
            return self.env.get(expr.value, Tile())
        if isinstance(expr, (cst.Integer, cst.Float)):
            return Tile(shape=())
        if isinstance(expr, cst.BinaryOperation):
            return self._combine(self._expr(expr.left), self._expr(expr.right))
        if isinstance(expr, cst.UnaryOperation):
            return self._expr(expr.expression)
        if isinstance(expr, cst.Comparison):
            tiles = [self._expr(expr.left)] + [self._expr(c.comparator) for c in expr.comparisons]
            return replace(self._combine(*tiles), nbytes=1, wide_nbytes=1, pointer=None)
        if isinstance(expr, cst.BooleanOperation):
            return self._combine(self._expr(expr.left), self._expr(expr.right))
        if isinstance(expr, cst.Subscript):
            return self._subscript(expr)
        if isinstance(expr, cst.Attribute) and expr.attr.value == "T":
            return self._transposed(self._expr(expr.value))
        if isinstance(expr, cst.Call):
            return self._call(expr)
        return Tile()

    def _subscript(self, expr: cst.Subscript) -> Tile:
        base = self._expr(expr.value)
        if base.shape is None:
            return Tile()
        dims = list(base.shape)
        out = []
        for element in expr.slice:
            s = element.slice
            if isinstance(s, cst.Index) and isinstance(s.value, cst.Name) and s.value.value == "None":
                out.append(1)
            elif isinstance(s, cst.Slice) and dims:
                out.append(dims.pop(0))
            else:
                return Tile()
        return replace(base, shape=tuple(out + dims))

    @staticmethod
    def _transposed(tile: Tile) -> Tile:
        return replace(tile, shape=tuple(reversed(tile.shape))) if tile.shape is not None else tile

    def _shape_of(self, expr) -> tuple | None:
        if isinstance(expr, (cst.Tuple, cst.List)):
            return tuple(self._dim(e.value) for e in expr.elements)
        return None

    def _call(self, call: cst.Call) -> Tile:
        func = call.func
        name = self.qualname(func) or ""
        short = name[len("triton.language."):] if name.startswith("triton.language.") else None
        args = [a.value for a in call.args if a.keyword is None]
        if isinstance(func, cst.Attribute) and short is None:
            method = func.attr.value
            receiver = self._expr(func.value)
            if method == "to" and args:
                nbytes = self._dtype_bytes(args[0])
                if receiver.loaded:
                    return replace(receiver, nbytes=nbytes)
                return replace(receiver, nbytes=nbytes, wide_nbytes=_max_opt(receiver.wide_nbytes, receiver.nbytes, nbytes))
            if method in ("trans", "T"):
                return self._transposed(receiver)
            if method == "load":  # tensor descriptor (TMA) loads: shape not followed
                return Tile()
            return Tile()
        if short is None:
            return Tile()
        if short == "arange" and len(args) >= 2:
            return Tile(shape=(self._dim(args[1]),), nbytes=4)
        if short in ("zeros", "full", "empty"):
            dtype = _kwarg(call, "dtype") or (args[-1] if len(args) >= 2 else None)
            nbytes = self._dtype_bytes(dtype) if dtype is not None else None
            shape = self._shape_of(args[0]) if args else None
            return Tile(shape=shape, nbytes=nbytes, wide_nbytes=nbytes, made_in=self.loop_stack[-1])
        if short == "load" and args:
            pointer = self._expr(args[0])
            if pointer.pointer is None:
                return Tile()
            nbytes = self.pointer_bytes.get(pointer.pointer, DEFAULT_POINTER_BYTES)
            return Tile(shape=pointer.shape, nbytes=nbytes, wide_nbytes=nbytes, loaded=True, load_nbytes=nbytes,
                        made_in=self.loop_stack[-1])
        if short in ("trans", "permute") and args:
            return self._transposed(self._expr(args[0]))
        if short == "dot" and len(args) >= 2:
            a, b = self._expr(args[0]), self._expr(args[1])
            for extra in args[2:]:
                self._expr(extra)
            self.dots.append(DotSite(call, a, b, self.loop_stack[-1]))
            rows = a.shape[0] if a.shape and len(a.shape) == 2 else None
            cols = b.shape[1] if b.shape and len(b.shape) == 2 else None
            out = _kwarg(call, "out_dtype")
            nbytes = self._dtype_bytes(out) if out is not None else 4
            return Tile(shape=(rows, cols), nbytes=nbytes, wide_nbytes=nbytes, made_in=self.loop_stack[-1])
        if short == "broadcast_to" and len(args) >= 2:
            return replace(self._expr(args[0]), shape=self._shape_of(args[1]), loaded=False)
        if short in _REDUCTIONS and args:
            tile = self._expr(args[0])
            axis = _kwarg(call, "axis") or (args[1] if len(args) > 1 else None)
            if tile.shape is None or not isinstance(axis, cst.Integer):
                return replace(tile, shape=None, loaded=False)
            keep = [d for i, d in enumerate(tile.shape) if i != int(axis.value)]
            return replace(tile, shape=tuple(keep), loaded=False)
        if short in _ELEMENTWISE or short in ("cast",):
            tiles = [self._expr(a) for a in args]
            return replace(self._combine(*tiles), pointer=None)
        if short.startswith("atomic_") or short == "store":
            for a in args:
                self._expr(a)
            return Tile()
        return Tile()


# ---------------------------------------------------------------------------------------------------------------
# Estimating


def _elements(shape: tuple | None, constexprs: dict) -> int | None:
    if shape is None or len(shape) != 2:
        return None
    total = 1
    for d in shape:
        value = d if isinstance(d, int) else constexprs.get(d) if isinstance(d, str) else None
        if value is None:
            return None
        total *= value
    return total


def pipeline_buffers(num_stages: int, cc: int) -> int:
    """Buffers Triton's software pipeliner gives each operand loaded in a pipelined loop.

    Measured with Triton 3.9 (docs/triton.md): num_stages - 1 on sm8x (cp.async), num_stages on sm90 and newer.
    """
    if num_stages <= 1:
        return 1
    return num_stages if cc >= 90 else num_stages - 1


def _operand(tile: Tile, dot: DotSite, config: LaunchConfig, target) -> tuple[int, str, bool] | None:
    """(bytes, how, held across the dot's loop) for one dot operand on a target."""
    elements = _elements(tile.shape, config.constexprs)
    if elements is None or tile.nbytes is None:
        return None
    invariant = tile.made_in != dot.loop
    if not target.triton_pipelining:
        # The FMA dot (no tensor-core path below 8.0 [S19]) stages operands as fp32.
        width = max(4, tile.nbytes, tile.wide_nbytes or 0)
        return elements * width, _kib(elements * width), invariant
    if tile.loaded and dot.loop and dot.loop_is_innermost and not invariant:
        width = tile.load_nbytes or tile.nbytes
        buffers = pipeline_buffers(config.num_stages, target.cc)
        one = elements * width
        return one * buffers, f"{buffers} x {_kib(one)}", invariant
    # The tensor-core path stages an operand in the type the dot consumes, after any cast.
    return elements * tile.nbytes, _kib(elements * tile.nbytes), invariant


def _kib(n: int) -> str:
    return f"{n / 1024:g} KiB"


def estimate_smem(kernel: Kernel, config: LaunchConfig, target) -> Estimate | None:
    """Shared memory one configuration needs on a target (None when no dot's size can be resolved).

    `target` needs `.triton_pipelining` and `.cc` (a rlcompat Target).
    """
    best: Estimate | None = None
    for dot in kernel.dots:
        a = _operand(dot.a, dot, config, target)
        b = _operand(dot.b, dot, config, target)
        if a is None or b is None:
            continue
        if target.triton_pipelining:
            total, detail = a[0] + b[0], f"{a[1]} + {b[1]}"
        else:
            # Operands staged inside the dot's loop are loaded into registers one after the other; one made
            # before the loop keeps its buffer through it.
            held = [x for x in (a, b) if x[2]]
            inner = [x for x in (a, b) if not x[2]]
            total = sum(x[0] for x in held) + max((x[0] for x in inner), default=0)
            detail = " + ".join([x[1] for x in held] + ([f"max({', '.join(x[1] for x in inner)})"] if len(inner) > 1 else [x[1] for x in inner]))
        if best is None or total > best.nbytes:
            best = Estimate(total, dot, f"tl.dot operands {detail}")
    return best


def nominal_smem(kernel: Kernel, config: LaunchConfig) -> int | None:
    """The naive figure: every dot operand in num_stages buffers whatever the target does."""
    best = None
    for dot in kernel.dots:
        sizes = []
        for tile in (dot.a, dot.b):
            elements = _elements(tile.shape, config.constexprs)
            if elements is None or tile.nbytes is None:
                break
            sizes.append(elements * (tile.load_nbytes or tile.nbytes) * config.num_stages)
        else:
            best = max(best or 0, sum(sizes))
    return best


def kernels_in_module(module: cst.Module, qualname: QualName) -> list[Kernel]:
    """Every @triton.jit function at module level (used by bench/ and tests; rules go through the traversal)."""
    launches = LaunchSites(module)
    return [
        read_kernel(stmt, module, qualname, launches=launches)
        for stmt in module.body
        if isinstance(stmt, cst.FunctionDef) and is_triton_kernel(stmt, qualname)
    ]


def module_qualname(module: cst.Module) -> QualName:
    """A `qualname` over the module's imports (any depth), for use outside the rule traversal."""
    from rlcompat.lang.python import Context

    ctx = Context(target=None, path="")

    class _Imports(cst.CSTVisitor):
        def visit_Import(self, node: cst.Import) -> None:
            ctx.imports.record(node)

        def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
            ctx.imports.record(node)

    module.visit(_Imports())
    return ctx.qualname
