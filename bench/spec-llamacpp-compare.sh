#!/bin/sh
# bench/spec-llamacpp-compare.sh — speculative decoding in sprig against
# llama.cpp's on the same target and draft files, greedy, same prompt and
# length, alternating runs, medians.
#
#   LLAMA_SPECULATIVE=/path/to/llama-speculative-simple \
#     sh bench/spec-llamacpp-compare.sh TARGET.gguf DRAFT.gguf|ngram [PROMPT]
#
# DRAFT "ngram" compares the model-free drafters instead: sprig's
# --draft-ngram (chain at SPRIG_K, n-grams of NGRAM_MIN..6) against each of
# llama.cpp's n-gram drafters in LLAMA_NGRAMS (default "ngram-simple
# ngram-map-k ngram-mod ngram-cache") at each K in LLAMA_KS. PROMPT_FILE
# reads the prompt from a file (a repetitive document). sprig's plain
# decoding runs too, and llama.cpp's (llama-bench's tg, no prompt) when
# LLAMA_BENCH names llama-bench.
#
# Configurations (each a whole run, A B C ... A B C ..., the first round
# discarded): sprig `--tree auto`, sprig's chain at SPRIG_K (default 6),
# llama.cpp's draft-simple at each K in LLAMA_KS (default "4 6 8") with
# --spec-draft-p-min in LLAMA_PMINS (default "0 0.5"). tok/s is each
# engine's own decode figure: sprig's "decode N tokens in T ms" (after the
# prefill), llama.cpp's "decoded N tokens in T seconds" (the same span).
# ROUNDS (default 3), N (default 256), T threads (default 2).
# Why a script: llama.cpp's tool is built outside the project (see
# bench/llamacpp-compare.sh); CI does not run it.
set -u
export LC_ALL=C
SPRIG=${SPRIG:-./sprig}
LS=${LLAMA_SPECULATIVE:-}
N=${N:-256}; T=${T:-2}; ROUNDS=${ROUNDS:-3}; SPRIG_K=${SPRIG_K:-6}
LLAMA_KS=${LLAMA_KS:-"4 6 8"}; LLAMA_PMINS=${LLAMA_PMINS:-"0 0.5"}
[ $# -ge 2 ] || { echo "usage: LLAMA_SPECULATIVE=... sh $0 TARGET.gguf DRAFT.gguf [PROMPT]" >&2; exit 2; }
M=$1; D=$2; P=${3:-Once upon a time}
[ -n "${PROMPT_FILE:-}" ] && P=$(cat "$PROMPT_FILE")
NGRAM_MIN=${NGRAM_MIN:-2}; LLAMA_NGRAMS=${LLAMA_NGRAMS:-"ngram-simple ngram-map-k ngram-mod ngram-cache"}
if [ -z "$LS" ] || [ ! -x "$LS" ]; then
    echo "spec-llamacpp-compare: skipped: LLAMA_SPECULATIVE is not an executable llama-speculative-simple" >&2
    exit 3
fi
OUT=${OUT:-build/spec-llamacpp}
mkdir -p "$OUT" || exit 1
: >"$OUT/results"
run_one() {   # name, then the command; appends "name tok/s"
    name=$1; shift
    if "$@" >"$OUT/run.out" 2>"$OUT/run.err"; then :; else echo "$name failed: $(tail -2 "$OUT/run.err")" >&2; return 1; fi
    case "$name" in
        sprig*) tps=$(sed -n 's/.*decode [0-9]* tokens in [0-9.]* ms (\([0-9.]*\) tok\/s).*/\1/p' "$OUT/run.err" | tail -1) ;;
        llama.cpp-plain) tps=$(sed -n 's/.*| *tg[0-9]* *| *\([0-9.]*\) .*/\1/p' "$OUT/run.out" | tail -1) ;;
        *) tps=$(cat "$OUT/run.out" "$OUT/run.err" | sed -n 's/.*decoded *[0-9]* tokens in *[0-9.]* seconds, speed: *\([0-9.]*\) t\/s.*/\1/p' | tail -1) ;;
    esac
    [ -n "$tps" ] || { echo "$name: no speed in its output" >&2; return 1; }
    [ "$round" -gt 0 ] && echo "$name $tps" >>"$OUT/results"
    return 0
}
round=0
while [ "$round" -le "$ROUNDS" ] && [ "$D" = ngram ]; do
    run_one "sprig-plain" "$SPRIG" run -m "$M" -p "$P" -n "$N" -t "$T" --temp 0 || exit 1
    run_one "sprig-ngram-$SPRIG_K" "$SPRIG" run -m "$M" --draft-ngram --ngram-min "$NGRAM_MIN" --ngram-max 6 --draft-max "$SPRIG_K" \
        -p "$P" -n "$N" -t "$T" --temp 0 || exit 1
    if [ -n "${LLAMA_BENCH:-}" ]; then   # llama-speculative-simple has no plain mode: llama-bench's tg
        run_one "llama.cpp-plain" "$LLAMA_BENCH" -m "$M" -p 0 -n "$N" -t "$T" -r 1 || exit 1
    fi
    for st in $LLAMA_NGRAMS; do
        for k in $LLAMA_KS; do
            run_one "llama.cpp-$st-K$k" "$LS" -m "$M" --spec-type "$st" -p "$P" -n "$N" -t "$T" -c 2048 --temp 0 \
                --spec-draft-n-max "$k" || exit 1
        done
    done
    round=$((round + 1))
done
while [ "$round" -le "$ROUNDS" ]; do
    run_one "sprig-tree-auto" "$SPRIG" run -m "$M" --draft "$D" --tree auto -p "$P" -n "$N" -t "$T" --temp 0 || exit 1
    run_one "sprig-chain-$SPRIG_K" "$SPRIG" run -m "$M" --draft "$D" --draft-max "$SPRIG_K" -p "$P" -n "$N" -t "$T" --temp 0 || exit 1
    for k in $LLAMA_KS; do
        for pm in $LLAMA_PMINS; do
            run_one "llama.cpp-K$k-pmin$pm" "$LS" -m "$M" -md "$D" --spec-type draft-simple -p "$P" -n "$N" -t "$T" -c 2048 \
                --temp 0 --spec-draft-n-max "$k" --spec-draft-p-min "$pm" || exit 1
        done
    done
    round=$((round + 1))
done
echo "target $M, draft $D, $N tokens, $T threads, $ROUNDS alternated rounds after a warm-up (medians, tok/s)"
awk '{ v[$1] = v[$1] " " $2; names[$1] = 1 }
     END {
         for (n in names) {
             k = split(v[n], x, " "); for (i = 1; i <= k; i++) for (j = i + 1; j <= k; j++) if (x[j] < x[i]) { t = x[i]; x[i] = x[j]; x[j] = t }
             med = k % 2 ? x[(k + 1) / 2] : (x[k / 2] + x[k / 2 + 1]) / 2
             printf "%-24s %8.1f\n", n, med
             if (n ~ /^sprig/ && n !~ /plain/ && med > bs) { bs = med; bn = n }
             if (n ~ /^llama/ && n !~ /plain/ && med > bl) { bl = med; ln = n }
         }
         if (bl > 0) printf "best sprig (%s) vs best llama.cpp (%s): %.2fx\n", bn, ln, bs / bl
     }' "$OUT/results"
