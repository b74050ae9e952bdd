/*
 * What every engine of the pack needs from fio beyond the ioengine_ops
 * interface: the check that it runs in the fio it was built for, the
 * numjobs of a clone, direction flipping, run-time crediting, and option
 * string storage. Compiled into each engine (with fio's headers); the
 * fio-independent logic lives in engines/lib.
 */
#ifndef PACK_FIOGLUE_H
#define PACK_FIOGLUE_H

#include "fio.h"
/* what this fio has, probed from its source at build time (scripts/fio-features.sh) */
#include "pack-fio-features.h"

#ifndef PACK_FIO_VERSION
#error "PACK_FIO_VERSION must name the fio version the engine is built against"
#endif

/*
 * Every difference between the fio versions the pack supports (3.28 to
 * master) is handled here, behind the PACK_FIO_HAVE_* probes: the engines
 * themselves hold no version tests.
 */

/*
 * For an async engine's ioengine_ops flags: it sets io_u->issue_time itself.
 * fio before 3.31 has no such flag and stamps issue_time after ->queue
 * returns; engines/glue/ioq puts the engine's stamp back at ->event then.
 */
#if PACK_FIO_HAVE_ASYNCIO_SETS_ISSUE_TIME
#define PACK_ASYNCIO_SETS_ISSUE_TIME FIO_ASYNCIO_SETS_ISSUE_TIME
#else
#define PACK_ASYNCIO_SETS_ISSUE_TIME 0
#endif

/*
 * The fio functions that not every release has are declared weak here. The
 * engines are linked -z now: a strong reference to a name the running fio
 * lacks fails dlopen, and fio says only "not loadable", before the check
 * that names the fio the engine was built for can run (get_ioengine). That
 * check refuses such a fio before any hook runs, so none of these is called
 * where it is missing. A new probe of a function adds its name here and in
 * tests/engines/test_build.py's VERSIONED_FIO_CALLS.
 */
#if PACK_FIO_HAVE_CLAT_PRIO
extern int alloc_clat_prio_stat_ddir(struct thread_stat *, enum fio_ddir, int)
	__attribute__((weak));
#endif

/* Whether job @td is still in its ramp_time: fio 3.42 renamed the call. */
#if PACK_FIO_HAVE_IN_RAMP_PERIOD
extern bool in_ramp_period(struct thread_data *) __attribute__((weak));
#define pack_in_ramp(td) in_ramp_period(td)
#else
extern bool in_ramp_time(struct thread_data *) __attribute__((weak));
#define pack_in_ramp(td) in_ramp_time(td)
#endif

/*
 * fio's per-priority latency statistics (the JSON's "prios", fio 3.30 on),
 * which the engines use to split one direction by kind of operation.
 * pack_prio_stats() gives direction @ddir one entry per value of @ioprio
 * (@n of them); io_us name theirs with pack_io_u_prio(io_u, ioprio, index).
 * 0, or 1 out of memory. Where fio lacks them it does nothing (the engine
 * says so once with pack_fio_lacks()).
 */
int pack_prio_stats(struct thread_data *td, enum fio_ddir ddir,
		    const unsigned short *ioprio, int n);

static inline void pack_io_u_prio(struct io_u *io_u, unsigned short ioprio, int index)
{
	io_u->ioprio = ioprio;
#if PACK_FIO_HAVE_CLAT_PRIO
	io_u->clat_prio_index = (unsigned short)index;
#else
	(void)index;
#endif
}

/*
 * Gives job @td the engine flag @flag (FIO_SYNCIO for an engine whose mode
 * is chosen per job) on top of its ioengine_ops flags. fio keeps them in
 * td->flags above its own, from TD_ENG_FLAG_SHIFT on, which moved between
 * releases (17 in 3.28, 18 in 3.33, __TD_F_LAST from 3.39).
 */
static inline void pack_engine_flag_set(struct thread_data *td, unsigned long long flag)
{
	td->flags |= flag << TD_ENG_FLAG_SHIFT;
}

/* 1 where this fio has per-priority statistics. */
static inline int pack_fio_has_prios(void)
{
	return PACK_FIO_HAVE_CLAT_PRIO;
}

/*
 * Says in one line, once for job @td and its clones, what this fio lacks
 * that @engine would use: "@engine: fio-3.28 has no @feature (fio @since and
 * later): @consequence". Call from ->init.
 */
void pack_fio_lacks(struct thread_data *td, const char *engine, const char *feature,
		    const char *since, const char *consequence);

/*
 * Whether the fio we are loaded into is one this engine may run in: the
 * version it was compiled against, with the same struct layouts as far as
 * what fio exports shows (fioglue.c says what is compared). Decided once,
 * without reading any thread_data, so it can run before anything does:
 * PACK_EXPORT_ENGINE's get_ioengine asks first. 0 if it may; else 1, with
 * one line naming @engine, both fios and the command that builds for this
 * one when @say (once in a process).
 */
int pack_host_fio_refused(const char *engine, int say);

/*
 * pack_host_fio_refused() plus the thread_data checks that compare, without
 * following, a pointer of @td (@ops: the engine's ioengine_ops). The first
 * thing in ->setup (fio's first call with a thread_data) and ->init: 0, or
 * 1 after a one-line error naming @engine.
 */
int pack_check_host_fio(struct thread_data *td, const char *engine,
			const struct ioengine_ops *ops);

/* numjobs= of the job @td is a clone of (fio resets it to 1 in clones). */
unsigned pack_clone_count(struct thread_data *td);

/*
 * An engine that decides an io_u's direction itself (in ->prep) must let
 * fio's read-only/direction asserts accept it until ->queue: this sets the
 * job's rw bits for @ddir and saves the old ones in *@saved;
 * pack_ddir_restore() (first thing in ->queue) puts them back, or the next
 * io_u would see e.g. fio's trimwrite offset pairing. Inline: called for
 * every I/O.
 */
static inline void pack_ddir_allow(struct thread_data *td, enum fio_ddir ddir, unsigned *saved)
{
	*saved = td->o.td_ddir;
	if (ddir == DDIR_WRITE)
		td->o.td_ddir |= TD_DDIR_WRITE;
	else if (ddir == DDIR_TRIM)
		td->o.td_ddir |= TD_DDIR_TRIM;
	else if (ddir == DDIR_READ)
		td->o.td_ddir |= TD_DDIR_READ;
}

static inline void pack_ddir_restore(struct thread_data *td, unsigned saved)
{
	td->o.td_ddir = saved;
}

/*
 * fio credits a direction with run time only if rw= includes it and it
 * moved bytes, so a delete-only job (trim, 0 bytes) would report 0 IOPS.
 * Gives every direction that did I/O the job's run time (@fallback_ms if
 * fio recorded none). Call from ->cleanup.
 */
void pack_fix_runtimes(struct thread_data *td, uint64_t fallback_ms);

/*
 * The file hooks of an engine whose files are its own business (fio sees
 * one virtual file): open, close, size, invalidate and unlink do nothing.
 * unlink in particular: fio's unlink= must never remove an engine's files.
 */
int pack_file_noop(struct thread_data *td, struct fio_file *f);

/*
 * fio's log_err() for an engine's error lines: @fmt ends in "\n" as there,
 * and a control character in an argument (a newline in a user's path or job
 * name) is printed as '?' (errmsg.h pack_vline), so one error is one line.
 */
void pack_log_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/*
 * The same for a report or a note (not an error): on stderr, never in
 * fio's output file; under fio --server, on the server's stderr only, so
 * the client's output stays fio's JSON (pack_emit in fioglue.c).
 */
void pack_log_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Stores a copy of @val ("" for NULL) in *@field: for FIO_OPT_STR callbacks
 * of options that accept an empty value (an unset ${VAR} in a job file). */
int pack_store_str(char **field, const char *val);

/*
 * A directory name for the job @td: its name in letters, digits, '.', '_' and
 * '-' (others become '_'), then ".N", N its number among numjobs clones.
 */
void pack_job_dir_name(struct thread_data *td, char *buf, size_t len);

/*
 * Options kept as strings and parsed at init (an empty value, an unset ${VAR}
 * in a job file, means the default, and every error names the option):
 * PACK_STR_OPT(type, field) defines the callback str_opt_<field> that stores
 * the string in the engine's option struct @stype; PACK_STR_OPTION is its
 * fio_option entry. fio's FIO_OPT_STR without possible values hands the raw
 * string to the callback.
 */
#define PACK_STR_OPT(stype, field)					\
static int str_opt_##field(void *data, const char *val)		\
{									\
	return pack_store_str(&((stype *)data)->field, val);		\
}

#define PACK_STR_OPTION(stype, oname, field, long_name, helptext)	\
	{								\
		.name	= oname,					\
		.lname	= long_name,					\
		.type	= FIO_OPT_STR,					\
		.cb	= str_opt_##field,				\
		.off1	= offsetof(stype, field),			\
		.help	= helptext,					\
		.category = FIO_OPT_C_ENGINE,				\
		.group	= FIO_OPT_G_INVALID,				\
	}

/*
 * Whole-number and 0/1 options, kept as the user's text and checked at init
 * (parse_uint_option in lib/units.h): fio's FIO_OPT_INT stores -1 as
 * 4294967295 and 2^32 + 1 as 1, FIO_OPT_BOOL takes -1 (any number but 0) as
 * true. An option FIELD keeps its text in FIELD_text of the engine's option
 * struct @stype and its value in FIELD (4 or 8 bytes). PACK_NUM_OPT(stype,
 * field) defines the callback num_opt_<field>; PACK_NUM_OPTION is the
 * fio_option entry, its .def the default (what --enghelp shows, and what
 * an empty value, an unset ${VAR}, means); PACK_NUM is the entry of the
 * engine's range table, read by pack_parse_num_options(). A bare name (no
 * '=') is refused, not taken as 0 or 1.
 */
struct pack_num_option {
	const char *name;
	size_t text, value; /* offsets in the engine's option struct */
	size_t bytes;	    /* of the value: 4 or 8 */
	uint64_t lo, hi;
};

/* clang-format off */
#define PACK_NUM(stype, oname, field, lo, hi)                                           \
	{ oname, offsetof(stype, field##_text), offsetof(stype, field),                  \
	  sizeof(((stype *)0)->field), lo, hi }

int pack_store_num_text(char **text, const char *val);

#define PACK_NUM_OPT(stype, field)                                              \
	static int num_opt_##field(void *data, const char *val)                 \
	{                                                                       \
		return pack_store_num_text(&((stype *)data)->field##_text, val); \
	}

#define PACK_NUM_OPTION(stype, oname, field, long_name, helptext, dflt)	\
	{								\
		.name	= oname,					\
		.lname	= long_name,					\
		.type	= FIO_OPT_STR,					\
		.cb	= num_opt_##field,				\
		.off1	= offsetof(stype, field##_text),		\
		.help	= helptext,					\
		.def	= dflt,						\
		.category = FIO_OPT_C_ENGINE,				\
		.group	= FIO_OPT_G_INVALID,				\
	}
/* clang-format on */

/*
 * Reads each of the @n options of @table from its text in @o (the engine's
 * option struct) into its value: empty means its .def in @options. 0, or -1
 * with one line in @err naming the option and its range.
 */
int pack_parse_num_options(const struct pack_num_option *table, size_t n,
			   const struct fio_option *options, void *o, char *err, size_t errlen);

/*
 * How fio finds an engine of ours, written once for all of them. fio's
 * dlopen_ioengine() looks in the library it loaded for a symbol named after
 * the library, then "ioengine", then calls get_ioengine(). Everything of
 * ours is hidden (fio is linked -rdynamic, so an exported helper could bind
 * to one of fio's functions of the same name, or two engines' copies of
 * engines/lib to each other), so get_ioengine is the one export.
 *
 * get_ioengine hands fio no ops (fio then says the engine is not loadable)
 * when the engine was built for another fio (pack_host_fio_refused): it is
 * what fio asks first, before it reads the ops or calls a hook with a
 * thread_data (->setup), and --enghelp asks it too.
 *
 * The constructor also puts the engine on fio's list by name, as fio's
 * built-in engines do: load_ioengine() looks a name up there before it
 * dlopens anything, so once the library is loaded, ioengine=NAME finds the
 * same ops. Not in a fio the engine is not built for. The destructor takes
 * it off before the library is unmapped, so fio's list never points into an
 * unloaded library.
 */
/* clang-format off */
#define PACK_EXPORT_ENGINE(ops)							\
	static int pack_engine_registered;					\
	static void fio_init pack_register_engine(void)				\
	{									\
		if (pack_host_fio_refused((ops).name, 0))			\
			return;							\
		register_ioengine(&(ops));					\
		pack_engine_registered = 1;					\
	}									\
	static void fio_exit pack_unregister_engine(void)			\
	{									\
		if (pack_engine_registered)					\
			unregister_ioengine(&(ops));				\
	}									\
	void get_ioengine(struct ioengine_ops **ioengine_ptr)			\
		__attribute__((visibility("default")));				\
	void get_ioengine(struct ioengine_ops **ioengine_ptr)			\
	{									\
		int refused = pack_host_fio_refused((ops).name, 1);		\
										\
		*ioengine_ptr = refused ? NULL : &(ops);			\
	}
/* clang-format on */

#endif
