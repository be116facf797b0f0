#!/bin/sh
# tests/test-cli-arch.sh — `sprig mkmodel --arch` and the qwen3 / qwen2 /
# Llama 3 layouts end to end: files with a real vocabulary copied by
# --vocab-from tokenize exactly as the vocabulary file does (every
# tokenizer.* key copied), and speculative decoding on qwen3 files (a draft
# model with the same Qwen vocabulary) gives plain greedy's bytes on the
# chain and the tree path (the path checked in --stats-json); mkmodel's bad
# usage exits 2 naming the flag.
# Run by tests/run.sh with $SPRIG_BIN and $SPRIG_SHARED set, cwd = repo root.
set -u
BIN=${SPRIG_BIN:-./sprig}
SHARED=${SPRIG_SHARED:-../shared}
VOC="$SHARED/models/vocab"
TMP=$(mktemp -d "${TMPDIR:-/tmp}/sprig-cli-arch-XXXXXX")
trap 'rm -rf "$TMP"' EXIT
fail=0
check() { d=$1; shift; if "$@"; then :; else echo "FAIL: $d"; fail=1; fi; }
has() { grep -F -q -- "$1" "$2"; }
TEXT="Hello world! The quick brown fox, 12345 times — naïve café 日本語 <|im_start|>"

# the tokenizer.* lines of `sprig gguf`, without the index column
tokkeys() { "$BIN" gguf "$1" | grep -E '^ +[0-9]+ +tokenizer\.' | sed -E 's/^ +[0-9]+ +//'; }

SHAPE="--dim 64 --heads 4 --kv-heads 2 --head-dim 32 --ffn 96 --std 0.3 --type f16 -q"
"$BIN" mkmodel --arch qwen3 --layers 2 --seed 7 --vocab-from "$VOC/ggml-vocab-qwen2.gguf" $SHAPE -o "$TMP/q3.gguf"; rc=$?
check "mkmodel --arch qwen3 --vocab-from exits 0 (rc $rc)" [ $rc -eq 0 ]
"$BIN" mkmodel --arch qwen3 --layers 1 --seed 8 --vocab-from "$VOC/ggml-vocab-qwen2.gguf" $SHAPE -o "$TMP/q3d.gguf"
"$BIN" gguf "$TMP/q3.gguf" >"$TMP/q3.txt"
check "general.architecture qwen3" has 'general.architecture                       str  "qwen3"' "$TMP/q3.txt"
check "qwen3.attention.key_length 32" grep -E -q 'qwen3.attention.key_length +u32 +32' "$TMP/q3.txt"
check "vocab size is the vocabulary file's" grep -E -q 'qwen3.vocab_size +u32 +151936' "$TMP/q3.txt"
check "per-head q norm written" grep -E -q 'blk.1.attn_q_norm.weight +f32 +\[32\]' "$TMP/q3.txt"
check "tied: no output.weight" sh -c "! grep -q ' output.weight ' '$TMP/q3.txt'"
tokkeys "$VOC/ggml-vocab-qwen2.gguf" >"$TMP/k-src"
tokkeys "$TMP/q3.gguf" >"$TMP/k-dst"
check "every tokenizer.* key copied" cmp -s "$TMP/k-src" "$TMP/k-dst"
check "the copied keys include merges" has "tokenizer.ggml.merges" "$TMP/k-dst"
"$BIN" tokenize -m "$VOC/ggml-vocab-qwen2.gguf" -p "$TEXT" --ids >"$TMP/ids-src"
"$BIN" tokenize -m "$TMP/q3.gguf" -p "$TEXT" --ids >"$TMP/ids-dst"
check "the model tokenizes as the vocabulary file" cmp -s "$TMP/ids-src" "$TMP/ids-dst"
check "and into several tokens" [ "$(wc -w <"$TMP/ids-dst")" -gt 10 ]

# qwen3 target + qwen3 draft (the Qwen vocabulary): chain and tree = plain greedy
P="The quick brown fox"
"$BIN" run -m "$TMP/q3.gguf" -p "$P" -n 40 --temp 0 -t 1 --stats-json "$TMP/plain.json" >"$TMP/plain" 2>"$TMP/err"; rc=$?
check "qwen3 plain run exits 0 (rc $rc)" [ $rc -eq 0 ]
check "plain path" has '"path":"plain"' "$TMP/plain.json"
check "and generates" [ "$(wc -c <"$TMP/plain")" -gt 40 ]
for dr in q3d q3; do
    "$BIN" run -m "$TMP/q3.gguf" --draft "$TMP/$dr.gguf" -p "$P" -n 40 --temp 0 -t 1 --draft-max 4 \
        --stats-json "$TMP/chain.json" >"$TMP/chain" 2>"$TMP/err"; rc=$?
    check "draft $dr chain exits 0 (rc $rc)" [ $rc -eq 0 ]
    check "draft $dr chain = plain greedy" cmp -s "$TMP/chain" "$TMP/plain"
    check "draft $dr chain path" has '"path":"chain"' "$TMP/chain.json"
    "$BIN" run -m "$TMP/q3.gguf" --draft "$TMP/$dr.gguf" -p "$P" -n 40 --temp 0 -t 1 --draft-max 4 --tree --tree-branches 2 \
        --stats-json "$TMP/tree.json" >"$TMP/tree" 2>"$TMP/err"; rc=$?
    check "draft $dr tree exits 0 (rc $rc)" [ $rc -eq 0 ]
    check "draft $dr tree = plain greedy" cmp -s "$TMP/tree" "$TMP/plain"
    check "draft $dr tree path" has '"path":"tree"' "$TMP/tree.json"
done
# the target as its own draft: every drafted token is accepted
check "self-draft accepts drafts" grep -E -q '"accepted":[1-9]' "$TMP/tree.json"

# a draft with another vocabulary is refused
"$BIN" mkmodel --arch qwen2 --layers 1 --vocab-from "$VOC/ggml-vocab-llama-bpe.gguf" --dim 64 --heads 4 --kv-heads 2 --ffn 96 \
    --type f16 -q -o "$TMP/q2l.gguf"
"$BIN" run -m "$TMP/q3.gguf" --draft "$TMP/q2l.gguf" -p "$P" -n 4 --temp 0 >/dev/null 2>"$TMP/err"; rc=$?
check "draft with Llama 3's vocabulary refused (rc $rc)" [ $rc -eq 1 ]
"$BIN" gguf "$TMP/q2l.gguf" >"$TMP/q2l.txt"
check "qwen2 biases written" grep -E -q 'blk.0.attn_k.bias +f32 +\[32\]' "$TMP/q2l.txt"
"$BIN" run -m "$TMP/q2l.gguf" -p "$P" -n 8 --temp 0 >/dev/null 2>"$TMP/err"
check "qwen2 file runs" has "(qwen2," "$TMP/err"

# Llama 3 layout: rope_freqs from the converter's formula
"$BIN" mkmodel --arch llama --rope-scaling llama3 --layers 1 --vocab-from "$VOC/ggml-vocab-llama-bpe.gguf" \
    --dim 64 --heads 4 --kv-heads 2 --ffn 96 --type f16 -q -o "$TMP/l3.gguf"
"$BIN" gguf "$TMP/l3.gguf" >"$TMP/l3.txt"
check "rope_freqs.weight [8]" grep -E -q 'rope_freqs.weight +f32 +\[8\]' "$TMP/l3.txt"
"$BIN" run -m "$TMP/l3.gguf" -p "$P" -n 8 --temp 0 >/dev/null 2>"$TMP/err"; rc=$?
check "llama3 file runs (rc $rc)" [ $rc -eq 0 ]

# bad usage
"$BIN" mkmodel --arch mamba -o "$TMP/x.gguf" 2>"$TMP/err"; rc=$?
check "unknown --arch exits 2" [ $rc -eq 2 ]
check "and names the arches" has "llama, qwen2, qwen3" "$TMP/err"
"$BIN" mkmodel --arch qwen2 --rope-scaling llama3 -o "$TMP/x.gguf" 2>"$TMP/err"; rc=$?
check "llama3 scaling on qwen2 exits 2" [ $rc -eq 2 ]
"$BIN" mkmodel --rope-scaling yarn -o "$TMP/x.gguf" 2>"$TMP/err"; rc=$?
check "--rope-scaling yarn exits 2" [ $rc -eq 2 ]
"$BIN" mkmodel --head-dim 7 -o "$TMP/x.gguf" 2>"$TMP/err"; rc=$?
check "odd --head-dim exits 2" [ $rc -eq 2 ]
"$BIN" mkmodel --vocab-from "$TMP/nope.gguf" -o "$TMP/x.gguf" 2>"$TMP/err"; rc=$?
check "missing --vocab-from file exits 1 naming it" sh -c "[ $rc -eq 1 ] && grep -q nope.gguf '$TMP/err'"
"$BIN" mkmodel --widen "$SHARED/models/stories260K.gguf" --arch qwen3 -o "$TMP/x.gguf" 2>"$TMP/err"; rc=$?
check "--widen with --arch exits 2" [ $rc -eq 2 ]
check "nothing written on failure" [ ! -e "$TMP/x.gguf" ]

[ $fail -eq 0 ] && echo "test-cli-arch: ok"
exit $fail
