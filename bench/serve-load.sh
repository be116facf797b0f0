#!/bin/sh
# bench/serve-load.sh — a bounded load test of `sprig serve` with wrk
# (Debian's `wrk`): C connections for D seconds, twice, against one server
# on loopback, every request the same greedy completion, so every response
# must carry exactly the text a first request got. Reports requests/s,
# tokens/s, p50/p99 latency, non-2xx responses, wrong texts, and the
# server's RSS after each run (a leak shows as growth between them).
#
#   sh bench/serve-load.sh MODEL [serve options...]
#   C=8 D=60 N=32 SPRIG=./sprig sh bench/serve-load.sh models/stories-1b-q8_0.gguf --parallel 4 --draft DRAFT --tree auto
#
# Exit status: 0 when both runs had no error and no wrong text, 1 otherwise.
# SPRIG=build-asan/sprig with a short D runs the same under the sanitizers
# (the server's exit status and log are checked after SIGTERM).
set -u
SPRIG=${SPRIG:-./sprig}
C=${C:-8}; D=${D:-60}; N=${N:-32}; PORT=${PORT:-$(( 30000 + $$ % 20000 ))}
[ $# -ge 1 ] || { echo "usage: sh $0 MODEL [serve options...]" >&2; exit 2; }
command -v wrk >/dev/null 2>&1 || { echo "serve-load: skipped: wrk is not installed (apt-get install wrk)" >&2; exit 3; }
M=$1; shift
OUT=${OUT:-build/serve-load}
mkdir -p "$OUT" || exit 1
"$SPRIG" serve -m "$M" --port "$PORT" --queue 64 "$@" >"$OUT/server.log" 2>&1 &
SP=$!
trap 'kill $SP 2>/dev/null' EXIT
for i in $(seq 1 300); do curl -s -o /dev/null "http://127.0.0.1:$PORT/health" && break; sleep 0.1; done
BODY="{\"prompt\":\"Once upon a time\",\"max_tokens\":$N,\"temperature\":0}"
curl -s -H 'Content-Type: application/json' -d "$BODY" "http://127.0.0.1:$PORT/v1/completions" >"$OUT/first.json" || exit 1
# the text exactly as the server serialises it: every response must contain it
sed -n 's/.*\("text":"\([^"\\]\|\\.\)*"\).*/\1/p' "$OUT/first.json" >"$OUT/expect"
[ -s "$OUT/expect" ] || { echo "serve-load: no text in the first response: $(head -c 300 "$OUT/first.json")" >&2; exit 1; }
cat >"$OUT/post.lua" <<EOF
wrk.method = "POST"
wrk.body = '$BODY'
wrk.headers["Content-Type"] = "application/json"
local f = io.open("$OUT/expect"); local expect = f:read("*a"):gsub("\n\$", ""); f:close()
local threads = {}
function setup(thread) table.insert(threads, thread) end
function init(args) bad = 0; seen = 0 end
function response(status, headers, body)
  seen = seen + 1
  if status ~= 200 or not body:find(expect, 1, true) then bad = bad + 1 end
end
function done(summary, latency, requests)
  local b, s = 0, 0
  for _, t in ipairs(threads) do b = b + t:get("bad"); s = s + t:get("seen") end
  io.write(string.format("RESULT requests %d seconds %.2f rps %.2f p50_ms %.1f p99_ms %.1f non2xx %d errors %d wrong_or_failed %d checked %d\\n",
    summary.requests, summary.duration / 1e6, summary.requests / (summary.duration / 1e6), latency:percentile(50) / 1e3,
    latency:percentile(99) / 1e3, summary.errors.status, summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout, b, s))
end
EOF
rc=0
for run in 1 2; do
    wrk -t 2 -c "$C" -d "${D}s" --timeout 120s -s "$OUT/post.lua" "http://127.0.0.1:$PORT/v1/completions" >"$OUT/wrk$run.txt" 2>&1
    R=$(grep '^RESULT' "$OUT/wrk$run.txt")
    RSS=$(awk '/VmRSS/ { print $2 }' "/proc/$SP/status" 2>/dev/null)
    echo "run $run: $R rss_kb $RSS" | tee -a "$OUT/results"
    set -- $R
    tok_s=$(awk -v r="$7" -v n="$N" 'BEGIN { printf "%.1f", r * n }')
    echo "run $run: $C connections, $D s: $7 requests/s, $tok_s tokens/s, p50 $9 ms, p99 ${11} ms, non-2xx ${13}, socket errors ${15}, wrong or failed ${17} of ${19} checked, server RSS $RSS kB"
    [ "${13}" = 0 ] && [ "${15}" = 0 ] && [ "${17}" = 0 ] && [ "${19}" -gt 0 ] || rc=1
done
kill -TERM $SP; wait $SP; src=$?
trap - EXIT
[ $src -eq 0 ] || { echo "serve-load: the server exited $src on SIGTERM" >&2; rc=1; }
if grep -q Sanitizer "$OUT/server.log"; then echo "serve-load: sanitizer report in $OUT/server.log" >&2; rc=1; fi
exit $rc
