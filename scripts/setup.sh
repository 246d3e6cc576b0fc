#!/usr/bin/env bash
# Creates .venv (if missing) and installs rlcompat with its [verify] and [dev] extras.
# torch is installed first and pinned: on these machines torch==2.13.0 is a local CPU build that installs in
# seconds, where an unpinned torch would pull a multi-GB CUDA build.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
TORCH_SPEC=${RLCOMPAT_TORCH_SPEC:-torch==2.13.0}
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip 2>&1 | grep -v "is ignored" || true
.venv/bin/python -m pip install -q "$TORCH_SPEC" 2>&1 | grep -v "is ignored" || true
.venv/bin/python -m pip install -q -e ".[verify,verl,dev]" 2>&1 | grep -v "is ignored" || true
.venv/bin/python -c "import rlcompat, torch, verl; print('rlcompat', rlcompat.__version__, '| torch', torch.__version__, '| verl', verl.__version__)"
