#!/bin/sh
# tests/test-cli-install.sh — what a newcomer meets first: make's library
# check, ./setup --check, sprig --version and the one-screen run --help; then
# `make install` into a temporary prefix (and a DESTDIR staging), the
# shared library's soname and exports (exactly sprig.h's functions), the
# README's C example built against the installed files with pkg-config,
# shared and fully static, and run (its text must be the command line's);
# `make uninstall` leaves nothing behind.
# Run by tests/run.sh with cwd = repo root, after `make` (the install uses
# build/, never rebuilds it). Under `make asan` (another BUILD) it prints
# SKIP: the sanitizer build makes no shared library to install.
set -u
BIN=${SPRIG_BIN:-./sprig}
SHARED=${SPRIG_SHARED:-../shared}
BUILD=${BUILD:-build}
if [ "$BUILD" != build ]; then echo "SKIP: the install test runs in make test (BUILD=build), not BUILD=$BUILD"; exit 0; fi
TMP=$(mktemp -d "${TMPDIR:-/tmp}/sprig-install-XXXXXX")
trap 'rm -rf "$TMP"' EXIT
fail=0
check() { # check DESCRIPTION COMMAND...
    d=$1; shift
    if "$@"; then :; else echo "FAIL: $d"; fail=1; fi
}
has() { grep -F -q -- "$1" "$2"; }
hasnt() { ! grep -F -q -- "$1" "$2"; }
MK="make --no-print-directory -s"
unset MAKEFLAGS MFLAGS

# ---- make names every missing library before compiling anything
$MK PKG_CONFIG=/nonexistent/pkg-config sprig >"$TMP/dep" 2>&1; rc=$?
check "make without pkg-config fails (rc $rc)" [ $rc -ne 0 ]
for want in "pkg-config" "libpcre2-8" "libpcre2-dev" "jansson" "libjansson-dev" "libmicrohttpd" "libmicrohttpd-dev" \
            "sudo apt-get install" "./setup"; do
    check "make's message names $want" has "$want" "$TMP/dep"
done
check "make compiled nothing" hasnt "  CC " "$TMP/dep"
cat "$TMP/dep"
$MK PKG_CONFIG=/bin/false sprig >"$TMP/dep2" 2>&1; rc=$?
check "make with a pkg-config that finds nothing fails (rc $rc)" [ $rc -ne 0 ]
check "... naming jansson" has "libjansson-dev" "$TMP/dep2"
sh ./setup --check >"$TMP/setup" 2>&1; rc=$?
check "./setup --check on this (set up) machine exits 0 (rc $rc)" [ $rc -eq 0 ]
check "./setup --check says nothing is missing" has "nothing is missing" "$TMP/setup"

# ---- version and help
"$BIN" --version >"$TMP/ver"; rc=$?
VERSION=$(sed -n 's/^#define SPRIG_VERSION "\(.*\)"/\1/p' include/sprig.h)
check "--version exits 0" [ $rc -eq 0 ]
check "--version names $VERSION" has "sprig $VERSION" "$TMP/ver"
check "--version lists the compiled kernel families" has "kernels compiled in: reference avx2 avx512-vnni" "$TMP/ver"
check "--version names what this CPU runs" has "this CPU runs:" "$TMP/ver"
cat "$TMP/ver"
"$BIN" run --help >"$TMP/help"; rc=$?
check "run --help exits 0" [ $rc -eq 0 ]
check "run --help fits 24 lines ($(wc -l <"$TMP/help"))" [ "$(wc -l <"$TMP/help")" -le 24 ]
check "run --help fits 80 columns" [ "$(awk '{ if (length($0) > m) m = length($0) } END { print m + 0 }' "$TMP/help")" -le 80 ]
check "run --help points to --help-all" has "--help-all" "$TMP/help"
check "run --help starts with the model" [ "$(sed -n 2p "$TMP/help" | grep -c -- '--model')" = 1 ]
"$BIN" run --help-all >"$TMP/all"; rc=$?
check "run --help-all exits 0" [ $rc -eq 0 ]
for f in --kv-type --top-p --draft-oracle --tree-width --save-ids --top-logprobs --ignore-eos; do
    check "run --help-all documents $f" has "$f" "$TMP/all"
done

# ---- make install into a prefix
P="$TMP/prefix"
$MK install PREFIX="$P" >"$TMP/install" 2>&1; rc=$?
check "make install exits 0 (rc $rc)" [ $rc -eq 0 ]
SONAME=libsprig.so.$(echo "$VERSION" | cut -d. -f1-2)
for f in bin/sprig lib/libsprig.a "lib/$SONAME" lib/libsprig.so include/sprig.h lib/pkgconfig/sprig.pc share/sprig/stories260K.gguf; do
    check "installed $f" [ -e "$P/$f" ]
done
check "lib/libsprig.so links to $SONAME" [ "$(readlink "$P/lib/libsprig.so")" = "$SONAME" ]
check "soname is $SONAME" [ "$(readelf -d "$P/lib/$SONAME" | sed -n 's/.*SONAME.*\[\(.*\)\]/\1/p')" = "$SONAME" ]
nm -D --defined-only "$P/lib/$SONAME" | awk '{ print $3 }' | sed 's/@.*//' | grep -v "^SPRIG_" | sort >"$TMP/exported"
grep -o 'sprig_[a-z0-9_]*(' include/sprig.h | tr -d '(' | sort -u >"$TMP/declared"
check "the shared library exports exactly sprig.h's functions ($(wc -l <"$TMP/exported") exported, $(wc -l <"$TMP/declared") declared)" \
    cmp -s "$TMP/exported" "$TMP/declared"
diff "$TMP/declared" "$TMP/exported" | head
check "no export outside sprig_" [ "$(grep -vc '^sprig_' "$TMP/exported")" = 0 ]
export PKG_CONFIG_PATH="$P/lib/pkgconfig"
check "pkg-config --modversion sprig = $VERSION" [ "$(pkg-config --modversion sprig)" = "$VERSION" ]
# the installed sprig finds its installed default model from anywhere
(cd "$TMP" && "$P/bin/sprig" run -n 12 --temp 0 -q >"$TMP/inst-run" 2>&1); rc=$?
check "installed sprig run with no model exits 0 (rc $rc)" [ $rc -eq 0 ]
check "... from the installed stories260K" has "Once upon a time, there was a little girl" "$TMP/inst-run"

# ---- the README's C example, against the installed files
awk '/^## Using sprig as a C library/ { f = 1 } f && /^```c$/ { g = 1; next } g && /^```$/ { exit } g' README.md >"$TMP/example.c"
check "the README has a C example" [ -s "$TMP/example.c" ]
cp "$SHARED/models/stories260K.gguf" "$SHARED/models/stories-mtp.gguf" "$TMP/"
# shellcheck disable=SC2046
cc -std=c11 -Wall -Werror "$TMP/example.c" $(pkg-config --cflags --libs sprig) -o "$TMP/ex-shared" 2>"$TMP/cc1"; rc=$?
check "the example builds against libsprig.so with pkg-config (rc $rc)" [ $rc -eq 0 ]
cat "$TMP/cc1"
check "the shared example needs $SONAME" has "[$SONAME]" /dev/stdin <<EOF2
$(readelf -d "$TMP/ex-shared" 2>/dev/null)
EOF2
# shellcheck disable=SC2046
cc -std=c11 -Wall -Werror "$TMP/example.c" $(pkg-config --static --cflags --libs sprig) -static -o "$TMP/ex-static" 2>"$TMP/cc2"; rc=$?
check "the example builds fully static with pkg-config --static (rc $rc)" [ $rc -eq 0 ]
cat "$TMP/cc2"
check "the static example has no dynamic section" has "no dynamic section" /dev/stdin <<EOF2
$(readelf -d "$TMP/ex-static" 2>&1)
EOF2
"$BIN" run -m "$SHARED/models/stories260K.gguf" -p "Once upon a time" -n 128 --temp 0 -q -t 1 | sed '1s/^Once upon a time//' >"$TMP/want"
for kind in shared static; do
    (cd "$TMP" && LD_LIBRARY_PATH="$P/lib" ./ex-$kind >"$TMP/out-$kind" 2>"$TMP/err-$kind"); rc=$?
    check "the $kind example runs (rc $rc)" [ $rc -eq 0 ]
    check "the $kind example's text is sprig run's greedy text" cmp -s "$TMP/want" "$TMP/out-$kind"
    check "the $kind example speculated with a tree" has "path tree," "$TMP/err-$kind"
    cat "$TMP/err-$kind"
done

# ---- DESTDIR staging, then uninstall
S="$TMP/stage"
$MK install PREFIX=/usr DESTDIR="$S" >/dev/null 2>&1; rc=$?
check "make install DESTDIR=... PREFIX=/usr exits 0 (rc $rc)" [ $rc -eq 0 ]
check "staged under DESTDIR" [ -f "$S/usr/lib/$SONAME" ] && [ -f "$S/usr/include/sprig.h" ]
check "the staged sprig.pc says prefix=/usr" has "prefix=/usr" "$S/usr/lib/pkgconfig/sprig.pc"
$MK uninstall PREFIX=/usr DESTDIR="$S" >/dev/null 2>&1
$MK uninstall PREFIX="$P" >/dev/null 2>&1; rc=$?
check "make uninstall exits 0 (rc $rc)" [ $rc -eq 0 ]
left=$(find "$P" "$S" -type f -o -type l | wc -l)
check "uninstall leaves no file ($left left)" [ "$left" = 0 ]
find "$P" "$S" -type f -o -type l | head

[ $fail -eq 0 ] && echo "test-cli-install: ok"
exit $fail
