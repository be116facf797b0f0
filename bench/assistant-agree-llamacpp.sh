#!/bin/sh
# bench/assistant-agree-llamacpp.sh — an MTP drafter in sprig against
# llama.cpp's draft-mtp on the same files: the tokens each engine drafts,
# round by round. Gemma 4's assistant (ASSISTANT = its file) or a qwen35
# target's own MTP block (ASSISTANT = the target file itself).
#
#   LLAMA_SPECULATIVE=/path/to/llama-speculative-simple \
#     sh bench/assistant-agree-llamacpp.sh TARGET.gguf ASSISTANT.gguf [PROMPT]
#
# Why: node-llama-cpp (the oracle tests use) cannot draft with an assistant
# (it never gives the draft context its target), so this check needs
# llama.cpp's own tool, built from the source node-llama-cpp ships (see
# bench/llamacpp-compare.sh): cmake --build build --target
# llama-speculative-simple.
#
# Method: both engines decode greedily with K (default 3) draft tokens per
# round; llama.cpp logs each draft step's candidates (-lv 5), sprig logs each
# step's choice, runner-up and margin (SPRIG_LOG=debug). llama.cpp drafts one
# round more, first, from the last prompt token before the target has
# sampled (sprig's first round starts from the first sampled token), so its
# rounds from the second on are paired with sprig's from the first. A round
# agrees when all K drafted tokens are equal; the first step that differs is
# printed with sprig's top-2 margin (a near tie: both engines' logits are
# within rounding of each other there, and everything after it in the round
# follows a different token). Rounds pair up only while both targets
# produce the same tokens (greedy, the same file: they do, as the oracle
# test shows for f32 files); a run of differing first steps means they
# did not.
set -u
export LC_ALL=C   # llama.cpp's log prints token texts: bytes, not necessarily UTF-8
SPRIG=${SPRIG:-./sprig}
LS=${LLAMA_SPECULATIVE:-}
K=${K:-3}
N=${N:-24}
[ $# -ge 2 ] || { echo "usage: LLAMA_SPECULATIVE=... sh $0 TARGET.gguf ASSISTANT.gguf [PROMPT]" >&2; exit 2; }
T=$1; A=$2; P=${3:-Once upon a time}
if [ -z "$LS" ] || [ ! -x "$LS" ]; then
    echo "assistant-agree-llamacpp: skipped: LLAMA_SPECULATIVE is not an executable llama-speculative-simple" >&2
    exit 3
fi
OUT=${OUT:-build/assistant-agree}
mkdir -p "$OUT" || exit 1
"$LS" -m "$T" -md "$A" --spec-type draft-mtp -p "$P" -n "$N" -t 1 -c 512 --temp 0 --spec-draft-n-max "$K" -lv 5 \
    >"$OUT/llama.txt" 2>&1 || { echo "llama.cpp failed: $(tail -3 "$OUT/llama.txt")" >&2; exit 1; }
SPRIG_LOG=debug "$SPRIG" run -m "$T" --mtp "$A" --draft-max "$K" -p "$P" -n "$N" --temp 0 -t 1 \
    >"$OUT/sprig.out" 2>"$OUT/sprig.txt" || { echo "sprig failed: $(tail -3 "$OUT/sprig.txt")" >&2; exit 1; }
# llama.cpp: "draft candidate   0, pos   J:   ID" -> one line per round of ids
tr -d '\000' <"$OUT/llama.txt" | sed -n 's/.*draft candidate *0, pos *\([0-9]*\): *\([0-9]*\).*/\1 \2/p' |
    awk '$1 == 0 && NR > 1 { print line; line = "" } { line = line (line == "" ? "" : " ") $2 } END { if (line != "") print line }' \
    >"$OUT/llama.rounds"
# sprig: "draft: step J after C cached: ID (runner-up R, margin M)"
sed -n 's/.*draft: step \([0-9]*\) after [0-9]* cached: \([0-9]*\) (runner-up [0-9]*, margin \([0-9.]*\)).*/\1 \2 \3/p' "$OUT/sprig.txt" |
    awk '$1 == 0 && NR > 1 { print line; print mline > "'"$OUT/sprig.margins"'"; line = ""; mline = "" }
         { line = line (line == "" ? "" : " ") $2; mline = mline (mline == "" ? "" : " ") $3 }
         END { if (line != "") { print line; print mline > "'"$OUT/sprig.margins"'" } }' >"$OUT/sprig.rounds"
tail -n +2 "$OUT/llama.rounds" >"$OUT/llama.paired"
awk -v K="$K" '
    FILENAME == ARGV[1] { l[FNR] = $0; nl = FNR; next }
    FILENAME == ARGV[2] { m[FNR] = $0; next }
    { s[FNR] = $0; ns = FNR }
    END {
        n = nl < ns ? nl : ns; agree = 0; steps = 0; same = 0
        for (r = 1; r <= n; r++) {
            a = split(l[r], x, " "); b = split(s[r], y, " "); split(m[r], z, " ")
            first = 0
            for (j = 1; j <= (a < b ? a : b); j++) { steps++; if (x[j] == y[j] && !first) same++; else if (!first) first = j }
            if (!first) agree++   /* a round sprig cut short at the token budget compares its steps only */
            else printf "round %d: llama.cpp %s | sprig %s: first difference at step %d (sprig top-2 margin %s)\n", r, l[r], s[r], first - 1, z[first]
        }
        printf "%d of %d rounds drafted identically (%d of %d steps agree up to each round'"'"'s first difference)\n", agree, n, same, steps
    }' "$OUT/llama.paired" "$OUT/sprig.margins" "$OUT/sprig.rounds"
