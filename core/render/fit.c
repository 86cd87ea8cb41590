/* fit.c — the packages' truncation order (see fit.h). */
#include "fit.h"

static int64_t over_of(int64_t fixed, int64_t schema, const int64_t *kept, size_t n,
                       int64_t budget) {
    int64_t total = fixed + schema - budget;
    for (size_t i = 0; i < n; i++)
        total += kept[i];
    return total;
}

static int64_t max64(int64_t a, int64_t b) {
    return a > b ? a : b;
}

vw_fit_result vw_fit(int64_t schema, int64_t *kept, const bool *read, size_t n_parts,
                     int64_t budget, int shrink) {
    vw_fit_result r = {0};
    /* bos/eos, separator and one marker per part: the 0.3B's accounting,
     * which the decoders reuse (§7.3). */
    const int64_t fixed = 2 + 1 + (int64_t)n_parts;
    int64_t over = over_of(fixed, schema, kept, n_parts, budget);
    if (shrink >= 0 && over > 0) {
        int64_t len = kept[shrink];
        int64_t keep = max64(len < VW_FIT_FLOOR ? len : VW_FIT_FLOOR, len - over);
        r.shrink_cut += len - keep;
        kept[shrink] = keep;
        over = over_of(fixed, schema, kept, n_parts, budget);
        if (over > 0) {
            keep = max64(1, kept[shrink] - over);
            r.shrink_cut += kept[shrink] - keep;
            kept[shrink] = keep;
            over = over_of(fixed, schema, kept, n_parts, budget);
        }
    }
    for (size_t i = 0; i < n_parts && over > 0; i++) {
        if (!read[i])
            continue;
        int64_t keep = max64(1, kept[i] - over);
        r.protected_cut += kept[i] - keep;
        kept[i] = keep;
        over = over_of(fixed, schema, kept, n_parts, budget);
    }
    r.over = over;
    r.fits = over <= 0;
    return r;
}
