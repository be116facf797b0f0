#!/bin/sh
# tests/test-cli-chat.sh — `sprig run --chat`: the conversation rendered with
# a chat template (chosen with --chat-template, or detected from the model's
# tokenizer.chat_template), stdout = rendered prompt + generation, and the
# error paths: no template (names the key), an unknown --chat-template name
# (exit 2, lists the names), an unknown template text (exit 1, suggests the
# override). stories260K has no chat template; synthetic models from
# `sprig mkmodel --chat-template` carry one.
# Run by tests/run.sh with $SPRIG_BIN and $SPRIG_SHARED set, cwd = repo root.
set -u
BIN=${SPRIG_BIN:-./sprig}
SHARED=${SPRIG_SHARED:-../shared}
M="$SHARED/models/stories260K.gguf"
TMP=$(mktemp -d "${TMPDIR:-/tmp}/sprig-cli-chat-XXXXXX")
trap 'rm -rf "$TMP"' EXIT
fail=0
check() { d=$1; shift; if "$@"; then :; else echo "FAIL: $d"; fail=1; fi; }
has() { grep -F -q -- "$1" "$2"; }
starts() { head -c "$(wc -c <"$1")" "$2" | cmp -s - "$1"; }   # file $2 starts with the bytes of $1

# --chat-template on a model without a template: runs, stdout = rendered text + generation
"$BIN" run -m "$M" --chat-template chatml -sys "Be kind." -p "Once upon a time" --temp 0 -n 20 -t 1 >"$TMP/out" 2>"$TMP/err"; rc=$?
check "chatml run exits 0 (rc $rc)" [ $rc -eq 0 ]
printf '<|im_start|>system\nBe kind.<|im_end|>\n<|im_start|>user\nOnce upon a time<|im_end|>\n<|im_start|>assistant\n' >"$TMP/want"
check "stdout starts with the rendered conversation" starts "$TMP/want" "$TMP/out"
check "and goes on with generated text" [ "$(wc -c <"$TMP/out")" -gt "$(wc -c <"$TMP/want")" ]
check "stderr names the template and how it was chosen" has "chat template chatml (chosen with --chat-template)" "$TMP/err"

# without -sys the Qwen 2 default system turn appears
"$BIN" run -m "$M" --chat-template chatml -p "Hi" --temp 0 -n 5 -t 1 -q >"$TMP/out" 2>/dev/null
printf '<|im_start|>system\nYou are a helpful assistant<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n' >"$TMP/want"
check "chatml default system prompt" starts "$TMP/want" "$TMP/out"

# every family renders and runs (BOS text = the vocabulary's <s>)
for t in llama3 llama3-agp chatml qwen3 gemma3 gemma4 phi3; do
    "$BIN" run -m "$M" --chat-template $t -sys "S" -p "U" --temp 0 -n 5 -t 1 -q >"$TMP/o-$t" 2>"$TMP/e-$t"; rc=$?
    check "--chat-template $t exits 0 (rc $rc)" [ $rc -eq 0 ]
done
printf '<s><start_of_turn>user\nS\n\nU<end_of_turn>\n<start_of_turn>model\n' >"$TMP/want"
check "gemma3 folds the system prompt into the user turn, BOS text first" starts "$TMP/want" "$TMP/o-gemma3"
printf '<s><|user|>\nU<|end|>\n<|assistant|>\n' >"$TMP/want"
check "phi3 drops the system message" starts "$TMP/want" "$TMP/o-phi3"
check "and says so" has "ignores system messages" "$TMP/e-phi3"

# -f gives the user message too
printf 'from a file' >"$TMP/prompt"
"$BIN" run -m "$M" --chat-template qwen3 -f "$TMP/prompt" --temp 0 -n 3 -t 1 -q >"$TMP/out" 2>/dev/null
printf '<|im_start|>user\nfrom a file<|im_end|>\n<|im_start|>assistant\n' >"$TMP/want"
check "-f is the user message" starts "$TMP/want" "$TMP/out"

# detected from the model's tokenizer.chat_template (a synthetic model carrying Qwen 2's template)
QWEN2='{% for message in messages %}{% if loop.first and messages[0]['"'"'role'"'"'] != '"'"'system'"'"' %}{{ '"'"'<|im_start|>system
You are a helpful assistant<|im_end|>
'"'"' }}{% endif %}{{'"'"'<|im_start|>'"'"' + message['"'"'role'"'"'] + '"'"'
'"'"' + message['"'"'content'"'"'] + '"'"'<|im_end|>'"'"' + '"'"'
'"'"'}}{% endfor %}{% if add_generation_prompt %}{{ '"'"'<|im_start|>assistant
'"'"' }}{% endif %}'
"$BIN" mkmodel --preset tiny --vocab 512 -t 1 -q --chat-template "$QWEN2" -o "$TMP/qwen2ish.gguf"
check "mkmodel writes a model with a template" [ -s "$TMP/qwen2ish.gguf" ]
"$BIN" run -m "$TMP/qwen2ish.gguf" --chat -p "Hi" --temp 0 -n 3 -t 1 >"$TMP/out" 2>"$TMP/err"; rc=$?
check "--chat with a detected template exits 0 (rc $rc)" [ $rc -eq 0 ]
check "the file's template ran (Jinja)" has "chat template Jinja, from tokenizer.chat_template" "$TMP/err"
printf '<|im_start|>system\nYou are a helpful assistant<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n' >"$TMP/want"
check "detected chatml renders" starts "$TMP/want" "$TMP/out"
"$BIN" run -m "$TMP/qwen2ish.gguf" --chat-template gemma3 -p "Hi" --temp 0 -n 3 -t 1 -q >"$TMP/out" 2>/dev/null
check "--chat-template overrides the detected one" has "<start_of_turn>user" "$TMP/out"

# errors
"$BIN" run -m "$M" --chat -p "Hi" -n 3 -t 1 >"$TMP/out" 2>"$TMP/err"; rc=$?
check "no template: exit 1 (rc $rc)" [ $rc -eq 1 ]
check "no template: names the key" has "no tokenizer.chat_template" "$TMP/err"
check "no template: suggests the override" has "--chat-template NAME (one of: llama3," "$TMP/err"
check "no template: nothing on stdout" [ ! -s "$TMP/out" ]
"$BIN" run -m "$M" -sys "S" -p "Hi" -n 3 -t 1 >/dev/null 2>"$TMP/err"; rc=$?
check "-sys implies --chat (rc $rc)" [ $rc -eq 1 ]
check "-sys implies --chat: the template is looked for" has "no tokenizer.chat_template" "$TMP/err"

"$BIN" run -m "$M" --chat-template vicuna -p "Hi" -n 3 >"$TMP/out" 2>"$TMP/err"; rc=$?
check "unknown name: exit 2 (rc $rc)" [ $rc -eq 2 ]
check "unknown name: named, names listed" has "unknown template 'vicuna' (one of: llama3, llama3-agp, chatml, qwen3, gemma3, gemma4, phi3)" "$TMP/err"
"$BIN" run -m "$M" --chat-template >/dev/null 2>"$TMP/err"; rc=$?
check "--chat-template without a value: exit 2 (rc $rc)" [ $rc -eq 2 ]
"$BIN" run -m "$M" -sys >/dev/null 2>"$TMP/err"; rc=$?
check "-sys without a value: exit 2 (rc $rc)" [ $rc -eq 2 ]

"$BIN" mkmodel --preset tiny --vocab 512 -t 1 -q --chat-template '{% for m in messages %}### {{ m.role }}: {{ m.content }}{% endfor %}' -o "$TMP/bogus.gguf"
"$BIN" run -m "$TMP/bogus.gguf" --chat -p "Hi" -n 3 -t 1 >"$TMP/out" 2>"$TMP/err"; rc=$?
check "a template of no known family runs (rc $rc)" [ $rc -eq 0 ]
printf '### user: Hi' >"$TMP/want"
check "and renders as Jinja does" starts "$TMP/want" "$TMP/out"
"$BIN" run -m "$TMP/bogus.gguf" --chat-template llama3 -p "Hi" -n 3 -t 1 -q >"$TMP/out" 2>/dev/null; rc=$?
check "--chat-template still picks a table row (rc $rc)" [ $rc -eq 0 ] && check "the row's text" has "<|start_header_id|>user" "$TMP/out"
printf '{%% for m in messages %%}<{{ m.role | upper }}>{{ m.content }}{%% endfor %%}{%% if add_generation_prompt %%}<BOT>{%% endif %%}\n' >"$TMP/t.jinja"
"$BIN" run -m "$TMP/bogus.gguf" --chat-template-file "$TMP/t.jinja" -sys "Be kind" -p "Hi" -n 3 -t 1 >"$TMP/out" 2>"$TMP/err"; rc=$?
check "--chat-template-file runs (rc $rc)" [ $rc -eq 0 ]
printf '<SYSTEM>Be kind<USER>Hi<BOT>' >"$TMP/want"
check "--chat-template-file renders" starts "$TMP/want" "$TMP/out"
check "and says where the template came from" has "chat template Jinja, from $TMP/t.jinja" "$TMP/err"
printf 'x\n{%% include "other" %%}' >"$TMP/bad.jinja"
"$BIN" run -m "$TMP/bogus.gguf" --chat-template-file "$TMP/bad.jinja" -p "Hi" -n 3 -t 1 >"$TMP/out" 2>"$TMP/err"; rc=$?
check "an unsupported statement: exit 1 (rc $rc)" [ $rc -eq 1 ]
check "named with its line:column" has "bad.jinja: chat template 2:4: the statement 'include' is not supported" "$TMP/err"
printf '{%% if messages[0].role != "user" %%}{{ raise_exception("Conversation must start with a user message") }}{%% endif %%}x' >"$TMP/raise.jinja"
"$BIN" run -m "$TMP/bogus.gguf" --chat-template-file "$TMP/raise.jinja" -sys "S" -p "Hi" -n 3 -t 1 >"$TMP/out" 2>"$TMP/err"; rc=$?
check "a template that raises: exit 1 (rc $rc)" [ $rc -eq 1 ]
check "with the template's message" has "raised: Conversation must start with a user message" "$TMP/err"
"$BIN" run -m "$M" --chat-template llama3 --chat-template-file "$TMP/t.jinja" -p "Hi" -n 3 >/dev/null 2>"$TMP/err"; rc=$?
check "--chat-template with --chat-template-file: exit 2 (rc $rc)" [ $rc -eq 2 ]

# sprig template: a rendering from the file's metadata alone (a vocabulary-only GGUF works)
V="$SHARED/models/vocab"
"$BIN" template -m "$V/ggml-vocab-qwen2.gguf" --messages '[{"role":"user","content":"Hi"}]' --add-generation-prompt >"$TMP/out" 2>"$TMP/err"; rc=$?
check "template exits 0 (rc $rc: $(cat "$TMP/err"))" [ $rc -eq 0 ]
printf '<|im_start|>system\nYou are a helpful assistant<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n' >"$TMP/want"
check "template prints Qwen 2's rendering exactly" cmp -s "$TMP/want" "$TMP/out"
printf '[{"role":"user","content":"Hi"}]' >"$TMP/msgs.json"
"$BIN" template -m "$V/ggml-vocab-qwen2.gguf" --messages "@$TMP/msgs.json" --chat-template-file "$TMP/t.jinja" >"$TMP/out" 2>"$TMP/err"; rc=$?
check "template: @file messages and a template file (rc $rc)" [ $rc -eq 0 ] && check "rendered" [ "$(cat "$TMP/out")" = "<USER>Hi" ]
"$BIN" template -m "$V/ggml-vocab-qwen2.gguf" >/dev/null 2>"$TMP/err"; rc=$?
check "template without --messages: exit 2 (rc $rc)" [ $rc -eq 2 ] && check "names it" has "--messages JSON is required" "$TMP/err"
"$BIN" template -m "$V/ggml-vocab-qwen2.gguf" --messages '[{"role":' >/dev/null 2>"$TMP/err"; rc=$?
check "template with bad JSON: exit 2 (rc $rc)" [ $rc -eq 2 ] && check "names the flag" has "--messages: not JSON" "$TMP/err"
"$BIN" template -m "$V/ggml-vocab-qwen2.gguf" --chat-template-file "$TMP/raise.jinja" --messages '[{"role":"system","content":"S"}]' >/dev/null 2>"$TMP/err"; rc=$?
check "template that raises: exit 1 (rc $rc)" [ $rc -eq 1 ] && check "with its message" has "raised: Conversation must start with a user message" "$TMP/err"

"$BIN" run --help >"$TMP/help"
check "usage documents --chat" has "--chat " "$TMP/help"
check "usage documents -sys" has "-sys, --system TEXT" "$TMP/help"
check "usage documents --chat-template" has "--chat-template NAME" "$TMP/help"
check "usage documents --chat-template-file" has "--chat-template-file F" "$TMP/help"

[ $fail -eq 0 ] && echo "test-cli-chat: ok"
exit $fail
