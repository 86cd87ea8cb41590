/* config_shape.h — the bounds a configuration document must keep before it is
 * loaded (docs/worker.md "Configuration").
 *
 * Refuses, from libyaml's events and before its loader builds the document:
 * nesting deeper than VW_CONFIG_MAX_DEPTH (the loader took 22 s on 100,000
 * nested flow sequences, 40 s on mappings), more than VW_CONFIG_MAX_ALIASES
 * anchors or aliases, an alias inside the node it names, and a document larger
 * than VW_CONFIG_MAX_BYTES or whose scalars, each alias expanded where it
 * stands, pass it (the parse copies an aliased scalar once per alias: a 1 MB
 * scalar aliased 10,000 times took 3.2 GB). A syntax error is left to the
 * loader, which reports it.
 *
 * Errors: VW_EINVAL, type "config_invalid", "NAME:LINE: YAML: why" (NAME alone
 * for the size of the file); VW_ENOMEM. Pure: no state survives the call;
 * any thread.
 */
#ifndef VW_CONFIG_SHAPE_H
#define VW_CONFIG_SHAPE_H

#include <stddef.h>

#include "vw_status.h"

/* The deepest YAML nesting accepted: a configuration needs 3 (kafka.consumer.<prop>);
 * deeper documents are refused before libyaml loads them (its loader's time grows
 * with the square of the depth). */
#define VW_CONFIG_MAX_DEPTH 8
/* The most anchors, and the most aliases, a configuration may hold (it needs
 * none; docs/worker.md "Configuration"). */
#define VW_CONFIG_MAX_ALIASES 64
/* The largest configuration: the file, and the bytes of its scalars with every
 * alias expanded where it stands (a real one is a few KiB). Refused before
 * libyaml loads the document, with FILE:LINE for an expansion. */
#define VW_CONFIG_MAX_BYTES 1048576

/* Checks len bytes of YAML (name: the file, for messages). */
vw_status vw_config_shape_check(const char *yaml, size_t len, const char *name, vw_err *err);

#endif
