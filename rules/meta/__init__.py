"""Rules about rlcompat's own comments and the launch scripts it cannot read (RLC0xx)."""
