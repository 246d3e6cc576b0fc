#!/usr/bin/env bash
# The main job on the embedded default: take the pinned verl 0.9.1 package, scan it for a Tesla P40 (sm61),
# fix a copy, scan the copy again, and verify that the fixed copy still trains one PPO step.
set -uo pipefail
cd "$(dirname "$0")/.."
TARGET=${1:-sm61}
# Set-up says nothing unless it fails: the first lines printed are the scan's.
if ! setup_log=$(bash scripts/setup.sh 2>&1); then
  printf '%s\n' "$setup_log" >&2
  echo "quickstart: scripts/setup.sh failed (above)" >&2
  exit 2
fi
RL=.venv/bin/rlcompat
VERL_SRC=$(.venv/bin/python -c "import os, verl; print(os.path.dirname(verl.__file__))")
WORK=demo/verl-0.9.1
rm -rf "$WORK" && mkdir -p "$WORK" && cp -r "$VERL_SRC" "$WORK/verl"
find "$WORK" -name __pycache__ -prune -exec rm -rf {} +

echo "== 1. scan the pristine verl 0.9.1 for $TARGET"
$RL scan "$WORK/verl" --target "$TARGET" --statistics | tail -n 25
echo; echo "== 2. fix it (safe fixes)"
$RL fix "$WORK/verl" --target "$TARGET" | tail -n 3
echo; echo "== 3. scan again: what is left has no safe fix"
$RL scan "$WORK/verl" --target "$TARGET" --statistics | tail -n 15
# grep reads the whole help (no -q): a grep that stops at the first match closes the pipe while rlcompat is still
# writing, and under pipefail the broken pipe failed the test, skipping step 4.
if $RL --help | grep " verify " >/dev/null; then
  echo; echo "== 4. verify: one tiny PPO step through verl's own engine, under a $TARGET guard, on CPU"
  $RL verify "$WORK/verl" --target "$TARGET" --device cpu
fi
