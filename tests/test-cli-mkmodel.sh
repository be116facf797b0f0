#!/bin/sh
# tests/test-cli-mkmodel.sh — `sprig mkmodel` and `sprig convert` on the
# command line: a tiny model per weight type (read back by `sprig gguf`),
# same seed -> same bytes, another seed -> different bytes, and bad flags
# -> exit 2 with a message naming the flag; convert's usage errors.
# Run by tests/run.sh with $SPRIG_BIN and $SPRIG_SHARED set, cwd = repo root.
set -u
BIN=${SPRIG_BIN:-./sprig}
TMP=$(mktemp -d "${TMPDIR:-/tmp}/sprig-cli-mkmodel-XXXXXX")
trap 'rm -rf "$TMP"' EXIT
fail=0
check() { d=$1; shift; if "$@"; then :; else echo "FAIL: $d"; fail=1; fi; }
has() { grep -F -q -- "$1" "$2"; }
hasre() { grep -E -q -- "$1" "$2"; }

"$BIN" mkmodel --help >"$TMP/help" 2>&1; rc=$?
check "--help exits 0" [ $rc -eq 0 ]
check "--help lists presets" has "tiny, small, llama-1b" "$TMP/help"

for t in f32 f16 bf16 q8_0 q4_0; do
    "$BIN" mkmodel --preset tiny --type $t --seed 7 -o "$TMP/tiny-$t.gguf" 2>"$TMP/err-$t"; rc=$?
    check "mkmodel $t exits 0 (rc $rc)" [ $rc -eq 0 ]
    check "mkmodel $t summary" has "parameters, seed 7" "$TMP/err-$t"
    "$BIN" gguf "$TMP/tiny-$t.gguf" >"$TMP/gguf-$t" 2>&1; rc=$?
    check "gguf reads tiny $t (rc $rc)" [ $rc -eq 0 ]
    check "tiny $t q weight type" hasre "blk\.0\.attn_q\.weight +$t +\[64, 64\]" "$TMP/gguf-$t"
    check "tiny $t norm stays f32" hasre 'blk\.0\.attn_norm\.weight +f32 +\[64\]' "$TMP/gguf-$t"
    check "tiny $t totals" has "totals: 21 tensors, 112448 parameters" "$TMP/gguf-$t"
done

# llama.cpp file types: the per-tensor mix, general.file_type, --pure
"$BIN" mkmodel --dim 256 --ffn 512 --layers 8 --type q4_k_m --seed 7 -o "$TMP/q4km.gguf" 2>"$TMP/err-q4km"; rc=$?
check "mkmodel q4_k_m exits 0 (rc $rc)" [ $rc -eq 0 ]
check "mkmodel q4_k_m summary" has ", q4_k_m, " "$TMP/err-q4km"
"$BIN" gguf "$TMP/q4km.gguf" >"$TMP/gguf-q4km" 2>&1
check "q4_k_m file_type 15" hasre 'general\.file_type +u32 +15$' "$TMP/gguf-q4km"
check "q4_k_m output q6_k" hasre ' output\.weight +q6_k ' "$TMP/gguf-q4km"
check "q4_k_m attn_q q4_k" hasre 'blk\.1\.attn_q\.weight +q4_k ' "$TMP/gguf-q4km"
check "q4_k_m attn_v layer 0 q6_k" hasre 'blk\.0\.attn_v\.weight +q6_k ' "$TMP/gguf-q4km"
check "q4_k_m attn_v layer 1 q4_k" hasre 'blk\.1\.attn_v\.weight +q4_k ' "$TMP/gguf-q4km"
"$BIN" mkmodel --dim 256 --ffn 512 --layers 8 --type q4_k --seed 7 -q -o "$TMP/q4k.gguf"
check "q4_k is q4_k_m" cmp -s "$TMP/q4km.gguf" "$TMP/q4k.gguf"
"$BIN" mkmodel --dim 256 --ffn 512 --layers 8 --type q4_k_m --seed 7 -t 1 -q -o "$TMP/q4km-t1.gguf"
check "q4_k_m bytes do not depend on the thread count" cmp -s "$TMP/q4km.gguf" "$TMP/q4km-t1.gguf"
"$BIN" mkmodel --dim 256 --ffn 512 --layers 8 --type q4_k --pure --seed 7 -q -o "$TMP/q4kp.gguf"
"$BIN" gguf "$TMP/q4kp.gguf" >"$TMP/gguf-q4kp" 2>&1
check "--pure: output q4_k" hasre ' output\.weight +q4_k ' "$TMP/gguf-q4kp"
check "--pure: attn_v q4_k" hasre 'blk\.0\.attn_v\.weight +q4_k ' "$TMP/gguf-q4kp"
for t in q2_k q3_k_m q5_k_m q6_k q4_1 q5_0 q5_1; do
    "$BIN" mkmodel --dim 256 --ffn 256 --layers 2 --type $t -q -o "$TMP/k-$t.gguf" && "$BIN" gguf "$TMP/k-$t.gguf" >/dev/null 2>&1; rc=$?
    check "mkmodel $t writes a readable file (rc $rc)" [ $rc -eq 0 ]
done

"$BIN" mkmodel --type q8_0 --seed 7 -q -o "$TMP/again.gguf"
check "same seed, same bytes" cmp -s "$TMP/tiny-q8_0.gguf" "$TMP/again.gguf"
"$BIN" mkmodel --type q8_0 --seed 8 -q -o "$TMP/other.gguf"
check "other seed, other bytes" sh -c "! cmp -s '$TMP/tiny-q8_0.gguf' '$TMP/other.gguf'"
"$BIN" mkmodel --dim 128 --layers 3 --heads 8 --kv-heads 4 --ffn 256 --vocab 1000 --ctx 64 -q -o "$TMP/custom.gguf"
"$BIN" gguf "$TMP/custom.gguf" >"$TMP/gguf-custom" 2>&1
check "flags override the preset" hasre 'llama\.block_count +u32 +3$' "$TMP/gguf-custom"
check "custom vocab" hasre 'tokenizer\.ggml\.tokens +arr +\[str x 1000\]' "$TMP/gguf-custom"

# --widen: the real model in a bigger shape generates the real model's text
W="${SPRIG_SHARED:-../shared}/models/stories260K.gguf"
"$BIN" mkmodel --dim 128 --layers 6 --heads 8 --kv-heads 4 --ffn 192 --type q8_0 --widen "$W" -o "$TMP/wide.gguf" 2>"$TMP/werr"; rc=$?
check "widen exits 0 (rc $rc)" [ $rc -eq 0 ]
check "widen summary" has "widened to dim 128, layers 6" "$TMP/werr"
"$BIN" run -m "$TMP/wide.gguf" --temp 0 -n 24 -p "Once upon a time" -q >"$TMP/wide.txt" 2>/dev/null
"$BIN" run -m "$W" --temp 0 -n 24 -p "Once upon a time" -q >"$TMP/small.txt" 2>/dev/null
check "widened model writes the source's greedy text" cmp -s "$TMP/wide.txt" "$TMP/small.txt"
check "greedy text is not empty" hasre "Once upon a time.+" "$TMP/wide.txt"
"$BIN" run -m "$TMP/wide.gguf" --mtp "${SPRIG_SHARED:-../shared}/models/stories-mtp.gguf" -n 5 >/dev/null 2>"$TMP/werr"; rc=$?
check "an MTP head that does not fit the target exits 1 (rc $rc)" [ $rc -eq 1 ]
check "the misfit names the dimension" has "MTP head embedding_length is 64 but the target's is 128" "$TMP/werr"
"$BIN" mkmodel --dim 32 --heads 4 --kv-heads 2 --widen "$W" -o "$TMP/w2.gguf" 2>"$TMP/werr"; rc=$?
check "widen into a smaller dim exits 2 (rc $rc)" [ $rc -eq 2 ]
check "widen refusal names dim" has "dim 32 is smaller than the source model's 64" "$TMP/werr"
check "widen refusal writes nothing" [ ! -e "$TMP/w2.gguf" ]
"$BIN" mkmodel --widen "$TMP/none.gguf" -o "$TMP/w3.gguf" 2>"$TMP/werr"; rc=$?
check "widen of a missing file exits 1 (rc $rc)" [ $rc -eq 1 ]
check "widen of a missing file names it" has "none.gguf" "$TMP/werr"

bad() { # bad DESCRIPTION EXPECTED-SUBSTRING ARGS...
    d=$1; want=$2; shift 2
    "$BIN" mkmodel "$@" >/dev/null 2>"$TMP/bad"; rc=$?
    check "$d exits 2 (rc $rc)" [ $rc -eq 2 ]
    check "$d message" has "$want" "$TMP/bad"
}
bad "non-numeric dim" "--dim: 'abc' is not an integer" --dim abc -o "$TMP/x.gguf"
bad "dim out of range" "--dim: 0 is out of range" --dim 0 -o "$TMP/x.gguf"
bad "unknown type" "--type: 'q7_k' is not one of" --type q7_k -o "$TMP/x.gguf"
bad "iq type" "--type: 'iq2_xs' is not one of" --type iq2_xs -o "$TMP/x.gguf"
bad "k type needs rows of 32" "multiples of 32" --type q4_k_m --dim 48 --heads 4 -o "$TMP/x.gguf"
bad "widen with a mix" "is a mix (add --pure)" --type q4_k_m --widen "$TMP/none.gguf" -o "$TMP/x.gguf"
bad "widen with a K type needs rows of 256" "q4_k needs dim (128) and ffn (192) to be multiples of 256" \
    --type q4_k --pure --dim 128 --heads 8 --kv-heads 4 --ffn 192 --widen "$W" -o "$TMP/x.gguf"
bad "heads do not divide" "dim 64 is not divisible by heads 5" --heads 5 -o "$TMP/x.gguf"
bad "q8_0 needs blocks" "multiples of 32" --type q8_0 --ffn 100 -o "$TMP/x.gguf"
bad "missing output" "missing -o" --preset tiny
bad "missing value" "--seed: missing value" -o "$TMP/x.gguf" --seed
bad "unknown preset" "unknown preset 'giant'" --preset giant -o "$TMP/x.gguf"
bad "unknown flag" "unknown option '--bogus'" --bogus -o "$TMP/x.gguf"
bad "negative seed" "--seed" --seed -1 -o "$TMP/x.gguf"
check "nothing written on bad flags" [ ! -e "$TMP/x.gguf" ]

"$BIN" mkmodel -q -o "$TMP/no-such-dir/x.gguf" 2>"$TMP/ioerr"; rc=$?
check "unwritable output exits 1 (rc $rc)" [ $rc -eq 1 ]
check "unwritable output message" has "no-such-dir/x.gguf" "$TMP/ioerr"

# convert: usage errors exit 2, bad files exit 1
"$BIN" convert >/dev/null 2>&1; rc=$?
check "convert without args exits 2 (rc $rc)" [ $rc -eq 2 ]
"$BIN" convert gguf a b c >/dev/null 2>"$TMP/cerr"; rc=$?
check "convert unknown format exits 2 (rc $rc)" [ $rc -eq 2 ]
check "convert unknown format message" has "unknown source format 'gguf'" "$TMP/cerr"
"$BIN" convert llama2c a b >/dev/null 2>&1; rc=$?
check "convert missing output exits 2 (rc $rc)" [ $rc -eq 2 ]
"$BIN" convert llama2c --ctx x a b c >/dev/null 2>"$TMP/cerr"; rc=$?
check "convert bad --ctx exits 2 (rc $rc)" [ $rc -eq 2 ]
check "convert bad --ctx message" has "--ctx: 'x' is not an integer" "$TMP/cerr"
printf 'garbage' >"$TMP/g.bin"
"$BIN" convert llama2c "$TMP/g.bin" "$TMP/g.bin" "$TMP/o.gguf" >/dev/null 2>"$TMP/cerr"; rc=$?
check "convert garbage exits 1 (rc $rc)" [ $rc -eq 1 ]
check "convert garbage message" has "g.bin: checkpoint is 7 bytes" "$TMP/cerr"
check "convert garbage writes nothing" [ ! -e "$TMP/o.gguf" ]

# gemma3 layout: llama.cpp's keys and tensor names (its loader requires every
# one of them: tests/ref's llama.cpp runs these files; test-oracle-llamacpp
# compares sprig's gemma3 forward with it, sliding windows included)
"$BIN" mkmodel --preset tiny --arch gemma3 --window 32 --swa-pattern 3 --softcap 30 --layers 6 -o "$TMP/g3.gguf" >/dev/null 2>&1; rc=$?
check "mkmodel --arch gemma3 exits 0 (rc $rc)" [ $rc -eq 0 ]
"$BIN" gguf "$TMP/g3.gguf" >"$TMP/g3.txt" 2>&1
for key in gemma3.attention.sliding_window gemma3.attention.sliding_window_pattern gemma3.rope.freq_base_swa \
           gemma3.final_logit_softcapping \
           gemma3.attention.key_length blk.5.attn_q_norm.weight blk.5.attn_k_norm.weight \
           blk.5.post_attention_norm.weight blk.5.post_ffw_norm.weight; do
    check "gemma3 file has $key" has "$key" "$TMP/g3.txt"
done
check "gemma3 output is tied (no output.weight)" sh -c "! grep -q ' output.weight' '$TMP/g3.txt'"
"$BIN" mkmodel --preset tiny --arch gemma3 -o "$TMP/g3n.gguf" >/dev/null 2>&1
"$BIN" gguf "$TMP/g3n.gguf" >"$TMP/g3n.txt" 2>&1
check "gemma3 without --window has no sliding keys" sh -c "! grep -q sliding_window '$TMP/g3n.txt'"
check "gemma3 without --softcap has no soft-cap key" sh -c "! grep -q softcapping '$TMP/g3n.txt'"
"$BIN" run -m "$TMP/g3.gguf" -n 40 --ignore-eos --stats-json "$TMP/g3.json" -q >/dev/null 2>&1; rc=$?
check "gemma3 with sliding layers runs (rc $rc)" [ $rc -eq 0 ]
check "on a rotating ring cache" has '"kv_layout":"ring"' "$TMP/g3.json"
"$BIN" run -m "$TMP/g3n.gguf" -n 4 --stats-json "$TMP/g3n.json" -q >/dev/null 2>&1; rc=$?
check "gemma3 without sliding layers runs (rc $rc)" [ $rc -eq 0 ]
check "on a dense cache" has '"kv_layout":"dense"' "$TMP/g3n.json"
"$BIN" mkmodel --preset tiny --arch gemma3 --window 600 --ctx 512 -o "$TMP/g3w.gguf" >/dev/null 2>&1
"$BIN" run -m "$TMP/g3w.gguf" -n 2 >/dev/null 2>"$TMP/g3err"; rc=$?
check "a window larger than the context is refused (rc $rc)" [ $rc -eq 1 ]
check "naming the key" has "gemma3.attention.sliding_window' = 600" "$TMP/g3err"
"$BIN" mkmodel --preset tiny --arch gemma3 --softcap 0 -o "$TMP/g3c.gguf" >/dev/null 2>"$TMP/g3err"; rc=$?
check "mkmodel --softcap 0 is refused (rc $rc)" [ $rc -eq 2 ]

[ $fail -eq 0 ] && echo "test-cli-mkmodel: ok"
exit $fail
