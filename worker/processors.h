/* processors.h — the processor model.device names: the test-only echo
 * (`test-echo`, echo.h), or the model pipeline for auto|cpu|cuda
 * (pipeline.h). Ownership: the caller frees it (vw_processor_free).
 * Errors, each "SOURCE: model.KEY: reason" with the key's source as
 * vw_config_where names it: model.bundle not set: VW_EINVAL "config_invalid";
 * not a directory: VW_EIO "missing_file" naming the path; then the
 * pipeline's own (model.device for the device's choice, model.precision,
 * model.bundle for the rest). */
#ifndef VW_PROCESSORS_H
#define VW_PROCESSORS_H

#include "processor.h"
#include "service/config.h"
#include "service/log.h"

vw_status vw_processor_open(const vw_config *cfg, const vw_log *log, vw_processor **out,
                            vw_err *err);

#endif
