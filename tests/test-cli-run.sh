#!/bin/sh
# tests/test-cli-run.sh — `sprig run` end to end: the default model and
# llama2.c's published greedy text, stdout = prompt + generation exactly,
# speculative flags (output identical, path reported, --stats-json), the
# SPRIG_TREE switch, --prompt-cache (a second run reuses the first's rows:
# same text as without it, the reuse reported; another model's file and a
# truncated one refused naming why, exit 1), and bad usage (exit 2) /
# runtime failures (exit 1).
# Run by tests/run.sh with $SPRIG_BIN and $SPRIG_SHARED set, cwd = repo root.
set -u
BIN=${SPRIG_BIN:-./sprig}
SHARED=${SPRIG_SHARED:-../shared}
M="$SHARED/models"
TMP=$(mktemp -d "${TMPDIR:-/tmp}/sprig-cli-run-XXXXXX")
trap 'rm -rf "$TMP"' EXIT
fail=0
check() { d=$1; shift; if "$@"; then :; else echo "FAIL: $d"; fail=1; fi; }
has() { grep -F -q -- "$1" "$2"; }

cat >"$TMP/want200" <<'TXT'
Once upon a time, there was a little girl named Lily. She loved to play outside in the park. One day, she saw a big, red ball. She wanted to play with it, but it was too high.
Lily's mom said, "Lily, let's go to the park." Lily was sad and didn't know what to do. She said, "I want to play with your ball, but I can't find it."
Lily was sad and didn't know what to do. She said, "I'm sorry, Lily. I didn't know what to do."
Lily didn't want to help her mom, so she
TXT
printf '%s' "$(cat "$TMP/want200")" >"$TMP/want"

# the default model (found through $SPRIG_MODEL here, as CI's checkout has no models/)
SPRIG_MODEL="$M/stories260K.gguf" "$BIN" run --temp 0 -n 200 -t 1 >"$TMP/out" 2>"$TMP/err"; rc=$?
check "default model run exits 0 (rc $rc)" [ $rc -eq 0 ]
check "greedy 200 tokens from BOS = llama2.c's published text" cmp -s "$TMP/out" "$TMP/want"
check "stderr reports decode speed" has "decode 199 tokens" "$TMP/err"
check "stderr says which path ran" has "decoding path: plain" "$TMP/err"

# the plain-C reference kernels give the same bits, hence the same text
SPRIG_NO_SIMD=1 "$BIN" run -m "$M/stories260K.gguf" --temp 0 -n 200 -t 1 >"$TMP/ref" 2>"$TMP/referr"
check "SPRIG_NO_SIMD=1 runs the reference kernels" has "kernels reference" "$TMP/referr"
"$BIN" run -m "$M/stories260K.gguf" --draft-ngram --tree-nodes 3 --tree-depth 4 -n 4 >/dev/null 2>"$TMP/tn"; rc=$?
check "--tree-nodes below the depth + 1 exits 2 naming both (rc $rc)" sh -c "[ $rc -eq 2 ] && grep -q 'tree-nodes 3 is less than the depth 4' '$TMP/tn'"
"$BIN" run -m "$M/stories260K.gguf" --draft-oracle "$TMP/none.ids" -n 4 >/dev/null 2>"$TMP/or"; rc=$?
check "--draft-oracle with a missing file fails naming it (rc $rc)" sh -c "[ $rc -ne 0 ] && grep -q \"cannot open '$TMP/none.ids'\" '$TMP/or'"
check "reference kernels give the same greedy text" cmp -s "$TMP/ref" "$TMP/want"
SPRIG_KERNELS=reference "$BIN" run -m "$M/stories260K.gguf" --temp 0 -n 20 -t 1 >/dev/null 2>"$TMP/referr"
check "SPRIG_KERNELS=reference runs the reference kernels" has "kernels reference" "$TMP/referr"
if grep -q avx2 /proc/cpuinfo 2>/dev/null && grep -q fma /proc/cpuinfo && grep -q f16c /proc/cpuinfo; then
    SPRIG_KERNELS=avx2 "$BIN" run -m "$M/stories260K.gguf" --temp 0 -n 200 -t 1 >"$TMP/avx2" 2>"$TMP/avx2err"
    check "SPRIG_KERNELS=avx2 runs the avx2 kernels" has "kernels avx2," "$TMP/avx2err"
    check "avx2 kernels give the same greedy text" cmp -s "$TMP/avx2" "$TMP/want"
fi
SPRIG_KERNELS=bogus "$BIN" run -m "$M/stories260K.gguf" --temp 0 -n 5 -t 1 >/dev/null 2>"$TMP/boguserr"; rc=$?
check "an unknown SPRIG_KERNELS is ignored (rc $rc)" [ $rc -eq 0 ]
check "an unknown SPRIG_KERNELS is named" has "SPRIG_KERNELS='bogus'" "$TMP/boguserr"

# stdout is exactly the prompt followed by the generation
"$BIN" run -m "$M/stories260K.gguf" -p "Once upon a time" --temp 0 -n 20 -q >"$TMP/p" 2>/dev/null
check "stdout starts with the prompt" sh -c "head -c 16 '$TMP/p' | grep -q '^Once upon a time$'"
check "stdout is a prefix of the greedy text" sh -c "head -c \$(wc -c <'$TMP/p') '$TMP/want' | cmp -s - '$TMP/p'"
check "and longer than the prompt" [ "$(wc -c <"$TMP/p")" -gt 40 ]

# speculative runs: identical output, path and statistics reported
for spec in "--draft $M/stories-draft.gguf" "--mtp $M/stories-mtp.gguf" "--draft-ngram"; do
    # shellcheck disable=SC2086
    "$BIN" run --temp 0 -n 200 -t 1 -m "$M/stories260K.gguf" $spec --tree --tree-branches 2 --draft-max 5 \
        --stats-json "$TMP/stats.json" >"$TMP/s" 2>"$TMP/serr"; rc=$?
    check "$spec --tree exits 0" [ $rc -eq 0 ]
    check "$spec --tree output = plain greedy" cmp -s "$TMP/s" "$TMP/want"
    check "$spec --tree says the tree path ran" has "decoding path: tree" "$TMP/serr"
    check "$spec stats json path tree" has '"path":"tree"' "$TMP/stats.json"
    check "$spec stats json rounds" has '"rounds":' "$TMP/stats.json"
done
# --stats-json carries the prompt and generated ids; --top-logprobs the top
# candidates of each step. Speculative rounds read them from the verify rows
# of the accepted path: the same logits as plain decoding, so the same bytes.
tail_ids() { sed 's/.*"prompt_ids"/"prompt_ids"/' "$1"; }
"$BIN" run --temp 0 -n 200 -t 2 -m "$M/stories260K.gguf" --top-logprobs 5 --stats-json "$TMP/lp.json" -q >/dev/null 2>&1
check "plain: prompt_ids is the BOS" has '"prompt_ids":[1],' "$TMP/lp.json"
check "plain: tokens = llama2.c's greedy text's ids" has '"tokens":[403,407,261,378,432,383,286,261,376,298,315,421,395,317,426,' "$TMP/lp.json"
check "plain: the first step's top-1 is the token, with its log-probability" has '"top_logprobs":[[{"id":403,"logprob":-' "$TMP/lp.json"
check "plain: 200 steps of 5" [ "$(grep -o '"logprob"' "$TMP/lp.json" | wc -l)" -eq 1000 ]
tail_ids "$TMP/lp.json" >"$TMP/lp.plain"
for spec in "--draft $M/stories-draft.gguf --no-tree:chain" "--draft $M/stories-draft.gguf --tree --tree-branches 2:tree" \
            "--mtp $M/stories-mtp.gguf --tree:tree" "--draft-ngram --tree --draft-max 6:tree"; do
    args=${spec%:*}; path=${spec##*:}
    # shellcheck disable=SC2086
    "$BIN" run --temp 0 -n 200 -t 2 -m "$M/stories260K.gguf" $args --top-logprobs 5 --stats-json "$TMP/lp.json" -q >/dev/null 2>&1
    check "$args: the $path path ran" has "\"path\":\"$path\"" "$TMP/lp.json"
    check "$args: rounds accepted drafts" sh -c "! grep -q '\"accepted\":0,' '$TMP/lp.json'"
    tail_ids "$TMP/lp.json" >"$TMP/lp.spec"
    check "$args: ids and top log-probabilities = plain decoding's, byte for byte" cmp -s "$TMP/lp.spec" "$TMP/lp.plain"
done
"$BIN" run --temp 0 -n 5 -m "$M/stories260K.gguf" --top-logprobs 21 --stats-json "$TMP/x.json" >/dev/null 2>"$TMP/e7"; rc=$?
check "--top-logprobs 21: exit 2 (rc $rc)" [ $rc -eq 2 ]
check "--top-logprobs 21: names the flag" has "--top-logprobs" "$TMP/e7"
"$BIN" run --temp 0 -n 5 -m "$M/stories260K.gguf" --top-logprobs 5 >/dev/null 2>"$TMP/e7"; rc=$?
check "--top-logprobs without --stats-json: exit 2 (rc $rc)" [ $rc -eq 2 ]

# tree auto's planner in --stats-json: its chain and tree choices (one per round the planner chose: not a last round
# the budget cut to the bare bonus) and its verify-cost estimates,
# rows -> ms with the measurements behind each (a fresh cache directory: the session profiles, then the rounds add)
SPRIG_CACHE_DIR="$TMP/cache" "$BIN" run --temp 0 -n 64 -t 1 -m "$M/stories260K.gguf" --draft "$M/stories-draft.gguf" --tree auto \
    -p "Once upon a time" --stats-json "$TMP/plan.json" -q >/dev/null 2>&1
plan_ok=$(node -e '
const j = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8")), p = j.plan;
const ok = p && p.chains + p.trees <= j.rounds && p.chains + p.trees >= j.rounds - 2 && j.rounds > 0 && p.verify_ms.length === 14 &&
  p.verify_ms.every((c, i) => c.ms > 0 && (i === 0 || c.rows > p.verify_ms[i - 1].rows)) &&
  p.verify_ms.reduce((a, c) => a + c.samples, 0) > 2 * 11 &&   /* two profile runs per size up to the tree, and the rounds */
  p.drafting && p.drafting.wider_ms > 0 && p.drafting.wide_rounds >= 8 && p.drafting.wide_rounds <= j.rounds &&
  p.drafting.stopped_short >= 0 && p.drafting.stopped_short <= j.rounds;   /* the first 8 rounds draft wide */
process.stdout.write(ok ? "ok" : JSON.stringify(p));' "$TMP/plan.json" 2>&1)
check "tree auto: --stats-json reports the planner's choices and costs ($plan_ok)" [ "$plan_ok" = ok ]
SPRIG_TREE=1 "$BIN" run --temp 0 -n 50 -t 1 -m "$M/stories260K.gguf" --draft-ngram --stats-json "$TMP/e.json" >/dev/null 2>&1
check "SPRIG_TREE=1 turns tree mode on" has '"path":"tree"' "$TMP/e.json"
SPRIG_TREE=1 "$BIN" run --temp 0 -n 50 -t 1 -m "$M/stories260K.gguf" --draft-ngram --no-tree --stats-json "$TMP/e.json" >/dev/null 2>&1
check "--no-tree overrides SPRIG_TREE" has '"path":"chain"' "$TMP/e.json"
"$BIN" run -n 30 -t 1 -m "$M/stories260K.gguf" --seed 7 -q >"$TMP/a" 2>/dev/null
"$BIN" run -n 30 -t 1 -m "$M/stories260K.gguf" --seed 7 -q >"$TMP/b" 2>/dev/null
check "same seed, same output" cmp -s "$TMP/a" "$TMP/b"
"$BIN" run -n 30 -t 1 -m "$M/stories260K.gguf" --seed 7 -q --draft "$M/stories-draft.gguf" --tree >"$TMP/c" 2>/dev/null; rc=$?
check "sampling with a tree drafter runs" [ $rc -eq 0 ]

# bad usage: exit 2 with a message naming the flag
bad() { # bad DESCRIPTION WORD -- ARGS...
    d=$1; w=$2; shift 2
    "$BIN" run -m "$M/stories260K.gguf" "$@" >/dev/null 2>"$TMP/bad"; rc=$?
    check "$d exits 2 (rc $rc)" [ $rc -eq 2 ]
    check "$d names '$w'" has "$w" "$TMP/bad"
}
bad "negative -n" "-n" -n -5
bad "top-p > 1" "--top-p" --top-p 1.5
bad "min-p = 1" "--min-p" --min-p 1
bad "non-numeric temp" "--temp" --temp abc
bad "unknown flag" "--frobnicate" --frobnicate
bad "missing value" "--seed" --seed
bad "draft-max 0" "--draft-max" --draft-ngram --draft-max 0
bad "draft-max 100" "--draft-max" --draft-ngram --draft-max 100
bad "tree without drafter" "--tree" --tree
bad "bad kv type" "--kv-type" --kv-type q4
bad "bad kv block" "--kv-block" --kv-block 0

# runtime failures: exit 1 with a message naming the file
"$BIN" run -m "$TMP/nope.gguf" >/dev/null 2>"$TMP/e1"; rc=$?
check "missing model exits 1" [ $rc -eq 1 ]
check "missing model named" has "nope.gguf" "$TMP/e1"
printf 'not a gguf file at all' >"$TMP/junk.gguf"
"$BIN" run -m "$TMP/junk.gguf" >/dev/null 2>"$TMP/e2"; rc=$?
check "garbage model exits 1" [ $rc -eq 1 ]
"$BIN" run -m "$M/stories260K.gguf" --draft "$TMP/nope.gguf" >/dev/null 2>"$TMP/e3"; rc=$?
check "missing draft exits 1" [ $rc -eq 1 ]
check "missing draft named" has "nope.gguf" "$TMP/e3"
"$BIN" run -m "$M/stories260K.gguf" --mtp "$M/stories-draft.gguf" >/dev/null 2>"$TMP/e4"; rc=$?
check "a draft model as --mtp exits 1" [ $rc -eq 1 ]
(cd "$TMP" && SPRIG_MODEL= "$OLDPWD/$BIN" run -n 1 >/dev/null 2>"$TMP/e5"); rc=$?
if [ ! -f "$TMP/../shared/models/stories260K.gguf" ]; then
    check "no default model exits 1" [ $rc -eq 1 ]
    check "no default model says where it looked" has "models/stories260K.gguf" "$TMP/e5"
fi
"$BIN" run -m "$M/stories260K.gguf" -c 8 -n 50 --temp 0 -q >/dev/null 2>"$TMP/e6"; rc=$?
check "context limit ends the run cleanly" [ $rc -eq 0 ]
check "context limit is reported" has "context limit" "$TMP/e6"

# KV cache modes: every mode runs (greedy tree output = plain output in the
# same mode), the stats name the mode and layout; bad modes are named
"$BIN" run -m "$M/stories260K.gguf" --kv-type turbo3 -n 4 >/dev/null 2>"$TMP/k1"; rc=$?
check "unknown kv type exits 2" [ $rc -eq 2 ]
check "unknown kv type lists the modes" has "turbo4-delegated" "$TMP/k1"
for mode in int8 turbo4 turbo4-asym turbo3-asym turbo4-delegated; do
    "$BIN" run -m "$M/stories260K.gguf" --kv-type $mode --temp 0 -n 60 -t 1 -q >"$TMP/kp" 2>/dev/null
    "$BIN" run -m "$M/stories260K.gguf" --kv-type $mode --temp 0 -n 60 -t 1 -q --draft "$M/stories-draft.gguf" --tree \
        --tree-branches 2 --stats-json "$TMP/ks.json" >"$TMP/kt" 2>/dev/null; rc=$?
    check "--kv-type $mode with a tree exits 0 (rc $rc)" [ $rc -eq 0 ]
    check "--kv-type $mode: tree output = plain output" cmp -s "$TMP/kp" "$TMP/kt"
    check "--kv-type $mode: stats name the mode" has "\"kv_type\":\"$mode\"" "$TMP/ks.json"
    check "--kv-type $mode: the tree path ran" has '"path":"tree"' "$TMP/ks.json"
done
"$BIN" run -m "$M/stories260K.gguf" --kv-type int8 --kv-block 16 --temp 0 -n 60 -t 1 -q --draft-ngram --tree \
    --stats-json "$TMP/kb.json" >"$TMP/kbo" 2>/dev/null; rc=$?
check "--kv-block 16 exits 0" [ $rc -eq 0 ]
check "--kv-block runs a paged cache" has '"kv_layout":"paged"' "$TMP/kb.json"
"$BIN" run -m "$M/stories260K.gguf" --kv-type int8 --temp 0 -n 60 -t 1 -q >"$TMP/kbp" 2>/dev/null
check "a paged cache gives the dense cache's output" cmp -s "$TMP/kbo" "$TMP/kbp"
"$BIN" run -m "$M/stories260K.gguf" --kv-block 12 -n 4 >/dev/null 2>"$TMP/k2"; rc=$?
check "a block size that is not a power of two exits 1" [ $rc -eq 1 ]
check "the block size is named" has "kv_block_slots" "$TMP/k2"
"$BIN" mkmodel --preset tiny --head-dim 24 -o "$TMP/hd24.gguf" >/dev/null 2>&1
"$BIN" run -m "$TMP/hd24.gguf" --kv-type turbo4 -n 4 >/dev/null 2>"$TMP/k3"; rc=$?
check "a rotated mode on head size 24 exits 1" [ $rc -eq 1 ]
check "the head size is named" has "head size is 24" "$TMP/k3"
"$BIN" run -m "$TMP/hd24.gguf" --kv-type int8 -n 4 >/dev/null 2>&1; rc=$?
check "int8 takes head size 24" [ $rc -eq 0 ]
"$BIN" mkmodel --preset tiny --layers 16 --dim 256 --heads 4 --kv-heads 4 -o "$TMP/wide.gguf" >/dev/null 2>&1
"$BIN" run -m "$TMP/wide.gguf" -c 16777216 -n 4 >/dev/null 2>"$TMP/k4"; rc=$?   # 512 GiB of f32 cache
check "a context larger than memory exits 1 before allocating" [ $rc -eq 1 ]
check "the memory needed is given" has "GiB of memory is available" "$TMP/k4"
"$BIN" run -m "$M/stories260K.gguf" --kv-type turbo4-delegated -c 16 -n 50 --temp 0 -q --draft-ngram >/dev/null 2>"$TMP/k5"; rc=$?
check "a lossy cache filling mid-generation ends cleanly" [ $rc -eq 0 ]
check "and says so" has "context limit" "$TMP/k5"

# --prompt-cache: the first run makes the file, the second (a longer prompt) reuses it, both equal to no cache
P1="Once upon a time there was a little girl named Lily. She loved to play"
P2="$P1 in the park with her friends. One day"
for d in "" "--draft $M/stories-draft.gguf --tree"; do
    # shellcheck disable=SC2086
    "$BIN" run -m "$M/stories260K.gguf" --temp 0 -n 16 -t 1 $d -p "$P1" --prompt-cache "$TMP/pc" >/dev/null 2>"$TMP/pc1"; rc1=$?
    # shellcheck disable=SC2086
    "$BIN" run -m "$M/stories260K.gguf" --temp 0 -n 24 -t 1 $d -p "$P2" --prompt-cache "$TMP/pc" >"$TMP/pcout" 2>"$TMP/pc2"; rc2=$?
    # shellcheck disable=SC2086
    "$BIN" run -m "$M/stories260K.gguf" --temp 0 -n 24 -t 1 $d -p "$P2" >"$TMP/pcref" 2>/dev/null
    check "--prompt-cache runs exit 0 ($d: $rc1 $rc2)" [ $rc1 -eq 0 ] && [ $rc2 -eq 0 ]
    check "--prompt-cache: the second run's text equals a run without it ($d)" cmp -s "$TMP/pcout" "$TMP/pcref"
    check "--prompt-cache: the first run finds no file" has "0 tokens held, 0 of the" "$TMP/pc1"
    check "--prompt-cache: the second run reuses the first's tokens ($d)" sh -c "grep -Eq 'tokens held, [1-9][0-9]* of the' '$TMP/pc2'"
    rm -f "$TMP/pc"
done
"$BIN" run -m "$M/stories260K.gguf" --temp 0 -n 4 -t 1 -p "$P1" --prompt-cache "$TMP/pc" >/dev/null 2>&1
"$BIN" run -m "$M/stories-draft.gguf" --temp 0 -n 4 -t 1 -p "$P1" --prompt-cache "$TMP/pc" >/dev/null 2>"$TMP/pcm"; rc=$?
check "--prompt-cache from another model: exit 1 naming the model (rc $rc)" sh -c "[ $rc -eq 1 ] && grep -q 'made for another model' '$TMP/pcm'"
head -c 1000 "$TMP/pc" >"$TMP/pct"
"$BIN" run -m "$M/stories260K.gguf" --temp 0 -n 4 -t 1 -p "$P1" --prompt-cache "$TMP/pct" >/dev/null 2>"$TMP/pcm"; rc=$?
check "--prompt-cache truncated: exit 1 saying so (rc $rc)" sh -c "[ $rc -eq 1 ] && grep -q 'truncated or corrupted' '$TMP/pcm'"
"$BIN" run -m "$M/stories260K.gguf" -n 4 -p "$P1" --prompt-cache-ro >/dev/null 2>"$TMP/pcm"; rc=$?
check "--prompt-cache-ro without --prompt-cache: exit 1 naming it (rc $rc)" sh -c "[ $rc -ne 0 ] && grep -q 'needs --prompt-cache FILE' '$TMP/pcm'"
"$BIN" run -m "$M/stories260K.gguf" -n 4 -p "$P1" --prompt-cache "$TMP/nodir/x/pc" >/dev/null 2>"$TMP/pcm"; rc=$?
check "--prompt-cache in a folder that does not exist: exit 1 naming the file (rc $rc)" sh -c "[ $rc -eq 1 ] && grep -q 'cannot write' '$TMP/pcm'"
cksum <"$TMP/pc" >"$TMP/pcsum"
"$BIN" run -m "$M/stories260K.gguf" --temp 0 -n 8 -t 1 -p "$P2" --prompt-cache "$TMP/pc" --prompt-cache-ro >/dev/null 2>"$TMP/pcro"; rc=$?
check "--prompt-cache-ro reuses the file (rc $rc)" sh -c "[ $rc -eq 0 ] && grep -Eq 'tokens held, [1-9][0-9]* of the' '$TMP/pcro'"
check "--prompt-cache-ro leaves the file as it was" sh -c "cksum <'$TMP/pc' | cmp -s - '$TMP/pcsum'"
exit $fail
