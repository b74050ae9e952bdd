/*
 * Model specs as users write them: "NAME" or "NAME:key=value,key=value".
 * A value is a number (decimal, optionally with a fraction), or, for a
 * parameter that is itself a model (an array's member), a spec in
 * parentheses: "raid0:members=2,member=(fixed:channels=1,latency_us=80)".
 * Every error is one line that names the model and the key or value.
 */
#ifndef MODDEV_DEVSPEC_H
#define MODDEV_DEVSPEC_H

#include <stddef.h>

#include "devmodel.h"

/*
 * Parses @spec (@len bytes, not necessarily NUL-terminated) against the
 * model kinds of @types (NULL-terminated). A named model (alias_of) takes
 * no parameters of its own: it is the spec it stands for. Returns 0 with
 * the kind in *@type and every parameter in @p (the given ones, the
 * defaults for the others), or -1 with a one-line reason in @err.
 */
int dev_spec_parse(const struct dev_model_type *const *types, const char *spec, size_t len,
		   const struct dev_model_type **type, struct dev_params *p, char *err,
		   size_t errlen);

/* The index of @key in @type's parameter table, or -1. */
int dev_param_index(const struct dev_model_type *type, const char *key);

#endif
