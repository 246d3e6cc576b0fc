#!/usr/bin/env bash
# verl 0.9.1's own CPU tests on the pristine tree and on copies fixed by rlcompat, outcome by outcome.
#
#   nice -n 10 bash bench/verl_cpu_tests.sh            # TARGET=sm61 by default; WORK=dir keeps the trees there
#
# The wheel ships no tests; the PyPI sdist (verl-0.9.1.tar.gz) does: tests/**/test_*_on_cpu.py are the ones verl's CI
# runs without a GPU. Three copies of the sdist are made: pristine, `rlcompat fix verl --target $TARGET` (safe fixes)
# and the same with --unsafe-fixes. Only the package directory `verl/` is fixed (what a user patches); the tests stay
# as verl wrote them. Each tree is put first on PYTHONPATH and the same pytest command runs in it; the per-test
# outcomes (JUnit XML) are compared. Test-only dependencies that the project .venv lacks (pytest-asyncio, cachetools,
# transferqueue with its pyzmq and msgspec) are installed with `pip install --no-deps --target bench/.corpus/testdeps`,
# never into .venv.
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PY=${PY:-$REPO/.venv/bin/python}
TARGET=${TARGET:-sm61}
CACHE=$REPO/bench/.corpus
DEPS=$CACHE/testdeps
SDIST=$CACHE/sdist/verl-0.9.1.tar.gz
WORK=${WORK:-$(mktemp -d "${TMPDIR:-/tmp}/verl-cpu-tests.XXXXXX")}
TREES=${TREES:-"pristine safe unsafe"}
mkdir -p "$WORK"

if [ ! -f "$SDIST" ]; then
    "$PY" -m pip download -q --no-deps --no-binary :all: verl==0.9.1 -d "$CACHE/sdist"
fi
if [ ! -d "$DEPS/pytest_asyncio" ] || [ ! -d "$DEPS/transfer_queue" ] || [ ! -d "$DEPS/cachetools" ]; then
    "$PY" -m pip install -q --no-deps --target "$DEPS" pytest-asyncio cachetools transferqueue pyzmq msgspec
fi

# Which verl modules the pytest process imported (ray workers are other processes and not counted).
cat > "$WORK/_rlc_imported.py" <<'EOF'
import os, sys

def pytest_sessionfinish(session):
    out = os.environ.get("RLC_IMPORTED")
    if out:
        files = sorted({m.__file__ for m in list(sys.modules.values()) if getattr(m, "__file__", None)})
        with open(out, "w") as fh:
            fh.write("\n".join(files) + "\n")
EOF

for tree in $TREES; do
    root=$WORK/$tree/verl-0.9.1
    if [ ! -d "$root" ]; then
        mkdir -p "$WORK/$tree"
        tar xzf "$SDIST" -C "$WORK/$tree"
        case $tree in
            safe) flags=() ;;
            unsafe) flags=(--unsafe-fixes) ;;
            *) flags=(none) ;;
        esac
        if [ "${flags[0]:-}" != none ]; then
            start=$(date +%s.%N)
            (cd "$root" && PYTHONPATH=$REPO "$PY" -m rlcompat fix verl --target "$TARGET" --no-cache "${flags[@]}" \
                --output-format json > "$WORK/$tree.fix.json") || [ $? -eq 1 ]
            echo "$tree: rlcompat fix took $(awk "BEGIN{printf \"%.0f\", $(date +%s.%N) - $start}") s; $(diff -rq "$WORK/pristine/verl-0.9.1/verl" "$root/verl" 2>/dev/null | grep -c differ || true) files differ from pristine"
        fi
    fi
    # The tree's verl must be the one imported, not the .venv's.
    got=$(cd "$root" && PYTHONPATH=$root "$PY" -c 'import verl, os; print(os.path.dirname(verl.__file__))')
    [ "$got" = "$root/verl" ] || { echo "verl imported from $got, not $root/verl" >&2; exit 2; }
    tests=$(cd "$root" && find tests -name 'test_*_on_cpu.py' | sort)
    start=$(date +%s.%N)
    set +e
    (cd "$root" && PYTHONPATH=$root:$DEPS:$WORK RLC_IMPORTED=$WORK/$tree.imported timeout 2400 "$PY" -m pytest \
        -p no:cacheprovider -p _rlc_imported -q --asyncio-mode=auto --continue-on-collection-errors \
        --junitxml="$WORK/$tree.xml" -rfEs $tests) > "$WORK/$tree.log" 2>&1
    rc=$?
    set -e
    echo "$tree: pytest exit $rc in $(awk "BEGIN{printf \"%.0f\", $(date +%s.%N) - $start}") s: $(tail -1 "$WORK/$tree.log")"
done

"$PY" - "$WORK" $TREES <<'EOF'
import os, sys, xml.etree.ElementTree as ET
work, trees = sys.argv[1], sys.argv[2:]

def outcomes(tree):
    out = {}
    for case in ET.parse(os.path.join(work, f"{tree}.xml")).getroot().iter("testcase"):
        kids = {c.tag for c in case}
        state = "failed" if "failure" in kids else "error" if "error" in kids else "skipped" if "skipped" in kids else "passed"
        out[f"{case.get('classname')}::{case.get('name')}"] = state
    return out

results = {t: outcomes(t) for t in trees}
for t, r in results.items():
    counts = {s: sum(1 for v in r.values() if v == s) for s in ("passed", "failed", "error", "skipped")}
    print(f"{t}: {len(r)} tests, " + ", ".join(f"{n} {s}" for s, n in counts.items()))
base = results[trees[0]]
for t in trees[1:]:
    diff = sorted(k for k in set(base) | set(results[t]) if base.get(k) != results[t].get(k))
    print(f"{trees[0]} vs {t}: {len(diff)} tests differ")
    for k in diff:
        print(f"  {k}: {base.get(k, 'absent')} -> {results[t].get(k, 'absent')}")
    pristine_root = os.path.join(work, trees[0], "verl-0.9.1", "verl")
    root = os.path.join(work, t, "verl-0.9.1")
    changed = []
    for d, _, files in os.walk(os.path.join(root, "verl")):
        for f in files:
            p = os.path.join(d, f)
            q = os.path.join(pristine_root, os.path.relpath(p, os.path.join(root, "verl")))
            if os.path.exists(q) and open(p, "rb").read() != open(q, "rb").read():
                changed.append(p)
    imported_file = os.path.join(work, f"{t}.imported")
    imported = set(open(imported_file).read().split()) if os.path.exists(imported_file) else set()
    hit = sorted(os.path.relpath(p, root) for p in changed if p in imported)
    print(f"{t}: {len(changed)} files changed by rlcompat, {len(hit)} of them imported by the test process: {', '.join(hit)}")
EOF
echo "trees, logs and JUnit XML in $WORK"
