#!/bin/sh
# bench/run.sh — `make bench`: the measurements behind sprig's speed claims.
#
#   1. decode speed against the memory roofline, and T(n)/T(1) of batched
#      forwards, on a synthetic llama-1b shaped model (Q8_0, then F16),
#      generated once into $SPRIG_BENCH_MODELS (default models/, git-ignored);
#      then, when $LLAMA_BENCH names a llama-bench binary, decode tok/s and
#      T(n)/T(1) against llama.cpp on the same Q8_0 file and on any GGUFs in
#      $SPRIG_COMPARE_MODELS (bench/llamacpp-compare.sh); skipped with a
#      message otherwise;
#   2. speculative decoding on the real stories260K model with each drafter:
#      plain, chain, tree and tree+branches alternated;
#   3. the same on a bandwidth-bound target: stories260K widened into the
#      llama-1b shape (`mkmodel --widen`, same function, 1B-class cost), with
#      the real draft model and the n-gram drafter; then `sprig serve` on it
#      under 4 and 8 concurrent clients (bench/serve-throughput.sh: plain,
#      chains, trees and tree auto with continuous batching, per-slot
#      forwards, and llama-server when $LLAMA_SERVER names one);
#   4. tokenizer speed on 1 MiB of English and of mixed-script text, and,
#      when llama.cpp's reference is installed (bench/ref, see its
#      package.json), sprig against llama.cpp on every vocabulary in
#      $SPRIG_SHARED/models/vocab (bench/tokenize-compare.sh); skipped with a
#      message otherwise.
# Threads: $SPRIG_BENCH_THREADS (default 2). SPRIG_BENCH_QUICK=1 skips the
# 1B-parameter models. Every number is a median over alternated repetitions;
# add --json to a line to get machine-readable output.
set -eu
SPRIG=${SPRIG_BIN:-./sprig}
SHARED=${SPRIG_SHARED:-../shared}
MODELS=${SPRIG_BENCH_MODELS:-models}
T=${SPRIG_BENCH_THREADS:-2}
M="$SHARED/models"

echo "== machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores"

if [ "${SPRIG_BENCH_QUICK:-0}" = 0 ]; then
    mkdir -p "$MODELS"
    for ty in q8_0 f16; do
        f="$MODELS/llama-1b-$ty.gguf"
        if [ ! -f "$f" ]; then
            echo "== generating $f (synthetic llama-1b, seeded random weights)"
            "$SPRIG" mkmodel --preset llama-1b --type "$ty" -o "$f"
        fi
    done
    echo; echo "== decode vs the bandwidth roofline (llama-1b Q8_0, $T threads)"
    "$SPRIG" bench decode -m "$MODELS/llama-1b-q8_0.gguf" -t "$T" -n 48 --reps 3
    for ty in q8_0 f16; do
        echo; echo "== batched forward T(n)/T(1) (llama-1b $ty, $T threads, context 64)"
        "$SPRIG" bench forward -m "$MODELS/llama-1b-$ty.gguf" -t "$T" --reps 5
    done
    if [ -n "${LLAMA_BENCH:-}" ]; then
        echo; echo "== sprig vs llama.cpp (llama-bench): decode and T(n)/T(1), same GGUF, alternated, $T threads"
        # shellcheck disable=SC2086
        SPRIG_BIN="$SPRIG" SPRIG_BENCH_THREADS="$T" sh bench/llamacpp-compare.sh "$MODELS/llama-1b-q8_0.gguf" \
            ${SPRIG_COMPARE_MODELS:-} || true
    else
        echo; echo "== sprig vs llama.cpp: skipped (LLAMA_BENCH unset; bench/llamacpp-compare.sh says how to build llama-bench)"
    fi
fi

for d in "--draft $M/stories-draft.gguf" "--mtp $M/stories-mtp.gguf" "--draft-ngram"; do
    echo; echo "== speculative decoding on stories260K: $d"
    # shellcheck disable=SC2086
    "$SPRIG" bench spec -m "$M/stories260K.gguf" $d -t 1 --draft-max 4 --tree-branches 2 -n 256 --pairs 7
done

if [ "${SPRIG_BENCH_QUICK:-0}" = 0 ]; then
    f="$MODELS/stories-1b-q8_0.gguf"
    if [ ! -f "$f" ]; then
        echo; echo "== generating $f (stories260K widened to the llama-1b shape)"
        "$SPRIG" mkmodel --preset llama-1b --type q8_0 --widen "$M/stories260K.gguf" -o "$f"
    fi
    for d in "--draft $M/stories-draft.gguf" "--draft-ngram"; do
        echo; echo "== speculative decoding on stories260K widened to llama-1b (Q8_0, $T threads): $d"
        # shellcheck disable=SC2086
        "$SPRIG" bench spec -m "$f" $d -t "$T" --draft-max 6 --tree-branches 3 -n 256 --pairs 5
    done
    echo; echo "== sprig serve under 4 and 8 concurrent greedy clients (continuous batching; the widened 1B target, $T threads)"
    if command -v node >/dev/null 2>&1 && command -v curl >/dev/null 2>&1; then
        [ -n "${LLAMA_SERVER:-}" ] || echo "(llama-server skipped: set LLAMA_SERVER to its binary, built as bench/llamacpp-compare.sh says)"
        SPRIG="$SPRIG" T="$T" ROUNDS="${SPRIG_BENCH_SERVE_ROUNDS:-3}" sh bench/serve-throughput.sh "$f" "$M/stories-draft.gguf" || true
    else
        echo "skipped: node and curl are needed"
    fi
fi

echo; echo "== tokenizer speed (llama-spm vocabulary, 1 MiB, 1 thread)"
for tx in english mixed; do
    "$SPRIG" bench tokenize -m "$M/vocab/ggml-vocab-llama-spm.gguf" --text "$tx" --reps 5
done
REF=${SPRIG_LLAMACPP_REF:-bench/ref/node_modules}
if command -v node >/dev/null 2>&1 && [ -f "$REF/node-llama-cpp/dist/index.js" ]; then
    echo; echo "== tokenizer: sprig vs llama.cpp (node-llama-cpp), alternated A/B"
    SPRIG_BIN="$SPRIG" SPRIG_SHARED="$SHARED" SPRIG_LLAMACPP_REF="$REF" sh bench/tokenize-compare.sh || true
else
    echo; echo "== tokenizer vs llama.cpp: skipped (no node or no $REF/node-llama-cpp; cd bench/ref && npm ci --omit=optional)"
fi
