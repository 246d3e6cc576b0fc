#!/usr/bin/env bash
# Creates .venv (if missing) and installs rlcompat (editable) with its [verify], [verl] and [dev] extras.
# torch is installed first and pinned: on these machines torch==2.13.0 is a local CPU build that installs in
# seconds, where an unpinned torch would pull a multi-GB CUDA build.
# pip runs with -qq: errors only. Its warnings here are about the machine (a pip.conf that names a missing package
# location prints a line per package looked up) or setuptools' general caution about editable installs, not about
# this project (tests/test_packaging.py keeps the build itself free of warnings). A failed step stops the script,
# with pip's error on stderr.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
TORCH_SPEC=${RLCOMPAT_TORCH_SPEC:-torch==2.13.0}
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
.venv/bin/python -m pip install -qq --upgrade pip
.venv/bin/python -m pip install -qq "$TORCH_SPEC"
.venv/bin/python -m pip install -qq -e ".[verify,verl,dev]"
.venv/bin/python -c "import rlcompat, torch, verl; print('rlcompat', rlcompat.__version__, '| torch', torch.__version__, '| verl', verl.__version__)"
