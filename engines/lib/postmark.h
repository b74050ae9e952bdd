/*
 * A model of PostMark 1.53 (Katcher, NetApp; Debian's `postmark`): its
 * configuration language, its random number generator and the exact stream
 * of file operations one run performs, without touching a filesystem. An
 * engine replays the stream on real files; tools/pm-sim.c prints the report
 * PostMark would print. Given the same configuration, the counters here equal
 * the real binary's (tests/engines/test_postmark_model.py runs both).
 *
 * One run, as a stream of struct pm_op from pm_sim_next():
 *
 *   PHASE(CREATE)        start of the timed run (PostMark's first timer);
 *                        subdirectories, if any, exist before this point
 *   CREATE x number      slots 0 .. number-1
 *   PHASE(TRANSACTIONS)  second timer
 *   per transaction:     TX_BEGIN, then READ or APPEND (unless bias_read is
 *                        -1), then CREATE or DELETE (unless bias_create is
 *                        -1), then TX_END
 *                        or OUT_OF_FILES (no live file at the start of a
 *                        transaction: PostMark stops and prints no report)
 *   PHASE(DELETE)        third timer
 *   DELETE per live slot, in slot order
 *   PHASE(DONE)          fourth timer; subdirectories are removed after it
 *
 * after which pm_sim_next() returns 0. The counters (pm_sim_counters()) are
 * updated as each operation is handed out, assuming it succeeds.
 *
 * Fewer than 10 transactions: PostMark 1.53 divides by transactions / 10 for
 * its progress dots and dies of SIGFPE after the first transaction, printing
 * no report; the model runs the transactions like any others.
 *
 * File names: location path (if any locations are configured) + "/" +
 * "s<subdir>/" (if subdirs > 1) + the decimal name number. Contents: created
 * and appended data are the first `size` bytes of pm_sim_text().
 *
 * Per-file memory: 12 bytes for each of the 2 * number table slots, as
 * PostMark keeps a table of 2 * number files.
 */
#ifndef PACK_POSTMARK_H
#define PACK_POSTMARK_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

/* ---- Generator: MT19937 with its original (1998/1999) seeding. ---- */

#define PM_MT_WORDS	624

struct pm_mt {
	uint32_t s[PM_MT_WORDS];
	int next;
};

/*
 * Seeds as the 1999 MT19937 code PostMark embeds does: a 69069 LCG from
 * @seed fills each state word with the top halves of two successive LCG
 * values (not the 2002 init_genrand()).
 */
void pm_mt_seed(struct pm_mt *g, uint32_t seed);
uint32_t pm_mt_next(struct pm_mt *g);
/* PostMark's RND(x): next output mod @x; 0 without a draw if @x <= 0. */
uint32_t pm_rnd(struct pm_mt *g, int x);

/* ---- Configuration. ---- */

#define PM_MAX_LOCATIONS	32
#define PM_LOCATION_LEN		256	/* bytes including the NUL */
#define PM_MAX_WEIGHT		1000000
#define PM_MAX_SUBDIRS		(1 << 24)
#define PM_MAX_SIZE		(INT32_MAX / 2)	/* PostMark keeps 2 * size_hi in an int */
#define PM_MAX_NUMBER		(INT32_MAX / 2)	/* and 2 * number */

enum pm_report_kind {
	PM_REPORT_VERBOSE,
	PM_REPORT_TERSE,
};

struct pm_location {
	char path[PM_LOCATION_LEN];
	int weight;
};

struct pm_config {
	int size_lo, size_hi;	/* file sizes uniform in [lo, hi - 1]; lo == hi: fixed */
	int number;		/* files created before the transactions */
	int transactions;
	uint32_t seed;
	int read_block, write_block;	/* I/O chunk sizes (the engine's business) */
	int buffered;		/* 1: stdio, 0: raw system calls (the engine's business) */
	int bias_read;		/* read vs append: read if RND(10) < bias_read; -1: neither */
	int bias_create;	/* create vs delete likewise */
	int subdirs;		/* > 1: files go into s0 .. s<subdirs-1> of a location */
	int nloc;		/* 0: the current directory, no location draw */
	struct pm_location loc[PM_MAX_LOCATIONS];
	enum pm_report_kind report;
};

/* PostMark's defaults: size 500 10000, number 500, seed 42, 500 transactions,
 * blocks 512, buffered, biases 5 and 5, no subdirectories, current directory,
 * verbose report. */
void pm_config_default(struct pm_config *cfg);

/*
 * 0 if @cfg can be simulated, else -1 with a one-line reason naming the
 * PostMark setting in @err, e.g. "set size: low bound 900 is above the high
 * bound 500". Checks: 0 < size_lo <= size_hi <= PM_MAX_SIZE, 0 < number <=
 * PM_MAX_NUMBER, transactions > 0 and number + transactions < 2^31 (file
 * names are ints), seed > 0, block sizes > 0, biases in -1..10, 0 <=
 * subdirs <= PM_MAX_SUBDIRS, nloc <= PM_MAX_LOCATIONS, weights 1..
 * PM_MAX_WEIGHT and location paths non-empty and NUL-terminated.
 */
int pm_config_check(const struct pm_config *cfg, char *err, size_t errlen);

enum pm_cmd {
	PM_CMD_ERROR = -1,
	PM_CMD_NONE,		/* a setting, `help`, a blank line or a comment */
	PM_CMD_RUN,		/* `run [file]`: run with the settings so far */
	PM_CMD_SHOW,		/* `show [file]` */
	PM_CMD_QUIT,		/* `quit` or `exit` */
};

/*
 * Applies one line of a PostMark configuration file (.pmrc) or prompt to
 * @cfg and says which command it was. Accepted, as in PostMark:
 *
 *   set size L [H]          H missing, <= 0 or < L: fixed size L
 *   set number N | set seed S | set transactions T | set subdirectories K
 *   set read B | set write B
 *   set location P [W]      replaces the list; `+P [W]` appends, `-P`
 *                           removes P; the last blank-separated word of the
 *                           argument is the weight (default 1)
 *   set buffering true|false
 *   set bias read R | set bias create C      -1 .. 10
 *   set report verbose|terse
 *   run [file] | show [file] | help | quit | exit
 *
 * Differences, all on input PostMark mishandles: blank lines and lines
 * starting with '#' are ignored (PostMark prints "Eh?" and goes on); words
 * may be separated by several blanks, a trailing "\n" or "\r\n" is removed
 * (PostMark drops the last character of every line, newline or not);
 * numbers must be whole decimal integers in range and unknown commands,
 * bad values, bad weights and `-P` for an absent P are errors (PostMark
 * prints a message and goes on with the old value, or weight 1, or for
 * `set size L junk` a fixed size L); `load` and `!shell` are refused.
 * On error returns PM_CMD_ERROR with a one-line message in @err,
 * "line N: <setting>: <reason>" (no "line N: " when @lineno <= 0), and
 * leaves @cfg unchanged.
 */
enum pm_cmd pm_config_parse_line(struct pm_config *cfg, const char *line,
				 int lineno, char *err, size_t errlen);

/*
 * The location list as the fio engine takes it (pm_location=):
 * "DIR[@WEIGHT]:DIR[@WEIGHT]...", a backslash escaping the next character
 * (":", "@", "\\"), an unescaped '@' followed by digits ending an entry
 * being its weight (1..PM_MAX_WEIGHT, default 1); empty entries are
 * skipped, an empty string means no location. Replaces cfg->loc/nloc; on
 * error returns -1 with a one-line "pm_location: ..." message and leaves
 * @cfg unchanged.
 */
int pm_parse_locations(struct pm_config *cfg, const char *spec, char *err, size_t errlen);

/* ---- Simulation of one run. ---- */

enum pm_phase {
	PM_PHASE_CREATE,
	PM_PHASE_TRANSACTIONS,
	PM_PHASE_DELETE,
	PM_PHASE_DONE,
};

enum pm_op_kind {
	PM_OP_PHASE,		/* the phase in op.phase begins */
	PM_OP_TX_BEGIN,		/* transaction op.tx begins */
	PM_OP_TX_END,
	PM_OP_CREATE,
	PM_OP_READ,
	PM_OP_APPEND,
	PM_OP_DELETE,
	PM_OP_OUT_OF_FILES,	/* no live file: the transactions stop here */
};

/* op.flags */
#define PM_OPF_TABLE_FULL	1	/* CREATE: no free slot, nothing happens (no draw, no name) */
#define PM_OPF_FILE_FULL	2	/* APPEND: file already size_hi bytes, nothing happens */

struct pm_op {
	enum pm_op_kind kind;
	enum pm_phase phase;	/* the phase this op belongs to */
	int tx;			/* transaction index, -1 outside transactions */
	int slot;		/* table slot 0 .. 2*number-1, -1 if none */
	int name;		/* the file's name number (1, 2, ...), 0 if none */
	int loc;		/* location index, -1: current directory */
	int subdir;		/* subdirectory index, -1: none */
	/*
	 * CREATE: the file's size, written from the start of the text;
	 * READ: the tracked size, the bytes to read; APPEND: bytes appended
	 * (from the start of the text, after the file's old end), 0 with
	 * PM_OPF_FILE_FULL; DELETE: the file's size; markers: 0.
	 */
	int size;
	unsigned int flags;
};

/*
 * What PostMark counts. created/deleted include the phases of creation and
 * deletion "alone"; the byte counters are 32-bit floats accumulated like
 * PostMark's, so they round the same way.
 */
struct pm_counters {
	int created, created_alone;
	int read, appended;
	int deleted, deleted_alone;
	float bytes_read, bytes_written;
	int transactions_done;
	int out_of_files;	/* 1: the run stopped early; PostMark prints no report */
};

struct pm_sim;

/*
 * A run of @cfg (copied). Seeds the generator and fills the text (2 *
 * size_hi draws) as PostMark does before its first timer. NULL with a
 * one-line reason in @err if @cfg fails pm_config_check() or memory is short.
 */
struct pm_sim *pm_sim_new(const struct pm_config *cfg, char *err, size_t errlen);
/* Next operation into @op: 1, or 0 once PHASE(DONE) has been handed out. */
int pm_sim_next(struct pm_sim *sim, struct pm_op *op);
void pm_sim_free(struct pm_sim *sim);

/* The text all file data comes from: 2 * size_hi bytes 32..126, no NUL. */
const char *pm_sim_text(const struct pm_sim *sim, size_t *len);
const struct pm_counters *pm_sim_counters(const struct pm_sim *sim);
const struct pm_config *pm_sim_config(const struct pm_sim *sim);
/* Files currently live (created and not deleted). */
int pm_sim_live(const struct pm_sim *sim);

/*
 * Beyond PostMark: created files get the size @fn returns for their name
 * number (clamped to 1 .. PM_MAX_SIZE) instead of PostMark's draw, which
 * is then not made (so the rest of the stream differs from PostMark's).
 * Appends still grow files up to size_hi. Call before the first create.
 */
typedef uint32_t (*pm_size_fn)(void *ctx, int name);
void pm_sim_set_sizer(struct pm_sim *sim, pm_size_fn fn, void *ctx);

/*
 * Ends the transaction phase at the next transaction boundary: the next
 * transaction is not begun, the deletion phase follows (time-based runs).
 */
void pm_sim_stop_transactions(struct pm_sim *sim);

/* Table slots 0 .. pm_sim_nslots() - 1; pm_sim_slot() fills @op (as a
 * DELETE) with slot @s's file and returns 1 if the slot is live, else 0. */
int pm_sim_nslots(const struct pm_sim *sim);
int pm_sim_slot(struct pm_sim *sim, int s, struct pm_op *op);

/* ---- Reports. ---- */

/* The four timer readings of a run, whole seconds as from time(). */
struct pm_times {
	time_t start;		/* PHASE(CREATE) */
	time_t tx_start;	/* PHASE(TRANSACTIONS) */
	time_t tx_end;		/* PHASE(DELETE) */
	time_t end;		/* PHASE(DONE) */
};

/*
 * PostMark's report (cfg->report says verbose or terse) of a run, with its
 * arithmetic: every interval of 0 s counts as 1 s, rates are truncated
 * integer divisions (verbose) or float quotients printed "%.2f" (terse),
 * byte amounts above 1 MiB are printed in megabytes of 1048576 bytes.
 * PostMark prints no report for a run that ran out of files; these print
 * one anyway, the caller decides. pm_report_format() works like snprintf()
 * (returns the full length; -1 on error); pm_report_write() returns 0 or -1.
 */
int pm_report_format(char *buf, size_t len, const struct pm_config *cfg,
		     const struct pm_counters *c, const struct pm_times *t);
/*
 * The same report from nanosecond clock readings: the lines and number
 * formats are PostMark's (so its parsers keep working), the rates are the
 * real quotients (truncated where PostMark prints "%d"), and the seconds
 * PostMark prints as integers are rounded. Rates use the transactions done.
 */
struct pm_times_ns {
	uint64_t start, tx_start, tx_end, end;
};
int pm_report_format_ns(char *buf, size_t len, const struct pm_config *cfg,
			const struct pm_counters *c, const struct pm_times_ns *t);

int pm_report_write(FILE *fp, const struct pm_config *cfg,
		    const struct pm_counters *c, const struct pm_times *t);

/* PostMark's message when a run runs out of files (three lines). */
extern const char pm_out_of_files_msg[];

#endif
