#!/bin/sh
# bench/tokenize-compare.sh — sprig's tokenizer against llama.cpp's, side by
# side, on the same GGUF vocabularies and the same bytes.
#
#   sh bench/tokenize-compare.sh [VOCAB_NAME ...]      (default: all seven)
#
# For each vocabulary in $SPRIG_SHARED/models/vocab (llama-bpe, qwen2,
# qwen35, gpt-2, gemma-4, llama-spm, phi-3) and each text (english, mixed:
# the 1 MiB texts `sprig bench tokenize` builds, saved once to a file), the
# two tokenizers run in separate processes alternated A B A B ... for
# $PAIRS pairs (default 3); each process times $REPS tokenize calls after a
# warm-up and reports the median; the table shows the median over the pairs
# and the ratio sprig / llama.cpp (goal >= 1.0). Both write their ids and
# the table says whether they are the SAME, or where they first differ
# (token index and the text around it) — an exactness check on 1 MiB.
# No BOS, special-token text not parsed, one thread, for both.
#
# llama.cpp runs through node-llama-cpp (bench/tokenize-llamacpp.mjs), found
# in $SPRIG_LLAMACPP_REF (a node_modules folder; default bench/ref/node_modules,
# installed with `cd bench/ref && npm ci --omit=optional`, see
# bench/ref/package.json). Raw results go to $OUT (default
# build/tokenize-compare): one JSON line per run in runs.jsonl.
set -u
SPRIG=${SPRIG_BIN:-./sprig}
SHARED=${SPRIG_SHARED:-../shared}
REF=${SPRIG_LLAMACPP_REF:-bench/ref/node_modules}
PAIRS=${PAIRS:-3}
REPS=${REPS:-3}
OUT=${OUT:-build/tokenize-compare}
VD="$SHARED/models/vocab"
export SPRIG_LLAMACPP_REF="$REF"

if ! command -v node >/dev/null 2>&1 || [ ! -f "$REF/node-llama-cpp/dist/index.js" ]; then
    echo "tokenize-compare: llama.cpp reference not found (node and $REF/node-llama-cpp); see bench/ref/package.json" >&2
    exit 3
fi
[ -x "$SPRIG" ] || { echo "tokenize-compare: $SPRIG not built (make)" >&2; exit 1; }
mkdir -p "$OUT"
: >"$OUT/runs.jsonl"
: >"$OUT/diffs.txt"

vocabs=${*:-"llama-bpe qwen2 qwen35 gpt-2 gemma-4 llama-spm phi-3"}
field() { sed -n "s/.*\"$1\":\([0-9.eE+-]*\).*/\1/p"; }
median() { sort -g | awk '{v[NR]=$1} END {if (NR==0) print 0; else if (NR%2) print v[(NR+1)/2]; else print (v[NR/2]+v[NR/2+1])/2}'; }

echo "machine: $(lscpu 2>/dev/null | sed -n 's/^Model name: *//p' | head -1), $(nproc) cores; $PAIRS A/B pairs x $REPS reps (medians), 1 thread, no BOS"
printf '%-10s %-8s %9s %12s %14s %7s  %s\n' vocab text tokens "sprig tok/s" "llama.cpp tok/s" ratio ids
for v in $vocabs; do
    f="$VD/ggml-vocab-$v.gguf"
    if [ ! -f "$f" ]; then printf '%-10s %s\n' "$v" "missing $f"; continue; fi
    for tx in english mixed; do
        txt="$OUT/$tx.txt"
        if ! "$SPRIG" bench tokenize -m "$f" --text "$tx" --reps 1 --save-text "$txt" --ids-out "$OUT/$v-$tx.sprig.ids" \
                --json >"$OUT/$v-$tx.first.json" 2>"$OUT/$v-$tx.err"; then
            printf '%-10s %-8s %s\n' "$v" "$tx" "sprig failed: $(head -c 200 "$OUT/$v-$tx.err")"
            continue
        fi
        : >"$OUT/s.tps"; : >"$OUT/l.tps"
        ok=1
        for p in $(seq 1 "$PAIRS"); do
            ids_arg=""
            [ "$p" = 1 ] && ids_arg="--ids-out $OUT/$v-$tx.llamacpp.ids --diff-with $OUT/$v-$tx.sprig.ids"
            if "$SPRIG" bench tokenize -m "$f" --text "$txt" --reps "$REPS" --json >"$OUT/run.json" 2>>"$OUT/$v-$tx.err"; then
                cat "$OUT/run.json" >>"$OUT/runs.jsonl"; field tok_s <"$OUT/run.json" >>"$OUT/s.tps"
            else ok=0; fi
            # shellcheck disable=SC2086
            if node bench/tokenize-llamacpp.mjs "$f" "$txt" --reps "$REPS" $ids_arg >"$OUT/run.json" 2>>"$OUT/$v-$tx.llamacpp.err"; then
                cat "$OUT/run.json" >>"$OUT/runs.jsonl"; field tok_s <"$OUT/run.json" >>"$OUT/l.tps"
                [ "$p" = 1 ] && cp "$OUT/run.json" "$OUT/$v-$tx.llamacpp.first.json"
            else ok=0; fi
        done
        ntok=$(field tokens <"$OUT/$v-$tx.first.json")
        s=$(median <"$OUT/s.tps"); l=$(median <"$OUT/l.tps")
        ratio=$(awk -v s="$s" -v l="$l" 'BEGIN { if (l > 0) printf "%.3f", s / l; else print "-" }')
        if [ $ok = 0 ]; then same="a run failed (see $OUT/$v-$tx.*err)"
        elif cmp -s "$OUT/$v-$tx.sprig.ids" "$OUT/$v-$tx.llamacpp.ids"; then same="SAME"
        else
            same=$(awk 'NR==FNR { n1 = split($0, a, " "); next } { n2 = split($0, b, " ") }
                END { for (i = 1; i <= n1 && i <= n2 && a[i] == b[i]; i++) ;
                      printf "DIFFER at token %d (sprig %s, llama.cpp %s; counts %d vs %d)", i - 1, a[i], b[i], n1, n2 }' \
                "$OUT/$v-$tx.sprig.ids" "$OUT/$v-$tx.llamacpp.ids")
            d=$(sed -n 's/.*"first_diff":\({.*}\)}$/\1/p' "$OUT/$v-$tx.llamacpp.first.json")
            [ -n "$d" ] && echo "$v $tx first difference: $d" >>"$OUT/diffs.txt"
        fi
        printf '%-10s %-8s %9s %12.0f %14.0f %7s  %s\n' "$v" "$tx" "$ntok" "$s" "$l" "$ratio" "$same"
    done
done
if [ -s "$OUT/diffs.txt" ]; then echo; echo "first differences (llama.cpp's view: token index, byte offset, text around it):"; cat "$OUT/diffs.txt"; fi
