"""Fixing a framework installed in site-packages, reversibly: `rlcompat fix --installed verl`, `rlcompat restore verl`,
and the state doctor reads (RLC516).

`locate.py` finds the distribution through importlib.metadata (nothing of it is imported), `state.py` keeps the backup,
the patch and the manifest in a per-user state folder and says whether the patch is still there, `patch.py` fixes and
restores, `command.py` is the command line. docs/troubleshooting.md "Patching an installed verl" says why the state
lives where it does.
"""
