from __future__ import annotations

import libcst as cst

from rlcompat.analysis import pyhelpers as h
from rlcompat.contract import Bad, Good, PythonRule
from rlcompat.rules.attention.helpers import is_flash_attn_guard

_PACKAGES = ("flash_attn", "flash_attn_interface", "flash_attn_3")


def _module_name(node) -> str:
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        return f"{_module_name(node.value)}.{node.attr.value}"
    return ""


class UnguardedFlashAttnImport(PythonRule):
    code = "RLC203"
    name = "unguarded-flash-attn-import"
    title = "Module-level `import flash_attn` without a fallback"
    what = (
        "Finds `import flash_attn...` / `from flash_attn... import ...` (also `flash_attn_interface`, `flash_attn_3`) "
        "executed when the module is imported: not inside a function, not under `if TYPE_CHECKING:`, not in a "
        "`try` that catches ImportError, and not behind an availability or capability check."
    )
    why = (
        "flash-attn cannot run below compute capability 8.0 [S10] and its wheels are not built for older cards "
        "[S12], so on those machines it is usually not installed: the import fails with ImportError and takes the "
        "whole module (and every module importing it) down, even on code paths that never use FlashAttention."
    )
    fix_safety = (
        "No autofix: the right fallback (a pure-PyTorch function, `None` and a check at the call site) depends on "
        "how the imported names are used. Wrap the import in `try: ... except ImportError:` with a fallback."
    )
    names = ("flash_attn",)
    sources = ("S10", "S12")

    bad = (
        Bad("from flash_attn import flash_attn_varlen_func\n"),
        Bad("import flash_attn.bert_padding as bp\n"),
        Bad("class A:\n    from flash_attn.bert_padding import pad_input\n"),
    )
    good = (
        Good("try:\n    from flash_attn import flash_attn_func\nexcept ImportError:\n    flash_attn_func = None\n"),
        Good("def f():\n    from flash_attn import flash_attn_func\n    return flash_attn_func\n"),
        Good("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import flash_attn\n"),
        Good("if is_flash_attn_2_available():\n    from flash_attn import flash_attn_func\n"),
        Good("from flash_attn import flash_attn_func\n", target="sm80"),
        Good("import flash_attention_helpers\n"),
    )

    @classmethod
    def applies_to(cls, target) -> bool:
        return not target.flash_attn_2

    def visit_Import(self, node: cst.Import, ctx) -> None:
        for alias in node.names:
            self._check(node, _module_name(alias.name), ctx)

    def visit_ImportFrom(self, node: cst.ImportFrom, ctx) -> None:
        if not node.relative and node.module is not None:
            self._check(node, _module_name(node.module), ctx)

    def _check(self, node, module: str, ctx) -> None:
        if module.split(".")[0] not in _PACKAGES:
            return
        a = ctx.ancestors
        if h.inside_function(a) or h.under_type_checking(a) or h.in_try_importerror(a) or h.guarded_by(a, is_flash_attn_guard):
            return
        ctx.report(
            node,
            f"`{module}` imported unconditionally: flash-attn cannot run on {self.target.name} "
            f"({self.target.capability_text}; it needs 8.0+) and is usually not installed there, so this import fails; "
            "wrap it in try/except ImportError with a fallback",
        )
