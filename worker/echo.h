/* echo.h — the test-only echo processor (processor.h), for the Kafka tests.
 * Ownership and threads: as processor.h. */
#ifndef VW_ECHO_H
#define VW_ECHO_H

#include "processor.h"

/* The test-echo processor (model.device: test-echo). For a request object with
 * a "questions" map it answers every question with {"echo": <qid>} and reports
 * usage {"bytes", "tokens", "sha256"} of the request; its token cost is
 * bytes/4 + 1. Test hooks, read from the environment at open:
 *   VW_TEST_ECHO_RETRY="<request-id>:<n>"  the first n runs of that request
 *                                          return RETRY;
 *   VW_TEST_ECHO_HUGE="<request-id>"       that request's result is 2 MiB
 *                                          (larger than the producer's
 *                                          message.max.bytes: dead-letter path);
 *   VW_TEST_ECHO_DELAY_MS="<ms>"           each batch's execute step (the
 *                                          executor thread) sleeps that long;
 *                                          cancel (processor.h) ends the sleep
 *                                          within 10 ms and fails later batches;
 *   VW_TEST_ECHO_SLOW="<request-id>:<ms>"  admit of that request (an
 *                                          admission thread) sleeps ms: a
 *                                          heavy record's plan.
 * It is never selected by default. */
vw_status vw_echo_processor_new(vw_processor **out, vw_err *err);

#endif
