/* fuzz_config.c — libFuzzer target: arbitrary bytes as the YAML configuration.
 * The parser must return VW_OK or VW_EINVAL with a message, never crash or
 * leak, and an accepted config must carry its required fields. */
#include "service/config.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *envp[] = {"VELA_TOPICS_REPLY_ALLOW=a,b", NULL};
    vw_config *cfg = NULL;
    vw_err err = {0};
    vw_status st = vw_config_parse((const char *)data, size, "fuzz.yaml", envp, &cfg, &err);
    if (st == VW_OK) {
        if (!cfg || !cfg->topics.input || !cfg->topics.dlq || cfg->topics.n_reply_allow != 2)
            abort();
    } else if ((st != VW_EINVAL && st != VW_ENOMEM) || cfg || !err.msg[0]) {
        abort();
    }
    vw_config_free(cfg);
    return 0;
}
