/*
 * tests/test-jinja.c — the chat template engine (src/chat/jinja):
 *   - constructs one by one, with Python's Jinja2 results (where
 *     @huggingface/jinja 0.5.11 differs, the case says how);
 *   - the real chat templates of the shipped families (tests/ref/
 *     render-chat.mjs: the published templates, 13 conversations each,
 *     rendered by @huggingface/jinja; Qwen 3's strip calls with Python's
 *     meaning) byte for byte;
 *   - the corpus (tests/data/chat-templates, 129 real templates x 8
 *     conversations) against Python's Jinja2 as transformers configures it
 *     and @huggingface/jinja, Python's meaning winning where they differ;
 *   - refusals: an unsupported statement at compile naming its line:column,
 *     raise_exception's message, and the limits (output, steps, depth).
 */
#include "test.h"
#include "chat/jinja/jinja.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *render(const char *tmpl, const char *vars_json, sprig_status *st, sprig_error *err, const struct sprig_jinja_limits *lim)
{
    sprig_jinja *t = NULL;
    *st = sprig_jinja_compile(tmpl, strlen(tmpl), &t, err);
    if (*st) return NULL;
    json_error_t je;
    json_t *vars = json_loads(vars_json ? vars_json : "{}", 0, &je);
    CHECKF(vars != NULL, "bad test JSON: %s", je.text);
    char *out = NULL;
    struct sprig_jinja_limits l = { .now = 1700000000 };
    if (lim) l = *lim;
    *st = sprig_jinja_render(t, vars, &l, &out, NULL, err);
    json_decref(vars);
    sprig_jinja_free(t);
    return out;
}

static void expect(const char *tmpl, const char *vars, const char *want)
{
    sprig_error err = { 0 };
    sprig_status st;
    char *got = render(tmpl, vars, &st, &err, NULL);
    CHECKF(st == SPRIG_OK && got && !strcmp(got, want), "template %s\n    want [%s]\n    got  [%s] %s", tmpl, want, got ? got : "(null)",
           st ? err.msg : "");
    free(got);
}

static void expect_error(const char *tmpl, const char *vars, sprig_status want_st, const char *needle)
{
    sprig_error err = { 0 };
    sprig_status st;
    char *got = render(tmpl, vars, &st, &err, NULL);
    CHECKF(st == want_st && strstr(err.msg, needle), "template %s: want status %d with '%s'; got %d: %s", tmpl, (int)want_st, needle,
           (int)st, err.msg);
    free(got);
}

static void test_constructs(void)
{
    const char *msgs = "{\"messages\":[{\"role\":\"system\",\"content\":\" sys \"},{\"role\":\"user\",\"content\":\"hi\"},"
                       "{\"role\":\"assistant\",\"content\":\"yo\"},{\"role\":\"user\",\"content\":\"again\"}],\"n\":3}";
    /* output, whitespace control, trim_blocks / lstrip_blocks, the trailing newline */
    expect("a {{ 1 + 2 }} b\n", NULL, "a 3 b");
    expect("a  {{- 'x' -}}  b", NULL, "axb");
    expect("{% if true %}\nyes\n{% endif %}\nz", NULL, "yes\nz");
    expect("  {% if true %}x{% endif %}", NULL, "x");
    expect("a {#- c -#} b", NULL, "ab");
    expect("a {# c #}\nb", NULL, "a b");
    /* loops, loop.*, else, filters, break / continue */
    expect("{% for m in messages %}{{ loop.index }}{{ m.role[0] }}{% if not loop.last %},{% endif %}{% endfor %}", msgs, "1s,2u,3a,4u");
    expect("{% for m in messages if m.role == 'user' %}{{ loop.index0 }}/{{ loop.length }}{% endfor %}", msgs, "0/21/2");
    expect("{% for x in [] %}x{% else %}empty{% endfor %}", NULL, "empty");
    expect("{% for x in range(5) %}{% if x == 3 %}{% break %}{% endif %}{% if x == 1 %}{% continue %}{% endif %}{{ x }}{% endfor %}", NULL, "02");
    expect("{% for k, v in {'a': 1, 'b': 2}.items() %}{{ k }}={{ v }};{% endfor %}", NULL, "a=1;b=2;");
    /* scoping: a set in a loop does not leak; a namespace carries it out */
    expect("{% set x = 1 %}{% for i in [1, 2] %}{% set x = x + i %}{% endfor %}{{ x }}", NULL, "1");
    expect("{% set ns = namespace(x=1) %}{% for i in [1, 2] %}{% set ns.x = ns.x + i %}{% endfor %}{{ ns.x }}", NULL, "4");
    expect("{% set s %}in {{ 'block' }}{% endset %}[{{ s }}]", NULL, "[in block]");
    expect("{% set a, b = [1, 2] %}{{ b }}{{ a }}", NULL, "21");
    /* macros */
    expect("{% macro f(a, b=2) %}[{{ a }}-{{ b }}]{% endmacro %}{{ f(1) }}{{ f(1, b=5) }}{{ f(b=7, a=0) }}", NULL, "[1-2][1-5][0-7]");
    /* expressions: Python's arithmetic (floor division, modulo sign), precedence, ternaries, in / not in */
    expect("{{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % -3 }} {{ 2 ** 10 }} {{ 10 / 4 }} {{ 1 + 2 * 3 }} {{ (1 + 2) * 3 }}", NULL, "3 -4 -2 1024 2.5 7 9");
    expect("{{ 'a' if n > 2 else 'b' }}{{ 'c' if n < 2 }}|{{ 'x' in 'xyz' }}{{ 2 not in [1, 2] }}{{ 'k' in {'k': 1} }}", msgs, "a|TrueFalseTrue");
    expect("{{ 'a' ~ 1 ~ none }} {{ [1] + [2] }} {{ 'ab' * 2 }} {{ n is not none and n is number }}", msgs, "a1None [1, 2] abab True");
    expect("{{ true and 'x' }}{{ false or 0 or 'y' }}{{ not '' }}", NULL, "xyTrue");
    /* strings: Python's methods, slicing by code point (Python's strip(chars); @huggingface/jinja ignores the argument) */
    expect("{{ '  x \\n'.strip() }}|{{ 'xxhixx'.strip('x') }}|{{ '\\n\\nhi'.lstrip('\\n') }}|{{ 'a,b,,c'.split(',') }}|{{ ' a  b '.split() }}", NULL,
           "x|hi|hi|['a', 'b', '', 'c']|['a', 'b']");
    expect("{{ 'héllo'[1:3] }}{{ 'abc'[-1] }}{{ 'abc'[::-1] }}{{ [1, 2, 3][1:] }}", NULL, "élccba[2, 3]");
    expect("{{ 'Hello World'.startswith('Hell') }}{{ 'x.py'.endswith(('.c', '.py')) }}{{ 'a-b'.replace('-', '+') }}{{ 'ab'.upper() }}", NULL,
           "TrueTruea+bAB");
    expect("{{ 'hello world'.title() }}|{{ 'hello World' | capitalize }}|{{ 'x' | upper }}", NULL, "Hello World|Hello world|X");
    /* filters */
    expect("{{ messages | length }} {{ messages | selectattr('role', 'equalto', 'user') | map(attribute='content') | join('|') }}", msgs,
           "4 hi|again");
    expect("{{ messages | rejectattr('role', 'in', ['system', 'user']) | list | length }} {{ messages[0].content | trim }}", msgs, "1 sys");
    expect("{{ undefined_thing | default('d') }} {{ '' | default('e', true) }} {{ (messages | first).attr_missing is defined }}", msgs,
           "d e False");
    expect("{{ {'a': [1, 2.5, none, true], 'b': 'é\\n\"'} | tojson }}", NULL, "{\"a\": [1, 2.5, null, true], \"b\": \"é\\n\\\"\"}");
    expect("{{ {'a': [1]} | tojson(indent=2) }}", NULL, "{\n  \"a\": [\n    1\n  ]\n}");
    expect("{{ [3, 1, 3] | unique | list }} {{ [1, 2] | sum }} {{ 'a\\nb' | indent(2) }} {{ -3 | abs }} {{ '5' | int + 1 }}", NULL,
           "[3, 1] 3 a\n  b 3 6");
    /* tests */
    expect("{{ x is defined }}{{ none is none }}{{ 'a' is string }}{{ {} is mapping }}{{ [1] is iterable }}{{ 4 is divisibleby 2 }}", NULL,
           "FalseTrueTrueTrueTrueTrue");
    /* filter blocks */
    expect("{%- filter trim | upper -%}\n  ab {{ 'c' }}\n{%- endfilter %}!", NULL, "AB C!");
    /* globals (defined as names, as transformers' environment has them) */
    expect("{{ strftime_now is defined }}{{ range is defined }}{{ nosuch is defined }}", NULL, "TrueTrueFalse");
    expect("{{ range(2, 8, 3) | list }} {{ strftime_now('%Y') }} {{ dict(a=1).a }}", NULL, "[2, 5] 2023 1");
    /* call blocks (caller, with and without parameters), spread arguments, any callable expression */
    expect("{% macro w(x) %}<{{ caller() }}|{{ x }}>{% endmacro %}{% set y = 'in' %}{% call w(1) %}body {{ y }}{% endcall %}", NULL, "<body in|1>");
    expect("{% macro m() %}{% for i in [1, 2] %}{{ caller(i) }}{% endfor %}{% endmacro %}{% call(n) m() %}[{{ n }}]{% endcall %}", NULL, "[1][2]");
    expect("{% macro f(a, b) %}{{ a }}-{{ b }}{% endmacro %}{% set fs = [f] %}{{ fs[0](*[1, 2]) }}", NULL, "1-2");
    /* tojson's separators; dict keys other than strings (json.dumps writes them as strings) */
    expect("{{ {'a': [1, 2], 3: none} | tojson(separators=(',', ':')) }} {{ {0: 'x', 512: 'y'}[512] }} {{ {1: 2} }}", NULL,
           "{\"a\":[1,2],\"3\":null} y {1: 2}");
    expect("{% for k, v in {2: 'b', 1: 'a'} | dictsort %}{{ k }}{{ v }}{% endfor %}", NULL, "1a2b");
    /* str.format, min / max (case-insensitive), select over a string and over none, failed subscripts undefined */
    expect("{{ '<{}|{}|{name}>{{x}}'.format('a', 'b', name='c') }}{{ '{1}{0}'.format('a', 'b') }}", NULL, "<a|b|c>{x}ba");
    expect("{{ [3, 1, 2] | min }}{{ [3, 1, 2] | max }}{{ ['b', 'A'] | min }}{{ [] | max is defined }}", NULL, "13AFalse");
    expect("{{ 'ab' | select('equalto', 'b') | list }}{{ none | selectattr('x') | list }}{{ 'abc'['x'] is defined }}{{ [1][5] is defined }}",
           NULL, "['b'][]FalseFalse");
    /* Markup: safe + str escapes the str (functionary v3.1 relies on it), ~ does not; escape */
    expect("{{ '<b>' | safe + '<i>' }} {{ '<' ~ ('&' | safe) }} {{ '\"x\"' | e }}", NULL, "<b>&lt;i&gt; <& &#34;x&#34;");
    /* \r\n and \r read as \n, in text and in string literals */
    expect("a\r\nb{{ 'c\r\nd' }}\r\n", NULL, "a\nbc\nd");
    /* values as Python prints them */
    expect("{{ none }} {{ true }} {{ 1.0 }} {{ 0.1 + 0.2 }} {{ 10.0 ** 21 }} {{ {'a': 'b'} }}", NULL,
           "None True 1.0 0.30000000000000004 1e+21 {'a': 'b'}");
}

static void test_refusals(void)
{
    expect_error("ok\n{% include 'x' %}", NULL, SPRIG_E_FORMAT, "2:4: the statement 'include' is not supported");
    expect_error("{% extends 'base' %}", NULL, SPRIG_E_FORMAT, "1:4: the statement 'extends' is not supported");
    expect_error("{% call f() %}x{% endcall %}", NULL, SPRIG_E_FORMAT, "a call block calls a macro, not undefined");
    expect_error("{% call 1 + 2 %}x{% endcall %}", NULL, SPRIG_E_FORMAT, "1:9: a call block calls a macro");
    expect_error("{{ '{}{0}'.format(1) }}", NULL, SPRIG_E_FORMAT, "cannot switch between {} and {N} numbering");
    expect_error("{{ '{:>4}'.format(1) }}", NULL, SPRIG_E_FORMAT, "format specs and conversions are not supported");
    expect_error("{% macro f(a) %}{% endmacro %}{{ f(*3) }}", NULL, SPRIG_E_FORMAT, "only a list can be spread");
    expect_error("{% if x %}open", NULL, SPRIG_E_FORMAT, "ends before '{% endif %}'");
    expect_error("{{ 1 + }}", NULL, SPRIG_E_FORMAT, "1:8");
    expect_error("{{ 'unclosed }}", NULL, SPRIG_E_FORMAT, "not closed");
    expect_error("{{ x | nosuchfilter }}", NULL, SPRIG_E_FORMAT, "unknown filter 'nosuchfilter'");
    expect_error("{{ raise_exception('Conversation roles must alternate user/assistant') }}", NULL, SPRIG_E_INVALID_ARG,
                 "raised: Conversation roles must alternate user/assistant");
    expect_error("{{ 1 // 0 }}", NULL, SPRIG_E_FORMAT, "division by zero");
    /* limits: output, steps, macro recursion, nesting */
    struct sprig_jinja_limits small = { .max_output = 1000, .now = 1 };
    sprig_error err = { 0 };
    sprig_status st;
    char *out = render("{% for i in range(1000) %}0123456789{% endfor %}", NULL, &st, &err, &small);
    CHECKF(st == SPRIG_E_FORMAT && strstr(err.msg, "output limit (1000 bytes)"), "%s", err.msg);
    free(out);
    struct sprig_jinja_limits steps = { .max_steps = 500, .now = 1 };
    out = render("{% for i in range(100) %}{% for j in range(100) %}{% endfor %}{% endfor %}", NULL, &st, &err, &steps);
    CHECKF(st == SPRIG_E_FORMAT && strstr(err.msg, "step limit"), "%s", err.msg);
    free(out);
    out = render("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}", NULL, &st, &err, NULL);
    CHECKF(st == SPRIG_E_FORMAT && strstr(err.msg, "nest deeper than the limit (64)"), "%s", err.msg);
    free(out);
    char deep[2000];
    size_t k = 0;
    k += (size_t)snprintf(deep + k, sizeof deep - k, "{{ ");
    for (int i = 0; i < 300; i++) deep[k++] = '(';
    deep[k++] = '1';
    for (int i = 0; i < 300; i++) deep[k++] = ')';
    snprintf(deep + k, sizeof deep - k, " }}");
    out = render(deep, NULL, &st, &err, NULL);
    CHECKF(st == SPRIG_E_FORMAT && strstr(err.msg, "nest deeper than 200"), "%s", err.msg);
    free(out);
}

/* a reference script's JSON (node, tests/ref/node_modules); NULL when they are missing (a skip, or a
 * failure under SPRIG_REQUIRE_REF=1) or the script fails */
static json_t *reference(const char *script)
{
    const bool require = getenv("SPRIG_REQUIRE_REF") && !strcmp(getenv("SPRIG_REQUIRE_REF"), "1");
    if (!test_file_exists("tests/ref/node_modules/@huggingface/jinja/package.json") || system("node --version >/dev/null 2>&1") != 0) {
        if (require) CHECKF(0, "SPRIG_REQUIRE_REF=1 but node or tests/ref/node_modules is missing");
        else fprintf(stderr, "  SKIP: node or tests/ref/node_modules missing (cd tests/ref && npm ci)\n");
        return NULL;
    }
    char cmd[512];
    snprintf(cmd, sizeof cmd, "node %s", script);
    FILE *p = popen(cmd, "r");
    json_error_t je;
    json_t *root = p ? json_loadf(p, 0, &je) : NULL;
    const int rc = p ? pclose(p) : -1;
    CHECKF(rc == 0 && root, "%s failed (status %d)", script, rc);
    if (rc != 0 && root) {
        json_decref(root);
        root = NULL;
    }
    return root;
}

/* the shipped families' real templates against @huggingface/jinja (Python's strip for Qwen 3) */
static void test_real_templates(void)
{
    json_t *root = reference("tests/ref/render-chat.mjs");
    if (!root) return;
    size_t fi, ci;
    json_t *fam, *c;
    int total = 0, same = 0;
    json_array_foreach(json_object_get(root, "families"), fi, fam) {
        const char *name = json_string_value(json_object_get(fam, "family"));
        json_t *jt = json_object_get(fam, "template");
        sprig_error err = { 0 };
        sprig_jinja *t = NULL;
        CHECKF(sprig_jinja_compile(json_string_value(jt), json_string_length(jt), &t, &err) == SPRIG_OK, "%s: %s", name, err.msg);
        if (!t) continue;
        json_array_foreach(json_object_get(fam, "cases"), ci, c) {
            json_t *vars = json_pack("{s:O,s:O,s:O,s:O}", "messages", json_object_get(c, "messages"), "add_generation_prompt",
                                     json_object_get(c, "add_generation_prompt"), "bos_token", json_object_get(fam, "bos_token"),
                                     "eos_token", json_object_get(fam, "eos_token"));
            char *got = NULL;
            const struct sprig_jinja_limits lim = { .now = 1700000000 };
            const sprig_status st = sprig_jinja_render(t, vars, &lim, &got, NULL, &err);
            const char *want = json_string_value(json_object_get(c, "expected"));
            total++;
            const bool ok = st == SPRIG_OK && want && !strcmp(got, want);
            same += ok;
            CHECKF(ok, "%s / %s: %s\n    want [%s]\n    got  [%s]", name, json_string_value(json_object_get(c, "name")),
                   st ? err.msg : "differs", want ? want : "", got ? got : "");
            free(got);
            json_decref(vars);
        }
        sprig_jinja_free(t);
    }
    fprintf(stderr, "  %d of %d renderings of the shipped families' templates equal the reference\n", same, total);
    CHECK(total >= 80);
    json_decref(root);
}

/* A Python with Jinja2 (Python's meaning wins where @huggingface/jinja differs): "python3" or Debian's. */
static const char *python_with_jinja2(void)
{
    static const char *const cand[] = { "python3", "/usr/bin/python3" };
    for (int i = 0; i < 2; i++) {
        char cmd[128];
        snprintf(cmd, sizeof cmd, "%s -c 'import jinja2' >/dev/null 2>&1", cand[i]);
        if (system(cmd) == 0) return cand[i];
    }
    return NULL;
}

/* tests/data/chat-templates (129 real templates) x 8 conversations against two references: Python's Jinja2 as
 * transformers configures it (tests/ref/render-templates-jinja2.py) and @huggingface/jinja
 * (tests/ref/render-templates.mjs). Where Python renders, sprig must render the same bytes (where
 * @huggingface/jinja differs, Python wins: those cases are counted and named); where the template raises its own
 * exception, sprig must raise the same message; where Python fails otherwise (a Python-only failure such as
 * json.dumps of a generator, or a type error such as str + dict) and @huggingface/jinja renders, sprig must
 * render its bytes or fail too; where neither renders, the case is counted, not compared. */
static void test_corpus(void)
{
    const char *py = python_with_jinja2();
    if (!py) {
        if (getenv("SPRIG_REQUIRE_REF") && !strcmp(getenv("SPRIG_REQUIRE_REF"), "1")) CHECKF(0, "SPRIG_REQUIRE_REF=1 but no python3 imports jinja2");
        else fprintf(stderr, "  SKIP: no python3 with jinja2 (apt-get install python3-jinja2)\n");
        return;
    }
    char script[256];
    snprintf(script, sizeof script, "tests/ref/render-templates.mjs | %s tests/ref/render-templates-jinja2.py", py);
    json_t *root = reference(script);
    if (!root) return;
    size_t ti, ci;
    json_t *tj, *c;
    int n_tmpl = 0, compiled = 0, total = 0, equal_py = 0, py_over_hf = 0, raised_same = 0, equal_hf = 0, fail_as_py = 0, neither = 0;
    json_array_foreach(json_object_get(root, "templates"), ti, tj) {
        const char *file = json_string_value(json_object_get(tj, "file"));
        char path[512];
        snprintf(path, sizeof path, "tests/data/chat-templates/%s", file);
        FILE *f = fopen(path, "rb");
        char *text = NULL;
        size_t n = 0;
        if (f) {
            fseek(f, 0, SEEK_END);
            const long len = ftell(f);
            fseek(f, 0, SEEK_SET);
            text = malloc((size_t)len + 1);
            n = text ? fread(text, 1, (size_t)len, f) : 0;
            fclose(f);
        }
        n_tmpl++;
        sprig_error err = { 0 };
        sprig_jinja *t = NULL;
        const bool ok = text && sprig_jinja_compile(text, n, &t, &err) == SPRIG_OK;
        CHECKF(ok, "%s: %s", file, err.msg);
        compiled += ok;
        free(text);
        if (!ok) continue;
        json_array_foreach(json_object_get(tj, "cases"), ci, c) {
            const char *conv = json_string_value(json_object_get(c, "name"));
            const char *want_py = json_string_value(json_object_get(c, "python"));
            const char *want_hf = json_string_value(json_object_get(c, "expected"));
            const char *py_err = json_string_value(json_object_get(c, "python_error"));
            const bool py_raised = json_is_true(json_object_get(c, "python_raised"));
            char *got = NULL;
            const struct sprig_jinja_limits lim = { .now = 1700000000 };
            const sprig_status st = sprig_jinja_render(t, json_object_get(c, "vars"), &lim, &got, NULL, &err);
            const char *raised = st == SPRIG_E_INVALID_ARG ? strstr(err.msg, "raised: ") : NULL;
            total++;
            if (want_py) {
                const bool same = st == SPRIG_OK && !strcmp(got, want_py);
                equal_py += same;
                CHECKF(same, "%s / %s: %s\n    want [%.300s]\n    got  [%.300s]", file, conv, st ? err.msg : "differs", want_py, got ? got : "");
                if (want_hf && strcmp(want_hf, want_py)) {
                    py_over_hf++;
                    fprintf(stderr, "  Python's Jinja2 and @huggingface/jinja differ, Python's rendering kept: %s / %s\n", file, conv);
                }
            } else if (py_raised) {
                const bool same = raised && py_err && strstr(py_err, raised + 8);
                raised_same += same;
                CHECKF(same, "%s / %s: the template raises (%s); sprig: %s", file, conv, py_err, st ? err.msg : "rendered");
            } else if (want_hf) {
                const bool same = st == SPRIG_OK && !strcmp(got, want_hf);
                equal_hf += same;
                fail_as_py += st != SPRIG_OK;
                CHECKF(same || st != SPRIG_OK, "%s / %s: Python fails (%s); sprig's rendering differs from @huggingface/jinja's\n    want [%.300s]\n"
                       "    got  [%.300s]", file, conv, py_err, want_hf, got ? got : "");
                if (st != SPRIG_OK) fprintf(stderr, "  fails as Python's Jinja2 does (%s; sprig: %s): %s / %s\n", py_err, err.msg, file, conv);
            } else neither++;
            free(got);
        }
        sprig_jinja_free(t);
    }
    fprintf(stderr, "  corpus: %d templates, %d compile; %d renderings: %d equal Python's Jinja2 (%d of them where @huggingface/jinja "
            "differs), %d raise the template's own exception as Python does, %d equal @huggingface/jinja where Python fails, %d fail "
            "as Python does where @huggingface/jinja renders, %d rendered by neither reference\n",
            n_tmpl, compiled, total, equal_py, py_over_hf, raised_same, equal_hf, fail_as_py, neither);
    CHECK(n_tmpl >= 129 && total >= 1032 && equal_py >= 950);
    json_decref(root);
}

int main(void)
{
    RUN(test_constructs);
    RUN(test_refusals);
    RUN(test_real_templates);
    RUN(test_corpus);
    return test_summary("test-jinja");
}
