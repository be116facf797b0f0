#!/bin/sh
# bench/serve-throughput.sh — aggregate greedy tokens/s of a server under C
# concurrent clients (bench/serve-clients.mjs: each client R requests of N
# tokens back to back, story prompts), for sprig serve's batching modes and,
# when $LLAMA_SERVER names a llama-server binary, for llama.cpp's server on
# the same files with its own continuous batching and speculative decoding.
# Configurations alternate within each round (a fresh server each, one
# short warm-up request discarded); medians over $ROUNDS rounds. Both
# engines keep K and V in $KV (default f16, llama.cpp's default), so their
# greedy texts can be compared.
#
#   sh bench/serve-throughput.sh TARGET DRAFT
#   CS="4 8" ROUNDS=3 R=2 N=128 T=2 LLAMA_SERVER=/path/llama-server sh bench/serve-throughput.sh T.gguf D.gguf
#
# Configurations ($CONFIGS, alternated; defaults below), each with
# --parallel C; a sprig one runs one shared batched verify forward per step
# unless it ends in /nobatch (each slot its own forwards):
#   plain            no drafter
#   chain:K          the draft model, chains of K drafts
#   tree:M:D:W       a dynamic tree of M nodes, D deep, W wide
#   auto:M:D:W       --tree auto within those limits
#   llama/plain      llama-server -np C (its continuous batching), no drafter
#   llama/draft:K    llama-server with the draft model (--spec-type draft-simple,
#                    --spec-draft-n-max K, --spec-draft-n-min 0)
set -u
SPRIG=${SPRIG:-./sprig}
CS=${CS:-4 8}; ROUNDS=${ROUNDS:-3}; R=${R:-2}; N=${N:-128}; T=${T:-2}
CTX=${CTX:-1024}; KV=${KV:-f16}
[ $# -eq 2 ] || { echo "usage: sh $0 TARGET DRAFT" >&2; exit 2; }
TGT=$1; DR=$2
PORT0=${PORT:-$(( 31000 + $$ % 20000 ))}; NPORT=0
OUT=${OUT:-build/serve-throughput}
mkdir -p "$OUT" || exit 1
SP=""
trap '[ -n "$SP" ] && kill $SP 2>/dev/null' EXIT

sprig_args() { # sprig_args CONFIG: the serve flags of a configuration
    base=${1%/nobatch}
    IFS=: read -r kind a1 a2 a3 <<EOF2
$base
EOF2
    case $kind in
        plain) echo "" ;;
        chain) echo "--draft $DR --draft-max $a1" ;;
        tree) echo "--draft $DR --tree --tree-nodes $a1 --draft-max $a2 --tree-width $a3" ;;
        auto) echo "--draft $DR --tree auto --tree-nodes $a1 --draft-max $a2 --tree-width $a3" ;;
    esac
}
CONFIGS=${CONFIGS:-plain chain:2 chain:3 chain:4 chain:6 tree:12:6:2 auto:12:6:2 auto:24:8:3 plain/nobatch chain:3/nobatch auto:24:8:3/nobatch}
if [ -n "${LLAMA_SERVER:-}" ]; then
    CONFIGS="$CONFIGS ${LLAMA_CONFIGS:-llama/plain llama/draft:2 llama/draft:4}"
fi

start() { # start CONFIG C (a fresh port each: a stopped server's port may linger in TIME_WAIT)
    cfg=$1; c=$2
    NPORT=$((NPORT + 1)); PORT=$((PORT0 + NPORT % 1000))
    case $cfg in
        llama/*)
            extra=""
            case $cfg in llama/draft:*) extra="--spec-type draft-simple -md $DR --spec-draft-n-max ${cfg#llama/draft:} --spec-draft-n-min 0" ;; esac
            # shellcheck disable=SC2086
            "$LLAMA_SERVER" -m "$TGT" $extra -np "$c" -c $((CTX * c)) -t "$T" -tb "$T" -ctk "$KV" -ctv "$KV" --port "$PORT" --host 127.0.0.1 \
                --no-ui >"$OUT/server.log" 2>&1 &
            ;;
        *)
            nb=""
            case $cfg in */nobatch) nb="--no-batch" ;; esac
            # shellcheck disable=SC2046,SC2086
            "$SPRIG" serve -m "$TGT" $(sprig_args "$cfg") $nb --parallel "$c" -c "$CTX" -t "$T" --kv-type "$KV" --port "$PORT" \
                >"$OUT/server.log" 2>&1 &
            ;;
    esac
    SP=$!
    for i in $(seq 1 600); do
        [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PORT/health")" = 200 ] && break
        kill -0 "$SP" 2>/dev/null || { echo "server for $cfg exited: $(tail -3 "$OUT/server.log")" >&2; return 1; }
        sleep 0.1
    done
    curl -s -o /dev/null -H 'Content-Type: application/json' -d '{"prompt":"Hi","max_tokens":8,"temperature":0}' \
        "http://127.0.0.1:$PORT/v1/completions"
}
stop() { kill "$SP" 2>/dev/null; wait "$SP" 2>/dev/null; SP=""; }

echo "== serve throughput: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores, -t $T;" \
     "target $TGT, draft $DR; $R requests x $N tokens per client"
: >"$OUT/results"
for r in $(seq 1 "$ROUNDS"); do
    for c in $CS; do
        for cfg in $CONFIGS; do
            ok=0   # a port another process took meanwhile: the next one (a missing run would skew the per-round ratios)
            for try in 1 2 3; do start "$cfg" "$c" && { ok=1; break; }; done
            [ "$ok" = 1 ] || continue
            line=$(TEXTS_OUT="$OUT/texts-$c-$(echo "$cfg" | tr /: --)" node bench/serve-clients.mjs "http://127.0.0.1:$PORT" "$c" "$R" "$N")
            batch=""
            case $cfg in llama/*|*/nobatch) ;; *) batch=$(curl -s "http://127.0.0.1:$PORT/health") ;; esac
            stop
            echo "round $r C=$c $cfg $line $batch"
            echo "$c $cfg $line" >>"$OUT/results"
        done
    done
done
echo
echo "== medians (aggregate completion tokens/s)"
node -e '
const lines = require("fs").readFileSync(process.argv[1], "utf8").trim().split("\n");
const by = {};
for (const l of lines) {
  const [c, cfg, ...rest] = l.split(" ");
  const j = JSON.parse(rest.join(" "));
  ((by[c] ??= {})[cfg] ??= []).push(j);
}
const med = a => { const s = [...a].sort((x, y) => x - y); return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2; };
for (const c of Object.keys(by)) {
  const m = {};
  for (const [cfg, runs] of Object.entries(by[c])) {
    m[cfg] = med(runs.map(j => j.tok_s));
    const errs = runs.reduce((a, j) => a + j.errors, 0), hashes = [...new Set(runs.map(j => j.texts))].join(",");
    console.log(`C=${c} ${cfg.padEnd(16)} ${m[cfg].toFixed(1).padStart(7)} tok/s  (runs ${runs.map(j => j.tok_s).join(" ")}; errors ${errs}; texts ${hashes})`);
  }
  const best = (keys) => keys.filter(k => m[k] !== undefined).reduce((b, k) => (b === null || m[k] > m[b] ? k : b), null);
  const keys = Object.keys(m), batched = keys.filter(k => !k.includes("/"));
  const tree = best(batched.filter(k => k.startsWith("tree") || k.startsWith("auto"))), chain = best(batched.filter(k => k.startsWith("chain")));
  const sprig = best(batched), llama = best(keys.filter(k => k.startsWith("llama/")));
  if (tree && chain) console.log(`C=${c} best tree (${tree}) / best chain (${chain}): ${(m[tree] / m[chain]).toFixed(3)}x`);
  const fixed = best(batched.filter(k => k.startsWith("tree") || k.startsWith("chain")));
  for (const a of batched.filter(k => k.startsWith("auto"))) {
    if (!fixed) continue;   /* tree auto against the best fixed shape, with the spread of the per-round ratios */
    const rs = by[c][a].map((j, i) => by[c][fixed][i] ? j.tok_s / by[c][fixed][i].tok_s : null).filter(x => x !== null);
    console.log(`C=${c} ${a} / best fixed (${fixed}): ${(m[a] / m[fixed]).toFixed(3)}x (per round ${rs.map(x => x.toFixed(3)).join(" ")})`);
  }
  for (const k of batched) if (m[k + "/nobatch"]) console.log(`C=${c} ${k} batched / per-slot: ${(m[k] / m[k + "/nobatch"]).toFixed(3)}x`);
  if (sprig && llama) {
    console.log(`C=${c} sprig best (${sprig}) / llama-server best (${llama}): ${(m[sprig] / m[llama]).toFixed(3)}x`);
    const f = require("fs"), rd = k => JSON.parse(f.readFileSync(process.argv[2] + "/texts-" + c + "-" + k.replace(/[/:]/g, "-"), "utf8"));
    const a = rd("plain"), b = rd("llama/plain");
    const pre = a.map((t, i) => { let k = 0; while (k < t.length && t[k] === b[i][k]) k++; return k; });
    console.log(`C=${c} texts: sprig plain and llama-server plain agree on ${a.filter((t, i) => t === b[i]).length} of ${a.length} requests` +
                ` (common prefix in characters: ${pre.map((k, i) => k + "/" + a[i].length).join(" ")})`);
  }
}' "$OUT/results" "$OUT"
