#!/bin/sh
# tests/test-cli-mkmodel.sh — `sprig mkmodel` and `sprig convert` on the
# command line: a tiny model per weight type (read back by `sprig gguf`),
# same seed -> same bytes, another seed -> different bytes, and bad flags
# -> exit 2 with a message naming the flag; convert's usage errors; the
# gemma3, gemma4, gemma4-assistant and qwen35 layouts' keys and tensors
# (gemma4, gemma4-assistant and qwen35: loaded by tests/ref's llama.cpp when
# it is installed; the assistant drafting against its target, and qwen35's
# MTP layer drafting, in llama.cpp's draft-mtp when $SPRIG_LLAMA_SPECULATIVE
# names a llama-speculative-simple built from the same llama.cpp).
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
"$BIN" mkmodel --dim 128 --layers 6 --heads 8 --kv-heads 4 --ffn 192 --type q8_0 --widen "$W" -o "$TMP/wide2.gguf" \
    --widen-mtp "${SPRIG_SHARED:-../shared}/models/stories-mtp.gguf" --mtp-out "$TMP/wide-mtp.gguf" 2>"$TMP/werr"; rc=$?
check "widen with its MTP head exits 0 (rc $rc)" [ $rc -eq 0 ]
check "widen-mtp summary" has "MTP head" "$TMP/werr"
"$BIN" run -m "$TMP/wide2.gguf" --mtp "$TMP/wide-mtp.gguf" --temp 0 -n 24 -p "Once upon a time" >"$TMP/wide-mtp.txt" 2>"$TMP/werr"
check "the widened head drafts for the widened target, same text" cmp -s "$TMP/wide-mtp.txt" "$TMP/small.txt"
check "the widened head's drafts are accepted" hasre 'acceptance (0\.[3-9]|1\.000)' "$TMP/werr"
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
bad "widen-mtp without its output" "--widen-mtp HEAD and --mtp-out PATH go together" --widen "$W" --widen-mtp "$W" -o "$TMP/x.gguf"
bad "mtp-out without widen" "--widen-mtp HEAD and --mtp-out PATH go together" --widen-mtp "$W" --mtp-out "$TMP/y.gguf" -o "$TMP/x.gguf"
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

# gemma4 layout (dense), as llama.cpp's gemma4 loader reads it: per-layer
# head_count_kv (i32 array) and sliding flags (bool array), separate head
# sizes for sliding and global layers, proportional-RoPE factors for the
# global ones, the last --shared-kv layers without attn_k/attn_v/attn_k_norm,
# per-layer input embeddings; tests/ref's llama.cpp loads and runs these
# files (below, when present).
G4="--preset tiny --arch gemma4 --dim 128 --layers 6 --heads 4 --kv-heads 4 --kv-heads-global 1 --head-dim 64 --head-dim-swa 32
    --ffn 256 --window 16 --shared-kv 2 --per-layer-embd 32 --type q8_0"
"$BIN" mkmodel $G4 -o "$TMP/g4.gguf" 2>"$TMP/g4err"; rc=$?
check "mkmodel --arch gemma4 exits 0 (rc $rc)" [ $rc -eq 0 ]
"$BIN" gguf "$TMP/g4.gguf" >"$TMP/g4.txt" 2>&1
for re in 'gemma4\.attention\.head_count_kv +arr +\[i32 x 6\] 4, 4, 4, 1, 1, 1$' \
          'gemma4\.attention\.sliding_window_pattern +arr +\[bool x 6\] true, true, true, false, false, false$' \
          'gemma4\.attention\.head_count +u32 +4$' 'gemma4\.attention\.key_length +u32 +64$' \
          'gemma4\.attention\.value_length +u32 +64$' 'gemma4\.attention\.key_length_swa +u32 +32$' \
          'gemma4\.attention\.value_length_swa +u32 +32$' 'gemma4\.rope\.dimension_count +u32 +64$' \
          'gemma4\.rope\.dimension_count_swa +u32 +32$' 'gemma4\.rope\.freq_base +f32 +1000000$' \
          'gemma4\.rope\.freq_base_swa +f32 +10000$' 'gemma4\.attention\.layer_norm_rms_epsilon +f32 +9\.99' \
          'gemma4\.attention\.sliding_window +u32 +16$' 'gemma4\.attention\.shared_kv_layers +u32 +2$' \
          'gemma4\.embedding_length_per_layer_input +u32 +32$' 'gemma4\.final_logit_softcapping +f32 +30$' \
          ' rope_freqs\.weight +f32 +\[32\] ' ' per_layer_token_embd\.weight +q8_0 +\[192, 300\] ' \
          ' per_layer_model_proj\.weight +f32 +\[128, 192\] ' ' per_layer_proj_norm\.weight +f32 +\[32\] ' \
          'blk\.2\.attn_q\.weight +q8_0 +\[128, 128\] ' 'blk\.2\.attn_k\.weight +q8_0 +\[128, 128\] ' \
          'blk\.2\.attn_k_norm\.weight +f32 +\[32\] ' 'blk\.3\.attn_q\.weight +q8_0 +\[128, 256\] ' \
          'blk\.3\.attn_k\.weight +q8_0 +\[128, 64\] ' 'blk\.3\.attn_v\.weight +q8_0 +\[128, 64\] ' \
          'blk\.3\.attn_output\.weight +q8_0 +\[256, 128\] ' 'blk\.3\.attn_k_norm\.weight +f32 +\[64\] ' \
          'blk\.5\.attn_q_norm\.weight +f32 +\[64\] ' 'blk\.5\.post_attention_norm\.weight +f32 +\[128\] ' \
          'blk\.5\.post_ffw_norm\.weight +f32 +\[128\] ' 'blk\.5\.inp_gate\.weight +q8_0 +\[128, 32\] ' \
          'blk\.5\.proj\.weight +q8_0 +\[32, 128\] ' 'blk\.5\.post_norm\.weight +f32 +\[128\] ' \
          'blk\.5\.layer_output_scale\.weight +f32 +\[1\] ' 'totals: 102 tensors, 1173638 parameters'; do
    check "gemma4 file has /$re/" hasre "$re" "$TMP/g4.txt"
done
check "gemma4 summary counts the file's parameters" has "1173638 parameters" "$TMP/g4err"
check "gemma4 output is tied (no output.weight)" sh -c "! grep -q ' output.weight' '$TMP/g4.txt'"
check "gemma4 shared layers have no attn_k / attn_v / attn_k_norm" sh -c "! grep -E -q 'blk\.[45]\.attn_(k|v|k_norm)\.' '$TMP/g4.txt'"
# rope_freqs as the converter writes it: 1 for the first quarter of the
# global head's pairs (64 / 8 = 8), 1e30 (unrotated) for the rest
doff=$(sed -n 's/^data offset: *//p' "$TMP/g4.txt")
roff=$(awk '$2 == "rope_freqs.weight" { print $5 }' "$TMP/g4.txt")
rf=$(od -v -A n -t f4 -j $((doff + roff)) -N 128 "$TMP/g4.gguf" | tr -s ' ' '\n' | grep -v '^$' | uniq -c | tr -s ' ' | tr '\n' ,)
check "gemma4 rope_freqs: 8 x 1 then 24 x 1e30 ($rf)" [ "$rf" = " 8 1, 24 1e+30," ]
soff=$(awk '$2 == "blk.0.layer_output_scale.weight" { print $5 }' "$TMP/g4.txt")
scale=$(od -v -A n -t f4 -j $((doff + soff)) -N 4 "$TMP/g4.gguf" | tr -d ' ')
check "gemma4 layer_output_scale is near 1 but seeded ($scale)" awk -v s="$scale" 'BEGIN { exit !(s > 0.5 && s < 1.5 && s != 1) }'
"$BIN" mkmodel $G4 -t 1 -q -o "$TMP/g4t1.gguf"
check "gemma4 bytes do not depend on the thread count" cmp -s "$TMP/g4.gguf" "$TMP/g4t1.gguf"
# --no-global-v: global KV layers keep attn_k (llama.cpp uses K as V)
"$BIN" mkmodel $G4 --no-global-v -q -o "$TMP/g4nv.gguf"
"$BIN" gguf "$TMP/g4nv.gguf" >"$TMP/g4nv.txt" 2>&1
check "--no-global-v: no attn_v on the global layer" sh -c "! grep -q 'blk\.3\.attn_v\.' '$TMP/g4nv.txt'"
check "--no-global-v: the global layer keeps attn_k" has "blk.3.attn_k.weight" "$TMP/g4nv.txt"
check "--no-global-v: sliding layers keep attn_v" has "blk.2.attn_v.weight" "$TMP/g4nv.txt"
# the defaults: four sliding then one global, the last global; window min(512, ctx)
"$BIN" mkmodel --preset tiny --arch gemma4 --layers 7 --ctx 256 -q -o "$TMP/g4d.gguf"; rc=$?
check "mkmodel --preset tiny --arch gemma4 exits 0 (rc $rc)" [ $rc -eq 0 ]
"$BIN" gguf "$TMP/g4d.gguf" >"$TMP/g4d.txt" 2>&1
check "gemma4 default pattern" hasre 'sliding_window_pattern +arr +\[bool x 7\] true, true, true, true, false, true, false$' "$TMP/g4d.txt"
check "gemma4 default window" hasre 'gemma4\.attention\.sliding_window +u32 +256$' "$TMP/g4d.txt"
check "gemma4 default shared_kv_layers 0" hasre 'gemma4\.attention\.shared_kv_layers +u32 +0$' "$TMP/g4d.txt"
check "gemma4 default: no per-layer embeddings" sh -c "! grep -q ' per_layer_' '$TMP/g4d.txt'"
check "gemma4 default: head sizes equal" hasre 'gemma4\.attention\.key_length_swa +u32 +16$' "$TMP/g4d.txt"
"$BIN" mkmodel --preset tiny --arch gemma4 --layers 4 --swa-layers ssss -q -o "$TMP/g4s.gguf"
"$BIN" gguf "$TMP/g4s.gguf" >"$TMP/g4s.txt" 2>&1
check "gemma4 without global layers has no rope_freqs (llama.cpp would refuse it)" sh -c "! grep -q rope_freqs '$TMP/g4s.txt'"
# llama.cpp (tests/ref, as test-oracle-llamacpp finds it) loads every one of
# them and generates 24 tokens (past g4's window of 16); without it this part
# is skipped, unless SPRIG_REQUIRE_REF=1 (CI)
REF=${SPRIG_LLAMACPP_REF:-tests/ref/node_modules}
if command -v node >/dev/null 2>&1 && [ -f "$REF/node-llama-cpp/package.json" ]; then
    for f in g4 g4nv g4d g4s; do
        node tests/ref/llamacpp-oracle.mjs "$TMP/$f.gguf" --prompt 1,100,200 -n 24 -t 1 --top 1 >"$TMP/$f.json" 2>"$TMP/$f.lerr"; rc=$?
        check "llama.cpp loads and runs $f.gguf (rc $rc: $(tail -c 300 "$TMP/$f.lerr"))" [ $rc -eq 0 ]
        check "llama.cpp wrote its tokens for $f.gguf" has '"tokens":[' "$TMP/$f.json"
    done
elif [ "${SPRIG_REQUIRE_REF:-0}" = 1 ]; then
    echo "FAIL (SPRIG_REQUIRE_REF=1): no node or $REF/node-llama-cpp for the gemma4 load check"; fail=1
else
    echo "SKIP: llama.cpp load of the gemma4 files (no node or $REF/node-llama-cpp)"
fi
bad "gemma4 swa-layers of another length" "swa-layers 'ssg' has 3 letters for 4 layers" --arch gemma4 --layers 4 --swa-layers ssg -o "$TMP/x.gguf"
bad "gemma4 swa-layers letters" "swa-layers 'sxg' may hold only s (sliding) and g (global)" --arch gemma4 --layers 3 --swa-layers sxg -o "$TMP/x.gguf"
bad "gemma4 without a sliding layer" "gemma4 needs a sliding layer" --arch gemma4 --layers 3 --swa-layers ggg -o "$TMP/x.gguf"
bad "gemma4 shared-kv leaving one KV layer" "shared-kv 3 must be in [0, layers - 2 = 2]" --arch gemma4 --layers 4 --shared-kv 3 -o "$TMP/x.gguf"
bad "gemma4 shared layer reusing a layer of the other kind" "layer 4 (global) would reuse the cache of layer 3, which is sliding" \
    --arch gemma4 --layers 6 --shared-kv 2 --swa-layers ssssgg -o "$TMP/x.gguf"
bad "gemma4 one layer" "gemma4 needs layers >= 2" --arch gemma4 --layers 1 -o "$TMP/x.gguf"
bad "gemma4 odd head-dim-swa" "head-dim-swa 33 must be even" --arch gemma4 --head-dim-swa 33 -o "$TMP/x.gguf"
bad "gemma4 zero head-dim-swa" "--head-dim-swa: 0 is out of range" --arch gemma4 --head-dim-swa 0 -o "$TMP/x.gguf"
bad "gemma4 kv-heads-global" "heads 4 is not a multiple of kv-heads-global 3" --arch gemma4 --kv-heads-global 3 -o "$TMP/x.gguf"
bad "gemma4 per-layer-embd in blocks" "q8_0 needs per-layer-embd (16) to be a multiple of 32" --arch gemma4 --per-layer-embd 16 --type q8_0 -o "$TMP/x.gguf"
bad "gemma4 flag on llama" "shared-kv is for the gemma4 arch, not llama" --shared-kv 1 -o "$TMP/x.gguf"
bad "gemma4 flag on gemma3" "no-global-v is for the gemma4 arch, not gemma3" --arch gemma3 --no-global-v -o "$TMP/x.gguf"
check "nothing written on bad gemma4 flags" [ ! -e "$TMP/x.gguf" ]

# gemma4-assistant (Gemma 4's MTP drafter), matched to a gemma4 --target as
# llama.cpp pairs them: embedding_length_out = the target's dim, the
# target's tokenizer, window, head sizes and kv heads (its sliding layers
# read the cache of the target's layer n-2, its global ones layer n-1, viewed
# with the assistant's own head_count_kv and key_length(_swa)), no K/V.
"$BIN" mkmodel --preset tiny --arch gemma4 -q -o "$TMP/g4t.gguf"
"$BIN" mkmodel --arch gemma4-assistant --target "$TMP/g4t.gguf" -o "$TMP/as.gguf" 2>"$TMP/aserr"; rc=$?
check "mkmodel --arch gemma4-assistant exits 0 (rc $rc)" [ $rc -eq 0 ]
check "gemma4-assistant summary" has "gemma4-assistant for $TMP/g4t.gguf (dim 64, 2 layers), dim 32, layers 2 (sg), heads 4, ffn 128, vocab 300" "$TMP/aserr"
"$BIN" gguf "$TMP/as.gguf" >"$TMP/as.txt" 2>&1
for re in 'general\.architecture +str +"gemma4-assistant"$' 'gemma4-assistant\.embedding_length +u32 +32$' \
          'gemma4-assistant\.embedding_length_out +u32 +64$' 'gemma4-assistant\.block_count +u32 +2$' \
          'gemma4-assistant\.nextn_predict_layers +u32 +2$' 'gemma4-assistant\.feed_forward_length +u32 +128$' \
          'gemma4-assistant\.context_length +u32 +512$' 'gemma4-assistant\.attention\.head_count +u32 +4$' \
          'gemma4-assistant\.attention\.head_count_kv +arr +\[i32 x 2\] 2, 2$' \
          'gemma4-assistant\.attention\.key_length +u32 +16$' 'gemma4-assistant\.attention\.value_length_swa +u32 +16$' \
          'gemma4-assistant\.rope\.dimension_count +u32 +16$' 'gemma4-assistant\.rope\.dimension_count_swa +u32 +16$' \
          'gemma4-assistant\.rope\.freq_base +f32 +1000000$' 'gemma4-assistant\.rope\.freq_base_swa +f32 +10000$' \
          'gemma4-assistant\.attention\.layer_norm_rms_epsilon +f32 +9\.99' \
          'gemma4-assistant\.attention\.sliding_window +u32 +512$' \
          'gemma4-assistant\.attention\.sliding_window_pattern +arr +\[bool x 2\] true, false$' \
          ' token_embd\.weight +f32 +\[32, 300\] ' ' output_norm\.weight +f32 +\[32\] ' \
          ' nextn\.pre_projection\.weight +f32 +\[128, 32\] ' ' nextn\.post_projection\.weight +f32 +\[32, 64\] ' \
          ' rope_freqs\.weight +f32 +\[8\] ' 'blk\.1\.attn_norm\.weight +f32 +\[32\] ' 'blk\.1\.attn_q\.weight +f32 +\[32, 64\] ' \
          'blk\.1\.attn_q_norm\.weight +f32 +\[16\] ' 'blk\.1\.attn_output\.weight +f32 +\[64, 32\] ' \
          'blk\.1\.post_attention_norm\.weight +f32 +\[32\] ' 'blk\.1\.ffn_norm\.weight +f32 +\[32\] ' \
          'blk\.1\.ffn_gate\.weight +f32 +\[32, 128\] ' 'blk\.1\.ffn_up\.weight +f32 +\[32, 128\] ' \
          'blk\.1\.ffn_down\.weight +f32 +\[128, 32\] ' 'blk\.1\.post_ffw_norm\.weight +f32 +\[32\] ' \
          'blk\.1\.layer_output_scale\.weight +f32 +\[1\] ' 'totals: 27 tensors, 48842 parameters'; do
    check "gemma4-assistant file has /$re/" hasre "$re" "$TMP/as.txt"
done
check "gemma4-assistant summary counts the file's parameters" has "48842 parameters" "$TMP/aserr"
check "gemma4-assistant has no K / V / output.weight / masked tensors" \
    sh -c "! grep -E -q 'attn_k|attn_v| output\.weight |masked_embd' '$TMP/as.txt'"
grep -E '^ +[0-9]+ +tokenizer\.' "$TMP/as.txt" | sed 's/^ *[0-9]* *//' >"$TMP/as.tok"
"$BIN" gguf "$TMP/g4t.gguf" 2>&1 | grep -E '^ +[0-9]+ +tokenizer\.' | sed 's/^ *[0-9]* *//' >"$TMP/g4t.tok"
check "gemma4-assistant carries the target's tokenizer keys" cmp -s "$TMP/as.tok" "$TMP/g4t.tok"
check "the target's tokenizer is not empty" hasre 'tokenizer\.ggml\.tokens +arr +\[str x 300\]' "$TMP/as.tok"
# a richer target: shared KV (its layers 4 and 5 reuse 2 and 3), head sizes 32 / 64, kv heads 4 / 1,
# window 16; a three-layer q8_0 assistant with its own head count and the two masked-embedding tensors
G4T="--preset tiny --arch gemma4 --dim 128 --layers 6 --heads 4 --kv-heads 4 --kv-heads-global 1 --head-dim 64
     --head-dim-swa 32 --ffn 256 --window 16 --shared-kv 2 --per-layer-embd 32 --swa-layers sssgsg --type q8_0"
"$BIN" mkmodel $G4T -q -o "$TMP/g4t2.gguf"
AS2="--arch gemma4-assistant --target $TMP/g4t2.gguf --dim 64 --layers 3 --swa-layers ssg --heads 8 --ffn 192 --type q8_0 --masked-embd"
"$BIN" mkmodel $AS2 -o "$TMP/as2.gguf" 2>"$TMP/as2err"; rc=$?
check "gemma4-assistant of a shared-KV target exits 0 (rc $rc)" [ $rc -eq 0 ]
"$BIN" gguf "$TMP/as2.gguf" >"$TMP/as2.txt" 2>&1
for re in 'gemma4-assistant\.embedding_length +u32 +64$' 'gemma4-assistant\.embedding_length_out +u32 +128$' \
          'gemma4-assistant\.block_count +u32 +3$' 'gemma4-assistant\.nextn_predict_layers +u32 +3$' \
          'gemma4-assistant\.attention\.head_count +u32 +8$' 'gemma4-assistant\.attention\.head_count_kv +arr +\[i32 x 3\] 4, 4, 1$' \
          'gemma4-assistant\.attention\.key_length +u32 +64$' 'gemma4-assistant\.attention\.key_length_swa +u32 +32$' \
          'gemma4-assistant\.rope\.dimension_count +u32 +64$' 'gemma4-assistant\.rope\.dimension_count_swa +u32 +32$' \
          'gemma4-assistant\.attention\.sliding_window +u32 +16$' \
          'gemma4-assistant\.attention\.sliding_window_pattern +arr +\[bool x 3\] true, true, false$' \
          'general\.file_type +u32 +7$' ' token_embd\.weight +q8_0 +\[64, 300\] ' \
          ' nextn\.pre_projection\.weight +q8_0 +\[256, 64\] ' ' nextn\.post_projection\.weight +q8_0 +\[64, 128\] ' \
          ' masked_embd_centroids\.weight +f32 +\[1\] ' ' masked_embd_ordering +f32 +\[1\] ' ' rope_freqs\.weight +f32 +\[32\] ' \
          'blk\.0\.attn_q\.weight +q8_0 +\[64, 256\] ' 'blk\.0\.attn_q_norm\.weight +f32 +\[32\] ' \
          'blk\.2\.attn_q\.weight +q8_0 +\[64, 512\] ' 'blk\.2\.attn_q_norm\.weight +f32 +\[64\] ' \
          'blk\.2\.attn_output\.weight +q8_0 +\[512, 64\] ' 'blk\.2\.ffn_down\.weight +q8_0 +\[192, 64\] ' \
          'totals: 40 tensors, 286437 parameters'; do
    check "gemma4-assistant (shared-KV target) has /$re/" hasre "$re" "$TMP/as2.txt"
done
check "gemma4-assistant summary counts the file's parameters (masked tensors too)" has "286437 parameters" "$TMP/as2err"
doff=$(sed -n 's/^data offset: *//p' "$TMP/as2.txt")
roff=$(awk '$2 == "rope_freqs.weight" { print $5 }' "$TMP/as2.txt")
rf=$(od -v -A n -t f4 -j $((doff + roff)) -N 128 "$TMP/as2.gguf" | tr -s ' ' '\n' | grep -v '^$' | uniq -c | tr -s ' ' | tr '\n' ,)
check "gemma4-assistant rope_freqs as the target's: 8 x 1 then 24 x 1e30 ($rf)" [ "$rf" = " 8 1, 24 1e+30," ]
"$BIN" mkmodel $AS2 -t 1 -q -o "$TMP/as2t1.gguf"
check "gemma4-assistant bytes do not depend on the thread count" cmp -s "$TMP/as2.gguf" "$TMP/as2t1.gguf"
"$BIN" mkmodel $AS2 --seed 2 -q -o "$TMP/as2s2.gguf"
check "gemma4-assistant: another seed, other bytes" sh -c "! cmp -s '$TMP/as2.gguf' '$TMP/as2s2.gguf'"
# a target whose last layer is sliding: the default assistant is all sliding (it mirrors the target)
"$BIN" mkmodel --preset tiny --arch gemma4 --layers 4 --swa-layers ssss -q -o "$TMP/g4t3.gguf"
"$BIN" mkmodel --arch gemma4-assistant --target "$TMP/g4t3.gguf" -q -o "$TMP/as3.gguf"; rc=$?
check "gemma4-assistant of an all-sliding target exits 0 (rc $rc)" [ $rc -eq 0 ]
"$BIN" gguf "$TMP/as3.gguf" >"$TMP/as3.txt" 2>&1
check "all-sliding target: the default pattern is all sliding" hasre 'sliding_window_pattern +arr +\[bool x 2\] true, true$' "$TMP/as3.txt"
check "all-sliding assistant: no rope_freqs (no global layer reads it)" sh -c "! grep -q rope_freqs '$TMP/as3.txt'"
# llama.cpp (tests/ref's node-llama-cpp) loads every assistant: its loader checks each key, tensor name and
# shape (node-llama-cpp cannot make the assistant's context: that needs the target's as ctx_other, which
# only llama.cpp's speculative tools pass; see SPRIG_LLAMA_SPECULATIVE below)
if command -v node >/dev/null 2>&1 && [ -f "$REF/node-llama-cpp/package.json" ]; then
    cat >"$TMP/asst-load.mjs" <<'EOF'
import { resolve, join } from "node:path";
import { pathToFileURL } from "node:url";
const [ref, ...files] = process.argv.slice(2);
const { getLlama } = await import(pathToFileURL(join(resolve(ref), "node-llama-cpp", "dist", "index.js")).href);
const llama = await getLlama({ gpu: false, build: "never", logLevel: "error" });
for (const f of files) {
    const m = await llama.loadModel({ modelPath: resolve(f), gpuLayers: 0 });
    console.log(`${f}: ${m.fileInfo.metadata.general.architecture} loaded`);
    await m.dispose();
}
await llama.dispose();
EOF
    for f in as as2 as3; do
        node "$TMP/asst-load.mjs" "$REF" "$TMP/$f.gguf" >"$TMP/$f.lout" 2>"$TMP/$f.lerr"; rc=$?
        check "llama.cpp loads $f.gguf (rc $rc: $(tail -c 300 "$TMP/$f.lerr"))" [ $rc -eq 0 ]
        check "llama.cpp read $f.gguf as gemma4-assistant" has "gemma4-assistant loaded" "$TMP/$f.lout"
    done
elif [ "${SPRIG_REQUIRE_REF:-0}" = 1 ]; then
    echo "FAIL (SPRIG_REQUIRE_REF=1): no node or $REF/node-llama-cpp for the gemma4-assistant load check"; fail=1
else
    echo "SKIP: llama.cpp load of the gemma4-assistant files (no node or $REF/node-llama-cpp)"
fi
# llama.cpp drafting with each assistant against its target (draft-mtp: the assistant's context made with
# the target's as ctx_other, sharing its KV cache), when a llama-speculative-simple is given
SPEC=${SPRIG_LLAMA_SPECULATIVE:-}
if [ -n "$SPEC" ] && [ -x "$SPEC" ]; then
    for pair in g4t:as g4t2:as2 g4t3:as3; do
        t=${pair%%:*}; a=${pair#*:}
        "$SPEC" -m "$TMP/$t.gguf" -md "$TMP/$a.gguf" --spec-type draft-mtp -p "hello world" -n 24 -t 1 -c 256 --temp 0 \
            >"$TMP/$a.sout" 2>"$TMP/$a.serr"; rc=$?
        nd=$(sed -n 's/.*n_drafted *= *\([0-9]*\).*/\1/p' "$TMP/$a.serr")
        check "llama.cpp drafts with $a.gguf for $t.gguf (rc $rc, n_drafted ${nd:-none})" test "$rc" -eq 0 -a "${nd:-0}" -gt 0
    done
else
    echo "SKIP: llama.cpp draft-mtp run of the gemma4-assistant files (set SPRIG_LLAMA_SPECULATIVE to a llama-speculative-simple)"
fi
# refusals: each names the flag or the target's layer
bad "gemma4-assistant without --target" "--arch gemma4-assistant needs --target" --arch gemma4-assistant -o "$TMP/x.gguf"
bad "gemma4-assistant of a llama target" "--target: $TMP/tiny-f32.gguf: general.architecture is 'llama', not gemma4" \
    --arch gemma4-assistant --target "$TMP/tiny-f32.gguf" -o "$TMP/x.gguf"
bad "--target on another arch" "--target: for --arch gemma4-assistant only" --arch gemma4 --target "$TMP/g4t.gguf" -o "$TMP/x.gguf"
bad "--masked-embd on another arch" "--masked-embd: for --arch gemma4-assistant only" --masked-embd -o "$TMP/x.gguf"
bad "gemma4-assistant of a target whose layer n-2 is global" "the target's layer 4 (n_layer - 2) is global" \
    --arch gemma4-assistant --target "$TMP/g4.gguf" -o "$TMP/x.gguf"
bad "gemma4-assistant global layer over a sliding target layer n-1" "the target's layer 3 (n_layer - 1) is sliding" \
    --arch gemma4-assistant --target "$TMP/g4t3.gguf" --swa-layers sg -o "$TMP/x.gguf"
bad "gemma4-assistant as wide as its target" "dim 64 equals the target's embedding_length" \
    --arch gemma4-assistant --target "$TMP/g4t.gguf" --dim 64 -o "$TMP/x.gguf"
bad "gemma4-assistant heads over the target's kv heads" "heads 3 is not a multiple of the target's 2 kv heads (its layer 0" \
    --arch gemma4-assistant --target "$TMP/g4t.gguf" --heads 3 -o "$TMP/x.gguf"
bad "gemma4-assistant without a sliding layer" "gemma4-assistant needs a sliding layer" \
    --arch gemma4-assistant --target "$TMP/g4t.gguf" --swa-layers gg -o "$TMP/x.gguf"
bad "gemma4-assistant swa-layers of another length" "swa-layers 'sgs' has 3 letters for 2 layers" \
    --arch gemma4-assistant --target "$TMP/g4t.gguf" --swa-layers sgs -o "$TMP/x.gguf"
bad "gemma4-assistant q8_0 rows" "q8_0 needs dim (48) and ffn (192) to be multiples of 32" \
    --arch gemma4-assistant --target "$TMP/g4t.gguf" --dim 48 --type q8_0 -o "$TMP/x.gguf"
bad "gemma4-assistant takes the window from the target" "--window: not for gemma4-assistant" \
    --arch gemma4-assistant --target "$TMP/g4t.gguf" --window 8 -o "$TMP/x.gguf"
bad "gemma4-assistant takes the vocabulary from the target" "--vocab-from: not for gemma4-assistant" \
    --arch gemma4-assistant --target "$TMP/g4t.gguf" --vocab-from "$TMP/g4t.gguf" -o "$TMP/x.gguf"
bad "gemma4-assistant with a preset" "--preset: gemma4-assistant takes its shape from --target" \
    --preset small --arch gemma4-assistant --target "$TMP/g4t.gguf" -o "$TMP/x.gguf"
check "nothing written on bad gemma4-assistant flags" [ ! -e "$TMP/x.gguf" ]
"$BIN" mkmodel --arch gemma4-assistant --target "$TMP/none.gguf" -o "$TMP/x.gguf" 2>"$TMP/aerr"; rc=$?
check "gemma4-assistant of a missing target exits 1 (rc $rc)" [ $rc -eq 1 ]
check "the missing target is named (--target: ...none.gguf)" hasre "--target: .*none\.gguf" "$TMP/aerr"

# qwen35 layout (dense Qwen 3.5), as llama.cpp's qwen35 loader reads it:
# block_count counts the MTP layer (nextn_predict_layers 1), every 4th layer
# (full_attention_interval) a gated full-attention layer (attn_q = per head
# query then gate rows, q/k norms), the others gated-delta-net layers
# (attn_qkv, attn_gate, ssm_*; ssm_a without .weight), the MTP layer
# (blk.N) a full-attention layer plus nextn.*; --recurrent-layers writes the
# bool array instead; tests/ref's llama.cpp loads and runs them (below).
Q35="--preset tiny --arch qwen35 --dim 64 --layers 4 --heads 4 --kv-heads 2 --head-dim 32 --ssm-state 32 --ssm-v-heads 4
     --ssm-k-heads 2 --mtp --vocab 512 --type q8_0"
"$BIN" mkmodel $Q35 -o "$TMP/q35.gguf" 2>"$TMP/q35err"; rc=$?
check "mkmodel --arch qwen35 exits 0 (rc $rc)" [ $rc -eq 0 ]
check "qwen35 summary" has "qwen35, dim 64, layers 4 (rrra) + MTP, heads 4/2, ssm state 32, k/v heads 2/4, ffn 128, vocab 512, q8_0, 333432 parameters" "$TMP/q35err"
"$BIN" gguf "$TMP/q35.gguf" >"$TMP/q35.txt" 2>&1
for re in 'general\.architecture +str +"qwen35"$' 'qwen35\.block_count +u32 +5$' 'qwen35\.nextn_predict_layers +u32 +1$' \
          'qwen35\.embedding_length +u32 +64$' 'qwen35\.feed_forward_length +u32 +128$' 'qwen35\.context_length +u32 +512$' \
          'qwen35\.attention\.head_count +u32 +4$' 'qwen35\.attention\.head_count_kv +u32 +2$' \
          'qwen35\.attention\.key_length +u32 +32$' 'qwen35\.attention\.value_length +u32 +32$' \
          'qwen35\.attention\.layer_norm_rms_epsilon +f32 +9\.99' 'qwen35\.rope\.freq_base +f32 +10000000$' \
          'qwen35\.rope\.dimension_count +u32 +8$' 'qwen35\.rope\.dimension_sections +arr +\[i32 x 4\] 2, 1, 1, 0$' \
          'qwen35\.ssm\.conv_kernel +u32 +4$' 'qwen35\.ssm\.state_size +u32 +32$' 'qwen35\.ssm\.group_count +u32 +2$' \
          'qwen35\.ssm\.time_step_rank +u32 +4$' 'qwen35\.ssm\.inner_size +u32 +128$' 'qwen35\.full_attention_interval +u32 +4$' \
          ' token_embd\.weight +q8_0 +\[64, 512\] ' ' output_norm\.weight +f32 +\[64\] ' \
          'blk\.0\.attn_norm\.weight +f32 +\[64\] ' 'blk\.0\.post_attention_norm\.weight +f32 +\[64\] ' \
          'blk\.0\.attn_qkv\.weight +q8_0 +\[64, 256\] ' 'blk\.0\.attn_gate\.weight +q8_0 +\[64, 128\] ' \
          'blk\.0\.ssm_conv1d\.weight +f32 +\[4, 256\] ' 'blk\.0\.ssm_dt\.bias +f32 +\[4\] ' 'blk\.0\.ssm_a +f32 +\[4\] ' \
          'blk\.0\.ssm_beta\.weight +q8_0 +\[64, 4\] ' 'blk\.0\.ssm_alpha\.weight +q8_0 +\[64, 4\] ' \
          'blk\.0\.ssm_norm\.weight +f32 +\[32\] ' 'blk\.0\.ssm_out\.weight +q8_0 +\[128, 64\] ' \
          'blk\.2\.ffn_gate\.weight +q8_0 +\[64, 128\] ' 'blk\.2\.ffn_down\.weight +q8_0 +\[128, 64\] ' \
          'blk\.3\.attn_q\.weight +q8_0 +\[64, 256\] ' 'blk\.3\.attn_k\.weight +q8_0 +\[64, 64\] ' \
          'blk\.3\.attn_v\.weight +q8_0 +\[64, 64\] ' 'blk\.3\.attn_output\.weight +q8_0 +\[128, 64\] ' \
          'blk\.3\.attn_q_norm\.weight +f32 +\[32\] ' 'blk\.3\.attn_k_norm\.weight +f32 +\[32\] ' \
          'blk\.4\.attn_q\.weight +q8_0 +\[64, 256\] ' 'blk\.4\.attn_k_norm\.weight +f32 +\[32\] ' \
          'blk\.4\.ffn_up\.weight +q8_0 +\[64, 128\] ' 'blk\.4\.nextn\.eh_proj\.weight +q8_0 +\[128, 64\] ' \
          'blk\.4\.nextn\.enorm\.weight +f32 +\[64\] ' 'blk\.4\.nextn\.hnorm\.weight +f32 +\[64\] ' \
          'blk\.4\.nextn\.shared_head_norm\.weight +f32 +\[64\] ' 'totals: 70 tensors, 333432 parameters'; do
    check "qwen35 file has /$re/" hasre "$re" "$TMP/q35.txt"
done
check "qwen35 output is tied (no output.weight)" sh -c "! grep -q ' output\.weight' '$TMP/q35.txt'"
check "qwen35 layers 0-2 are linear attention only" sh -c "! grep -E -q 'blk\.[0-2]\.attn_(q|k|v|output|q_norm|k_norm)\.' '$TMP/q35.txt'"
check "qwen35 full-attention and MTP layers have no ssm tensors" sh -c "! grep -E -q 'blk\.[34]\.(ssm_|attn_qkv|attn_gate)' '$TMP/q35.txt'"
check "qwen35 nextn tensors only on the MTP layer" sh -c "! grep -E -q 'blk\.[0-3]\.nextn\.' '$TMP/q35.txt'"
check "qwen35 without --mtp-head: no nextn.embed_tokens / shared_head_head" sh -c "! grep -E -q 'embed_tokens|shared_head_head' '$TMP/q35.txt'"
# values: ssm_a = -exp(A_log) < 0 (what llama.cpp multiplies softplus(alpha + dt_bias) by); norms are
# multipliers around 1 (the converter stores Qwen's 1 + w), seeded, not all 1
doff=$(sed -n 's/^data offset: *//p' "$TMP/q35.txt")
f4() { off=$(awk -v n="$1" '$2 == n { print $5 }' "$TMP/q35.txt"); od -v -A n -t f4 -j $((doff + off)) -N "$2" "$TMP/q35.gguf"; }
ssma=$(f4 blk.0.ssm_a 16 | tr -s ' ' '\n' | grep -v '^$' | tr '\n' ' ')
check "qwen35 ssm_a is negative, between -4 and -0.02 ($ssma)" awk -v s="$ssma" 'BEGIN { n = split(s, a, " "); ok = n == 4
    for (i = 1; i <= n; i++) if (!(a[i] < -0.02 && a[i] > -4)) ok = 0; exit !ok }'
for t in blk.0.ssm_norm.weight blk.3.attn_q_norm.weight blk.0.attn_norm.weight output_norm.weight blk.4.nextn.enorm.weight; do
    v=$(f4 $t 32 | tr -s ' ' '\n' | grep -v '^$' | tr '\n' ' ')
    check "qwen35 $t is around 1 but seeded ($v)" awk -v s="$v" 'BEGIN { n = split(s, a, " "); ok = n == 8; one = 0
        for (i = 1; i <= n; i++) { if (!(a[i] > 0.3 && a[i] < 1.7)) ok = 0; if (a[i] == 1) one++ } exit !(ok && one < n) }'
done
"$BIN" mkmodel $Q35 -t 1 -q -o "$TMP/q35t1.gguf"
check "qwen35 bytes do not depend on the thread count" cmp -s "$TMP/q35.gguf" "$TMP/q35t1.gguf"
# --recurrent-layers: attention.recurrent_layers (a bool per block, the MTP layer false), no interval key;
# v heads 6 over k heads 3, conv kernel 3, the MTP layer's own embedding and head
Q35R="--preset tiny --arch qwen35 --layers 5 --recurrent-layers rarra --ssm-state 16 --ssm-v-heads 6 --ssm-k-heads 3
      --ssm-conv 3 --mtp --mtp-head --untied --vocab 512"
"$BIN" mkmodel $Q35R -o "$TMP/q35r.gguf" 2>"$TMP/q35rerr"; rc=$?
check "mkmodel qwen35 --recurrent-layers exits 0 (rc $rc)" [ $rc -eq 0 ]
"$BIN" gguf "$TMP/q35r.gguf" >"$TMP/q35r.txt" 2>&1
for re in 'qwen35\.attention\.recurrent_layers +arr +\[bool x 6\] true, false, true, true, false, false$' \
          'qwen35\.block_count +u32 +6$' 'qwen35\.ssm\.conv_kernel +u32 +3$' 'qwen35\.ssm\.group_count +u32 +3$' \
          'qwen35\.ssm\.time_step_rank +u32 +6$' 'qwen35\.ssm\.inner_size +u32 +96$' \
          ' output\.weight +f32 +\[64, 512\] ' 'blk\.1\.attn_q\.weight +f32 +\[64, 128\] ' \
          'blk\.3\.attn_qkv\.weight +f32 +\[64, 192\] ' 'blk\.3\.ssm_conv1d\.weight +f32 +\[3, 192\] ' \
          'blk\.3\.ssm_a +f32 +\[6\] ' 'blk\.3\.ssm_out\.weight +f32 +\[96, 64\] ' \
          'blk\.5\.nextn\.embed_tokens\.weight +f32 +\[64, 512\] ' 'blk\.5\.nextn\.shared_head_head\.weight +f32 +\[64, 512\] '; do
    check "qwen35 --recurrent-layers file has /$re/" hasre "$re" "$TMP/q35r.txt"
done
check "qwen35 --recurrent-layers: no full_attention_interval" sh -c "! grep -q full_attention_interval '$TMP/q35r.txt'"
tot=$(sed -n 's/^totals: [0-9]* tensors, \([0-9]*\) parameters.*/\1/p' "$TMP/q35r.txt")
check "qwen35 summary counts the file's parameters ($tot)" has "$tot parameters" "$TMP/q35rerr"
# the defaults: tiny's two layers as linear then full attention (the interval is the layer count when
# under 4), a quarter of the head rotated, the pairs spread over IMROPE's sections, tied, no MTP
"$BIN" mkmodel --preset tiny --arch qwen35 -o "$TMP/q35d.gguf" 2>"$TMP/q35derr"; rc=$?
check "mkmodel --preset tiny --arch qwen35 exits 0 (rc $rc)" [ $rc -eq 0 ]
check "qwen35 default layers" has "layers 2 (ra), heads 4/2, ssm state 32, k/v heads 4/4" "$TMP/q35derr"
"$BIN" gguf "$TMP/q35d.gguf" >"$TMP/q35d.txt" 2>&1
for re in 'qwen35\.full_attention_interval +u32 +2$' 'qwen35\.rope\.dimension_count +u32 +4$' \
          'qwen35\.rope\.dimension_sections +arr +\[i32 x 4\] 1, 1, 0, 0$' 'qwen35\.block_count +u32 +2$'; do
    check "qwen35 default file has /$re/" hasre "$re" "$TMP/q35d.txt"
done
check "qwen35 default: no MTP layer" sh -c "! grep -E -q 'nextn' '$TMP/q35d.txt'"
"$BIN" mkmodel --preset qwen35-0.8b --layers 4 --vocab 1000 --type q8_0 -o "$TMP/q35p.gguf" 2>"$TMP/q35perr"; rc=$?
check "mkmodel --preset qwen35-0.8b (4 layers) exits 0 (rc $rc)" [ $rc -eq 0 ]
"$BIN" gguf "$TMP/q35p.gguf" >"$TMP/q35p.txt" 2>&1
for re in 'qwen35\.embedding_length +u32 +1024$' 'qwen35\.feed_forward_length +u32 +3584$' 'qwen35\.block_count +u32 +5$' \
          'qwen35\.attention\.head_count +u32 +8$' 'qwen35\.attention\.head_count_kv +u32 +2$' 'qwen35\.attention\.key_length +u32 +256$' \
          'qwen35\.rope\.dimension_count +u32 +64$' 'qwen35\.rope\.dimension_sections +arr +\[i32 x 4\] 11, 11, 10, 0$' \
          'qwen35\.rope\.freq_base +f32 +10000000$' 'qwen35\.ssm\.state_size +u32 +128$' 'qwen35\.ssm\.group_count +u32 +16$' \
          'qwen35\.ssm\.time_step_rank +u32 +16$' 'qwen35\.ssm\.inner_size +u32 +2048$' 'qwen35\.context_length +u32 +262144$' \
          'blk\.3\.attn_q\.weight +q8_0 +\[1024, 4096\] ' 'blk\.0\.attn_qkv\.weight +q8_0 +\[1024, 6144\] '; do
    check "qwen35-0.8b preset has /$re/" hasre "$re" "$TMP/q35p.txt"
done
check "qwen35-0.8b preset has the MTP layer" hasre 'qwen35\.nextn_predict_layers +u32 +1$' "$TMP/q35p.txt"
"$BIN" mkmodel --preset qwen35-0.8b --layers 4 --vocab 1000 --type q8_0 --no-mtp -q -o "$TMP/q35pn.gguf"
"$BIN" gguf "$TMP/q35pn.gguf" >"$TMP/q35pn.txt" 2>&1
check "--no-mtp: block_count 4" hasre 'qwen35\.block_count +u32 +4$' "$TMP/q35pn.txt"
check "--no-mtp: no nextn key or tensor" sh -c "! grep -q nextn '$TMP/q35pn.txt'"
if command -v node >/dev/null 2>&1 && [ -f "$REF/node-llama-cpp/package.json" ]; then
    "$BIN" mkmodel $Q35 --type f32 --std 0.1 -q -o "$TMP/q35f.gguf"
    "$BIN" mkmodel $Q35 --type f16 --std 0.1 -q -o "$TMP/q35h.gguf"
    for f in q35 q35f q35h q35r q35d q35p; do
        node tests/ref/llamacpp-oracle.mjs "$TMP/$f.gguf" --prompt 1,100,200,250 -n 16 -t 1 --top 1 >"$TMP/$f.json" 2>"$TMP/$f.lerr"; rc=$?
        check "llama.cpp loads and runs $f.gguf (rc $rc: $(tail -c 300 "$TMP/$f.lerr"))" [ $rc -eq 0 ]
        check "llama.cpp wrote its tokens for $f.gguf" has '"tokens":[' "$TMP/$f.json"
    done
elif [ "${SPRIG_REQUIRE_REF:-0}" = 1 ]; then
    echo "FAIL (SPRIG_REQUIRE_REF=1): no node or $REF/node-llama-cpp for the qwen35 load check"; fail=1
else
    echo "SKIP: llama.cpp load of the qwen35 files (no node or $REF/node-llama-cpp)"
fi
# llama.cpp drafting with the built-in MTP layer (draft-mtp loads it: node-llama-cpp skips MTP tensors)
if [ -n "$SPEC" ] && [ -x "$SPEC" ]; then
    for f in q35 q35r; do
        "$SPEC" -m "$TMP/$f.gguf" --spec-type draft-mtp -p "hello world" -n 24 -t 1 -c 256 --temp 0 --ignore-eos \
            >"$TMP/$f.sout" 2>"$TMP/$f.serr"; rc=$?
        nd=$(sed -n 's/.*n_drafted *= *\([0-9]*\).*/\1/p' "$TMP/$f.serr")
        check "llama.cpp drafts with the MTP layer of $f.gguf (rc $rc, n_drafted ${nd:-none})" test "$rc" -eq 0 -a "${nd:-0}" -gt 0
    done
else
    echo "SKIP: llama.cpp draft-mtp run of the qwen35 MTP files (set SPRIG_LLAMA_SPECULATIVE to a llama-speculative-simple)"
fi
bad "qwen35 recurrent-layers of another length" "recurrent-layers 'rra' has 3 letters for 4 layers" --arch qwen35 --layers 4 --recurrent-layers rra -o "$TMP/x.gguf"
bad "qwen35 recurrent-layers letters" "recurrent-layers 'rxa' may hold only r (linear attention) and a (full attention)" \
    --arch qwen35 --layers 3 --recurrent-layers rxa -o "$TMP/x.gguf"
bad "qwen35 recurrent-layers and an interval" "recurrent-layers and full-attn-interval both say" \
    --arch qwen35 --layers 2 --recurrent-layers ra --full-attn-interval 2 -o "$TMP/x.gguf"
bad "qwen35 without a full-attention layer" "qwen35 needs a linear-attention and a full-attention layer (llama.cpp aborts without either); full-attn-interval 4 makes all 3 layer(s) linear" \
    --arch qwen35 --layers 3 --full-attn-interval 4 -o "$TMP/x.gguf"
bad "qwen35 without a linear-attention layer" "recurrent-layers 'aa' makes all 2 layer(s) full attention" \
    --arch qwen35 --layers 2 --recurrent-layers aa -o "$TMP/x.gguf"
bad "qwen35 one layer" "the default (4, or layers when fewer) full-attn-interval 1 makes all 1 layer(s) full attention" --arch qwen35 --layers 1 -o "$TMP/x.gguf"
bad "qwen35 interval 0" "--full-attn-interval: 0 is out of range" --arch qwen35 --full-attn-interval 0 -o "$TMP/x.gguf"
bad "qwen35 conv kernel 0" "--ssm-conv: 0 is out of range" --arch qwen35 --ssm-conv 0 -o "$TMP/x.gguf"
bad "qwen35 state size 0" "--ssm-state: 0 is out of range" --arch qwen35 --ssm-state 0 -o "$TMP/x.gguf"
bad "qwen35 k heads not dividing v heads" "ssm-v-heads 6 is not a multiple of ssm-k-heads 4" \
    --arch qwen35 --ssm-v-heads 6 --ssm-k-heads 4 -o "$TMP/x.gguf"
bad "qwen35 q8_0 needs ssm_out rows of 32" "q8_0 needs ssm-state x ssm-v-heads (20 x 4) to be a multiple of 32" \
    --arch qwen35 --ssm-state 20 --type q8_0 -o "$TMP/x.gguf"
bad "qwen35 odd rot" "rot 3 must be even and in [2, head size 16]" --arch qwen35 --rot 3 -o "$TMP/x.gguf"
bad "qwen35 rope sections past the head" "rope-sections 8,8,8,0: the first three must not all be 0 and the four may add up to the head size 16 at most" \
    --arch qwen35 --rope-sections 8,8,8,0 -o "$TMP/x.gguf"
bad "qwen35 rope sections not four" "--rope-sections: '1,2' is not four integers" --arch qwen35 --rope-sections 1,2 -o "$TMP/x.gguf"
bad "qwen35 mtp-head without mtp" "mtp-head needs mtp" --arch qwen35 --mtp-head -o "$TMP/x.gguf"
bad "qwen35 flag on llama" "mtp is for the qwen35 arch, not llama" --mtp -o "$TMP/x.gguf"
bad "qwen35 flag on gemma4" "ssm-state is for the qwen35 arch, not gemma4" --arch gemma4 --ssm-state 16 -o "$TMP/x.gguf"
bad "gemma4 flag on qwen35" "swa-layers is for the gemma4 arch, not qwen35" --arch qwen35 --swa-layers sg -o "$TMP/x.gguf"
check "nothing written on bad qwen35 flags" [ ! -e "$TMP/x.gguf" ]

# qwen3moe: the expert flags, their defaults and their refusals
"$BIN" mkmodel -q --arch qwen3moe --dim 64 --heads 4 --kv-heads 2 --ffn 96 --layers 2 --vocab 300 --experts 6 --experts-used 3 \
    --expert-ffn 48 -o "$TMP/moe.gguf" >"$TMP/out" 2>&1; rc=$?
check "qwen3moe exits 0 (rc $rc)" [ $rc -eq 0 ]
"$BIN" gguf "$TMP/moe.gguf" >"$TMP/moe.txt" 2>&1
check "qwen3moe expert_count 6" grep -E -q 'qwen3moe\.expert_count +u32 +6$' "$TMP/moe.txt"
check "qwen3moe expert_used_count 3" grep -E -q 'qwen3moe\.expert_used_count +u32 +3$' "$TMP/moe.txt"
check "qwen3moe expert_feed_forward_length 48" grep -E -q 'qwen3moe\.expert_feed_forward_length +u32 +48$' "$TMP/moe.txt"
check "qwen3moe router F32 [64, 6]" grep -E -q 'blk\.1\.ffn_gate_inp\.weight +f32 +\[64, 6\]' "$TMP/moe.txt"
check "qwen3moe experts [48, 64, 6]" grep -E -q 'blk\.1\.ffn_down_exps\.weight +f32 +\[48, 64, 6\]' "$TMP/moe.txt"
check "qwen3moe has no dense FFN" sh -c "! grep -q 'ffn_gate\.weight' '$TMP/moe.txt'"
"$BIN" run -m "$TMP/moe.gguf" -n 8 --temp 0 -q >/dev/null 2>"$TMP/err"; rc=$?
check "qwen3moe runs (rc $rc)" [ $rc -eq 0 ]
bad "experts on llama" "--experts, --experts-used, --expert-ffn and --shared-expert-ffn are for --arch qwen3moe or qwen35moe, not llama" \
    --experts 4 -o "$TMP/x.gguf"
bad "shared expert on qwen3moe" "--shared-expert-ffn is for --arch qwen35moe (qwen3moe has no shared expert)" --arch qwen3moe \
    --shared-expert-ffn 64 -o "$TMP/x.gguf"
bad "experts-used above experts" "experts-used 5 is out of range [1, experts = 4]" --arch qwen3moe --experts 4 --experts-used 5 -o "$TMP/x.gguf"
bad "zero experts" "--experts: 0 is out of range [1, 512]" --arch qwen3moe --experts 0 -o "$TMP/x.gguf"
bad "expert scales on gemma4" "--expert-scales is for --arch qwen3moe or qwen35moe, not gemma4" --arch gemma4 --experts 4 \
    --expert-scales -o "$TMP/x.gguf"
"$BIN" mkmodel --arch qwen3moe --dim 64 --layers 2 --heads 2 --kv-heads 1 --ffn 96 --vocab 300 --experts 6 --expert-ffn 48 \
    --expert-scales -o "$TMP/moes.gguf" >/dev/null 2>&1
"$BIN" gguf "$TMP/moes.gguf" >"$TMP/moes.txt" 2>&1
check "qwen3moe --expert-scales writes ffn_{gate,up,down}_exps.scale [6]" \
    sh -c "[ \$(grep -E -c 'blk\.[01]\.ffn_(gate|up|down)_exps\.scale +f32 +\[6\]' '$TMP/moes.txt') -eq 6 ]"
check "nothing written on bad qwen3moe flags" [ ! -e "$TMP/x.gguf" ]

[ $fail -eq 0 ] && echo "test-cli-mkmodel: ok"
exit $fail
