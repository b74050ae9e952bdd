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

#ifndef PACK_FIO_VERSION
#error "PACK_FIO_VERSION must name the fio version the engine is built against"
#endif

/*
 * 0 if the fio we are loaded into is the one we were compiled against and
 * the struct offsets we rely on agree with its option table; else a one-line
 * error naming @engine and 1. @ops: the engine's ioengine_ops.
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
 * io_u would see e.g. fio's trimwrite offset pairing.
 */
void pack_ddir_allow(struct thread_data *td, enum fio_ddir ddir, unsigned *saved);
void pack_ddir_restore(struct thread_data *td, unsigned saved);

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

/* Stores a copy of @val ("" for NULL) in *@field: for FIO_OPT_STR callbacks
 * of options that accept an empty value (an unset ${VAR} in a job file). */
int pack_store_str(char **field, const char *val);

/*
 * A directory name for the job @td: its name in letters, digits, '.', '_' and
 * '-' (others become '_'), then ".N", N its number among numjobs clones.
 */
void pack_job_dir_name(struct thread_data *td, char *buf, size_t len);

/* @s as the body of a JSON string (quotes, backslashes, controls escaped). */
void pack_json_escape(const char *s, char *out, size_t len);

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

#endif
