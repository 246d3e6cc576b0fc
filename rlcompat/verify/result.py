"""Exit codes shared by the command, the runner and the child harness (Ruff-style: 0 pass, 1 fail, 2 cannot run)."""

EXIT_PASS, EXIT_FAIL, EXIT_ENV = 0, 1, 2
