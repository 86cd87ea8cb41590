/* test_kafka_broker.c — `vela-worker broker`: the mock cluster runs as its own
 * process, prints its bootstrap line, creates the topics, and a real peer client
 * (kcat) can produce to it and consume from it; SIGTERM stops it with exit 0.
 * --port N bootstraps on a fixed port (the README's broker + run sequence). */
#include "kafka_harness.h"
#include "util/file.h"

#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

Test(kafka_broker, kcat_produces_and_consumes) {
    vw_kh_broker b;
    cr_assert_eq(vw_kh_broker_start("requests:4,results:2", &b), 0);
    cr_assert(!strncmp(b.bootstrap, "127.0.0.1:", 10), "bootstrap %s", b.bootstrap);
    char cmd[1024];
    /* Metadata: both topics with their partition counts. */
    snprintf(cmd, sizeof cmd, "kcat -b '%s' -L -J 2>/dev/null", b.bootstrap);
    FILE *f = popen(cmd, "r");
    json_t *md = json_loadf(f, 0, NULL);
    pclose(f);
    cr_assert_not_null(md, "kcat -L failed");
    size_t i;
    json_t *t;
    int seen = 0;
    json_array_foreach(json_object_get(md, "topics"), i, t) {
        const char *name = json_string_value(json_object_get(t, "topic"));
        size_t parts = json_array_size(json_object_get(t, "partitions"));
        if (!strcmp(name, "requests"))
            seen += parts == 4;
        if (!strcmp(name, "results"))
            seen += parts == 2;
    }
    json_decref(md);
    cr_assert_eq(seen, 2, "topics requests:4 and results:2 are listed");
    /* Produce with kcat (keys, a header), consume with kcat. */
    snprintf(cmd, sizeof cmd,
             "printf 'a|one\\nb|two\\nc|three\\n' | kcat -b '%s' -P -t requests -K'|' "
             "-H trace=x 2>/dev/null",
             b.bootstrap);
    cr_assert_eq(system(cmd), 0);
    json_t *recs = vw_kh_consume(b.bootstrap, "requests", 3, 10000);
    cr_assert_eq(json_array_size(recs), 3);
    json_t *r;
    int found = 0;
    json_array_foreach(recs, i, r) {
        const char *k = json_string_value(json_object_get(r, "key"));
        const char *v = json_string_value(json_object_get(r, "payload"));
        found += (!strcmp(k, "a") && !strcmp(v, "one")) || (!strcmp(k, "b") && !strcmp(v, "two")) ||
                 (!strcmp(k, "c") && !strcmp(v, "three"));
        cr_assert_str_eq(vw_kh_header(r, "trace"), "x");
    }
    json_decref(recs);
    cr_assert_eq(found, 3);
    /* A control command creates a topic at run time. */
    cr_assert_eq(vw_kh_broker_control(&b, "topic late 3"), 0);
    vw_kh_sleep_ms(200);
    int64_t hw[3];
    cr_assert_eq(vw_kh_end_offsets(b.bootstrap, "late", 3, hw), 0);
    vw_kh_proc p = {.pid = b.pid};
    cr_assert_eq(vw_kh_stop(&p, SIGTERM, 5000), 0, "SIGTERM (stdin still open): exit 0");
    close(b.control_fd);
}

/* A port on 127.0.0.1 free a moment ago (the kernel's pick for port 0). */
static int free_port(void) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    cr_assert(fd >= 0 && !bind(fd, (struct sockaddr *)&a, sizeof a) &&
              !getsockname(fd, (struct sockaddr *)&a, &len));
    close(fd);
    return ntohs(a.sin_port);
}

/* `broker --port N`: the mock binds kernel-chosen ports, so `run --config
 * config/worker.example.yaml` (127.0.0.1:9092) could not reach the broker the
 * README had just started. With --port the bootstrap is 127.0.0.1:N (printed
 * and written to --bootstrap-file): metadata, produce and consume work through
 * it, a second broker on the same port fails naming it, SIGTERM exits 0. */
Test(kafka_broker, port_option_bootstraps_on_a_fixed_port) {
    int port = free_port();
    char port_s[16], file[300], want[64];
    snprintf(port_s, sizeof port_s, "%d", port);
    snprintf(file, sizeof file, "%s/bootstrap", vw_kh_dir());
    snprintf(want, sizeof want, "127.0.0.1:%d", port);
    char *args[] = {"broker",           "--port", port_s, "--topics", "requests:2,results:1",
                    "--bootstrap-file", file,     NULL};
    vw_kh_proc p;
    cr_assert_eq(vw_kh_spawn("broker-port", args, NULL, &p), 0);
    char *boot = NULL;
    for (int i = 0; i < 100 && !boot; i++) {
        vw_kh_sleep_ms(50);
        boot = vw_read_file(file, NULL);
    }
    cr_assert_not_null(boot, "no bootstrap file");
    boot[strcspn(boot, "\n")] = 0;
    cr_assert_str_eq(boot, want);
    char *printed = vw_read_file(p.out_path, NULL);
    cr_assert(printed && !strncmp(printed, want, strlen(want)), "first stdout line: %s", printed);
    free(printed);
    vw_kh_msg m[3] = {{.partition = 0, .key = "a", .value = "one"},
                      {.partition = 1, .key = "b", .value = "two"},
                      {.partition = 1, .key = "c", .value = "three"}};
    cr_assert_eq(vw_kh_produce(boot, "requests", m, 3, NULL, NULL), 0);
    json_t *recs = vw_kh_consume(boot, "requests", 3, 10000);
    cr_assert_eq(json_array_size(recs), 3);
    json_decref(recs);
    /* The port is taken now: a second broker says so and fails. */
    char *again[] = {"broker", "--port", port_s, NULL};
    vw_kh_proc q;
    cr_assert_eq(vw_kh_spawn("broker-port-2", again, NULL, &q), 0);
    cr_assert_eq(vw_kh_stop(&q, 0, 10000), 1);
    snprintf(want, sizeof want, "127.0.0.1:%d: Address already in use", port);
    cr_assert_eq(vw_kh_count_log(&q, want), 1, "%s", want);
    char *bad[] = {"broker", "--port", "99999", NULL};
    cr_assert_eq(vw_kh_spawn("broker-port-bad", bad, NULL, &q), 0);
    cr_assert_eq(vw_kh_stop(&q, 0, 10000), 2, "--port 99999: a usage error");
    cr_assert_eq(vw_kh_stop(&p, SIGTERM, 5000), 0, "SIGTERM: exit 0");
    free(boot);
}

/* With OpenBLAS running threads of its own (OPENBLAS_NUM_THREADS above 1, as
 * outside the test suites), SIGTERM and SIGINT still stop the broker with
 * exit 0: it killed it (exit 143) when the signals were blocked for a
 * signalfd and the kernel handed one to an OpenBLAS thread. */
Test(kafka_broker, signals_stop_it_beside_openblas_threads) {
    setenv("OPENBLAS_NUM_THREADS", "4", 1);
    for (int i = 0; i < 6; i++) {
        vw_kh_broker b;
        cr_assert_eq(vw_kh_broker_start("requests:1", &b), 0);
        vw_kh_proc p = {.pid = b.pid};
        int sig = i % 2 ? SIGINT : SIGTERM;
        cr_assert_eq(vw_kh_stop(&p, sig, 5000), 0, "%s, try %d: exit 0", strsignal(sig), i);
        close(b.control_fd);
    }
}
