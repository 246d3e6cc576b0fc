"""FlashAttention chosen where the GPU or build cannot run it (RLC2xx)."""
