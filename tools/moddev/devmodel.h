/*
 * The model interface of the modeled-device daemon (tools/moddev): what a
 * device model is given and what it answers. No FUSE, no threads, no clock:
 * a model is a discrete-event simulation that the caller advances in time,
 * so that it can be unit-tested and fuzzed with made-up times, and composed
 * (an array of member models, a controller cache in front of a model).
 *
 * Time is in ns on CLOCK_MONOTONIC's scale. The caller (devsched.h) keeps
 * the calls in time order: every submit() and advance() is at a time no
 * earlier than the one before.
 *
 * A request enters the device with submit() at r->arrival_ns. The model
 * keeps it (queued, in service, in a cache being destaged: its own state)
 * and sets r->start_ns when it starts serving it. advance(now) runs every
 * event of the model up to and including @now, in time order, and hands
 * each request that completes to done() with r->done_ns set (in
 * nondecreasing done_ns order); after that the model never touches it.
 * next_event() is the earliest time at which the model has something to do
 * (a completion, a disk that finishes a seek and picks its next request, a
 * destage step), so the caller can sleep until then.
 *
 * Because requests wait inside the model until it decides, a model sees its
 * whole queue when it picks what to serve next: an HDD with NCQ orders its
 * queued requests by positioning time from where the head and the platter
 * are at that moment. A composite model calls its members' submit, advance
 * and next_event with requests of its own (a RAID-5 stripe's reads, then
 * its writes), and its own next_event is the earliest of its members'.
 */
#ifndef MODDEV_DEVMODEL_H
#define MODDEV_DEVMODEL_H

#include <stdint.h>
#include <stddef.h>

#define DEV_NEVER UINT64_MAX

/* clang-format off */
enum dev_op {
	DEV_READ,
	DEV_WRITE,
	DEV_FLUSH,	/* a cache flush (fsync of the device): no data */
	DEV_NR_OPS,
};
/* clang-format on */

extern const char *const dev_op_names[DEV_NR_OPS];

struct dev_req {
	uint64_t arrival_ns; /* set by the caller */
	uint64_t start_ns;   /* set by the model: when its service began */
	uint64_t done_ns;    /* set by the model: when it completed */
	uint64_t offset;     /* bytes from the device's start */
	uint32_t len;	     /* bytes; 0 for a flush */
	enum dev_op op;
	/*
	 * The model's while it holds the request (its queue links); the
	 * caller's again once done() has been called.
	 */
	struct dev_req *next;
	uint64_t seq; /* arrival order, set by the caller: ties break by it */
	void *owner;  /* the caller's (the daemon: its FUSE request) */
};

typedef void (*dev_done_fn)(void *arg, struct dev_req *r);

struct dev_model;

struct dev_model_ops {
	/* 0, or -1 when the model cannot hold it (out of memory): the caller fails it */
	int (*submit)(struct dev_model *m, struct dev_req *r);
	uint64_t (*next_event)(const struct dev_model *m);
	void (*advance)(struct dev_model *m, uint64_t now, dev_done_fn done, void *arg);
	void (*destroy)(struct dev_model *m);
};

struct dev_model {
	const struct dev_model_ops *ops;
	const struct dev_model_type *type;
	uint64_t size; /* bytes the device holds */
	/*
	 * How many requests it can serve at once (channels, spindles), and
	 * the service time its servers have spent up to the last completion:
	 * utilisation = service_ns / (servers * elapsed).
	 */
	unsigned servers;
	uint64_t service_ns;
};

/*
 * The parameters of a model, as the spec names them ("channels=4"): each
 * a number in [min, max], required or with its default, or (@model) a
 * member model's spec in parentheses. Units are in the key (_us, _mbps,
 * _kb) so that a spec reads without a manual.
 */
#define DEV_MAX_PARAMS 16

struct dev_param {
	const char *key;
	double min, max;
	double def; /* when not required */
	int required;
	int integer; /* only whole numbers */
	int model;   /* a member model's spec, "(...)" */
	const char *help;
};

struct dev_params {
	double v[DEV_MAX_PARAMS];
	unsigned char given[DEV_MAX_PARAMS];
	/* a model parameter: its spec, inside the parentheses (into the parsed text) */
	const char *sub[DEV_MAX_PARAMS];
	size_t sublen[DEV_MAX_PARAMS];
};

/*
 * A kind of model ("fixed", "hdd", ...) or a named model: a device of the
 * field whose parameters come from public specifications, written as a
 * spec of a kind (@alias_of) with the documents it comes from (@sources).
 */
struct dev_model_type {
	const char *name;
	const char *summary;
	const struct dev_param *params;
	unsigned nparams;
	const char *alias_of; /* a named model: the spec it stands for */
	const char *const *sources;
	/* NULL and a one-line reason in @err when the parameters cannot be served */
	struct dev_model *(*create)(const struct dev_params *p, uint64_t size, char *err,
				    size_t errlen);
};

/*
 * The one way a type is written. A kind: dev_model_ID, named ID in a spec,
 * with its parameter table @PARAMS, its @CREATE, and its sources (the
 * strings after @CREATE).
 */
#define DEV_MODEL_KIND(ID, SUMMARY, PARAMS, CREATE, ...)                 \
	static const char *const ID##_sources[] = { __VA_ARGS__, NULL }; \
	const struct dev_model_type dev_model_##ID = {                   \
		.name = #ID,                                             \
		.summary = SUMMARY,                                      \
		.params = PARAMS,                                        \
		.nparams = sizeof(PARAMS) / sizeof((PARAMS)[0]),         \
		.sources = ID##_sources,                                 \
		.create = CREATE,                                        \
	}

/* A named model: dev_model_ID, named @NAME, the kind's @SPEC it stands for, its sources. */
#define DEV_MODEL_NAMED(ID, NAME, SUMMARY, SPEC, ...)                    \
	static const char *const ID##_sources[] = { __VA_ARGS__, NULL }; \
	const struct dev_model_type dev_model_##ID = {                   \
		.name = NAME,                                            \
		.summary = SUMMARY,                                      \
		.alias_of = SPEC,                                        \
		.sources = ID##_sources,                                 \
	}

/* Every model the daemon knows, in the order `device models` lists them. */
extern const struct dev_model_type *const dev_model_types[];

/*
 * The model a spec names ("fixed:channels=4,latency_us=1000", or a named
 * model), for a device of @size bytes. NULL and a one-line reason naming
 * the model, the key or the value in @err.
 */
struct dev_model *dev_model_create(const char *spec, uint64_t size, char *err, size_t errlen);
/* The same for a spec of @len bytes (a member's, inside its parentheses). */
struct dev_model *dev_model_create_n(const char *spec, size_t len, uint64_t size, char *err,
				     size_t errlen);

static inline void dev_model_destroy(struct dev_model *m)
{
	if (m)
		m->ops->destroy(m);
}

/* The model kinds (one file each). */
extern const struct dev_model_type dev_model_fixed;
extern const struct dev_model_type dev_model_hdd;
extern const struct dev_model_type dev_model_ssd;
extern const struct dev_model_type dev_model_raid0;
extern const struct dev_model_type dev_model_raid1;
extern const struct dev_model_type dev_model_raid10;
extern const struct dev_model_type dev_model_raid5;
extern const struct dev_model_type dev_model_wbcache;

/* The named models: the seeds' devices (models_named.c, docs/devices.md). */
extern const struct dev_model_type dev_model_mtron_7035;
extern const struct dev_model_type dev_model_mtron_7025;
extern const struct dev_model_type dev_model_mtron_mobi3000;
extern const struct dev_model_type dev_model_intel320;
extern const struct dev_model_type dev_model_intel320_raid0x2;
extern const struct dev_model_type dev_model_wd740adfd;
extern const struct dev_model_type dev_model_wd740adfd_wce;
extern const struct dev_model_type dev_model_raptor_raid5x8;
extern const struct dev_model_type dev_model_mba3147rc;
extern const struct dev_model_type dev_model_sas_raid10x8;
extern const struct dev_model_type dev_model_mtron_raid5x4_arc1220;
extern const struct dev_model_type dev_model_raptor_arc1280ml;
extern const struct dev_model_type dev_model_mobi3000_arc1280ml;

#endif
