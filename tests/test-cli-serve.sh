#!/bin/sh
# tests/test-cli-serve.sh — `sprig serve` on loopback with curl: health and
# models; greedy completions byte-identical to `sprig run` (plain, and tree
# auto with the draft model, the speculative path proven by the usage's
# speculative object); streaming as Server-Sent Events whose chunks add up to
# the same text and end with [DONE]; chat through a template; stop strings;
# logprobs; the API key (401); bad bodies and fields (400 naming the field);
# the official OpenAI JavaScript client (completions, chat, both streamed);
# the page at / in headless Chromium (a message sent, the reply and the tree read back);
# continuous batching: 8 requests of mixed prompts and lengths arriving at
# staggered times on 4 slots (tree auto with the draft model, then the n-gram
# drafter's chains) each equal `sprig run`'s plain greedy text, and /health
# proves verify forwards were shared by several slots; a KV pool that holds
# one request at a time makes the second wait (never two in one forward) and
# both answers stay exact;
# a prompt longer than the context (400); unknown routes (404); and a client
# that disconnects mid-stream frees its slot for the next request.
# JSON is read with node (the test references already need it).
# Run by tests/run.sh with $SPRIG_BIN and $SPRIG_SHARED set, cwd = repo root.
set -u
BIN=${SPRIG_BIN:-./sprig}
SHARED=${SPRIG_SHARED:-../shared}
M="$SHARED/models"
TMP=$(mktemp -d "${TMPDIR:-/tmp}/sprig-cli-serve-XXXXXX")
PIDS=""
trap 'for p in $PIDS; do kill "$p" 2>/dev/null; done; rm -rf "$TMP"' EXIT
fail=0
check() { d=$1; shift; if "$@"; then :; else echo "FAIL: $d"; fail=1; fi; }
has() { grep -F -q -- "$1" "$2"; }
if ! command -v curl >/dev/null 2>&1 || ! command -v node >/dev/null 2>&1; then
    echo "SKIP: curl and node are needed"; exit 0
fi
# field FILE EXPR: a JavaScript expression over the parsed JSON `j`
field() { node -e "const j = JSON.parse(require('fs').readFileSync('$1', 'utf8')); const v = ($2); process.stdout.write(typeof v === 'string' ? v : JSON.stringify(v))"; }

# start NAME ARGS...: a server on a free port; sets PORT
NSTART=0
start() {
    name=$1; shift
    NSTART=$((NSTART + 1))
    for try in 1 2 3 4 5; do
        PORT=$(( 20000 + ($$ * 7 + NSTART * 977 + try * 131) % 20000 ))
        "$BIN" serve --port "$PORT" "$@" >"$TMP/$name.log" 2>&1 &
        pid=$!
        PIDS="$PIDS $pid"
        for i in $(seq 1 50); do
            if curl -s -o /dev/null "http://127.0.0.1:$PORT/health" && kill -0 "$pid" 2>/dev/null; then return 0; fi
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.1
        done
        kill "$pid" 2>/dev/null
    done
    echo "FAIL: $name did not start: $(tail -2 "$TMP/$name.log")"; fail=1; return 1
}
post() { # post PATH BODY OUT [curl args]: the status code into $CODE
    p=$1; b=$2; o=$3; shift 3
    CODE=$(curl -s -o "$o" -w '%{http_code}' -H 'Content-Type: application/json' "$@" -d "$b" "http://127.0.0.1:$PORT$p")
}

"$BIN" run -m "$M/stories260K.gguf" -p "Once upon a time" -n 48 --temp 0 -q >"$TMP/run.txt" 2>/dev/null
printf '%s' "$(sed '1s/^Once upon a time//' "$TMP/run.txt")" >"$TMP/want.txt"

# ---- plain server
start plain -m "$M/stories260K.gguf" -c 256 -t 1 || exit 1
CODE=$(curl -s -o "$TMP/h" -w '%{http_code}' "http://127.0.0.1:$PORT/health")
check "health 200 (got $CODE)" [ "$CODE" = 200 ]
check "health body" [ "$(field "$TMP/h" 'j.status + "/" + j.slots')" = ok/1 ]
curl -s -o "$TMP/models" "http://127.0.0.1:$PORT/v1/models"
check "models lists the file" [ "$(field "$TMP/models" 'j.data[0].id')" = stories260K.gguf ]
post /v1/completions '{"prompt":"Once upon a time","max_tokens":48,"temperature":0}' "$TMP/c1"
check "completion 200 (got $CODE)" [ "$CODE" = 200 ]
field "$TMP/c1" 'j.choices[0].text' >"$TMP/c1.txt"
check "greedy completion = sprig run" cmp -s "$TMP/c1.txt" "$TMP/want.txt"
check "usage counts" [ "$(field "$TMP/c1" 'j.usage.completion_tokens + "/" + j.usage.prompt_tokens + "/" + j.choices[0].finish_reason')" = "48/5/length" ]
check "usage says plain" [ "$(field "$TMP/c1" 'j.usage.speculative.path')" = plain ]

# streaming: the chunks add up to the same text, then [DONE]
curl -sN -H 'Content-Type: application/json' -d '{"prompt":"Once upon a time","max_tokens":48,"temperature":0,"stream":true}' \
    "http://127.0.0.1:$PORT/v1/completions" >"$TMP/s1"
node -e "
const lines = require('fs').readFileSync('$TMP/s1', 'utf8').split('\n\n').filter(Boolean);
let text = '', done = false, finish = null, bad = 0;
for (const l of lines) {
  if (!l.startsWith('data: ')) { bad++; continue; }
  const d = l.slice(6);
  if (d === '[DONE]') { done = true; continue; }
  const j = JSON.parse(d); text += j.choices[0].text; if (j.choices[0].finish_reason) finish = j.choices[0].finish_reason;
}
require('fs').writeFileSync('$TMP/s1.txt', text);
process.stdout.write(JSON.stringify({ done, finish, bad, n: lines.length }));" >"$TMP/s1.sum"
check "stream chunks add up to the greedy text" cmp -s "$TMP/s1.txt" "$TMP/want.txt"
check "stream ends with [DONE] after a finish_reason" has '"done":true,"finish":"length","bad":0' "$TMP/s1.sum"

# stop strings cut the text where the first one starts
post /v1/completions '{"prompt":"Once upon a time","max_tokens":48,"temperature":0,"stop":[" named","zzz"]}' "$TMP/c2"
check "stop string: text ends before it" [ "$(field "$TMP/c2" 'j.choices[0].text')" = ", there was a little girl" ]
check "stop string: finish_reason stop" [ "$(field "$TMP/c2" 'j.choices[0].finish_reason')" = stop ]

# logprobs: one entry per token, the greedy token is the most likely
post /v1/completions '{"prompt":"Once upon a time","max_tokens":6,"temperature":0,"logprobs":2}' "$TMP/c3"
check "logprobs: 6 tokens, 2 alternatives each, greedy = top" \
    [ "$(field "$TMP/c3" 'j.choices[0].logprobs.tokens.length + "/" + j.choices[0].logprobs.top_logprobs.every(t => Object.keys(t).length === 2) + "/" + j.choices[0].logprobs.token_logprobs.every((l, i) => l === Math.max(...Object.values(j.choices[0].logprobs.top_logprobs[i])))')" = "6/true/true" ]

# bad input: 400 naming the field
post /v1/completions '{bad' "$TMP/e1"
check "malformed JSON 400 (got $CODE)" [ "$CODE" = 400 ]
check "malformed JSON says so" has "not JSON" "$TMP/e1"
post /v1/completions '{"prompt":"x","max_tokens":"many"}' "$TMP/e2"
check "wrong type 400 naming max_tokens" [ "$CODE/$(field "$TMP/e2" 'j.error.param')" = "400/max_tokens" ]
post /v1/completions '{"prompt":"x","max_tokens":100000}' "$TMP/e3"
check "max_tokens past the context 400" [ "$CODE/$(field "$TMP/e3" 'j.error.param')" = "400/max_tokens" ]
post /v1/completions '{"prompt":"x","temperature":-1}' "$TMP/e4"
check "negative temperature 400" [ "$CODE/$(field "$TMP/e4" 'j.error.param')" = "400/temperature" ]
post /v1/completions '{"max_tokens":3}' "$TMP/e5"
check "missing prompt 400" [ "$CODE/$(field "$TMP/e5" 'j.error.param')" = "400/prompt" ]
LONG=$(node -e "process.stdout.write('Once upon a time '.repeat(200))")
post /v1/completions "{\"prompt\":\"$LONG\",\"max_tokens\":4}" "$TMP/e6"
check "prompt longer than the context 400 (got $CODE)" [ "$CODE" = 400 ]
check "prompt too long says the context" has "context" "$TMP/e6"
node -e "process.stdout.write('{\"prompt\":\"' + 'a'.repeat(1100000) + '\"}')" >"$TMP/big.json"
CODE=$(curl -s -o "$TMP/e7" -w '%{http_code}' -H 'Content-Type: application/json' --data-binary @"$TMP/big.json" "http://127.0.0.1:$PORT/v1/completions")
check "body over 1 MiB 400 (got $CODE)" [ "$CODE" = 400 ]
post /v1/chat/completions '{"messages":[{"role":"user","content":"Hi"}]}' "$TMP/e8"
check "chat without a template 400 naming messages" [ "$CODE/$(field "$TMP/e8" 'j.error.param')" = "400/messages" ]
CODE=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PORT/v2/nothing")
check "unknown route 404 (got $CODE)" [ "$CODE" = 404 ]

# a client that leaves mid-stream frees the slot: the next request is served at once
curl -sN --max-time 0.3 -H 'Content-Type: application/json' -d '{"prompt":"Once upon a time","max_tokens":200,"temperature":0.8,"stream":true}' \
    "http://127.0.0.1:$PORT/v1/completions" >/dev/null 2>&1
post /v1/completions '{"prompt":"Once upon a time","max_tokens":48,"temperature":0}' "$TMP/c4" --max-time 20
check "served after a disconnect (got $CODE)" [ "$CODE" = 200 ]
field "$TMP/c4" 'j.choices[0].text' >"$TMP/c4.txt"
check "and still exact" cmp -s "$TMP/c4.txt" "$TMP/want.txt"

# ---- speculative server: tree auto with the draft model, a chat template, an API key
start spec -m "$M/stories260K.gguf" -c 512 -t 1 --draft "$M/stories-draft.gguf" --tree auto --chat-template chatml --api-key sesame || exit 1
post /v1/completions '{"prompt":"Once upon a time","max_tokens":48,"temperature":0}' "$TMP/k1"
check "no key 401 (got $CODE)" [ "$CODE" = 401 ]
post /v1/completions '{"prompt":"Once upon a time","max_tokens":48,"temperature":0}' "$TMP/k2" -H 'Authorization: Bearer wrong'
check "wrong key 401 (got $CODE)" [ "$CODE" = 401 ]
post /v1/completions '{"prompt":"Once upon a time","max_tokens":48,"temperature":0}' "$TMP/t1" -H 'Authorization: Bearer sesame'
check "key accepted (got $CODE)" [ "$CODE" = 200 ]
field "$TMP/t1" 'j.choices[0].text' >"$TMP/t1.txt"
check "tree auto completion = sprig run" cmp -s "$TMP/t1.txt" "$TMP/want.txt"
check "usage: tree path, drafts accepted" [ "$(field "$TMP/t1" 'j.usage.speculative.path + "/" + (j.usage.speculative.accepted > 10) + "/" + j.usage.speculative.drafter')" = "tree/true/draft-model" ]
check "usage: tree auto's planner, a choice per round (not a last round the budget cut to the bare bonus) and its verify costs ($(field "$TMP/t1" 'JSON.stringify(j.usage.speculative.plan).slice(0, 160)'))" \
    [ "$(field "$TMP/t1" '(p => p.chains + p.trees <= j.usage.speculative.rounds && p.chains + p.trees >= j.usage.speculative.rounds - 2 && p.verify_ms.length === 14 && p.verify_ms[0].rows === 1 && p.verify_ms.every((c) => c.ms > 0) && p.drafting.wider_ms > 0 && p.drafting.wide_rounds > 0)(j.usage.speculative.plan)')" = true ]
# streamed logprobs: each chunk carries its tokens' logprobs (from the verify rows of tree rounds);
# together they equal the whole reply's, for completions and chat
for ep in completions chat; do
    if [ $ep = chat ]; then body='{"messages":[{"role":"user","content":"Tell a story."}],"max_tokens":40,"temperature":0,"logprobs":true,"top_logprobs":3'
    else body='{"prompt":"Once upon a time","max_tokens":40,"temperature":0,"logprobs":3'; fi
    [ $ep = chat ] && path=chat/completions || path=completions
    post /v1/$path "$body,\"stream\":true}" "$TMP/lps-$ep" -H 'Authorization: Bearer sesame'
    post /v1/$path "$body}" "$TMP/lp-$ep" -H 'Authorization: Bearer sesame'
    check "streamed logprobs = the reply's ($ep)" [ "$(node -e "
const f = require('fs'), j = JSON.parse(f.readFileSync('$TMP/lp-$ep', 'utf8'));
const ev = f.readFileSync('$TMP/lps-$ep', 'utf8').split('\n\n').filter((l) => l.startsWith('data: {')).map((l) => JSON.parse(l.slice(6)));
const lp = ev.map((e) => e.choices[0] && e.choices[0].logprobs).filter(Boolean);
const whole = j.choices[0].logprobs;
let got;
if ('$ep' === 'chat') got = { content: lp.flatMap((l) => l.content) };
else got = { tokens: lp.flatMap((l) => l.tokens), token_logprobs: lp.flatMap((l) => l.token_logprobs), top_logprobs: lp.flatMap((l) => l.top_logprobs) };
const n = '$ep' === 'chat' ? whole.content.length : whole.tokens.length;
process.stdout.write(String(n === 40 && lp.length > 1 && JSON.stringify(got) === JSON.stringify(whole)));
")" = true ]
done
post /v1/chat/completions '{"messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"Tell a story."}],"max_tokens":12,"temperature":0.8,"seed":5,"stream":true}' "$TMP/ch1" -H 'Authorization: Bearer sesame'
check "chat stream 200 (got $CODE)" [ "$CODE" = 200 ]
check "chat stream: role, content deltas, [DONE]" sh -c "grep -q '\"role\":\"assistant\"' '$TMP/ch1' && grep -q 'chat.completion.chunk' '$TMP/ch1' && tail -c 20 '$TMP/ch1' | grep -q 'DONE'"
# the live picture of speculation: "sprig_trace" rounds in the stream, each a valid tree with its path
post /v1/chat/completions '{"messages":[{"role":"user","content":"Tell a story."}],"max_tokens":40,"temperature":0,"stream":true,"sprig_trace":true}' "$TMP/tr1" -H 'Authorization: Bearer sesame'
post /v1/chat/completions '{"messages":[{"role":"user","content":"Tell a story."}],"max_tokens":40,"temperature":0,"stream":true}' "$TMP/tr0" -H 'Authorization: Bearer sesame'
node -e "
const ev = (f) => require('fs').readFileSync(f, 'utf8').split('\n\n').filter((l) => l.startsWith('data: {')).map((l) => JSON.parse(l.slice(6)));
const text = (es) => es.map((e) => e.choices[0]?.delta?.content ?? '').join('');
const a = ev('$TMP/tr1'), b = ev('$TMP/tr0');
const rounds = a.filter((e) => e.sprig && e.sprig.round).map((e) => e.sprig.round);
let valid = rounds.length > 0, tree = 0, branched = 0;
for (const r of rounds) {
  if (r.tokens.length !== r.parents.length || r.path[0] !== 0 || r.parents[0] !== 0) valid = false;
  for (let i = 1; i < r.path.length; i++) if (r.parents[r.path[i]] !== r.path[i - 1]) valid = false;
  if (r.tree) tree++;
  if (r.tokens.length > r.path.length) branched++;
}
process.stdout.write(JSON.stringify({ valid, rounds: rounds.length, tree, same: text(a) === text(b) && text(a).length > 0 }));" >"$TMP/tr.sum"
check "trace: valid round trees, tree rounds, the same text as without it ($(cat "$TMP/tr.sum"))" sh -c "grep -q '\"valid\":true' '$TMP/tr.sum' && grep -q '\"same\":true' '$TMP/tr.sum' && ! grep -q '\"tree\":0' '$TMP/tr.sum'"
CODE=$(curl -s -o "$TMP/page" -w '%{http_code}' "http://127.0.0.1:$PORT/")
check "the page at / without the key (got $CODE)" [ "$CODE" = 200 ]
check "the page streams chat with sprig_trace and draws the tree" sh -c "grep -q 'sprig_trace: true' '$TMP/page' && grep -q 'function draw' '$TMP/page'"
post /v1/chat/completions '{"messages":[{"role":"wizard","content":"x"}]}' "$TMP/ch2" -H 'Authorization: Bearer sesame'
check "bad role 400 naming it" [ "$CODE/$(field "$TMP/ch2" 'j.error.param')" = "400/messages[0].role" ]
# llama-server's /apply-template: the prompt a conversation renders to (here the chatml row, Qwen 2's default system turn)
post /apply-template '{"messages":[{"role":"user","content":"Hi"}]}' "$TMP/at1" -H 'Authorization: Bearer sesame'
check "apply-template 200 with chatml's text (got $CODE)" [ "$CODE/$(field "$TMP/at1" 'JSON.stringify(j.prompt)')" = '200/"<|im_start|>system\nYou are a helpful assistant<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"' ]
post /apply-template '{"messages":[{"role":"user","content":"Hi"}],"add_generation_prompt":false}' "$TMP/at2" -H 'Authorization: Bearer sesame'
check "apply-template without the generation prompt" [ "$(field "$TMP/at2" 'JSON.stringify(j.prompt)')" = '"<|im_start|>system\nYou are a helpful assistant<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n"' ]
post /apply-template '{"messages":3}' "$TMP/at3" -H 'Authorization: Bearer sesame'
check "apply-template: bad messages 400 naming them" [ "$CODE/$(field "$TMP/at3" 'j.error.param')" = "400/messages" ]

# a model's own template run as Jinja: tools reach it, its raise_exception is a 400 with its message
"$BIN" mkmodel --preset tiny --vocab 512 -t 1 -q -o "$TMP/jinja.gguf" --chat-template \
    '{% if messages[0].role != "user" %}{{ raise_exception("the first message must be the user'"'"'s") }}{% endif %}{% for m in messages %}[{{ m.role }}]{{ m.content | trim }}{% endfor %}{% if tools %}<tools>{{ tools | map(attribute="function") | map(attribute="name") | join(",") }}{% endif %}{% if add_generation_prompt %}[assistant]{% endif %}'
SPEC_PORT=$PORT
start jinja -m "$TMP/jinja.gguf" -c 256 -t 1 || exit 1
check "the server says which template it runs" has "chat template Jinja, from tokenizer.chat_template" "$TMP/jinja.log"
post /apply-template '{"messages":[{"role":"user","content":" Hi "}],"tools":[{"type":"function","function":{"name":"get_time"}},{"type":"function","function":{"name":"add"}}]}' "$TMP/j1"
check "Jinja apply-template with tools (got $CODE)" [ "$CODE/$(field "$TMP/j1" 'j.prompt')" = "200/[user]Hi<tools>get_time,add[assistant]" ]
post /apply-template '{"messages":[{"role":"system","content":"S"},{"role":"user","content":"Hi"}]}' "$TMP/j2"
check "the template's exception: 400 with its message (got $CODE)" sh -c "[ '$CODE' = 400 ] && grep -q \"raised: the first message must be the user's\" '$TMP/j2'"
post /v1/chat/completions '{"messages":[{"role":"system","content":"S"},{"role":"user","content":"Hi"}],"max_tokens":4}' "$TMP/j3"
check "and for a chat completion (got $CODE)" sh -c "[ '$CODE' = 400 ] && grep -q 'raised: the first message' '$TMP/j3'"
post /v1/chat/completions '{"messages":[{"role":"user","content":"Hi"}],"max_tokens":4,"temperature":0}' "$TMP/j4"
check "a chat completion through the Jinja template (got $CODE)" [ "$CODE" = 200 ]
# OpenAI's message shapes reach the template: text parts, an assistant's tool calls (arguments as an
# object), a tool result, tool_choice none, chat_template_kwargs; what needs constrained decoding is refused
"$BIN" mkmodel --preset tiny --vocab 512 -t 1 -q -o "$TMP/jinja2.gguf" --chat-template \
    '{% for m in messages %}[{{ m.role }}]{{ m.content if m.content is string else "-" }}{% for c in m.tool_calls or [] %}<call {{ c.function.name }} {{ c.function.arguments | tojson }}>{% endfor %}{% if m.tool_call_id %}({{ m.tool_call_id }}){% endif %}{% endfor %}{% if tools %}<tools {{ tools | length }}>{% endif %}{% if flag %}<flag>{% endif %}'
PORT0=$PORT
start jinja2 -m "$TMP/jinja2.gguf" -c 256 -t 1 || exit 1
post /apply-template '{"messages":[{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]},{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"add","arguments":"{\"a\": 1}"}}]},{"role":"tool","tool_call_id":"c1","content":"2"}],"tools":[{"type":"function","function":{"name":"add"}}],"chat_template_kwargs":{"flag":true},"add_generation_prompt":false}' "$TMP/j5"
check "message shapes through the template (got $CODE)" [ "$CODE/$(field "$TMP/j5" 'j.prompt')" = '200/[user]a
b[assistant]-<call add {"a": 1}>[tool]2(c1)<tools 1><flag>' ]
post /apply-template '{"messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":"add"}}],"tool_choice":"none"}' "$TMP/j6"
check "tool_choice none: no tools offered" [ "$(field "$TMP/j6" 'j.prompt')" = "[user]x" ]
# a template that shows no call format: tool_choice required makes the reply the call's JSON (llama3's shape) and reads it back
post /v1/chat/completions '{"messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":"add","parameters":{"type":"object","properties":{"a":{"type":"integer"}},"required":["a"]}}}],"tool_choice":"required","parallel_tool_calls":false,"temperature":0,"max_tokens":230}' "$TMP/j7"
check "tool_choice required without a known format: a call to add (got $CODE: $(head -c 300 "$TMP/j7"))" [ "$CODE/$(field "$TMP/j7" 'j.choices[0].finish_reason + "/" + j.choices[0].message.tool_calls[0].function.name + "/" + typeof JSON.parse(j.choices[0].message.tool_calls[0].function.arguments).a')" = "200/tool_calls/add/number" ]
post /v1/chat/completions '{"messages":[{"role":"user","content":"x"}],"tools":[{"type":"function","function":{"name":"add"}}],"tool_choice":{"type":"function","function":{"name":"sub"}}}' "$TMP/j7b"
check "tool_choice naming a tool not offered: 400 naming it (got $CODE)" [ "$CODE/$(field "$TMP/j7b" 'j.error.param')" = "400/tool_choice" ]
post /v1/chat/completions '{"messages":[{"role":"user","content":"x"}],"grammar":"root ::= \"a\" b"}' "$TMP/j7c"
check "a grammar with an undefined rule: 400 naming it (got $CODE)" sh -c "[ '$CODE' = 400 ] && grep -q \"rule 'b' is used but not defined\" '$TMP/j7c'"
post /v1/chat/completions '{"messages":[{"role":"user","content":"x"}],"grammar":"root ::= [a-c]{3,5} \".\"","max_tokens":20,"temperature":0}' "$TMP/j7d"
check "a grammar shapes the reply (got $CODE: $(head -c 200 "$TMP/j7d"))" [ "$(field "$TMP/j7d" '/^[a-c]{3,5}\.$/.test(j.choices[0].message.content) && j.choices[0].finish_reason === "stop"')" = true ]
post /v1/chat/completions '{"messages":[{"role":"user","content":"x"}],"grammar":"root ::= \"a\"","response_format":{"type":"json_object"}}' "$TMP/j7e"
check "a grammar and a response_format: 400 (got $CODE)" [ "$CODE" = 400 ]
post /v1/chat/completions '{"messages":[{"role":"user","content":"x","tool_calls":[]}]}' "$TMP/j8"
check "tool calls on a user message: 400 naming them (got $CODE)" [ "$CODE/$(field "$TMP/j8" 'j.error.param')" = "400/messages[0].tool_calls" ]
post /v1/chat/completions '{"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"x"}}]}]}' "$TMP/j9"
check "an image part: 400 naming the content (got $CODE)" [ "$CODE/$(field "$TMP/j9" 'j.error.param')" = "400/messages[0].content" ]
PORT=$PORT0
PORT=$SPEC_PORT

# the official OpenAI JavaScript client (tests/ref, pinned)
REF=tests/ref/node_modules
if [ -d "$REF/openai" ]; then
    node tests/ref/openai-client.mjs "http://127.0.0.1:$PORT/v1" sesame stories260K.gguf >"$TMP/oa.json" 2>"$TMP/oa.err"; rc=$?
    check "openai client runs (rc $rc: $(tail -c 300 "$TMP/oa.err"))" [ $rc -eq 0 ]
    if [ $rc -eq 0 ]; then
        field "$TMP/oa.json" 'j.completion' >"$TMP/oa1.txt"
        field "$TMP/oa.json" 'j.completion_stream' >"$TMP/oa2.txt"
        check "openai: models" [ "$(field "$TMP/oa.json" 'j.models.join()')" = stories260K.gguf ]
        check "openai: completion = sprig run" cmp -s "$TMP/oa1.txt" "$TMP/want.txt"
        check "openai: streamed completion = sprig run" cmp -s "$TMP/oa2.txt" "$TMP/want.txt"
        check "openai: chat reply, streamed the same" [ "$(field "$TMP/oa.json" 'j.chat.length > 0 && j.chat === j.chat_stream && j.chat_role === "assistant" && j.chat_finish === "length"')" = true ]
        check "openai: usage" [ "$(field "$TMP/oa.json" 'j.completion_usage.completion_tokens + "/" + j.completion_usage.speculative.path')" = "48/tree" ]
        check "openai: a bad request is a 400 naming the field" [ "$(field "$TMP/oa.json" 'j.error_status + "/" + j.error_param')" = "400/max_tokens" ]
    fi
elif [ "${SPRIG_REQUIRE_REF:-0}" = 1 ]; then
    echo "FAIL (SPRIG_REQUIRE_REF=1): no $REF/openai for the OpenAI client check"; fail=1
else
    echo "SKIP: the OpenAI client check (cd tests/ref && npm ci --omit=optional)"
fi

# tool calls and structured output through the OpenAI client: a template that writes calls as <tool_call>{json}</tool_call>
if [ -d "$REF/openai" ]; then
    start tools -m "$M/stories260K.gguf" -c 1024 -t 1 --chat-template-file tests/data/chat-templates/Qwen-Qwen2.5-7B-Instruct.jinja || exit 1
    node tests/ref/openai-tools.mjs "http://127.0.0.1:$PORT/v1" stories260K.gguf >"$TMP/ot.json" 2>"$TMP/ot.err"; rc=$?
    check "openai tools client runs (rc $rc: $(tail -c 300 "$TMP/ot.err"))" [ $rc -eq 0 ]
    if [ $rc -eq 0 ]; then
        check "openai: a named tool is called, its arguments fit its schema ($(head -c 400 "$TMP/ot.json"))" [ "$(field "$TMP/ot.json" 'j.named.finish + "/" + j.named.calls[0].function.name + "/" + (() => { const a = JSON.parse(j.named.calls[0].function.arguments); return typeof a.city + typeof a.days + (Number.isInteger(a.days) && a.days >= 0) + (a.city.length <= 16) + /^call_[A-Za-z0-9]{24}$/.test(j.named.calls[0].id); })()')" = "tool_calls/get_weather/stringnumbertruetruetrue" ]
        check "openai: required, one call, streamed = not streamed" [ "$(field "$TMP/ot.json" 'j.streamed.finish === "tool_calls" && j.streamed.calls.length === 1 && j.required.calls.length === 1 && j.streamed.calls[0].function.name === j.required.calls[0].function.name && j.streamed.calls[0].function.arguments === j.required.calls[0].function.arguments')" = true ]
        check "openai: a call and its result sent back" [ "$(field "$TMP/ot.json" 'j.followup.role')" = assistant ]
        check "openai: json_schema content parses and fits" [ "$(field "$TMP/ot.json" '(() => { const c = JSON.parse(j.json_schema.content); return j.json_schema.finish === "stop" && typeof c.name === "string" && c.name.length <= 12 && Number.isInteger(c.age) && c.age >= 0 && Object.keys(c).every((k) => ["name", "age", "pets"].includes(k)); })()')" = true ]
        check "openai: json_object starts an object" [ "$(field "$TMP/ot.json" '/^\s*\{/.test(j.json_object.content)')" = true ]
        check "openai: a schema keyword not supported: 400 naming response_format" [ "$(field "$TMP/ot.json" 'j.bad_schema.status + "/" + j.bad_schema.param')" = "400/response_format" ]
    fi
fi

# prefix reuse (a slot verifying alone, and two slots batched on a pool that holds both contexts): a chat's next
# turn reads only what is new, and answers the same as with cache_prompt false; usage and /health count it
for mode in --no-batch "--parallel 2"; do
start reuse -m "$M/stories260K.gguf" -c 1024 -t 1 $mode --draft "$M/stories-draft.gguf" --chat-template chatml || exit 1
post /v1/chat/completions '{"messages":[{"role":"user","content":"Once upon a time"}],"max_tokens":40,"temperature":0}' "$TMP/pr1"
reply=$(field "$TMP/pr1" 'JSON.stringify(j.choices[0].message.content)')
body='{"messages":[{"role":"user","content":"Once upon a time"},{"role":"assistant","content":'"$reply"'},{"role":"user","content":"And then?"}],"max_tokens":40,"temperature":0'
post /v1/chat/completions "$body}" "$TMP/pr2"
post /v1/chat/completions "$body,\"cache_prompt\":false}" "$TMP/pr3"
check "prefix reuse ($mode): turn 2 cached the first turn ($(field "$TMP/pr2" 'j.usage.prompt_tokens_details.cached_tokens + " of " + j.usage.prompt_tokens'))" \
    [ "$(field "$TMP/pr2" 'j.usage.prompt_tokens_details.cached_tokens > j.usage.prompt_tokens / 2')/$(field "$TMP/pr3" 'j.usage.prompt_tokens_details.cached_tokens')" = "true/0" ]
check "prefix reuse ($mode): the same reply as with cache_prompt false" [ "$(field "$TMP/pr2" 'j.choices[0].message.content')" = "$(field "$TMP/pr3" 'j.choices[0].message.content')" ]
curl -s "http://127.0.0.1:$PORT/health" >"$TMP/prh"
check "prefix reuse ($mode): /health counts cached prompt tokens ($(head -c 200 "$TMP/prh"))" [ "$(field "$TMP/prh" 'j.prompt_cache.cached_tokens > 0 && j.prompt_cache.requests_reusing === 1 && j.prompt_cache.hit_rate > 0')" = true ]
done

# prefix sharing through the pool: an overcommitted pool (1,536 slots for two contexts of 1,024) takes each request's
# blocks back when it ends, so the next request attaches the cached ones from the pool rather than its slot's own
# cache; prompt chunks join the shared step (--prefill-chunk 16)
"$BIN" serve -m "$M/stories260K.gguf" --prefill-chunk 5000 >/dev/null 2>"$TMP/pcb"; rc=$?
check "--prefill-chunk 5000: exit 2 naming it (rc $rc)" sh -c "[ $rc -eq 2 ] && grep -q -- '--prefill-chunk' '$TMP/pcb'"
start share -m "$M/stories260K.gguf" -c 1024 -t 1 --parallel 2 --kv-pool 1536 --prefill-chunk 16 || exit 1
P="Once upon a time there was a little girl named Lily. She loved to play in the park with her friends. One day she saw a big red ball under a tree. She ran to the ball and picked it up. Her friend Tom came to play with her."
post /v1/completions '{"prompt":"'"$P"'","max_tokens":8,"temperature":0}' "$TMP/sh1"
post /v1/completions '{"prompt":"'"$P"' Then they","max_tokens":16,"temperature":0}' "$TMP/sh2"
post /v1/completions '{"prompt":"'"$P"' Then they","max_tokens":16,"temperature":0,"cache_prompt":false}' "$TMP/sh3"
curl -s "http://127.0.0.1:$PORT/health" >"$TMP/shh"
check "prefix sharing: the second request attached the first's blocks ($(field "$TMP/sh2" 'j.usage.prompt_tokens_details.cached_tokens + " of " + j.usage.prompt_tokens'))" \
    [ "$(field "$TMP/sh2" 'j.usage.prompt_tokens_details.cached_tokens >= 32 && j.usage.prompt_tokens_details.cached_tokens % 32 === 0')" = true ]
check "prefix sharing: the same text as with cache_prompt false" [ "$(field "$TMP/sh2" 'j.choices[0].text')" = "$(field "$TMP/sh3" 'j.choices[0].text')" ]
check "prefix sharing: /health counts the pool's blocks ($(field "$TMP/shh" 'JSON.stringify(j.prompt_cache.blocks)'))" \
    [ "$(field "$TMP/shh" 'j.prompt_cache.blocks.published > 0 && j.prompt_cache.blocks.attached > 0 && j.prompt_cache.blocks.total === 48')" = true ]

# a request offering tools gets control tokens' text in its reply (Mistral's [TOOL_CALLS] and Llama's <|python_tag|>
# are control tokens, and calls are read by them); one without tools does not: a random model on Llama 3's vocabulary
# (256 reserved control tokens) sampled hot
"$BIN" mkmodel --preset tiny --vocab-from "$M/vocab/ggml-vocab-llama-bpe.gguf" -t 1 -q -o "$TMP/l3.gguf"
start l3 -m "$TMP/l3.gguf" -c 2048 -t 1 --chat-template-file tests/data/chat-templates/Qwen-Qwen2.5-7B-Instruct.jinja || exit 1
for tools in yes no; do
    T=''; [ $tools = yes ] && T=',"tools":[{"type":"function","function":{"name":"f"}}]'
    post /v1/chat/completions '{"messages":[{"role":"user","content":"hi"}],"max_tokens":1500,"temperature":2,"seed":5,"top_k":0,"top_p":1,"min_p":0'"$T"'}' "$TMP/rs_$tools"
done
check "control tokens' text in a reply to a request with tools ($(field "$TMP/rs_yes" '(j.choices[0].message.content.match(/<\|reserved_special_token_[0-9]+\|>/g) || []).length') of them), none without" \
    [ "$(field "$TMP/rs_yes" '/<\|reserved_special_token_[0-9]+\|>/.test(j.choices[0].message.content)')/$(field "$TMP/rs_no" '/<\|reserved_special_token_[0-9]+\|>/.test(j.choices[0].message.content)')" = "true/false" ]

# ---- continuous batching: concurrent requests, staggered, each = plain `sprig run`
# (8 requests on 4 slots: the first four arrive within 30 ms, the rest queue for a slot)
set -- "Once upon a time" 140 0 "Lily and Tom" 196 0.01 "The little dog" 60 0.02 "One day, a bird" 220 0.005 \
       "Once upon a time" 72 0.015 "The sun was hot" 156 0.03 "Sam had a big red ball" 200 0.025 "The little dog" 104 0.02
k=0
while [ $# -ge 3 ]; do
    k=$((k + 1))
    printf '%s\n%s\n' "$2" "$3" >"$TMP/bq$k"
    node -e "process.stdout.write(JSON.stringify({prompt: process.argv[1], max_tokens: +process.argv[2], temperature: 0}))" "$1" "$2" >"$TMP/bb$k"
    "$BIN" run -m "$M/stories260K.gguf" -p "$1" -n "$2" --temp 0 -q >"$TMP/bw$k.full" 2>/dev/null
    node -e "const f = require('fs'); const p = process.argv[1]; const t = f.readFileSync('$TMP/bw$k.full', 'utf8');
             f.writeFileSync('$TMP/bw$k', t.startsWith(p) ? t.slice(p.length) : 'PROMPT NOT ECHOED')" "$1"
    shift 3
done
batch_round() { # batch_round TAG: the 8 requests at their delays, each compared with its plain run
    JOBS=""
    for i in 1 2 3 4 5 6 7 8; do
        { sleep "$(sed -n 2p "$TMP/bq$i")"
          curl -s -o "$TMP/$1-r$i" -H 'Content-Type: application/json' -d @"$TMP/bb$i" "http://127.0.0.1:$PORT/v1/completions"; } &
        JOBS="$JOBS $!"
    done
    for p in $JOBS; do wait "$p"; done   # not the servers
    for i in 1 2 3 4 5 6 7 8; do
        field "$TMP/$1-r$i" 'j.choices[0].text' >"$TMP/$1-t$i" 2>/dev/null
        check "$1: request $i ($(sed -n 1p "$TMP/bq$i") tokens) = sprig run" cmp -s "$TMP/$1-t$i" "$TMP/bw$i"
    done
}
start batch -m "$M/stories260K.gguf" -c 256 -t 1 --parallel 4 --draft "$M/stories-draft.gguf" --tree auto || exit 1
batch_round tree
check "tree: a request's usage says tree" [ "$(field "$TMP/tree-r4" 'j.usage.speculative.path')" = tree ]
curl -s -o "$TMP/bh" "http://127.0.0.1:$PORT/health"
check "tree: verify forwards shared by slots ($(cat "$TMP/bh"))" [ "$(field "$TMP/bh" 'j.batch.shared_forwards > 0 && j.batch.max_sequences >= 2 && j.batch.kv_booked === 0')" = true ]
start batchng -m "$M/stories260K.gguf" -c 256 -t 1 --parallel 4 --draft-ngram --draft-max 4 || exit 1
batch_round ngram
curl -s -o "$TMP/bh2" "http://127.0.0.1:$PORT/health"
check "ngram: verify forwards shared by slots ($(cat "$TMP/bh2"))" [ "$(field "$TMP/bh2" 'j.batch.shared_forwards > 0 && j.batch.max_sequences >= 2')" = true ]
# a pool of one context: requests 2 and 4 each book most of it (prompt + ~200 tokens), so the
# second waits for the first's blocks, then runs; both exact, never two in one forward
start pool -m "$M/stories260K.gguf" -c 256 -t 1 --parallel 2 --kv-pool 256 --kv-block 16 --draft "$M/stories-draft.gguf" --tree || exit 1
JOBS=""
for i in 2 4; do
    curl -s -o "$TMP/pool-r$i" -H 'Content-Type: application/json' -d @"$TMP/bb$i" "http://127.0.0.1:$PORT/v1/completions" &
    JOBS="$JOBS $!"
done
for p in $JOBS; do wait "$p"; done
for i in 2 4; do
    field "$TMP/pool-r$i" 'j.choices[0].text' >"$TMP/pool-t$i" 2>/dev/null
    check "pool: request $i = sprig run" cmp -s "$TMP/pool-t$i" "$TMP/bw$i"
done
curl -s -o "$TMP/bh3" "http://127.0.0.1:$PORT/health"
check "pool: one request at a time in the pool ($(cat "$TMP/bh3"))" [ "$(field "$TMP/bh3" 'j.batch.max_sequences === 1 && j.batch.kv_slots === 256 && j.batch.kv_booked === 0')" = true ]
"$BIN" serve -m "$M/stories260K.gguf" --port 18082 -c 256 --kv-pool 128 >/dev/null 2>"$TMP/bad"; rc=$?
check "a pool smaller than a context exits 2 (rc $rc)" [ $rc -eq 2 ]
check "... naming --kv-pool" has "--kv-pool" "$TMP/bad"
"$BIN" serve -m "$M/stories260K.gguf" --port 18082 --kv-block 24 >/dev/null 2>"$TMP/bad"; rc=$?
check "a block size that is not a power of two exits 2 (rc $rc)" [ $rc -eq 2 ]
check "... naming --kv-block" has "--kv-block" "$TMP/bad"
"$BIN" serve -m "$M/stories260K.gguf" --port 18082 --kv-type f8 >/dev/null 2>"$TMP/bad"; rc=$?
check "an unknown KV type exits 2 (rc $rc)" [ $rc -eq 2 ]
check "... naming --kv-type" has "--kv-type" "$TMP/bad"

# ---- the page in a real headless browser (Debian's Chromium through puppeteer-core): send a
# message, read the streamed reply (= the API's greedy reply) and the drawn speculation tree
CHROMIUM=$(command -v chromium || command -v chromium-browser || echo "")
if [ -n "$CHROMIUM" ] && [ -d "$REF/puppeteer-core" ]; then
    start page -m "$M/stories260K.gguf" -c 512 -t 1 --draft "$M/stories-draft.gguf" --tree auto --chat-template chatml || exit 1
    node tests/ref/page-browser.mjs "http://127.0.0.1:$PORT" "$CHROMIUM" "Tell a story." >"$TMP/br.json" 2>"$TMP/br.err"; rc=$?
    check "browser test runs (rc $rc: $(tail -c 300 "$TMP/br.err"))" [ $rc -eq 0 ]
    if [ $rc -eq 0 ]; then
        post /v1/chat/completions '{"messages":[{"role":"user","content":"Tell a story."}],"max_tokens":200,"temperature":0}' "$TMP/br.api"
        field "$TMP/br.api" 'j.choices[0].message.content' >"$TMP/br.want"
        field "$TMP/br.json" 'j.reply' >"$TMP/br.got"
        check "browser: the rendered reply = the API's" cmp -s "$TMP/br.got" "$TMP/br.want"
        check "browser: the user's message shown" [ "$(field "$TMP/br.json" 'j.user')" = "Tell a story." ]
        check "browser: a tree drawn with its accepted path ($(field "$TMP/br.json" 'j.nodes + " nodes, " + j.accepted + " accepted; " + j.stats'))" \
            [ "$(field "$TMP/br.json" 'j.nodes >= 2 && j.accepted >= 1 && j.accepted <= j.nodes && /running acceptance [01][.][0-9]+/.test(j.stats) && j.errors.length === 0')" = true ]
    fi
elif [ "${SPRIG_REQUIRE_REF:-0}" = 1 ]; then
    echo "FAIL (SPRIG_REQUIRE_REF=1): no chromium or $REF/puppeteer-core for the page check"; fail=1
else
    echo "SKIP: the browser check (needs chromium and tests/ref/node_modules/puppeteer-core)"
fi

"$BIN" serve -m "$M/stories260K.gguf" --port 0 >/dev/null 2>"$TMP/bad"; rc=$?
check "port 0 exits 2 (rc $rc)" [ $rc -eq 2 ]
"$BIN" serve --port 18081 >/dev/null 2>"$TMP/bad"; rc=$?
check "no model exits 2 (rc $rc)" [ $rc -eq 2 ]
check "no model says -m" has "-m MODEL is required" "$TMP/bad"

# SIGTERM stops each server cleanly: exit 0, and (under `make asan`) no sanitizer report, no leak
for p in $PIDS; do
    if kill -0 "$p" 2>/dev/null; then
        kill -TERM "$p"; wait "$p"; rc=$?
        check "server $p stops with exit 0 on SIGTERM (rc $rc)" [ $rc -eq 0 ]
    fi
done
PIDS=""
check "no sanitizer report in the server logs" sh -c "! grep -l 'Sanitizer' '$TMP'/*.log"

[ $fail -eq 0 ] && echo "test-cli-serve: ok"
exit $fail
