/* clock.h — the worker's clocks: monotonic milliseconds for deadlines and
 * intervals, seconds for durations, wall-clock milliseconds for record
 * timestamps (end-to-end latency). Thread-safety: any thread. Cannot fail. */
#ifndef VW_CLOCK_H
#define VW_CLOCK_H

#include <stdint.h>

/* Monotonic milliseconds (CLOCK_MONOTONIC). */
int64_t vw_now_ms(void);
/* Monotonic seconds, with nanosecond resolution. */
double vw_now_s(void);
/* Milliseconds since the epoch (CLOCK_REALTIME), as Kafka timestamps. */
int64_t vw_wall_ms(void);

#endif
