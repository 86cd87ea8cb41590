/* test_fault.c — the worker's first-wins fault record (worker/fault.h): the
 * first cause is kept whatever comes after it, from any thread, and /healthz's
 * fatal flag is set by the first raise. */
#include "fault.h"

#include "kafka_harness.h"

#include <criterion/criterion.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

Test(fault, nothing_raised_is_ok) {
    vw_fault f;
    vw_fault_init(&f, NULL);
    vw_err err = {.status = VW_EIO};
    cr_assert_not(vw_fault_raised(&f));
    cr_assert_eq(vw_fault_cause(&f, &err), VW_OK);
    cr_assert_eq(err.status, VW_EIO, "err untouched");
    vw_fault_destroy(&f);
}

Test(fault, the_first_cause_wins) {
    vw_metrics *m = vw_metrics_new();
    cr_assert_not_null(m);
    vw_fault f;
    vw_fault_init(&f, m);
    int port = -1, code = 0;
    vw_err serr = {0};
    cr_assert_eq(vw_metrics_serve(m, "127.0.0.1:0", &port, &serr), VW_OK, "%s", serr.msg);
    char *body = vw_kh_http_get(port, "/healthz", &code);
    cr_assert_eq(code, 200, "healthy before the raise");
    free(body);
    cr_assert(VW_RAISE(&f, VW_ENOMEM, "out_of_memory", "tracking tp=%s:%d:%d", "requests", 1, 7));
    cr_assert_not(VW_RAISE(&f, VW_EKAFKA, "kafka_fatal", "later"), "a later raise is dropped");
    cr_assert(vw_fault_raised(&f));
    vw_err err = {0};
    cr_assert_eq(vw_fault_cause(&f, &err), VW_ENOMEM);
    cr_assert_str_eq(err.type, "out_of_memory");
    cr_assert_str_eq(err.msg, "tracking tp=requests:1:7");
    cr_assert(!strncmp(err.where, "test_fault.c:", 13), "%s", err.where);
    cr_assert_eq(vw_fault_cause(&f, NULL), VW_ENOMEM);
    /* /healthz turns 503 at the first raise. */
    body = vw_kh_http_get(port, "/healthz", &code);
    cr_assert_eq(code, 503, "%s", body ? body : "(no body)");
    free(body);
    vw_fault_destroy(&f);
    vw_metrics_free(m);
}

enum { THREADS = 8 };
typedef struct racer {
    vw_fault *f;
    int id;
    bool first;
} racer;

static void *race(void *arg) {
    racer *r = arg;
    r->first = VW_RAISE(r->f, VW_EKAFKA, "raced", "thread %d", r->id);
    return NULL;
}

/* Raisers on several threads at once: exactly one is first, and the record
 * holds that one's message whole. */
Test(fault, one_first_among_threads) {
    vw_fault f;
    vw_fault_init(&f, NULL);
    pthread_t th[THREADS];
    racer r[THREADS];
    for (int i = 0; i < THREADS; i++) {
        r[i] = (racer){&f, i, false};
        pthread_create(&th[i], NULL, race, &r[i]);
    }
    int firsts = 0, winner = -1;
    for (int i = 0; i < THREADS; i++) {
        pthread_join(th[i], NULL);
        if (r[i].first) {
            firsts++;
            winner = i;
        }
    }
    cr_assert_eq(firsts, 1);
    vw_err err = {0};
    cr_assert_eq(vw_fault_cause(&f, &err), VW_EKAFKA);
    char want[32];
    snprintf(want, sizeof want, "thread %d", winner);
    cr_assert_str_eq(err.msg, want);
    vw_fault_destroy(&f);
}
