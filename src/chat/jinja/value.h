/*
 * chat/jinja/value — the values a chat template computes with, and the
 * arena they live in.
 *
 * Why an arena: a rendering builds many small strings, lists and dicts
 * (messages converted from JSON, filter results, loop variables) that all
 * die together when the rendering ends. One bump allocator per rendering
 * frees them at once and caps their total (a hostile template cannot
 * exhaust memory: an allocation past the cap fails and the rendering stops
 * with an error naming the limit).
 *
 * Values follow Jinja's model as transformers renders chat templates:
 * undefined, none, booleans, integers, floats, strings (UTF-8, immutable),
 * lists, dicts (string keys, or the numbers, booleans and none a dict
 * literal may use as Python allows; insertion order kept: tojson and items() show
 * it), namespaces (dicts whose attributes `set` may assign), macros and the
 * global functions (so `strftime_now is defined` holds, as in transformers).
 */
#ifndef SPRIG_CHAT_JINJA_VALUE_H
#define SPRIG_CHAT_JINJA_VALUE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- arena ---- */
typedef struct sprig_jarena sprig_jarena;
sprig_jarena *sprig_jarena_create(size_t cap_bytes);   /* NULL when out of memory */
void sprig_jarena_free(sprig_jarena *a);
/* n zeroed bytes (8-aligned), or NULL past the cap or out of memory */
void *sprig_jarena_alloc(sprig_jarena *a, size_t n);

/* ---- values ---- */
enum sprig_jv_kind { JV_UNDEF = 0, JV_NONE, JV_BOOL, JV_INT, JV_FLOAT, JV_STR, JV_LIST, JV_DICT, JV_MACRO, JV_FUNC };

typedef struct sprig_jstr { size_t n; char p[]; } sprig_jstr;   /* p[n] = 0 */
struct sprig_jlist;
struct sprig_jdict;
struct sprig_jnode;

typedef struct sprig_jv {
    uint8_t k;        /* enum sprig_jv_kind */
    bool ns;          /* JV_DICT: a namespace() (its attributes may be set) */
    bool safe;        /* JV_STR: marked safe (Python's Markup, from | safe or | escape): `+` with a plain string
                         HTML-escapes that string, as Markup.__add__ does */
    union {
        bool b;
        int64_t i;
        double f;
        const sprig_jstr *s;
        struct sprig_jlist *l;
        struct sprig_jdict *d;
        struct {
            const struct sprig_jnode *m;   /* JV_MACRO: its definition (a macro, or a call block's body as `caller`) */
            void *env;                     /* JV_MACRO: the frame a call block's `caller` runs in (NULL: the template's top level) */
        };
        const char *fn;                /* JV_FUNC: a global function's name (range, strftime_now, ...) */
    };
} sprig_jv;

typedef struct sprig_jlist { int n, cap; sprig_jv *v; } sprig_jlist;
/* keys: strings, or (as Python allows in a dict literal) integers, floats, booleans and none */
typedef struct sprig_jdict { int n, cap; sprig_jv *k; sprig_jv *v; } sprig_jdict;

static inline sprig_jv sprig_jv_undef(void) { sprig_jv v = { .k = JV_UNDEF }; return v; }
static inline sprig_jv sprig_jv_none(void) { sprig_jv v = { .k = JV_NONE }; return v; }
static inline sprig_jv sprig_jv_bool(bool b) { sprig_jv v = { .k = JV_BOOL, .b = b }; return v; }
static inline sprig_jv sprig_jv_int(int64_t i) { sprig_jv v = { .k = JV_INT, .i = i }; return v; }
static inline sprig_jv sprig_jv_float(double f) { sprig_jv v = { .k = JV_FLOAT, .f = f }; return v; }

/* a string value copied into the arena (kind JV_UNDEF when the arena is full) */
sprig_jv sprig_jv_strn(sprig_jarena *a, const char *p, size_t n);
const sprig_jstr *sprig_jstr_new(sprig_jarena *a, const char *p, size_t n);   /* NULL when full */

sprig_jlist *sprig_jlist_new(sprig_jarena *a, int cap);
bool sprig_jlist_push(sprig_jarena *a, sprig_jlist *l, sprig_jv v);
sprig_jdict *sprig_jdict_new(sprig_jarena *a, int cap);
/* set key to v (replacing an existing key in place); put: any key kind (a string, number, boolean or none) */
bool sprig_jdict_set(sprig_jarena *a, sprig_jdict *d, const sprig_jstr *key, sprig_jv v);
bool sprig_jdict_put(sprig_jarena *a, sprig_jdict *d, sprig_jv key, sprig_jv v);
/* the value of the string key, or NULL; find: of any key, equal as Python's dict finds it (1 == 1.0 == true) */
sprig_jv *sprig_jdict_get(const sprig_jdict *d, const char *key, size_t n);
sprig_jv *sprig_jdict_find(const sprig_jdict *d, sprig_jv key);
/* whether v can be a dict key */
bool sprig_jv_hashable(sprig_jv v);

static inline sprig_jv sprig_jv_list(sprig_jlist *l) { sprig_jv v = { .k = JV_LIST, .l = l }; return v; }
static inline sprig_jv sprig_jv_dict(sprig_jdict *d) { sprig_jv v = { .k = JV_DICT, .d = d }; return v; }

/* Jinja truthiness: undefined, none, false, 0, 0.0, "" and empty containers are false */
bool sprig_jv_truthy(sprig_jv v);
/* == as Jinja (Python) compares: numbers by value (true == 1), strings by bytes, containers deeply */
bool sprig_jv_equal(sprig_jv a, sprig_jv b);
/* < for numbers and strings; *ok false for other pairs */
bool sprig_jv_less(sprig_jv a, sprig_jv b, bool *ok);
const char *sprig_jv_kind_name(sprig_jv v);

/* ---- text output: a growable buffer with a cap ---- */
typedef struct sprig_jbuf { char *p; size_t n, cap, max; bool over; } sprig_jbuf;
void sprig_jbuf_put(sprig_jbuf *b, const char *s, size_t n);   /* sets over past max or out of memory */
void sprig_jbuf_puts(sprig_jbuf *b, const char *s);
void sprig_jbuf_free(sprig_jbuf *b);

/* str(v) as Jinja prints it: none -> "None", true -> "True", floats as Python
 * repr does (1.0, 0.5, 1e+20), lists and dicts as Python's repr */
void sprig_jv_print(sprig_jbuf *b, sprig_jv v);
/* json.dumps(v, indent=indent (< 0: none), ensure_ascii=False, separators=(item_sep, key_sep)); NULL separators
 * are json.dumps' defaults: ", " and ": ", or "," and ": " with an indent */
void sprig_jv_tojson(sprig_jbuf *b, sprig_jv v, int indent, const char *item_sep, const char *key_sep, int depth);

#endif
