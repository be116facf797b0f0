/*
 * chat/template — see template.h. The family table, detection by markers,
 * and the one renderer every row goes through; the few family quirks are
 * row fields (system handling, default system prompt, alternation, reply
 * transform), not code paths per family.
 */
#include "chat/template.h"

#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- the table */

static const struct sprig_chat_family families[] = {
    {
        .name = "llama3",
        .about = "Llama 3 Instruct (8B/70B) as published: the assistant header closes every rendering",
        .markers = { "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>" },
        .absent = { "add_generation_prompt", "Cutting Knowledge", "tools" },
        .bos = true,
        .prefix = { "<|start_header_id|>system<|end_header_id|>\n\n", "<|start_header_id|>user<|end_header_id|>\n\n",
                    "<|start_header_id|>assistant<|end_header_id|>\n\n" },
        .suffix = { "<|eot_id|>", "<|eot_id|>", "<|eot_id|>" },
        .trim = true,
        .gen_prompt = "<|start_header_id|>assistant<|end_header_id|>\n\n", .gen_always = true,
    },
    {
        .name = "llama3-agp",
        .about = "Llama 3 Instruct, the revision that adds the assistant header only with add_generation_prompt",
        .markers = { "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>", "add_generation_prompt" },
        .absent = { "Cutting Knowledge", "tools" },
        .bos = true,
        .prefix = { "<|start_header_id|>system<|end_header_id|>\n\n", "<|start_header_id|>user<|end_header_id|>\n\n",
                    "<|start_header_id|>assistant<|end_header_id|>\n\n" },
        .suffix = { "<|eot_id|>", "<|eot_id|>", "<|eot_id|>" },
        .trim = true,
        .gen_prompt = "<|start_header_id|>assistant<|end_header_id|>\n\n",
    },
    {
        .name = "chatml",
        .about = "ChatML as Qwen 2 renders it: a default system turn \"You are a helpful assistant\" when none is given",
        .markers = { "<|im_start|>", "<|im_end|>", "You are a helpful assistant<|im_end|>" },
        .absent = { "<think>", "tools" },
        .prefix = { "<|im_start|>system\n", "<|im_start|>user\n", "<|im_start|>assistant\n" },
        .suffix = { "<|im_end|>\n", "<|im_end|>\n", "<|im_end|>\n" },
        .default_system = "You are a helpful assistant",
        .gen_prompt = "<|im_start|>assistant\n",
    },
    {
        .name = "qwen3",
        .about = "Qwen 3 (hybrid thinking): ChatML, no default system turn, an empty <think> block on the final reply",
        .markers = { "<|im_start|>", "<|im_end|>", "</think>", "enable_thinking" },
        .absent = { 0 },
        .prefix = { "<|im_start|>system\n", "<|im_start|>user\n", "<|im_start|>assistant\n" },
        .suffix = { "<|im_end|>\n", "<|im_end|>\n", "<|im_end|>\n" },
        .reply = SPRIG_CHAT_REPLY_QWEN3,
        .gen_prompt = "<|im_start|>assistant\n",
    },
    {
        .name = "gemma3",
        .about = "Gemma 3: no system role (the system prompt opens the first user turn), turns alternate",
        .markers = { "<start_of_turn>", "<end_of_turn>", "first_user_prefix" },
        .absent = { 0 },
        .bos = true,
        .prefix = { "<start_of_turn>system\n", "<start_of_turn>user\n", "<start_of_turn>model\n" },
        .suffix = { "<end_of_turn>\n", "<end_of_turn>\n", "<end_of_turn>\n" },
        .trim = true,
        .sys = SPRIG_CHAT_SYS_FOLD, .fold_sep = "\n\n",
        .alternate = true,
        .gen_prompt = "<start_of_turn>model\n",
    },
    {
        .name = "gemma4",
        .about = "Gemma 4: <|turn> roles, thought channels stripped from replies, thinking off by default",
        .markers = { "<|turn>", "<turn|>", "<|channel>" },
        .absent = { 0 },
        .bos = true,
        .prefix = { "<|turn>system\n", "<|turn>user\n", "<|turn>model\n" },
        .suffix = { "<turn|>\n", "<turn|>\n", "<turn|>\n" },
        .trim = true,
        .reply = SPRIG_CHAT_REPLY_GEMMA4,
        .gen_prompt = "<|turn>model\n<|channel>thought\n<channel|>",
    },
    {
        .name = "phi3",
        .about = "Phi-3 (mini): system messages are ignored, every user turn ends by opening the assistant's",
        .markers = { "<|user|>", "<|assistant|>", "<|end|>" },
        .absent = { "system", "add_generation_prompt" },
        .bos = true,
        .prefix = { "", "<|user|>\n", "" },
        .suffix = { "", "<|end|>\n<|assistant|>\n", "<|end|>\n" },
        .sys = SPRIG_CHAT_SYS_DROP,
        .gen_prompt = "",
    },
};

#define N_FAMILIES ((int)(sizeof families / sizeof families[0]))

static const char *const role_names[SPRIG_CHAT_N_ROLES] = {
    [SPRIG_CHAT_SYSTEM] = "system", [SPRIG_CHAT_USER] = "user", [SPRIG_CHAT_ASSISTANT] = "assistant",
};

int sprig_chat_n_families(void) { return N_FAMILIES; }

const struct sprig_chat_family *sprig_chat_family_at(int i)
{
    return i >= 0 && i < N_FAMILIES ? &families[i] : NULL;
}

const struct sprig_chat_family *sprig_chat_find(const char *name)
{
    if (!name) return NULL;
    for (int i = 0; i < N_FAMILIES; i++)
        if (!strcmp(families[i].name, name)) return &families[i];
    return NULL;
}

void sprig_chat_names(char *buf, size_t cap)
{
    if (!buf || !cap) return;
    size_t n = 0;
    buf[0] = 0;
    for (int i = 0; i < N_FAMILIES; i++) {
        const char *sep = i ? ", " : "";
        size_t need = strlen(sep) + strlen(families[i].name);
        if (n + need >= cap) break;
        memcpy(buf + n, sep, strlen(sep));
        memcpy(buf + n + strlen(sep), families[i].name, strlen(families[i].name));
        n += need;
        buf[n] = 0;
    }
}

/* ---------------------------------------------------------------- detection */

static bool contains(const char *hay, size_t len, const char *needle)
{
    return memmem(hay, len, needle, strlen(needle)) != NULL;
}

static bool row_matches(const struct sprig_chat_family *f, const char *tmpl, size_t len)
{
    for (int k = 0; k < SPRIG_CHAT_MAX_MARKERS && f->markers[k]; k++)
        if (!contains(tmpl, len, f->markers[k])) return false;
    for (int k = 0; k < SPRIG_CHAT_MAX_MARKERS && f->absent[k]; k++)
        if (contains(tmpl, len, f->absent[k])) return false;
    return true;
}

const struct sprig_chat_family *sprig_chat_detect(const char *tmpl, size_t len, sprig_error *err)
{
    char names[256];
    if (!tmpl) {
        sprig_err(err, SPRIG_E_INVALID_ARG, "chat template: NULL");
        return NULL;
    }
    const struct sprig_chat_family *found = NULL;
    for (int i = 0; i < N_FAMILIES; i++) {
        if (!row_matches(&families[i], tmpl, len)) continue;
        if (found) {
            sprig_err(err, SPRIG_E_INTERNAL, "chat template: both '%s' and '%s' claim it (the table's markers overlap)",
                      found->name, families[i].name);
            return NULL;
        }
        found = &families[i];
    }
    if (!found) {
        /* show the start of the text, one line, so the user can tell which template it was */
        char head[48];
        size_t h = 0;
        for (size_t i = 0; i < len && h + 1 < sizeof head; i++)
            head[h++] = (tmpl[i] == '\n' || tmpl[i] == '\r' || tmpl[i] == '\t') ? ' ' : tmpl[i];
        while (h > 0 && ((unsigned char)head[h - 1] & 0xC0) == 0x80) h--;   /* no half character */
        if (h > 0 && ((unsigned char)head[h - 1] & 0x80)) h--;
        head[h] = 0;
        sprig_chat_names(names, sizeof names);
        sprig_err(err, SPRIG_E_UNSUPPORTED,
                  "tokenizer.chat_template: unknown chat template (%zu bytes, begins \"%s%s\"); "
                  "choose one with --chat-template NAME, NAME one of: %s",
                  len, head, len > h ? "..." : "", names);
    }
    return found;
}

/* ---------------------------------------------------------------- text helpers */

typedef struct { const char *p; size_t n; } span;

static span S(const char *s) { return (span){ s ? s : "", s ? strlen(s) : 0 }; }

/* Python's str.isspace() code points. */
static bool py_space(uint32_t c)
{
    return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 || c == 0x1680 ||
           (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

/* Decode one well-formed UTF-8 sequence at p[0..n); returns its length or 0. */
static size_t utf8_at(const unsigned char *p, size_t n, uint32_t *cp)
{
    if (!n) return 0;
    unsigned char c = p[0];
    size_t len;
    uint32_t v, min;
    if (c < 0x80) { *cp = c; return 1; }
    else if ((c & 0xE0) == 0xC0) { len = 2; v = c & 0x1F; min = 0x80; }
    else if ((c & 0xF0) == 0xE0) { len = 3; v = c & 0x0F; min = 0x800; }
    else if ((c & 0xF8) == 0xF0) { len = 4; v = c & 0x07; min = 0x10000; }
    else return 0;
    if (len > n) return 0;
    for (size_t i = 1; i < len; i++) {
        if ((p[i] & 0xC0) != 0x80) return 0;
        v = (v << 6) | (p[i] & 0x3F);
    }
    if (v < min || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF)) return 0;
    *cp = v;
    return len;
}

/* str.strip() with Python's whitespace. */
static span trim_ws(span s)
{
    const unsigned char *p = (const unsigned char *)s.p;
    size_t a = 0, b = s.n;
    uint32_t cp;
    size_t l;
    while (a < b && (l = utf8_at(p + a, b - a, &cp)) && py_space(cp)) a += l;
    while (b > a) {
        size_t st = b - 1;
        while (st > a && b - st < 4 && (p[st] & 0xC0) == 0x80) st--;
        l = utf8_at(p + st, b - st, &cp);
        if (l != b - st || !py_space(cp)) break;
        b = st;
    }
    return (span){ s.p + a, b - a };
}

/* str.lstrip('\n') / rstrip('\n'). */
static span lstrip_nl(span s) { while (s.n && s.p[0] == '\n') { s.p++; s.n--; } return s; }
static span rstrip_nl(span s) { while (s.n && s.p[s.n - 1] == '\n') s.n--; return s; }

/* First / last occurrence of needle in s, or NULL. */
static const char *find_first(span s, const char *needle)
{
    return memmem(s.p, s.n, needle, strlen(needle));
}

static const char *find_last(span s, const char *needle)
{
    size_t k = strlen(needle);
    const char *last = NULL, *p = s.p;
    const char *end = s.p + s.n;
    while ((size_t)(end - p) >= k && (p = memmem(p, (size_t)(end - p), needle, k))) { last = p; p++; }
    return last;
}

/* ---------------------------------------------------------------- output buffer */

typedef struct { char *p; size_t n, cap; sprig_status st; } sbuf;

static void put(sbuf *b, span s)
{
    if (b->st || !s.n) return;
    size_t need;
    if (sprig_add_ovf(b->n, s.n, &need) || sprig_add_ovf(need, 1, &need)) { b->st = SPRIG_E_NOMEM; return; }
    if (need > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < need) {
            if (sprig_mul_ovf(cap, 2, &cap)) { b->st = SPRIG_E_NOMEM; return; }
        }
        char *np = realloc(b->p, cap);
        if (!np) { b->st = SPRIG_E_NOMEM; return; }
        b->p = np;
        b->cap = cap;
    }
    memcpy(b->p + b->n, s.p, s.n);
    b->n += s.n;
    b->p[b->n] = 0;
}

static void puts_(sbuf *b, const char *s) { put(b, S(s)); }

/* ---------------------------------------------------------------- replies */

/* Qwen 3: split the reasoning off at </think>; turns after the last user
 * query carry it in a <think> block (the final turn always does, empty). */
static void reply_qwen3(sbuf *b, span content, bool after_query, bool last)
{
    span reasoning = { "", 0 };
    const char *close = find_first(content, "</think>");
    if (close) {
        const char *lastclose = find_last(content, "</think>");
        span after = { lastclose + 8, (size_t)(content.p + content.n - (lastclose + 8)) };
        span before = rstrip_nl((span){ content.p, (size_t)(close - content.p) });
        const char *open = find_last(before, "<think>");
        if (open) before = (span){ open + 7, (size_t)(before.p + before.n - (open + 7)) };
        reasoning = lstrip_nl(before);
        content = lstrip_nl(after);
    }
    if (after_query && (last || reasoning.n)) {
        puts_(b, "<think>\n");
        put(b, rstrip_nl(lstrip_nl(reasoning)));
        puts_(b, "\n</think>\n\n");
        put(b, lstrip_nl(content));
    } else {
        put(b, content);
    }
}

/* Gemma 4: drop each <|channel>...<channel|> thought, then trim. */
static void reply_gemma4(sbuf *b, span content)
{
    sbuf t = { 0 };
    const char *p = content.p, *end = content.p + content.n;
    for (;;) {
        span rest = { p, (size_t)(end - p) };
        const char *cut = find_first(rest, "<channel|>");
        span part = { p, cut ? (size_t)(cut - p) : rest.n };
        const char *open = find_first(part, "<|channel>");
        if (open) part.n = (size_t)(open - part.p);
        put(&t, part);
        if (!cut) break;
        p = cut + strlen("<channel|>");
    }
    if (t.st) b->st = t.st;
    else put(b, trim_ws((span){ t.p ? t.p : "", t.n }));
    free(t.p);
}

/* ---------------------------------------------------------------- render */

static int role_of(const char *r)
{
    for (int i = 0; i < SPRIG_CHAT_N_ROLES; i++)
        if (!strcmp(r, role_names[i])) return i;
    return -1;
}

sprig_status sprig_chat_render(const struct sprig_chat_family *f, const sprig_chat_msg *msgs, int n,
                               bool add_generation_prompt, const char *bos_text, const char *eos_text,
                               char **out, size_t *out_len, sprig_error *err)
{
    SPRIG_UNUSED(eos_text);   /* no row's plain-conversation rendering uses it */
    if (out) *out = NULL;
    if (out_len) *out_len = 0;
    if (!f || !out) return sprig_err(err, SPRIG_E_INVALID_ARG, "chat render: %s is NULL", f ? "out" : "family");
    if (n < 1 || !msgs) return sprig_err(err, SPRIG_E_INVALID_ARG, "chat render: no messages (n = %d)", n);
    int last_query = n - 1;
    for (int i = 0; i < n; i++) {
        if (!msgs[i].role) return sprig_err(err, SPRIG_E_INVALID_ARG, "chat message %d: role is NULL", i);
        if (role_of(msgs[i].role) < 0)
            return sprig_err(err, SPRIG_E_INVALID_ARG, "chat message %d: unknown role '%.64s' (system, user or assistant)",
                             i, msgs[i].role);
        if (!msgs[i].content) return sprig_err(err, SPRIG_E_INVALID_ARG, "chat message %d (%s): content is NULL", i, msgs[i].role);
    }
    /* Qwen 3's last query: the last user message that is not a wrapped tool response */
    for (int i = n - 1; i >= 0; i--) {
        span c = S(msgs[i].content);
        bool tool = c.n >= 31 && !memcmp(c.p, "<tool_response>", 15) && !memcmp(c.p + c.n - 16, "</tool_response>", 16);
        if (role_of(msgs[i].role) == SPRIG_CHAT_USER && !tool) { last_query = i; break; }
    }

    sbuf b = { 0 };
    if (f->bos) puts_(&b, bos_text);
    int first = 0;
    span fold = { "", 0 };
    bool folded = false;
    if (role_of(msgs[0].role) == SPRIG_CHAT_SYSTEM && f->sys == SPRIG_CHAT_SYS_FOLD) {
        fold = S(msgs[0].content);
        folded = true;
        first = 1;
    } else if (role_of(msgs[0].role) != SPRIG_CHAT_SYSTEM && f->default_system) {
        puts_(&b, f->prefix[SPRIG_CHAT_SYSTEM]);
        puts_(&b, f->default_system);
        puts_(&b, f->suffix[SPRIG_CHAT_SYSTEM]);
    }
    for (int i = first; i < n; i++) {
        int r = role_of(msgs[i].role);
        int j = i - first;   /* index among the turns after a folded system message */
        if (f->alternate && (r == SPRIG_CHAT_USER) != (j % 2 == 0)) {
            free(b.p);
            return sprig_err(err, SPRIG_E_INVALID_ARG,
                             "chat message %d (%s): the %s template needs turns that alternate user, assistant, user, ...%s",
                             i, msgs[i].role, f->name, folded ? " after the system message" : "");
        }
        if (r == SPRIG_CHAT_SYSTEM && f->sys == SPRIG_CHAT_SYS_DROP) continue;
        span c = S(msgs[i].content);
        puts_(&b, f->prefix[r]);
        if (folded && j == 0) {
            put(&b, fold);
            puts_(&b, f->fold_sep);
        }
        if (r == SPRIG_CHAT_ASSISTANT && f->reply == SPRIG_CHAT_REPLY_QWEN3)
            reply_qwen3(&b, c, i > last_query, i == n - 1);
        else if (r == SPRIG_CHAT_ASSISTANT && f->reply == SPRIG_CHAT_REPLY_GEMMA4)
            reply_gemma4(&b, c);
        else
            put(&b, f->trim ? trim_ws(c) : c);
        puts_(&b, f->suffix[r]);
    }
    if (add_generation_prompt || f->gen_always) puts_(&b, f->gen_prompt);
    if (!b.st && !b.p && !(b.p = calloc(1, 1))) b.st = SPRIG_E_NOMEM;   /* empty rendering */
    if (b.st) {
        free(b.p);
        return sprig_err(err, b.st, "chat render: out of memory (%zu bytes so far)", b.n);
    }
    *out = b.p;
    if (out_len) *out_len = b.n;
    return SPRIG_OK;
}
