/*
 * tools/cmd_template.c — `sprig template`: print what a conversation renders
 * to through a model's chat template, without loading its weights.
 *
 *   sprig template -m FILE [--chat-template-file T | --chat-template NAME]
 *                  --messages JSON [--tools JSON] [--vars JSON] [--add-generation-prompt]
 *
 * The template is the file's tokenizer.chat_template (run by the Jinja
 * engine, src/chat/jinja), a Jinja file, or a built-in row; bos_token and
 * eos_token are the vocabulary's. --messages and --tools are OpenAI's JSON
 * (a string, or @PATH for a file); --vars adds variables (a JSON object:
 * {"enable_thinking": false}). The rendering goes to stdout exactly (no
 * newline added), so it can be compared byte for byte with another engine's.
 * Exit status: 0 ok, 1 the file, the template or the rendering failed (the
 * template's own raise_exception message included), 2 bad usage.
 */
#include "cli.h"
#include "chat/chat.h"
#include "gguf/gguf.h"
#include "tokenizer/tokenizer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *f)
{
    fprintf(f,
            "usage: sprig template -m FILE [--chat-template-file T | --chat-template NAME]\n"
            "         --messages JSON [--tools JSON] [--vars JSON] [--add-generation-prompt]\n"
            "\n"
            "Print the prompt a conversation renders to through the model's chat template\n"
            "(only the GGUF's metadata is read). JSON arguments are text or @PATH.\n"
            "  -m, --model FILE          the GGUF (its chat template, BOS and EOS)\n"
            "  --chat-template-file T    a Jinja template instead of the file's\n"
            "  --chat-template NAME      a built-in row instead of the file's template\n"
            "  --messages JSON           OpenAI's messages array\n"
            "  --tools JSON              OpenAI's tools array\n"
            "  --vars JSON               more template variables, an object\n"
            "  --add-generation-prompt   end with the assistant's turn opened\n"
            "Exit status: 0 ok, 1 the file, template or rendering failed, 2 bad usage.\n");
}

/* a JSON argument: the text, or @PATH's contents */
static json_t *json_arg(const char *flag, const char *v)
{
    char why[512];
    char *text = NULL;
    size_t n = 0;
    if (v[0] == '@') {
        if (!(text = cli_read_all(v + 1, (size_t)1 << 26, &n, why, sizeof why))) {
            fprintf(stderr, "sprig template: %s: %s\n", flag, why);
            return NULL;
        }
    }
    json_error_t je;
    json_t *j = json_loadb(text ? text : v, text ? n : strlen(v), JSON_REJECT_DUPLICATES, &je);
    free(text);
    if (!j) fprintf(stderr, "sprig template: %s: not JSON (line %d column %d: %s)\n", flag, je.line, je.column, je.text);
    return j;
}

int sprig_cmd_template(int argc, char **argv)
{
    const char *model = NULL, *chat_name = NULL, *chat_file = NULL, *msgs_arg = NULL, *tools_arg = NULL, *vars_arg = NULL;
    bool gen = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) { usage(stdout); return 0; }
        if (!strcmp(a, "--add-generation-prompt")) { gen = true; continue; }
        const char **dst = !strcmp(a, "-m") || !strcmp(a, "--model") ? &model : !strcmp(a, "--chat-template") ? &chat_name
                         : !strcmp(a, "--chat-template-file") ? &chat_file : !strcmp(a, "--messages") ? &msgs_arg
                         : !strcmp(a, "--tools") ? &tools_arg : !strcmp(a, "--vars") ? &vars_arg : NULL;
        if (!dst) { fprintf(stderr, "sprig template: unknown option '%s' (see sprig template --help)\n", a); return 2; }
        if (!val) { fprintf(stderr, "sprig template: %s: missing value\n", a); return 2; }
        *dst = val;
        i++;
    }
    if (!model) { fprintf(stderr, "sprig template: -m FILE is required\n"); return 2; }
    if (!msgs_arg) { fprintf(stderr, "sprig template: --messages JSON is required\n"); return 2; }
    if (chat_name && chat_file) { fprintf(stderr, "sprig template: --chat-template and --chat-template-file: give one\n"); return 2; }
    json_t *msgs = json_arg("--messages", msgs_arg), *tools = tools_arg ? json_arg("--tools", tools_arg) : NULL,
           *vars = vars_arg ? json_arg("--vars", vars_arg) : NULL;
    int rc = 1;
    sprig_error err = { 0 };
    sprig_gguf *g = NULL;
    sprig_tokenizer *tok = NULL;
    sprig_chat *c = NULL;
    char *out = NULL, *text = NULL;
    size_t n = 0;
    if (!msgs || (tools_arg && !tools) || (vars_arg && !vars)) { rc = 2; goto done; }
    if (!json_is_array(msgs) || (tools && !json_is_array(tools)) || (vars && !json_is_object(vars))) {
        fprintf(stderr, "sprig template: %s must be a JSON %s\n", !json_is_array(msgs) ? "--messages" : tools && !json_is_array(tools) ? "--tools" : "--vars",
                !json_is_array(msgs) || (tools && !json_is_array(tools)) ? "array" : "object");
        rc = 2;
        goto done;
    }
    if (!(g = sprig_gguf_open(model, &err)) || !(tok = sprig_tokenizer_from_gguf(g, &err))) {
        fprintf(stderr, "sprig template: %s\n", err.msg);
        goto done;
    }
    if (chat_name) {
        if (sprig_chat_from_name(chat_name, &c, &err)) { fprintf(stderr, "sprig template: --chat-template: %s\n", err.msg); rc = 2; goto done; }
    } else if (chat_file) {
        char why[512];
        if (!(text = cli_read_all(chat_file, (size_t)1 << 24, &n, why, sizeof why))) {
            fprintf(stderr, "sprig template: --chat-template-file: %s\n", why);
            goto done;
        }
        if (sprig_chat_from_text(text, n, chat_file, &c, &err)) { fprintf(stderr, "sprig template: %s\n", err.msg); goto done; }
    } else {
        const char *t = NULL;
        size_t tl = 0;
        if (sprig_gguf_get_str(g, "tokenizer.chat_template", &t, &tl, false, &err) || !t) {
            fprintf(stderr, "sprig template: %s has no tokenizer.chat_template; give --chat-template-file T or --chat-template NAME\n", model);
            goto done;
        }
        if (sprig_chat_from_text(t, tl, "tokenizer.chat_template", &c, &err)) { fprintf(stderr, "sprig template: %s: %s\n", model, err.msg); goto done; }
    }
    const int bos = sprig_tokenizer_bos(tok), eos = sprig_tokenizer_eos(tok);
    const char *bs = bos >= 0 ? sprig_tokenizer_piece(tok, bos, NULL) : NULL, *es = eos >= 0 ? sprig_tokenizer_piece(tok, eos, NULL) : NULL;
    if (sprig_chat_apply(c, msgs, tools, gen, bs, es, vars, &out, &n, &err)) {
        fprintf(stderr, "sprig template: %s\n", err.msg);
        goto done;
    }
    fwrite(out, 1, n, stdout);
    rc = fflush(stdout) ? 1 : 0;
done:
    free(out);
    free(text);
    sprig_chat_free(c);
    sprig_tokenizer_free(tok);
    sprig_gguf_close(g);
    json_decref(msgs);
    json_decref(tools);
    json_decref(vars);
    return rc;
}
