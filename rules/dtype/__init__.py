"""bf16 chosen where the GPU has none: dtypes, flags, trainer and FSDP configs (RLC1xx)."""
