"""rlcompat/knowledge/data/spellings.toml is the one list of the strings that spell bf16, fp8 and FlashAttention-2/3."""

from __future__ import annotations

import ast
from pathlib import Path

from rlcompat.knowledge import spellings
from rlcompat.analysis import confighelpers
from rlcompat.knowledge.targets import FACT_NAMES

ROOT = Path(__file__).resolve().parent.parent


def test_bf16_spellings_map_into_their_own_family():
    table = spellings.bf16_replacements()
    assert set(table) == {"bf16", "bfloat16", "torch.bfloat16"}
    assert table["torch.bfloat16"] == ("torch.float32", "torch.float16")
    assert confighelpers.is_bf16(" BF16 ") and not confighelpers.is_bf16("fp16")


def test_flash_attention_rows_name_target_facts_and_cover_their_implementations():
    for version in (2, 3):
        fa = spellings.flash_attention(version)
        assert fa.fact in FACT_NAMES
        assert set(fa.implementations) <= fa.names
        assert fa.modules
    assert "FLASH_ATTN".lower() in spellings.flash_attention_backends()
    assert "float8_e4m3fn" in spellings.fp8_names()


def test_verify_guard_reads_the_table_not_a_copy():
    from rlcompat.verify import guard

    assert guard.FLASH_MODULES["flash_attn"] == "flash_attn_2"
    assert guard.FLASH_MODULES["flash_attn_interface"] == "flash_attn_3"
    assert guard.FLASH_IMPLEMENTATIONS == {"flash_attention_2": "flash_attn_2", "flash_attention_3": "flash_attn_3"}


def test_no_module_keeps_its_own_copy_of_a_spelling_list():
    # A tuple, list, set or dict display holding two or more of one row's spellings is a copy; examples (Bad/Good
    # calls) and rule triggers are text, not lists of spellings, and do not count.
    rows = [set(spellings.bf16_replacements()), set(spellings.fp8_names()), set(spellings.half_to_fp32()),
            *(set(spellings.flash_attention(v).implementations) for v in (2, 3))]
    copies = []
    for folder in ("rlcompat", "rules"):
        for path in (ROOT / folder).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text("utf-8"))):
                if isinstance(node, (ast.Tuple, ast.List, ast.Set, ast.Dict)):
                    items = node.keys if isinstance(node, ast.Dict) else node.elts
                    words = {i.value.lower() for i in items if isinstance(i, ast.Constant) and isinstance(i.value, str)}
                    if any(len(words & row) >= 2 and len(words & row) == len(row) for row in rows):
                        copies.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert not copies, "spelling lists outside rlcompat/knowledge/data/spellings.toml:\n" + "\n".join(copies)


def test_torch_dtype_name_reads_every_spelling_of_the_table():
    from rlcompat.knowledge.spellings import torch_dtype_name

    assert [torch_dtype_name(s) for s in ("bf16", "torch.bfloat16", "half", "fp16", "torch.float16", "fp32",
                                          "torch.float32")] == ["bfloat16", "bfloat16", "float16", "float16",
                                                                "float16", "float32", "float32"]
    assert torch_dtype_name("auto") is None and torch_dtype_name("float") is None
