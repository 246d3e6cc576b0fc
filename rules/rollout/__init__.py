"""Rollout engines (vLLM, SGLang) and their configs on GPUs they do not support (RLC4xx)."""
