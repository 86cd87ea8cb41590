/* processors.c — the processor factory (see processors.h). */
#include "processors.h"

#include <errno.h>
#include <string.h>
#include <sys/stat.h>

#include "echo.h"
#include "pipeline.h"

/* The two ways model.bundle can be wrong before the bundle's own checks
 * (core/model/bundle.c) run, with the key and the path named (a missing key
 * read "bundle directory : No such file or directory"). */
static vw_status check_bundle_dir(const vw_config *cfg, vw_err *err) {
    const char *dir = cfg->model.bundle;
    struct stat st;
    if (!dir[0])
        return VW_FAIL(err, VW_EINVAL, "config_invalid",
                       "%s: model.bundle: not set: the bundle directory (config.json, weights, "
                       "tokenizer.json, calibration.json, MODEL_MANIFEST.json), or "
                       "VELA_MODEL_BUNDLE",
                       cfg->source);
    if (stat(dir, &st))
        return VW_FAIL(err, VW_EIO, "missing_file", "model.bundle: bundle directory '%s': %s", dir,
                       strerror(errno));
    if (!S_ISDIR(st.st_mode))
        return VW_FAIL(err, VW_EIO, "missing_file",
                       "model.bundle: bundle directory '%s': not a directory", dir);
    return VW_OK;
}

vw_status vw_processor_open(const vw_config *cfg, const vw_log *log, vw_processor **out,
                            vw_err *err) {
    *out = NULL;
    if (!strcmp(cfg->model.device, "test-echo")) {
        VW_LOG(log, VW_LOG_WARN, "processor",
               "using the test-only echo processor device=test-echo");
        return vw_echo_processor_new(out, err);
    }
    vw_status st = check_bundle_dir(cfg, err);
    return st ? st : vw_pipeline_open(cfg, log, out, err);
}
