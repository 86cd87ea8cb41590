/* config_shape.c — the configuration's shape, from libyaml's events, before
 * its loader builds the document (see config_shape.h). Owns no state past one
 * call; never interprets a key (config.c does). */
#include "config_shape.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

/* What one anchor stands for once expanded. */
typedef struct anchor_def {
    char *name;
    uint64_t bytes; /* scalar bytes of the node, its aliases expanded */
    bool open;      /* a collection still being read: an alias to it is a cycle */
} anchor_def;

typedef struct shape {
    anchor_def anchors[VW_CONFIG_MAX_ALIASES];
    size_t n_anchors, n_aliases;
    uint64_t total;                            /* the document's expanded scalar bytes */
    uint64_t level[VW_CONFIG_MAX_DEPTH + 1];   /* bytes of each open collection */
    int level_anchor[VW_CONFIG_MAX_DEPTH + 1]; /* its anchor (index) or -1 */
} shape;

static vw_status shape_fail(const char *name, size_t line, const char *why, vw_err *err) {
    return VW_FAIL(err, VW_EINVAL, "config_invalid", "%s:%zu: YAML: %s", name, line, why);
}

/* Adds n expanded bytes at depth (0: the document), refusing past the bound. */
static vw_status shape_add(shape *s, int depth, uint64_t n, const char *name, size_t line,
                           vw_err *err) {
    s->total += n;
    if (depth > 0)
        s->level[depth] += n;
    if (s->total > VW_CONFIG_MAX_BYTES) {
        char why[160];
        snprintf(why, sizeof why, "the document expands past %d bytes (its aliases counted)",
                 VW_CONFIG_MAX_BYTES);
        return shape_fail(name, line, why, err);
    }
    return VW_OK;
}

/* Records an anchor (a later one of the same name hides the earlier). */
static vw_status shape_anchor(shape *s, const unsigned char *anchor, uint64_t bytes, bool open,
                              int *index, const char *name, size_t line, vw_err *err) {
    *index = -1;
    if (!anchor)
        return VW_OK;
    if (s->n_anchors == VW_CONFIG_MAX_ALIASES) {
        char why[160];
        snprintf(why, sizeof why, "more than %d anchors (a configuration needs none)",
                 VW_CONFIG_MAX_ALIASES);
        return shape_fail(name, line, why, err);
    }
    anchor_def *a = &s->anchors[s->n_anchors];
    if (!(a->name = strdup((const char *)anchor)))
        return VW_FAIL(err, VW_ENOMEM, "out_of_memory", "yaml anchor");
    a->bytes = bytes;
    a->open = open;
    *index = (int)s->n_anchors++;
    return VW_OK;
}

/* An alias: counted, and its anchor's bytes added where it stands. An alias
 * to an unknown anchor is left to the loader, which reports it. */
static vw_status shape_alias(shape *s, int depth, const unsigned char *anchor, const char *name,
                             size_t line, vw_err *err) {
    char why[160];
    if (++s->n_aliases > VW_CONFIG_MAX_ALIASES) {
        snprintf(why, sizeof why, "more than %d aliases (a configuration needs none)",
                 VW_CONFIG_MAX_ALIASES);
        return shape_fail(name, line, why, err);
    }
    for (size_t i = s->n_anchors; i-- > 0;) {
        if (strcmp(s->anchors[i].name, (const char *)anchor))
            continue;
        if (s->anchors[i].open) {
            snprintf(why, sizeof why, "alias *%.64s inside the node it names", anchor);
            return shape_fail(name, line, why, err);
        }
        return shape_add(s, depth, s->anchors[i].bytes, name, line, err);
    }
    return VW_OK;
}

vw_status vw_config_shape_check(const char *yaml, size_t len, const char *name, vw_err *err) {
    yaml_parser_t p;
    yaml_event_t ev;
    if (len > VW_CONFIG_MAX_BYTES)
        return VW_FAIL(err, VW_EINVAL, "config_invalid", "%s: larger than %d bytes", name,
                       VW_CONFIG_MAX_BYTES);
    if (!yaml_parser_initialize(&p))
        return VW_FAIL(err, VW_ENOMEM, "out_of_memory", "yaml parser");
    yaml_parser_set_input_string(&p, (const unsigned char *)yaml, len);
    shape *s = calloc(1, sizeof *s);
    vw_status st = s ? VW_OK : VW_FAIL(err, VW_ENOMEM, "out_of_memory", "yaml shape");
    int depth = 0;
    while (!st && yaml_parser_parse(&p, &ev)) {
        size_t line = ev.start_mark.line + 1;
        int idx = -1;
        switch (ev.type) {
        case YAML_SEQUENCE_START_EVENT:
        case YAML_MAPPING_START_EVENT:
            if (++depth > VW_CONFIG_MAX_DEPTH) {
                st = VW_FAIL(err, VW_EINVAL, "config_invalid",
                             "%s:%zu: YAML: nested deeper than %d levels (a configuration "
                             "needs 3)",
                             name, line, VW_CONFIG_MAX_DEPTH);
                break;
            }
            s->level[depth] = 0;
            st = shape_anchor(s,
                              ev.type == YAML_SEQUENCE_START_EVENT ? ev.data.sequence_start.anchor
                                                                   : ev.data.mapping_start.anchor,
                              0, true, &idx, name, line, err);
            s->level_anchor[depth] = idx;
            break;
        case YAML_SEQUENCE_END_EVENT:
        case YAML_MAPPING_END_EVENT:
            if (depth > 0) {
                uint64_t bytes = s->level[depth];
                if (s->level_anchor[depth] >= 0) {
                    s->anchors[s->level_anchor[depth]].bytes = bytes;
                    s->anchors[s->level_anchor[depth]].open = false;
                }
                depth--;
                if (depth > 0)
                    s->level[depth] += bytes; /* already in the total */
            }
            break;
        case YAML_SCALAR_EVENT:
            st = shape_add(s, depth, ev.data.scalar.length, name, line, err);
            if (!st)
                st = shape_anchor(s, ev.data.scalar.anchor, ev.data.scalar.length, false, &idx,
                                  name, line, err);
            break;
        case YAML_ALIAS_EVENT:
            st = shape_alias(s, depth, ev.data.alias.anchor, name, line, err);
            break;
        default:
            break;
        }
        yaml_event_type_t t = ev.type;
        yaml_event_delete(&ev);
        if (t == YAML_DOCUMENT_END_EVENT || t == YAML_STREAM_END_EVENT)
            break; /* only the first document is loaded */
    }
    for (size_t i = 0; s && i < s->n_anchors; i++)
        free(s->anchors[i].name);
    free(s);
    yaml_parser_delete(&p);
    return st;
}
