/* log.h — structured logs on stderr: one line per event.
 *
 * A message is free text followed by key=value tokens, e.g.
 *   VW_LOG(lg, VW_LOG_INFO, "worker", "assigned partitions=%d tp=%s", n, tp);
 * Format "json" writes {"ts","level","module","msg",<key>:<value>...,"where"}
 * (numbers stay numbers; a value may be "double quoted" to hold spaces); format
 * "text" writes the line as is behind a timestamp, level and module.
 * Log sizes and ids, never payloads (docs/style.md "Logging").
 *
 * VW_LOG checks the level before its arguments are evaluated (Redis serverLog).
 * vw_log is a plain value set once at start-up and read-only afterwards, so one
 * logger may be shared by every thread; each event is written with one fwrite.
 * Logging never fails the caller: an event that cannot be formatted is cut short.
 */
#ifndef VW_LOG_H
#define VW_LOG_H

#include <stdio.h>

typedef enum vw_log_level {
    VW_LOG_DEBUG = 0,
    VW_LOG_INFO,
    VW_LOG_WARN,
    VW_LOG_ERROR,
    VW_LOG_OFF
} vw_log_level;

typedef enum vw_log_format { VW_LOG_JSON = 0, VW_LOG_TEXT } vw_log_format;

typedef struct vw_log {
    vw_log_level level; /* events below this level are skipped */
    vw_log_format format;
    FILE *out; /* NULL means stderr */
} vw_log;

/* "debug", "info", "warn", "error", "off" -> level; returns -1 when unknown. */
int vw_log_level_parse(const char *s);
const char *vw_log_level_name(vw_log_level lvl);

/* Writes one event (use VW_LOG, which filters by level first). */
void vw_log_emit(const vw_log *lg, vw_log_level lvl, const char *module, const char *file, int line,
                 const char *fmt, ...) __attribute__((format(printf, 6, 7)));

#define VW_LOG(lg, lvl, module, ...)                                                               \
    do {                                                                                           \
        const vw_log *vw_lg_ = (lg);                                                               \
        if (vw_lg_ && (lvl) >= vw_lg_->level)                                                      \
            vw_log_emit(vw_lg_, (lvl), (module), __FILE__, __LINE__, __VA_ARGS__);                 \
    } while (0)

#endif
