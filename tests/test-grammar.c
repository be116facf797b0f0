/*
 * tests/test-grammar.c — grammars (src/grammar):
 *   - GBNF: what compiles, and refusals naming the rule and line:column
 *     (undefined rules, left recursion, no root, bad escapes, unclosed
 *     literals, token references, huge repetitions);
 *   - matching text: llama.cpp's JSON grammar (grammars/json.gbnf) and
 *     others accept what they should and refuse what they should, byte by
 *     byte (a code point split across steps included);
 *   - JSON schemas compiled to grammars: documents that fit are accepted,
 *     documents that break a rule (a missing required key, a wrong type, an
 *     enum value not listed, too many items) are not; bad schemas are
 *     refused naming the keyword; a 30-property schema compiles;
 *   - token masks over real vocabularies (Llama 3's 128K and Qwen 2's 152K
 *     tokens): the trie walk allows exactly the tokens that checking each
 *     token alone allows, in several states; end-of-generation tokens only
 *     where the grammar may end; forced tokens.
 */
#include "test.h"
#include "grammar/gbnf.h"
#include "grammar/match.h"
#include "grammar/schema.h"
#include "gguf/gguf.h"
#include "tokenizer/tokenizer.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* llama.cpp's grammars/json.gbnf */
static const char *JSON_GBNF =
    "root   ::= object\n"
    "value  ::= object | array | string | number | (\"true\" | \"false\" | \"null\") ws\n"
    "\n"
    "object ::=\n"
    "  \"{\" ws (\n"
    "            string \":\" ws value\n"
    "    (\",\" ws string \":\" ws value)*\n"
    "  )? \"}\" ws\n"
    "\n"
    "array  ::=\n"
    "  \"[\" ws (\n"
    "            value\n"
    "    (\",\" ws value)*\n"
    "  )? \"]\" ws\n"
    "\n"
    "string ::=\n"
    "  \"\\\"\" (\n"
    "    [^\"\\\\\\x7F\\x00-\\x1F] |\n"
    "    \"\\\\\" ([\"\\\\bfnrt] | \"u\" [0-9a-fA-F]{4}) # escapes\n"
    "  )* \"\\\"\" ws\n"
    "\n"
    "number ::= (\"-\"? ([0-9] | [1-9] [0-9]{0,15})) (\".\" [0-9]+)? ([eE] [-+]? [0-9] [1-9]{0,15})? ws\n"
    "\n"
    "# Optional space: by convention, applied in this grammar after literal chars when allowed\n"
    "ws ::= | \" \" | \"\\n\" [ \\t]{0,20}\n";

/* a vocabulary of single bytes and a few words, for matching text without a model */
static const char *tiny_text(const void *u, int32_t id, size_t *len)
{
    (void)u;
    static char bytes[256];
    static const char *words[] = { "{\"", "\":", "\"}", "true", " ", "hello", "\xe4\xbd", "\xa0", "\xe4\xbd\xa0" };
    if (id < 256) {
        bytes[id] = (char)id;
        *len = 1;
        return &bytes[id];
    }
    if (id - 256 < (int)(sizeof words / sizeof words[0])) {
        *len = strlen(words[id - 256]);
        return words[id - 256];
    }
    *len = 0;
    return NULL;   /* the end-of-generation token */
}
static bool tiny_eog(const void *u, int32_t id) { (void)u; return id == 256 + 9; }
#define TINY_N (256 + 10)

static sprig_gmatch *compile(const char *gbnf, const sprig_gvocab *v)
{
    sprig_gbnf *g = NULL;
    sprig_error err = { 0 };
    CHECKF(sprig_gbnf_parse(gbnf, strlen(gbnf), &g, &err) == SPRIG_OK, "%s", err.msg);
    if (!g) return NULL;
    sprig_gmatch *m = sprig_gmatch_create(g, v, &err);
    CHECKF(m != NULL, "%s", err.msg);
    sprig_gbnf_free(g);
    return m;
}

/* text fully matched and the grammar may end there */
static bool accepts(sprig_gmatch *m, const char *text)
{
    const int32_t s = sprig_gmatch_advance_bytes(m, sprig_gmatch_start(m), text, strlen(text));
    return s >= 0 && sprig_gmatch_accepting(m, s);
}

/* text is a prefix of something the grammar takes */
static bool live(sprig_gmatch *m, const char *text)
{
    return sprig_gmatch_advance_bytes(m, sprig_gmatch_start(m), text, strlen(text)) >= 0;
}

static void refused(const char *gbnf, const char *needle)
{
    sprig_gbnf *g = NULL;
    sprig_error err = { 0 };
    const sprig_status st = sprig_gbnf_parse(gbnf, strlen(gbnf), &g, &err);
    CHECKF(st == SPRIG_E_INVALID_ARG && strstr(err.msg, needle), "[%s]: want an error with '%s', got %d: %s", gbnf, needle, (int)st, err.msg);
    sprig_gbnf_free(g);
}

static void test_gbnf(void)
{
    refused("root ::= foo\n", "1:10: rule 'foo' is used but not defined");
    refused("root ::= \"a\" | root \"b\"\n", "rule 'root' is left-recursive");
    refused("root ::= x\nx ::= y? x \"a\"\ny ::= \"b\"\n", "rule 'x' is left-recursive");
    refused("start ::= \"a\"\n", "no 'root' rule");
    refused("root ::= \"a\\q\"\n", "1:12 (rule 'root'): unknown escape '\\q'");
    refused("root ::= \"abc\n", "a literal is not closed");
    refused("root ::= [abc\n", "not closed");
    refused("root ::= <[1000]>\n", "token references");
    refused("root ::= \"a\"{1,100000}\n", "repetition bound past 10000");
    refused("root ::= \"a\"\nroot ::= \"b\"\n", "defined twice");
    refused("root ::= (\"a\"\n", "a group is not closed");
    refused("root ::= [z-a]\n", "runs backwards");

    sprig_error err = { 0 };
    sprig_gvocab *v = sprig_gvocab_create(TINY_N, tiny_text, tiny_eog, NULL, &err);
    CHECKF(v != NULL, "%s", err.msg);
    if (!v) return;
    sprig_gmatch *m = compile(JSON_GBNF, v);
    if (m) {
        CHECK(accepts(m, "{}"));
        CHECK(accepts(m, "{\"a\": [1, 2.5, -3e19, true, null, \"x\\n\\u00e9\"], \"b\": {\"c\": {}}}"));
        CHECK(accepts(m, "{\"k\": \"你好 🌍\"}\n"));
        CHECK(!accepts(m, "{\"a\": }"));
        CHECK(!live(m, "{\"a\" 1"));
        CHECK(!live(m, "[1]"));                   /* root is an object */
        CHECK(!live(m, "{\"a\": 01x"));
        CHECK(live(m, "{\"a\": \"\xe4"));          /* a code point begun */
        CHECK(!live(m, "{\"a\": \"\x80"));         /* a stray continuation byte */
        CHECK(!live(m, "{\"a\": \"\x01"));         /* a control character in a string */
        CHECK(!accepts(m, "{\"a\": 1"));           /* open */
        sprig_gmatch_free(m);
    }
    /* classes, negation, any, bounded and open repetitions, nested groups, comments, continuation lines */
    m = compile("root ::= ([a-c] | \"x\"){2,3} [^0-9]+ . (\"end\" # the end\n  | \"fin\")\n", v);
    if (m) {
        CHECK(accepts(m, "abzz!end"));
        CHECK(accepts(m, "cxb__\xe4\xbd\xa0" "fin"));
        CHECK(!accepts(m, "a zz!end"));
        CHECK(!accepts(m, "a1zz!end"));
        CHECK(!accepts(m, "ab9!end"));
        sprig_gmatch_free(m);
    }
    /* token steps: a code point split over two tokens, words, EOG only at the end */
    m = compile("root ::= \"{\\\"\" [a-z\\u4f60]+ \"\\\":\" \" \"? (\"true\" | \"\\\"\" [^\"]* \"\\\"}\")\n", v);
    if (m) {
        int32_t s = sprig_gmatch_start(m);
        CHECK(sprig_gmatch_advance(m, s, 256 + 0) >= 0);            /* {" */
        CHECK(sprig_gmatch_advance(m, s, '{') >= 0);
        CHECK(sprig_gmatch_advance(m, s, 256 + 3) == SPRIG_GSTATE_DEAD);   /* true */
        CHECK(sprig_gmatch_advance(m, s, 256 + 9) == SPRIG_GSTATE_DEAD);   /* EOG before the end */
        s = sprig_gmatch_advance(m, s, 256 + 0);
        const int32_t half = sprig_gmatch_advance(m, s, 256 + 6);    /* the first two bytes of U+4F60 */
        CHECK(half >= 0 && sprig_gmatch_advance(m, half, 256 + 7) >= 0);
        CHECK(sprig_gmatch_advance(m, half, 'a') == SPRIG_GSTATE_DEAD);
        s = sprig_gmatch_advance(m, s, 256 + 8);                     /* 你 whole */
        s = sprig_gmatch_advance(m, s, 256 + 1);                     /* ": */
        CHECK(s >= 0 && !sprig_gmatch_accepting(m, s));
        const int32_t t = sprig_gmatch_advance(m, s, 256 + 3);
        CHECK(t >= 0 && sprig_gmatch_accepting(m, t) && sprig_gmatch_advance(m, t, 256 + 9) == SPRIG_GSTATE_END);
        /* masks equal checking each token alone */
        const int32_t states[] = { sprig_gmatch_start(m), half, s, t };
        for (int k = 0; k < 4; k++) {
            const uint64_t *bits = sprig_gmatch_mask(m, states[k], &err);
            CHECK(bits != NULL);
            int same = 0;
            for (int32_t id = 0; bits && id < TINY_N; id++) same += (int)(bits[id >> 6] >> (id & 63) & 1) == (sprig_gmatch_advance(m, states[k], id) != SPRIG_GSTATE_DEAD);
            CHECKF(same == TINY_N, "state %d: the mask differs from token checks on %d tokens", k, TINY_N - same);
        }
        CHECK(sprig_gmatch_forced(m, t, &err) == 256 + 9);   /* after "true" only EOG */
        sprig_gmatch_free(m);
    }
    sprig_gvocab_free(v);
}

static char *schema_gbnf(const char *schema_json, sprig_error *err)
{
    json_t *s = schema_json ? json_loads(schema_json, 0, NULL) : NULL;
    char *g = NULL;
    sprig_schema_to_gbnf(s, &g, err);
    json_decref(s);
    return g;
}

static void test_schema(void)
{
    sprig_error err = { 0 };
    sprig_gvocab *v = sprig_gvocab_create(TINY_N, tiny_text, tiny_eog, NULL, &err);
    if (!v) return;
    const char *schema =
        "{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\",\"maxLength\":8},\"age\":{\"type\":\"integer\",\"minimum\":0},"
        "\"tags\":{\"type\":\"array\",\"items\":{\"enum\":[\"a\",\"b\",3]},\"maxItems\":2},\"ok\":{\"type\":[\"boolean\",\"null\"]},"
        "\"pos\":{\"$ref\":\"#/$defs/point\"}},\"required\":[\"name\",\"age\"],\"additionalProperties\":false,"
        "\"$defs\":{\"point\":{\"type\":\"object\",\"properties\":{\"x\":{\"type\":\"number\"},\"next\":{\"$ref\":\"#/$defs/point\"}},"
        "\"required\":[\"x\"]}}}";
    char *g = schema_gbnf(schema, &err);
    CHECKF(g != NULL, "%s", err.msg);
    sprig_gmatch *m = g ? compile(g, v) : NULL;
    if (m) {
        CHECK(accepts(m, "{\"name\": \"Ann\", \"age\": 31}"));
        CHECK(accepts(m, "{\"name\":\"Ann\",\"age\":0,\"tags\":[\"a\",3],\"ok\":null,\"pos\":{\"x\":1.5,\"next\":{\"x\":-2}}}"));
        CHECK(accepts(m, "{\n  \"name\": \"Ann\",\n  \"age\": 31,\n  \"ok\": true\n}"));
        CHECK(!live(m, "{\"age\": 31"));                       /* name comes first and is required */
        CHECK(!accepts(m, "{\"name\": \"Ann\"}"));             /* age is required */
        CHECK(!live(m, "{\"name\": \"Ann\", \"age\": -1"));    /* minimum 0 */
        CHECK(!live(m, "{\"name\": \"Ann\", \"age\": 1.5"));   /* an integer */
        CHECK(!live(m, "{\"name\": \"123456789"));             /* maxLength 8 */
        CHECK(!live(m, "{\"name\": \"A\", \"age\": 1, \"tags\": [\"c\""));   /* not in the enum */
        CHECK(!live(m, "{\"name\": \"A\", \"age\": 1, \"tags\": [\"a\", \"b\", \"a\""));   /* maxItems 2 */
        CHECK(!live(m, "{\"name\": \"A\", \"age\": 1, \"extra\""));   /* additionalProperties false */
        CHECK(!live(m, "{\"name\": \"A\", \"age\": 1, \"pos\": {\"next\""));   /* x is required */
        sprig_gmatch_free(m);
    }
    free(g);
    /* no required keys: any subset, in order, commas right */
    g = schema_gbnf("{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"integer\"},\"b\":{\"type\":\"integer\"},\"c\":{\"type\":\"integer\"}}}", &err);
    m = g ? compile(g, v) : NULL;
    if (m) {
        CHECK(accepts(m, "{}") && accepts(m, "{\"b\": 1}") && accepts(m, "{\"a\": 1, \"c\": 2}") && accepts(m, "{\"a\":1,\"b\":2,\"c\":3}"));
        CHECK(!live(m, "{, \"b\"") && !live(m, "{\"b\": 1, \"a\""));
        sprig_gmatch_free(m);
    }
    free(g);
    /* json_object mode: any object */
    g = schema_gbnf(NULL, &err);
    m = g ? compile(g, v) : NULL;
    if (m) {
        CHECK(accepts(m, "{\"x\": [1, {\"y\": null}]}") && !live(m, "[") && !live(m, "hello"));
        sprig_gmatch_free(m);
    }
    free(g);
    /* refusals name the keyword and where it is */
    static const struct { const char *schema, *needle; } bad[] = {
        { "{\"type\":\"object\",\"properties\":{\"d\":{\"type\":\"string\",\"pattern\":\"^a\"}}}", "schema properties.d: 'pattern' is not supported" },
        { "{\"allOf\":[{}]}", "'allOf' is not supported" },
        { "{\"type\":\"strin\"}", "unknown type 'strin'" },
        { "{\"$ref\":\"https://example.com/s.json\"}", "'$ref'" },
        { "{\"type\":\"array\",\"maxItems\":100000}", "'maxItems' must be an integer in [0, 10000]" },
        { "{\"type\":\"array\",\"minItems\":3,\"maxItems\":2}", "maxItems < minItems" },
        { "{\"enum\":[]}", "'enum' must be a non-empty array" },
        { "[1]", "a schema must be an object" },
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        char *x = schema_gbnf(bad[k].schema, &err);
        CHECKF(!x && strstr(err.msg, bad[k].needle), "%s: want '%s', got %s", bad[k].schema, bad[k].needle, x ? "a grammar" : err.msg);
        free(x);
    }
    /* a 30-property schema compiles (its time is in `sprig bench grammar`) */
    char big[8192];
    size_t n = (size_t)snprintf(big, sizeof big, "{\"type\":\"object\",\"properties\":{");
    for (int i = 0; i < 30; i++)
        n += (size_t)snprintf(big + n, sizeof big - n, "%s\"field_%d\":{\"type\":\"%s\"}", i ? "," : "", i,
                              i % 3 == 0 ? "string" : i % 3 == 1 ? "integer" : "boolean");
    snprintf(big + n, sizeof big - n, "},\"required\":[\"field_0\",\"field_7\"]}");
    g = schema_gbnf(big, &err);
    m = g ? compile(g, v) : NULL;
    CHECK(m != NULL);
    sprig_gmatch_free(m);
    free(g);
    sprig_gvocab_free(v);
}

/* ---- real vocabularies ---- */
static const char *tok_text(const void *u, int32_t id, size_t *len) { return sprig_tokenizer_token_text(u, id, len); }
static bool tok_eog(const void *u, int32_t id) { return sprig_tokenizer_is_eog(u, id); }

static void real_vocab(const char *file)
{
    const char *path = test_shared(file);
    if (!test_file_exists(path)) {
        fprintf(stderr, "  SKIP %s (missing)\n", path);
        return;
    }
    sprig_error err = { 0 };
    sprig_gguf *gg = sprig_gguf_open(path, &err);
    sprig_tokenizer *tk = gg ? sprig_tokenizer_from_gguf(gg, &err) : NULL;
    CHECKF(tk != NULL, "%s: %s", file, err.msg);
    if (!tk) {
        if (gg) sprig_gguf_close(gg);
        return;
    }
    const int V = sprig_tokenizer_n_vocab(tk);
    sprig_gvocab *v = sprig_gvocab_create(V, tok_text, tok_eog, tk, &err);
    CHECKF(v != NULL, "%s", err.msg);
    char *g = schema_gbnf("{\"type\":\"object\",\"properties\":{\"city\":{\"type\":\"string\"},\"days\":{\"type\":\"integer\"},"
                          "\"units\":{\"enum\":[\"metric\",\"imperial\"]}},\"required\":[\"city\",\"days\"]}", &err);
    sprig_gmatch *m = v && g ? compile(g, v) : NULL;
    if (m) {
        /* states along a document: the start, inside a key, inside a string value (nearly every token), after a number,
         * inside an enum, at the end */
        static const char *const prefixes[] = { "", "{\"ci", "{\"city\": \"Par", "{\"city\": \"Paris\", \"days\": 3",
                                                "{\"city\": \"Paris\", \"days\": 3, \"units\": \"me", "{\"city\": \"Paris\", \"days\": 3}" };
        for (size_t k = 0; k < sizeof prefixes / sizeof prefixes[0]; k++) {
            const int32_t s = sprig_gmatch_advance_bytes(m, sprig_gmatch_start(m), prefixes[k], strlen(prefixes[k]));
            CHECKF(s >= 0, "%s: prefix [%s] is dead", file, prefixes[k]);
            const uint64_t *bits = sprig_gmatch_mask(m, s, &err);
            CHECK(bits != NULL);
            int differ = 0, allowed = 0, eog_allowed = 0;
            for (int32_t id = 0; bits && id < V; id++) {
                const bool in_mask = bits[id >> 6] >> (id & 63) & 1;
                const int32_t t = sprig_gmatch_advance(m, s, id);
                differ += in_mask != (t != SPRIG_GSTATE_DEAD);
                allowed += in_mask;
                eog_allowed += in_mask && sprig_tokenizer_is_eog(tk, id);
            }
            CHECKF(differ == 0, "%s [%s]: the mask and per-token checks differ on %d tokens", file, prefixes[k], differ);
            CHECKF(allowed > 0, "%s [%s]: nothing allowed", file, prefixes[k]);
            CHECKF((eog_allowed > 0) == (k == 5), "%s [%s]: end-of-generation %s", file, prefixes[k], eog_allowed ? "allowed" : "refused");
            fprintf(stderr, "  %s [%s]: %d of %d tokens allowed\n", file, prefixes[k], allowed, V);
        }
        struct sprig_gmatch_stats st;
        sprig_gmatch_get_stats(m, &st);
        fprintf(stderr, "  %s: %lld states, %lld table entries\n", file, (long long)st.states, (long long)st.entries);
        sprig_gmatch_free(m);
    }
    free(g);
    sprig_gvocab_free(v);
    sprig_tokenizer_free(tk);
    sprig_gguf_close(gg);
}

static void test_real_vocabs(void)
{
    real_vocab("models/vocab/ggml-vocab-llama-bpe.gguf");
    real_vocab("models/vocab/ggml-vocab-qwen2.gguf");
    real_vocab("models/vocab/ggml-vocab-llama-spm.gguf");
}

int main(void)
{
    RUN(test_gbnf);
    RUN(test_schema);
    RUN(test_real_vocabs);
    return test_summary("test-grammar");
}
