"""Triton kernels and torch.compile / Liger below what the GPU supports (RLC3xx)."""
