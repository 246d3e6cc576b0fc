#!/usr/bin/env bash
# `rlcompat verify --device cuda` on one GPU (an H100 emulating a Tesla P40, sm61): the acceptance runs for docs/verify.md.
#
# 1. Here (a machine with the registry), pack the wheels into .whl/ and keep them out of git:
#      bash /work/shared/device/pack-verify-wheels.sh .whl     # verl 0.9.1 and what it imports (44 MB)
#      bash bench/verify_on_device.sh pack .whl                  # rlcompat and its own dependencies (5 MB)
#      echo /.whl/ >> "$(git rev-parse --git-common-dir)/info/exclude"
# 2. On the device, from the repo root, with carry [".whl"]:
#      bash bench/verify_on_device.sh
#    It prints each run's report and leaves them, with the JSON results, under $OUT (default /tmp/verify-out).
#
# The runs: (a) the pristine verl 0.9.1 for sm61 (expected FAIL, exit 1, naming the first violation);
# (b) a copy fixed by `rlcompat fix --unsafe-fixes` (RLC306 turns verl's use_torch_compile defaults off) for sm61 (expected PASS, exit 0); (c) the pristine tree for sm80 (emulated on the
# Hopper: expected CANNOT RUN, exit 2, as flash-attn is not installed in the image); (d) the fixed copy for sm61
# with --strategy fsdp --algo grpo.
set -uo pipefail
cd "$(dirname "$0")/.."

if [ "${1:-}" = "pack" ]; then
  DIR=${2:-.whl}
  mkdir -p "$DIR"
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 -d "$DIR" \
    libcst==1.9.0 pyyaml==6.0.3 typer==0.28.0 click==8.5.1 shellingham==1.5.4 annotated-doc==0.0.7 rich==15.0.0 \
    markdown-it-py==4.3.0 mdurl==0.1.2 pygments==2.21.0 typing_extensions==4.16.0 ruamel.yaml==0.19.1 bashlex==0.18 \
    nvidia-ml-py==13.615.71
  python3 -m pip wheel -q --no-deps --no-build-isolation -w "$DIR" .   # rlcompat itself, with rules/ as rlcompat.rules
  du -sh "$DIR"
  exit 0
fi

OUT=${OUT:-/tmp/verify-out}
SITE=/tmp/site
mkdir -p "$OUT"
[ -d .whl ] || { echo "no .whl/ here: pack it first (see the top of this script) and carry it"; exit 2; }
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$SITE" .whl/*.whl \
  2>&1 | grep -v -e "is ignored" -e "WARNING: Target directory" || true
export PYTHONPATH="$SITE"
# Run from outside the checkout: `python -m` puts the working directory first on sys.path, and the checkout's
# rlcompat/ (without rules/ mapped in as rlcompat.rules) would shadow the installed wheel.
cd "$(mktemp -d)"
{
  nvidia-smi --query-gpu=name,compute_cap,driver_version --format=csv,noheader
  python3 -c "import sys, torch, transformers; print('python', sys.version.split()[0], '| torch', torch.__version__, '| transformers', transformers.__version__)"
  nproc
} 2>&1 | tee "$OUT/environment.txt"

FIXED=/tmp/fixed
rm -rf "$FIXED" && mkdir -p "$FIXED" && cp -r "$SITE/verl" "$FIXED/verl" && find "$FIXED" -name __pycache__ -prune -exec rm -rf {} +
python3 -m rlcompat fix "$FIXED/verl" --target sm61 --unsafe-fixes | tail -n 1 | tee "$OUT/fix.txt"

run() {  # name, then the verify arguments
  local name=$1; shift
  echo; echo "== rlcompat verify $*"
  local start=$(date +%s.%N)
  python3 -m rlcompat verify "$@" --output-format json > "$OUT/$name.json"; local rc=$?
  local end=$(date +%s.%N)
  # The text report is rendered from the same result, exactly as `--output-format text` would print it.
  python3 -c "import json, sys; from rlcompat.verify.report import render_text; sys.stdout.write(render_text(json.load(open(sys.argv[1]))))" \
    "$OUT/$name.json" > "$OUT/$name.txt"
  printf 'exit %s, %.1f s wall (whole command)\n' "$rc" "$(python3 -c "print($end - $start)")" >> "$OUT/$name.txt"
  cat "$OUT/$name.txt"
}
run pristine-sm61 "$SITE/verl" --target sm61 --device cuda
run fixed-sm61 "$FIXED/verl" --target sm61 --device cuda
run pristine-sm80 "$SITE/verl" --target sm80 --device cuda
run fixed-sm61-fsdp1-grpo "$FIXED/verl" --target sm61 --device cuda --strategy fsdp --algo grpo
ls -l "$OUT"
