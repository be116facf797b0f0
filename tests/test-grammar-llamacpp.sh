#!/bin/sh
# tests/test-grammar-llamacpp.sh — constrained decoding against llama.cpp:
# for each grammar in tests/data/grammars (llama.cpp's json.gbnf, a list, a
# word-set sentence, and the GBNF `sprig grammar --json-schema` makes of
# schema.json), sprig runs
#   sprig run -m stories260K.gguf --temp 0 -n 96 --grammar-file G --stats-json J
# and llama.cpp (tests/ref/llamacpp-oracle.mjs --grammar G: node-llama-cpp
# 3.21.1's grammar sampler, then greedy) decodes from the same prompt ids.
# Both take the argmax among the tokens the grammar allows, so the token
# ids must be equal, up to the first end-of-generation token. The test also
# proves the grammar ran in sprig: its stats count rows masked whole, and
# the constrained text differs from the unconstrained one (and, for the
# sentence grammar, matches it with a regular expression).
# Without node or node-llama-cpp: SKIP (FAIL under SPRIG_REQUIRE_REF=1).
set -u
BIN=${SPRIG_BIN:-./sprig}
SHARED=${SPRIG_SHARED:-../shared}
MODEL="$SHARED/models/stories260K.gguf"
REF=${SPRIG_LLAMACPP_REF:-tests/ref/node_modules}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
fail=0
if ! command -v node >/dev/null 2>&1 || [ ! -f "$REF/node-llama-cpp/package.json" ]; then
    if [ "${SPRIG_REQUIRE_REF:-0}" = 1 ]; then echo "FAIL: node or node-llama-cpp missing (SPRIG_REQUIRE_REF=1)"; exit 1; fi
    echo "SKIP: node or node-llama-cpp missing (cd tests/ref && npm ci --omit=optional)"
    exit 0
fi
"$BIN" grammar --json-schema @tests/data/grammars/schema.json >"$TMP/schema.gbnf" || { echo "FAIL: sprig grammar --json-schema"; exit 1; }
"$BIN" run -m "$MODEL" -p "Once upon a time" -n 96 --temp 0 -q >"$TMP/free.txt" 2>/dev/null
for g in tests/data/grammars/json.gbnf tests/data/grammars/list.gbnf tests/data/grammars/story.gbnf "$TMP/schema.gbnf"; do
    name=$(basename "$g")
    "$BIN" run -m "$MODEL" -p "Once upon a time" -n 96 --temp 0 -q --grammar-file "$g" --stats-json "$TMP/s.json" >"$TMP/out.txt" 2>"$TMP/err.txt"
    if [ $? -ne 0 ]; then echo "FAIL $name: sprig run"; cat "$TMP/err.txt"; fail=1; continue; fi
    ids=$(node -e 'const s=require(process.argv[1]);process.stdout.write(s.prompt_ids.join(","))' "$TMP/s.json")
    node tests/ref/llamacpp-oracle.mjs "$MODEL" --prompt "$ids" -n 96 -t 1 --top 1 --grammar "$g" >"$TMP/l.json" 2>"$TMP/lerr.txt"
    if [ $? -ne 0 ]; then echo "FAIL $name: llama.cpp"; cat "$TMP/lerr.txt"; fail=1; continue; fi
    node -e '
const fs = require("fs");
const s = JSON.parse(fs.readFileSync(process.argv[1], "utf8")), l = JSON.parse(fs.readFileSync(process.argv[2], "utf8"));
const name = process.argv[3], free = fs.readFileSync(process.argv[4], "utf8"), out = fs.readFileSync(process.argv[5], "utf8");
const eog = new Set([2]);   /* stories260K: </s> */
const lt = l.tokens.filter((t, i) => !(i === l.tokens.length - 1 && eog.has(t)));
let bad = [];
if (JSON.stringify(s.tokens) !== JSON.stringify(lt)) {
    let k = 0; while (k < s.tokens.length && s.tokens[k] === lt[k]) k++;
    bad.push(`tokens differ at step ${k}: sprig ${s.tokens.slice(k, k + 5)} llama.cpp ${lt.slice(k, k + 5)}`);
}
if (!(s.grammar_rows_masked > 0)) bad.push("no row was masked: the grammar did not run");
if (out === free) bad.push("the constrained text equals the unconstrained one");
if (name === "story.gbnf" && !/^Once upon a timeThe (cat|dog|girl|boy|ball|tree)( (saw|liked|had|found) the (cat|dog|girl|boy|ball|tree)){1,4}\.$/.test(out))
    bad.push(`the text does not fit the grammar: ${JSON.stringify(out)}`);
console.log(`${bad.length ? "FAIL" : "ok  "} ${name}: ${s.tokens.length} tokens equal llama.cpp'"'"'s (${l.tokens.length} with its end token), ` +
            `${s.grammar_rows_masked} rows masked, ${s.grammar_walks} trie walks; ${JSON.stringify(out.slice(16, 90))}`);
for (const b of bad) console.log("    " + b);
process.exit(bad.length ? 1 : 0);
' "$TMP/s.json" "$TMP/l.json" "$name" "$TMP/free.txt" "$TMP/out.txt" || fail=1
done
[ $fail = 0 ] && echo "test-grammar-llamacpp: ok"
exit $fail
