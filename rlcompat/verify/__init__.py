"""`rlcompat verify`: one tiny PPO step of a verl tree under a target GPU guard (see docs/verify.md)."""
