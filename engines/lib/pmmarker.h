/*
 * The postmark engine's marker, .fio-postmark: the proof that entries of a
 * location are the engine's, and the list of them. A run removes what an
 * interrupted run left only if the marker lists it and it is still what the
 * engine made; everything else in a location is a user's.
 *
 * The file: a head of PMM_HEAD_LEN bytes of text (what this is, how to read
 * it, whether the engine made the location's directory itself), then one
 * PMM_REC_LEN-byte line per entry the engine made, in no order:
 *
 *   f SUBDIR NAME INODE BORN_NS     a file: SUBDIR/NAME (SUBDIR -1: at the top)
 *   d SUBDIR 0 INODE BORN_NS        the directory s<SUBDIR>
 *   -                               a free line (or all NUL bytes)
 *
 * INODE 0: not known (the engine learns a file's inode only where stdio's
 * fstat gives it; raw and io_uring modes make no extra call per file).
 * BORN_NS: the wall clock (a tick coarse) just before the entry was made,
 * to tell it from a later one of the same name where the inode says
 * nothing.
 *
 * PostMark creates and deletes thousands of files a second: a line is
 * written into a shared mapping of the marker, not with a system call, and
 * it is written before the entry is made and freed after it is gone, so
 * that a killed fio (SIGKILL: the mapping's pages are the file's) leaves no
 * file of the engine's unlisted. A line names an entry that may not exist
 * (killed between the line and the create, or the create failed): absent,
 * it is skipped; present, its identity decides (pmm_identify()).
 * The record region is allocated when the file grows, so that writing to
 * the mapping never meets a full disk (SIGBUS).
 */
#ifndef PACK_PMMARKER_H
#define PACK_PMMARKER_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define PMM_NAME	  ".fio-postmark"
#define PMM_HEAD_LEN	  4096	       /* a page: the records are mapped from there */
#define PMM_REC_LEN	  64	       /* a page holds 64, none straddles two */
#define PMM_BORN_SLACK_NS 1000000000LL /* file times are a clock tick coarse */

struct pmm_rec {
	char kind;    /* 'f' or 'd' */
	int subdir;   /* -1: in the location itself */
	int name;     /* a file's number; 0 for a directory */
	uint64_t ino; /* 0: not known */
	int64_t born_ns;
};

struct pmm {
	int fd;	   /* -1: none */
	char *map; /* the record region, cap lines */
	uint32_t cap;
	uint32_t *free_idx; /* a stack of free lines */
	uint32_t nfree;
	int made_dir; /* the engine made the location's directory */
	uid_t uid;    /* the marker's owner: its entries have the same */
};

/* One line of the record region: 1 an entry, 0 free, -1 not a line this engine writes. */
int pmm_parse(const char *line, struct pmm_rec *r);
/* PMM_REC_LEN bytes, no NUL. */
void pmm_format(char *line, const struct pmm_rec *r);

/*
 * Reads the marker of @dirfd, if any, into @m (m->map a private copy of its
 * lines, m->cap of them) without changing it. 1 read, 0 there is none, -1
 * with the predicate in @err ("is a directory, not the engine's marker",
 * "is not the engine's marker (...)", strerror): a marker this engine did
 * not write is never trusted.
 */
int pmm_read(int dirfd, struct pmm *m, char *err, size_t errlen);

/*
 * What stands at @r's place in @dirfd (the directory @r is in): 0 nothing
 * there (ENOENT), 1 the entry the engine made, -1 something else with the
 * reason in @why ("is not a regular file", "has 2 links", "has another
 * inode", ...). @m: its marker (the owner to compare with).
 */
int pmm_identify(int dirfd, const char *name, const struct pmm_rec *r, const struct pmm *m,
		 char *why, size_t whylen);

/*
 * Writes a new marker in @dirfd (none must be there): the head, then @cap
 * free lines (rounded up to a page), published whole (target_publish_open)
 * and mapped. 0, or -errno (nothing left behind).
 */
int pmm_create(int dirfd, struct pmm *m, uint32_t cap, int made_dir);

/* Takes a free line for @r (growing the file if none is left): its index, or -errno. */
int pmm_add(struct pmm *m, const struct pmm_rec *r);
/* The entry of line @idx now exists, with inode @ino. */
void pmm_set_ino(struct pmm *m, uint32_t idx, uint64_t ino);
/* Line @idx is free again (the entry is gone, or was never made). */
void pmm_drop(struct pmm *m, uint32_t idx);
/* 1 if line @idx lists an entry, into @r. */
int pmm_get(const struct pmm *m, uint32_t idx, struct pmm_rec *r);
/* Entries listed. */
uint32_t pmm_count(const struct pmm *m);

/* Unmaps and closes (the file stays); for a pmm_read() copy too. */
void pmm_close(struct pmm *m);

/* CLOCK_REALTIME_COARSE in ns: an entry's BORN_NS. */
int64_t pmm_now(void);

#endif
