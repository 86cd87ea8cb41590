/* rel_check.c — see rel_check.h. Test-only. */
#include "rel_check.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int vw_rel_produce(const char *bootstrap, size_t first, size_t n, int n_parts, const char *prefix,
                   const char *value) {
    vw_kh_msg *m = calloc(n ? n : 1, sizeof *m);
    char(*keys)[32] = calloc(n ? n : 1, sizeof *keys);
    int rc = -1;
    if (!m || !keys)
        goto done;
    for (size_t i = 0; i < n; i++) {
        snprintf(keys[i], sizeof keys[i], "%s%05zu", prefix, first + i);
        m[i] = (vw_kh_msg){
            .partition = (int32_t)((first + i) % (size_t)n_parts), .key = keys[i], .value = value};
    }
    rc = vw_kh_produce(bootstrap, "requests", m, n, NULL, NULL);
done:
    free(m);
    free(keys);
    return rc;
}

enum { MAX_PARTS = 16 };

/* Index of a "<prefix>NNNNN" id below n, or -1. */
static long id_index(const char *id, const char *prefix, size_t n) {
    size_t pl = strlen(prefix);
    if (!id || strncmp(id, prefix, pl))
        return -1;
    char *end = NULL;
    long i = strtol(id + pl, &end, 10);
    return end != id + pl && !*end && i >= 0 && (size_t)i < n ? i : -1;
}

static void count(json_t *recs, const char *prefix, size_t n, unsigned *seen, vw_rel_report *r) {
    int64_t last[MAX_PARTS][MAX_PARTS];
    memset(last, 0xff, sizeof last);
    memset(seen, 0, n * sizeof *seen);
    size_t k;
    json_t *rec;
    json_array_foreach(recs, k, rec) {
        long i = id_index(vw_kh_header(rec, "request-id"), prefix, n);
        if (i < 0)
            continue;
        r->results++;
        const char *st = vw_kh_header(rec, "vela-status");
        if (!st || strcmp(st, "200"))
            r->not_200++;
        int ip = -1;
        long long off = -1;
        const char *src = vw_kh_header(rec, "source");
        const char *colon = src ? strchr(src, ':') : NULL;
        if (colon)
            sscanf(colon + 1, "%d:%lld", &ip, &off);
        int rp = (int)json_integer_value(json_object_get(rec, "partition"));
        if (seen[i]++ == 0 && ip >= 0 && ip < MAX_PARTS && rp >= 0 && rp < MAX_PARTS) {
            if (off <= last[rp][ip])
                r->order_errors++;
            last[rp][ip] = off;
        }
    }
    for (size_t i = 0; i < n; i++)
        r->distinct += seen[i] > 0;
    r->missing = n - r->distinct;
    r->duplicates = r->results - r->distinct;
}

vw_rel_report vw_rel_collect(const char *bootstrap, const char *topic, const char *prefix, size_t n,
                             int timeout_ms) {
    vw_rel_report r = {.requests = n};
    unsigned *seen = calloc(n ? n : 1, sizeof *seen);
    int64_t t0 = vw_kh_now_ms(), end = t0 + timeout_ms;
    for (;;) {
        json_t *recs = vw_kh_consume(bootstrap, topic, n, 1000);
        r = (vw_rel_report){.requests = n};
        if (seen)
            count(recs, prefix, n, seen, &r);
        json_decref(recs);
        if (!seen || r.missing == 0 || vw_kh_now_ms() >= end)
            break;
        vw_kh_sleep_ms(500);
    }
    r.waited_ms = vw_kh_now_ms() - t0;
    free(seen);
    return r;
}

void vw_rel_print(const char *name, const vw_rel_report *r, int64_t recover_ms) {
    char line[512];
    snprintf(line, sizeof line,
             "%s: requests=%zu results=%zu distinct=%zu missing=%zu duplicates=%zu "
             "order_errors=%zu not_200=%zu recover_ms=%lld\n",
             name, r->requests, r->results, r->distinct, r->missing, r->duplicates, r->order_errors,
             r->not_200, (long long)recover_ms);
    fputs(line, stderr);
    const char *path = getenv("VW_REL_FIGURES");
    FILE *f = path && *path ? fopen(path, "a") : NULL;
    if (f) {
        fputs(line, f);
        fclose(f);
    }
}

int vw_rel_committed_at_end(const char *bootstrap, const char *group, const char *topic,
                            int n_parts, int timeout_ms) {
    int64_t end[MAX_PARTS], got[MAX_PARTS];
    if (n_parts > MAX_PARTS || vw_kh_end_offsets(bootstrap, topic, n_parts, end))
        return -1;
    int64_t deadline = vw_kh_now_ms() + timeout_ms;
    for (;;) {
        int same = vw_kh_committed(bootstrap, group, topic, n_parts, got) == 0;
        /* an empty partition has nothing to commit: "none" is its end */
        for (int i = 0; i < n_parts && same; i++)
            same = got[i] == end[i] || (end[i] == 0 && got[i] < 0);
        if (same)
            return 0;
        if (vw_kh_now_ms() >= deadline)
            break;
        vw_kh_sleep_ms(200);
    }
    for (int i = 0; i < n_parts; i++)
        fprintf(stderr, "rel_check: %s[%d] committed %lld, end %lld\n", topic, i, (long long)got[i],
                (long long)end[i]);
    return -1;
}

long vw_rel_vmhwm_kb(pid_t pid) {
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "r");
    long kb = -1;
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, "VmHWM:", 6))
            kb = atol(line + 6);
    if (f)
        fclose(f);
    return kb;
}

int vw_rel_wait_exit(vw_kh_proc *p, int timeout_ms) {
    return vw_kh_stop(p, 0, timeout_ms);
}

int vw_rel_produce_bad(const char *bootstrap, size_t n, int n_parts, int32_t *partitions,
                       int64_t *offsets) {
    enum { MAX_BAD = 100 };
    vw_kh_msg bad[MAX_BAD];
    char keys[MAX_BAD][16], ids[MAX_BAD][16];
    if (n > MAX_BAD)
        return -1;
    for (size_t i = 0; i < n; i++) {
        snprintf(keys[i], sizeof keys[i], "bad%02zu", i);
        snprintf(ids[i], sizeof ids[i], "id-bad%02zu", i);
        bad[i] = (vw_kh_msg){.partition = (int32_t)(i % (size_t)n_parts),
                             .key = keys[i],
                             .value = i % 2 ? "[1, 2]" : "{not json",
                             .hdr_name = {"request-id"},
                             .hdr_value = {ids[i]}};
    }
    return vw_kh_produce(bootstrap, "requests", bad, n, partitions, offsets);
}

size_t vw_rel_count_bad(const json_t *results, size_t *wrong) {
    size_t n = 0, k;
    json_t *rec;
    *wrong = 0;
    json_array_foreach(results, k, rec) {
        const char *key = json_string_value(json_object_get(rec, "key"));
        if (!key || strncmp(key, "bad", 3))
            continue;
        int i = atoi(key + 3);
        char id[16];
        snprintf(id, sizeof id, "id-bad%02d", i);
        json_t *v = json_loads(json_string_value(json_object_get(rec, "payload")), 0, NULL);
        const char *type = json_string_value(
            json_object_get(json_array_get(json_object_get(v, "detail"), 0), "type"));
        const char *status = vw_kh_header(rec, "vela-status"),
                   *rid = vw_kh_header(rec, "request-id");
        const char *want = i % 2 ? "model_attributes_type" : "json_invalid";
        n++;
        if (!status || strcmp(status, "400") || !rid || strcmp(rid, id) || !type ||
            strcmp(type, want)) {
            fprintf(stderr, "rel_check: %s: status %s, request-id %s, type %s (want 400, %s, %s)\n",
                    key, status ? status : "-", rid ? rid : "-", type ? type : "-", id, want);
            (*wrong)++;
        }
        json_decref(v);
    }
    return n;
}
