#!/usr/bin/env bash
# Findings and fixes of two rlcompat checkouts compared byte for byte on whole installed packages.
#   bash bench/before_after.sh OLD_SRC NEW_SRC [packages] [targets]
# OLD_SRC/NEW_SRC: source trees of rlcompat (e.g. `git archive main | tar -x -C /tmp/old`, then
# `ln -s ../rules /tmp/old/rlcompat/rules`; and `.`), run with this repo's .venv. For each package and target:
# `scan --output-format json` of the package, and `fix --unsafe-fixes` of a fresh copy; the JSON reports and the fixed trees must be identical.
# Prints wall/CPU/peak RSS of each run.
set -euo pipefail
OLD=$(cd "$1" && pwd); NEW=$(cd "$2" && pwd)
PACKAGES=${3:-verl,transformers,torch}; TARGETS=${4:-sm61,sm75}
PY=$(cd "$(dirname "$0")/.." && pwd)/.venv/bin/python
WORK=$(mktemp -d /tmp/rlcompat-before-after-XXXX)
trap 'rm -rf "$WORK"' EXIT
status=0
for code in "$OLD" "$NEW"; do
  # An archive's rules/ must be importable as rlcompat.rules from it: `ln -s ../rules SRC/rlcompat/rules`.
  (cd "$WORK" && PYTHONPATH="$code" "$PY" -c "import rlcompat, rlcompat.rules, sys; bad = [m.__file__ for m in (rlcompat, rlcompat.rules) if not m.__file__.startswith(sys.argv[1])]; assert not bad, f'not from {sys.argv[1]}: {bad} (ln -s ../rules SRC/rlcompat/rules)'" "$code")
done
for pkg in ${PACKAGES//,/ }; do
  src=$("$PY" -c "import importlib.util,sys; print(list(importlib.util.find_spec(sys.argv[1]).submodule_search_locations)[0])" "$pkg")
  mkdir -p "$WORK/src"; rm -rf "$WORK/src/$pkg"
  (cd "$src/.." && find "$pkg" \( -name '*.py' -o -name '*.yaml' -o -name '*.yml' -o -name '*.sh' \) -not -path '*__pycache__*' \
    | tar -cf - -T - | tar -xf - -C "$WORK/src")
  for t in ${TARGETS//,/ }; do
    for side in old new; do
      code=$([ $side = old ] && echo "$OLD" || echo "$NEW")
      rm -rf "$WORK/$side"; cp -r "$WORK/src/$pkg" "$WORK/$side"
      for cmd in scan fix; do
        extra=$([ $cmd = fix ] && echo "--unsafe-fixes" || echo "")
        # from $WORK: `python -m` puts the working directory first on sys.path, before PYTHONPATH
        (cd "$WORK" && /usr/bin/time -f "$pkg $t $side $cmd: wall %e s, CPU %U+%S s, peak RSS %M KB" env PYTHONPATH="$code" NO_COLOR=1 \
          "$PY" -m rlcompat $cmd "$WORK/$side" --target "$t" --no-cache --output-format json $extra \
          2> "$WORK/$side.$cmd.err" | sed "s#$WORK/$side#TREE#g" > "$WORK/$side.$cmd.json") || true
        tail -1 "$WORK/$side.$cmd.err"
      done
    done
    for cmd in scan fix; do
      if cmp -s "$WORK/old.$cmd.json" "$WORK/new.$cmd.json"; then echo "$pkg $t $cmd: identical report ($(wc -c < "$WORK/new.$cmd.json") bytes)"
      else echo "$pkg $t $cmd: REPORTS DIFFER"; status=1; fi
    done
    if diff -rq "$WORK/old" "$WORK/new" > /dev/null; then echo "$pkg $t: fixed trees identical ($(diff -rq "$WORK/src/$pkg" "$WORK/new" | wc -l) files changed by fix)"
    else echo "$pkg $t: FIXED TREES DIFFER"; diff -rq "$WORK/old" "$WORK/new" | head; status=1; fi
  done
done
exit $status
