/* txn.c — the producer's transactions for delivery.mode exactly_once (see
 * txn.h). Runs on the Kafka thread; delivery reports reach it through the
 * sink's callback, served by the flushes here and the sink's polls. Never
 * consumes: the consumer's group metadata is handed in. */
#include "txn.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kafka_conf.h"
#include "service/clock.h"
#include "util/reserve.h"

struct vw_txn {
    vw_txn_opts o;
    rd_kafka_t *rk;     /* the sink's producer (borrowed) */
    char id[256];       /* transactional.id */
    bool open;          /* begin_transaction succeeded; not committed or aborted yet */
    bool failed;        /* a record of the open transaction failed or was refused: abort */
    bool committing;    /* commit_transaction outlived its deadline: resumed by the next commit */
    bool aborting;      /* abort_transaction outlived its deadline: resumed by the next abort */
    int64_t t0_ms;      /* when the commit began (metrics) */
    int64_t offsets_ms; /* when its offsets were sent */
    vw_offset_pos *pos; /* the offsets sent with the open transaction */
    size_t n_pos;
    vw_item **kept; /* records produced in the open transaction, in produce order */
    size_t n_kept, cap_kept;
    vw_item **redo; /* an aborted transaction's records, to produce again */
    size_t n_redo, cap_redo;
    int aborts;     /* aborts in a row (the backoff doubles) */
    int64_t due_ms; /* no transaction begins before this (after an abort) */
};

void vw_txn_id(const vw_config *cfg, char *buf, size_t cap, bool *stable) {
    const char *prefix = cfg->delivery.transactional_id_prefix;
    if (!prefix || !*prefix)
        prefix = vw_kafka_consumer_prop(cfg, "group.id");
    if (!prefix)
        prefix = VW_DEFAULT_GROUP_ID;
    const char *who = cfg->delivery.worker_id;
    if (!who || !*who)
        who = vw_kafka_consumer_prop(cfg, "group.instance.id");
    if (stable)
        *stable = who && *who;
    if (who && *who) {
        snprintf(buf, cap, "%s-%s", prefix, who);
        return;
    }
    char host[128] = "";
    if (gethostname(host, sizeof host - 1) || !host[0])
        snprintf(host, sizeof host, "host");
    snprintf(buf, cap, "%s-%s-%ld", prefix, host, (long)getpid());
}

vw_status vw_txn_conf(const vw_config *cfg, rd_kafka_conf_t *conf, vw_err *err) {
    char id[256];
    vw_txn_id(cfg, id, sizeof id, NULL);
    return vw_kafka_conf_set(conf, "transactional.id", id, err);
}

vw_status vw_txn_new(const vw_txn_opts *o, rd_kafka_t *producer, vw_txn **out, vw_err *err) {
    *out = NULL;
    vw_txn *t = calloc(1, sizeof *t);
    if (!t)
        return VW_FAIL(err, VW_ENOMEM, "out_of_memory", "transaction");
    t->o = *o;
    t->rk = producer;
    vw_txn_id(o->cfg, t->id, sizeof t->id, NULL);
    *out = t;
    return VW_OK;
}

/* An error object's classes, for the log. */
static const char *error_class(const rd_kafka_error_t *e) {
    return rd_kafka_error_is_fatal(e)             ? "fatal"
           : rd_kafka_error_txn_requires_abort(e) ? "abortable"
           : rd_kafka_error_is_retriable(e)       ? "retriable"
                                                  : "unclassified";
}

/* A fatal (or unclassified: librdkafka's advice is to treat those as fatal)
 * error of a transactional call: the first cause, the worker stops. */
static void raise_fatal(vw_txn *t, const char *call, const rd_kafka_error_t *e) {
    char cause[512] = "";
    rd_kafka_resp_err_t real = rd_kafka_fatal_error(t->rk, cause, sizeof cause);
    bool fatal = rd_kafka_error_is_fatal(e) || real;
    VW_LOG(t->o.log, VW_LOG_ERROR, "txn",
           "transaction failed, stopping call=%s err=%s class=%s reason=\"%s\" "
           "transactional_id=%s",
           call, rd_kafka_error_name(e), error_class(e), rd_kafka_error_string(e), t->id);
    if (fatal)
        VW_RAISE(t->o.fault, VW_EKAFKA, "kafka_fatal", "fatal producer error %s in %s: %s",
                 rd_kafka_err2name(real ? real : rd_kafka_error_code(e)), call,
                 real ? cause : rd_kafka_error_string(e));
    else
        VW_RAISE(t->o.fault, VW_EKAFKA, "txn_failed", "%s: %s: %s", call, rd_kafka_error_name(e),
                 rd_kafka_error_string(e));
}

/* The time left to deadline_ms as a librdkafka timeout: -1 (librdkafka's own
 * limit) without a deadline, at least 1 ms otherwise. */
static int left_ms(int64_t deadline_ms) {
    if (deadline_ms < 0)
        return -1;
    int64_t left = deadline_ms - vw_now_ms();
    return left < 1 ? 1 : left > 3600000 ? 3600000 : (int)left;
}

static bool past(int64_t deadline_ms) {
    return deadline_ms >= 0 && vw_now_ms() >= deadline_ms;
}

/* A pause before a retriable call is made again; delivery reports are served
 * meanwhile. */
static void pause_retry(vw_txn *t, int64_t deadline_ms) {
    int ms = 100;
    if (deadline_ms >= 0 && deadline_ms - vw_now_ms() < ms)
        ms = (int)(deadline_ms - vw_now_ms());
    rd_kafka_poll(t->rk, ms > 0 ? ms : 0);
}

/* The producer's transaction.timeout.ms (librdkafka's default 60 s). */
static int64_t txn_timeout_ms(vw_txn *t) {
    char v[32];
    size_t len = sizeof v;
    if (rd_kafka_conf_get(rd_kafka_conf(t->rk), "transaction.timeout.ms", v, &len) !=
        RD_KAFKA_CONF_OK)
        return 60000;
    return atoll(v);
}

vw_status vw_txn_init(vw_txn *t, int64_t deadline_ms, vw_err *err) {
    /* A coordinator that answers "not yet" (a fresh cluster creating
     * __transaction_state, a coordinator moving) is waited for up to
     * librdkafka's own limit, twice transaction.timeout.ms; deadline_ms
     * bounds only the wait for any broker to answer. */
    int64_t answered_limit = vw_now_ms() + 2 * txn_timeout_ms(t);
    for (;;) {
        rd_kafka_error_t *e = rd_kafka_init_transactions(t->rk, left_ms(deadline_ms));
        if (!e) {
            VW_LOG(t->o.log, VW_LOG_INFO, "txn", "transactions ready transactional_id=%s", t->id);
            return VW_OK;
        }
        bool answered = rd_kafka_error_code(e) > 0; /* a broker's error code, not a local one */
        if (rd_kafka_error_is_retriable(e) && answered && deadline_ms >= 0 &&
            deadline_ms < answered_limit)
            deadline_ms = answered_limit;
        bool again = rd_kafka_error_is_retriable(e) && !past(deadline_ms);
        if (!again) {
            vw_status st = VW_FAIL(
                err, VW_EKAFKA, "txn_init", "init_transactions (transactional.id %s): %s (%s): %s",
                t->id, rd_kafka_error_name(e), error_class(e), rd_kafka_error_string(e));
            rd_kafka_error_destroy(e);
            return st;
        }
        VW_LOG(t->o.log, VW_LOG_WARN, "txn", "init_transactions again err=%s reason=\"%s\"",
               rd_kafka_error_name(e), rd_kafka_error_string(e));
        rd_kafka_error_destroy(e);
        pause_retry(t, deadline_ms);
    }
}

bool vw_txn_ready(const vw_txn *t, int64_t now_ms) {
    return !t->failed && !t->committing && !t->aborting && now_ms >= t->due_ms &&
           !vw_fault_raised(t->o.fault);
}

/* Room for one more kept record; false (raised) when there is no memory. */
static bool room(vw_txn *t) {
    if (t->n_kept < t->cap_kept)
        return true;
    if (vw_reserve((void **)&t->kept, &t->cap_kept, t->n_kept + 1, sizeof *t->kept)) {
        VW_RAISE(t->o.fault, VW_ENOMEM, "out_of_memory", "the transaction's record list");
        return false;
    }
    return true;
}

bool vw_txn_begin(vw_txn *t, int64_t now_ms) {
    if (!vw_txn_ready(t, now_ms) || !room(t))
        return false;
    if (t->open)
        return true;
    rd_kafka_error_t *e = rd_kafka_begin_transaction(t->rk);
    if (e) {
        raise_fatal(t, "begin_transaction", e);
        rd_kafka_error_destroy(e);
        return false;
    }
    t->open = true;
    return true;
}

void vw_txn_sent(vw_txn *t, vw_item *it) {
    t->kept[t->n_kept++] = it; /* room made by vw_txn_begin */
}

void vw_txn_refused(vw_txn *t, vw_item *it) {
    if (!t->open) { /* none open (the pause after an abort): it waits with the redo */
        if (vw_items_push(&t->redo, &t->n_redo, &t->cap_redo, it))
            return;
        VW_RAISE(t->o.fault, VW_ENOMEM, "out_of_memory", "the transaction's redo list");
        vw_item_free(it); /* never acknowledged: never committed */
        return;
    }
    if (!room(t)) { /* raised: the worker stops; never acknowledged, never committed */
        vw_item_free(it);
        return;
    }
    t->kept[t->n_kept++] = it;
    t->failed = true; /* the open transaction must abort before records go again */
}

void vw_txn_delivered(vw_txn *t, vw_item *it) {
    /* A redo's second delivery finds its offset done already: refused, no
     * change (offsets.h). */
    vw_offsets_ack(t->o.ledger, t->o.topic, it->partition, it->epoch, it->offset, NULL);
}

void vw_txn_failed(vw_txn *t) {
    t->failed = true;
}

void vw_txn_forget(vw_txn *t, vw_item *it) {
    for (size_t i = 0; i < t->n_kept; i++)
        if (t->kept[i] == it) {
            memmove(t->kept + i, t->kept + i + 1, (t->n_kept - i - 1) * sizeof *t->kept);
            t->n_kept--;
            return;
        }
}

/* A transactional call's error: true to call again (retriable, before the
 * deadline); false when the call ends here: *abort when the transaction must
 * be aborted, *late when a retriable error outlived the deadline, else a fatal
 * or unclassified error was raised. Destroys e. */
static bool judge(vw_txn *t, const char *call, rd_kafka_error_t *e, int64_t deadline_ms,
                  bool *abort, bool *late) {
    bool again = false;
    if (rd_kafka_error_is_fatal(e) || rd_kafka_fatal_error(t->rk, NULL, 0)) {
        raise_fatal(t, call, e);
    } else if (rd_kafka_error_txn_requires_abort(e)) {
        VW_LOG(t->o.log, VW_LOG_WARN, "txn", "transaction must abort call=%s err=%s reason=\"%s\"",
               call, rd_kafka_error_name(e), rd_kafka_error_string(e));
        *abort = true;
    } else if (rd_kafka_error_is_retriable(e)) {
        again = !past(deadline_ms);
        *late = !again;
        VW_LOG(t->o.log, again ? VW_LOG_INFO : VW_LOG_WARN, "txn",
               "%s call=%s err=%s reason=\"%s\"", again ? "retrying" : "deadline passed", call,
               rd_kafka_error_name(e), rd_kafka_error_string(e));
    } else {
        raise_fatal(t, call, e);
    }
    rd_kafka_error_destroy(e);
    if (again)
        pause_retry(t, deadline_ms);
    return again;
}

/* Ends a committed transaction: the positions confirmed, the records done. */
static void committed(vw_txn *t, const vw_offset_pos *pos, size_t n) {
    for (size_t i = 0; i < n; i++)
        vw_offsets_committed(t->o.ledger, pos[i].topic, pos[i].partition, pos[i].offset);
    vw_metrics_inc(t->o.metrics, VW_M_COMMITS, n);
    vw_metrics_inc(t->o.metrics, VW_M_TXN_COMMITS, 1);
    int64_t now = vw_now_ms();
    vw_metrics_observe(t->o.metrics, VW_H_TXN, (double)(now - t->t0_ms) / 1e3);
    VW_LOG(t->o.log, VW_LOG_DEBUG, "txn",
           "transaction committed records=%zu partitions=%zu offsets_ms=%lld commit_ms=%lld",
           t->n_kept, n, (long long)(t->offsets_ms - t->t0_ms), (long long)(now - t->offsets_ms));
    for (size_t i = 0; i < t->n_kept; i++) {
        if (t->o.committed)
            t->o.committed(t->o.ctx, t->kept[i]);
        vw_item_free(t->kept[i]);
    }
    t->n_kept = 0;
    t->open = t->committing = false;
    t->n_pos = 0;
    t->aborts = 0;
    vw_crashpoint_hit(t->o.crash, VW_CRASH_AFTER_TXN_COMMIT);
}

/* Sends the offsets (the ledger's positions ahead of the last commit, kept
 * for the commit's confirmation) with the group metadata. False when the
 * transaction must be aborted (*abort) or the worker stops. */
static bool send_offsets(vw_txn *t, const rd_kafka_consumer_group_metadata_t *gmd,
                         int64_t deadline_ms, bool *abort) {
    free(t->pos);
    t->pos = NULL;
    t->n_pos = vw_offsets_commits_produced(t->o.ledger, NULL, 0);
    if (!t->n_pos)
        return true;
    t->pos = malloc(t->n_pos * sizeof *t->pos);
    rd_kafka_topic_partition_list_t *l =
        t->pos && gmd ? rd_kafka_topic_partition_list_new((int)t->n_pos) : NULL;
    if (!l) { /* no memory, or no consumer any more: these offsets cannot go with it */
        t->n_pos = 0;
        *abort = true;
        return false;
    }
    vw_offsets_commits_produced(t->o.ledger, t->pos, t->n_pos);
    for (size_t i = 0; i < t->n_pos; i++)
        rd_kafka_topic_partition_list_add(l, t->pos[i].topic, t->pos[i].partition)->offset =
            t->pos[i].offset;
    rd_kafka_error_t *e;
    bool late = false;
    while ((e = rd_kafka_send_offsets_to_transaction(t->rk, l, gmd, left_ms(deadline_ms))) &&
           judge(t, "send_offsets_to_transaction", e, deadline_ms, abort, &late)) {
    }
    rd_kafka_topic_partition_list_destroy(l);
    if (late)
        *abort = true; /* still in the transaction: abort is allowed */
    if (!e)
        vw_crashpoint_hit(t->o.crash, VW_CRASH_AFTER_TXN_OFFSETS);
    return !e;
}

bool vw_txn_commit(vw_txn *t, const rd_kafka_consumer_group_metadata_t *gmd, int64_t deadline_ms) {
    if (t->n_redo || vw_fault_raised(t->o.fault))
        return false; /* the aborted records go first; a stopped worker commits nothing */
    if (t->aborting || t->failed) {
        vw_txn_abort(t, deadline_ms);
        return false;
    }
    bool abort = false, late = false;
    if (!t->committing) {
        t->t0_ms = vw_now_ms();
        if (!t->open && !vw_offsets_commits(t->o.ledger, NULL, 0))
            return true; /* nothing produced, nothing to commit */
        if (!t->open && !vw_txn_begin(t, vw_now_ms()))
            return false; /* offsets alone (a dropped record's) need a transaction too */
        /* The offsets go before the records' delivery reports (they are on
         * their way meanwhile: one round trip less); commit_transaction
         * flushes, and fails unless every record was delivered. */
        if (!send_offsets(t, gmd, deadline_ms, &abort) && !abort)
            return false; /* raised */
        t->offsets_ms = vw_now_ms();
        t->committing = !abort;
    }
    if (!abort) {
        rd_kafka_error_t *e;
        while ((e = rd_kafka_commit_transaction(t->rk, left_ms(deadline_ms))) &&
               judge(t, "commit_transaction", e, deadline_ms, &abort, &late)) {
        }
        if (!e) {
            committed(t, t->pos, t->n_pos);
            return true;
        }
        if (!abort)
            return false; /* raised, or late: the commit goes on; the next call resumes it */
        t->committing = false;
    }
    vw_txn_abort(t, deadline_ms);
    return false;
}

void vw_txn_abort(vw_txn *t, int64_t deadline_ms) {
    if (!t->open || t->committing)
        return; /* none open; or its commit goes on (EndTxn was asked for: no abort now) */
    t->aborting = true;
    bool abort = false, late = false;
    rd_kafka_error_t *e;
    while ((e = rd_kafka_abort_transaction(t->rk, left_ms(deadline_ms))) &&
           judge(t, "abort_transaction", e, deadline_ms, &abort, &late)) {
    }
    if (e) {
        if (late) /* the abort goes on; the next call resumes it (or the broker ends it) */
            VW_LOG(t->o.log, VW_LOG_WARN, "txn",
                   "the abort did not end in time records=%zu transactional_id=%s", t->n_kept,
                   t->id);
        return; /* or raised: the records stay kept, freed with the transaction */
    }
    /* The aborted records' delivery reports (purged, or delivered before
     * the abort) are served now, while every record is still kept: none may
     * come after a redo that freed its record. */
    rd_kafka_flush(t->rk, 5000);
    vw_metrics_inc(t->o.metrics, VW_M_TXN_ABORTS, 1);
    VW_LOG(t->o.log, VW_LOG_WARN, "txn", "transaction aborted records=%zu transactional_id=%s",
           t->n_kept, t->id);
    /* Everything kept goes again, in produce order, before anything new. */
    if (!t->n_redo) {
        free(t->redo);
        t->redo = t->kept;
        t->n_redo = t->n_kept;
        t->cap_redo = t->cap_kept;
        t->kept = NULL;
        t->n_kept = t->cap_kept = 0;
    } else {
        for (size_t i = 0; i < t->n_kept; i++)
            if (!vw_items_push(&t->redo, &t->n_redo, &t->cap_redo, t->kept[i])) {
                VW_RAISE(t->o.fault, VW_ENOMEM, "out_of_memory", "the transaction's redo list");
                vw_item_free(t->kept[i]); /* never acknowledged: never committed */
            }
        t->n_kept = 0;
    }
    t->open = t->failed = t->committing = t->aborting = false;
    t->n_pos = 0;
    int64_t backoff = t->o.cfg->delivery.retry_backoff_ms;
    for (int i = 0; i < t->aborts && backoff < t->o.cfg->delivery.retry_backoff_max_ms; i++)
        backoff *= 2;
    if (backoff > t->o.cfg->delivery.retry_backoff_max_ms)
        backoff = t->o.cfg->delivery.retry_backoff_max_ms;
    t->aborts++;
    t->due_ms = vw_now_ms() + backoff;
}

vw_item **vw_txn_take_redo(vw_txn *t, size_t *n) {
    vw_item **r = t->redo;
    *n = t->n_redo;
    t->redo = NULL;
    t->n_redo = t->cap_redo = 0;
    return r;
}

bool vw_txn_busy(const vw_txn *t) {
    return t->open || t->failed || t->n_redo;
}

size_t vw_txn_redo_count(const vw_txn *t) {
    return t->n_redo;
}

int64_t vw_txn_due(const vw_txn *t) {
    return t->due_ms;
}

const char *vw_txn_name(const vw_txn *t) {
    return t->id;
}

void vw_txn_free(vw_txn *t) {
    if (!t)
        return;
    for (size_t i = 0; i < t->n_kept; i++)
        vw_item_free(t->kept[i]);
    for (size_t i = 0; i < t->n_redo; i++)
        vw_item_free(t->redo[i]);
    free(t->kept);
    free(t->redo);
    free(t->pos);
    free(t);
}
