/* vw_status.c — status names and the error record (see vw_status.h). */
#include "vw_status.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

const char *vw_status_name(vw_status st) {
    switch (st) {
    case VW_OK:
        return "VW_OK";
    case VW_EINVAL:
        return "VW_EINVAL";
    case VW_ENOMEM:
        return "VW_ENOMEM";
    case VW_EIO:
        return "VW_EIO";
    case VW_EUNSUPPORTED:
        return "VW_EUNSUPPORTED";
    case VW_ETOOLONG:
        return "VW_ETOOLONG";
    case VW_EINTEGRITY:
        return "VW_EINTEGRITY";
    case VW_ECUDA:
        return "VW_ECUDA";
    case VW_EKAFKA:
        return "VW_EKAFKA";
    case VW_ETRANSIENT:
        return "VW_ETRANSIENT";
    }
    return "VW_E?";
}

vw_status vw_err_set(vw_err *err, vw_status st, const char *type, const char *file, int line,
                     const char *fmt, ...) {
    if (!err)
        return st;
    err->status = st;
    snprintf(err->type, sizeof err->type, "%s", type ? type : "error");
    const char *base = strrchr(file, '/');
    snprintf(err->where, sizeof err->where, "%s:%d", base ? base + 1 : file, line);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
    return st;
}

void vw_err_clear(vw_err *err) {
    if (err)
        memset(err, 0, sizeof *err);
}
