/* reserve.h — room for n elements in a growable array (doubling from 16).
 * Ownership: *p is realloc'd in place and stays the caller's. Thread-safety:
 * the caller's array. Errors: VW_ENOMEM leaves *p and *cap as they were.
 */
#ifndef VW_RESERVE_H
#define VW_RESERVE_H

#include <stddef.h>

#include "vw_status.h"

/* Makes *cap >= n for elements of sz bytes. */
vw_status vw_reserve(void **p, size_t *cap, size_t n, size_t sz);

#endif
