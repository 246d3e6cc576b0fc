#!/usr/bin/env bash
# `rlcompat verify --trainer --device cuda` on one GPU (an H100 or an H200 emulating a Tesla P40, sm61): verl's own
# `python -m verl.trainer.main_ppo` with rlcompat's hf rollout, under the target guard in every Ray process.
#
# Ray: the device has no network, and pack-verify-wheels.sh strips ray's cluster binaries (raylet, gcs_server) to
# fit the 64 MiB carry limit, so `ray.init()` fails there. verl's trainer needs a real local Ray cluster (it has no
# local mode: TaskRunner, worker groups, placement groups, named actors). The two binaries compress to about 12 MB
# with xz (ray 2.60.0: 40.5 MB + 34.8 MB raw), so this script packs them as .whl-ray/ray-bins.tar.xz and puts them
# back into the installed ray on the device; the Java jar and the dashboard's web build stay out (not needed).
#
# 1. Here (a machine with the registry), from the repo root:
#      bash /work/shared/device/pack-verify-wheels.sh .whl   # verl 0.9.1 and what it imports (44 MB)
#      bash bench/verify_on_device.sh pack .whl               # rlcompat and its dependencies (5 MB)
#      bash bench/verify_trainer_on_device.sh pack            # + TransferQueue, pyzmq, msgspec, cachetools,
#                                                             #   psutil, prometheus_client, torchdata into .whl; ray's
#                                                             #   raylet+gcs_server into .whl-ray (12 MB)
#      printf '/.whl/\n/.whl-ray/\n' >> "$(git rev-parse --git-common-dir)/info/exclude"
#      du -sch .whl .whl-ray                                  # must be under 64 MiB for one call
# 2. On the device (kind nvidia-h100-x1), from the repo root, timeout_s 600 each, two calls on the same warm machine
#    (what a call installs under /tmp and the carried folders stay there between calls):
#      call 1: carry [".whl", ".whl-ray"], command `bash bench/verify_trainer_on_device.sh tiny`   (pristine, fixed)
#      call 2: no carry needed,            command `bash bench/verify_trainer_on_device.sh big`    (0.5B, 20 steps;
#              about 10 s a step with the CUDA IPC weight path, 363 s for 20 steps on an H100, 317 s on an H200)
#    Two GPUs: the same two-call install on kind nvidia-h100-x2, then `bash bench/verify_trainer_on_device.sh two`
#    (TWO_STEPS, TWO_MODEL, TWO_TIMEOUT; memory per GPU index in OUT/two.txt).
#    If `du` said 64 MiB or more: before call 1, one call with carry [".whl"] and command
#    `bash bench/verify_trainer_on_device.sh install`, then call 1 with carry [".whl-ray"] only.
#    Measured on an H100 (docs/verify.md): install 5 s; tiny 320 s (pristine 108 s, fixed 163 s, setup); big with
#    20 steps 363 s for verify plus about 20 s of setup.
#    Everything lands in $OUT: environment.txt, fix.txt, one .json/.txt per run, gpu-*.csv (nvidia-smi every
#    0.5 s), trainer_memory_*.csv and .png (the device tool brings back a limited number of files, so the CSV and
#    PNG may stay behind; they are remade from the JSON and the GPU log here, the plot titled with the GPU named in
#    OUT/environment.txt: `.venv/bin/pip install matplotlib && python bench/trainer_memory.py OUT/big.json
#    --gpu-log OUT/gpu-big.csv --out docs --name verify_trainer_memory`).
#
# The runs: (a) pristine verl 0.9.1 + the seeds' launch script (vllm, bf16): expected FAIL, exit 1, naming the
# first blocker; (b) fixed verl + fixed script (rollout.name=hf, fp32, sdpa): 2 steps, expected PASS, exit 0;
# (c) the fixed tree, a random Qwen2 of Qwen2.5-0.5B's shape in fp32, 20 steps: memory per step (the seeds' user
# saw an OOM at step 9).
set -uo pipefail
cd "$(dirname "$0")/.."
REPO=$(pwd)
SITE=/tmp/site
MODE=${1:-all}

if [ "$MODE" = "pack" ]; then
  DIR=.whl
  mkdir -p "$DIR" .whl-ray
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 -d "$DIR" \
    TransferQueue==0.1.11 pyzmq==27.3.0 msgspec==0.22.0 cachetools psutil prometheus_client torchdata==0.11.0
  python3 -m pip wheel -q --no-deps --no-build-isolation -w "$DIR" .   # rlcompat with verl_plugin and its entry point
  tmp=$(mktemp -d)
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux2014_x86_64 -d "$tmp" ray==2.60.0
  ( cd "$tmp" && mkdir x && cd x && unzip -q ../ray-2.60.0-*.whl ray/core/src/ray/gcs/gcs_server ray/core/src/ray/raylet/raylet \
    && tar cf - ray | xz -9 -T0 > "$REPO/.whl-ray/ray-bins.tar.xz" )
  rm -rf "$tmp"
  du -sh "$DIR" .whl-ray
  exit 0
fi

OUT=${OUT:-/tmp/verify-trainer-out}
mkdir -p "$OUT"
export PYTHONPATH="$SITE"

install_wheels() {
  [ -d .whl ] || { echo "no .whl/ here: pack it first (see the top of this script) and carry it"; exit 2; }
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$SITE" .whl/*.whl \
    2>&1 | grep -v -e "is ignored" -e "WARNING: Target directory" || true
}
install_ray_bins() {
  [ -f .whl-ray/ray-bins.tar.xz ] || { echo "no .whl-ray/ray-bins.tar.xz: carry .whl-ray"; exit 2; }
  [ -d "$SITE/ray" ] || { echo "ray is not installed in $SITE: run '$0 install' with .whl first"; exit 2; }
  xz -dc .whl-ray/ray-bins.tar.xz | tar xf - -C "$SITE"
  chmod +x "$SITE/ray/core/src/ray/raylet/raylet" "$SITE/ray/core/src/ray/gcs/gcs_server"
}

if [ "$MODE" = "install" ]; then install_wheels; echo "installed into $SITE"; exit 0; fi
[ -f "$SITE/verl/__init__.py" ] || install_wheels
[ -x "$SITE/ray/core/src/ray/raylet/raylet" ] || install_ray_bins
python3 - <<'PY' 2>&1 | tee "$OUT/ray-check.txt"
import ray, time
t = time.time()
ray.init(num_cpus=2, include_dashboard=False)
print("ray", ray.__version__, "local cluster up in %.1f s" % (time.time() - t), ray.cluster_resources())
ray.shutdown()
PY

# Run from outside the checkout: `python -m` puts the working directory first on sys.path, and the checkout's
# rlcompat/ (without rules/ mapped in as rlcompat.rules) would shadow the installed wheel.
WORK=$(mktemp -d)
cp "$REPO/fixtures/scripts/grpo_vllm_bf16/input.sh" "$WORK/pristine.sh"
cp "$REPO/fixtures/scripts/grpo_vllm_bf16/input.sh" "$WORK/fixed.sh"
cd "$WORK"
{
  nvidia-smi --query-gpu=name,compute_cap,driver_version,memory.total --format=csv,noheader
  python3 -c "import sys, torch, transformers, ray, verl; print('python', sys.version.split()[0], '| torch', torch.__version__, '| transformers', transformers.__version__, '| ray', ray.__version__, '| verl', verl.__version__)"
  python3 -c "from verl.workers.rollout.replica import get_rollout_replica_class as g; print('hf rollout registered:', g('hf').__name__)"
  nproc
} 2>&1 | tee "$OUT/environment.txt"

FIXED=/tmp/fixed
if [ ! -f "$FIXED/verl/__init__.py" ]; then
  rm -rf "$FIXED" && mkdir -p "$FIXED" && cp -r "$SITE/verl" "$FIXED/verl" && find "$FIXED" -name __pycache__ -prune -exec rm -rf {} +
  python3 -m rlcompat fix "$FIXED/verl" --target sm61 --unsafe-fixes | tail -n 1 | tee "$OUT/fix.txt"
fi
python3 -m rlcompat fix "$WORK/fixed.sh" --target sm61 --unsafe-fixes | tail -n 1 | tee -a "$OUT/fix.txt"
diff "$WORK/pristine.sh" "$WORK/fixed.sh" > "$OUT/script.diff"

run() {  # name, then the verify arguments; nvidia-smi samples the whole GPU's memory meanwhile
  local name=$1; shift
  echo; echo "== rlcompat verify $*"
  nvidia-smi --query-gpu=timestamp,memory.used --format=csv,noheader,nounits -lms 500 > "$OUT/gpu-$name.csv" &
  local smi=$!
  local start=$(date +%s.%N)
  python3 -m rlcompat verify "$@" --output-format json > "$OUT/$name.json"; local rc=$?
  local end=$(date +%s.%N)
  kill "$smi" 2>/dev/null; wait "$smi" 2>/dev/null
  python3 -c "import json, sys; from rlcompat.verify.trainer_report import render_trainer_text as r; sys.stdout.write(r(json.load(open(sys.argv[1]))))" \
    "$OUT/$name.json" > "$OUT/$name.txt" 2>&1
  printf 'exit %s, %.1f s wall (whole command)\n' "$rc" "$(python3 -c "print($end - $start)")" >> "$OUT/$name.txt"
  cat "$OUT/$name.txt"
  python3 "$REPO/bench/trainer_memory.py" "$OUT/$name.json" --gpu-log "$OUT/gpu-$name.csv" --out "$OUT" \
    --name "trainer_memory_$name"
}
if [ "$MODE" = "all" ] || [ "$MODE" = "tiny" ]; then
  run pristine "$SITE/verl" --target sm61 --trainer --device cuda --script "$WORK/pristine.sh"
  run fixed "$FIXED/verl" --target sm61 --trainer --device cuda --steps 3 --script "$WORK/fixed.sh"
fi
if [ "$MODE" = "all" ] || [ "$MODE" = "big" ]; then
  run big "$FIXED/verl" --target sm61 --trainer --device cuda --steps "${BIG_STEPS:-20}" --model-size 0.5b --timeout "${BIG_TIMEOUT:-540}"
fi
if [ "$MODE" = "two" ]; then
  # Two GPUs (kind nvidia-h100-x2): FSDP across both, one hf rollout replica per GPU, each synced from its own rank.
  # Memory is logged per GPU index (the single-GPU plot above reads one row per sample, so this one stays a table).
  echo; echo "== rlcompat verify (2 GPUs)"
  nvidia-smi --query-gpu=timestamp,index,memory.used --format=csv,noheader,nounits -lms 500 > "$OUT/gpu-two.csv" &
  smi=$!
  python3 -m rlcompat verify "$FIXED/verl" --target sm61 --trainer --device cuda --gpus 2 --steps "${TWO_STEPS:-10}" \
    --model-size "${TWO_MODEL:-0.5b}" --timeout "${TWO_TIMEOUT:-500}" --output-format json > "$OUT/two.json"; rc=$?
  kill "$smi" 2>/dev/null; wait "$smi" 2>/dev/null
  python3 -c "import json, sys; from rlcompat.verify.trainer_report import render_trainer_text as r; sys.stdout.write(r(json.load(open(sys.argv[1]))))" \
    "$OUT/two.json" > "$OUT/two.txt" 2>&1
  echo "exit $rc" >> "$OUT/two.txt"
  python3 - "$OUT/gpu-two.csv" <<'PY' | tee -a "$OUT/two.txt"
import collections, sys
peak, first = collections.defaultdict(int), {}
for line in open(sys.argv[1]):
    parts = [p.strip() for p in line.split(",")]
    if len(parts) == 3 and parts[2].isdigit():
        gpu, used = parts[1], int(parts[2])
        peak[gpu] = max(peak[gpu], used)
        first.setdefault(gpu, used)
for gpu in sorted(peak):
    print(f"GPU {gpu}: peak {peak[gpu]} MiB used (first sample {first[gpu]} MiB)")
PY
  cat "$OUT/two.txt"
fi
ls -l "$OUT"
