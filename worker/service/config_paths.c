/* config_paths.c — see config_paths.h. */
#include "config_paths.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A path property of librdkafka's (a file it reads). */
static bool kafka_path(const vw_kv *kv) {
    size_t n = strlen(kv->key);
    if (!strcmp(kv->key, "ssl.ca.location") && !strcmp(kv->value, "probe"))
        return false; /* the system's CA store */
    return (n > 9 && !strcmp(kv->key + n - 9, ".location")) ||
           !strcmp(kv->key, "sasl.kerberos.keytab");
}

/* *slot, a relative path, joined to dir. */
static vw_status under(const char *dir, size_t dir_len, char **slot, vw_err *err) {
    if (!**slot || **slot == '/')
        return VW_OK;
    size_t n = dir_len + 1 + strlen(*slot) + 1;
    char *joined = malloc(n);
    if (!joined)
        return VW_FAIL(err, VW_ENOMEM, "out_of_memory", "config path");
    snprintf(joined, n, "%.*s%s%s", (int)dir_len, dir, dir[dir_len - 1] == '/' ? "" : "/", *slot);
    free(*slot);
    *slot = joined;
    return VW_OK;
}

vw_status vw_config_resolve_paths(vw_config *cfg, const char *path, vw_err *err) {
    const char *slash = strrchr(path, '/');
    if (!slash)
        return VW_OK; /* the file is in the current directory */
    size_t dir_len = slash == path ? 1 : (size_t)(slash - path);
    vw_status st = VW_OK;
    if (vw_config_set_at(cfg, "model", "bundle") > 0)
        st = under(path, dir_len, &cfg->model.bundle, err);
    vw_kvlist *lists[] = {&cfg->kafka.common, &cfg->kafka.consumer, &cfg->kafka.producer};
    for (size_t k = 0; k < 3 && !st; k++)
        for (size_t i = 0; i < lists[k]->n && !st; i++)
            if (lists[k]->items[i].line > 0 && kafka_path(&lists[k]->items[i]))
                st = under(path, dir_len, &lists[k]->items[i].value, err);
    return st;
}
