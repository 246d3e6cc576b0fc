#!/usr/bin/env bash
# Packs rlcompat and the dependencies the device machine's image may lack, for running `rlcompat doctor` and
# tests/test_doctor_gpu.py there (no registry is reachable from it). torch, transformers, pydantic, pyyaml and
# typing-extensions come with the image and are not packed, so its own copies stay in charge.
#
# usage, in the repo root here (.whl/ is in .gitignore):   bash bench/pack-doctor-wheels.sh .whl
# then on the device (carry: [".whl"]):
#   python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site
# and run rlcompat from outside the checkout (its rlcompat/ folder would shadow the installed wheel):
#   R=$PWD; cd /tmp && python3 -m rlcompat doctor --target sm61 && python3 -m pytest -q -p no:cacheprovider $R/tests/test_doctor_gpu.py
set -euo pipefail
DIR=${1:-.whl}
mkdir -p "$DIR"
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 -d "$DIR" \
  typer==0.28.0 annotated-doc==0.0.7 shellingham==1.5.4 rich==15.0.0 markdown-it-py==4.3.0 mdurl==0.1.2 \
  pygments==2.21.0 libcst==1.9.0 bashlex==0.18 ruamel.yaml==0.19.1 nvidia-ml-py==13.615.71 \
  pytest==9.2.0 pluggy==1.7.0 iniconfig==2.3.1
python3 -m pip wheel -q --no-deps --no-build-isolation -w "$DIR" .
du -sh "$DIR"
