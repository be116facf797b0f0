#!/bin/sh
# tests/test-cli-bench-compare.sh — bench/llamacpp-compare.sh end to end on
# stories260K with a stand-in llama-bench (a script that answers like
# llama-bench's -o jsonl and -v with fixed timings), so the parsing, the
# medians, T(n)/T(1), the sprig/llama.cpp ratios, the repack report and the
# JSON are checked without llama.cpp installed; the skip without
# LLAMA_BENCH; and the `sprig bench forward/decode` options the script uses
# (--logits last, --kv-type f16) with their usage errors. Speed itself is
# never asserted. Run by tests/run.sh with $SPRIG_BIN and $SPRIG_SHARED set,
# cwd = repo root.
set -u
BIN=${SPRIG_BIN:-./sprig}
SHARED=${SPRIG_SHARED:-../shared}
MODEL="$SHARED/models/stories260K.gguf"
TMP=$(mktemp -d "${TMPDIR:-/tmp}/sprig-cli-cmp-XXXXXX")
trap 'rm -rf "$TMP"' EXIT
fail=0
check() { d=$1; shift; if "$@"; then :; else echo "FAIL: $d"; fail=1; fi; }
has() { grep -F -q -- "$1" "$2"; }

# sprig bench forward --logits last --kv-type f16: the options reach the run
"$BIN" bench forward -m "$MODEL" -t 1 --ns 1,2 --reps 1 --logits last --kv-type f16 --json >"$TMP/f.json" 2>"$TMP/err"; rc=$?
check "bench forward --logits last --kv-type f16 exits 0 (rc $rc: $(head -c 200 "$TMP/err"))" [ $rc -eq 0 ]
check "bench forward reports logits last" has '"logits":"last"' "$TMP/f.json"
check "bench forward reports kv_type f16" has '"kv_type":"f16"' "$TMP/f.json"
"$BIN" bench forward -m "$MODEL" -t 1 --ns 1 --reps 1 --json >"$TMP/f2.json" 2>"$TMP/err"; rc=$?
check "bench forward defaults to every row's logits and an f32 cache (rc $rc)" \
    sh -c "[ $rc -eq 0 ] && grep -q '\"logits\":\"all\",\"kv_type\":\"f32\"' '$TMP/f2.json'"
# --prefetch both: each n timed under both schemes in one process, far/near per n
"$BIN" bench forward -m "$MODEL" -t 1 --ns 1,2 --reps 2 --prefetch both --json >"$TMP/fp.json" 2>"$TMP/err"; rc=$?
check "bench forward --prefetch both exits 0 (rc $rc: $(head -c 200 "$TMP/err"))" [ $rc -eq 0 ]
check "bench forward --prefetch both reports rows of both schemes and their ratio" \
    sh -c "grep -q '\"prefetch\":\"both\"' '$TMP/fp.json' && [ \$(grep -o '\"prefetch\":\"near\"' '$TMP/fp.json' | wc -l) -eq 2 ] \
           && [ \$(grep -o '\"prefetch\":\"far\",\"far_over_near\":[0-9]' '$TMP/fp.json' | wc -l) -eq 2 ]"
"$BIN" bench forward -m "$MODEL" -t 1 --ns 1 --reps 1 --prefetch near --json >"$TMP/fn.json" 2>"$TMP/err"; rc=$?
check "bench forward --prefetch near runs and says so (rc $rc)" sh -c "[ $rc -eq 0 ] && grep -q '\"prefetch\":\"near\"' '$TMP/fn.json'"
SPRIG_PREFETCH=far "$BIN" bench forward -m "$MODEL" -t 1 --ns 1 --reps 1 --json >"$TMP/fe.json" 2>"$TMP/err"; rc=$?
check "SPRIG_PREFETCH=far reaches the kernels' scheme (rc $rc)" sh -c "[ $rc -eq 0 ] && grep -q '\"prefetch\":\"far\"' '$TMP/fe.json'"
SPRIG_PREFETCH=sideways "$BIN" bench forward -m "$MODEL" -t 1 --ns 1 --reps 1 >/dev/null 2>"$TMP/err"; rc=$?
check "SPRIG_PREFETCH=sideways is ignored with a warning naming it (rc $rc)" sh -c "[ $rc -eq 0 ] && grep -q SPRIG_PREFETCH '$TMP/err'"
"$BIN" bench decode -m "$MODEL" -t 1 -n 8 --kv-type f16 --json >"$TMP/d.json" 2>"$TMP/err"; rc=$?
check "bench decode --kv-type f16 exits 0 (rc $rc: $(head -c 200 "$TMP/err"))" [ $rc -eq 0 ]
check "bench decode reports kv_type and the mean" sh -c "grep -q '\"kv_type\":\"f16\"' '$TMP/d.json' && grep -q ms_per_token_mean '$TMP/d.json'"
for bad in "forward --logits some" "forward --kv-type q8_0" "forward --prefetch" "forward --prefetch l3" "decode --kv-type" "spec --kv-type f16" \
           "spec --draft-ngram --cfg dyn:4:3:2" "spec --draft-ngram --cfg chain:x" "spec --draft-ngram --cfg auto:6:12:9"; do
    # shellcheck disable=SC2086
    "$BIN" bench $bad -m "$MODEL" >/dev/null 2>"$TMP/bad"; rc=$?
    check "bench $bad exits 2 with a message (rc $rc)" sh -c "[ $rc -eq 2 ] && [ -s '$TMP/bad' ]"
done

# The kernels' own ceilings and the attention bench: fields present, a
# ceiling measured on a SIMD machine (none under SPRIG_NO_SIMD), bad shapes refused.
check "bench forward reports the ceiling and its type mix" sh -c "grep -q '\"ceiling_gops\":' '$TMP/f2.json' && grep -q '\"ceiling_mix\":\"' '$TMP/f2.json' && grep -q fraction_of_ceiling '$TMP/f2.json'"
"$BIN" bench matmul --type q4_k --in 512 --out 64 --ns 1,3 --reps 1 -t 1 --json >"$TMP/m.json" 2>"$TMP/err"; rc=$?
check "bench matmul q4_k exits 0 (rc $rc: $(head -c 200 "$TMP/err"))" [ $rc -eq 0 ]
if [ "${SPRIG_NO_SIMD:-0}" = 1 ]; then
    check "bench matmul: no ceiling without SIMD kernels" has '"ceiling_gops":-1.00' "$TMP/m.json"
else
    check "bench matmul: a positive ceiling and its row count" sh -c "grep -q '\"ceiling_gops\":[1-9]' '$TMP/m.json' && grep -q '\"ceiling_rows\":[1-8],' '$TMP/m.json'"
fi
"$BIN" bench attention --heads 8 --kv-heads 2 --hd 64 --ctx 96 --ns 1,4 --reps 1 -t 2 --json >"$TMP/a.json" 2>"$TMP/err"; rc=$?
check "bench attention exits 0 (rc $rc: $(head -c 200 "$TMP/err"))" [ $rc -eq 0 ]
check "bench attention reports both tree sizes with a ceiling" sh -c "grep -q '\"n\":1,' '$TMP/a.json' && grep -q '\"n\":4,' '$TMP/a.json' && grep -q '\"ceiling_gflops\":[1-9]' '$TMP/a.json'"
"$BIN" bench attention --ctx 64 --ns 2 --reps 1 --kv-type f32 >"$TMP/a.txt" 2>"$TMP/err"; rc=$?
check "bench attention table (f32 history) exits 0 (rc $rc)" sh -c "[ $rc -eq 0 ] && grep -q 'of ceil' '$TMP/a.txt'"
for bad in "--heads 6 --kv-heads 4" "--hd 300" "--ctx 0" "--kv-type q8_0" "--ns 0" "--ns 300"; do
    # shellcheck disable=SC2086
    "$BIN" bench attention $bad --reps 1 >/dev/null 2>"$TMP/bad"; rc=$?
    check "bench attention $bad exits non-zero with a message (rc $rc)" sh -c "[ $rc -ne 0 ] && [ -s '$TMP/bad' ]"
done

# Without LLAMA_BENCH the script says so and exits 3.
LLAMA_BENCH= sh bench/llamacpp-compare.sh "$MODEL" >"$TMP/o" 2>"$TMP/skip"; rc=$?
check "compare without LLAMA_BENCH exits 3 (rc $rc)" [ $rc -eq 3 ]
check "compare without LLAMA_BENCH names it" has "LLAMA_BENCH" "$TMP/skip"

# A stand-in llama-bench: decode (-p 0 -n G) takes 1 ms per token; a prompt
# of n tokens takes samples 1n, 3n, 2n ms (median 2n ms); -v prints the load
# lines of a model whose weights were partly repacked.
cat >"$TMP/llama-bench" <<'EOF'
#!/bin/sh
p=512 n=128 d=0 v=0
while [ $# -gt 0 ]; do
    case $1 in
    --help) echo "  -d, --n-depth <n>                                 (default: 0)"; exit 0 ;;
    -p) p=$2; shift ;; -n) n=$2; shift ;; -d) d=$2; shift ;; -v) v=1 ;;
    esac
    shift
done
if [ $v = 1 ]; then
    echo "done_getting_tensors: tensor 'token_embd.weight' (q6_K) (and 2 others) cannot be used with preferred buffer type CPU_REPACK, using CPU instead" >&2
    echo "load_tensors:   CPU_Mapped model buffer size =    10.50 MiB" >&2
    echo "load_tensors:   CPU_REPACK model buffer size =    20.25 MiB" >&2
    echo "resolve_fused_ops: Flash Attention enabled" >&2
fi
for pp in $(echo "$p" | tr , ' '); do
    if [ "$pp" = 0 ]; then s="$((n * 1000000))"; else s="$((pp * 1000000)), $((pp * 3000000)), $((pp * 2000000))"; fi
    echo "{\"build_commit\": \"fake123\", \"backends\": \"CPU\", \"model_type\": \"fake 260K\", \"type_k\": \"f16\", \"n_prompt\": $pp, \"n_gen\": $n, \"n_depth\": $d, \"samples_ns\": [ $s ], \"samples_ts\": [ 1 ]}"
done
EOF
chmod +x "$TMP/llama-bench"
export LLAMA_BENCH="$TMP/llama-bench" SPRIG_COMPARE_KERNELS=reference ROUNDS=1 INNER=1 GEN=8 NS=1,2,4 SPRIG_BENCH_THREADS=1 OUT="$TMP/out"
sh bench/llamacpp-compare.sh "$MODEL" >"$TMP/table" 2>"$TMP/err"; rc=$?
check "compare exits 0 (rc $rc: $(head -c 300 "$TMP/err"))" [ $rc -eq 0 ]
check "table names the CPU" has "machine " "$TMP/table"
check "table reports the repack mode" has "repacked (CPU_REPACK); 3 tensors have no repacked layout (first: token_embd.weight, q6_K); buffers: CPU_Mapped 10.50 MiB, CPU_REPACK 20.25 MiB" "$TMP/table"
check "table reports flash attention" has "flash attention: enabled" "$TMP/table"
check "llama.cpp decode is 8 tokens / 8 ms = 1000 tok/s" sh -c "grep -E '^llama\.cpp +1000\.00 ' '$TMP/table' >/dev/null"
check "llama.cpp T(4) is the median 8 ms, T(4)/T(1) = 4" sh -c "grep -E '^   4 \|.*\| +8\.000 +4\.000 ' '$TMP/table' >/dev/null"
check "a sprig decode row has a figure" sh -c "grep -E '^sprig [a-z0-9-]+ +[0-9]+\.[0-9]{2} ' '$TMP/table' >/dev/null"
# the ratio column is sprig's T(n) over llama.cpp's
awk -F'|' '$1 ~ /^ +2 $/ { split($2, s, " "); split($3, l, " "); r = $4; sub(/x/, "", r); want = s[1] / l[1];
    ok = (want - r < 0.002 && r - want < 0.002); exit !ok }' "$TMP/table"
check "T(2) ratio column = sprig ms / llama.cpp ms" [ $? -eq 0 ]

sh bench/llamacpp-compare.sh --json "$MODEL" >"$TMP/j" 2>"$TMP/err"; rc=$?
check "compare --json exits 0 (rc $rc)" [ $rc -eq 0 ]
check "--json prints one line per model" [ "$(wc -l <"$TMP/j")" -eq 1 ]
check "--json has llama.cpp's T(2) = 4 ms, ratio 2" has '"n":2,"ms":4.0000,"ratio_t1":2.0000' "$TMP/j"
check "--json has sprig against llama.cpp" has '"vs_llamacpp":' "$TMP/j"
if command -v python3 >/dev/null 2>&1; then
    python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$TMP/j"
    check "--json parses as JSON" [ $? -eq 0 ]
fi
check "--json has the best round" has '"best_ms":' "$TMP/j"
sh bench/llamacpp-compare.sh --report "$MODEL" >"$TMP/again" 2>"$TMP/err"; rc=$?
check "--report exits 0 (rc $rc: $(head -c 200 "$TMP/err"))" [ $rc -eq 0 ]
check "--report prints the same llama.cpp rows from the saved samples" \
    sh -c "grep -E '^   4 \|.*\| +8\.000 +4\.000 ' '$TMP/again' >/dev/null && grep -q 'best round' '$TMP/again'"
OUT="$TMP/empty" sh bench/llamacpp-compare.sh --report "$MODEL" >/dev/null 2>"$TMP/bad"; rc=$?
check "--report without samples exits 1 saying so (rc $rc)" sh -c "[ $rc -eq 1 ] && grep -q 'no samples' '$TMP/bad'"
NS=1,x sh bench/llamacpp-compare.sh "$MODEL" >/dev/null 2>"$TMP/bad"; rc=$?
check "compare with a bad NS exits 2 (rc $rc)" [ $rc -eq 2 ]

[ $fail -eq 0 ] && echo "test-cli-bench-compare: all checks passed"
exit $fail
