/* config.c — YAML configuration loader (see config.h). Owns the parse; never
 * opens Kafka connections (librdkafka properties are only checked against a
 * scratch rd_kafka_conf_t so typos fail at start-up with their line). */
#include "config.h"
#include "config_paths.h"
#include "device.h"
#include "metrics.h"
#include "model/bundle.h"

#include <ctype.h>
#include <errno.h>
#include <librdkafka/rdkafka.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

typedef enum ftype { F_STR, F_INT, F_LIST, F_ENUM } ftype;

typedef struct field {
    const char *section, *key;
    ftype type;
    size_t off;
    int64_t lo, hi;             /* F_INT range */
    const char *const *choices; /* F_ENUM: stored as int index; F_STR: allowed values */
} field;

/* model.device: the names vw_device_parse accepts (cuda:N for any ordinal),
 * plus the test-only processor; this list is what an error message shows. */
static const char *const devices[] = {"auto", "cpu", "cuda", "cuda:N", "test-echo", NULL};
static const char *const precisions[] = {"auto", "fp32", "bf16", "bf16x2", NULL};
static const char *const levels[] = {"debug", "info", "warn", "error", "off", NULL};
static const char *const formats[] = {"json", "text", NULL};
static const char *const modes[] = {"at_least_once", "exactly_once", NULL};

#define OFF(member) offsetof(vw_config, member)
static const field fields[] = {
    {"topics", "input", F_STR, OFF(topics.input), 0, 0, NULL},
    {"topics", "results", F_STR, OFF(topics.results), 0, 0, NULL},
    {"topics", "dlq", F_STR, OFF(topics.dlq), 0, 0, NULL},
    {"topics", "reply_allow", F_LIST, OFF(topics.reply_allow), 0, 0, NULL},
    {"model", "bundle", F_STR, OFF(model.bundle), 0, 0, NULL},
    {"model", "device", F_STR, OFF(model.device), 0, 0, devices},
    {"model", "precision", F_STR, OFF(model.precision), 0, 0, precisions},
    {"model", "manifest_sha256", F_STR, OFF(model.manifest_sha256), 0, 0, NULL},
    {"model", "cpu_threads", F_INT, OFF(model.cpu_threads), 0, 256, NULL},
    {"batching", "max_tokens", F_INT, OFF(batching.max_tokens), 1, 100000000, NULL},
    {"batching", "max_requests", F_INT, OFF(batching.max_requests), 1, 1000000, NULL},
    {"batching", "max_wait_ms", F_INT, OFF(batching.max_wait_ms), 0, 600000, NULL},
    {"processing", "threads", F_INT, OFF(processing.threads), 0, 1024, NULL},
    {"limits", "max_request_bytes", F_INT, OFF(limits.max_request_bytes), 1, 1000000000, NULL},
    {"limits", "max_in_flight", F_INT, OFF(limits.max_in_flight), 1, 10000000, NULL},
    {"limits", "max_request_tokens", F_INT, OFF(limits.max_request_tokens), 0, 1000000000, NULL},
    {"limits", "slow_record_ms", F_INT, OFF(limits.slow_record_ms), 0, 3600000, NULL},
    {"delivery", "mode", F_ENUM, OFF(delivery.mode), 0, 0, modes},
    {"delivery", "commit_interval_ms", F_INT, OFF(delivery.commit_interval_ms), 1, 600000, NULL},
    {"delivery", "retry_backoff_ms", F_INT, OFF(delivery.retry_backoff_ms), 1, 600000, NULL},
    {"delivery", "retry_backoff_max_ms", F_INT, OFF(delivery.retry_backoff_max_ms), 1, 3600000,
     NULL},
    {"delivery", "revoke_wait_ms", F_INT, OFF(delivery.revoke_wait_ms), 0, 600000, NULL},
    {"delivery", "start_timeout_ms", F_INT, OFF(delivery.start_timeout_ms), 0, 3600000, NULL},
    {"delivery", "transactional_id_prefix", F_STR, OFF(delivery.transactional_id_prefix), 0, 0,
     NULL},
    {"delivery", "worker_id", F_STR, OFF(delivery.worker_id), 0, 0, NULL},
    {"metrics", "listen", F_STR, OFF(metrics.listen), 0, 0, NULL},
    {"metrics", "stats_interval_ms", F_INT, OFF(metrics.stats_interval_ms), 0, 3600000, NULL},
    {"log", "level", F_ENUM, OFF(log.level), 0, 0, levels},
    {"log", "format", F_ENUM, OFF(log.format), 0, 0, formats},
    {"shutdown", "grace_ms", F_INT, OFF(shutdown.grace_ms), 0, 3600000, NULL},
};
#define N_FIELDS (sizeof fields / sizeof fields[0])

/* Properties the worker's delivery rule depends on: a user may restate them but
 * not change them (docs/worker.md "Configuration"); why: the reason given. */
#define DELIVERY_RULE "the worker's delivery rule needs the default"
static const struct {
    const char *key;
    const char *const allowed[3];
    const char *why;
} pinned[] = {
    {"enable.auto.commit", {"false", NULL}, DELIVERY_RULE},
    {"enable.auto.offset.store", {"false", NULL}, DELIVERY_RULE},
    {"enable.idempotence", {"true", NULL}, DELIVERY_RULE},
    {"acks", {"all", "-1", NULL}, DELIVERY_RULE},
    /* The consumer's; librdkafka's default, set by the worker too (source_conf.c). */
    {"isolation.level",
     {"read_committed", NULL},
     "must be read_committed: with read_uncommitted the records of aborted transactions on the "
     "input would be answered"},
};

typedef struct parse_ctx {
    vw_config *cfg;
    const char *name;
    bool seen[N_FIELDS];
    int line[N_FIELDS]; /* where each field was set: as bad() takes it (0: environment) */
    int *item_line;     /* [n_reply_allow] lines of a YAML list's entries; NULL otherwise */
    vw_err *err;
} parse_ctx;

/* line > 0: a file position; 0: an environment variable; < 0: the file as a whole. */
static vw_status bad(parse_ctx *c, int line, const char *what, const char *why) {
    if (line < 0)
        return VW_FAIL(c->err, VW_EINVAL, "config_invalid", "%s: %s: %s", c->name, what, why);
    if (line > 0)
        return VW_FAIL(c->err, VW_EINVAL, "config_invalid", "%s:%d: %s: %s", c->name, line, what,
                       why);
    return VW_FAIL(c->err, VW_EINVAL, "config_invalid", "%s (environment): %s", what, why);
}

static char **str_slot(vw_config *cfg, const field *f) {
    return (char **)((char *)cfg + f->off);
}

static vw_status set_string(char **slot, const char *v, vw_err *err) {
    char *copy = strdup(v);
    if (!copy)
        return VW_FAIL(err, VW_ENOMEM, "out_of_memory", "config string");
    free(*slot);
    *slot = copy;
    return VW_OK;
}

static vw_status list_add(char ***items, size_t *n, const char *v, vw_err *err) {
    char **grown = realloc(*items, (*n + 1) * sizeof *grown);
    if (!grown)
        return VW_FAIL(err, VW_ENOMEM, "out_of_memory", "config list");
    *items = grown;
    grown[*n] = strdup(v);
    if (!grown[*n])
        return VW_FAIL(err, VW_ENOMEM, "out_of_memory", "config list");
    (*n)++;
    return VW_OK;
}

static void list_clear(char ***items, size_t *n) {
    for (size_t i = 0; i < *n; i++)
        free((*items)[i]);
    free(*items);
    *items = NULL;
    *n = 0;
}

static vw_status kv_add(vw_kvlist *l, const char *k, const char *v, int line, vw_err *err) {
    vw_kv *grown = realloc(l->items, (l->n + 1) * sizeof *grown);
    if (!grown)
        return VW_FAIL(err, VW_ENOMEM, "out_of_memory", "config kafka list");
    l->items = grown;
    vw_kv *kv = &grown[l->n];
    kv->key = strdup(k);
    kv->value = strdup(v);
    kv->line = line;
    l->n++;
    if (!kv->key || !kv->value)
        return VW_FAIL(err, VW_ENOMEM, "out_of_memory", "config kafka list");
    return VW_OK;
}

const char *vw_kvlist_get(const vw_kvlist *l, const char *key) {
    for (size_t i = l->n; i-- > 0;)
        if (!strcmp(l->items[i].key, key))
            return l->items[i].value;
    return NULL;
}

static void kv_free(vw_kvlist *l) {
    for (size_t i = 0; i < l->n; i++) {
        free(l->items[i].key);
        free(l->items[i].value);
    }
    free(l->items);
    l->items = NULL;
    l->n = 0;
}

/* "'x' is not one of a|b|c" into buf. */
static const char *choice_why(char *buf, size_t cap, const char *v, const char *const *choices) {
    int n = snprintf(buf, cap, "'%.64s' is not one of ", v);
    for (size_t i = 0; choices[i] && n > 0 && (size_t)n < cap; i++)
        n += snprintf(buf + n, cap - (size_t)n, "%s%s", i ? "|" : "", choices[i]);
    return buf;
}

/* Sets one typed field from text. what = "section.key" for messages. */
static vw_status set_field(parse_ctx *c, const field *f, const char *v, int line,
                           const char *what) {
    vw_config *cfg = c->cfg;
    char why[256];
    switch (f->type) {
    case F_STR:
        if (f->choices == devices) {
            if (strcmp(v, "test-echo") && vw_device_parse(v, NULL, NULL))
                return bad(c, line, what, choice_why(why, sizeof why, v, f->choices));
        } else if (f->choices) {
            size_t i = 0;
            while (f->choices[i] && strcmp(f->choices[i], v))
                i++;
            if (!f->choices[i])
                return bad(c, line, what, choice_why(why, sizeof why, v, f->choices));
        } else if (f->off == OFF(model.manifest_sha256) && *v && !vw_bundle_anchor_valid(v)) {
            return bad(c, line, what,
                       "expected the SHA-256 of MODEL_MANIFEST.json (64 hex digits)");
        } else if (f->off == OFF(metrics.listen) && *v) {
            vw_err lerr = {0};
            if (vw_metrics_check_listen(v, &lerr))
                return bad(c, line, what, lerr.msg);
        }
        return set_string(str_slot(cfg, f), v, c->err);
    case F_INT: {
        char *end = NULL;
        errno = 0;
        long long x = strtoll(v, &end, 10);
        if (!*v || *end || errno || x < f->lo || x > f->hi) {
            snprintf(why, sizeof why, "expected an integer in [%lld, %lld], got '%.64s'",
                     (long long)f->lo, (long long)f->hi, v);
            return bad(c, line, what, why);
        }
        *(int64_t *)((char *)cfg + f->off) = x;
        return VW_OK;
    }
    case F_ENUM:
        for (int i = 0; f->choices[i]; i++)
            if (!strcmp(f->choices[i], v)) {
                *(int *)((char *)cfg + f->off) = i;
                return VW_OK;
            }
        return bad(c, line, what, choice_why(why, sizeof why, v, f->choices));
    case F_LIST: {
        /* From the environment or a scalar: comma-separated. */
        list_clear(&cfg->topics.reply_allow, &cfg->topics.n_reply_allow);
        free(c->item_line);
        c->item_line = NULL;
        char *copy = strdup(v), *save = NULL;
        vw_status st = copy ? VW_OK : VW_FAIL(c->err, VW_ENOMEM, "out_of_memory", "config");
        for (char *t = copy ? strtok_r(copy, ",", &save) : NULL; t && !st;
             t = strtok_r(NULL, ",", &save))
            st = list_add(&cfg->topics.reply_allow, &cfg->topics.n_reply_allow, t, c->err);
        free(copy);
        return st;
    }
    }
    return VW_OK;
}

static const field *find_field(const char *section, const char *key) {
    for (size_t i = 0; i < N_FIELDS; i++)
        if (!strcmp(fields[i].section, section) && !strcmp(fields[i].key, key))
            return &fields[i];
    return NULL;
}

static bool known_section(const char *s) {
    if (!strcmp(s, "kafka"))
        return true;
    for (size_t i = 0; i < N_FIELDS; i++)
        if (!strcmp(fields[i].section, s))
            return true;
    return false;
}

static int line_of(const yaml_node_t *n) {
    return (int)n->start_mark.line + 1;
}

static const char *scalar(const yaml_node_t *n) {
    return n && n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value : NULL;
}

/* kafka.<prop>, kafka.consumer.<prop>, kafka.producer.<prop>: any scalar. */
static vw_status parse_kafka_map(parse_ctx *c, yaml_document_t *doc, const yaml_node_t *map,
                                 vw_kvlist *dst, const char *prefix, bool top) {
    char what[300];
    for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top;
         p++) {
        yaml_node_t *k = yaml_document_get_node(doc, p->key);
        yaml_node_t *v = yaml_document_get_node(doc, p->value);
        const char *key = scalar(k);
        if (!key)
            return bad(c, line_of(k), prefix, "keys must be scalars");
        snprintf(what, sizeof what, "%s.%s", prefix, key);
        if (top && (!strcmp(key, "consumer") || !strcmp(key, "producer"))) {
            if (v->type != YAML_MAPPING_NODE)
                return bad(c, line_of(v), what, "expected a mapping of librdkafka properties");
            vw_kvlist *sub = key[0] == 'c' ? &c->cfg->kafka.consumer : &c->cfg->kafka.producer;
            if (sub->n)
                return bad(c, line_of(k), what, "duplicate key");
            vw_status st = parse_kafka_map(c, doc, v, sub, what, false);
            if (st)
                return st;
            continue;
        }
        if (!scalar(v))
            return bad(c, line_of(v), what, "expected a scalar librdkafka property value");
        if (vw_kvlist_get(dst, key))
            return bad(c, line_of(k), what, "duplicate key");
        vw_status st = kv_add(dst, key, scalar(v), line_of(k), c->err);
        if (st)
            return st;
    }
    return VW_OK;
}

static vw_status parse_list_node(parse_ctx *c, yaml_document_t *doc, const yaml_node_t *v,
                                 const char *what) {
    vw_config *cfg = c->cfg;
    list_clear(&cfg->topics.reply_allow, &cfg->topics.n_reply_allow);
    size_t n = (size_t)(v->data.sequence.items.top - v->data.sequence.items.start);
    free(c->item_line);
    c->item_line = malloc((n ? n : 1) * sizeof *c->item_line);
    if (!c->item_line)
        return VW_FAIL(c->err, VW_ENOMEM, "out_of_memory", "config list");
    for (yaml_node_item_t *it = v->data.sequence.items.start; it < v->data.sequence.items.top;
         it++) {
        yaml_node_t *item = yaml_document_get_node(doc, *it);
        if (!scalar(item) || !*scalar(item))
            return bad(c, line_of(item), what, "expected a list of topic names");
        c->item_line[cfg->topics.n_reply_allow] = line_of(item);
        vw_status st =
            list_add(&cfg->topics.reply_allow, &cfg->topics.n_reply_allow, scalar(item), c->err);
        if (st)
            return st;
    }
    return VW_OK;
}

static vw_status parse_section(parse_ctx *c, yaml_document_t *doc, const char *section,
                               const yaml_node_t *map) {
    char what[300];
    for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top;
         p++) {
        yaml_node_t *k = yaml_document_get_node(doc, p->key);
        yaml_node_t *v = yaml_document_get_node(doc, p->value);
        const char *key = scalar(k);
        snprintf(what, sizeof what, "%s.%s", section, key ? key : "?");
        const field *f = key ? find_field(section, key) : NULL;
        if (!f)
            return bad(c, line_of(k), what, "unknown key");
        if (c->seen[f - fields])
            return bad(c, line_of(k), what, "duplicate key");
        c->seen[f - fields] = true;
        c->line[f - fields] = line_of(v);
        vw_status st;
        if (f->type == F_LIST && v->type == YAML_SEQUENCE_NODE)
            st = parse_list_node(c, doc, v, what);
        else if (!scalar(v))
            st = bad(c, line_of(v), what, "expected a scalar value");
        else
            st = set_field(c, f, scalar(v), line_of(v), what);
        if (st)
            return st;
    }
    return VW_OK;
}

static vw_status parse_root(parse_ctx *c, yaml_document_t *doc) {
    yaml_node_t *root = yaml_document_get_root_node(doc);
    if (!root)
        return VW_OK; /* empty document: defaults only */
    if (root->type != YAML_MAPPING_NODE)
        return bad(c, line_of(root), "(top level)", "expected a mapping of sections");
    bool kafka_seen = false;
    for (yaml_node_pair_t *p = root->data.mapping.pairs.start; p < root->data.mapping.pairs.top;
         p++) {
        yaml_node_t *k = yaml_document_get_node(doc, p->key);
        yaml_node_t *v = yaml_document_get_node(doc, p->value);
        const char *sec = scalar(k);
        if (!sec || !known_section(sec))
            return bad(c, line_of(k), sec ? sec : "?", "unknown section");
        if (v->type != YAML_MAPPING_NODE)
            return bad(c, line_of(v), sec, "expected a mapping");
        vw_status st;
        if (!strcmp(sec, "kafka")) {
            if (kafka_seen)
                return bad(c, line_of(k), sec, "duplicate section");
            kafka_seen = true;
            st = parse_kafka_map(c, doc, v, &c->cfg->kafka.common, "kafka", true);
        } else {
            st = parse_section(c, doc, sec, v);
        }
        if (st)
            return st;
    }
    return VW_OK;
}

/* "BOOTSTRAP_SERVERS" -> "bootstrap.servers" (librdkafka names use dots). */
static void env_to_prop(const char *src, char *dst, size_t cap) {
    size_t i = 0;
    for (; src[i] && i + 1 < cap; i++)
        dst[i] = src[i] == '_' ? '.' : (char)tolower((unsigned char)src[i]);
    dst[i] = 0;
}

void vw_config_env_name(const char *section, const char *key, char *dst, size_t cap) {
    int n = snprintf(dst, cap, "VELA_%s_%s", section, key);
    for (int i = 0; i < n && (size_t)i < cap; i++)
        dst[i] = dst[i] == '.' ? '_' : (char)toupper((unsigned char)dst[i]);
}

/* "max_tokens" under "batching" -> "VELA_BATCHING_MAX_TOKENS". */
static void field_env_name(const field *f, char *dst, size_t cap) {
    vw_config_env_name(f->section, f->key, dst, cap);
}

static vw_status apply_env_var(parse_ctx *c, const char *name, const char *value) {
    static const struct {
        const char *prefix;
        size_t list_off;
    } kafka_prefixes[] = {
        {"VELA_KAFKA_CONSUMER_", offsetof(vw_config, kafka.consumer)},
        {"VELA_KAFKA_PRODUCER_", offsetof(vw_config, kafka.producer)},
        {"VELA_KAFKA_", offsetof(vw_config, kafka.common)},
    };
    char prop[256], envname[128];
    for (size_t i = 0; i < sizeof kafka_prefixes / sizeof kafka_prefixes[0]; i++) {
        size_t pl = strlen(kafka_prefixes[i].prefix);
        if (!strncmp(name, kafka_prefixes[i].prefix, pl) && name[pl]) {
            env_to_prop(name + pl, prop, sizeof prop);
            vw_kvlist *l = (vw_kvlist *)((char *)c->cfg + kafka_prefixes[i].list_off);
            return kv_add(l, prop, value, 0, c->err);
        }
    }
    for (size_t i = 0; i < N_FIELDS; i++) {
        field_env_name(&fields[i], envname, sizeof envname);
        if (!strcmp(name, envname)) {
            c->line[i] = 0;
            return set_field(c, &fields[i], value, 0, name);
        }
    }
    /* Every VELA_* name is ours: a typo in the key or in the section fails
     * as it would in the file (VELA_BATCHNG_MAX_TOKENS was ignored). */
    for (size_t i = 0; i < N_FIELDS; i++) {
        field_env_name(&fields[i], envname, sizeof envname);
        size_t sl = 5 + strlen(fields[i].section) + 1;
        if (!strncmp(name, envname, sl))
            return bad(c, 0, name, "unknown key");
    }
    return bad(c, 0, name,
               "unknown section (VELA_<SECTION>_<KEY>: kafka, topics, model, "
               "batching, processing, limits, delivery, metrics, log, shutdown)");
}

static vw_status apply_env(parse_ctx *c, char *const *envp) {
    for (size_t i = 0; envp && envp[i]; i++) {
        const char *eq = strchr(envp[i], '=');
        if (!eq || strncmp(envp[i], "VELA_", 5))
            continue;
        char name[128];
        size_t nl = (size_t)(eq - envp[i]);
        if (nl >= sizeof name)
            continue;
        memcpy(name, envp[i], nl);
        name[nl] = 0;
        vw_status st = apply_env_var(c, name, eq + 1);
        if (st)
            return st;
    }
    return VW_OK;
}

/* librdkafka names the property it refused by its canonical name
 * ("queue.buffering.max.ms" for linger.ms, an alias): the reason is given
 * under the name the user wrote. The error came from setting that key alone,
 * so the quoted property is the key or its alias. */
static void user_name(char *errstr, size_t cap, const char *key) {
    static const char tag[] = "property \"";
    char *p = strstr(errstr, tag);
    if (!p)
        return;
    p += sizeof tag - 1;
    char *end = strchr(p, '"');
    if (!end || ((size_t)(end - p) == strlen(key) && !strncmp(p, key, (size_t)(end - p))))
        return;
    char rest[512];
    snprintf(rest, sizeof rest, "%s", end);
    snprintf(p, cap - (size_t)(p - errstr), "%s%s", key, rest);
}

/* Each property must be one librdkafka knows, with a value it accepts. */
static vw_status check_kafka_list(parse_ctx *c, const vw_kvlist *l, const char *prefix,
                                  rd_kafka_conf_t *conf) {
    char errstr[512], what[300];
    for (size_t i = 0; i < l->n; i++) {
        const vw_kv *kv = &l->items[i];
        if (kv->line == 0) /* an override: its variable */
            vw_config_env_name(prefix, kv->key, what, sizeof what);
        else
            snprintf(what, sizeof what, "%s.%s", prefix, kv->key);
        for (size_t j = 0; j < sizeof pinned / sizeof pinned[0]; j++) {
            if (strcmp(kv->key, pinned[j].key))
                continue;
            bool ok = false;
            for (size_t a = 0; pinned[j].allowed[a]; a++)
                ok = ok || !strcmp(kv->value, pinned[j].allowed[a]);
            if (!ok)
                return bad(c, kv->line, what, pinned[j].why);
        }
        if (!strcmp(kv->key, "transactional.id"))
            return bad(c, kv->line, what,
                       "the worker derives it (delivery.mode exactly_once: "
                       "delivery.transactional_id_prefix and delivery.worker_id)");
        if (rd_kafka_conf_set(conf, kv->key, kv->value, errstr, sizeof errstr) !=
            RD_KAFKA_CONF_OK) {
            user_name(errstr, sizeof errstr, kv->key);
            return bad(c, kv->line, what, errstr);
        }
    }
    return VW_OK;
}

/* A field's name as bad() shows it at `line`: its variable when the
 * environment set it (line 0), else "section.key". */
static const char *field_what(const field *f, int line, char *buf, size_t cap) {
    if (line == 0)
        field_env_name(f, buf, cap);
    else
        snprintf(buf, cap, "%s.%s", f->section, f->key);
    return buf;
}

/* Which of two fields that conflict an error names: one an override set
 * (the file alone was fine), then a set in the file, else b. */
static const field *culprit(const parse_ctx *c, const field *a, const field *b) {
    int la = c->line[a - fields], lb = c->line[b - fields];
    return la == 0 ? a : lb == 0 ? b : la > 0 ? a : b;
}

/* A topic the worker writes to that is also its input feeds the worker its
 * own output forever (one seed record became 18 in 12 s). The message names
 * where the output topic was set; one left at its default names the input. */
static vw_status check_loops(parse_ctx *c) {
    static const struct {
        const char *key, *fed;
    } outs[] = {{"results", "its own results"}, {"dlq", "its own dead letters"}};
    const vw_config *cfg = c->cfg;
    const field *in = find_field("topics", "input");
    char why[512], what[128];
    for (size_t i = 0; i < sizeof outs / sizeof outs[0]; i++) {
        const field *f = find_field("topics", outs[i].key);
        const char *topic = *str_slot(c->cfg, f);
        if (!topic || strcmp(topic, cfg->topics.input))
            continue;
        const field *at = culprit(c, f, in);
        int line = c->line[at - fields];
        snprintf(why, sizeof why,
                 "'%.128s' is both topics.input and topics.%s: the worker would consume %s "
                 "(a loop)",
                 topic, outs[i].key, outs[i].fed);
        return bad(c, line, field_what(at, line, what, sizeof what), why);
    }
    const field *ra = find_field("topics", "reply_allow");
    for (size_t i = 0; i < cfg->topics.n_reply_allow; i++) {
        if (strcmp(cfg->topics.reply_allow[i], cfg->topics.input))
            continue;
        int line = c->item_line ? c->item_line[i] : c->line[ra - fields];
        const field *at = ra;
        if (line != 0 && c->line[in - fields] == 0) /* VELA_TOPICS_INPUT made it a loop */
            at = in, line = 0;
        snprintf(why, sizeof why,
                 "'%.128s' is topics.input: a reply-topic header naming it would feed results "
                 "back to the worker (a loop)",
                 cfg->topics.reply_allow[i]);
        return bad(c, line, field_what(at, line, what, sizeof what), why);
    }
    return VW_OK;
}

static vw_status validate(parse_ctx *c) {
    vw_config *cfg = c->cfg;
    vw_status st = VW_OK;
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    if (!conf)
        return VW_FAIL(c->err, VW_ENOMEM, "out_of_memory", "rd_kafka_conf_new");
    st = check_kafka_list(c, &cfg->kafka.common, "kafka", conf);
    if (!st)
        st = check_kafka_list(c, &cfg->kafka.consumer, "kafka.consumer", conf);
    if (!st)
        st = check_kafka_list(c, &cfg->kafka.producer, "kafka.producer", conf);
    rd_kafka_conf_destroy(conf);
    if (st)
        return st;
    if (!vw_kvlist_get(&cfg->kafka.common, "bootstrap.servers") &&
        (!vw_kvlist_get(&cfg->kafka.consumer, "bootstrap.servers") ||
         !vw_kvlist_get(&cfg->kafka.producer, "bootstrap.servers")))
        return bad(c, -1, "kafka.bootstrap.servers", "required");
    if (!cfg->topics.input || !*cfg->topics.input)
        return bad(c, -1, "topics.input", "required");
    if (!*cfg->topics.results)
        return bad(c, -1, "topics.results", "must not be empty");
    if (!cfg->topics.dlq) {
        size_t n = strlen(cfg->topics.input) + 5;
        cfg->topics.dlq = malloc(n);
        if (!cfg->topics.dlq)
            return VW_FAIL(c->err, VW_ENOMEM, "out_of_memory", "config");
        snprintf(cfg->topics.dlq, n, "%s.dlq", cfg->topics.input);
    }
    if (cfg->delivery.retry_backoff_max_ms < cfg->delivery.retry_backoff_ms) {
        const field *mx = find_field("delivery", "retry_backoff_max_ms"),
                    *mn = find_field("delivery", "retry_backoff_ms");
        const field *at = culprit(c, mx, mn);
        char what[128];
        int line = c->line[at - fields];
        return bad(c, line, field_what(at, line, what, sizeof what),
                   at == mx ? "must be >= delivery.retry_backoff_ms"
                            : "must be <= delivery.retry_backoff_max_ms");
    }
    if (cfg->limits.max_request_tokens < 0)
        cfg->limits.max_request_tokens = VW_REQUEST_TOKENS_PER_BATCH * cfg->batching.max_tokens;
    return check_loops(c);
}

static vw_status set_defaults(vw_config *cfg, const char *name, vw_err *err) {
    cfg->source = strdup(name);
    cfg->topics.results = strdup("results");
    cfg->model.bundle = strdup("");
    cfg->model.device = strdup("auto");
    cfg->model.precision = strdup("auto");
    cfg->model.manifest_sha256 = strdup("");
    cfg->metrics.listen = strdup("127.0.0.1:9464");
    cfg->delivery.transactional_id_prefix = strdup("");
    cfg->delivery.worker_id = strdup("");
    if (!cfg->source || !cfg->topics.results || !cfg->model.bundle || !cfg->model.device ||
        !cfg->model.precision || !cfg->model.manifest_sha256 || !cfg->metrics.listen ||
        !cfg->delivery.transactional_id_prefix || !cfg->delivery.worker_id)
        return VW_FAIL(err, VW_ENOMEM, "out_of_memory", "config defaults");
    cfg->batching.max_tokens = VW_BATCH_MAX_TOKENS_DEFAULT;
    cfg->batching.max_requests = 64;
    cfg->batching.max_wait_ms = 5;
    cfg->processing.threads = 0;
    cfg->limits.max_request_bytes = VW_MAX_REQUEST_BYTES_DEFAULT;
    cfg->limits.max_in_flight = 1024;
    cfg->limits.max_request_tokens = -1; /* 4 x batching.max_tokens (validate) */
    cfg->limits.slow_record_ms = 1000;
    cfg->delivery.mode = VW_DELIVERY_AT_LEAST_ONCE;
    cfg->delivery.commit_interval_ms = 100;
    cfg->delivery.retry_backoff_ms = 100;
    cfg->delivery.retry_backoff_max_ms = 5000;
    cfg->delivery.revoke_wait_ms = 5000;
    cfg->delivery.start_timeout_ms = 15000;
    cfg->metrics.stats_interval_ms = 5000;
    cfg->log.level = VW_LOG_INFO;
    cfg->log.format = VW_LOG_JSON;
    cfg->shutdown.grace_ms = 30000;
    return VW_OK;
}

vw_status vw_config_parse(const char *yaml, size_t len, const char *name, char *const *envp,
                          vw_config **out, vw_err *err) {
    yaml_parser_t parser;
    yaml_document_t doc;
    bool have_parser = false, have_doc = false;
    parse_ctx c = {.name = name, .err = err};
    vw_status st = VW_OK;
    *out = NULL;
    c.cfg = calloc(1, sizeof *c.cfg);
    if (!c.cfg)
        return VW_FAIL(err, VW_ENOMEM, "out_of_memory", "config");
    for (size_t i = 0; i < N_FIELDS; i++)
        c.line[i] = -1; /* a default */
    st = set_defaults(c.cfg, name, err);
    if (!st)
        st = vw_config_shape_check(yaml, len, name, err);
    if (st)
        goto done;
    if (!yaml_parser_initialize(&parser)) {
        st = VW_FAIL(err, VW_ENOMEM, "out_of_memory", "yaml parser");
        goto done;
    }
    have_parser = true;
    yaml_parser_set_input_string(&parser, (const unsigned char *)yaml, len);
    if (!yaml_parser_load(&parser, &doc)) {
        st = VW_FAIL(err, VW_EINVAL, "config_invalid", "%s:%zu: YAML: %s", name,
                     parser.problem_mark.line + 1, parser.problem ? parser.problem : "error");
        goto done;
    }
    have_doc = true;
    st = parse_root(&c, &doc);
    if (!st)
        st = apply_env(&c, envp);
    if (!st)
        st = validate(&c);
    if (!st) {
        _Static_assert(N_FIELDS <= VW_CONFIG_FIELD_SLOTS, "vw_config.set_at is too small");
        memcpy(c.cfg->set_at, c.line, sizeof c.line);
        *out = c.cfg;
        c.cfg = NULL;
    }
done:
    if (have_doc)
        yaml_document_delete(&doc);
    if (have_parser)
        yaml_parser_delete(&parser);
    free(c.item_line);
    vw_config_free(c.cfg);
    return st;
}

int vw_config_set_at(const vw_config *cfg, const char *section, const char *key) {
    const field *f = find_field(section, key);
    return f ? cfg->set_at[f - fields] : -1;
}

/* The relative paths the file set, from its directory (config_paths.h). */
static vw_status resolve_paths(vw_config *cfg, const char *file, vw_err *err) {
    vw_status st = vw_config_set_at(cfg, "model", "bundle") > 0
                       ? vw_config_path_under(file, &cfg->model.bundle, err)
                       : VW_OK;
    vw_kvlist *lists[] = {&cfg->kafka.common, &cfg->kafka.consumer, &cfg->kafka.producer};
    for (size_t k = 0; k < 3 && !st; k++)
        for (vw_kv *kv = lists[k]->items; kv < lists[k]->items + lists[k]->n && !st; kv++)
            if (kv->line > 0 && vw_config_path_prop(kv->key, kv->value))
                st = vw_config_path_under(file, &kv->value, err);
    return st;
}

vw_status vw_config_load(const char *path, char *const *envp, vw_config **out, vw_err *err) {
    *out = NULL;
    FILE *f = fopen(path, "rb");
    if (!f)
        return VW_FAIL(err, VW_EIO, "config_unreadable", "%s: %s", path, strerror(errno));
    char *buf = NULL;
    size_t n = 0, cap = 0;
    vw_status st = VW_OK;
    for (;;) {
        if (n + 4096 > cap) {
            char *grown = realloc(buf, cap = (n + 4096) * 2);
            if (!grown) {
                st = VW_FAIL(err, VW_ENOMEM, "out_of_memory", "config file buffer");
                goto done;
            }
            buf = grown;
        }
        size_t r = fread(buf + n, 1, cap - n, f);
        n += r;
        if (r == 0 || n > VW_CONFIG_MAX_BYTES)
            break; /* past the bound: vw_config_parse refuses it */
    }
    if (ferror(f)) {
        st = VW_FAIL(err, VW_EIO, "config_unreadable", "%s: read error", path);
        goto done;
    }
    st = vw_config_parse(buf, n, path, envp, out, err);
    if (!st && (st = resolve_paths(*out, path, err))) {
        vw_config_free(*out);
        *out = NULL;
    }
done:
    free(buf);
    fclose(f);
    return st;
}

void vw_config_free(vw_config *cfg) {
    if (!cfg)
        return;
    kv_free(&cfg->kafka.common);
    kv_free(&cfg->kafka.consumer);
    kv_free(&cfg->kafka.producer);
    list_clear(&cfg->topics.reply_allow, &cfg->topics.n_reply_allow);
    for (size_t i = 0; i < N_FIELDS; i++)
        if (fields[i].type == F_STR)
            free(*str_slot(cfg, &fields[i]));
    free(cfg->source);
    free(cfg);
}
