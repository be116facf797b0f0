/*
 * chat/template — chat templates as rows of one table: turn a conversation
 * (system / user / assistant messages) into the prompt text a chat model was
 * trained on, the way its tokenizer.chat_template renders it.
 *
 * The table is the built-in choice (`--chat-template NAME`): a model's own
 * template is run by the Jinja engine (chat/jinja, through chat/chat.h).
 * A row says a family's fixed pattern (role prefix, content, role suffix,
 * a generation prompt) plus its quirks (Gemma folds the system prompt into
 * the first user turn, Phi-3 drops it, Qwen 2 injects a default one, Qwen 3
 * wraps the final assistant turn in an empty <think> block, Gemma 4 strips
 * thought channels). tests/test-chat.c checks every row byte for byte
 * against @huggingface/jinja rendering the real published template.
 *
 * A family is recognised from the template text by marker substrings: every
 * `markers` entry must occur and no `absent` entry may. Text that matches no
 * row is refused by name (never guessed): the caller chooses a row by name
 * instead (`sprig run --chat-template NAME`).
 *
 * Semantics follow Python's jinja2 (what transformers renders): `| trim` and
 * str.strip() remove Python's whitespace (str.isspace), str.strip('\n') only
 * newlines. (@huggingface/jinja 0.5.11 ignores strip's argument; see
 * tests/ref/render-chat.mjs.)
 */
#ifndef SPRIG_CHAT_TEMPLATE_H
#define SPRIG_CHAT_TEMPLATE_H

#include "base/err.h"

typedef struct sprig_chat_msg {
    const char *role;       /* "system", "user" or "assistant" */
    const char *content;    /* NUL-terminated UTF-8 */
} sprig_chat_msg;

enum sprig_chat_role { SPRIG_CHAT_SYSTEM = 0, SPRIG_CHAT_USER, SPRIG_CHAT_ASSISTANT, SPRIG_CHAT_N_ROLES };

/* What happens to a system message. */
enum sprig_chat_sys {
    SPRIG_CHAT_SYS_TURN = 0,  /* a turn of its own, like any other role */
    SPRIG_CHAT_SYS_FOLD,      /* message 0: content + fold_sep opens the next turn (later ones: a turn) */
    SPRIG_CHAT_SYS_DROP,      /* the template ignores system messages */
};

/* How an assistant message's content is rendered (beyond `trim`). */
enum sprig_chat_reply {
    SPRIG_CHAT_REPLY_PLAIN = 0,
    SPRIG_CHAT_REPLY_QWEN3,   /* reasoning split at </think>; <think> block on turns after the last user query */
    SPRIG_CHAT_REPLY_GEMMA4,  /* <|channel>...<channel|> thoughts removed, then trimmed */
};

#define SPRIG_CHAT_MAX_MARKERS 4

struct sprig_chat_family {
    const char *name;                                  /* --chat-template NAME */
    const char *about;                                 /* the models, and where the row was checked */
    const char *markers[SPRIG_CHAT_MAX_MARKERS];       /* all must occur in the template text */
    const char *absent[SPRIG_CHAT_MAX_MARKERS];        /* none may occur */
    bool bos;                                          /* the text starts with the BOS token's text */
    const char *prefix[SPRIG_CHAT_N_ROLES];            /* before a message's content, per role */
    const char *suffix[SPRIG_CHAT_N_ROLES];            /* after it */
    bool trim;                                         /* content | trim */
    enum sprig_chat_sys sys;
    const char *fold_sep;                              /* SYS_FOLD: after the system content */
    const char *default_system;                        /* a system turn when message 0 is not one, or NULL */
    bool alternate;                                    /* turns (after a folded system) must go user, assistant, user, ... */
    enum sprig_chat_reply reply;
    const char *gen_prompt;                            /* the generation prompt */
    bool gen_always;                                   /* appended even without add_generation_prompt */
};

/* The table, in order. */
int sprig_chat_n_families(void);
const struct sprig_chat_family *sprig_chat_family_at(int i);   /* NULL when out of range */

/* A row by name; NULL when there is none. */
const struct sprig_chat_family *sprig_chat_find(const char *name);

/* The names, comma separated ("llama3, chatml, ..."), into buf[cap] (truncated, NUL-terminated). */
void sprig_chat_names(char *buf, size_t cap);

/* The row whose markers match tokenizer.chat_template text tmpl[len] (not
 * necessarily NUL-terminated). NULL with SPRIG_E_UNSUPPORTED when none does
 * (the message says the template is unknown and suggests --chat-template
 * NAME with the names), or SPRIG_E_INTERNAL if two rows claim it. */
const struct sprig_chat_family *sprig_chat_detect(const char *tmpl, size_t len, sprig_error *err);

/* Render msgs[n] (n >= 1) into a malloc'd NUL-terminated string (*out, length
 * *out_len). bos_text / eos_text are the vocabulary's BOS / EOS pieces (NULL
 * reads as ""). Errors name the message index: an unknown role, NULL content,
 * turns that do not alternate where the template demands it; sizes are
 * overflow-checked. On error *out is NULL. */
sprig_status sprig_chat_render(const struct sprig_chat_family *f, const sprig_chat_msg *msgs, int n,
                               bool add_generation_prompt, const char *bos_text, const char *eos_text,
                               char **out, size_t *out_len, sprig_error *err);

#endif
