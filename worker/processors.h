/* processors.h — the processor model.device names: the test-only echo
 * (`test-echo`, echo.h), or the model pipeline for auto|cpu|cuda
 * (pipeline.h). Ownership: the caller frees it (vw_processor_free).
 * Errors: model.bundle not set: VW_EINVAL "config_invalid" ("FILE:
 * model.bundle: not set ..."); not a directory: VW_EIO "missing_file" naming
 * the key and the path; then the pipeline's own. */
#ifndef VW_PROCESSORS_H
#define VW_PROCESSORS_H

#include "processor.h"
#include "service/config.h"
#include "service/log.h"

vw_status vw_processor_open(const vw_config *cfg, const vw_log *log, vw_processor **out,
                            vw_err *err);

#endif
