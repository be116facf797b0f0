#!/bin/sh
# bench/kv-compare.sh — decode speed at long contexts with quantized KV
# caches, sprig against llama.cpp on the same GGUF:
#   sprig bench kv --modes f16,int8,turbo4 --ctx CTX   (random history, see tools/bench_kv.c)
#   llama-bench -ctk T -ctv T -fa 1 -d CTX -p 0 -n N   (T = f16, q8_0, q4_0: a real prefill of CTX)
# alternated round by round (sprig, llama.cpp, sprig, ...), medians over
# ROUNDS. llama.cpp's quantized V cache needs flash attention, so -fa 1 for
# every type. Prints tok/s per engine and type and the ratios the issue
# asks for: sprig int8 / llama.cpp q8_0 and sprig turbo4 / llama.cpp q4_0.
#
#   LLAMA_BENCH=/path/to/llama-bench [ROUNDS=2] [THREADS=2] [GEN=16] sh bench/kv-compare.sh MODEL.gguf [CTX ...]
#
# llama.cpp is built outside the project (from node-llama-cpp's source
# bundle); nothing of it is committed. A 16,384-token prefill on 2 cores
# takes minutes per llama.cpp run.
set -eu
BIN=${SPRIG_BIN:-./sprig}
LB=${LLAMA_BENCH:?set LLAMA_BENCH to a llama-bench binary}
ROUNDS=${ROUNDS:-2}
THREADS=${THREADS:-2}
GEN=${GEN:-16}
MODEL=${1:?usage: sh bench/kv-compare.sh MODEL.gguf [CTX ...]}
shift
CTXS=${*:-16384}
TMP=$(mktemp -d "${TMPDIR:-/tmp}/sprig-kvcmp-XXXXXX")
trap 'rm -rf "$TMP"' EXIT

median() { sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) print "nan"; else if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

for ctx in $CTXS; do
    r=1
    while [ $r -le "$ROUNDS" ]; do
        "$BIN" bench kv -m "$MODEL" -t "$THREADS" --modes f16,int8,turbo4 --ctx "$ctx" --tokens 0 --decode "$GEN" \
            --reps 3 --json >"$TMP/s.json"
        for mode in f16 int8 turbo4; do
            sed -n "s/.*\"mode\":\"$mode\"[^]]*\"tok_s\":\([0-9.]*\).*/\1/p" "$TMP/s.json" >>"$TMP/sprig-$ctx-$mode"
        done
        for t in f16 q8_0 q4_0; do
            "$LB" -m "$MODEL" -t "$THREADS" -ctk $t -ctv $t -fa 1 -d "$ctx" -p 0 -n "$GEN" -r 1 -o json 2>/dev/null >"$TMP/l.json"
            sed -n 's/.*"avg_ts": *\([0-9.]*\).*/\1/p' "$TMP/l.json" | head -1 >>"$TMP/llama-$ctx-$t"
        done
        r=$((r + 1))
    done
done

printf '%-8s %-8s %10s   %-8s %10s %8s\n' ctx sprig tok/s llama.cpp tok/s ratio
for ctx in $CTXS; do
    for pair in f16:f16 int8:q8_0 turbo4:q4_0; do
        s=${pair%%:*} l=${pair#*:}
        a=$(median <"$TMP/sprig-$ctx-$s")
        b=$(median <"$TMP/llama-$ctx-$l")
        printf '%-8s %-8s %10.2f   %-8s %10.2f %7.2fx\n' "$ctx" "$s" "$a" "$l" "$b" "$(awk -v a="$a" -v b="$b" 'BEGIN { print (b > 0 ? a / b : 0) }')"
    done
done
