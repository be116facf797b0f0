#!/bin/sh
# bench/kv-agree-llamacpp.sh — how often llama.cpp's greedy choice with a
# quantized KV cache (-ctk/-ctv q8_0, q4_0; and f16) equals its choice with
# an F32 cache, over N steps fed the F32 run's tokens (teacher forcing) —
# the same measure `sprig bench kv` reports for sprig's modes, so the two
# can stand side by side on one GGUF.
#
#   [SPRIG_LLAMACPP_REF=node_modules] [N=256] sh bench/kv-agree-llamacpp.sh MODEL.gguf [BOS_ID]
#
# llama.cpp is node-llama-cpp's prebuilt CPU library (tests/ref pins it);
# quantized caches run with flash attention, which llama.cpp requires for a
# quantized V; the F32 reference runs without (its plain path).
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
ORACLE="$HERE/../tests/ref/llamacpp-oracle.mjs"
N=${N:-256}
MODEL=${1:?usage: sh bench/kv-agree-llamacpp.sh MODEL.gguf [BOS_ID]}
BOS=${2:-1}
TMP=$(mktemp -d "${TMPDIR:-/tmp}/sprig-kvagree-XXXXXX")
trap 'rm -rf "$TMP"' EXIT
node "$ORACLE" "$MODEL" --prompt "$BOS" -n "$N" --top 1 >"$TMP/f32.json"
node -e 'const j = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8")); console.log(j.tokens.slice(0, -1).join(","))' \
    "$TMP/f32.json" >"$TMP/follow"
printf '%-6s %8s\n' cache agree
for t in F16 Q8_0 Q4_0; do
    if ! node "$ORACLE" "$MODEL" --prompt "$BOS" -n "$N" --top 1 --kv $t --flash --follow "$(cat "$TMP/follow")" \
        >"$TMP/$t.json" 2>"$TMP/$t.err"; then
        printf '%-6s refused: %s\n' $t "$(grep -m1 -o 'cache type.*' "$TMP/$t.err" || echo 'llama.cpp failed')"
        continue
    fi
    node -e '
        const fs = require("fs");
        const a = JSON.parse(fs.readFileSync(process.argv[1], "utf8")).tokens, b = JSON.parse(fs.readFileSync(process.argv[2], "utf8")).tokens;
        let same = 0;
        for (let i = 0; i < a.length; i++) same += a[i] === b[i];
        console.log(process.argv[3].padEnd(6) + " " + (100 * same / a.length).toFixed(1).padStart(7) + "%");
    ' "$TMP/f32.json" "$TMP/$t.json" "$t"
done
