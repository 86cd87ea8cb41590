/* processors.c — the processor factory (see processors.h). */
#include "processors.h"

#include <string.h>

#include "echo.h"
#include "pipeline.h"

vw_status vw_processor_open(const vw_config *cfg, const vw_log *log, vw_processor **out,
                            vw_err *err) {
    *out = NULL;
    if (!strcmp(cfg->model.device, "test-echo")) {
        VW_LOG(log, VW_LOG_WARN, "processor",
               "using the test-only echo processor device=test-echo");
        return vw_echo_processor_new(out, err);
    }
    return vw_pipeline_open(cfg, log, out, err);
}
