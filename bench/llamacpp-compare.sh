#!/bin/sh
# bench/llamacpp-compare.sh — sprig's decode speed and batched-forward cost
# against llama.cpp's llama-bench, side by side, on the same GGUF file.
#
#   sh bench/llamacpp-compare.sh [--json] MODEL.gguf [MORE.gguf ...]
#
# Why: speculative decoding pays off when verifying n draft tokens in one
# forward costs little more than decoding one, so the figures that matter
# are decode tok/s and T(n)/T(1); this puts both engines' numbers in one
# table, measured the same way on the same machine in the same minutes.
#
# What is measured, for each model:
#   decode   tok/s of plain one-token decoding, GEN tokens (default 64) after
#            DECODE_CTX tokens of context (default 0: from an empty one):
#            sprig `bench decode -n GEN --ctx DECODE_CTX` (mean ms/token, i.e.
#            tokens / time) against llama-bench `-d DECODE_CTX -p 0 -n GEN`
#            (tg at that depth; both prefill the context untimed).
#   forward  T(n), the time of one forward of a batch of n new tokens on top
#            of CTX tokens of context (default 64), for n in NS (default
#            1,2,4,8,16,32), and T(n)/T(1): sprig `bench forward --ctx CTX
#            --logits last` against llama-bench `-d CTX -p n -n 0` (pp at
#            depth CTX). Both compute the logits of the batch's last token
#            only — what llama-bench's prompt test asks for; sprig's verify
#            (all n rows) costs one output-head row more per extra token.
#            Both use an f16 KV cache (llama-bench's default; sprig
#            --kv-type f16) and random token ids.
# Engines: sprig once per kernel family the CPU has (SPRIG_KERNELS=avx512,
# the default, and avx2 on an AVX-512 machine; override the list with
# SPRIG_COMPARE_KERNELS="avx512 avx2 reference"), and llama.cpp as built
# (build it with GGML_NATIVE=ON: the best kernels for this CPU). Threads:
# $SPRIG_BENCH_THREADS (default 2) for every engine.
#
# Method: one warm-up round, discarded, then ROUNDS (default 5) counted
# rounds; a round runs every engine once, in a fixed order (A B C A B C
# ...), each in a fresh process (decode, then forward). Inside a process
# sprig's forward takes the median of INNER (default 3) timings per n after
# its own warm-up; llama-bench takes INNER repetitions after its warm-up and
# the script takes their median. The table shows the median over the
# counted rounds and the spread (max - min) / median across them — on a
# shared machine, read the spread before the ratio. Ratios are sprig /
# llama.cpp: for tok/s above 1 means sprig is faster, for T(n) below 1.
# The load average before and after each model's run is printed: when
# other processes share the cores, a multi-threaded forward slows down by
# more than its share of CPU time wherever its threads wait for each other,
# and by how much differs between engines (llama.cpp's threads meet at a
# barrier after every graph node); SPRIG_BENCH_THREADS=1 compares the
# kernels alone. LLAMA_BENCH_ENV="NAME=VALUE ..." sets environment variables
# for every llama-bench run (e.g. OMP_WAIT_POLICY=passive for an OpenMP
# build: its threads then sleep at a barrier instead of spinning first);
# the table shows it.
#
# llama.cpp's CPU backend may repack weights at load into an interleaved
# layout ("CPU_REPACK" extra buffer type: Q4_0, Q4_K, IQ4_NL, ... depending
# on the CPU); the script runs llama-bench once with -v and reports the mode
# that ran (which buffer types hold the weights, how many tensors had no
# repacked layout), plus whether flash attention was on.
#
# Getting llama-bench (never a build or test dependency of sprig): the
# llama.cpp source node-llama-cpp 3.21.1 ships (the one bench/ref installs)
# is a git bundle inside the npm package:
#     npm pack node-llama-cpp@3.21.1 && tar xzf node-llama-cpp-3.21.1.tgz
#     git clone package/llama/gitRelease.bundle llama.cpp
#     cmake -S llama.cpp -B llama.cpp/build -DCMAKE_BUILD_TYPE=Release \
#           -DGGML_NATIVE=ON -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF
#     cmake --build llama.cpp/build --target llama-bench -j2
#     export LLAMA_BENCH=$PWD/llama.cpp/build/bin/llama-bench
# (with bench/ref installed, the bundle is already at
# bench/ref/node_modules/node-llama-cpp/llama/gitRelease.bundle). Without
# LLAMA_BENCH the script says so and exits 3.
#
# Output: the table on stdout; --json prints one JSON object per model, one
# per line, instead; --report prints them again from the samples in $OUT
# without running anything (same settings). Raw samples and every process's output go to $OUT
# (default build/llamacpp-compare).
set -u
SPRIG=${SPRIG_BIN:-./sprig}
T=${SPRIG_BENCH_THREADS:-2}
ROUNDS=${ROUNDS:-5}
INNER=${INNER:-3}
GEN=${GEN:-64}
CTX=${CTX:-64}
DECODE_CTX=${DECODE_CTX:-0}
NS=${NS:-1,2,4,8,16,32}
OUT=${OUT:-build/llamacpp-compare}
LB=${LLAMA_BENCH:-}
LBENV=${LLAMA_BENCH_ENV:-}
case "$LBENV" in *[!A-Za-z0-9_=.,:/\ -]*) echo "llamacpp-compare: LLAMA_BENCH_ENV: want NAME=VALUE words" >&2; exit 2 ;; esac
# llama-bench with $LLAMA_BENCH_ENV in its environment
lb() {
    # shellcheck disable=SC2086
    env $LBENV "$LB" "$@"
}

json=0
report=0
models=""
for a in "$@"; do
    case "$a" in
    --json) json=1 ;;
    --report) report=1 ;;
    -h | --help) sed -n '2,/^set -u/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    -*) echo "llamacpp-compare: unknown option '$a' (--json, --report, --help)" >&2; exit 2 ;;
    *) models="$models $a" ;;
    esac
done
[ -n "$models" ] || { echo "usage: sh bench/llamacpp-compare.sh [--json] MODEL.gguf [MORE.gguf ...]" >&2; exit 2; }
if [ -z "$LB" ] || [ ! -x "$LB" ]; then
    echo "llamacpp-compare: skipped: LLAMA_BENCH ${LB:+($LB) }is not an executable llama-bench; see the top of $0 for how to build one" >&2
    exit 3
fi
if ! "$LB" --help 2>&1 | grep -q -- '--n-depth'; then
    echo "llamacpp-compare: $LB has no -d/--n-depth (too old to time a batch on top of a context)" >&2
    exit 3
fi
[ -x "$SPRIG" ] || { echo "llamacpp-compare: $SPRIG not built (make)" >&2; exit 1; }
for v in "$T" "$ROUNDS" "$INNER" "$GEN" "$CTX" "$DECODE_CTX"; do
    case "$v" in '' | *[!0-9]*) echo "llamacpp-compare: SPRIG_BENCH_THREADS, ROUNDS, INNER, GEN, CTX, DECODE_CTX must be integers" >&2; exit 2 ;; esac
done
case "$NS" in '' | *[!0-9,]*) echo "llamacpp-compare: NS must be a list like 1,2,4,8" >&2; exit 2 ;; esac
mkdir -p "$OUT" || exit 1

# The kernel families this CPU has, best first (sprig reports the one that ran).
flags=$(grep -m1 '^flags' /proc/cpuinfo 2>/dev/null)
has() { case " $flags " in *" $1 "*) return 0 ;; esac; return 1; }
if [ -n "${SPRIG_COMPARE_KERNELS:-}" ]; then fams=$SPRIG_COMPARE_KERNELS
elif has avx512f && has avx512bw; then fams="avx512 avx2"
elif has avx2; then fams="avx2"
else fams="reference"; fi
engines=""
for f in $fams; do engines="$engines sprig-$f"; done
engines="$engines llama.cpp"

cpu=$(lscpu 2>/dev/null | sed -n 's/^Model name: *//p' | head -1)
fam=$(lscpu 2>/dev/null | sed -n 's/^CPU family: *//p' | head -1)
mdl=$(lscpu 2>/dev/null | sed -n 's/^Model: *//p' | head -1)
isa=""
for f in avx2 fma avx_vnni avx512f avx512bw avx512_vnni avx512_bf16; do has $f && isa="$isa $f"; done
machine="${cpu:-unknown CPU} (family ${fam:-?} model ${mdl:-?}), $(nproc) cores; ISA:$isa"

jnum() { sed -n "s/.*\"$1\": *\([-0-9.eE+]*\).*/\1/p" | head -1; }
jstr() { sed -n "s/.*\"$1\": *\"\([^\"]*\)\".*/\1/p" | head -1; }
median() { sort -g | awk '{v[NR]=$1} END {if (NR==0) print 0; else if (NR%2) print v[(NR+1)/2]; else print (v[NR/2]+v[NR/2+1])/2}'; }

# llama-bench's build flags, when its CMake cache sits next to it (build/bin/llama-bench).
lbcache="$(dirname "$(dirname "$LB")")/CMakeCache.txt"
lbflags=""
if [ -f "$lbcache" ]; then
    lbflags=$(grep -E '^(GGML_NATIVE|GGML_CPU_REPACK|GGML_AVX512|GGML_AVX2|GGML_OPENMP|CMAKE_BUILD_TYPE):' "$lbcache" |
        sed 's/:[A-Z]*=/=/' | tr '\n' ' ' | sed 's/ $//')
fi

# run_engine ENGINE MODEL ROUND: one process per measurement; appends
# "round engine metric n value" lines to $S, raw output to $OUT/raw.
run_engine() {
    e=$1 m=$2 r=$3
    raw="$OUT/raw/$base.$e.r$r"
    case "$e" in
    sprig-*)
        k=${e#sprig-}
        if SPRIG_KERNELS=$k "$SPRIG" bench decode -m "$m" -t "$T" -n "$GEN" --ctx "$DECODE_CTX" --kv-type f16 --json >"$raw.dec" 2>"$raw.dec.err"; then
            echo "$k $(jstr kernels <"$raw.dec")" >>"$OUT/kernels.$base"
            v=$(jnum ms_per_token_mean <"$raw.dec")
            awk -v r="$r" -v e="$e" -v g="$GEN" -v v="$v" 'BEGIN { if (v > 0) printf "%s %s dec %s %.6f\n", r, e, g, 1000 / v }' >>"$S"
        else echo "llamacpp-compare: $e decode failed (round $r): $(head -c 300 "$raw.dec.err")" >&2; fi
        if SPRIG_KERNELS=$k "$SPRIG" bench forward -m "$m" -t "$T" --ctx "$CTX" --ns "$NS" --logits last --kv-type f16 \
                --reps "$INNER" --json >"$raw.fwd" 2>"$raw.fwd.err"; then
            tr '{' '\n' <"$raw.fwd" | sed -n 's/^"n":\([0-9]*\),"ms":\([0-9.eE+-]*\).*/\1 \2/p' |
                awk -v r="$r" -v e="$e" '{ printf "%s %s fwd %s %s\n", r, e, $1, $2 }' >>"$S"
        else echo "llamacpp-compare: $e forward failed (round $r): $(head -c 300 "$raw.fwd.err")" >&2; fi
        ;;
    llama.cpp)
        if lb -m "$m" -t "$T" -d "$DECODE_CTX" -p 0 -n "$GEN" -r 1 -o jsonl >"$raw.dec" 2>"$raw.dec.err"; then
            cp "$raw.dec" "$OUT/llamacpp-last.$base.jsonl"
            ns=$(sed -n 's/.*"samples_ns": *\[ *\([0-9, ]*\)\].*/\1/p' "$raw.dec" | tr ',' '\n' | median)
            awk -v r="$r" -v g="$GEN" -v ns="$ns" 'BEGIN { if (ns > 0) printf "%s llama.cpp dec %s %.6f\n", r, g, g / (ns * 1e-9) }' >>"$S"
        else echo "llamacpp-compare: llama.cpp decode failed (round $r): $(tail -c 300 "$raw.dec.err")" >&2; fi
        if lb -m "$m" -t "$T" -d "$CTX" -p "$NS" -n 0 -r "$INNER" -o jsonl >"$raw.fwd" 2>"$raw.fwd.err"; then
            while IFS= read -r line; do
                n=$(printf '%s\n' "$line" | jnum n_prompt)
                ns=$(printf '%s\n' "$line" | sed -n 's/.*"samples_ns": *\[ *\([0-9, ]*\)\].*/\1/p' | tr ',' '\n' | median)
                [ -n "$n" ] && echo "$r llama.cpp fwd $n $(awk -v ns="$ns" 'BEGIN { printf "%.6f", ns / 1e6 }')" >>"$S"
            done <"$raw.fwd"
        else echo "llamacpp-compare: llama.cpp forward failed (round $r): $(tail -c 300 "$raw.fwd.err")" >&2; fi
        ;;
    esac
}

mkdir -p "$OUT/raw"
rc=0
for m in $models; do
    if [ ! -f "$m" ]; then echo "llamacpp-compare: $m: no such file" >&2; rc=1; continue; fi
    base=$(basename "$m" .gguf)
    S="$OUT/$base.samples"
    if [ $report = 0 ]; then
        : >"$S"
        : >"$OUT/kernels.$base"

    # llama.cpp's load: which buffer types hold the weights (repacked or not), flash attention.
    lb -m "$m" -t "$T" -p 1 -n 0 -r 1 --no-warmup -v -o jsonl >"$OUT/$base.probe.jsonl" 2>"$OUT/$base.probe.err"
    elif [ ! -s "$S" ] || [ ! -f "$OUT/$base.probe.err" ]; then
        echo "llamacpp-compare: --report: no samples for $m in $OUT" >&2; rc=1; continue
    fi
    bufs=$(sed -n 's/.*load_tensors: *\([A-Za-z0-9_]*\) model buffer size = *\([0-9.]* MiB\).*/\1 \2/p' "$OUT/$base.probe.err" |
        tr '\n' ',' | sed 's/,$//; s/,/, /g')
    norep=$(sed -n "s/.*tensor '\([^']*\)' (\([A-Za-z0-9_]*\)) (and \([0-9]*\) others) cannot be used with preferred buffer type CPU_REPACK.*/\3 \2 \1/p" \
        "$OUT/$base.probe.err" | head -1)
    if grep -q 'CPU_REPACK model buffer size' "$OUT/$base.probe.err"; then repack="repacked (CPU_REPACK)"
    else repack="not repacked"; fi
    [ -n "$norep" ] && repack="$repack; $(echo "$norep" | awk '{ printf "%d tensors have no repacked layout (first: %s, %s)", $1 + 1, $3, $2 }')"
    repack="$repack; buffers: ${bufs:-unknown}"
    fa=$(sed -n 's/.*Flash Attention \([a-z]*\).*/\1/p' "$OUT/$base.probe.err" | head -1)
    lbinfo="build $(jstr build_commit <"$OUT/$base.probe.jsonl"), $(jstr backends <"$OUT/$base.probe.jsonl") backend${lbflags:+ ($lbflags)}${LBENV:+, environment $LBENV}"
    mtype=$(jstr model_type <"$OUT/$base.probe.jsonl")
    kv="$(jstr type_k <"$OUT/$base.probe.jsonl")"

    [ $json = 1 ] || [ $report = 1 ] || echo "llamacpp-compare: $m — warm-up round + $ROUNDS rounds over:$engines" >&2
    if [ $report = 1 ]; then
        load=$(cat "$OUT/$base.load" 2>/dev/null)
    else
    load0=$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null)
    t0=$(date +%s)
    for r in $(seq 0 "$ROUNDS"); do
        for e in $engines; do run_engine "$e" "$m" "$r"; done
    done
    load1=$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null)
    load="load average ${load0:-?} before, ${load1:-?} after; $(( $(date +%s) - t0 )) s"
    echo "$load" >"$OUT/$base.load"
    fi

    kernels=$(sort -u "$OUT/kernels.$base" | tr '\n' ';')
    awk -v engines="$engines" -v ns_list="$NS" -v kernels="$kernels" -v json="$json" -v model="$m" -v mtype="$mtype" \
        -v machine="$machine" -v threads="$T" -v rounds="$ROUNDS" -v inner="$INNER" -v gen="$GEN" -v ctx="$CTX" -v dctx="$DECODE_CTX" \
        -v lbinfo="$lbinfo" -v repack="$repack" -v load="$load" -v ncpu="$(nproc)" -v fa="${fa:-unknown}" -v kv="$kv" -v lbpath="$LB" '
    function sortv(a, n,   i, j, t) { for (i = 2; i <= n; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]; a[j + 1] = t } }
    function stat(key,   n, a, i, m) {     # sets MED, SPREAD, MIN, MAX, CNT, SAMP for key
        n = cnt[key]; CNT = n; SAMP = ""
        if (n == 0) { MED = 0; SPREAD = 0; MIN = 0; MAX = 0; return }
        for (i = 1; i <= n; i++) { a[i] = val[key, i]; SAMP = SAMP (i > 1 ? "," : "") sprintf("%.4f", a[i]) }
        sortv(a, n)
        MED = n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
        SPREAD = MED > 0 ? (a[n] - a[1]) / MED : 0
        MIN = a[1]; MAX = a[n]
    }
    function esc(s) { gsub(/\\/, "\\\\", s); gsub(/"/, "\\\"", s); return s }
    $1 > 0 { k = $2 SUBSEP $3 SUBSEP $4; val[k, ++cnt[k]] = $5 }
    END {
        ne = split(engines, E, " "); nn = split(ns_list, N, ",")
        nk = split(kernels, KL, ";")
        for (i = 1; i <= nk; i++) { split(KL[i], kk, " "); if (kk[1] != "") lab["sprig-" kk[1]] = "sprig " kk[2] }
        for (i = 1; i <= ne; i++) if (!(E[i] in lab)) lab[E[i]] = E[i] ~ /^sprig-/ ? "sprig " substr(E[i], 7) : E[i]
        L = "llama.cpp"
        for (i = 1; i <= ne; i++) {
            e = E[i]; stat(e SUBSEP "dec" SUBSEP gen); dmed[e] = MED; dspr[e] = SPREAD; dbest[e] = MAX; dcnt[e] = CNT; dsamp[e] = SAMP
            for (j = 1; j <= nn; j++) { stat(e SUBSEP "fwd" SUBSEP N[j]); fmed[e, j] = MED; fspr[e, j] = SPREAD; fbest[e, j] = MIN; fcnt[e, j] = CNT; fsamp[e, j] = SAMP }
        }
        if (json) {
            printf "{\"model\":\"%s\",\"model_type\":\"%s\",\"machine\":\"%s\",\"threads\":%d,\"rounds\":%d,\"inner_reps\":%d,", esc(model), esc(mtype), esc(machine), threads, rounds, inner
            printf "\"load\":\"%s\",\"decode_tokens\":%d,\"decode_context\":%d,\"context\":%d,\"kv_type\":\"f16\",\"llamacpp\":{\"path\":\"%s\",\"info\":\"%s\",\"weights\":\"%s\",\"flash_attn\":\"%s\",\"kv_type\":\"%s\"},\"engines\":[", esc(load), gen, dctx, ctx, esc(lbpath), esc(lbinfo), esc(repack), esc(fa), esc(kv)
            for (i = 1; i <= ne; i++) {
                e = E[i]
                printf "%s{\"engine\":\"%s\",\"label\":\"%s\",\"decode\":{\"tok_s\":%.4f,\"best_tok_s\":%.4f,\"spread\":%.4f,\"samples\":[%s]", (i > 1 ? "," : ""), e, esc(lab[e]), dmed[e], dbest[e], dspr[e], dsamp[e]
                if (e != L && dmed[L] > 0) printf ",\"vs_llamacpp\":%.4f,\"best_vs_llamacpp\":%.4f", dmed[e] / dmed[L], dbest[e] / dbest[L]
                printf "},\"forward\":["
                for (j = 1; j <= nn; j++) {
                    t1 = fmed[e, 1] / N[1]; for (jj = 1; jj <= nn; jj++) if (N[jj] == 1) t1 = fmed[e, jj]
                    rt = (t1 > 0) ? fmed[e, j] / t1 : 0
                    printf "%s{\"n\":%d,\"ms\":%.4f,\"ratio_t1\":%.4f,\"best_ms\":%.4f,\"spread\":%.4f,\"samples\":[%s]", (j > 1 ? "," : ""), N[j], fmed[e, j], rt, fbest[e, j], fspr[e, j], fsamp[e, j]
                    if (e != L && fmed[L, j] > 0) printf ",\"vs_llamacpp\":%.4f,\"best_vs_llamacpp\":%.4f", fmed[e, j] / fmed[L, j], fbest[e, j] / fbest[L, j]
                    printf "}"
                }
                printf "]}"
            }
            printf "]}\n"
            exit
        }
        printf "== %s (%s)\n", model, mtype
        printf "machine    %s\n", machine
        printf "threads    %d for every engine; 1 warm-up round discarded + %d rounds, engines alternated in a fixed order each round,\n", threads, rounds
        printf "           each run a fresh process; medians over the rounds, spread = (max - min) / median across them\n"
        printf "           %s (%d CPUs: a load above that means other work shared the cores)\n", load, ncpu
        printf "llama.cpp  %s; flash attention: %s; KV %s\n", lbinfo, fa, kv
        printf "           weights: %s\n", repack
        printf "sprig      KV f16; kernels per SPRIG_KERNELS as listed\n"
        printf "\ndecode: %d tokens after %d tokens of context, tok/s = tokens / time\n", gen, dctx
        printf "%-22s %10s %8s %6s %16s %10s %16s\n", "engine", "tok/s", "spread", "runs", "sprig/llama.cpp", "best", "best sprig/l.cpp"
        for (i = 1; i <= ne; i++) {
            e = E[i]
            vs = (e != L && dmed[L] > 0) ? sprintf("%.3fx", dmed[e] / dmed[L]) : "-"
            vb = (e != L && dbest[L] > 0) ? sprintf("%.3fx", dbest[e] / dbest[L]) : "-"
            printf "%-22s %10.2f %7.1f%% %6d %16s %10.2f %16s\n", lab[e], dmed[e], 100 * dspr[e], dcnt[e], vs, dbest[e], vb
        }
        printf "\nforward of n new tokens on %d tokens of context, logits of the last token: T(n) ms median, T(n)/T(1), spread\n", ctx
        printf "%4s", "n"
        for (i = 1; i <= ne; i++) printf " | %-27s", lab[E[i]]
        printf " | T(n) sprig/llama.cpp\n%4s", ""
        for (i = 1; i <= ne; i++) printf " | %9s %8s %8s", "ms", "T/T(1)", "spread"
        printf " |"
        for (i = 1; i <= ne; i++) if (E[i] != L) printf " %12s", substr(lab[E[i]], 7, 12)
        printf "\n"
        for (j = 1; j <= nn; j++) {
            printf "%4d", N[j]
            for (i = 1; i <= ne; i++) {
                e = E[i]; t1 = fmed[e, 1] / N[1]; for (jj = 1; jj <= nn; jj++) if (N[jj] == 1) t1 = fmed[e, jj]
                rt = (t1 > 0) ? fmed[e, j] / t1 : 0
                printf " | %9.3f %8.3f %7.1f%%", fmed[e, j], rt, 100 * fspr[e, j]
            }
            printf " |"
            for (i = 1; i <= ne; i++) if (E[i] != L) { vs = (fmed[L, j] > 0) ? sprintf("%.3fx", fmed[E[i], j] / fmed[L, j]) : "-"; printf " %12s", vs }
            printf "\n"
        }
        printf "\nthe same, best round: each T(n) the fastest of its %d rounds (the least disturbed by other work; rounds may differ per n): T(n) ms, T(n)/T(1)\n%4s", rounds, "n"
        for (i = 1; i <= ne; i++) printf " | %-18s", lab[E[i]]
        printf " | T(n) sprig/llama.cpp\n"
        for (j = 1; j <= nn; j++) {
            printf "%4d", N[j]
            for (i = 1; i <= ne; i++) {
                e = E[i]; t1 = fbest[e, 1] / N[1]; for (jj = 1; jj <= nn; jj++) if (N[jj] == 1) t1 = fbest[e, jj]
                rt = (t1 > 0) ? fbest[e, j] / t1 : 0
                printf " | %9.3f %8.3f", fbest[e, j], rt
            }
            printf " |"
            for (i = 1; i <= ne; i++) if (E[i] != L) { vs = (fbest[L, j] > 0) ? sprintf("%.3fx", fbest[E[i], j] / fbest[L, j]) : "-"; printf " %12s", vs }
            printf "\n"
        }
        printf "\n"
    }' "$S"
done
exit $rc
