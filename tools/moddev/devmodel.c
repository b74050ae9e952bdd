/* The model registry: the kinds and named models the daemon knows (devmodel.h). */
#include <string.h>

#include "devmodel.h"
#include "devspec.h"
#include "errmsg.h"

const char *const dev_op_names[DEV_NR_OPS] = { "read", "write", "flush" };

/* A new model kind or named model is added here (docs/devices.md, "Adding a model"). */
/* clang-format off */
const struct dev_model_type *const dev_model_types[] = {
	&dev_model_fixed,
	&dev_model_hdd,
	&dev_model_ssd,
	&dev_model_raid0,
	&dev_model_raid1,
	&dev_model_raid10,
	&dev_model_raid5,
	&dev_model_wbcache,
	/* the seeds' devices */
	&dev_model_mtron_7035,
	&dev_model_mtron_7025,
	&dev_model_mtron_mobi3000,
	&dev_model_intel320,
	&dev_model_intel320_raid0x2,
	&dev_model_wd740adfd,
	&dev_model_wd740adfd_wce,
	&dev_model_raptor_raid5x8,
	&dev_model_mba3147rc,
	&dev_model_sas_raid10x8,
	&dev_model_mtron_raid5x4_arc1220,
	&dev_model_raptor_arc1280ml,
	&dev_model_mobi3000_arc1280ml,
	NULL,
};
/* clang-format on */

/*
 * Members of members multiply (an array of 32 arrays of 32 ...): one spec
 * makes at most this many models, so that a typo cannot make a million.
 */
#define MAX_MODELS_PER_SPEC 256

struct dev_model *dev_model_create_n(const char *spec, size_t len, uint64_t size, char *err,
				     size_t errlen)
{
	/* the models made by the outermost call in progress (members are made inside it) */
	static __thread unsigned depth, made;
	const struct dev_model_type *type;
	struct dev_params p;
	struct dev_model *m;

	if (dev_spec_parse(dev_model_types, spec, len, &type, &p, err, errlen))
		return NULL;
	if (!depth)
		made = 0;
	if (++made > MAX_MODELS_PER_SPEC) {
		pack_errf(err, errlen,
			  "model: more than %d models in one spec (members of members)",
			  MAX_MODELS_PER_SPEC);
		return NULL;
	}
	depth++;
	m = type->create(&p, size, err, errlen);
	depth--;
	return m;
}

struct dev_model *dev_model_create(const char *spec, uint64_t size, char *err, size_t errlen)
{
	return dev_model_create_n(spec, strlen(spec), size, err, errlen);
}
