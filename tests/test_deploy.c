/* test_deploy.c — the deployment files, which no engine runs here (no Docker
 * daemon, no compose plugin): docker-compose.yml parsed with libyaml, and
 * Dockerfile / Dockerfile.cuda read instruction by instruction.
 *  - compose: only known top-level and service keys; every depends_on names a
 *    service; images pinned (a tag with a digit, never latest; locally built
 *    ones tagged with the project's version); the files and folders it mounts
 *    and builds from exist; every worker's environment loads as a valid
 *    config over config/worker.example.yaml, all in one group.id; the gpu
 *    profile's workers reserve one distinct NVIDIA GPU each by device_ids
 *    (never count), see it as cuda:0, use Dockerfile.cuda, and number at most
 *    the partitions of the requests topic; every published port is bound to
 *    127.0.0.1 (the broker's plaintext listener and the metrics have no
 *    authentication; docs/operations.md "Security").
 *  - Dockerfiles: FROM tags pinned; apt-get install names only packages of
 *    the base's release (tables below: Debian 12 read with apt-cache policy on
 *    this machine; Ubuntu 24.04 from its public package lists — e.g.
 *    librdkafka1 2.3.0-1build2, and the 64-bit time_t renames libssl3t64,
 *    libmicrohttpd12t64 — checked 2026-12-04); the build runs
 *    scripts/build-release (what CI runs); the final stage runs as non-root;
 *    the CUDA image builds on devel and runs on runtime of one CUDA version.
 * A base image not in the tables fails here on purpose: update the table
 * with that release's package names first. */
#include <criterion/criterion.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <yaml.h>

#include "service/config.h"
#include "vw_test.h"

/* ---- YAML helpers (libyaml's document API: aliases are shared nodes) ---- */

typedef struct compose {
    yaml_document_t doc;
    yaml_node_t *services;
} compose;

static yaml_node_t *node(yaml_document_t *d, int i) {
    return yaml_document_get_node(d, i);
}

static const char *scalar(yaml_node_t *n) {
    return n && n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value : NULL;
}

/* map[key], following merge keys (<<: *anchor) after the map's own pairs. */
static yaml_node_t *get(yaml_document_t *d, yaml_node_t *map, const char *key) {
    if (!map || map->type != YAML_MAPPING_NODE)
        return NULL;
    yaml_node_pair_t *p;
    for (p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top; p++) {
        const char *k = scalar(node(d, p->key));
        if (k && !strcmp(k, key))
            return node(d, p->value);
    }
    for (p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top; p++) {
        const char *k = scalar(node(d, p->key));
        yaml_node_t *r = k && !strcmp(k, "<<") ? get(d, node(d, p->value), key) : NULL;
        if (r)
            return r;
    }
    return NULL;
}

static const char *get_str(yaml_document_t *d, yaml_node_t *map, const char *key) {
    return scalar(get(d, map, key));
}

static size_t seq_len(yaml_node_t *n) {
    return n && n->type == YAML_SEQUENCE_NODE
               ? (size_t)(n->data.sequence.items.top - n->data.sequence.items.start)
               : 0;
}

static yaml_node_t *seq_at(yaml_document_t *d, yaml_node_t *n, size_t i) {
    return node(d, n->data.sequence.items.start[i]);
}

static int seq_has(yaml_document_t *d, yaml_node_t *n, const char *v) {
    for (size_t i = 0; i < seq_len(n); i++) {
        const char *s = scalar(seq_at(d, n, i));
        if (s && !strcmp(s, v))
            return 1;
    }
    return 0;
}

/* Calls fn for every key of map, merged keys included (each once per source). */
static void each_key(yaml_document_t *d, yaml_node_t *map, void (*fn)(const char *key, void *ctx),
                     void *ctx) {
    for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top;
         p++) {
        const char *k = scalar(node(d, p->key));
        yaml_node_t *v = node(d, p->value);
        if (k && !strcmp(k, "<<") && v->type == YAML_MAPPING_NODE)
            each_key(d, v, fn, ctx);
        else
            fn(k ? k : "(non-scalar key)", ctx);
    }
}

static void load_compose(compose *c) {
    char *path = vw_test_path("docker-compose.yml");
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "%s", path);
    yaml_parser_t parser;
    yaml_parser_initialize(&parser);
    yaml_parser_set_input_file(&parser, f);
    int ok = yaml_parser_load(&parser, &c->doc);
    cr_assert(ok, "docker-compose.yml: %s at line %zu", parser.problem ? parser.problem : "?",
              parser.problem_mark.line + 1);
    yaml_parser_delete(&parser);
    fclose(f);
    free(path);
    yaml_node_t *root = yaml_document_get_root_node(&c->doc);
    cr_assert(root && root->type == YAML_MAPPING_NODE, "docker-compose.yml: not a mapping");
    c->services = get(&c->doc, root, "services");
    cr_assert(c->services && c->services->type == YAML_MAPPING_NODE, "no services mapping");
}

#define EACH_SERVICE(c, p)                                                                         \
    for (yaml_node_pair_t *p = (c)->services->data.mapping.pairs.start;                            \
         p < (c)->services->data.mapping.pairs.top; p++)

static const char *svc_name(compose *c, yaml_node_pair_t *p) {
    return scalar(node(&c->doc, p->key));
}

static int is_gpu(compose *c, yaml_node_t *svc) {
    return seq_has(&c->doc, get(&c->doc, svc, "profiles"), "gpu");
}

static int path_exists(const char *rel) {
    char *p = vw_test_path(rel);
    struct stat st;
    int ok = stat(p, &st) == 0;
    free(p);
    return ok;
}

/* The project's version from CMakeLists.txt: "project(vela_worker VERSION x.y.z". */
static void project_version(char *out, size_t cap) {
    char *path = vw_test_path("CMakeLists.txt");
    char *text = vw_test_read_file(path, NULL);
    cr_assert_not_null(text);
    const char *v = strstr(text, "project(vela_worker VERSION ");
    cr_assert_not_null(v);
    v += strlen("project(vela_worker VERSION ");
    size_t n = strcspn(v, " )");
    cr_assert(n > 0 && n < cap);
    memcpy(out, v, n);
    out[n] = 0;
    free(text);
    free(path);
}

/* An image reference is pinned: name:tag, a tag with a digit, not latest. */
static void assert_pinned(const char *where, const char *image) {
    const char *colon = strrchr(image, ':');
    cr_assert(colon && !strchr(colon, '/'), "%s: image '%s' has no tag", where, image);
    const char *tag = colon + 1;
    cr_assert(strcmp(tag, "latest") && strpbrk(tag, "0123456789"),
              "%s: image '%s' is not pinned to a version", where, image);
}

/* ---- compose ----------------------------------------------------------------- */

static const char *const service_keys[] = {
    "image",      "build",      "hostname", "ports",   "environment", "healthcheck",
    "depends_on", "command",    "restart",  "volumes", "deploy",      "stop_grace_period",
    "profiles",   "entrypoint", NULL};

static void known_service_key(const char *key, void *ctx) {
    for (size_t i = 0; service_keys[i]; i++)
        if (!strcmp(service_keys[i], key))
            return;
    cr_assert_fail("service %s: unknown key '%s'", (const char *)ctx, key);
}

Test(deploy, compose_keys_and_references) {
    compose c;
    load_compose(&c);
    yaml_node_t *root = yaml_document_get_root_node(&c.doc);
    for (yaml_node_pair_t *p = root->data.mapping.pairs.start; p < root->data.mapping.pairs.top;
         p++) {
        const char *k = scalar(node(&c.doc, p->key));
        cr_assert(k && (!strcmp(k, "services") || !strncmp(k, "x-", 2)),
                  "unknown top-level key '%s' (services, or x- extensions)", k ? k : "?");
    }
    const char *want[] = {"broker", "topics", "worker", "worker-gpu0"};
    for (size_t i = 0; i < 4; i++)
        cr_assert_not_null(get(&c.doc, c.services, want[i]), "service %s missing", want[i]);
    EACH_SERVICE(&c, p) {
        const char *name = svc_name(&c, p);
        yaml_node_t *svc = node(&c.doc, p->value);
        cr_assert(name && svc->type == YAML_MAPPING_NODE);
        each_key(&c.doc, svc, known_service_key, (void *)name);
        yaml_node_t *dep = get(&c.doc, svc, "depends_on");
        if (dep && dep->type == YAML_MAPPING_NODE) {
            for (yaml_node_pair_t *q = dep->data.mapping.pairs.start;
                 q < dep->data.mapping.pairs.top; q++) {
                const char *d = scalar(node(&c.doc, q->key));
                cr_assert(d && get(&c.doc, c.services, d), "%s depends on unknown service %s", name,
                          d ? d : "?");
                cr_assert(strcmp(d, name), "%s depends on itself", name);
            }
        } else {
            for (size_t i = 0; i < seq_len(dep); i++) {
                const char *d = scalar(seq_at(&c.doc, dep, i));
                cr_assert(d && get(&c.doc, c.services, d), "%s depends on unknown service %s", name,
                          d ? d : "?");
            }
        }
    }
    yaml_document_delete(&c.doc);
}

Test(deploy, compose_images_pinned_and_sources_exist) {
    compose c;
    load_compose(&c);
    char version[32];
    project_version(version, sizeof version);
    EACH_SERVICE(&c, p) {
        const char *name = svc_name(&c, p);
        yaml_node_t *svc = node(&c.doc, p->value);
        const char *image = get_str(&c.doc, svc, "image");
        yaml_node_t *build = get(&c.doc, svc, "build");
        cr_assert(image, "service %s: no image (locally built ones are tagged too)", name);
        assert_pinned(name, image);
        if (build) {
            const char *ctx = scalar(build) ? scalar(build) : get_str(&c.doc, build, "context");
            const char *df = scalar(build) ? NULL : get_str(&c.doc, build, "dockerfile");
            cr_assert(ctx && !strcmp(ctx, "."), "service %s: build context must be the repo", name);
            cr_assert(path_exists(df ? df : "Dockerfile"), "service %s: %s missing", name,
                      df ? df : "Dockerfile");
            const char *tag = strrchr(image, ':') + 1;
            cr_assert_str_eq(tag, version, "service %s: a built image carries the version", name);
        }
        yaml_node_t *vols = get(&c.doc, svc, "volumes");
        for (size_t i = 0; i < seq_len(vols); i++) {
            const char *v = scalar(seq_at(&c.doc, vols, i));
            cr_assert_not_null(v);
            char host[256];
            const char *def = strstr(v, ":-"); /* ${VAR:-default}:/target */
            const char *start = def && v[0] == '$' ? def + 2 : v;
            size_t n = def && v[0] == '$' ? strcspn(start, "}") : strcspn(start, ":");
            cr_assert(n < sizeof host);
            memcpy(host, start, n);
            host[n] = 0;
            cr_assert(!strncmp(host, "./", 2) && path_exists(host + 2),
                      "service %s mounts %s, which is not in the repo", name, host);
        }
    }
    yaml_document_delete(&c.doc);
}

/* Partitions of the requests topic, from the topics service's command. */
static int request_partitions(compose *c) {
    yaml_node_t *cmd = get(&c->doc, get(&c->doc, c->services, "topics"), "command");
    cr_assert(seq_len(cmd) == 1);
    const char *s = strstr(scalar(seq_at(&c->doc, cmd, 0)), "requests:");
    cr_assert_not_null(s);
    return atoi(s + strlen("requests:"));
}

Test(deploy, compose_workers_share_a_group_and_load_their_config) {
    compose c;
    load_compose(&c);
    char *example = vw_test_path("config/worker.example.yaml");
    char group[64] = "";
    int workers = 0;
    EACH_SERVICE(&c, p) {
        const char *name = svc_name(&c, p);
        yaml_node_t *env = get(&c.doc, node(&c.doc, p->value), "environment");
        if (!get_str(&c.doc, env, "VELA_MODEL_BUNDLE"))
            continue; /* not a worker */
        workers++;
        char *envp[32] = {0}, buf[32][256];
        size_t n = 0;
        for (yaml_node_pair_t *q = env->data.mapping.pairs.start; q < env->data.mapping.pairs.top;
             q++) {
            cr_assert(n < 31);
            snprintf(buf[n], sizeof buf[n], "%s=%s", scalar(node(&c.doc, q->key)),
                     scalar(node(&c.doc, q->value)));
            envp[n] = buf[n];
            n++;
        }
        vw_config *cfg = NULL;
        vw_err err = {0};
        cr_assert_eq(vw_config_load(example, envp, &cfg, &err), VW_OK, "service %s: %s", name,
                     err.msg);
        const char *g = vw_kvlist_get(&cfg->kafka.common, "group.id");
        cr_assert_not_null(g);
        if (!group[0])
            snprintf(group, sizeof group, "%s", g);
        cr_assert_str_eq(g, group, "service %s: every worker joins one consumer group", name);
        if (is_gpu(&c, node(&c.doc, p->value)))
            cr_assert_str_eq(cfg->model.device, "cuda:0", "%s sees its one GPU as cuda:0", name);
        vw_config_free(cfg);
    }
    cr_assert_geq(workers, 2);
    free(example);
    yaml_document_delete(&c.doc);
}

Test(deploy, compose_gpu_profile_one_gpu_per_worker) {
    compose c;
    load_compose(&c);
    char ids[16][8];
    size_t n_gpu = 0;
    EACH_SERVICE(&c, p) {
        const char *name = svc_name(&c, p);
        yaml_node_t *svc = node(&c.doc, p->value);
        yaml_node_t *deploy = get(&c.doc, svc, "deploy");
        if (!is_gpu(&c, svc)) {
            cr_assert_null(deploy, "service %s: GPU reservations belong to the gpu profile", name);
            continue;
        }
        yaml_node_t *build = get(&c.doc, svc, "build");
        cr_assert_str_eq(get_str(&c.doc, build, "dockerfile"), "Dockerfile.cuda", "%s", name);
        yaml_node_t *devs =
            get(&c.doc, get(&c.doc, get(&c.doc, deploy, "resources"), "reservations"), "devices");
        cr_assert_eq(seq_len(devs), 1, "service %s: one device reservation", name);
        yaml_node_t *d = seq_at(&c.doc, devs, 0);
        cr_assert_str_eq(get_str(&c.doc, d, "driver"), "nvidia", "%s", name);
        cr_assert(seq_has(&c.doc, get(&c.doc, d, "capabilities"), "gpu"), "%s", name);
        cr_assert_null(get(&c.doc, d, "count"),
                       "service %s: device_ids, not count (count gives replicas the same GPU)",
                       name);
        yaml_node_t *dev_ids = get(&c.doc, d, "device_ids");
        cr_assert_eq(seq_len(dev_ids), 1, "service %s: exactly one GPU", name);
        const char *id = scalar(seq_at(&c.doc, dev_ids, 0));
        cr_assert(id && *id && strspn(id, "0123456789") == strlen(id) && strlen(id) < 8,
                  "service %s: device id '%s'", name, id ? id : "?");
        for (size_t i = 0; i < n_gpu; i++)
            cr_assert(strcmp(ids[i], id), "GPU %s reserved twice (%s)", id, name);
        cr_assert(n_gpu < 16);
        snprintf(ids[n_gpu++], sizeof ids[0], "%s", id);
    }
    cr_assert_geq(n_gpu, 1);
    cr_assert_leq((int)n_gpu, request_partitions(&c), "more GPU workers than partitions idle");
    yaml_document_delete(&c.doc);
}

/* A published port answers only the host: "127.0.0.1:HOST:CONTAINER" in the
 * short syntax, host_ip 127.0.0.1 in the long one. A bare "9092:9092" (or
 * "9092") publishes on every interface of the host. */
Test(deploy, compose_published_ports_are_on_localhost) {
    compose c;
    load_compose(&c);
    int published = 0;
    EACH_SERVICE(&c, p) {
        const char *name = svc_name(&c, p);
        yaml_node_t *ports = get(&c.doc, node(&c.doc, p->value), "ports");
        cr_assert(!ports || ports->type == YAML_SEQUENCE_NODE, "service %s: ports is a list", name);
        for (size_t i = 0; i < seq_len(ports); i++) {
            yaml_node_t *e = seq_at(&c.doc, ports, i);
            const char *v = scalar(e);
            if (v) {
                unsigned host = 0, inside = 0;
                char end = 0;
                cr_assert(sscanf(v, "127.0.0.1:%u:%u%c", &host, &inside, &end) == 2 && host &&
                              host < 65536 && inside && inside < 65536,
                          "service %s publishes '%s' on every host interface: write "
                          "127.0.0.1:HOST:CONTAINER",
                          name, v);
            } else {
                const char *ip = get_str(&c.doc, e, "host_ip");
                cr_assert(ip && !strcmp(ip, "127.0.0.1"),
                          "service %s: a long-syntax port without host_ip 127.0.0.1", name);
            }
            published++;
        }
    }
    cr_assert_geq(published, 3, "the broker and the workers publish their ports");
    yaml_document_delete(&c.doc);
}

/* The broker of docker-compose.yml and the clusters of scripts/kafka (the
 * tests' Apache Kafka) are one Kafka: the same version (apache/kafka:<scripts/
 * kafka version>, for the broker and the topics service), and every broker
 * setting of the compose file that is not topology (ids, roles, listeners,
 * quorum, log folder, the internal topics' replication) is a line of
 * `scripts/kafka settings`, and every such line is set in the compose file
 * (KAFKA_<NAME>: name upper-cased, '.' -> '_', the image's rule). */
static char *script_out(const char *args) {
    char cmd[512];
    snprintf(cmd, sizeof cmd, "'%s/scripts/kafka' %s", VW_SOURCE_DIR, args);
    FILE *f = popen(cmd, "r");
    cr_assert_not_null(f, "%s", cmd);
    static char buf[4096];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = 0;
    cr_assert_eq(pclose(f), 0, "%s failed", cmd);
    return strdup(buf);
}

static const char *const topology[] = {
    "KAFKA_NODE_ID",
    "KAFKA_PROCESS_ROLES",
    "KAFKA_CONTROLLER_QUORUM_VOTERS",
    "KAFKA_LISTENERS",
    "KAFKA_ADVERTISED_LISTENERS",
    "KAFKA_LISTENER_SECURITY_PROTOCOL_MAP",
    "KAFKA_INTER_BROKER_LISTENER_NAME",
    "KAFKA_CONTROLLER_LISTENER_NAMES",
    "KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR",
    "KAFKA_TRANSACTION_STATE_LOG_MIN_ISR",
    "KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR",
    "KAFKA_LOG_DIRS",
    NULL,
};

Test(deploy, compose_broker_is_the_tests_kafka) {
    compose c;
    load_compose(&c);
    char *version = script_out("version"), *settings = script_out("settings");
    version[strcspn(version, "\n")] = 0;
    char want_image[64];
    snprintf(want_image, sizeof want_image, "apache/kafka:%s", version);
    const char *const kafka_services[] = {"broker", "topics"};
    for (int i = 0; i < 2; i++) {
        yaml_node_t *svc = get(&c.doc, c.services, kafka_services[i]);
        cr_assert_str_eq(get_str(&c.doc, svc, "image"), want_image,
                         "service %s runs the Kafka the tests run (scripts/kafka version)",
                         kafka_services[i]);
    }
    yaml_node_t *env = get(&c.doc, get(&c.doc, c.services, "broker"), "environment");
    cr_assert(env && env->type == YAML_MAPPING_NODE, "the broker's environment is a mapping");
    int shared = 0;
    for (yaml_node_pair_t *p = env->data.mapping.pairs.start; p < env->data.mapping.pairs.top;
         p++) {
        const char *k = scalar(node(&c.doc, p->key)), *v = scalar(node(&c.doc, p->value));
        cr_assert(k && v && !strncmp(k, "KAFKA_", 6), "broker environment: %s", k ? k : "?");
        bool topo = false;
        for (int t = 0; topology[t]; t++)
            topo = topo || !strcmp(k, topology[t]);
        if (topo)
            continue;
        char line[256];
        size_t n = 0;
        for (const char *s = k + 6; *s && n < 200; s++)
            line[n++] = *s == '_' ? '.' : (char)tolower((unsigned char)*s);
        snprintf(line + n, sizeof line - n, "=%s\n", v);
        cr_assert(strstr(settings, line),
                  "docker-compose.yml sets %s=%s: not in scripts/kafka "
                  "settings (one source for both)",
                  k, v);
        shared++;
    }
    int lines = 0;
    for (const char *s = settings; *s; s++)
        lines += *s == '\n';
    cr_assert_eq(shared, lines, "every scripts/kafka setting is in docker-compose.yml (%d of %d)",
                 shared, lines);
    free(version);
    free(settings);
    yaml_document_delete(&c.doc);
}

/* ---- Dockerfiles ------------------------------------------------------------- */

static const char *const debian12[] = {
    /* build */ "build-essential",
    "cmake",
    "ninja-build",
    "pkg-config",
    "librdkafka-dev",
    "libjansson-dev",
    "libyaml-dev",
    "libpcre2-dev",
    "libutf8proc-dev",
    "libopenblas-dev",
    "libssl-dev",
    "libmicrohttpd-dev",
    /* runtime */ "librdkafka1",
    "libjansson4",
    "libyaml-0-2",
    "libpcre2-8-0",
    "libutf8proc2",
    "libopenblas0-pthread",
    "libssl3",
    "libmicrohttpd12",
    "ca-certificates",
    NULL};
static const char *const ubuntu2404[] = {
    /* build: the same -dev names */ "build-essential",
    "cmake",
    "ninja-build",
    "pkg-config",
    "librdkafka-dev",
    "libjansson-dev",
    "libyaml-dev",
    "libpcre2-dev",
    "libutf8proc-dev",
    "libopenblas-dev",
    "libssl-dev",
    "libmicrohttpd-dev",
    /* runtime: 64-bit time_t renames (t64) and utf8proc's soname 3 */ "librdkafka1",
    "libjansson4",
    "libyaml-0-2",
    "libpcre2-8-0",
    "libutf8proc3",
    "libopenblas0-pthread",
    "libssl3t64",
    "libmicrohttpd12t64",
    "ca-certificates",
    NULL};

static const struct {
    const char *image; /* exact reference */
    const char *release;
    const char *const *packages;
} bases[] = {
    {"debian:12.12", "Debian 12", debian12},
    {"debian:12.12-slim", "Debian 12", debian12},
    {"nvidia/cuda:13.0.2-devel-ubuntu24.04", "Ubuntu 24.04", ubuntu2404},
    {"nvidia/cuda:13.0.2-runtime-ubuntu24.04", "Ubuntu 24.04", ubuntu2404},
};

typedef struct stage {
    char image[128], name[32], user[32];
    int base;          /* index in bases */
    int build_release; /* runs scripts/build-release */
} stage;

typedef struct dockerfile {
    stage st[8];
    int n;
} dockerfile;

/* Checks every package word of an apt-get install in a RUN against the table. */
static void check_apt(const char *file, const stage *s, const char *run) {
    const char *at = strstr(run, "apt-get install");
    if (!at)
        return;
    at += strlen("apt-get install");
    size_t words = 0;
    while (*at && strncmp(at, "&&", 2)) {
        while (*at == ' ')
            at++;
        size_t n = strcspn(at, " ");
        if (!n || !strncmp(at, "&&", 2))
            break;
        char w[96];
        cr_assert(n < sizeof w);
        memcpy(w, at, n);
        w[n] = 0;
        at += n;
        if (w[0] == '-')
            continue;
        char *eq = strchr(w, '='); /* name=version pins are allowed */
        if (eq)
            *eq = 0;
        int known = 0;
        for (const char *const *p = bases[s->base].packages; *p && !known; p++)
            known = !strcmp(*p, w);
        cr_assert(known, "%s: package '%s' is not a %s package name this test knows (%s)", file, w,
                  bases[s->base].release, s->image);
        words++;
    }
    cr_assert_gt(words, 0, "%s: apt-get install of nothing", file);
}

static void parse_dockerfile(const char *rel, dockerfile *df) {
    char *path = vw_test_path(rel);
    char *text = vw_test_read_file(path, NULL);
    cr_assert_not_null(text, "%s", path);
    memset(df, 0, sizeof *df);
    /* Instructions: lines joined at a trailing backslash; comments skipped. */
    char ins[4096];
    size_t len = 0;
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
        while (*line == ' ')
            line++;
        if (*line == '#' || !*line)
            continue;
        size_t n = strlen(line);
        int more = n && line[n - 1] == '\\';
        cr_assert(len + n + 1 < sizeof ins);
        memcpy(ins + len, line, n - (size_t)more);
        len += n - (size_t)more;
        ins[len++] = ' ';
        if (more)
            continue;
        ins[len - 1] = 0;
        len = 0;
        stage *s = df->n ? &df->st[df->n - 1] : NULL;
        if (!strncmp(ins, "FROM ", 5)) {
            cr_assert(df->n < 8);
            s = &df->st[df->n++];
            char as[8] = "";
            int got = sscanf(ins + 5, "%127s %7s %31s", s->image, as, s->name);
            cr_assert(got == 1 || (got == 3 && !strcmp(as, "AS")), "%s: '%s'", rel, ins);
            assert_pinned(rel, s->image);
            s->base = -1;
            for (size_t b = 0; b < sizeof bases / sizeof *bases; b++)
                if (!strcmp(bases[b].image, s->image))
                    s->base = (int)b;
            cr_assert_geq(s->base, 0, "%s: base %s has no package table in this test", rel,
                          s->image);
        } else if (!strncmp(ins, "RUN ", 4)) {
            cr_assert_not_null(s, "%s: RUN before FROM", rel);
            check_apt(rel, s, ins + 4);
            if (strstr(ins, "scripts/build-release "))
                s->build_release = 1;
        } else if (!strncmp(ins, "USER ", 5)) {
            cr_assert_not_null(s);
            snprintf(s->user, sizeof s->user, "%.31s", ins + 5);
        } else if (!strncmp(ins, "COPY --from=", 12)) {
            char from[32];
            cr_assert_eq(sscanf(ins + 12, "%31s", from), 1);
            int found = 0;
            for (int i = 0; i < df->n - 1; i++)
                found |= !strcmp(df->st[i].name, from);
            cr_assert(found, "%s: COPY --from=%s names no earlier stage", rel, from);
        }
    }
    free(text);
    free(path);
    cr_assert_geq(df->n, 2, "%s: a build stage and a runtime stage", rel);
    cr_assert(df->st[0].build_release, "%s: the build stage runs scripts/build-release", rel);
    const stage *last = &df->st[df->n - 1];
    cr_assert(last->user[0] && strcmp(last->user, "root") && strncmp(last->user, "0", 1),
              "%s: the image runs as root", rel);
}

Test(deploy, dockerfile_cpu) {
    dockerfile df;
    parse_dockerfile("Dockerfile", &df);
    cr_assert_str_eq(bases[df.st[0].base].release, "Debian 12");
}

Test(deploy, dockerfile_cuda) {
    dockerfile df;
    parse_dockerfile("Dockerfile.cuda", &df);
    const char *b = df.st[0].image, *r = df.st[df.n - 1].image;
    cr_assert(strstr(b, "nvidia/cuda:") && strstr(b, "-devel-"), "build on devel: %s", b);
    cr_assert(strstr(r, "nvidia/cuda:") && strstr(r, "-runtime-"),
              "run on runtime (CUDA runtime + cuBLAS, no compiler): %s", r);
    size_t vb = strcspn(b, "-"), vr = strcspn(r, "-");
    cr_assert(vb == vr && !strncmp(b, r, vb), "one CUDA version: %s vs %s", b, r);
    char *path = vw_test_path("Dockerfile.cuda");
    char *text = vw_test_read_file(path, NULL);
    cr_assert(text && strstr(text, "scripts/build-release --cuda "), "the image builds with CUDA");
    free(text);
    free(path);
}
