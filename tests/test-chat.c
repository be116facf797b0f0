/*
 * tests/test-chat.c — chat templates (src/chat/template).
 *
 *   - exactness: tests/ref/render-chat.mjs renders a fixed set of
 *     conversations per family with @huggingface/jinja from the REAL published
 *     templates (npm tokenizer_config.json, GGUF tokenizer.chat_template); each
 *     family is detected from the same template text and every conversation is
 *     rendered with sprig_chat_render and compared byte for byte (first
 *     differing offset and context printed on failure). Without node or
 *     tests/ref/node_modules this part prints SKIP and passes, unless
 *     SPRIG_REQUIRE_REF=1 (CI), when it fails;
 *   - detection straight from the vocabulary GGUFs' tokenizer.chat_template,
 *     an unknown template refused naming --chat-template and the names,
 *     lookup by name;
 *   - bad conversations refused naming the message: unknown role, NULL
 *     content, no messages, turns that do not alternate (Gemma 3);
 *   - trim follows Python's str.isspace (U+001C, U+0085, U+3000 go; U+FEFF stays).
 */
#include "test.h"
#include "chat/template.h"
#include "gguf/gguf.h"

#include <jansson.h>

/* ---------------------------------------------------------------- helpers */

static void show_bytes(const char *what, const char *s, size_t n, size_t from, size_t to)
{
    fprintf(stderr, "    %s [%zu..%zu): \"", what, from, to < n ? to : n);
    for (size_t i = from; i < to && i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '\n') fputs("\\n", stderr);
        else if (c == '\t') fputs("\\t", stderr);
        else if (c == '"' || c == '\\') fprintf(stderr, "\\%c", c);
        else if (c < 0x20 || c == 0x7f) fprintf(stderr, "\\x%02x", c);
        else fputc(c, stderr);
    }
    fputs("\"\n", stderr);
}

/* Byte-exact comparison with the first difference shown. */
static bool same_text(const char *label, const char *got, size_t got_n, const char *want, size_t want_n)
{
    test_checks++;
    if (got_n == want_n && !memcmp(got, want, got_n)) return true;
    size_t k = 0;
    while (k < got_n && k < want_n && got[k] == want[k]) k++;
    test_failures++;
    fprintf(stderr, "  FAIL %s: first difference at byte %zu (got %zu bytes, want %zu)\n", label, k, got_n, want_n);
    size_t from = k > 40 ? k - 40 : 0;
    show_bytes("sprig", got, got_n, from, k + 40);
    show_bytes("jinja", want, want_n, from, k + 40);
    return false;
}

static char *render(const struct sprig_chat_family *f, const sprig_chat_msg *m, int n, bool gen, size_t *len, sprig_error *err)
{
    char *out = NULL;
    size_t l = 0;
    if (sprig_chat_render(f, m, n, gen, "<BOS>", "<EOS>", &out, &l, err)) return NULL;
    if (len) *len = l;
    return out;
}

/* ---------------------------------------------------------------- exactness vs @huggingface/jinja */

static json_t *run_reference(void)
{
    if (!test_file_exists("tests/ref/render-chat.mjs") || !test_file_exists("tests/ref/node_modules/@huggingface/jinja/package.json") ||
        system("node --version >/dev/null 2>&1") != 0)
        return NULL;
    FILE *p = popen("node tests/ref/render-chat.mjs", "r");
    if (!p) return NULL;
    json_error_t je;
    json_t *root = json_loadf(p, 0, &je);
    int rc = pclose(p);
    if (rc != 0 || !root) {
        fprintf(stderr, "  render-chat.mjs failed (status %d)%s%s\n", rc, root ? "" : ": ", root ? "" : je.text);
        json_decref(root);
        test_checks++;
        test_failures++;
        return NULL;
    }
    return root;
}

static void test_reference(void)
{
    bool require = getenv("SPRIG_REQUIRE_REF") && !strcmp(getenv("SPRIG_REQUIRE_REF"), "1");
    bool have = test_file_exists("tests/ref/node_modules/@huggingface/jinja/package.json") &&
                system("node --version >/dev/null 2>&1") == 0;
    if (!have) {
        if (require) {
            fprintf(stderr, "  FAIL: SPRIG_REQUIRE_REF=1 but node or tests/ref/node_modules is missing (cd tests/ref && npm ci)\n");
            test_checks++;
            test_failures++;
        } else {
            fprintf(stderr, "  SKIP: node or tests/ref/node_modules missing (cd tests/ref && npm ci); set SPRIG_REQUIRE_REF=1 to fail instead\n");
        }
        return;
    }
    json_t *root = run_reference();
    if (!root) { CHECKF(0, "no reference output"); return; }
    json_t *fams = json_object_get(root, "families");
    CHECK(json_is_array(fams) && json_array_size(fams) >= 6);
    size_t fi;
    json_t *fam;
    int total = 0, hf_diff = 0;
    json_array_foreach(fams, fi, fam) {
        const char *want_name = json_string_value(json_object_get(fam, "family"));
        json_t *jt = json_object_get(fam, "template");
        const char *tmpl = json_string_value(jt);
        const char *bos = json_string_value(json_object_get(fam, "bos_token"));   /* NULL when null */
        const char *eos = json_string_value(json_object_get(fam, "eos_token"));
        if (!want_name || !tmpl) { CHECKF(0, "family %zu: no name or template", fi); continue; }
        sprig_error err = { 0 };
        const struct sprig_chat_family *f = sprig_chat_detect(tmpl, json_string_length(jt), &err);
        CHECKF(f != NULL, "%s: detection failed: %s", want_name, err.msg);
        if (!f) continue;
        CHECK_STR(f->name, want_name);
        CHECK(sprig_chat_find(want_name) == f);
        size_t ci;
        json_t *c;
        int n_cases = 0;
        json_array_foreach(json_object_get(fam, "cases"), ci, c) {
            const char *cname = json_string_value(json_object_get(c, "name"));
            json_t *jm = json_object_get(c, "messages");
            size_t nm = json_array_size(jm);
            sprig_chat_msg msgs[16];
            if (nm < 1 || nm > 16) { CHECKF(0, "%s/%s: %zu messages", want_name, cname, nm); continue; }
            for (size_t k = 0; k < nm; k++) {
                json_t *m = json_array_get(jm, k);
                msgs[k].role = json_string_value(json_object_get(m, "role"));
                msgs[k].content = json_string_value(json_object_get(m, "content"));
            }
            json_t *jw = json_object_get(c, "expected");
            bool gen = json_is_true(json_object_get(c, "add_generation_prompt"));
            if (json_is_true(json_object_get(c, "hf_differs"))) hf_diff++;
            char *got = NULL;
            size_t got_n = 0;
            sprig_status st = sprig_chat_render(f, msgs, (int)nm, gen, bos, eos, &got, &got_n, &err);
            char label[256];
            snprintf(label, sizeof label, "%s / %s (generation prompt %s)", want_name, cname ? cname : "?", gen ? "on" : "off");
            CHECKF(st == SPRIG_OK, "%s: %s", label, err.msg);
            if (!st) same_text(label, got, got_n, json_string_value(jw), json_string_length(jw));
            free(got);
            n_cases++;
        }
        CHECKF(n_cases >= 5, "%s: only %d conversations", want_name, n_cases);
        fprintf(stderr, "  %-10s %2d conversations compared (%s)\n", want_name, n_cases,
                json_string_value(json_object_get(fam, "source")));
        total += n_cases;
    }
    fprintf(stderr, "  %d renderings compared byte for byte; %d where @huggingface/jinja's own str.strip(chars) "
                    "differs from Python's (compared with Python's)\n", total, hf_diff);
    json_decref(root);
}

/* ---------------------------------------------------------------- detection */

static void detect_gguf(const char *file, const char *want)
{
    const char *path = test_shared(file);
    if (!test_file_exists(path)) { fprintf(stderr, "  SKIP %s (missing)\n", path); return; }
    sprig_error err = { 0 };
    sprig_gguf *g = sprig_gguf_open(path, &err);
    CHECKF(g != NULL, "%s", err.msg);
    if (!g) return;
    const char *s = NULL;
    size_t len = 0;
    CHECK(sprig_gguf_get_str(g, "tokenizer.chat_template", &s, &len, true, &err) == SPRIG_OK);
    const struct sprig_chat_family *f = s ? sprig_chat_detect(s, len, &err) : NULL;
    CHECKF(f && !strcmp(f->name, want), "%s: detected %s, want %s (%s)", file, f ? f->name : "nothing", want, err.msg);
    sprig_gguf_close(g);
}

static void test_detect(void)
{
    detect_gguf("models/vocab/ggml-vocab-qwen2.gguf", "chatml");
    detect_gguf("models/vocab/ggml-vocab-qwen35.gguf", "chatml");
    detect_gguf("models/vocab/ggml-vocab-gemma-4.gguf", "gemma4");
    detect_gguf("models/vocab/ggml-vocab-phi-3.gguf", "phi3");

    /* a made-up template is refused, never guessed */
    const char *bogus = "{% for m in messages %}### {{ m.role }}:\n{{ m.content }}\n{% endfor %}### assistant:";
    sprig_error err = { 0 };
    CHECK(sprig_chat_detect(bogus, strlen(bogus), &err) == NULL);
    CHECK_EQ_INT(err.code, SPRIG_E_UNSUPPORTED);
    CHECKF(strstr(err.msg, "unknown chat template") && strstr(err.msg, "--chat-template NAME") &&
           strstr(err.msg, "llama3") && strstr(err.msg, "gemma4") && strstr(err.msg, "tokenizer.chat_template") &&
           strstr(err.msg, "### {{ m.role }}"), "%s", err.msg);
    CHECK(sprig_chat_detect("", 0, &err) == NULL);
    CHECK(sprig_chat_detect(NULL, 0, &err) == NULL);
    /* Llama 3.1's template (dated system turn, tools) is another template: refused */
    const char *l31 = "{{- bos_token }}{%- if custom_tools is defined %}...Cutting Knowledge Date: December 2023..."
                      "<|start_header_id|>system<|end_header_id|>...<|eot_id|>{%- if add_generation_prompt %}";
    CHECK(sprig_chat_detect(l31, strlen(l31), &err) == NULL);
    /* a length shorter than the text: only those bytes count */
    const char *q = "<|im_start|><|im_end|>You are a helpful assistant<|im_end|>";
    const struct sprig_chat_family *f = sprig_chat_detect(q, strlen(q), &err);
    CHECK(f && !strcmp(f->name, "chatml"));
    CHECK(sprig_chat_detect(q, 20, &err) == NULL);

    /* by name */
    CHECK(sprig_chat_find("gemma3") && !strcmp(sprig_chat_find("gemma3")->name, "gemma3"));
    CHECK(sprig_chat_find("nope") == NULL);
    CHECK(sprig_chat_find(NULL) == NULL);
    char names[256];
    sprig_chat_names(names, sizeof names);
    CHECK_STR(names, "llama3, llama3-agp, chatml, qwen3, gemma3, gemma4, phi3");
    sprig_chat_names(names, 10);
    CHECK_STR(names, "llama3");
    /* every row is named uniquely and has markers */
    for (int i = 0; i < sprig_chat_n_families(); i++) {
        const struct sprig_chat_family *a = sprig_chat_family_at(i);
        CHECK(a->markers[0] != NULL && a->gen_prompt != NULL && a->about != NULL);
        for (int j = 0; j < i; j++) CHECK(strcmp(a->name, sprig_chat_family_at(j)->name) != 0);
    }
    CHECK(sprig_chat_family_at(-1) == NULL && sprig_chat_family_at(sprig_chat_n_families()) == NULL);
}

/* ---------------------------------------------------------------- bad conversations */

static void test_errors(void)
{
    const struct sprig_chat_family *cm = sprig_chat_find("chatml"), *g3 = sprig_chat_find("gemma3");
    sprig_error err = { 0 };
    char *out = (char *)1;
    size_t len = 7;
    sprig_chat_msg tool[] = { { "user", "hi" }, { "tool", "42" } };
    CHECK_EQ_INT(sprig_chat_render(cm, tool, 2, true, NULL, NULL, &out, &len, &err), SPRIG_E_INVALID_ARG);
    CHECKF(strstr(err.msg, "message 1") && strstr(err.msg, "'tool'"), "%s", err.msg);
    CHECK(out == NULL && len == 0);

    sprig_chat_msg nul[] = { { "system", "s" }, { "user", NULL } };
    CHECK_EQ_INT(sprig_chat_render(cm, nul, 2, true, NULL, NULL, &out, &len, &err), SPRIG_E_INVALID_ARG);
    CHECKF(strstr(err.msg, "message 1") && strstr(err.msg, "NULL"), "%s", err.msg);
    sprig_chat_msg norole[] = { { NULL, "x" } };
    CHECK_EQ_INT(sprig_chat_render(cm, norole, 1, true, NULL, NULL, &out, &len, &err), SPRIG_E_INVALID_ARG);
    CHECK_EQ_INT(sprig_chat_render(cm, nul, 0, true, NULL, NULL, &out, &len, &err), SPRIG_E_INVALID_ARG);
    CHECK_EQ_INT(sprig_chat_render(NULL, nul, 1, true, NULL, NULL, &out, &len, &err), SPRIG_E_INVALID_ARG);

    /* Gemma 3 raises on turns that do not alternate user / assistant */
    sprig_chat_msg two_users[] = { { "system", "s" }, { "user", "a" }, { "user", "b" } };
    CHECK_EQ_INT(sprig_chat_render(g3, two_users, 3, true, NULL, NULL, &out, &len, &err), SPRIG_E_INVALID_ARG);
    CHECKF(strstr(err.msg, "message 2") && strstr(err.msg, "alternate"), "%s", err.msg);
    sprig_chat_msg starts_assistant[] = { { "assistant", "a" } };
    CHECK_EQ_INT(sprig_chat_render(g3, starts_assistant, 1, true, NULL, NULL, &out, &len, &err), SPRIG_E_INVALID_ARG);
    CHECK(out == NULL);
}

/* ---------------------------------------------------------------- rendering details */

static void test_render(void)
{
    sprig_error err = { 0 };
    size_t n = 0;
    /* Python's whitespace: U+001C and U+0085 are stripped by | trim, U+FEFF is not */
    sprig_chat_msg m[] = { { "user", "\x1c\xc2\x85 \xe3\x80\x80x\xef\xbb\xbf \t" } };
    char *s = render(sprig_chat_find("llama3"), m, 1, true, &n, &err);
    CHECKF(s && !strcmp(s, "<BOS><|start_header_id|>user<|end_header_id|>\n\nx\xef\xbb\xbf<|eot_id|>"
                           "<|start_header_id|>assistant<|end_header_id|>\n\n"), "%s", s ? s : err.msg);
    CHECK(s && n == strlen(s));
    free(s);
    /* ill-formed UTF-8 at the edges is content, not whitespace */
    sprig_chat_msg bad[] = { { "user", "\xe3\x80 a \x80" } };
    s = render(sprig_chat_find("gemma4"), bad, 1, false, &n, &err);
    CHECKF(s && !strcmp(s, "<BOS><|turn>user\n\xe3\x80 a \x80<turn|>\n"), "%s", s ? s : err.msg);
    free(s);
    /* NULL BOS text reads as empty; Phi-3 drops a lone system message */
    sprig_chat_msg sys[] = { { "system", "ignored" } };
    char *out = NULL;
    CHECK(sprig_chat_render(sprig_chat_find("phi3"), sys, 1, true, NULL, NULL, &out, &n, &err) == SPRIG_OK);
    CHECK(out && !strcmp(out, "") && n == 0);
    free(out);
    /* a long conversation grows the buffer */
    static char big[100001];
    memset(big, 'a', sizeof big - 1);
    sprig_chat_msg lm[] = { { "system", big }, { "user", big }, { "assistant", big }, { "user", big } };
    s = render(sprig_chat_find("qwen3"), lm, 4, true, &n, &err);
    CHECK(s && n == 4 * 100000 + strlen("<|im_start|>system\n<|im_end|>\n") + 2 * strlen("<|im_start|>user\n<|im_end|>\n") +
                     strlen("<|im_start|>assistant\n<|im_end|>\n") + strlen("<|im_start|>assistant\n"));
    free(s);
    /* Qwen 3: a reply after the last query with reasoning keeps it; before, it is dropped */
    sprig_chat_msg th[] = { { "user", "q" }, { "assistant", "\n<think>\n\nr1\n\n</think>\n\n\nA1" }, { "user", "q2" },
                            { "assistant", "x<think>\nr2</think>A2" }, { "assistant", "A3" } };
    s = render(sprig_chat_find("qwen3"), th, 5, false, &n, &err);
    CHECKF(s && !strcmp(s, "<|im_start|>user\nq<|im_end|>\n<|im_start|>assistant\nA1<|im_end|>\n"
                           "<|im_start|>user\nq2<|im_end|>\n<|im_start|>assistant\n<think>\nr2\n</think>\n\nA2<|im_end|>\n"
                           "<|im_start|>assistant\n<think>\n\n</think>\n\nA3<|im_end|>\n"), "%s", s ? s : err.msg);
    free(s);
}

int main(void)
{
    RUN(test_detect);
    RUN(test_errors);
    RUN(test_render);
    RUN(test_reference);
    return test_summary("test-chat");
}
