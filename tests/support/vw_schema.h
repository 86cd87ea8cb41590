/* vw_schema.h — a small JSON Schema (draft 2020-12) validator for the subset
 * schemas/<name>.schema.json use, so tests validate real output without Python.
 *
 * Supported keywords: type (name or list; "integer" accepts integral reals as
 * the spec says), enum, const, properties, required, additionalProperties
 * (boolean or schema), items (one schema), minItems, maxItems, minProperties,
 * maxProperties, minLength (code points), minimum, maximum (numbers only),
 * anyOf, oneOf, $ref ("#" or "#/$defs/<name>"), boolean schemas. Annotations
 * ($schema, $id, title, description, $comment, $defs, default, examples) are
 * ignored. Any other keyword is an error (vw_schema_check), which keeps the
 * schemas inside what this validator really checks. enum/const compare numbers
 * by value (1 equals 1.0), everything else with json_equal.
 *
 * Ownership: everything is borrowed. Thread-safety: pure functions.
 * Errors: false with a message naming the instance path (JSON pointer) and the
 * keyword that failed; messages are truncated to cap.
 */
#ifndef VW_SCHEMA_H
#define VW_SCHEMA_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/* true when instance is valid against root (a whole schema document). */
bool vw_schema_validate(const json_t *root, const json_t *instance, char *msg, size_t cap);

/* true when root and every subschema use only the supported keywords and every
 * $ref resolves. */
bool vw_schema_check(const json_t *root, char *msg, size_t cap);

/* Loads schemas/<name>.schema.json from the source tree (NULL on failure). */
json_t *vw_schema_load(const char *name);

#endif
