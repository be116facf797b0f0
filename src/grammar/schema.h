/*
 * grammar/schema — a JSON schema (OpenAI's response_format json_schema,
 * a tool's parameters, llama.cpp's --json-schema) as GBNF text that
 * grammar/gbnf compiles.
 *
 * The output is JSON as json.dumps writes it by default, with optional
 * whitespace between tokens (space ::= | " " | "\n" [ \t]{0,20}, as
 * llama.cpp's converter allows), so a model's own formatting fits.
 * Covered: type (one or a list), object (properties in their order,
 * required ones always, optional ones each optional; additionalProperties
 * false / true / a schema), array (items, prefixItems, minItems,
 * maxItems), string (minLength, maxLength, enum, const), integer (minimum
 * >= 0 drops the sign), number, boolean, null, enum and const of any
 * value, anyOf / oneOf, $ref to #/$defs/... or #/definitions/... (recursive
 * references allowed), and the empty schema (any JSON value).
 * Refused, naming the keyword and where it is (e.g. "schema
 * properties.date: 'pattern' is not supported"): pattern, allOf, not,
 * if/then/else, $ref elsewhere, bounds past 10,000, nesting past 64.
 * Numeric bounds other than minimum >= 0 on integers are not enforced
 * (the README says so).
 */
#ifndef SPRIG_GRAMMAR_SCHEMA_H
#define SPRIG_GRAMMAR_SCHEMA_H

#include "base/err.h"

#include <jansson.h>
#include <stdbool.h>

/* The GBNF text (malloc'd, NUL-terminated) of schema; NULL schema: any JSON object (json_object mode). */
sprig_status sprig_schema_to_gbnf(const json_t *schema, char **out, sprig_error *err);
/* The same as rule `name` (its other rules named name-...), for one grammar holding several schemas; the shared
 * rules (space, string, value, ...: sprig_schema_primitives) only when primitives is true. */
sprig_status sprig_schema_to_gbnf_rule(const json_t *schema, const char *name, bool primitives, char **out, sprig_error *err);
const char *sprig_schema_primitives(void);

#endif
