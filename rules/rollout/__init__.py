"""Rollout engines (vLLM, SGLang) and their configs, quantization and fp8 on GPUs that do not support them (RLC4xx)."""
