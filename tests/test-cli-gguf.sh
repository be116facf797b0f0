#!/bin/sh
# tests/test-cli-gguf.sh — `sprig gguf`: the report on stories260K.gguf
# (header figures, keys with types and values, tensor table, totals) and the
# refusals: missing file, garbage file, truncated file, bad usage.
# Run by tests/run.sh with $SPRIG_BIN and $SPRIG_SHARED set, cwd = repo root.
set -u
BIN=${SPRIG_BIN:-./sprig}
SHARED=${SPRIG_SHARED:-../shared}
MODEL="$SHARED/models/stories260K.gguf"
TMP=$(mktemp -d "${TMPDIR:-/tmp}/sprig-cli-gguf-XXXXXX")
trap 'rm -rf "$TMP"' EXIT
fail=0
check() { # check DESCRIPTION COMMAND...
    d=$1; shift
    if "$@"; then :; else echo "FAIL: $d"; fail=1; fi
}
has() { grep -F -q -- "$1" "$2"; }
hasre() { grep -E -q -- "$1" "$2"; }

"$BIN" gguf --help >"$TMP/help" 2>&1; rc=$?
check "--help exits 0" [ $rc -eq 0 ]
check "--help prints usage" has "usage: sprig gguf" "$TMP/help"

if [ -f "$MODEL" ]; then
    "$BIN" gguf "$MODEL" >"$TMP/out" 2>"$TMP/err"; rc=$?
    check "stories260K exits 0 (rc $rc)" [ $rc -eq 0 ]
    check "version" hasre '^version: +3$' "$TMP/out"
    check "alignment" hasre '^alignment: +32$' "$TMP/out"
    check "data offset" hasre '^data offset: +14176$' "$TMP/out"
    check "key count" has "metadata: 19 keys" "$TMP/out"
    check "architecture key" hasre 'general\.architecture +str +"llama"' "$TMP/out"
    check "block_count key" hasre 'llama\.block_count +u32 +5$' "$TMP/out"
    check "rms eps key" hasre 'layer_norm_rms_epsilon +f32 +9\.99999975e-06$' "$TMP/out"
    check "tokens array" hasre 'tokenizer\.ggml\.tokens +arr +\[str x 512\] "<unk>", "<s>", "</s>"' "$TMP/out"
    check "token_type array" hasre 'tokenizer\.ggml\.token_type +arr +\[i32 x 512\] 2, 3, 3, 6' "$TMP/out"
    check "tensor count" has "tensors: 48" "$TMP/out"
    check "first tensor row" hasre '^ +0 +token_embd\.weight +f32 +\[64, 512\] +0 +131072$' "$TMP/out"
    check "k projection row" hasre 'blk\.0\.attn_k\.weight +f32 +\[64, 32\] +278784 +8192$' "$TMP/out"
    check "last tensor row" hasre '^ +47 +blk\.4\.ffn_norm\.weight +f32 +\[64\] +1170944 +256$' "$TMP/out"
    check "totals" has "totals: 48 tensors, 292800 parameters, 1171200 bytes" "$TMP/out"
    check "nothing on stderr" [ ! -s "$TMP/err" ]
    # a truncated copy is refused with the reader's message
    head -c 20000 "$MODEL" >"$TMP/cut.gguf"
    "$BIN" gguf "$TMP/cut.gguf" >"$TMP/out2" 2>"$TMP/err2"; rc=$?
    check "truncated exits 1 (rc $rc)" [ $rc -eq 1 ]
    check "truncated message names tensor" hasre "cut\.gguf: tensor [0-9]+ '[a-z_.0-9]+': data .* runs past the end" "$TMP/err2"
else
    echo "SKIP: $MODEL not found"
fi

"$BIN" gguf "$TMP/does-not-exist.gguf" >"$TMP/out3" 2>"$TMP/err3"; rc=$?
check "missing file exits 1 (rc $rc)" [ $rc -eq 1 ]
check "missing file message" has "does-not-exist.gguf: cannot open" "$TMP/err3"

printf 'this is not a gguf file at all\n' >"$TMP/garbage.gguf"
"$BIN" gguf "$TMP/garbage.gguf" >"$TMP/out4" 2>"$TMP/err4"; rc=$?
check "garbage exits 1 (rc $rc)" [ $rc -eq 1 ]
check "garbage message" has "garbage.gguf: header: bad magic 'this'" "$TMP/err4"

printf 'GGUF\001\000\000\000' >"$TMP/v1.gguf"
"$BIN" gguf "$TMP/v1.gguf" >/dev/null 2>"$TMP/err5"; rc=$?
check "v1 exits 1 (rc $rc)" [ $rc -eq 1 ]
check "v1 message" has "version 1" "$TMP/err5"

"$BIN" gguf >/dev/null 2>"$TMP/err6"; rc=$?
check "no file exits 2 (rc $rc)" [ $rc -eq 2 ]
"$BIN" gguf --bogus x >/dev/null 2>"$TMP/err7"; rc=$?
check "unknown flag exits 2 (rc $rc)" [ $rc -eq 2 ]
check "unknown flag message" has "unknown option '--bogus'" "$TMP/err7"

[ $fail -eq 0 ] && echo "test-cli-gguf: ok"
exit $fail
