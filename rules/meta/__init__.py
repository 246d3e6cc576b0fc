"""Rules about rlcompat's own comments, the launch scripts it cannot read, and hazard-shaped settings no knowledge
covers (RLC0xx)."""
