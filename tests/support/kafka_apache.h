/* kafka_apache.h — Apache Kafka for a test: a one- or three-node KRaft cluster
 * (every node broker and controller) from the jars scripts/kafka resolves
 * from Maven Central ($VW_KAFKA names them; scripts/test sets it), on free
 * 127.0.0.1 ports, in a folder of the test's directory (vw_kh_dir()).
 *
 * scripts/kafka is the one source of the nodes' settings: the harness runs
 * `scripts/kafka init` (configs, formatted storage) and `scripts/kafka node`
 * per node (exec java: the node's pid is the JVM's, stopped and killed by that
 * pid only). Topics are created with librdkafka's admin API, replication
 * factor min(3, nodes) and min.insync.replicas 2 on three nodes.
 *
 * Typical use:
 *   vw_kh_kafka k;
 *   if (vw_kh_kafka_skip_reason()) cr_skip_test("%s", vw_kh_kafka_skip_reason());
 *   cr_assert_eq(vw_kh_kafka_start(3, "requests:4,results:4,requests.dlq:1", &k), 0);
 *   vw_kh_write_config(&k.broker, "group", NULL, cfg, sizeof cfg); ... workers ...
 *   int leader = vw_kh_kafka_leader(&k, "requests", 0);
 *   vw_kh_kafka_kill_node(&k, leader);          kill -9
 *   vw_kh_kafka_restart_node(&k, leader);       same id, ports and storage
 *   vw_kh_kafka_stop(&k);                       SIGTERM, then removes the folder
 *
 * Ownership: a vw_kh_kafka is the caller's (by value, nothing malloc'd); the
 * processes are tracked by kafka_harness.c and killed at exit when a failed
 * assertion skips vw_kh_kafka_stop (the folder then stays, with the logs).
 * Threads: one test thread. Errors: -1 (or a negative id) and a message on
 * stderr naming the node's log. */
#ifndef VW_KAFKA_APACHE_H
#define VW_KAFKA_APACHE_H

#include <stdbool.h>
#include <stdint.h>

#include "kafka_harness.h"

enum { VW_KH_KAFKA_MAX_NODES = 3 };

typedef struct vw_kh_kafka_opts {
    /* NULL: plaintext listeners only. Else a folder made by vw_kh_kafka_make_certs:
     * every node also listens SASL_SSL (SCRAM-SHA-512, that folder's user). */
    const char *sasl_ssl_dir;
} vw_kh_kafka_opts;

typedef struct vw_kh_kafka {
    int nodes;                              /* 1 or 3; node ids 1..nodes */
    char dir[256];                          /* the cluster's folder */
    vw_kh_broker broker;                    /* .bootstrap: the PLAINTEXT listeners
                                               (vw_kh_write_config, vw_kh_produce);
                                               no pid: stop with vw_kh_kafka_stop */
    char sasl_bootstrap[256];               /* "localhost:P,..." (SASL_SSL), or "" */
    int port[VW_KH_KAFKA_MAX_NODES];        /* node i+1's PLAINTEXT port */
    vw_kh_proc node[VW_KH_KAFKA_MAX_NODES]; /* node i+1's JVM; pid 0 while down */
    int64_t format_ms, start_ms, topics_ms; /* startup cost, printed by start */
    long rss_kb[VW_KH_KAFKA_MAX_NODES];     /* resident set once started */
} vw_kh_kafka;

/* NULL when Apache Kafka can run ($VW_KAFKA names the jars' folder), else
 * the reason to skip ("VW_KAFKA is not set ..."). */
const char *vw_kh_kafka_skip_reason(void);

/* Formats and starts `nodes` (1 or 3) nodes, waits until each is registered
 * and unfenced, creates the topics of "name:partitions,..." (may be NULL or
 * "") and waits for their leaders. Prints the startup cost on stderr. */
int vw_kh_kafka_start(int nodes, const char *topics, vw_kh_kafka *k);
int vw_kh_kafka_start_opts(int nodes, const char *topics, const vw_kh_kafka_opts *o,
                           vw_kh_kafka *k);

/* Creates the topics of a spec "name:partitions,..." and waits for leaders. */
int vw_kh_kafka_create_topics(vw_kh_kafka *k, const char *topics);

/* The node id (1..nodes) leading topic/partition now, -1 when none or unknown. */
int vw_kh_kafka_leader(const vw_kh_kafka *k, const char *topic, int partition);

/* Waits until every partition 0..n_parts-1 of topic has a leader and all
 * `nodes` replicas in sync (after a restart: the node caught up). */
int vw_kh_kafka_wait_in_sync(const vw_kh_kafka *k, const char *topic, int n_parts, int timeout_ms);

/* kill -9 of node id (1..nodes); its pid is reaped. */
int vw_kh_kafka_kill_node(vw_kh_kafka *k, int id);
/* Starts node id again (same id, ports, storage) and waits until it listens. */
int vw_kh_kafka_restart_node(vw_kh_kafka *k, int id);

/* SIGTERM to every node still up (SIGKILL after 30 s), then removes the folder. */
void vw_kh_kafka_stop(vw_kh_kafka *k);

/* Writes a throwaway CA and a broker certificate for "localhost" (openssl):
 * dir/ca.pem (for ssl.ca.location), dir/broker.pem (key + chain, the nodes'
 * PEM key store) and dir/scram.txt ("user password", the SCRAM-SHA-512
 * credential formatted into the cluster). */
int vw_kh_kafka_make_certs(const char *dir, const char *user, const char *password);

#endif
