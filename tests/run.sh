#!/bin/sh
# tests/run.sh — run every test binary in $BUILD/tests and every tests/*.sh
# script; print one line per test and a summary; exit non-zero on any failure.
#
# Tests run $SPRIG_TEST_JOBS at a time (default: the number of CPUs, at most
# 4), the slowest first, so the CI run on a 2-core machine takes the longest
# test's time plus the rest shared out, not the sum. No test depends on
# timing or on running alone: every check compares outputs, and a row's bits
# do not depend on the threads or the load around it. SPRIG_TEST_JOBS=1 runs
# them one after another in the old order. A failing test's log tail is
# printed after all have finished, so two tests' output never interleave.
BUILD=${BUILD:-build}
SPRIG_BIN=${SPRIG_BIN:-./sprig}
export SPRIG_BIN BUILD
: "${SPRIG_SHARED:=../shared}"
export SPRIG_SHARED
# tree auto's profile cache (spec/profile.h) stays inside the build tree
: "${SPRIG_CACHE_DIR:=$BUILD/tests/cache}"
export SPRIG_CACHE_DIR
mkdir -p "$BUILD/tests"

# run_one PATH: run one test (a binary, or a .sh script), log to
# $BUILD/tests/NAME.log, print PASS/FAIL with its time, and record a failure
# in $BUILD/tests/.failed
if [ "${1:-}" = --one ]; then
    t=$2
    case "$t" in
    *.sh) name=$(basename "$t" .sh); set -- sh "$t" ;;
    *) name=$(basename "$t"); set -- "$t" ;;
    esac
    log="$BUILD/tests/$name.log"
    start=$(date +%s)
    if "$@" >"$log" 2>&1; then
        echo "PASS $name ($(( $(date +%s) - start ))s)"
    else
        echo "FAIL $name ($(( $(date +%s) - start ))s, see $log)"
        echo "$name" >>"$BUILD/tests/.failed"
    fi
    exit 0
fi

jobs=${SPRIG_TEST_JOBS:-$(nproc 2>/dev/null || echo 1)}
case "$jobs" in ''|*[!0-9]*|0) echo "tests/run.sh: SPRIG_TEST_JOBS must be a positive integer (got '$jobs')"; exit 2;; esac
[ "$jobs" -gt 4 ] && [ -z "${SPRIG_TEST_JOBS:-}" ] && jobs=4

# the slowest tests (measured: make test and make asan on 2 cores) start
# first; the rest follow in name order
SLOW="test-oracle-llamacpp test-cli-mkmodel test-cli-serve-nginx test-cli-serve
test-attention test-spec-sampled test-cli-bench-compare test-cli-arch
test-tokenizer-ref test-spec-kv test-kv test-cli-run"
list="$BUILD/tests/.list"
: >"$list"
for t in "$BUILD"/tests/test-* tests/test-*.sh; do
    case "$t" in *.d|*.o|*.log) continue;; esac
    case "$t" in *.sh) [ -f "$t" ] || continue;; *) [ -x "$t" ] || continue;; esac
    echo "$t" >>"$list"
done
order="$BUILD/tests/.order"
: >"$order"
if [ "$jobs" -gt 1 ]; then
    for s in $SLOW; do grep -E "/$s(\.sh)?\$" "$list" >>"$order"; done
fi
grep -v -x -F -f "$order" "$list" >"$order.rest" || true
cat "$order.rest" >>"$order"
n=$(wc -l <"$order")

rm -f "$BUILD/tests/.failed"
xargs -P "$jobs" -I{} sh "$0" --one {} <"$order"
if [ -s "$BUILD/tests/.failed" ]; then
    failed=$(tr '\n' ' ' <"$BUILD/tests/.failed")
    for name in $failed; do
        echo "---- $name (last 30 lines of $BUILD/tests/$name.log)"
        tail -n 30 "$BUILD/tests/$name.log"
    done
    echo "$(wc -l <"$BUILD/tests/.failed") of $n tests failed: $failed"
    exit 1
fi
echo "all $n tests passed"
