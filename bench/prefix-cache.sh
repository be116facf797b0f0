#!/bin/sh
# bench/prefix-cache.sh — the prompt cache's goals, alternating sprig with
# the cache, sprig without it and llama-server with cache_prompt, R rounds,
# on one model file and the same threads (bench/prefix-cache.mjs does the
# requests and prints one JSON line per run; this prints them all and a
# summary of medians):
#   chat:   a 10-turn conversation, each turn ~200 new tokens: time to first
#           token at turn 10 (one slot each);
#   shared: 8 requests at once sharing a ~2,000-token system prompt: the
#           last one's time to first token and the prompt tokens computed
#           (sprig --parallel 8; llama-server -np 8).
#
#   sh bench/prefix-cache.sh MODEL [R=3]
#   LLAMA_SERVER=/path/to/llama-server T=2 sh bench/prefix-cache.sh /tmp/llama3-1b-q4km.gguf 3
#
# Without LLAMA_SERVER the llama-server columns are left out.
set -u
[ $# -ge 1 ] || { echo "usage: sh $0 MODEL [R]" >&2; exit 2; }
M=$1; R=${2:-3}; T=${T:-2}; SPRIG=${SPRIG:-./sprig}; C=${C:-2304}
P1=$(( 30000 + $$ % 10000 )); P2=$(( P1 + 1 )); P3=$(( P1 + 2 )); P4=$(( P1 + 3 ))
OUT=${OUT:-build/prefix-cache}; mkdir -p "$OUT" || exit 1
DIR=$(dirname "$0")
PIDS=""
trap 'kill $PIDS 2>/dev/null' EXIT
wait_up() { for i in $(seq 1 600); do curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$1/health" 2>/dev/null | grep -q 200 && return 0; sleep 0.2; done; return 1; }
"$SPRIG" serve -m "$M" --port "$P1" --parallel 1 -c "$C" -t "$T" >"$OUT/sprig-chat.log" 2>&1 & PIDS="$PIDS $!"
"$SPRIG" serve -m "$M" --port "$P2" --parallel 8 -c "$C" -t "$T" >"$OUT/sprig-shared.log" 2>&1 & PIDS="$PIDS $!"
if [ -n "${LLAMA_SERVER:-}" ]; then
    LD_LIBRARY_PATH=$(dirname "$LLAMA_SERVER") "$LLAMA_SERVER" -m "$M" --port "$P3" -c "$C" -t "$T" -np 1 >"$OUT/llama-chat.log" 2>&1 & PIDS="$PIDS $!"
    LD_LIBRARY_PATH=$(dirname "$LLAMA_SERVER") "$LLAMA_SERVER" -m "$M" --port "$P4" -c $(( C * 8 )) -t "$T" -np 8 >"$OUT/llama-shared.log" 2>&1 & PIDS="$PIDS $!"
fi
for p in $P1 $P2; do wait_up $p || { echo "prefix-cache: sprig on port $p did not start" >&2; exit 1; }; done
[ -z "${LLAMA_SERVER:-}" ] || for p in $P3 $P4; do wait_up $p || { echo "prefix-cache: llama-server on port $p did not start" >&2; exit 1; }; done
run() { node "$DIR/prefix-cache.mjs" "$@" | tee -a "$OUT/runs.jsonl"; }
: >"$OUT/runs.jsonl"
for r in $(seq 0 "$R"); do   # round 0 is the warm-up, left out of the medians
    run "http://127.0.0.1:$P1" chat true "r$r-sprig-on" | sed "s/^/round $r sprig cache   /"
    run "http://127.0.0.1:$P1" chat false "r$r-sprig-off" | sed "s/^/round $r sprig nocache /"
    [ -z "${LLAMA_SERVER:-}" ] || run "http://127.0.0.1:$P3" chat true "r$r-llama" | sed "s/^/round $r llama cache   /"
    run "http://127.0.0.1:$P2" shared true "r$r-sprig-on" | sed "s/^/round $r sprig cache   /"
    run "http://127.0.0.1:$P2" shared false "r$r-sprig-off" | sed "s/^/round $r sprig nocache /"
    [ -z "${LLAMA_SERVER:-}" ] || run "http://127.0.0.1:$P4" shared true "r$r-llama" | sed "s/^/round $r llama cache   /"
done
node -e '
const rows = require("fs").readFileSync(process.argv[1], "utf8").trim().split("\n").map(JSON.parse).filter((j) => !j.tag.startsWith("r0-"));
const who = (j) => j.tag.replace(/^r\d+-/, "");
const med = (a) => { const s = [...a].sort((x, y) => x - y); return s.length ? s[(s.length - 1) >> 1] : NaN; };
for (const mode of ["chat", "shared"]) for (const w of ["sprig-on", "sprig-off", "llama"]) {
  const js = rows.filter((j) => j.mode === mode && who(j) === w); if (!js.length) continue;
  const t = js.map((j) => j.last_ttft_ms);
  let line = `${mode.padEnd(6)} ${w.padEnd(9)} last TTFT median ${med(t).toFixed(0)} ms (${Math.min(...t).toFixed(0)}..${Math.max(...t).toFixed(0)}, n=${t.length})`;
  if (mode === "shared") line += `; tokens computed ${med(js.map((j) => j.computed))} of ${js[0].prompt_tokens}`;
  console.log(line);
}' "$OUT/runs.jsonl"
