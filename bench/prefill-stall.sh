#!/bin/sh
# bench/prefill-stall.sh — chunked prefill against the streams already running:
# for each --prefill-chunk value (0: not chunked, the prompt on its own
# threads), a fresh `sprig serve --parallel S+1` and bench/prefill-stall.mjs
# (S streams, then a PROMPT-token prompt alone and beside them), R rounds
# alternating the values; prints the JSON lines and a median summary.
#
#   sh bench/prefill-stall.sh MODEL [R=2] [VALUES="0 32 64 128 256"] [serve options...]
#   S=3 PROMPT=4000 T=2 sh bench/prefill-stall.sh /tmp/llama3-1b-q4km.gguf 2 "0 32 64"
set -u
[ $# -ge 1 ] || { echo "usage: sh $0 MODEL [R] [VALUES] [serve options...]" >&2; exit 2; }
M=$1; R=${2:-2}; VALUES=${3:-"0 32 64 128 256"}; shift; [ $# -gt 0 ] && shift; [ $# -gt 0 ] && shift
S=${S:-3}; PROMPT=${PROMPT:-4000}; T=${T:-2}; SPRIG=${SPRIG:-./sprig}; C=${C:-$(( PROMPT + PROMPT / 4 + 512 ))}
OUT=${OUT:-build/prefill-stall}; mkdir -p "$OUT" || exit 1
PORT=$(( 30000 + $$ % 10000 )); DIR=$(dirname "$0"); SP=
trap 'kill $SP 2>/dev/null' EXIT
: >"$OUT/runs.jsonl"
for r in $(seq 1 "$R"); do
    for v in $VALUES; do
        "$SPRIG" serve -m "$M" --port "$PORT" --parallel $(( S + 1 )) -c "$C" -t "$T" --prefill-chunk "$v" "$@" >"$OUT/serve-$v.log" 2>&1 & SP=$!
        for i in $(seq 1 600); do curl -s -o /dev/null "http://127.0.0.1:$PORT/health" && break; sleep 0.2; done
        line=$(node "$DIR/prefill-stall.mjs" "http://127.0.0.1:$PORT" "$S" "$PROMPT" "r$r-c$v") || exit 1
        echo "{\"chunk\":$v,${line#\{}" | tee -a "$OUT/runs.jsonl"
        kill "$SP"; wait "$SP" 2>/dev/null; SP=
    done
done
node -e '
const rows = require("fs").readFileSync(process.argv[1], "utf8").trim().split("\n").map(JSON.parse);
const med = (a) => { const s = [...a].sort((x, y) => x - y); return s[(s.length - 1) >> 1]; };
for (const v of [...new Set(rows.map((j) => j.chunk))]) {
  const js = rows.filter((j) => j.chunk === v);
  console.log(`--prefill-chunk ${String(v).padStart(4)}: prefill beside the streams / alone ${med(js.map((j) => j.prefill_ratio)).toFixed(2)}x; ` +
    `stream gap p99 ${med(js.map((j) => j.gap_during_ms.p99)).toFixed(0)} ms vs ${med(js.map((j) => j.gap_before_ms.p99)).toFixed(0)} ms before ` +
    `(${med(js.map((j) => j.p99_ratio)).toFixed(2)}x), p50 ${med(js.map((j) => j.gap_during_ms.p50)).toFixed(0)} vs ${med(js.map((j) => j.gap_before_ms.p50)).toFixed(0)} ms (n=${js.length})`);
}' "$OUT/runs.jsonl"
