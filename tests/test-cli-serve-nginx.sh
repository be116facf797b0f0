#!/bin/sh
# tests/test-cli-serve-nginx.sh — two `sprig serve` instances behind nginx
# (deploy/nginx-sprig.conf, ports and paths filled in), on loopback:
# requests are spread over both; one instance killed in the middle of a
# streamed generation fails that stream cleanly (it ends without [DONE]),
# and every request after it is answered, exactly, by the other. Also: a
# full queue answers 503 with Retry-After while the running request finishes.
# Skipped when nginx is not installed (CI installs it).
# Run by tests/run.sh with $SPRIG_BIN and $SPRIG_SHARED set, cwd = repo root.
set -u
BIN=${SPRIG_BIN:-./sprig}
SHARED=${SPRIG_SHARED:-../shared}
M="$SHARED/models"
NGINX=$(command -v nginx || echo /usr/sbin/nginx)
[ -x "$NGINX" ] && command -v curl >/dev/null 2>&1 || { echo "SKIP: nginx and curl are needed"; exit 0; }
TMP=$(mktemp -d "${TMPDIR:-/tmp}/sprig-nginx-XXXXXX")
PIDS=""
trap 'for p in $PIDS; do kill "$p" 2>/dev/null; done; rm -rf "$TMP"' EXIT
fail=0
check() { d=$1; shift; if "$@"; then :; else echo "FAIL: $d"; fail=1; fi; }

# a model slow enough (a few thousand tokens a second) to kill an instance mid-stream
"$BIN" mkmodel --dim 512 --layers 8 --heads 8 --kv-heads 4 --ffn 1024 --type q8_0 --widen "$M/stories260K.gguf" -q -o "$TMP/m.gguf" || exit 1
BASE=$(( 20000 + ($$ * 13) % 20000 ))
PA=$BASE; PB=$((BASE + 1)); PL=$((BASE + 2))
"$BIN" serve -m "$TMP/m.gguf" --port "$PA" -t 1 -c 4096 >"$TMP/a.log" 2>&1 & PIDA=$!
"$BIN" serve -m "$TMP/m.gguf" --port "$PB" -t 1 -c 4096 >"$TMP/b.log" 2>&1 & PIDB=$!
PIDS="$PIDA $PIDB"
mkdir -p "$TMP/logs"
sed -e "s|PREFIX|$TMP|g" -e "s|PORT_A|$PA|" -e "s|PORT_B|$PB|" -e "s|PORT_LB|$PL|" deploy/nginx-sprig.conf >"$TMP/nginx.conf"
"$NGINX" -p "$TMP" -c "$TMP/nginx.conf" -g 'daemon off;' >"$TMP/nginx.out" 2>&1 &
PIDS="$PIDS $!"
for i in $(seq 1 100); do
    curl -s -o /dev/null "http://127.0.0.1:$PA/health" && curl -s -o /dev/null "http://127.0.0.1:$PB/health" &&
        curl -s -o /dev/null "http://127.0.0.1:$PL/health" && break
    sleep 0.1
done
LB="http://127.0.0.1:$PL"
check "nginx answers for the instances" sh -c "curl -s '$LB/health' | grep -q ok"

BODY='{"prompt":"Once upon a time","max_tokens":24,"temperature":0}'
curl -s -H 'Content-Type: application/json' -d "$BODY" "http://127.0.0.1:$PA/v1/completions" | sed -n 's/.*\("text":"[^"]*"\).*/\1/p' >"$TMP/want"
for i in 1 2 3 4 5 6 7 8; do
    curl -s -H 'Content-Type: application/json' -d "$BODY" "$LB/v1/completions" >"$TMP/r$i" &
done
wait_for() { for i in $(seq 1 200); do [ "$(grep -l text_completion "$TMP"/r[1-8] 2>/dev/null | wc -l)" -ge 8 ] && return 0; sleep 0.05; done; return 1; }
wait_for
NA=$(grep -c '/v1/completions 200' "$TMP/a.log"); NB=$(grep -c '/v1/completions 200' "$TMP/b.log")
check "requests spread over both instances (a $NA incl. the probe, b $NB)" [ "$NA" -ge 2 ] && [ "$NB" -ge 1 ]
check "every spread answer exact" sh -c "for f in '$TMP'/r[1-8]; do grep -qF \"\$(cat '$TMP/want')\" \"\$f\" || exit 1; done"

# a long stream through nginx; kill the instance that serves it
curl -sN -H 'Content-Type: application/json' -d '{"prompt":"Once upon a time","max_tokens":3500,"temperature":0,"stream":true}' \
    "$LB/v1/completions" >"$TMP/stream" 2>/dev/null &
CP=$!
for i in $(seq 1 100); do grep -q 'stream 200' "$TMP/a.log" "$TMP/b.log" && break; sleep 0.05; done
sleep 0.3
if grep -q 'stream 200' "$TMP/a.log"; then VICTIM=$PIDA; SURVIVOR=b; else VICTIM=$PIDB; SURVIVOR=a; fi
kill -9 "$VICTIM"
wait "$CP" 2>/dev/null
check "the killed instance's stream had begun" grep -q '^data: {' "$TMP/stream"
check "and ends without [DONE] (it failed, visibly)" sh -c "! grep -q 'DONE' '$TMP/stream'"
before=$(grep -c '/v1/completions 200' "$TMP/$SURVIVOR.log")
ok=0
for i in 1 2 3 4 5 6; do
    code=$(curl -s -o "$TMP/after$i" -w '%{http_code}' -H 'Content-Type: application/json' -d "$BODY" "$LB/v1/completions")
    [ "$code" = 200 ] && grep -qF "$(cat "$TMP/want")" "$TMP/after$i" && ok=$((ok + 1))
done
after=$(grep -c '/v1/completions 200' "$TMP/$SURVIVOR.log")
check "all 6 requests after the kill answered exactly ($ok)" [ "$ok" -eq 6 ]
check "by the surviving instance ($before -> $after)" [ $((after - before)) -eq 6 ]

# a full queue answers 503 with Retry-After (one slot busy, no queue), never touching the running request
PC=$((BASE + 3))
"$BIN" serve -m "$TMP/m.gguf" --port "$PC" -t 1 -c 4096 --queue 0 >"$TMP/c.log" 2>&1 &
PIDS="$PIDS $!"
for i in $(seq 1 100); do curl -s -o /dev/null "http://127.0.0.1:$PC/health" && break; sleep 0.1; done
curl -sN -H 'Content-Type: application/json' -d '{"prompt":"Once upon a time","max_tokens":1500,"temperature":0,"stream":true}' \
    "http://127.0.0.1:$PC/v1/completions" >"$TMP/long" 2>"$TMP/long.err" &
LP=$!
for i in $(seq 1 100); do grep -q 'stream 200' "$TMP/c.log" && break; sleep 0.05; done
code=$(curl -s -D "$TMP/h503" -o "$TMP/b503" -w '%{http_code}' -H 'Content-Type: application/json' -d "$BODY" "http://127.0.0.1:$PC/v1/completions")
check "queue full: 503 (got $code)" [ "$code" = 503 ]
check "queue full: Retry-After" grep -qi '^Retry-After: 1' "$TMP/h503"
wait "$LP"
check "the running request still completes ($(tail -c 80 "$TMP/long" | tr "\n" " "))" sh -c "tail -c 20 '$TMP/long' | grep -q DONE"

[ $fail -eq 0 ] && echo "test-cli-serve-nginx: ok"
exit $fail
