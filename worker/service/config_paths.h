/* config_paths.h — a configuration file's relative paths, taken from the
 * file's directory (config.h vw_config_load; docs/worker.md "Configuration"):
 * which librdkafka properties are paths, and the join. Thread-safety: none
 * needed (pure functions). Errors: VW_ENOMEM. */
#ifndef VW_CONFIG_PATHS_H
#define VW_CONFIG_PATHS_H

#include <stdbool.h>

#include "vw_status.h"

/* A librdkafka property that names a file: *.location (but ssl.ca.location's
 * "probe", the system's store) and sasl.kerberos.keytab. */
bool vw_config_path_prop(const char *key, const char *value);

/* *path, when relative, becomes dir(file)/path (its storage replaced: malloc
 * and free); an absolute or empty path, or a file in the current directory,
 * leaves it. */
vw_status vw_config_path_under(const char *file, char **path, vw_err *err);

#endif
