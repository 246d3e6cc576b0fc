from __future__ import annotations

import libcst as cst

from rlcompat.analysis import pyhelpers as h
from rlcompat.contract import Bad, FixSafety, Good, PendingFix, PythonRule
from rlcompat.rules.attention.helpers import is_flash_attn_guard
from rlcompat.knowledge.spellings import flash_attention
from rlcompat.analysis.param_defaults import default_is_dead


def _names_attention(name: str) -> bool:
    low = name.lower()
    return "attn_impl" in low or "attention_impl" in low or low in ("attn", "attention", "attention_backend")


def _names_attention_helper(ancestors) -> bool:
    """Whether the function a `return` is in is named for attention (`get_attn_implementation`, `select_attention`)."""
    function = next((a for a in reversed(ancestors) if isinstance(a, cst.FunctionDef)), None)
    low = function.name.value.lower() if function is not None else ""
    return "attn" in low or "attention" in low


# Calls that ask whether a package is installed (`importlib.util.find_spec("flash_attn")`), never what the card runs.
_AVAILABILITY_CALLS = frozenset({"find_spec", "find_loader", "is_package_available", "_is_package_available",
                                 "import_module"})
_FLASH_PACKAGES = ("flash_attn", "flash-attn")


def _first_name(node: cst.CSTNode) -> str:
    """`flash_attn` of `flash_attn.flash_attn_interface` (an import's dotted name)."""
    while isinstance(node, cst.Attribute):
        node = node.value
    return node.value if isinstance(node, cst.Name) else ""


def _imports_flash_attn(node: cst.CSTNode) -> bool:
    if isinstance(node, cst.Import):
        return any(_first_name(a.name) == "flash_attn" for a in node.names)
    return isinstance(node, cst.ImportFrom) and node.module is not None and _first_name(node.module) == "flash_attn"


def _chosen_when_flash_attn_imports(ancestors) -> bool:
    """Whether a value is chosen because the flash_attn package imports: `try: import flash_attn` around it, or an
    `if` testing `importlib.util.find_spec("flash_attn")`. That checks the package, not the card."""
    for a in ancestors:
        if isinstance(a, cst.Try) and any(_imports_flash_attn(n) for n in h.nodes_in(a.body, (cst.Import, cst.ImportFrom))):
            return True
        if isinstance(a, (cst.If, cst.IfExp)) and any(
                h.call_name(c) in _AVAILABILITY_CALLS and any(h.string_value(arg.value) in _FLASH_PACKAGES for arg in c.args)
                for c in h.nodes_in(a.test, cst.Call)):
            return True
    return False


class FlashAttentionImplementation(PythonRule):
    code = "RLC201"
    name = "flash-attention-implementation"
    title = "FlashAttention selected as the attention implementation on a GPU it does not support"
    what = (
        "Finds `\"flash_attention_2\"` / `\"flash_attention_3\"` (and their `paged|` forms) where code selects the "
        "attention implementation: `attn_implementation=` keywords, `.get(\"attn_implementation\", ...)` defaults, "
        "assignments to `attn_implementation`/`_attn_implementation`, parameter and field defaults, config dicts, and "
        "the value a helper named for attention returns (`def get_attn_implementation(): ... return "
        "\"flash_attention_2\"`), which selects it wherever the helper is called: a helper that returns it once "
        "`import flash_attn` succeeds checks the package, not the card; so does a helper of any name that returns it "
        "under `try: import flash_attn` or `if importlib.util.find_spec(\"flash_attn\")`. "
        "Comparisons, choices guarded by `is_flash_attn_2_available()` or a capability check, and choices that "
        "follow a flash-attention switch set elsewhere (`if use_flash_attn: ...`) are not findings."
        " A parameter default no call can leave in force is not a finding: a function (or class) of a script run "
        "as `__main__` outside any package whose every call in its tree passes the argument, by keyword or "
        "position and never through `*args`/`**kwargs` alone (rlcompat/analysis/param_defaults.py); the value "
        "each call passes is judged where it is written. A package's function keeps the finding: users call it "
        "from outside the tree, unless framework knowledge names its package closed (`closed_package`: "
        "align-anything, installed from its checkout and run only through its own modules)."
    )
    why = (
        "FlashAttention-2 needs compute capability 8.0 or newer: on older cards it fails with `FlashAttention only "
        "supports Ampere GPUs or newer.` [S10], and its wheels are not built for them [S12]. FlashAttention-3 needs "
        "Hopper (9.0) [S9][S13]; transformers refuses it below 9.0 [S15]. transformers checks only that the package "
        "imports, not the card, so the failure comes late, inside the first forward pass."
    )
    fix_safety = (
        "The fix selects `\"sdpa\"`, PyTorch's scaled-dot-product attention: the same attention, computed by the "
        "fastest backend the card has (memory-efficient attention on sm50-sm75 [S16]). It is safe. `\"eager\"` is not "
        "used because it materialises the full attention matrix and runs out of memory on packed batches."
    )
    names = ("flash_attention_", "import flash_attn", "from flash_attn ")  # the others keep `try: import flash_attn` in narrowing
    sources = ("S9", "S10", "S12", "S13", "S15", "S16")

    bad = (
        Bad('impl = self.override_config.get("attn_implementation", "flash_attention_2")\n',
            fixed='impl = self.override_config.get("attn_implementation", "sdpa")\n'),
        Bad('m = AutoModelForCausalLM.from_pretrained(p, attn_implementation="flash_attention_2")\n',
            fixed='m = AutoModelForCausalLM.from_pretrained(p, attn_implementation="sdpa")\n'),
        Bad("config._attn_implementation = 'flash_attention_2'\n", fixed="config._attn_implementation = 'sdpa'\n"),
        Bad("@dataclass\nclass ModelConfig:\n    attn_implementation: str = 'flash_attention_2'\n",
            fixed="@dataclass\nclass ModelConfig:\n    attn_implementation: str = 'sdpa'\n"),
        Bad("def load(path, attn_implementation='flash_attention_3'):\n    pass\n", target="sm80",
            fixed="def load(path, attn_implementation='sdpa'):\n    pass\n"),
        Bad('kwargs["attn_implementation"] = "flash_attention_2"\n', fixed='kwargs["attn_implementation"] = "sdpa"\n'),
        Bad('cfg = {"attn_implementation": "flash_attention_2"}\n', fixed='cfg = {"attn_implementation": "sdpa"}\n'),
        Bad('def get_attn_implementation():\n    try:\n        import flash_attn  # noqa: F401\n'
            '        return "flash_attention_2"\n    except ImportError:\n        return "sdpa"\n',
            fixed='def get_attn_implementation():\n    try:\n        import flash_attn  # noqa: F401\n'
                  '        return "sdpa"\n    except ImportError:\n        return "sdpa"\n'),
        # a helper of any name that returns it once the package is found (a package check, not a card check)
        Bad('def pick(cfg):\n    if importlib.util.find_spec("flash_attn") is not None:\n'
            '        return "flash_attention_2"\n    return "eager"\n',
            fixed='def pick(cfg):\n    if importlib.util.find_spec("flash_attn") is not None:\n'
                  '        return "sdpa"\n    return "eager"\n'),
        Bad('def model_kwargs():\n    try:\n        from flash_attn import flash_attn_func  # noqa: F401\n'
            '        return "flash_attention_2"\n    except ImportError:\n        return "eager"\n',
            fixed='def model_kwargs():\n    try:\n        from flash_attn import flash_attn_func  # noqa: F401\n'
                  '        return "sdpa"\n    except ImportError:\n        return "eager"\n'),
    )
    good = (
        Good('if use_flash_attn:\n    attn_implementation = "flash_attention_2"\n'),
        Good('if attn_implementation == "flash_attention_2":\n    pass\n'),
        Good('m = load(p, attn_implementation="flash_attention_2")\n', target="sm80"),
        Good('m = load(p, attn_implementation="flash_attention_3")\n', target="sm90"),
        Good('SUPPORTED = ["eager", "sdpa", "flash_attention_2"]\n'),
        Good('impl = "flash_attention_2" if is_flash_attn_2_available() else "sdpa"\n'),
        Good('logger.warning("flash_attention_2 is not available")\n'),
        Good('m = load(p, attn_implementation="sdpa")\n'),
        Good('def attn_implementation():\n    if torch.cuda.get_device_capability()[0] >= 8:\n'
             '        return "flash_attention_2"\n    return "sdpa"\n'),
        Good('def describe(kind):\n    return "flash_attention_2"\n'),
        Good('def pick(cfg):\n    if importlib.util.find_spec("flash_attn") and torch.cuda.get_device_capability()[0] >= 8:\n'
             '        return "flash_attention_2"\n    return "eager"\n'),
    )

    @classmethod
    def applies_to(cls, target) -> bool:
        return not target.flash_attn_3  # FA3 values apply below 9.0 (and on sm100+), FA2 values below 8.0

    def visit_SimpleString(self, node: cst.SimpleString, ctx) -> None:
        value = h.string_value(node)
        if value in flash_attention(2).implementations:
            if self.target.flash_attn_2:
                return
            needs = "FlashAttention-2 needs compute capability 8.0+"
        elif value in flash_attention(3).implementations:
            needs = "FlashAttention-3 needs a Hopper GPU (9.0)"
        else:
            return
        role = h.role_of(node, ctx.ancestors)
        if role.kind == "default" and not (role.name == "" or _names_attention(role.name)):
            return
        if role.kind in ("keyword", "assign", "param-default", "dict-value") and not _names_attention(role.name):
            return
        on_import = role.kind == "return" and _chosen_when_flash_attn_imports(ctx.ancestors)
        if role.kind == "return" and not (_names_attention_helper(ctx.ancestors) or on_import):
            return
        if role.kind not in ("default", "keyword", "assign", "param-default", "dict-value", "return"):
            return
        if h.guarded_by(ctx.ancestors, is_flash_attn_guard):
            return
        if h.test_mentions(ctx.ancestors, ("flash",)) and not on_import:
            return  # a switch set elsewhere (`if use_flash_attn:`), reported there; a package check is no switch
        if role.kind == "param-default" and default_is_dead(ctx):
            return  # no call leaves it in force (analysis/param_defaults.py): what each call passes is judged there
        ctx.report(
            node,
            f'"{value}" selected: {needs}, {self.target.name} is {self.target.capability_text}; use "sdpa"',
            PendingFix([(node, h.requote(node, "sdpa"))], FixSafety.SAFE, 'use "sdpa"'),
        )
