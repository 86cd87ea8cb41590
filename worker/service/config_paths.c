/* config_paths.c — see config_paths.h. */
#include "config_paths.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool vw_config_path_prop(const char *key, const char *value) {
    size_t n = strlen(key);
    if (!strcmp(key, "ssl.ca.location") && !strcmp(value, "probe"))
        return false;
    return (n > 9 && !strcmp(key + n - 9, ".location")) || !strcmp(key, "sasl.kerberos.keytab");
}

vw_status vw_config_path_under(const char *file, char **path, vw_err *err) {
    const char *slash = strrchr(file, '/');
    if (!slash || !**path || **path == '/')
        return VW_OK;
    size_t dir_len = slash == file ? 1 : (size_t)(slash - file);
    size_t n = dir_len + 1 + strlen(*path) + 1;
    char *joined = malloc(n);
    if (!joined)
        return VW_FAIL(err, VW_ENOMEM, "out_of_memory", "config path");
    snprintf(joined, n, "%.*s%s%s", (int)dir_len, file, file[dir_len - 1] == '/' ? "" : "/", *path);
    free(*path);
    *path = joined;
    return VW_OK;
}
