#!/usr/bin/env bash
# The scan's speed against ruff on a quiet machine: the device (16 cores, nothing else running), for issue 29's
# targets (verl cold <= 1.5x ruff; one file and warm <= 0.3 s; torch's tree <= 1.2x ruff, its 1.4 MB file <= 1.0 s).
# bench/bench_scan.py does the same here, where the machine is shared and its peers come from PyPI; the device has
# no network, so the wheels travel with the tree.
#
# Here:   mkdir .whl-scan; copy rlcompat's dependency wheels, verl-0.9.1 and a ruff wheel for cp312 manylinux into it
#         (`pip download --no-deps --only-binary=:all: --python-version 3.12 --platform manylinux2014_x86_64`), and
#         this checkout's wheel (`pip wheel --no-deps --no-build-isolation -w .whl-scan .`); about 18 MB.
#         For torch's tree and its 1.4 MB file (issue 29's other targets), also its .py files, about 7 MB:
#         `(cd .venv/lib/python3*/site-packages && find torch -name '*.py' -not -path '*__pycache__*' | tar -cJf - -T -)
#         > .whl-scan/torch-py.tar.xz`.
# Device: run with carry [".whl-scan"]: `bash bench/scan_speed_on_device.sh [REPS]`.
# Each command runs in a fresh process, tools alternating; printed: the median wall time of each and the ratios.
# A second rlcompat wheel in .whl-scan/old/ (another commit, built the same way) is measured in the same run.
set -euo pipefail
cd "$(dirname "$0")/.."
REPS=${1:-9}
SITE=/tmp/scan-site
rm -rf "$SITE"
python3 -m pip install -q --no-index --no-deps --target "$SITE" .whl-scan/*.whl 2>&1 | grep -v "WARNING: Target directory" || true
if ls .whl-scan/old/*.whl >/dev/null 2>&1; then
  rm -rf "$SITE-old" && cp -r "$SITE" "$SITE-old" && rm -rf "$SITE-old"/rlcompat*
  python3 -m pip install -q --no-index --no-deps --target "$SITE-old" .whl-scan/old/*.whl 2>&1 | grep -v "WARNING: Target directory" || true
fi
echo "python3: $(python3 -c 'import sys; print(sys.version.split()[0], sys.executable)'); $(env | grep '^PYTHON' | grep -v PYTHONPATH | tr '\n' ' ')"
export PYTHONPATH="$SITE" PATH="$SITE/bin:$PATH"
TREE="$SITE/verl"
ONE="$TREE/workers/rollout/hf_rollout.py"
TORCH=""
if [ -f .whl-scan/torch-py.tar.xz ]; then
  TORCH=/tmp/scan-torch && rm -rf "$TORCH" && mkdir -p "$TORCH" && tar -xJf .whl-scan/torch-py.tar.xz -C "$TORCH"
  TORCH="$TORCH/torch"
fi
cd "$(mktemp -d)"  # the warm scan's cache lives here
python3 - "$REPS" "$TREE" "$ONE" "$TORCH" <<'PY'
import os, statistics, subprocess, sys, time
reps, tree, one, torch = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
site = os.environ["PYTHONPATH"]
rl = [os.path.join(site, "bin", "rlcompat")]
commands = {
    "rlcompat scan (cold, no cache)": rl + ["scan", tree, "--target", "sm61", "--no-cache", "--exit-zero"],
    "rlcompat scan (warm, cached)": rl + ["scan", tree, "--target", "sm61", "--exit-zero"],
    "rlcompat scan one file with a hazard": rl + ["scan", one, "--target", "sm61", "--no-cache", "--exit-zero"],
    "ruff check --select ALL --no-cache": [os.path.join(site, "bin", "ruff"), "check", "--select", "ALL", "--no-cache",
                                           "--exit-zero", "--quiet", tree],
    # the floor of a scan that parses a Python file (the interpreter, typer and LibCST), in the same alternation
    "floor: python3 -c pass": [sys.executable, "-c", "pass"],
    "floor: import typer, libcst": [sys.executable, "-c", "import typer, libcst"],
}
if torch:  # torch's package (.py files only) and its biggest file, each against ruff on the same
    big = os.path.join(torch, "testing", "_internal", "common_methods_invocations.py")
    ruff = [os.path.join(site, "bin", "ruff"), "check", "--select", "ALL", "--no-cache", "--exit-zero", "--quiet"]
    commands.update({
        "rlcompat scan torch (cold, no cache)": rl + ["scan", torch, "--target", "sm61", "--no-cache", "--exit-zero"],
        "ruff torch": ruff + [torch],
        "rlcompat scan torch's 1.4 MB file": rl + ["scan", big, "--target", "sm61", "--no-cache", "--exit-zero"],
        "ruff torch's 1.4 MB file": ruff + [big],
    })
if os.path.isdir(site + "-old"):
    old = [os.path.join(site + "-old", "bin", "rlcompat")]
    commands.update({f"old {name}": old + cmd[1:] for name, cmd in list(commands.items()) if name.startswith("rlcompat")})
old_dir = os.path.abspath("old")  # each version's warm cache in a folder of its own
os.makedirs(old_dir, exist_ok=True)


def where(name):
    if name.startswith("old "):
        return {"env": dict(os.environ, PYTHONPATH=site + "-old"), "cwd": old_dir}
    return {}


for name, cmd in commands.items():
    if "warm" in name:
        subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, **where(name))
times = {name: [] for name in commands}
for _ in range(reps):
    for name, cmd in commands.items():
        t = time.perf_counter()
        p = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, **where(name))
        times[name].append(time.perf_counter() - t)
        if p.returncode not in (0, 1):
            sys.exit(f"{name}: exit {p.returncode}: {p.stderr[-400:]}")
print(f"load average before: {os.getloadavg()}, cpus {os.cpu_count()}, reps {reps}")
for name, ts in times.items():
    m = statistics.median(ts)
    # torch's commands against ruff on the same tree or file, the rest against ruff on verl
    base = next((b for key, b in (("1.4 MB", "ruff torch's 1.4 MB file"), ("torch", "ruff torch")) if key in name),
                "ruff check --select ALL --no-cache")
    print(f"{name}: median {m:.3f} s (min {min(ts):.3f}, max {max(ts):.3f}), {m / statistics.median(times[base]):.2f}x {base}")
PY
