/*
 * tests/test-toolcall.c — tool calls read back out of a reply (src/chat/toolcall):
 *   - round trips through the real templates: each family's published
 *     template renders an assistant turn with tool calls exactly as its
 *     model is trained to write them (the rendering with the turn, past where
 *     it parts from the rendering of the prompt alone); that text, parsed,
 *     must give back the
 *     same names and arguments (as JSON values), and the format must be the
 *     one the template's markers name;
 *   - streaming: where calls begin, and what is held while a marker may
 *     still be forming;
 *   - replies that are not calls (prose, malformed or truncated regions,
 *     hostile nesting) stay content, whole.
 */
#include "test.h"
#include "chat/chat.h"
#include "chat/toolcall.h"
#include "grammar/match.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *TOOLS =
    "[{\"type\":\"function\",\"function\":{\"name\":\"get_weather\",\"description\":\"Weather\",\"parameters\":{\"type\":\"object\","
    "\"properties\":{\"city\":{\"type\":\"string\"},\"days\":{\"type\":\"integer\"},\"units\":{\"type\":\"object\"},"
    "\"tags\":{\"type\":\"array\"}},\"required\":[\"city\"]}}},"
    "{\"type\":\"function\",\"function\":{\"name\":\"add\",\"description\":\"Add\",\"parameters\":{\"type\":\"object\","
    "\"properties\":{\"a\":{\"type\":\"integer\"},\"b\":{\"type\":\"integer\"}}}}}]";
static const char *ARGS1 = "{\"city\":\"Paris \\\"Ville\\\"\",\"days\":3,\"units\":{\"metric\":true},\"tags\":[\"a\",\"b c\"]}";
static const char *ARGS2 = "{\"a\":1,\"b\":2}";

/* the assistant turn the template renders for calls: rendering(user, assistant with calls) minus rendering(user) + agp */
static char *rendered_reply(const sprig_chat *c, const char *file, int n_calls)
{
    char conv[2048];
    snprintf(conv, sizeof conv,
             "[{\"role\":\"user\",\"content\":\"Weather in Paris?\"},{\"role\":\"assistant\",\"content\":\"\",\"tool_calls\":["
             "{\"id\":\"abcDEF123\",\"type\":\"function\",\"function\":{\"name\":\"get_weather\",\"arguments\":%s}}%s%s%s]}]",
             ARGS1, n_calls > 1 ? ",{\"id\":\"xyzXYZ789\",\"type\":\"function\",\"function\":{\"name\":\"add\",\"arguments\":" : "",
             n_calls > 1 ? ARGS2 : "", n_calls > 1 ? "}}" : "");
    json_t *msgs = json_loads(conv, 0, NULL), *tools = json_loads(TOOLS, 0, NULL);
    json_t *first = json_array();
    json_array_append(first, json_array_get(msgs, 0));
    char *pre = NULL, *full = NULL, *reply = NULL;
    size_t pn = 0, fn = 0;
    sprig_error err = { 0 };
    if (!sprig_chat_apply(c, first, tools, true, "<s>", "</s>", NULL, &pre, &pn, &err) &&
        !sprig_chat_apply(c, msgs, tools, false, "<s>", "</s>", NULL, &full, &fn, &err)) {
        size_t common = 0;   /* the reply starts where the two renderings part (Gemma 4's prompt adds an empty thought channel) */
        while (common < pn && common < fn && pre[common] == full[common]) common++;
        while (common && !strchr("\n>]", full[common - 1])) common--;   /* back to a token's end: "<|" is shared by two markers */
        CHECKF(common + 64 > pn, "%s: the rendering with the reply parts from the prompt early\n[%s]\n[%s]", file, pre, full);
        reply = strdup(full + common);
    } else CHECKF(0, "render: %s", err.msg);
    free(pre);
    free(full);
    json_decref(msgs);
    json_decref(tools);
    json_decref(first);
    return reply;
}

/* a vocabulary of the 256 bytes, to run grammars over text */
static const char *byte_text(const void *u, int32_t id, size_t *len)
{
    (void)u;
    static char b[256];
    b[id] = (char)id;
    *len = 1;
    return &b[id];
}

static bool args_equal(const char *got, const char *want)
{
    json_t *a = json_loads(got, 0, NULL), *b = json_loads(want, 0, NULL);
    const bool eq = a && b && json_equal(a, b);
    json_decref(a);
    json_decref(b);
    return eq;
}

static void test_templates(void)
{
    static const struct { const char *file, *format; int calls; } cases[] = {
        { "Qwen-Qwen2.5-7B-Instruct.jinja", "hermes", 2 },
        { "Qwen-Qwen3-0.6B.jinja", "hermes", 2 },
        { "NousResearch-Hermes-3-Llama-3.1-8B-tool_use.jinja", "hermes", 2 },
        { "Qwen3-Coder.jinja", "qwen3-coder", 2 },
        { "Qwen3.5-4B.jinja", "qwen3-coder", 2 },
        { "meta-llama-Llama-3.1-8B-Instruct.jinja", "llama3", 1 },
        { "meta-llama-Llama-3.2-3B-Instruct.jinja", "llama3", 1 },
        { "meta-llama-Llama-3.3-70B-Instruct.jinja", "llama3", 1 },
        { "mistralai-Mistral-Nemo-Instruct-2407.jinja", "mistral", 2 },
        { "Mistral-Small-3.2-24B-Instruct-2506.jinja", "mistral-v11", 2 },
        { "unsloth-mistral-Devstral-Small-2507.jinja", "mistral-v11", 2 },
        { "google-gemma-4-31B-it.jinja", "gemma4", 2 },
    };
    json_t *tools = json_loads(TOOLS, 0, NULL);
    sprig_error err = { 0 };
    sprig_gvocab *bytes = sprig_gvocab_create(256, byte_text, NULL, NULL, &err);
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        char path[256];
        snprintf(path, sizeof path, "tests/data/chat-templates/%s", cases[k].file);
        size_t n = 0;
        char *text = test_read_file(path, &n);
        CHECKF(text != NULL, "%s missing", path);
        if (!text) continue;
        sprig_chat *c = NULL;
        const bool ok = !sprig_chat_from_text(text, n, path, &c, &err);
        CHECKF(ok, "%s: %s", path, err.msg);
        free(text);
        if (!ok) continue;
        const struct sprig_toolfmt *f = sprig_chat_toolfmt(c);
        CHECKF(f && !strcmp(sprig_toolfmt_name(f), cases[k].format), "%s: format %s, want %s", cases[k].file, f ? sprig_toolfmt_name(f) : "none",
               cases[k].format);
        char *reply = f ? rendered_reply(c, cases[k].file, cases[k].calls) : NULL;
        if (reply) {
            json_t *calls = NULL;
            char *content = NULL;
            size_t cn = 0, head = 0;
            CHECK(sprig_toolfmt_parse(f, reply, strlen(reply), tools, &calls, &content, &cn, &head));
            const bool count = (int)json_array_size(calls) == cases[k].calls;
            CHECKF(count, "%s: %zu calls, want %d, from [%s]", cases[k].file, json_array_size(calls), cases[k].calls, reply);
            for (size_t i = 0; count && i < json_array_size(calls); i++) {
                const json_t *call = json_array_get(calls, i);
                const char *name = json_string_value(json_object_get(call, "name"));
                const char *args = json_string_value(json_object_get(call, "arguments"));
                CHECKF(name && !strcmp(name, i ? "add" : "get_weather"), "%s: call %zu is '%s'", cases[k].file, i, name ? name : "");
                CHECKF(args && args_equal(args, i ? ARGS2 : ARGS1), "%s: call %zu arguments %s", cases[k].file, i, args ? args : "");
            }
            /* streaming: nothing of the calls is streamed as content, whatever the cut */
            const size_t at = sprig_toolfmt_find(f, reply, strlen(reply), NULL);
            CHECKF(at < strlen(reply), "%s: the calls' start is not found", cases[k].file);
            for (size_t cut = 0; cut <= strlen(reply); cut++) {
                size_t held = cut;
                const size_t a = sprig_toolfmt_find(f, reply, cut, &held);
                const size_t streamable = a < cut ? a : held;
                if (streamable > at) {
                    CHECKF(0, "%s: at %zu bytes, %zu would be streamed, past the calls' start %zu", cases[k].file, cut, streamable, at);
                    break;
                }
            }
            /* the grammar tool_choice "required" decodes under takes the template's own rendering of the calls */
            char *g = NULL;
            CHECKF(!sprig_toolfmt_grammar(f, tools, NULL, cases[k].calls > 1, &g, &err), "%s: %s", cases[k].file, err.msg);
            sprig_gbnf *gb = NULL;
            CHECKF(g && !sprig_gbnf_parse(g, strlen(g), &gb, &err), "%s: the tool grammar does not compile: %s\n%s", cases[k].file, err.msg, g ? g : "");
            sprig_gmatch *gm = gb ? sprig_gmatch_create(gb, bytes, &err) : NULL;
            if (gm) {
                const size_t end = strlen(reply) - (cn - head);   /* the calls end where the text after them begins */
                const int32_t s = sprig_gmatch_advance_bytes(gm, sprig_gmatch_start(gm), reply + at, end - at);
                CHECKF(s >= 0 && sprig_gmatch_accepting(gm, s), "%s: the tool grammar refuses the template's calls [%.*s]", cases[k].file,
                       (int)(end - at), reply + at);
                /* and only the named tool when one is named */
                char *g2 = NULL;
                CHECK(!sprig_toolfmt_grammar(f, tools, "add", false, &g2, &err));
                sprig_gbnf *gb2 = NULL;
                sprig_gmatch *gm2 = g2 && !sprig_gbnf_parse(g2, strlen(g2), &gb2, &err) ? sprig_gmatch_create(gb2, bytes, &err) : NULL;
                CHECK(gm2 && sprig_gmatch_advance_bytes(gm2, sprig_gmatch_start(gm2), reply + at, end - at) < 0);
                sprig_gmatch_free(gm2);
                sprig_gbnf_free(gb2);
                free(g2);
            }
            sprig_gmatch_free(gm);
            sprig_gbnf_free(gb);
            free(g);
            json_decref(calls);
            free(content);
        }
        free(reply);
        sprig_chat_free(c);
    }
    sprig_gvocab_free(bytes);
    json_decref(tools);
}

/* parse text and check the call count and the content */
static void expect(const char *fmt, const char *text, int n_calls, const char *content)
{
    const struct sprig_toolfmt *f = sprig_toolfmt_named(fmt);
    json_t *calls = NULL;
    char *got = NULL;
    size_t cn = 0, head = 0;
    CHECK(f && sprig_toolfmt_parse(f, text, strlen(text), NULL, &calls, &got, &cn, &head));
    CHECKF((int)json_array_size(calls) == n_calls, "%s [%s]: %zu calls, want %d", fmt, text, json_array_size(calls), n_calls);
    CHECKF(got && !strcmp(got, content), "%s [%s]: content [%s], want [%s]", fmt, text, got ? got : "", content);
    json_decref(calls);
    free(got);
}

static void test_content(void)
{
    /* prose before the calls is content; text after them too */
    expect("hermes", "Let me check.\n<tool_call>\n{\"name\": \"f\", \"arguments\": {}}\n</tool_call>", 1, "Let me check.");
    expect("hermes", "<tool_call>{\"name\": \"f\", \"arguments\": {\"x\": 1}}</tool_call>\nDone.", 1, "\nDone.");
    /* the last call's closing tag may be cut by the end of the reply (EOS); an open call is not a call */
    expect("hermes", "<tool_call>{\"name\": \"f\", \"arguments\": {}}", 1, "");
    expect("hermes", "<tool_call>{\"name\": \"f\", \"argu", 0, "<tool_call>{\"name\": \"f\", \"argu");
    /* a later call cut short (a reply out of tokens) ends the calls: the complete ones are kept, the rest is content */
    expect("hermes", "<tool_call>{\"name\": \"f\", \"arguments\": {}}</tool_call>\n<tool_call>{\"name\": \"g\", \"argu", 1,
           "\n<tool_call>{\"name\": \"g\", \"argu");
    expect("gemma4", "<|tool_call>call:f{a:1}<tool_call|><|tool_call>call:g{a:<|\"|>x", 1, "<|tool_call>call:g{a:<|\"|>x");
    /* not calls: everything stays content */
    expect("hermes", "no calls here", 0, "no calls here");
    expect("hermes", "<tool_call>not json</tool_call>", 0, "<tool_call>not json</tool_call>");
    expect("hermes", "<tool_call>{\"arguments\": {}}</tool_call>", 0, "<tool_call>{\"arguments\": {}}</tool_call>");
    expect("hermes", "<tool_call>{\"name\": \"f\", \"arguments\": [1]}</tool_call>", 0, "<tool_call>{\"name\": \"f\", \"arguments\": [1]}</tool_call>");
    /* arguments as a string holding an object are taken */
    expect("hermes", "<tool_call>{\"name\": \"f\", \"arguments\": \"{\\\"x\\\": 1}\"}</tool_call>", 1, "");
    /* llama3: only a reply that is a JSON call; prose is prose, JSON without a name is content */
    expect("llama3", "{\"name\": \"f\", \"parameters\": {\"a\": 1}}", 1, "");
    expect("llama3", "<|python_tag|>{\"name\": \"f\", \"parameters\": {}}; {\"name\": \"g\", \"parameters\": {}}", 2, "");
    expect("llama3", "The answer is {\"name\": \"f\"}", 0, "The answer is {\"name\": \"f\"}");
    expect("llama3", "{\"answer\": 4}", 0, "{\"answer\": 4}");
    /* mistral, both shapes, and a name that is not one */
    expect("mistral", "[TOOL_CALLS][{\"name\": \"f\", \"arguments\": {\"a\": 1}}, {\"name\": \"g\", \"arguments\": {}}]", 2, "");
    expect("mistral", "[TOOL_CALLS]f[ARGS]{\"a\": 1}[TOOL_CALLS]g[CALL_ID]abcdefghi[ARGS]{}", 2, "");
    expect("mistral", "[TOOL_CALLS]f {bad}[ARGS]{}", 0, "[TOOL_CALLS]f {bad}[ARGS]{}");
    /* gemma4: its own notation */
    expect("gemma4", "<|tool_call>call:f{a:1,b:<|\"|>x, y<|\"|>,c:[true,null,2.5],d:{e:<|\"|>z<|\"|>}}<tool_call|>", 1, "");
    expect("gemma4", "<|tool_call>call:f{a:<|\"|>open", 0, "<|tool_call>call:f{a:<|\"|>open");
    /* qwen3-coder: values typed by the schema when one is known, strings otherwise */
    expect("qwen3-coder", "<tool_call>\n<function=f>\n<parameter=a>\n12\n</parameter>\n</function>\n</tool_call>", 1, "");
    expect("qwen3-coder", "<tool_call>\n<function=f>\n<parameter=a>\n12\n</function>", 0,
           "<tool_call>\n<function=f>\n<parameter=a>\n12\n</function>");
    {
        const struct sprig_toolfmt *f = sprig_toolfmt_named("gemma4");
        json_t *calls = NULL;
        char *got = NULL;
        size_t cn = 0, head = 0;
        const char *t = "<|tool_call>call:f{a:1,b:<|\"|>x, y<|\"|>,c:[true,null,2.5],d:{e:<|\"|>z<|\"|>}}<tool_call|>";
        CHECK(sprig_toolfmt_parse(f, t, strlen(t), NULL, &calls, &got, &cn, &head));
        const char *args = json_string_value(json_object_get(json_array_get(calls, 0), "arguments"));
        CHECKF(args && args_equal(args, "{\"a\":1,\"b\":\"x, y\",\"c\":[true,null,2.5],\"d\":{\"e\":\"z\"}}"), "gemma4 arguments %s", args ? args : "");
        json_decref(calls);
        free(got);
    }
    /* hostile: nesting past the bound, a huge name, NUL bytes: content, no crash */
    char deep[600];
    memcpy(deep, "<|tool_call>call:f", 18);
    for (int i = 18; i < 598; i++) deep[i] = '[';
    deep[598] = 0;
    expect("gemma4", deep, 0, deep);
    /* streaming: a marker's prefix at the end is held; a reply that may become a llama3 call is held whole */
    const struct sprig_toolfmt *h = sprig_toolfmt_named("hermes"), *l = sprig_toolfmt_named("llama3");
    size_t held = 0;
    CHECK(sprig_toolfmt_find(h, "Sure <tool_", 11, &held) == 11 && held == 5);
    CHECK(sprig_toolfmt_find(h, "Sure <b>", 8, &held) == 8 && held == 8);
    CHECK(sprig_toolfmt_find(l, "  ", 2, &held) == 2 && held == 0);
    CHECK(sprig_toolfmt_find(l, "<|pyth", 6, &held) == 6 && held == 0);
    CHECK(sprig_toolfmt_find(l, " {\"na", 5, &held) == 1);
    CHECK(sprig_toolfmt_find(l, "Hello", 5, &held) == 5 && held == 5);
    CHECK(sprig_toolfmt_named("nosuch") == NULL);
    CHECK(sprig_toolfmt_detect("{{ '[TOOL_CALLS]' }}", 20) == sprig_toolfmt_named("mistral"));
    CHECK(sprig_toolfmt_detect("plain", 5) == NULL);
}

/* templates that concatenate a call's arguments as text ('...' + arguments): found when the template loads, and
 * given the arguments as JSON text (OpenAI's shape) instead of the object the server parses them into */
static void test_string_arguments(void)
{
    static const char *const files[] = { "hfjs/deepseek-ai-DeepSeek-R1.jinja", "hfjs/meetkai-functionary-medium-v2.2.jinja",
                                         "Qwen-Qwen2.5-7B-Instruct.jinja" };
    json_t *msgs = json_loads("[{\"role\":\"user\",\"content\":\"Weather?\"},{\"role\":\"assistant\",\"content\":\"\","
                              "\"tool_calls\":[{\"id\":\"c1\",\"type\":\"function\",\"function\":{\"name\":\"get_weather\","
                              "\"arguments\":{\"city\":\"Paris\"}}}]}]", 0, NULL);
    for (int k = 0; k < 3; k++) {
        char path[256];
        snprintf(path, sizeof path, "tests/data/chat-templates/%s", files[k]);
        size_t n = 0;
        char *text = test_read_file(path, &n);
        sprig_chat *c = NULL;
        sprig_error err = { 0 };
        CHECKF(text && !sprig_chat_from_text(text, n, path, &c, &err), "%s: %s", files[k], err.msg);
        free(text);
        if (!c) continue;
        char *out = NULL;
        CHECKF(!sprig_chat_apply(c, msgs, NULL, true, "<s>", "</s>", NULL, &out, NULL, &err), "%s: %s", files[k], err.msg);
        CHECKF(out && strstr(out, "\"city\"") && strstr(out, "Paris"), "%s: the call's arguments are not in [%s]", files[k], out ? out : "");
        free(out);
        sprig_chat_free(c);
    }
    json_decref(msgs);
}

int main(void)
{
    RUN(test_templates);
    RUN(test_string_arguments);
    RUN(test_content);
    return test_summary("test-toolcall");
}
