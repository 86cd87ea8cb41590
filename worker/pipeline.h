/* pipeline.h — the model processor (processor.h) over core/engine.h: admit
 * plans a request (admission + render; rejections finish at once); a
 * micro-batch of plans is packed (prepare: vw_engine_pack), run in one
 * executor call (execute) and finished (heads, answers, one envelope per item).
 *
 * Failures: an executor VW_ETRANSIENT makes every item of the batch RETRY; any
 * other batch failure is retried plan by plan (vw_engine_execute) so one
 * poison request cannot sink its neighbours, and an item that still fails is
 * FATAL (dead-lettered), or RETRY when its own failure is transient.
 * Ownership: the processor owns the engine; items are plans (vw_plan_free).
 * Thread-safety: admit, prepare, execute and finish may overlap (engine.h). */
#ifndef VW_PIPELINE_H
#define VW_PIPELINE_H

#include "service/config.h"
#include "service/log.h"
#include "processor.h"

/* Opens model.bundle on model.device (auto|cpu|cuda) and logs the choice. */
vw_status vw_pipeline_open(const vw_config *cfg, const vw_log *log, vw_processor **out,
                           vw_err *err);

#endif
