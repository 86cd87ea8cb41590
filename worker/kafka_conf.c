/* kafka_conf.c — librdkafka configuration helpers and the shared error
 * callback (see kafka_conf.h). */
#include "kafka_conf.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "service/clock.h"

vw_status vw_kafka_conf_set(rd_kafka_conf_t *conf, const char *key, const char *value,
                            vw_err *err) {
    char errstr[512];
    if (rd_kafka_conf_set(conf, key, value, errstr, sizeof errstr) != RD_KAFKA_CONF_OK)
        return VW_FAIL(err, VW_EINVAL, "kafka_config", "%s=%s: %s", key, value, errstr);
    return VW_OK;
}

vw_status vw_kafka_conf_apply(rd_kafka_conf_t *conf, const vw_kvlist *l, const char *skip,
                              vw_err *err) {
    for (size_t i = 0; i < l->n; i++) {
        if (skip && !strcmp(l->items[i].key, skip))
            continue;
        vw_status st = vw_kafka_conf_set(conf, l->items[i].key, l->items[i].value, err);
        if (st)
            return st;
    }
    return VW_OK;
}

/* Where key occurs first in text as a whole property name (not inside a
 * longer one); NULL when it does not. */
static const char *find_prop(const char *text, const char *key) {
    size_t n = strlen(key);
    for (const char *p = strstr(text, key); p; p = strstr(p + 1, key)) {
        char before = p == text ? ' ' : p[-1], after = p[n];
        if (!isalnum((unsigned char)before) && before != '.' && before != '_' &&
            !isalnum((unsigned char)after) && after != '.' && after != '_')
            return p;
    }
    return NULL;
}

/* Whether `name` is another name of property key (an alias: linger.ms and
 * queue.buffering.max.ms): setting key to value shows under name too, where
 * name did not have that value before. */
static bool alias_of(const char *key, const char *value, const char *name) {
    char before[256], after[256], errstr[256];
    size_t n1 = sizeof before, n2 = sizeof after;
    rd_kafka_conf_t *c = rd_kafka_conf_new();
    bool same = c && rd_kafka_conf_get(c, name, before, &n1) == RD_KAFKA_CONF_OK &&
                rd_kafka_conf_set(c, key, value, errstr, sizeof errstr) == RD_KAFKA_CONF_OK &&
                rd_kafka_conf_get(c, name, after, &n2) == RD_KAFKA_CONF_OK &&
                strcmp(before, after) && !strcmp(after, value);
    if (c)
        rd_kafka_conf_destroy(c);
    return same;
}

/* A user's property that a quoted name in text (`x` or "x") is an alias of:
 * text is rewritten with the user's name (cap bytes), the entry returned. */
static const vw_kv *by_alias(const vw_kvlist *const *lists, size_t n_lists, char *text, size_t cap,
                             const vw_kvlist **list) {
    for (char *q = text; (q = strpbrk(q, "`\"")); q++) {
        char *end = strchr(q + 1, *q);
        if (!end || end - q - 1 >= 128)
            continue;
        char name[128];
        snprintf(name, sizeof name, "%.*s", (int)(end - q - 1), q + 1);
        for (size_t k = 0; k < n_lists; k++)
            for (size_t i = lists[k]->n; i-- > 0;) {
                const vw_kv *kv = &lists[k]->items[i];
                if (!strcmp(kv->key, name) || !alias_of(kv->key, kv->value, name))
                    continue;
                char rest[512];
                snprintf(rest, sizeof rest, "%s", end);
                snprintf(q + 1, cap - (size_t)(q + 1 - text), "%s%s", kv->key, rest);
                *list = lists[k];
                return kv;
            }
        q = end;
    }
    return NULL;
}

vw_status vw_kafka_client_error(const vw_config *cfg, const char *client, const char *errstr_in,
                                vw_err *err) {
    char errstr[512];
    snprintf(errstr, sizeof errstr, "%s", errstr_in);
    /* The client's own section first: it is applied after the common one. */
    const vw_kvlist *own = client[0] == 'c' ? &cfg->kafka.consumer : &cfg->kafka.producer;
    const vw_kvlist *lists[2] = {own, &cfg->kafka.common};
    const vw_kv *best = NULL;
    const vw_kvlist *best_list = NULL;
    const char *best_at = NULL;
    for (size_t k = 0; k < 2; k++)
        for (size_t i = lists[k]->n; i-- > 0;) {
            const char *at = find_prop(errstr, lists[k]->items[i].key);
            if (at && (!best_at || at < best_at)) {
                best = &lists[k]->items[i];
                best_list = lists[k];
                best_at = at;
            }
        }
    if (!best) /* the reason may name it by another name (an alias) */
        best = by_alias(lists, 2, errstr, sizeof errstr, &best_list);
    if (!best)
        return VW_FAIL(err, VW_EINVAL, "config_invalid", "%s: kafka: librdkafka %s: %s",
                       cfg->source, client, errstr);
    const char *section = best_list == &cfg->kafka.common ? "" : client;
    char what[300], value[300] = "";
    size_t kl = strlen(best->key);
    if (kl > 9 && !strcmp(best->key + kl - 9, ".location"))
        snprintf(value, sizeof value, " (%s is '%.256s')", best->key, best->value);
    if (best->line > 0) {
        snprintf(what, sizeof what, "%s:%d: kafka%s%s.%s", cfg->source, best->line,
                 *section ? "." : "", section, best->key);
    } else { /* VELA_KAFKA[_CONSUMER|_PRODUCER]_<KEY> */
        char sec[32];
        snprintf(sec, sizeof sec, "kafka%s%s", *section ? "." : "", section);
        vw_config_env_name(sec, best->key, what, sizeof what);
        snprintf(what + strlen(what), sizeof what - strlen(what), " (environment)");
    }
    return VW_FAIL(err, VW_EINVAL, "config_invalid", "%s: librdkafka %s: %s%s", what, client,
                   errstr, value);
}

/* librdkafka's reasons start with the broker they are about: "host:port/id: "
 * ("127.0.0.1:9092/1: Connect to ... failed"), or "GroupCoordinator:
 * host:port: ...". The broker (the leading words without a space, joined) to
 * broker ("" when none: "1/1 brokers are down"); returns the rest. */
static const char *split_broker(const char *reason, char *broker, size_t cap) {
    const char *p = reason;
    size_t n = 0;
    broker[0] = 0;
    for (;;) {
        const char *colon = strstr(p, ": ");
        if (!colon || colon == p || memchr(p, ' ', (size_t)(colon - p)))
            break;
        int w = snprintf(broker + n, cap - n, "%s%.*s", n ? " " : "", (int)(colon - p), p);
        n = w < 0 || (size_t)w >= cap - n ? cap - 1 : n + (size_t)w;
        p = colon + 2;
    }
    return p;
}

/* Whether this error is logged now (not logged in the last repeat window),
 * with *repeated the times it came meanwhile; else it is counted. */
static bool log_due(vw_kafka_health *h, int err, const char *broker, const char *text, int64_t now,
                    uint64_t *repeated) {
    char key[200];
    const char *after = strstr(text, " (after ");
    snprintf(key, sizeof key, "%s|%.*s", broker, (int)(after ? after - text : (long)strlen(text)),
             text);
    int64_t window = h->repeat_ms > 0 ? h->repeat_ms : VW_KAFKA_ERROR_REPEAT_MS;
    vw_kafka_seen *slot = NULL, *oldest = &h->seen[0];
    for (size_t i = 0; i < VW_KAFKA_ERROR_KEYS && !slot; i++) {
        vw_kafka_seen *s = &h->seen[i];
        if (s->key[0] && s->err == err && !strcmp(s->key, key))
            slot = s;
        else if (!s->key[0] ? oldest->key[0] != 0
                            : oldest->key[0] && s->logged_ms < oldest->logged_ms)
            oldest = s; /* a free slot first, else the one logged longest ago */
    }
    if (slot && now - slot->logged_ms < window) {
        slot->repeated++;
        return false;
    }
    if (!slot) {
        slot = oldest;
        memset(slot, 0, sizeof *slot);
        slot->err = err;
        snprintf(slot->key, sizeof slot->key, "%s", key);
    }
    *repeated = slot->repeated;
    slot->repeated = 0;
    slot->logged_ms = now;
    return true;
}

bool vw_kafka_fatal(rd_kafka_t *rk, const char *client, rd_kafka_resp_err_t e, const vw_log *log,
                    vw_fault *fault) {
    char cause[512] = "";
    rd_kafka_resp_err_t real = rd_kafka_fatal_error(rk, cause, sizeof cause);
    if (!real && e != RD_KAFKA_RESP_ERR__FATAL)
        return false;
    const char *name = rd_kafka_err2name(real ? real : e),
               *why = real ? cause : rd_kafka_err2str(e);
    VW_LOG(log, VW_LOG_ERROR, "kafka",
           "fatal client error, stopping client=%s err=%s reason=\"%s\"", rd_kafka_name(rk), name,
           why);
    VW_RAISE(fault, VW_EKAFKA, "kafka_fatal", "fatal %s error %s: %s", client, name, why);
    return true;
}

bool vw_kafka_error(rd_kafka_t *rk, const char *client, int err, const char *reason,
                    const vw_log *log, vw_fault *fault, vw_kafka_health *h) {
    if (err == RD_KAFKA_RESP_ERR__FATAL)
        return vw_kafka_fatal(rk, client, RD_KAFKA_RESP_ERR__FATAL, log, fault);
    /* Everything else is informational: librdkafka recovers by itself. The
     * reason a broker could not be used is kept for the start check
     * (worker.c): "1/1 brokers are down" says less than the reason before. */
    int64_t now = vw_now_ms();
    if (err == RD_KAFKA_RESP_ERR__TRANSPORT || err == RD_KAFKA_RESP_ERR__RESOLVE ||
        err == RD_KAFKA_RESP_ERR__AUTHENTICATION || err == RD_KAFKA_RESP_ERR__SSL) {
        snprintf(h->error, sizeof h->error, "%s", reason);
        h->error_ms = now;
    }
    char broker[128];
    const char *text = split_broker(reason, broker, sizeof broker);
    uint64_t repeated = 0;
    if (!log_due(h, err, broker, text, now, &repeated))
        return false;
    char again[48] = "";
    if (repeated)
        snprintf(again, sizeof again, " repeated=%llu", (unsigned long long)repeated);
    VW_LOG(log, VW_LOG_WARN, "kafka", "kafka error client=%s code=%s broker=\"%s\" reason=\"%s\"%s",
           rd_kafka_name(rk), rd_kafka_err2name((rd_kafka_resp_err_t)err), broker, text, again);
    return false;
}

bool vw_kafka_log_twin(const char *facility) {
    return !strcmp(facility, "FAIL");
}

bool vw_kafka_before(int major, int minor, int revision) {
    int v = rd_kafka_version(); /* 0xMMmmrrxx */
    int want = (major << 24) | (minor << 16) | (revision << 8);
    return (v & ~0xff) < want;
}

static const vw_kafka_workaround workarounds[] = {
    {4312, "2.3.0",
     "a worker stopped between its JoinGroup and the first assignment waits for the assignment "
     "(rd_kafka_destroy would abort with the sticky assignor)"},
    {4059, "2.10.0",
     "async commits and intake wait while the member rejoins (a commit in the join window got "
     "ILLEGAL_GENERATION, taken as a lost assignment)"},
    {5586, NULL,
     "start watchdog: a partition never fetched delivery.start_timeout_ms after its assignment is "
     "assigned again"},
    {5591, NULL,
     "a rejoin holds intake instead of pausing partitions (a resume right after an assignment "
     "could be dropped)"},
    {4755, NULL,
     "replay --from/--to a timestamp searches the record timestamps when offsets_for_times "
     "answers -1"},
};

const vw_kafka_workaround *vw_kafka_workarounds(size_t *n) {
    *n = sizeof workarounds / sizeof *workarounds;
    return workarounds;
}

bool vw_kafka_workaround_on(const vw_kafka_workaround *wa) {
    int major = 0, minor = 0, rev = 0;
    if (!wa->fixed || sscanf(wa->fixed, "%d.%d.%d", &major, &minor, &rev) != 3)
        return true;
    return vw_kafka_before(major, minor, rev);
}

bool vw_kafka_issue_on(int issue) {
    for (size_t i = 0; i < sizeof workarounds / sizeof *workarounds; i++)
        if (workarounds[i].issue == issue)
            return vw_kafka_workaround_on(&workarounds[i]);
    return false;
}

const char *vw_kafka_consumer_prop(const vw_config *cfg, const char *key) {
    const char *v = vw_kvlist_get(&cfg->kafka.consumer, key);
    return v ? v : vw_kvlist_get(&cfg->kafka.common, key);
}

void vw_kafka_versions(char *buf, size_t cap) {
    int b = RD_KAFKA_VERSION;
    snprintf(buf, cap, "%s (built against %d.%d.%d)", rd_kafka_version_str(), (b >> 24) & 0xff,
             (b >> 16) & 0xff, (b >> 8) & 0xff);
}
