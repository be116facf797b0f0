#!/bin/sh
# tests/run.sh — run every test binary in $BUILD/tests and every tests/*.sh
# script; print one line per test and a summary; exit non-zero on any failure.
BUILD=${BUILD:-build}
SPRIG_BIN=${SPRIG_BIN:-./sprig}
export SPRIG_BIN
: "${SPRIG_SHARED:=../shared}"
export SPRIG_SHARED
# tree auto's profile cache (spec/profile.h) stays inside the build tree
: "${SPRIG_CACHE_DIR:=$BUILD/tests/cache}"
export SPRIG_CACHE_DIR
fail=0; n=0; failed=""
for t in "$BUILD"/tests/test-*; do
    case "$t" in *.d|*.o) continue;; esac
    [ -x "$t" ] || continue
    n=$((n+1))
    name=$(basename "$t")
    log="$BUILD/tests/$name.log"
    start=$(date +%s)
    if "$t" >"$log" 2>&1; then
        echo "PASS $name ($(( $(date +%s) - start ))s)"
    else
        echo "FAIL $name (see $log)"; tail -n 30 "$log"; fail=$((fail+1)); failed="$failed $name"
    fi
done
for t in tests/test-*.sh; do
    [ -f "$t" ] || continue
    n=$((n+1))
    name=$(basename "$t" .sh)
    log="$BUILD/tests/$name.log"
    mkdir -p "$BUILD/tests"
    start=$(date +%s)
    if sh "$t" >"$log" 2>&1; then
        echo "PASS $name ($(( $(date +%s) - start ))s)"
    else
        echo "FAIL $name (see $log)"; tail -n 30 "$log"; fail=$((fail+1)); failed="$failed $name"
    fi
done
if [ $fail -ne 0 ]; then echo "$fail of $n tests failed:$failed"; exit 1; fi
echo "all $n tests passed"
