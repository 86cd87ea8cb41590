/* config_where.c — vw_config_where (config.h): where an error about a field
 * points, from vw_config_set_at and the field's variable name. */
#include "config.h"

#include <stdio.h>
#include <string.h>

const char *vw_config_where(const vw_config *cfg, const char *section, const char *key, char *buf,
                            size_t cap) {
    int line = vw_config_set_at(cfg, section, key);
    if (line > 0) {
        snprintf(buf, cap, "%s:%d: %s.%s", cfg->source, line, section, key);
    } else if (line == 0) {
        vw_config_env_name(section, key, buf, cap);
        size_t n = strlen(buf);
        snprintf(buf + n, cap - n, " (environment)");
    } else {
        snprintf(buf, cap, "%s: %s.%s", cfg->source, section, key);
    }
    return buf;
}
