#!/bin/sh
# tests/test-cli-tokenize.sh — `sprig tokenize` and `sprig bench tokenize`
# end to end: ids equal to llama.cpp's (computed once with llama-tokenize of
# September 2026, `--no-escape --no-parse-special` unless noted) on
# stories260K and the vocabulary-only llama-spm / phi-3 GGUFs; BOS handling,
# --no-bos, --parse-special (control-token text is plain text without it),
# -f bytes read exactly, --stdin; the `ID -> 'PIECE'` lines; bad usage
# (exit 2 naming the flag) and runtime failures (exit 1 naming the file).
# Run by tests/run.sh with $SPRIG_BIN and $SPRIG_SHARED set, cwd = repo root.
set -u
BIN=${SPRIG_BIN:-./sprig}
SHARED=${SPRIG_SHARED:-../shared}
M="$SHARED/models"
SPM="$M/vocab/ggml-vocab-llama-spm.gguf"
PHI="$M/vocab/ggml-vocab-phi-3.gguf"
TMP=$(mktemp -d "${TMPDIR:-/tmp}/sprig-cli-tok-XXXXXX")
trap 'rm -rf "$TMP"' EXIT
fail=0
check() { d=$1; shift; if "$@"; then :; else echo "FAIL: $d"; fail=1; fi; }
has() { grep -F -q -- "$1" "$2"; }
# ids DESCRIPTION EXPECTED -- ARGS...: `sprig tokenize --ids ARGS` prints EXPECTED
ids() {
    d=$1; want=$2; shift 2
    got=$("$BIN" tokenize --ids "$@" 2>"$TMP/err"); rc=$?
    check "$d exits 0 (rc $rc: $(head -c 200 "$TMP/err"))" [ $rc -eq 0 ]
    check "$d: want '$want', got '$got'" [ "$got" = "$want" ]
}

# stories260K (a model file: only its tokenizer is built); add_bos is true
LILY="Once upon a time, there was a little girl named Lily."
ids "stories260K, BOS by default" "1 403 407 261 378 432 383 286 261 376 298 315 421 395 317 426" -m "$M/stories260K.gguf" -p "$LILY"
ids "stories260K --no-bos" "403 407 261 378 432 383 286 261 376 298 315 421 395 317 426" -m "$M/stories260K.gguf" -p "$LILY" --no-bos

# the default output: `%6d -> 'PIECE'`, control tokens as their text
cat >"$TMP/want" <<'TXT'
     1 -> '<s>'
   410 -> ' '
   504 -> '<'
   419 -> 's'
   505 -> '>'
TXT
"$BIN" tokenize -m "$M/stories260K.gguf" -p "<s>" >"$TMP/out" 2>"$TMP/err"; rc=$?
check "ID -> 'PIECE' lines exit 0 (rc $rc)" [ $rc -eq 0 ]
check "ID -> 'PIECE' lines as llama-tokenize prints them; text '<s>' is not BOS" cmp -s "$TMP/out" "$TMP/want"
"$BIN" tokenize -m "$M/stories260K.gguf" -p "Once upon a time" --show-count >"$TMP/out" 2>&1
check "--show-count" has "Total number of tokens: 5" "$TMP/out"
check "a piece with its leading space" has "   403 -> ' Once'" "$TMP/out"

# a vocabulary-only GGUF, text read from a file byte for byte (UTF-8, byte
# fallback for the emoji, tab, two spaces, newlines kept)
printf 'Hello world! \303\234n\303\257c\303\266d\303\251 \344\275\240\345\245\275 \360\237\231\202\n\ttab  two spaces\n' >"$TMP/b.txt"
B_IDS="1 15043 3186 29991 7189 29876 30085 29883 9289 29948 29871 30919 31076 29871 243 162 156 133 13 12 3891 29871 1023 8162 13"
ids "llama-spm -f FILE" "$B_IDS" -m "$SPM" -f "$TMP/b.txt"
got=$("$BIN" tokenize -m "$SPM" --stdin --ids <"$TMP/b.txt" 2>&1)
check "--stdin reads the same bytes" [ "$got" = "$B_IDS" ]
printf 'a\n' >"$TMP/nl.txt"; printf 'a' >"$TMP/nonl.txt"
ids "a trailing newline is a token" "1 263 13" -m "$SPM" -f "$TMP/nl.txt"
ids "no newline, no token" "1 263" -m "$SPM" -f "$TMP/nonl.txt"
"$BIN" tokenize -m "$SPM" -f "$TMP/b.txt" >"$TMP/out" 2>&1
check "a newline piece stays on one line as \\n" has "    13 -> '\\n'" "$TMP/out"
check "one line per token" [ "$(wc -l <"$TMP/out")" -eq 25 ]
check "a byte-fallback token prints its byte" has "   243 -> '$(printf '\360')'" "$TMP/out"
printf '\\n' >"$TMP/esc.txt"
ids "escape sequences are text" "1 320 29876" -m "$SPM" -f "$TMP/esc.txt"

# control-token text is plain text unless --parse-special
ids "llama-spm '<s>Hi</s> there' is plain text" "1 529 29879 29958 18567 829 29879 29958 727" -m "$SPM" -p "<s>Hi</s> there"
ids "--no-parse-special is the default" "529 29879 29958 18567 829 29879 29958 727" -m "$SPM" -p "<s>Hi</s> there" --no-bos --no-parse-special
ids "phi-3 chat markers are plain text" "529 29989 1792 29989 29958 18567 29966 29989 355 29989 29958" -m "$PHI" -p "<|user|>Hi<|end|>" --no-bos
ids "llama-spm --parse-special" "1 1 6324 2 29871 727" -m "$SPM" -p "<s>Hi</s> there" --parse-special
ids "phi-3 --parse-special" "32010 6324 32007" -m "$PHI" -p "<|user|>Hi<|end|>" --no-bos --parse-special

# BPE vocabularies: ids from llama.cpp's llama-tokenize (--no-escape) on the same files
V="${SPRIG_SHARED:-../shared}/models/vocab"
BT="<|im_start|>user Hi <|eot_id|> ok<start_of_turn> \"DON'T\" 12345 🦙"
ids "llama-bpe" "128000 27 91 318 5011 91 29 882 21694 83739 68 354 851 91 29 5509 27 2527 3659 38374 29 330 85741 17773 1 220 4513 1774 11410 99 247" -m "$V/ggml-vocab-llama-bpe.gguf" -p "$BT"
ids "llama-bpe --parse-special" "128000 27 91 318 5011 91 29 882 21694 220 128009 5509 27 2527 3659 38374 29 330 85741 17773 1 220 4513 1774 11410 99 247" -m "$V/ggml-vocab-llama-bpe.gguf" -p "$BT" --parse-special
ids "qwen2 --parse-special" "151644 872 21018 82639 68 354 842 91 29 5394 27 2468 3575 37274 29 330 84641 17323 1 220 16 17 18 19 20 11162 99 247" -m "$V/ggml-vocab-qwen2.gguf" -p "$BT" --parse-special
ids "gemma-4" "2 236820 236909 548 236779 3041 111038 2364 18428 655 236909 236744 557 236779 547 111038 7546 236820 3041 236779 1340 236779 887 236813 623 70266 236789 236774 236775 236743 236770 236778 236800 236812 236810 236743 478 397 404 391" -m "$V/ggml-vocab-gemma-4.gguf" -p "$BT"

# bad usage: exit 2 with a message naming the flag
bad() { # bad DESCRIPTION WORD -- ARGS...
    d=$1; w=$2; shift 2
    "$BIN" tokenize "$@" >/dev/null 2>"$TMP/bad"; rc=$?
    check "$d exits 2 (rc $rc)" [ $rc -eq 2 ]
    check "$d names '$w'" has "$w" "$TMP/bad"
}
bad "an unknown flag" "--bogus" -m "$SPM" -p x --bogus
bad "no -m" "-m FILE" -p x
bad "-p without a value" "-p" -m "$SPM" -p
bad "no text" "-p TEXT" -m "$SPM"
bad "two texts" "exactly one" -m "$SPM" -p x -f "$TMP/b.txt"
"$BIN" tokenize --help >"$TMP/out" 2>&1; rc=$?
check "--help exits 0" [ $rc -eq 0 ]
check "--help shows the usage" has "usage: sprig tokenize" "$TMP/out"

# runtime failures: exit 1 naming the file
runfail() { # runfail DESCRIPTION WORD -- ARGS...
    d=$1; w=$2; shift 2
    "$BIN" tokenize "$@" >/dev/null 2>"$TMP/bad"; rc=$?
    check "$d exits 1 (rc $rc)" [ $rc -eq 1 ]
    check "$d names '$w'" has "$w" "$TMP/bad"
}
runfail "a missing model" "$TMP/none.gguf" -m "$TMP/none.gguf" -p x
printf 'this is not a GGUF file\n' >"$TMP/not.gguf"
runfail "a non-GGUF file" "$TMP/not.gguf" -m "$TMP/not.gguf" -p x
runfail "a non-GGUF file says why" "not a GGUF" -m "$TMP/not.gguf" -p x
runfail "a missing text file" "$TMP/none.txt" -m "$SPM" -f "$TMP/none.txt"

# sprig bench tokenize: small sizes, one rep
"$BIN" bench tokenize -m "$M/stories260K.gguf" --text mixed --size 20000 --reps 1 --json >"$TMP/j" 2>"$TMP/err"; rc=$?
check "bench tokenize mixed exits 0 (rc $rc: $(head -c 200 "$TMP/err"))" [ $rc -eq 0 ]
check "bench tokenize prints one JSON object" has '"bench":"tokenize"' "$TMP/j"
check "the mixed text is cut at a UTF-8 boundary at most 20000 bytes" grep -Eq '"bytes":(1999[7-9]|20000),' "$TMP/j"
check "mixed text decodes back exactly" has '"roundtrip":true' "$TMP/j"
"$BIN" bench tokenize -m "$M/stories260K.gguf" --text english --size 5000 --reps 1 --save-text "$TMP/en.txt" \
    --ids-out "$TMP/en.ids" >"$TMP/o" 2>"$TMP/err"; rc=$?
check "bench tokenize english exits 0 (rc $rc: $(head -c 200 "$TMP/err"))" [ $rc -eq 0 ]
check "bench tokenize reports tok/s" has "tok/s" "$TMP/o"
check "--save-text writes the text" [ "$(wc -c <"$TMP/en.txt")" -ge 4997 ]
check "--ids-out = sprig tokenize --no-bos --ids of the saved text" \
    sh -c "'$BIN' tokenize -m '$M/stories260K.gguf' -f '$TMP/en.txt' --no-bos --ids | cmp -s - '$TMP/en.ids'"
"$BIN" bench tokenize -m "$M/stories260K.gguf" --text "$TMP/none.txt" >/dev/null 2>"$TMP/bad"; rc=$?
check "bench tokenize on a missing text file exits 1 naming it (rc $rc)" sh -c "[ $rc -eq 1 ] && grep -q none.txt '$TMP/bad'"
"$BIN" bench tokenize -m "$M/stories260K.gguf" --reps 0 >/dev/null 2>"$TMP/bad"; rc=$?
check "bench tokenize --reps 0 exits 2 naming the flag (rc $rc)" sh -c "[ $rc -eq 2 ] && grep -q -- --reps '$TMP/bad'"

[ $fail -eq 0 ] && echo "test-cli-tokenize: all checks passed"
exit $fail
