"""`rlcompat doctor`: the machine and the installed stack checked against a target GPU.

snapshot.py (what is known), environment.py (reading it from this machine), rule.py (the RLC5xx rule base),
memory.py (the PPO memory estimate), command.py (the CLI), render.py (output), troubleshooting.py (its generated
page). The tables it reads are rlcompat.knowledge's (environment, torch_wheels, capabilities, model_shapes).
Nothing here imports torch: torch is asked through a subprocess.
"""
