#!/bin/sh
# tests/test-cli-grammar.sh — constrained decoding from the command line, and
# speculation under a grammar:
#   - greedy output under a JSON schema (every property required, as OpenAI's
#     strict mode asks) is byte-identical with no drafter, a draft model
#     (chain and tree auto), the MTP head, the n-gram drafter and a
#     grammar-blind draft model; each run proves its path (stats: rounds,
#     rounds with no, some and every draft accepted, emitted per verify, rows
#     masked, drafts cut, forced text);
#   - drafting with the grammar emits at least 1.5x the tokens per verify of
#     the same drafter blind to it;
#   - the output parses as JSON and fits the schema;
#   - refusals: an undefined rule, a schema keyword not supported, two
#     grammar flags; sprig grammar --check and --json-schema.
set -u
BIN=${SPRIG_BIN:-./sprig}
SHARED=${SPRIG_SHARED:-../shared}
M="$SHARED/models"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
fail=0
check() { d=$1; shift; if "$@"; then :; else echo "FAIL: $d"; fail=1; fi; }
command -v node >/dev/null 2>&1 || { echo "SKIP: node is needed"; exit 0; }
S='{"type":"object","properties":{"name":{"type":"string","maxLength":20},"age":{"type":"integer","minimum":0},"city":{"type":"string","maxLength":16},"happy":{"type":"boolean"},"pets":{"type":"array","items":{"enum":["cat","dog","bird"]},"maxItems":3}},"required":["name","age","city","happy","pets"]}'
run() { # run NAME ARGS...: greedy under the schema, text and stats
    name=$1; shift
    "$BIN" run -m "$M/stories260K.gguf" -p "Once upon a time" -n 200 --temp 0 -q -j "$S" --stats-json "$TMP/$name.json" "$@" >"$TMP/$name.txt" 2>"$TMP/$name.err" \
        || { echo "FAIL: $name: $(tail -2 "$TMP/$name.err")"; fail=1; }
}
stat() { node -e "const s = require('$TMP/$1.json'); process.stdout.write(String($2))"; }
run plain
run chain --draft "$M/stories-draft.gguf"
run tree --draft "$M/stories-draft.gguf" --tree auto
run mtp --mtp "$M/stories-mtp.gguf"
run ngram --draft-ngram
run blind --draft "$M/stories-draft.gguf" --grammar-blind-drafts
for r in chain tree mtp ngram blind; do
    check "$r: the same text as without speculation" cmp -s "$TMP/plain.txt" "$TMP/$r.txt"
    check "$r: speculation ran ($(stat $r 's.rounds + " rounds for " + s.generated_tokens + " tokens"'))" [ "$(stat $r 's.rounds < s.generated_tokens')" = true ]
    [ $r = blind ] || check "$r: rounds with no, some and every draft accepted ($(stat $r 's.zero_accept_rounds + "/" + s.partial_accept_rounds + "/" + s.full_accept_rounds'))" \
        [ "$(stat $r 's.zero_accept_rounds > 0 && s.partial_accept_rounds > 0 && s.full_accept_rounds > 0')" = true ]
done
check "plain: the grammar masked rows" [ "$(stat plain 's.grammar_rows_masked > 20')" = true ]
check "tree: tree rounds ran" [ "$(stat tree 's.path')" = tree ]
check "ngram: drafts the grammar refuses were cut and forced text joined ($(stat ngram 's.grammar_pruned + " cut, " + s.grammar_forced + " forced"'))" \
    [ "$(stat ngram 's.grammar_pruned > 0 && s.grammar_forced > 0')" = true ]
check "blind: no draft cut, no forced text" [ "$(stat blind 's.grammar_pruned + s.grammar_forced')" = 0 ]
aware=$(stat chain 's.emitted_per_verify'); blind=$(stat blind 's.emitted_per_verify')
echo "  emitted per verify under the schema: with the grammar $aware (tree auto $(stat tree 's.emitted_per_verify'), mtp $(stat mtp 's.emitted_per_verify'), n-gram $(stat ngram 's.emitted_per_verify')), blind $blind"
check "drafting with the grammar: >= 1.5x the blind drafter's tokens per verify ($aware vs $blind)" [ "$(node -e "process.stdout.write(String($aware >= 1.5 * $blind))")" = true ]
check "the output is JSON that fits the schema ($(head -c 200 "$TMP/plain.txt"))" [ "$(node -e '
const t = require("fs").readFileSync(process.argv[1], "utf8").replace(/^Once upon a time/, "");
const j = JSON.parse(t);
const ok = typeof j.name === "string" && j.name.length <= 20 && Number.isInteger(j.age) && j.age >= 0 && typeof j.city === "string" &&
           typeof j.happy === "boolean" && Array.isArray(j.pets) && j.pets.length <= 3 && j.pets.every((p) => ["cat", "dog", "bird"].includes(p));
process.stdout.write(String(ok));' "$TMP/plain.txt")" = true ]
# refusals
"$BIN" run -m "$M/stories260K.gguf" -p x -n 4 -q --grammar 'root ::= word' >/dev/null 2>"$TMP/e1"; rc=$?
check "an undefined rule: exit 1 naming it (rc $rc: $(cat "$TMP/e1"))" sh -c "[ $rc = 1 ] && grep -q \"rule 'word' is used but not defined\" '$TMP/e1'"
"$BIN" run -m "$M/stories260K.gguf" -p x -n 4 -q -j '{"type":"object","properties":{"a":{"type":"string","pattern":"x"}}}' >/dev/null 2>"$TMP/e2"; rc=$?
check "a schema keyword not supported: exit 1 naming it (rc $rc)" sh -c "[ $rc = 1 ] && grep -q \"properties.a: 'pattern' is not supported\" '$TMP/e2'"
"$BIN" run -m "$M/stories260K.gguf" -p x -n 4 -q --grammar 'root ::= "a"' -j '{}' >/dev/null 2>&1; rc=$?
check "two grammar flags: exit 2 (rc $rc)" [ $rc = 2 ]
printf 'root ::= "a" | root "b"\n' >"$TMP/left.gbnf"
"$BIN" grammar --check "$TMP/left.gbnf" 2>"$TMP/e3"; rc=$?
check "sprig grammar --check: left recursion refused (rc $rc)" sh -c "[ $rc = 1 ] && grep -q 'left-recursive' '$TMP/e3'"
"$BIN" grammar --check tests/data/grammars/json.gbnf 2>"$TMP/e4"; rc=$?
check "sprig grammar --check: llama.cpp's json.gbnf compiles (rc $rc)" sh -c "[ $rc = 0 ] && grep -q 'rules' '$TMP/e4'"
"$BIN" grammar --json-schema "$S" >"$TMP/s.gbnf"; rc=$?
check "sprig grammar --json-schema prints a grammar that compiles" sh -c "[ $rc = 0 ] && '$BIN' grammar --check '$TMP/s.gbnf' 2>/dev/null"
[ $fail = 0 ] && echo "test-cli-grammar: ok"
exit $fail
