/*
 * tools/cmd_run.c — `sprig run`: generate text, plainly or with speculative
 * decoding (chain or tree).
 *
 * stdout carries exactly the prompt followed by the generated text, streamed
 * token by token; everything else (timings, the path taken, round
 * statistics) goes to stderr, and --stats-json writes the same figures as
 * one JSON object, with the prompt ids as evaluated ("prompt_ids"), the
 * generated ids ("tokens") and, with --top-logprobs N, each generated
 * token's N most likely candidates ("top_logprobs"). Exit status: 0 ok,
 * 1 runtime failure, 2 bad usage.
 *
 * --chat turns the prompt into a conversation (-sys: a system message, the
 * prompt: the user message) rendered with the model's chat template
 * (tokenizer.chat_template run by the Jinja engine in src/chat/jinja, a
 * --chat-template-file, or the table row --chat-template names); then "the prompt" on stdout is that rendered
 * text, and it is tokenized with the special tokens parsed.
 */
#include "cli.h"
#include "sprig.h"
#include "chat/chat.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Every option, grouped (--help-all). */
static void usage_all(FILE *f)
{
    fprintf(f,
        "usage: sprig run [options]\n"
        "\n"
        "  -m, --model FILE       target model (GGUF); default $SPRIG_MODEL, models/stories260K.gguf,\n"
        "                         ../shared/models/stories260K.gguf, then the installed one (PREFIX/share/sprig)\n"
        "  -p, --prompt TEXT      prompt (default: empty, i.e. start from BOS)\n"
        "  -f, --file FILE        read the prompt from a file\n"
        "  -n, --n-predict N      tokens to generate (default 256)\n"
        "  -t, --threads N        threads (default: all cores)\n"
        "  -c, --ctx-size N       KV cache slots (default: min(model context, 4096))\n"
        "  -b, --batch-size N     prompt chunk size (default 64)\n"
        "      --kv-type T        KV cache: f32 (default), f16, int8, turbo4, turbo4-asym, turbo3-asym,\n"
        "                         turbo4-delegated\n"
        "      --kv-block N       a paged KV cache of N-slot blocks (a power of two) instead of one buffer\n"
        "      --temp T           temperature; 0 = greedy (default 0.8)\n"
        "      --top-k K          (default 40; 0 = off)\n"
        "      --top-p P          (default 0.95; 1 = off)\n"
        "      --min-p P          (default 0.05; 0 = off)\n"
        "      --seed S           sampling seed (default: random, reported on stderr)\n"
        "      --ignore-eos       keep generating past the end-of-sequence token\n"
        "\n"
        "constrained output (llama.cpp's flags; one of them):\n"
        "      --grammar GBNF     only text this GBNF grammar allows (llama.cpp's grammar language)\n"
        "      --grammar-file F   the grammar from a file\n"
        "  -j, --json-schema JSON  only JSON this schema allows\n"
        "  -jf, --json-schema-file F  the schema from a file\n"
        "      --grammar-blind-drafts  the drafter ignores the grammar (to measure what drafting with it gains)\n"
        "\n"
        "chat (the prompt becomes the user message of a conversation):\n"
        "      --chat             render the conversation with the model's chat template\n"
        "                         (tokenizer.chat_template); stdout then starts with the rendered text\n"
        "  -sys, --system TEXT    system message (implies --chat)\n"
        "      --chat-template-file F  render with this Jinja template instead of the file's (implies --chat)\n"
        "      --chat-template NAME  a built-in row instead of the file's template (implies --chat):\n"
        "                         llama3, llama3-agp, chatml, qwen3, gemma3, gemma4, phi3\n"
        "\n"
        "speculative decoding (off unless a drafter is given):\n"
        "      --draft FILE       draft model with the target's vocabulary\n"
        "      --mtp FILE         MTP assistant head for the target\n"
        "      --draft-ngram      prompt-lookup drafter (no model)\n"
        "      --draft-oracle FILE  benchmarks: the target's greedy ids recorded with --save-ids, proposed\n"
        "                         at --oracle-accept P1,P2,... per depth (default 0.8), the first wrong\n"
        "                         depth's runner-up right at --oracle-sibling Q (default 0), --oracle-seed N\n"
        "      --ngram-min N, --ngram-max N   n-gram lengths (default 1..4)\n"
        "      --draft-max K      drafted tokens per round, 1..63 (default 4)\n"
        "      --tree             draft and verify token trees (also: SPRIG_TREE=1)\n"
        "      --tree auto        each round, the tree (or chain, or no draft) with the most expected tokens\n"
        "                         per second from the target's measured verify times and the draft model's\n"
        "                         calibrated acceptance (a dynamic tree: default depth 8, 24 nodes, width 3)\n"
        "      --no-tree          force chain rounds even if SPRIG_TREE is set\n"
        "      --tree-branches N  add the drafter's runner-up as a sibling leaf at the first N draft steps\n"
        "      --tree-nodes M     dynamic trees (implies --tree): a model drafter expands, depth by depth, its\n"
        "                         --tree-width W (default 4) most probable frontier nodes in one forward, W\n"
        "                         children each, and the M most probable nodes (root included) are verified;\n"
        "                         depth: --draft-max (also --tree-depth D)\n"
        "      --draft-sampling q|onehot  with --temp > 0: draw drafts from the drafter's own distribution q\n"
        "                         and accept them with min(1, p/q) (trees: siblings drawn without\n"
        "                         replacement, the multi-candidate rule), or propose its argmax, accepted\n"
        "                         with p (onehot); both keep the target's distribution (default: q)\n"
        "\n"
        "      --prompt-cache FILE  reuse the key/value rows FILE holds for the longest prefix of the prompt that\n"
        "                         they match, then save this run's (prompt and reply) to it (as llama.cpp's);\n"
        "                         a file from another model, KV type, kernel family or version is refused\n"
        "      --prompt-cache-ro  with --prompt-cache: read it, do not write it\n"
        "      --stats-json FILE  write the session's figures, the prompt and generated ids as one JSON object\n"
        "      --save-ids FILE    write the prompt as evaluated and the generated ids, whitespace-separated\n"
        "      --top-logprobs N   with --stats-json: each generated token's N (<= 20) most likely tokens and\n"
        "                         their log-probabilities (log-softmax of the target's logits at that step)\n"
        "  -q, --quiet            no statistics on stderr\n"
        "  -h, --help             the common options;  --help-all: this list\n");
}

/* The common options, on one 80 x 24 screen (--help). */
static void usage(FILE *f)
{
    fprintf(f,
        "usage: sprig run [-m MODEL] [-p PROMPT] [options]   (all: --help-all)\n"
        "  -m, --model FILE      a GGUF model (default: models/stories260K.gguf)\n"
        "  -p, --prompt TEXT     the prompt (default: BOS only); -f FILE: from a file\n"
        "  -n, --n-predict N     tokens to generate (default 256)\n"
        "      --temp T          temperature, 0 = greedy (default 0.8); --seed S\n"
        "  -t, --threads N       threads (default: all cores)\n"
        "chat:\n"
        "      --chat            the prompt as a user message, through the chat template\n"
        "  -sys, --system TEXT   a system message (implies --chat)\n"
        "      --chat-template-file F  a Jinja template, not the file's (implies --chat)\n"
        "      --chat-template NAME  a built-in row, not the file's (implies --chat)\n"
        "speculative decoding (greedy output = plain decoding's, byte for byte):\n"
        "      --draft FILE      a draft model with the target's vocabulary\n"
        "      --mtp FILE        an MTP head (Gemma 4 assistant; Qwen 3.5: the target)\n"
        "      --draft-ngram     prompt lookup, no model\n"
        "      --draft-max K     drafted tokens per round (default 4)\n"
        "      --tree auto       each round the tree or chain with the most expected\n"
        "                        tokens per second (measured costs, calibrated drafts)\n"
        "      --tree            fixed trees (--tree-nodes M, --tree-width W, ...)\n"
        "output:\n"
        "  -q, --quiet           no statistics on stderr\n"
        "      --stats-json FILE the run's figures as JSON\n"
        "      --help-all        every option: sampling, KV cache, drafters, benchmarks\n");
}


struct out_ctx { size_t bytes; };

static bool write_text(void *user, const char *text, size_t len)
{
    struct out_ctx *o = user;
    if (fwrite(text, 1, len, stdout) != len) return false;
    fflush(stdout);
    o->bytes += len;
    return true;
}

static void write_ids(FILE *f, const char *key, const int32_t *ids, int n)
{
    fprintf(f, ",\"%s\":[", key);
    for (int i = 0; i < n; i++) fprintf(f, i ? ",%d" : "%d", (int)ids[i]);
    fputc(']', f);
}

/* The statistics object, then the ids and the top log-probabilities; a
 * logprob is written with 9 significant digits (a float exactly). */
static bool write_stats_json(const char *path, const sprig_session *s, const struct sprig_stats *t)
{
    char buf[4096];
    int n = sprig_stats_to_json(t, buf, sizeof buf);
    if (n < 2 || (size_t)n >= sizeof buf) return false;
    FILE *f = fopen(path, "w");
    if (!f) return false;
    struct sprig_output o;
    sprig_session_get_output(s, &o);
    fwrite(buf, 1, (size_t)n - 1, f);   /* without the closing brace */
    write_ids(f, "prompt_ids", o.prompt, o.n_prompt);
    write_ids(f, "tokens", o.tokens, o.n_tokens);
    if (o.top_n) {
        fputs(",\"top_logprobs\":[", f);
        for (int i = 0; i < o.n_tokens; i++) {
            fputs(i ? ",[" : "[", f);
            for (int j = 0; j < o.top_n; j++) {
                const sprig_logprob *e = &o.top[(size_t)i * (size_t)o.top_n + (size_t)j];
                if (isfinite(e->logprob)) fprintf(f, "%s{\"id\":%d,\"logprob\":%.9g}", j ? "," : "", (int)e->id, (double)e->logprob);
                else fprintf(f, "%s{\"id\":%d,\"logprob\":null}", j ? "," : "", (int)e->id);
            }
            fputc(']', f);
        }
        fputc(']', f);
    }
    fputs("}\n", f);
    bool ok = !ferror(f);
    return fclose(f) == 0 && ok;
}

/* the prompt as evaluated, then the generated ids: what --draft-oracle reads */
/* A figure of /proc/self/status in MB (1e6), e.g. "VmRSS:"; 0 if absent. */
static double proc_status_mb(const char *key)
{
    FILE *f = fopen("/proc/self/status", "r");
    if (!f) return 0;
    char line[256];
    double kb = 0;
    const size_t kl = strlen(key);
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, key, kl)) {
            kb = strtod(line + kl, NULL);
            break;
        }
    fclose(f);
    return kb * 1024.0 / 1e6;
}

static bool write_ids_file(const char *path, const sprig_session *s)
{
    FILE *f = fopen(path, "w");
    if (!f) return false;
    struct sprig_output o;
    sprig_session_get_output(s, &o);
    for (int i = 0; i < o.n_prompt; i++) fprintf(f, "%d%c", (int)o.prompt[i], i + 1 == o.n_prompt ? '\n' : ' ');
    for (int i = 0; i < o.n_tokens; i++) fprintf(f, "%d%c", (int)o.tokens[i], i + 1 == o.n_tokens ? '\n' : ' ');
    bool ok = !ferror(f);
    return fclose(f) == 0 && ok;
}

/* The default model: $SPRIG_MODEL, the repository's models/ (the shipped
 * stories260K), the shared fixtures beside a checkout, then the one `make
 * install` put beside the binary (BINDIR/../share/sprig, found from
 * /proc/self/exe, so any PREFIX or DESTDIR staging works). */
static const char *default_model(char *looked, size_t cap)
{
    const char *env = getenv("SPRIG_MODEL");
    static char installed[4096];
    const char *cand[] = { "models/stories260K.gguf", "../shared/models/stories260K.gguf", NULL };
    const ssize_t n = readlink("/proc/self/exe", installed, sizeof installed - 64);
    if (n > 0) {
        installed[n] = 0;
        char *slash = strrchr(installed, '/');
        if (slash) {
            *slash = 0;
            slash = strrchr(installed, '/');
            if (slash) { strcpy(slash, "/share/sprig/stories260K.gguf"); cand[2] = installed; }
        }
    }
    if (env && *env) {
        if (access(env, R_OK) == 0) return env;
        snprintf(looked, cap, "$SPRIG_MODEL=%.300s (not readable), %s, %s%s%.500s", env, cand[0], cand[1], cand[2] ? ", " : "", cand[2] ? cand[2] : "");
    } else {
        snprintf(looked, cap, "$SPRIG_MODEL (unset), %s, %s%s%.500s", cand[0], cand[1], cand[2] ? ", " : "", cand[2] ? cand[2] : "");
    }
    for (size_t i = 0; i < sizeof cand / sizeof cand[0]; i++)
        if (cand[i] && access(cand[i], R_OK) == 0) return cand[i];
    return NULL;
}

/* The chat template: --chat-template NAME (a table row), --chat-template-file
 * F, else the model's tokenizer.chat_template (Jinja); NULL after printing why. */
static sprig_chat *open_chat(const sprig_model *m, const char *model_path, const char *chat_name, const char *chat_file)
{
    sprig_error err = { 0 };
    sprig_chat *c = NULL;
    if (chat_name) {
        if (sprig_chat_from_name(chat_name, &c, &err)) fprintf(stderr, "sprig run: --chat-template: %s\n", err.msg);
        return c;
    }
    if (chat_file) {
        char why[512];
        size_t n = 0;
        char *text = cli_read_all(chat_file, (size_t)1 << 24, &n, why, sizeof why);
        if (!text) {
            fprintf(stderr, "sprig run: --chat-template-file: %s\n", why);
            return NULL;
        }
        if (sprig_chat_from_text(text, n, chat_file, &c, &err)) fprintf(stderr, "sprig run: --chat-template-file: %s\n", err.msg);
        free(text);
        return c;
    }
    size_t tl = 0;
    const char *tmpl = sprig_model_meta_str(m, "tokenizer.chat_template", &tl);
    if (!tmpl) {
        char names[256];
        sprig_chat_names(names, sizeof names);
        fprintf(stderr, "sprig run: --chat: %s has no tokenizer.chat_template; give one with --chat-template-file F or "
                        "--chat-template NAME (one of: %s)\n", model_path, names);
        return NULL;
    }
    if (sprig_chat_from_text(tmpl, tl, "tokenizer.chat_template", &c, &err)) fprintf(stderr, "sprig run: %s: %s\n", model_path, err.msg);
    return c;
}

/* The conversation [system], user through the template, with a generation prompt; NULL after printing why. */
static char *render_chat(const sprig_model *m, const sprig_chat *c, const char *system_msg, const char *user_msg, bool quiet)
{
    const struct sprig_chat_family *family = sprig_chat_family_of(c);
    if (system_msg && family && family->sys == SPRIG_CHAT_SYS_DROP)
        fprintf(stderr, "sprig run: warning: the %s chat template ignores system messages; -sys is dropped\n", family->name);
    struct sprig_model_info mi;
    sprig_model_get_info(m, &mi);
    const char *bos = sprig_model_token_piece(m, mi.token_bos, NULL);
    const char *eos = sprig_model_token_piece(m, mi.token_eos, NULL);
    json_t *msgs = json_array();
    if (system_msg) json_array_append_new(msgs, json_pack("{s:s,s:s}", "role", "system", "content", system_msg));
    json_array_append_new(msgs, json_pack("{s:s,s:s}", "role", "user", "content", user_msg));
    char *out = NULL;
    sprig_error err = { 0 };
    if (json_array_size(msgs) != (system_msg ? 2u : 1u)) sprig_err(&err, SPRIG_E_INVALID_ARG, "the messages are not valid UTF-8");
    else if (sprig_chat_apply(c, msgs, NULL, true, bos, eos, NULL, &out, NULL, &err)) out = NULL;
    json_decref(msgs);
    if (!out) {
        fprintf(stderr, "sprig run: --chat: %s\n", err.msg);
        return NULL;
    }
    if (!quiet) fprintf(stderr, "sprig: chat template %s\n", sprig_chat_describe(c));
    return out;
}

int sprig_cmd_run(int argc, char **argv)
{
    const char *C = "run";
    struct sprig_session_params p = sprig_session_default_params();
    const char *model_path = NULL, *prompt = "", *prompt_file = NULL, *stats_json = NULL, *save_ids = NULL, *prompt_cache = NULL;
    bool prompt_cache_ro = false;
    long long n_predict = 256, v;
    double d;
    bool quiet = false;
    int tree_flag = SPRIG_TREE_FROM_ENV, tree_nodes = 0;
    bool depth_set = false;
    bool chat = false;
    const char *system_msg = NULL, *chat_name = NULL, *chat_file = NULL;
    const char *grammar = NULL, *grammar_file = NULL, *schema = NULL, *schema_file = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *val = i + 1 < argc ? argv[i + 1] : NULL;
#define NEEDV() do { if (!val) { fprintf(stderr, "sprig run: %s: missing value\n", a); return 2; } i++; } while (0)
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) { usage(stdout); return 0; }
        if (!strcmp(a, "--help-all")) { usage_all(stdout); return 0; }
        else if (!strcmp(a, "-m") || !strcmp(a, "--model")) { NEEDV(); model_path = val; }
        else if (!strcmp(a, "-p") || !strcmp(a, "--prompt")) { NEEDV(); prompt = val; }
        else if (!strcmp(a, "-f") || !strcmp(a, "--file")) { NEEDV(); prompt_file = val; }
        else if (!strcmp(a, "-n") || !strcmp(a, "--n-predict")) { NEEDV(); if (!cli_parse_int(C, a, val, 1, 1 << 24, &n_predict)) return 2; }
        else if (!strcmp(a, "-t") || !strcmp(a, "--threads")) { NEEDV(); if (!cli_parse_int(C, a, val, 1, 256, &v)) return 2; p.n_threads = (int)v; }
        else if (!strcmp(a, "-c") || !strcmp(a, "--ctx-size")) { NEEDV(); if (!cli_parse_int(C, a, val, 8, 1 << 24, &v)) return 2; p.n_ctx = (int)v; }
        else if (!strcmp(a, "-b") || !strcmp(a, "--batch-size")) { NEEDV(); if (!cli_parse_int(C, a, val, 1, 4096, &v)) return 2; p.n_batch = (int)v; }
        else if (!strcmp(a, "--kv-type")) {
            NEEDV();
            if (!sprig_kv_type_from_name(val, &p.kv_type)) {
                fprintf(stderr, "sprig run: --kv-type: '%s' is not a KV cache type (%s)\n", val, sprig_kv_type_list());
                return 2;
            }
        }
        else if (!strcmp(a, "--kv-block")) { NEEDV(); if (!cli_parse_int(C, a, val, 1, 4096, &v)) return 2; p.kv_block_slots = (int)v; }
        else if (!strcmp(a, "--temp")) { NEEDV(); if (!cli_parse_float(C, a, val, 0, 1e6, &d)) return 2; p.temp = (float)d; }
        else if (!strcmp(a, "--top-k")) { NEEDV(); if (!cli_parse_int(C, a, val, 0, 1 << 24, &v)) return 2; p.top_k = (int)v; }
        else if (!strcmp(a, "--top-p")) {
            NEEDV();
            if (!cli_parse_float(C, a, val, 0, 1, &d)) return 2;
            if (d <= 0) { fprintf(stderr, "sprig run: --top-p: %g must be in (0, 1]\n", d); return 2; }
            p.top_p = (float)d;
        }
        else if (!strcmp(a, "--min-p")) {
            NEEDV();
            if (!cli_parse_float(C, a, val, 0, 1, &d)) return 2;
            if (d >= 1) { fprintf(stderr, "sprig run: --min-p: %g must be in [0, 1)\n", d); return 2; }
            p.min_p = (float)d;
        }
        else if (!strcmp(a, "--seed")) { NEEDV(); if (!cli_parse_int(C, a, val, 0, 0x7fffffffffffffffLL, &v)) return 2; p.seed = (uint64_t)v; }
        else if (!strcmp(a, "--ignore-eos")) p.ignore_eos = true;
        else if (!strcmp(a, "--grammar")) { NEEDV(); grammar = val; }
        else if (!strcmp(a, "--grammar-file")) { NEEDV(); grammar_file = val; }
        else if (!strcmp(a, "-j") || !strcmp(a, "--json-schema")) { NEEDV(); schema = val; }
        else if (!strcmp(a, "-jf") || !strcmp(a, "--json-schema-file")) { NEEDV(); schema_file = val; }
        else if (!strcmp(a, "--grammar-blind-drafts")) p.grammar_blind_drafts = true;
        else if (!strcmp(a, "--chat")) chat = true;
        else if (!strcmp(a, "-sys") || !strcmp(a, "--system")) { NEEDV(); system_msg = val; chat = true; }
        else if (!strcmp(a, "--chat-template")) { NEEDV(); chat_name = val; chat = true; }
        else if (!strcmp(a, "--chat-template-file")) { NEEDV(); chat_file = val; chat = true; }
        else if (!strcmp(a, "--draft")) { NEEDV(); p.drafter = SPRIG_DRAFTER_MODEL; p.draft_path = val; }
        else if (!strcmp(a, "--mtp")) { NEEDV(); p.drafter = SPRIG_DRAFTER_MTP; p.draft_path = val; }
        else if (!strcmp(a, "--draft-ngram")) p.drafter = SPRIG_DRAFTER_NGRAM;
        else if (!strcmp(a, "--draft-oracle")) { NEEDV(); p.drafter = SPRIG_DRAFTER_ORACLE; p.draft_path = val; }
        else if (!strcmp(a, "--oracle-accept")) { NEEDV(); p.oracle_accept = val; }
        else if (!strcmp(a, "--oracle-sibling")) { NEEDV(); if (!cli_parse_float(C, a, val, 0, 1, &d)) return 2; p.oracle_sibling = (float)d; }
        else if (!strcmp(a, "--oracle-seed")) { NEEDV(); if (!cli_parse_int(C, a, val, 0, 0x7fffffffffffffffLL, &v)) return 2; p.oracle_seed = (uint64_t)v; }
        else if (!strcmp(a, "--save-ids")) { NEEDV(); save_ids = val; }
        else if (!strcmp(a, "--ngram-min")) { NEEDV(); if (!cli_parse_int(C, a, val, 1, 8, &v)) return 2; p.ngram_min = (int)v; }
        else if (!strcmp(a, "--ngram-max")) { NEEDV(); if (!cli_parse_int(C, a, val, 1, 8, &v)) return 2; p.ngram_max = (int)v; }
        else if (!strcmp(a, "--draft-max")) { NEEDV(); if (!cli_parse_int(C, a, val, 1, 63, &v)) return 2; p.draft_max = (int)v; depth_set = true; }
        else if (!strcmp(a, "--tree") && val && !strcmp(val, "auto")) { tree_flag = SPRIG_TREE_ON; p.tree_auto = true; i++; }
        else if (!strcmp(a, "--tree")) tree_flag = SPRIG_TREE_ON;
        else if (!strcmp(a, "--no-tree")) tree_flag = SPRIG_TREE_OFF;
        else if (!strcmp(a, "--tree-branches")) { NEEDV(); if (!cli_parse_int(C, a, val, 0, 62, &v)) return 2; p.tree_branches = (int)v; }
        else if (!strcmp(a, "--tree-nodes")) { NEEDV(); if (!cli_parse_int(C, a, val, 2, 64, &v)) return 2; tree_nodes = (int)v; }
        else if (!strcmp(a, "--tree-depth")) { NEEDV(); if (!cli_parse_int(C, a, val, 1, 63, &v)) return 2; p.draft_max = (int)v; depth_set = true; }
        else if (!strcmp(a, "--tree-width")) { NEEDV(); if (!cli_parse_int(C, a, val, 1, 8, &v)) return 2; p.tree_width = (int)v; }
        else if (!strcmp(a, "--draft-sampling")) {
            NEEDV();
            if (!strcmp(val, "q")) p.sampled_drafts = true;
            else if (!strcmp(val, "onehot")) p.sampled_drafts = false;
            else { fprintf(stderr, "sprig run: --draft-sampling: '%s' is not q or onehot\n", val); return 2; }
        }
        else if (!strcmp(a, "--stats-json")) { NEEDV(); stats_json = val; }
        else if (!strcmp(a, "--prompt-cache")) { NEEDV(); prompt_cache = val; }
        else if (!strcmp(a, "--prompt-cache-ro")) prompt_cache_ro = true;
        else if (!strcmp(a, "--top-logprobs")) {
            NEEDV();
            if (!cli_parse_int(C, a, val, 0, SPRIG_TOP_LOGPROBS_MAX, &v)) return 2;
            p.top_logprobs = (int)v;
        }
        else if (!strcmp(a, "-q") || !strcmp(a, "--quiet")) quiet = true;
        else { fprintf(stderr, "sprig run: unknown option '%s' (see sprig run --help)\n", a); return 2; }
#undef NEEDV
    }
    if (!cli_tree_shape(C, &p, tree_nodes, depth_set, &tree_flag)) return 2;
    p.tree = tree_flag;
    if (p.top_logprobs && !stats_json) {
        fprintf(stderr, "sprig run: --top-logprobs needs --stats-json FILE (where they are written)\n");
        return 2;
    }
    if (tree_flag == SPRIG_TREE_ON && p.drafter == SPRIG_DRAFTER_NONE) {
        fprintf(stderr, "sprig run: --tree needs a drafter: --draft FILE, --mtp FILE or --draft-ngram\n");
        return 2;
    }
    if (p.tree_branches > 0 && p.drafter == SPRIG_DRAFTER_NONE) {
        fprintf(stderr, "sprig run: --tree-branches needs a drafter: --draft FILE, --mtp FILE or --draft-ngram\n");
        return 2;
    }
    if (p.ngram_min > p.ngram_max) {
        fprintf(stderr, "sprig run: --ngram-min %d is larger than --ngram-max %d\n", p.ngram_min, p.ngram_max);
        return 2;
    }
    if (p.draft_max + 1 + p.tree_branches > 64) {
        fprintf(stderr, "sprig run: --draft-max %d plus --tree-branches %d exceeds the 64-node tree limit\n", p.draft_max, p.tree_branches);
        return 2;
    }
    if (chat_name && chat_file) {
        fprintf(stderr, "sprig run: --chat-template and --chat-template-file: give one\n");
        return 2;
    }
    if (!!grammar + !!grammar_file + !!schema + !!schema_file > 1) {
        fprintf(stderr, "sprig run: --grammar, --grammar-file, --json-schema and --json-schema-file: give one\n");
        return 2;
    }
    if (chat_name && !sprig_chat_find(chat_name)) {
        char names[256];
        sprig_chat_names(names, sizeof names);
        fprintf(stderr, "sprig run: --chat-template: unknown template '%s' (one of: %s)\n", chat_name, names);
        return 2;
    }
    p.parse_special = chat;
    char looked[1024];
    if (!model_path && !(model_path = default_model(looked, sizeof looked))) {
        fprintf(stderr, "sprig run: no model given (-m FILE) and none found; looked at: %s\n", looked);
        return 1;
    }
    char *file_prompt = NULL;
    if (prompt_file) {
        char why[512];
        size_t flen = 0;
        if (!(file_prompt = cli_read_all(prompt_file, (size_t)1 << 28, &flen, why, sizeof why))) {
            fprintf(stderr, "sprig run: --file: %s\n", why);
            return 1;
        }
        prompt = file_prompt;
    }
    if (!quiet && !getenv("SPRIG_LOG")) sprig_set_log_level(2);   /* SPRIG_LOG=debug|info|warn|error wins */

    int rc = 1;
    sprig_error err = { 0 };
    sprig_model *m = NULL;
    sprig_session *s = NULL;
    char *rendered = NULL;
    sprig_chat *tmpl = NULL;
    if (sprig_model_load(model_path, &m, &err)) {
        fprintf(stderr, "sprig run: %s\n", err.msg);
        goto done;
    }
    if (chat) {
        if (!(tmpl = open_chat(m, model_path, chat_name, chat_file)) || !(rendered = render_chat(m, tmpl, system_msg, prompt, quiet)))
            goto done;
        prompt = rendered;
    }
    if (sprig_session_create(m, &p, &s, &err)) {
        fprintf(stderr, "sprig run: %s\n", err.msg);
        goto done;
    }
    if (grammar || grammar_file || schema || schema_file) {   /* the text, then compiled against this vocabulary */
        const char *flag = grammar ? "--grammar" : grammar_file ? "--grammar-file" : schema ? "--json-schema" : "--json-schema-file";
        const char *file = grammar_file ? grammar_file : schema_file;
        char why[512], *text = NULL;
        size_t tl = 0;
        if (file && !(text = cli_read_all(file, (size_t)1 << 24, &tl, why, sizeof why))) {
            fprintf(stderr, "sprig run: %s: %s\n", flag, why);
            goto done;
        }
        const char *g = text ? text : grammar ? grammar : schema;
        if (!text) tl = strlen(g);
        const sprig_status gs = grammar || grammar_file ? sprig_session_set_grammar(s, g, tl, &err) : sprig_session_set_json_schema(s, g, tl, &err);
        free(text);
        if (gs) {
            fprintf(stderr, "sprig run: %s: %s\n", flag, err.msg);
            goto done;
        }
    }
    int pc_tokens = 0;
    if (prompt_cache && access(prompt_cache, F_OK) == 0) {   /* absent: this run makes it */
        if (sprig_session_load_cache(s, prompt_cache, &pc_tokens, &err)) {
            fprintf(stderr, "sprig run: --prompt-cache: %s\n", err.msg);
            goto done;
        }
    } else if (prompt_cache_ro && !prompt_cache) {
        fprintf(stderr, "sprig run: --prompt-cache-ro needs --prompt-cache FILE\n");
        goto done;
    }
    struct out_ctx oc = { 0 };
    size_t plen = strlen(prompt);
    if (fwrite(prompt, 1, plen, stdout) != plen) goto done;
    fflush(stdout);
    sprig_status st = sprig_session_generate(s, prompt, plen, (int)n_predict, write_text, &oc, &err);
    fputc('\n', stderr);
    if (st) {
        fprintf(stderr, "sprig run: %s\n", err.msg);
        goto done;
    }
    struct sprig_stats t;
    sprig_session_get_stats(s, &t);
    if (prompt_cache && !quiet)
        fprintf(stderr, "sprig: prompt cache %s: %d tokens held, %lld of the %lld prompt tokens reused\n", prompt_cache, pc_tokens,
                (long long)t.cached_tokens, (long long)t.prompt_tokens);
    if (prompt_cache && !prompt_cache_ro && sprig_session_save_cache(s, prompt_cache, &err)) {
        fprintf(stderr, "sprig run: --prompt-cache: %s\n", err.msg);
        goto done;
    }
    if (!strcmp(t.stop, "context"))
        fprintf(stderr, "sprig run: stopped at the context limit (%lld prompt + %lld generated tokens)\n",
                (long long)t.prompt_tokens, (long long)t.generated_tokens);
    if (!quiet) {
        struct sprig_model_info mi;
        sprig_model_get_info(m, &mi);
        fprintf(stderr, "sprig: model %s (%s, %.2fM params) loaded in %.1f ms; kernels %s, %d threads, seed %llu\n",
                model_path, mi.arch, (double)mi.n_params / 1e6, t.load_ms, t.kernels, t.n_threads, (unsigned long long)t.seed);
        fprintf(stderr, "sprig: prefill %lld tokens in %.2f ms (%.1f tok/s); decode %lld tokens in %.2f ms (%.1f tok/s); stop: %s\n",
                (long long)t.prompt_tokens, t.prefill_ms, t.prefill_tok_s, (long long)(t.generated_tokens > 0 ? t.generated_tokens - 1 : 0),
                t.decode_ms, t.decode_tok_s, t.stop);
        if (strcmp(t.drafter, "none"))
            fprintf(stderr, "sprig: %s path, drafter %s, draft-max %d, tree-branches %d: %lld rounds, %.3f emitted/verify, "
                            "acceptance %.3f (%lld/%lld), accept rounds zero/partial/full %lld/%lld/%lld, won by a branch %lld; "
                            "ms draft %.1f verify %.1f walk %.1f finalize %.1f (recurrent rollback %.1f)\n",
                    t.path, t.drafter, t.draft_max, t.tree_branches, (long long)t.rounds, t.emitted_per_verify, t.acceptance_rate,
                    (long long)t.accepted, (long long)t.proposed, (long long)t.zero_accept_rounds, (long long)t.partial_accept_rounds,
                    (long long)t.full_accept_rounds, (long long)t.branch_rounds, t.draft_ms, t.verify_ms, t.walk_ms, t.finalize_ms, t.rollback_ms);
        if (grammar || grammar_file || schema || schema_file)
            fprintf(stderr, "sprig: grammar: %lld rows masked whole (the argmax alone was not allowed, or sampling); %lld masks walked, "
                            "%lld from the cache\n", (long long)t.grammar_rows_masked, (long long)t.grammar_walks, (long long)t.grammar_mask_hits);
        if (t.expert_forwards > 0)
            fprintf(stderr, "sprig: experts: %lld decode forwards read %.2f experts per layer each (%.1f per forward, %.1f MB of "
                            "expert weights), %.1f expert reads per emitted token\n", (long long)t.expert_forwards, t.experts_per_layer,
                    t.experts_per_verify, t.expert_mb_per_forward, t.experts_per_token);
        sprig_model_get_info(m, &mi);
        if (mi.experts_total > 0)
            fprintf(stderr, "sprig: memory: %.0f MB of weights packed, %.0f MB read in place; %lld of %lld experts read since the "
                            "load (%.0f MB); resident now %.0f MB, at most %.0f MB\n", mi.weights_copied_mb, mi.weights_mapped_mb,
                    (long long)mi.experts_touched, (long long)mi.experts_total, mi.experts_touched_mb, proc_status_mb("VmRSS:"),
                    proc_status_mb("VmHWM:"));
    }
    if (save_ids && !write_ids_file(save_ids, s)) {
        fprintf(stderr, "sprig run: --save-ids: cannot write '%s'\n", save_ids);
        goto done;
    }
    if (stats_json && !write_stats_json(stats_json, s, &t)) {
        fprintf(stderr, "sprig run: --stats-json: cannot write '%s'\n", stats_json);
        goto done;
    }
    rc = 0;
done:
    sprig_session_free(s);
    sprig_model_free(m);
    free(file_prompt);
    free(rendered);
    sprig_chat_free(tmpl);
    return rc;
}
