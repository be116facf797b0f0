#!/bin/sh
# tests/test-python.sh — the Python module (bindings/python/sprig.py, ctypes
# over libsprig.so) with Debian's python3: tests/test_python.py says what is
# checked. Without python3 it prints SKIP, unless SPRIG_REQUIRE_REF=1 (CI).
set -eu
BUILD=${BUILD:-build}
PY=$(command -v python3 || true)
[ -x /usr/bin/python3 ] && PY=/usr/bin/python3   # Debian's, not a virtualenv's
if [ -z "$PY" ]; then
    [ "${SPRIG_REQUIRE_REF:-}" = 1 ] && { echo "FAIL: python3 is needed (./setup --tests)"; exit 1; }
    echo "SKIP: python3 not found"; exit 0
fi
LIB="$(pwd)/$BUILD/libsprig.so.$(sed -n 's/^#define SPRIG_VERSION "\([0-9]*\)\.\([0-9]*\)\..*/\1.\2/p' include/sprig.h)"
if [ ! -f "$LIB" ] && [ "$BUILD" != build ]; then
    echo "SKIP: $BUILD builds no shared library (the sanitizer run); make test runs this"; exit 0
fi
[ -f "$LIB" ] || { echo "FAIL: $LIB not built (make)"; exit 1; }
SPRIG_LIBRARY=$LIB exec "$PY" -B tests/test_python.py
