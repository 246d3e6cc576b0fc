"""Checks of the machine run by `rlcompat doctor`, never by scan or fix (RLC5xx)."""
