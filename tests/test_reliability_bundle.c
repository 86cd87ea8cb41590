/* test_reliability_bundle.c — a tampered bundle: fixtures/tiny-vela copied to
 * a temp dir with one byte of a weight shard flipped. `vela-worker run` must
 * refuse to start (non-zero exit, before consuming anything) and name the
 * file. The untampered copy is checked to start, so the refusal is the flip's.
 * The same shard rewritten together with MODEL_MANIFEST.json starts, unless
 * the manifest's digest is anchored (VELA_MODEL_MANIFEST_SHA256). */
#include "kafka_harness.h"
#include "vw_test.h"

#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/sha256.h"

#define SHARD "model-00002-of-00002.safetensors"

static void copy_bundle(char *dst, size_t cap) {
    char *src = vw_test_path("fixtures/tiny-vela"), cmd[2048];
    snprintf(dst, cap, "%s/bundle", vw_kh_dir());
    snprintf(cmd, sizeof cmd, "rm -rf '%s' && cp -r '%s' '%s'", dst, src, dst);
    cr_assert_eq(system(cmd), 0);
    free(src);
}

/* Flips every bit of the byte in the middle of the file (inside the tensor
 * data, past the safetensors header). */
static void flip_byte(const char *path) {
    FILE *f = fopen(path, "r+b");
    cr_assert_not_null(f, "%s", path);
    fseek(f, 0, SEEK_END);
    long mid = ftell(f) / 2;
    fseek(f, mid, SEEK_SET);
    int c = fgetc(f);
    fseek(f, mid, SEEK_SET);
    fputc(c ^ 0xff, f);
    cr_assert_eq(fclose(f), 0);
}

/* extra: one more "K=V" for the worker's environment, or NULL. */
static int run_with_bundle(const char *bundle, const char *name, const char *extra, vw_kh_proc *w) {
    vw_kh_broker b;
    char cfg[256], env_bundle[600];
    cr_assert_eq(vw_kh_broker_start("requests:1,results:1,requests.dlq:1", &b), 0);
    cr_assert_eq(vw_kh_write_config(&b, name, NULL, cfg, sizeof cfg), 0);
    snprintf(env_bundle, sizeof env_bundle, "VELA_MODEL_BUNDLE=%s", bundle);
    char *env[] = {"VELA_MODEL_DEVICE=cpu", env_bundle, (char *)extra, NULL};
    cr_assert_eq(vw_kh_worker_start(name, cfg, env, w), 0);
    int rc = -2;
    if (vw_kh_wait_log(w, "partition assigned", 60000) == 0)
        rc = vw_kh_stop(w, SIGTERM, 30000); /* it started: stop it */
    else
        rc = vw_kh_stop(w, 0, 30000); /* it exited by itself */
    vw_kh_broker_stop(&b);
    return rc;
}

Test(reliability_bundle, tampered_shard_refused) {
    char dir[512], shard[600];
    vw_kh_proc w;
    copy_bundle(dir, sizeof dir);
    cr_assert_eq(run_with_bundle(dir, "intact", NULL, &w), 0, "the intact copy starts and stops");
    snprintf(shard, sizeof shard, "%s/%s", dir, SHARD);
    flip_byte(shard);
    int rc = run_with_bundle(dir, "tampered", NULL, &w);
    int named = vw_kh_count_log(&w, SHARD);
    if (rc == 0 || !named)
        vw_kh_dump_log(&w);
    cr_assert_neq(rc, 0, "a tampered bundle: non-zero exit");
    cr_assert_neq(rc, -1, "it exits by itself (not killed after a timeout)");
    cr_assert_eq(vw_kh_count_log(&w, "partition assigned"), 0, "it never joined the group");
    cr_assert_gt(named, 0, "the message names %s", SHARD);
}

/* model.manifest_sha256 through VELA_MODEL_MANIFEST_SHA256: the intact copy
 * starts under its manifest's digest; rewritten with its manifest it starts
 * without the anchor and is refused under it, naming both digests, before the
 * worker joins the group. */
Test(reliability_bundle, manifest_anchor_refuses_a_rewritten_bundle) {
    char dir[512], path[600], anchor[VW_SHA256_HEX], now[VW_SHA256_HEX], env[128];
    vw_kh_proc w;
    copy_bundle(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/MODEL_MANIFEST.json", dir);
    cr_assert_eq(vw_sha256_file(path, anchor, NULL), VW_OK);
    snprintf(env, sizeof env, "VELA_MODEL_MANIFEST_SHA256=%s", anchor);
    cr_assert_eq(run_with_bundle(dir, "anchored", env, &w), 0, "the intact copy starts");
    snprintf(path, sizeof path, "%s/%s", dir, SHARD);
    flip_byte(path);
    vw_test_relist(dir, SHARD);
    cr_assert_eq(run_with_bundle(dir, "rewritten", NULL, &w), 0,
                 "rewritten with its manifest, it starts without an anchor");
    int rc = run_with_bundle(dir, "refused", env, &w);
    snprintf(path, sizeof path, "%s/MODEL_MANIFEST.json", dir);
    cr_assert_eq(vw_sha256_file(path, now, NULL), VW_OK);
    int named = vw_kh_count_log(&w, anchor) && vw_kh_count_log(&w, now) &&
                vw_kh_count_log(&w, "manifest_mismatch");
    if (rc == 0 || !named)
        vw_kh_dump_log(&w);
    cr_assert_neq(rc, 0, "refused under the anchor: non-zero exit");
    cr_assert_neq(rc, -1, "it exits by itself (not killed after a timeout)");
    cr_assert_eq(vw_kh_count_log(&w, "partition assigned"), 0, "it never joined the group");
    cr_assert(named, "the message names both digests and manifest_mismatch");
}
