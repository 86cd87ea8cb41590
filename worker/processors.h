/* processors.h — the processor model.device names: the test-only echo
 * (`test-echo`, echo.h), or the model pipeline for auto|cpu|cuda
 * (pipeline.h). Ownership: the caller frees it (vw_processor_free). */
#ifndef VW_PROCESSORS_H
#define VW_PROCESSORS_H

#include "processor.h"
#include "service/config.h"
#include "service/log.h"

vw_status vw_processor_open(const vw_config *cfg, const vw_log *log, vw_processor **out,
                            vw_err *err);

#endif
