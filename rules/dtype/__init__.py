"""Precision chosen where the GPU cannot run it: bf16/fp16/tf32/int8 dtypes, flags, trainer and FSDP configs (RLC1xx)."""
