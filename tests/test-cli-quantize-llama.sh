#!/bin/sh
# tests/test-cli-quantize-llama.sh — `sprig mkmodel --type q4_k_m` (and the
# other llama.cpp file types) against llama.cpp's own llama-quantize: a
# synthetic model is written in F32 by sprig, quantized by llama-quantize,
# and written directly by sprig with the same seed and shape; every tensor
# must have the same type and the same bytes, and general.file_type must
# agree. Three shapes: one with GQA 4 and 16 layers (the use_more_bits
# pattern, Q2_K's attn_v rule), one without GQA, and the tiny preset, whose
# rows of 64 take llama.cpp's fallbacks (Q8_0 output, Q5_0/Q5_1/Q4_0/Q8_0
# for the K types). And three shapes with experts: qwen3moe, qwen35moe (with
# its MTP block and shared expert) and gemma4 with experts.
#
# Needs llama-quantize: $LLAMA_QUANTIZE, else llama-quantize on $PATH; skips
# (passing, with a message) when neither exists. Run by tests/run.sh with
# $SPRIG_BIN; by hand: LLAMA_QUANTIZE=/path/to/llama-quantize sh tests/test-cli-quantize-llama.sh
# Optional: QTYPES="q4_k_m q6_k" to choose the file types.
set -u
BIN=${SPRIG_BIN:-./sprig}
LQ=${LLAMA_QUANTIZE:-$(command -v llama-quantize 2>/dev/null || true)}
if [ -z "$LQ" ] || [ ! -x "$LQ" ]; then
    echo "test-cli-quantize-llama: skipped (llama-quantize not found; set LLAMA_QUANTIZE)"
    exit 0
fi
TMP=$(mktemp -d "${TMPDIR:-/tmp}/sprig-quantize-llama-XXXXXX")
trap 'rm -rf "$TMP"' EXIT
QTYPES=${QTYPES:-"q4_k_m q5_k_m q6_k q2_k q3_k_s q3_k_m q3_k_l q4_k_s q5_k_s q8_0 q4_0 q4_1 q5_0 q5_1"}
fail=0

# table FILE -> lines "name type offset bytes" (offsets absolute)
table() {
    "$BIN" gguf "$1" | awk '
        /^data offset:/ { base = $3 }
        /^tensors:/ { on = 1 }
        on && /^ +[0-9]+ +[^ ]+ +[a-z0-9_]+ +\[/ { n = NF; print $2, $3, base + $(n-1), $n }'
}
ftype() { "$BIN" gguf "$1" | awk '$2 == "general.file_type" { print $4 }'; }
sum_range() { dd if="$1" bs=65536 iflag=skip_bytes,count_bytes skip="$2" count="$3" status=none | cksum; }

# llama.cpp's names: q4_k_m -> Q4_K_M; the plain legacy types are written
# pure by sprig, so llama-quantize gets --pure for them
compare() { # SHAPE-NAME SPRIG-SHAPE-FLAGS (one word)
    shape=$1; flags=$2
    "$BIN" mkmodel $flags --type f32 --seed 5 -q -o "$TMP/$shape-f32.gguf" || { echo "FAIL: mkmodel f32 $shape"; fail=1; return; }
    for t in $QTYPES; do
        T=$(echo "$t" | tr a-z A-Z)
        pure=
        case $t in q8_0|q4_0|q4_1|q5_0|q5_1) pure=--pure;; esac
        if ! "$LQ" $pure "$TMP/$shape-f32.gguf" "$TMP/l.gguf" "$T" 1 >"$TMP/lq.log" 2>&1; then
            echo "FAIL: llama-quantize $T on $shape"; tail -5 "$TMP/lq.log"; fail=1; continue
        fi
        "$BIN" mkmodel $flags --type "$t" --seed 5 -q -o "$TMP/s.gguf" || { echo "FAIL: mkmodel $t $shape"; fail=1; continue; }
        table "$TMP/l.gguf" >"$TMP/lt"
        table "$TMP/s.gguf" >"$TMP/st"
        # name, llama's type/offset/bytes, sprig's type/offset/bytes (empty: missing)
        awk 'NR == FNR { s[$1] = $2 " " $3 " " $4; next } { print $1, $2, $3, $4, ($1 in s) ? s[$1] : "- 0 0" }' \
            "$TMP/st" "$TMP/lt" >"$TMP/joined"
        n=0; bad=0; mix=""
        : >"$TMP/lbytes"; : >"$TMP/sbytes"
        while read -r name lty loff lnb ty off nb; do
            n=$((n + 1))
            if [ "$ty" != "$lty" ]; then echo "  $shape $t: $name is $ty in sprig's file, llama-quantize made $lty"; bad=$((bad + 1)); continue; fi
            case " $mix " in *" $ty "*) ;; *) mix="$mix $ty";; esac
            # every tensor's bytes, in llama-quantize's order, into one stream per file
            dd if="$TMP/l.gguf" bs=65536 iflag=skip_bytes,count_bytes skip="$loff" count="$lnb" status=none >>"$TMP/lbytes"
            dd if="$TMP/s.gguf" bs=65536 iflag=skip_bytes,count_bytes skip="$off" count="$nb" status=none >>"$TMP/sbytes"
        done <"$TMP/joined"
        if ! cmp -s "$TMP/lbytes" "$TMP/sbytes"; then
            while read -r name lty loff lnb ty off nb; do   # which tensors (only on failure)
                [ "$ty" = "$lty" ] || continue
                [ "$nb" = "$lnb" ] && [ "$(sum_range "$TMP/s.gguf" "$off" "$nb")" = "$(sum_range "$TMP/l.gguf" "$loff" "$lnb")" ] ||
                    { echo "  $shape $t: $name ($ty) bytes differ"; bad=$((bad + 1)); }
            done <"$TMP/joined"
        fi
        [ "$(wc -l <"$TMP/st")" -eq "$n" ] || { echo "  $shape $t: sprig wrote $(wc -l <"$TMP/st") tensors, llama-quantize $n"; bad=$((bad + 1)); }
        fs=$(ftype "$TMP/s.gguf"); fl=$(ftype "$TMP/l.gguf")
        [ "$fs" = "$fl" ] || { echo "  $shape $t: general.file_type $fs, llama-quantize wrote $fl"; bad=$((bad + 1)); }
        [ "$n" -gt 0 ] || { echo "  $shape $t: no tensors"; bad=$((bad + 1)); }
        if [ $bad -eq 0 ]; then
            echo "ok   $shape $t: $n tensors, same types and bytes, file_type $fs (types:$mix)"
        else
            echo "FAIL $shape $t: $bad of $n tensors differ"; fail=1
        fi
    done
}

compare gqa4 "--dim 256 --layers 16 --heads 8 --kv-heads 2 --ffn 512 --vocab 1000"
compare mha "--dim 512 --layers 6 --heads 8 --kv-heads 8 --ffn 768 --vocab 600"
compare tiny "--preset tiny"
# routed experts: ffn_*_exps take llama-quantize's ffn_* rules by layer, the router stays F32
compare qwen3moe "--arch qwen3moe --dim 256 --layers 8 --heads 4 --kv-heads 2 --head-dim 64 --ffn 512 --vocab 1000 --experts 8 --experts-used 2 --expert-ffn 256"
compare qwen35moe "--arch qwen35moe --dim 256 --layers 4 --heads 4 --kv-heads 2 --head-dim 64 --ffn 512 --vocab 1000 --experts 8 --experts-used 2 --expert-ffn 256 --shared-expert-ffn 256 --mtp"
compare gemma4moe "--arch gemma4 --dim 256 --layers 6 --heads 4 --kv-heads 2 --head-dim 128 --head-dim-swa 64 --ffn 512 --vocab 1000 --window 32 --shared-kv 2 --experts 8 --experts-used 2 --expert-ffn 256"
[ $fail -eq 0 ] && echo "test-cli-quantize-llama: ok"
exit $fail
