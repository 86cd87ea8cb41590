/* rejoin.h — what the source knows of its group's rebalances, and the holds
 * that follow: async commits and intake wait while a rebalance may run
 * (source.c). While this member waits for its JoinGroup answer, the
 * coordinator holds its connection, so a commit sent then is answered after
 * the generation changed: ILLEGAL_GENERATION, which librdkafka before 2.10.0
 * takes as a lost assignment (#4059: no revoke commit, the new owner answers
 * the uncommitted tail again). So while a rebalance is known to run —
 * librdkafka's join state is not steady (from its CGRPJOINSTATE log lines at
 * once, or from statistics while no such line was read), a commit got
 * REBALANCE_IN_PROGRESS, or a cooperative revoke was just handled (its
 * assignment starts a second round) — async commits wait and intake is held,
 * so the uncommitted tail stays within what was in flight. Synchronous
 * commits in the rebalance callback are always made (the generation is
 * current there). With #4059 fixed (2.10.0 and later) the join state holds
 * neither; REBALANCE_IN_PROGRESS and a cooperative revoke still do (those
 * commits cannot succeed before the rebalance ends). The holds' history:
 * docs/kafka-notes.md "The worker's rebalance holds".
 *
 * Pure bookkeeping: no Kafka calls; time is passed in (vw_now_ms's clock).
 * Ownership: a plain struct embedded in its owner (the source); nothing to
 * free. Thread-safety: the Kafka thread, but vw_rejoin_log_line
 * [thread: librdkafka], which touches the atomics only. Errors: none.
 */
#ifndef VW_REJOIN_H
#define VW_REJOIN_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

typedef struct vw_rejoin {
    int64_t hold_ms;           /* how long a hold waits for the rebalance to show */
    bool wa_4059;              /* librdkafka < 2.10.0: the join state holds too (#4059) */
    bool kip848;               /* group.protocol consumer: no second round */
    int64_t commit_hold_until; /* no async commits before this */
    bool second_round;         /* a cooperative revoke came: its assignment starts another */
    bool group_unsteady;       /* statistics: this member is rejoining */
    atomic_bool joining;       /* the join-state lines: not "steady" */
    atomic_bool join_lines;    /* a join-state line was read (joining is live) */
    atomic_bool joined; /* a JoinGroup succeeded (-> wait-sync, wait-join -> wait-metadata) */
} vw_rejoin;

/* hold_ms: source_conf.h vw_source_conf_hold_ms. */
void vw_rejoin_init(vw_rejoin *r, int64_t hold_ms, bool wa_4059, bool kip848);

/* Reads one librdkafka log line (facility, text): true when it is a change
 * of the group's join state, librdkafka's "CGRPJOINSTATE" debug line `Group
 * "<id>" changed join state <from> -> <to> (...)`; *steady: <to> is
 * "steady"; *joined: a JoinGroup was answered (-> wait-sync, or the leader's
 * wait-join -> wait-metadata). The source asks librdkafka for these lines
 * (debug cgrp); tests/test_kafka_compat.c checks the text on the library
 * loaded. */
bool vw_rejoin_join_line(const char *fac, const char *buf, bool *steady, bool *joined);

/* A log line [thread: librdkafka]: a join-state change is noted at once. */
void vw_rejoin_log_line(vw_rejoin *r, const char *fac, const char *buf);

/* Statistics' cgrp.join_state (NULL: none); true when "rejoining" changed. */
bool vw_rejoin_stats(vw_rejoin *r, const char *join_state);

/* A commit was answered REBALANCE_IN_PROGRESS: commits (and intake) wait
 * hold_ms. True when no hold was running (the source logs it). */
bool vw_rejoin_in_progress(vw_rejoin *r, int64_t now);

/* A rebalance callback came: this member's generation is current, the hold
 * ends. Then vw_rejoin_assigned or vw_rejoin_revoked. */
void vw_rejoin_callback(vw_rejoin *r);
/* An assignment: after a cooperative revoke it starts a second round, held
 * until it shows in the join state. */
void vw_rejoin_assigned(vw_rejoin *r, int64_t now);
/* A cooperative revoke (the classic protocol: a second round follows unless
 * the assignment was lost; KIP-848 has no rounds). */
void vw_rejoin_revoked_cooperative(vw_rejoin *r, int64_t now, bool lost);

/* The join state says this member is rejoining: from its lines, or from
 * statistics while no line was read. */
bool vw_rejoin_rejoining(vw_rejoin *r);
/* Commits wait after REBALANCE_IN_PROGRESS or a cooperative revoke. */
bool vw_rejoin_commits_held(const vw_rejoin *r, int64_t now);
/* Intake waits: commits are held, or (#4059) the lines say rejoining. */
bool vw_rejoin_intake_held(vw_rejoin *r, int64_t now);
/* Async commits wait: held, or (#4059) rejoining. */
bool vw_rejoin_commit_gated(vw_rejoin *r, int64_t now);
/* A JoinGroup was answered (the lines said so). */
bool vw_rejoin_joined(vw_rejoin *r);

#endif
