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
    char where[300];
    struct stat st;
    vw_config_where(cfg, "model", "bundle", where, sizeof where);
    if (!dir[0])
        return VW_FAIL(err, VW_EINVAL, "config_invalid",
                       "%s: not set: the bundle directory (config.json, weights, "
                       "tokenizer.json, calibration.json, MODEL_MANIFEST.json), or "
                       "VELA_MODEL_BUNDLE",
                       where);
    if (stat(dir, &st))
        return VW_FAIL(err, VW_EIO, "missing_file", "%s: bundle directory '%s': %s", where, dir,
                       strerror(errno));
    if (!S_ISDIR(st.st_mode))
        return VW_FAIL(err, VW_EIO, "missing_file", "%s: bundle directory '%s': not a directory",
                       where, dir);
    return VW_OK;
}

/* The key a failed open is about: the device's choice, the precision, the
 * manifest anchor, else the bundle. */
static const char *key_of(const vw_err *err) {
    static const char *const device[] = {"bad_device", "no_cuda", "device_memory",
                                         "bad_option", "cuda",    NULL};
    if (!strcmp(err->type, "bad_precision"))
        return "precision";
    if (!strcmp(err->type, "manifest_mismatch"))
        return "manifest_sha256";
    for (size_t i = 0; device[i]; i++)
        if (!strcmp(err->type, device[i]))
            return "device";
    return "bundle";
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
    if (st || (st = vw_pipeline_open(cfg, log, out, err)) == VW_OK || !err)
        return st;
    /* "SOURCE: model.KEY: reason", as the configuration's own errors read. */
    char where[300], msg[sizeof err->msg];
    vw_config_where(cfg, "model", key_of(err), where, sizeof where);
    memcpy(msg, err->msg, sizeof msg);
    snprintf(err->msg, sizeof err->msg, "%.150s: %.355s", where, msg);
    return st;
}
