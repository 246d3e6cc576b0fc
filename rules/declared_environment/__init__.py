"""What a project declares it installs (requirements, pyproject.toml, conda files, Dockerfiles, `pip install`
lines) against the target GPU, read with the tables doctor reads (RLC6xx)."""
