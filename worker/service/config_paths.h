/* config_paths.h — the relative paths of a configuration file, taken from
 * the file's directory (config.h vw_config_load; docs/worker.md
 * "Configuration"): model.bundle, librdkafka's *.location properties (but
 * ssl.ca.location's "probe") and sasl.kerberos.keytab, when the file set them;
 * an environment override's path stays as given (the current directory).
 * Thread-safety: the loading thread, before the config is shared. Errors:
 * VW_ENOMEM. */
#ifndef VW_CONFIG_PATHS_H
#define VW_CONFIG_PATHS_H

#include "config.h"

/* Rewrites cfg's relative paths set in `path` (the file cfg came from) as
 * dir(path)/value; a file in the current directory changes nothing. */
vw_status vw_config_resolve_paths(vw_config *cfg, const char *path, vw_err *err);

#endif
