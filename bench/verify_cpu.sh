#!/usr/bin/env bash
# Wall time of `rlcompat verify --device cpu` on the pinned verl 0.9.1 (a benchmark, not a test).
# usage: bash bench/verify_cpu.sh [RUNS]      (from the repo root, after scripts/setup.sh)
# It verifies (a) the pristine package for sm61 (expected exit 1) and (b) a fixed copy for sm61 (expected exit 0),
# each RUNS times (default 3) after one warm-up run that writes the copy's bytecode, and prints each wall time with
# the machine's core count and load average (timings on a shared machine are only as good as that load).
set -uo pipefail
cd "$(dirname "$0")/.."
RUNS=${1:-3}
RL=.venv/bin/rlcompat
VERL_SRC=$(.venv/bin/python -c "import importlib.util, os; print(os.path.dirname(importlib.util.find_spec('verl').origin))")
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
cp -r "$VERL_SRC" "$WORK/verl" && find "$WORK" -name __pycache__ -prune -exec rm -rf {} +
$RL fix "$WORK/verl" --target sm61 --unsafe-fixes | tail -n 1

echo "cores: $(nproc), $(.venv/bin/python -c 'import torch; print("torch", torch.__version__)')"
for case in "pristine:$VERL_SRC" "fixed:$WORK/verl"; do
  name=${case%%:*}; tree=${case#*:}
  $RL verify "$tree" --target sm61 --device cpu --output-format json > /dev/null  # warm-up
  for i in $(seq "$RUNS"); do
    load=$(cut -d' ' -f1 /proc/loadavg)
    start=$(date +%s.%N)
    $RL verify "$tree" --target sm61 --device cpu --output-format json > "$WORK/r.json"; rc=$?
    end=$(date +%s.%N)
    figures=$(.venv/bin/python -c "import json,sys; r=json.load(open(sys.argv[1])); print(f\"{r['cpu_seconds']:5.1f} s CPU  [\" + ', '.join(f\"{p['name']} {p['seconds']:.1f}\" for p in r['phases']) + ']')" "$WORK/r.json")
    printf '%-8s run %d: exit %d, %5.1f s wall (load %s before), %s\n' "$name" "$i" "$rc" \
      "$(.venv/bin/python -c "print($end - $start)")" "$load" "$figures"
  done
done
