/* The locations a job's files go to (see pmengine.h). */
#include "pmengine.h"

/* ------------------------------------------------------------------ */
/* Locations: claiming, and what the engine holds in them              */
/* ------------------------------------------------------------------ */

/* @s's value if it is a name the engine gives (a number as "%d" prints it), else -1. */
static int name_number(const char *s)
{
	char *end;
	long v;

	if (!(*s >= '1' && *s <= '9'))
		return -1;
	errno = 0;
	v = strtol(s, &end, 10);
	return *end || errno || v > INT_MAX ? -1 : (int)v;
}

static int numbered(const char *s)
{
	return *s && strspn(s, "0123456789") == strlen(s);
}

/* Named like PostMark's files or subdirectories (numbers, s<N>), canonical or not. */
int pm_name_like(const char *s)
{
	return numbered(s) || (s[0] == 's' && numbered(s + 1));
}

/* The marker of the pool @op's file is in (an alias's is its first pool's). */
static struct pmm *marker_of(struct pm_data *pd, const struct pm_op *op)
{
	int p = op->loc < 0 ? 0 : op->loc;

	return &pd->pool[pd->pool[p].alias ? pd->pool[p].alias - 1 : p].marker;
}

int pm_own_create(struct pm_data *pd, const struct pm_op *op)
{
	struct pmm_rec r = { 'f', pd->cfg.subdirs > 1 ? op->subdir : -1, op->name, 0, pmm_now() };
	int rec = pmm_add(marker_of(pd, op), &r);

	if (rec >= 0)
		pd->slot_rec[op->slot] = rec;
	return rec;
}

void pm_own_made(struct pm_data *pd, const struct pm_op *op, int rec, int made, uint64_t ino)
{
	if (rec < 0)
		return;
	if (!made) {
		/* nothing of the engine's there (EEXIST: maybe a user's file) */
		pmm_drop(marker_of(pd, op), rec);
		if (pd->slot_rec[op->slot] == rec)
			pd->slot_rec[op->slot] = -1;
	} else if (ino) {
		pmm_set_ino(marker_of(pd, op), rec, ino);
	}
}

int pm_own_holds(const struct pm_data *pd, const struct pm_op *op)
{
	return op->slot >= 0 && pd->slot_rec[op->slot] >= 0;
}

int pm_own_take(struct pm_data *pd, const struct pm_op *op)
{
	int rec = op->slot >= 0 ? pd->slot_rec[op->slot] : -1;

	/* the model's slot is free now: its next create may be in flight before this delete ends */
	if (rec >= 0)
		pd->slot_rec[op->slot] = -1;
	return rec;
}

void pm_own_gone(struct pm_data *pd, const struct pm_op *op, int rec)
{
	if (rec >= 0)
		pmm_drop(marker_of(pd, op), rec);
}

/* The directory descriptor file @op lives in; *@tmp set if it must be closed. */
int pm_dir_of(struct pm_data *pd, const struct pm_op *op, int *tmp)
{
	int p = op->loc < 0 ? 0 : op->loc;
	char name[32];
	int fd;

	*tmp = 0;
	if (pd->cfg.subdirs <= 1)
		return pd->pool[p].fd;
	if (pd->subfd)
		return pd->subfd[p * pd->cfg.subdirs + op->subdir];
	snprintf(name, sizeof(name), "s%d", op->subdir);
	fd = NOINTR(openat(pd->pool[p].fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
	if (fd >= 0)
		*tmp = 1;
	return fd;
}

/* "17", "s2/17" or "s2": an entry of a location, for messages. */
static void entry_name(const struct pmm_rec *r, char *buf, size_t len)
{
	if (r->kind == 'd')
		snprintf(buf, len, "s%d", r->subdir);
	else if (r->subdir >= 0)
		snprintf(buf, len, "s%d/%d", r->subdir, r->name);
	else
		snprintf(buf, len, "%d", r->name);
}

static int key_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static uint64_t file_key(int subdir, int name)
{
	return (uint64_t)(uint32_t)(subdir + 1) << 32 | (uint32_t)name;
}

/* The files @m lists, as sorted keys (*@n of them); NULL if memory is short. */
static uint64_t *listed_files(const struct pmm *m, size_t *n)
{
	uint64_t *keys = malloc(sizeof(*keys) * (m->cap ? m->cap : 1));
	struct pmm_rec r;
	uint32_t i;

	*n = 0;
	for (i = 0; keys && i < m->cap; i++)
		if (pmm_get(m, i, &r) && r.kind == 'f')
			keys[(*n)++] = file_key(r.subdir, r.name);
	if (keys)
		qsort(keys, *n, sizeof(*keys), key_cmp);
	return keys;
}

/* s<K>'s K, or -2 for a name the engine does not give a subdirectory ("s01"). */
static int subdir_number(const char *s)
{
	return !strcmp(s + 1, "0") ? 0 : name_number(s + 1) >= 0 ? name_number(s + 1) : -2;
}

/*
 * The numbered entries of directory @fd (s<@subdir>; -1: the location
 * itself) must all be listed in @keys; at the top, s<N> entries must be
 * directories, and are looked into the same way. A user's s<N> may be used
 * (the engine makes its files in it and leaves it); nothing else is
 * touched. 0, or -1 with the first entry that is not the engine's in @bad
 * ("17", "s2", "s2/17").
 */
static int scan_entries(int fd, int subdir, const uint64_t *keys, size_t nkeys, char *bad,
			size_t badlen)
{
	char inner[NAME_MAX + 1];
	int dfd = dup(fd), sfd, ret;
	struct dirent *de;
	struct stat st;
	uint64_t key;
	DIR *d;

	if (dfd < 0 || !(d = fdopendir(dfd))) {
		if (dfd >= 0)
			close(dfd);
		snprintf(bad, badlen, ".");
		return -1;
	}
	/* a dup shares the file offset: an earlier scan left it at the end */
	rewinddir(d);
	while ((de = readdir(d))) {
		const char *n = de->d_name;

		if (!pm_name_like(n))
			continue; /* a user's name: never the engine's, never touched */
		snprintf(bad, badlen, "%s", n);
		if (numbered(n)) {
			key = file_key(subdir, name_number(n));
			if (name_number(n) < 0 || !nkeys ||
			    !bsearch(&key, keys, nkeys, sizeof(key), key_cmp))
				goto refuse;
			continue;
		}
		if (subdir != -1)
			continue; /* an s<N> inside s<K>: not a name the engine uses there */
		if (fstatat(fd, n, &st, AT_SYMLINK_NOFOLLOW) || !S_ISDIR(st.st_mode))
			goto refuse;
		sfd = NOINTR(openat(fd, n, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
		if (sfd < 0)
			goto refuse;
		ret = scan_entries(sfd, subdir_number(n), keys, nkeys, inner, sizeof(inner));
		close(sfd);
		if (ret) {
			snprintf(bad, badlen, "%s/%s", n, inner);
			goto refuse;
		}
	}
	closedir(d);
	return 0;
refuse:
	closedir(d);
	return -1;
}

/* The directory entry @r is in: the location's @fd, or s<K> opened (*@own set). -errno. */
static int entry_dir(int fd, const struct pmm_rec *r, int *own)
{
	char name[32];
	int sfd;

	*own = 0;
	if (r->kind == 'd' || r->subdir < 0)
		return fd;
	snprintf(name, sizeof(name), "s%d", r->subdir);
	sfd = NOINTR(openat(fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
	if (sfd < 0)
		return -errno;
	*own = 1;
	return sfd;
}

/*
 * Each entry @m lists that is there must be the one the engine made. 0, or
 * -1 with the entry in @bad and the reason in @why. A listed s<K> that is
 * gone takes its files with it.
 */
static int check_listed(int fd, const struct pmm *m, char *bad, size_t badlen, char *why,
			size_t whylen)
{
	struct pmm_rec r;
	char base[16];
	uint32_t i;
	int dfd, own, ret;

	for (i = 0; i < m->cap; i++) {
		if (!pmm_get(m, i, &r))
			continue;
		entry_name(&r, bad, badlen);
		dfd = entry_dir(fd, &r, &own);
		if (dfd == -ENOENT)
			continue;
		if (dfd < 0) {
			snprintf(why, whylen, "%s", strerror(-dfd));
			return -1;
		}
		snprintf(base, sizeof(base), r.kind == 'd' ? "s%d" : "%d",
			 r.kind == 'd' ? r.subdir : r.name);
		ret = pmm_identify(dfd, base, &r, m, why, whylen);
		if (own)
			close(dfd);
		if (ret < 0)
			return -1;
	}
	return 0;
}

/*
 * Removes the files @m lists, then its directories (one that holds a user's
 * file stays, a user's now). The files removed, or -1 with the entry that
 * could not be in @bad and errno.
 */
static long remove_listed(int fd, const struct pmm *m, char *bad, size_t badlen)
{
	struct pmm_rec r;
	char base[16];
	long removed = 0;
	uint32_t i;
	int pass, dfd, own, ret;

	for (pass = 0; pass < 2; pass++) {
		for (i = 0; i < m->cap; i++) {
			if (!pmm_get(m, i, &r) || (r.kind == 'd') != pass)
				continue;
			dfd = entry_dir(fd, &r, &own);
			if (dfd == -ENOENT)
				continue;
			if (dfd < 0) {
				entry_name(&r, bad, badlen);
				errno = -dfd;
				return -1;
			}
			snprintf(base, sizeof(base), pass ? "s%d" : "%d", pass ? r.subdir : r.name);
			ret = NOINTR(unlinkat(dfd, base, pass ? AT_REMOVEDIR : 0));
			if (ret && errno != ENOENT && errno != ENOTEMPTY) {
				entry_name(&r, bad, badlen);
				ret = errno;
				if (own)
					close(dfd);
				errno = ret;
				return -1;
			}
			removed += !ret && !pass;
			if (own)
				close(dfd);
		}
	}
	return removed;
}

/*
 * The lines of a pool's marker: to begin with (@peak 0), the pool's files
 * and s<N> at most, up to a megabyte's worth; then it doubles each time it
 * is full, so that @peak files at once (and the io_uring deletes in
 * flight) take this many.
 */
static uint64_t marker_lines(const struct pm_data *pd, uint64_t peak, unsigned inflight)
{
	uint64_t sub = pd->cfg.subdirs > 1 ? pd->cfg.subdirs : 0, n = 2ULL * pd->cfg.number + sub;
	uint64_t lines = n < 16384 ? n : 16384;

	lines = (lines + PMM_HEAD_LEN / PMM_REC_LEN - 1) / (PMM_HEAD_LEN / PMM_REC_LEN) *
		(PMM_HEAD_LEN / PMM_REC_LEN);
	while (peak && lines < peak + sub + inflight)
		lines *= 2;
	return lines;
}

/*
 * Takes @p->fd for this job: an exclusive lock (two jobs in one directory
 * would trip over each other's file names). Entries named like PostMark's
 * files (numbers, s<N>) must be listed in the marker an interrupted run of
 * the engine left, and still be what it made; they are removed then. A
 * location that is not all the engine's is refused before anything in it
 * is removed. A user's files of other names, and a user's s<N> directories,
 * may be there and are never touched. PostMark itself writes into any
 * directory and truncates what it finds.
 */
static int claim_pool(struct pm_data *pd, struct pool *p)
{
	char bad[2 * NAME_MAX + 2] = "", err[256];
	uint64_t *keys = NULL;
	size_t nkeys = 0;
	struct pmm old;
	int have, ret;
	long n;

	if (target_claim(p->fd, p->path, ENGINE, TARGET_LOCK, err, sizeof(err))) {
		pack_log_err("postmark: pm_location %s %s\n", p->path, err);
		return 1;
	}
	have = pmm_read(p->fd, &old, err, sizeof(err));
	if (have < 0) {
		pack_log_err(
			"postmark: pm_location %s: %s %s; refusing to touch the location (remove it if nothing there is the engine's)\n",
			p->path, PMM_NAME, err);
		return 1;
	}
	if (have && !(keys = listed_files(&old, &nkeys))) {
		pack_log_err("postmark: pm_location %s: out of memory for %s\n", p->path, PMM_NAME);
		goto fail;
	}
	/* look first, so that a location that is not all ours is not half cleaned */
	if (scan_entries(p->fd, -1, keys, nkeys, bad, sizeof(bad))) {
		pack_log_err(
			"postmark: pm_location %s holds '%s', named like PostMark's files but not the engine's%s; refusing to touch it\n",
			p->path, bad, have ? " (not in its marker)" : " (no marker)");
		goto fail;
	}
	if (have && check_listed(p->fd, &old, bad, sizeof(bad), err, sizeof(err))) {
		pack_log_err(
			"postmark: pm_location %s: '%s' is in %s but %s, not what the engine made; refusing to touch it\n",
			p->path, bad, PMM_NAME, err);
		goto fail;
	}
	if (have) {
		n = remove_listed(p->fd, &old, bad, sizeof(bad));
		if (n < 0) {
			pack_log_err(
				"postmark: pm_location %s: cannot remove %s, which an interrupted run left: %s\n",
				p->path, bad, strerror(errno));
			goto fail;
		}
		if (n > 0)
			pack_log_err(
				"postmark: pm_location %s: removed %ld files an interrupted run left\n",
				p->path, n);
		/* numjobs: the job directory that run made is this one's to remove */
		p->made |= old.made_dir;
		pmm_close(&old);
		free(keys);
		keys = NULL;
		have = 0;
		if (NOINTR(unlinkat(p->fd, PMM_NAME, 0))) {
			pack_log_err("postmark: pm_location %s: cannot remove the old %s: %s\n",
				     p->path, PMM_NAME, strerror(errno));
			return 1;
		}
	}
	/*
	 * Whole or not at all: a marker cut short by a full file system would
	 * stay behind a refused run, and be taken for the engine's
	 */
	ret = pmm_create(p->fd, &p->marker, marker_lines(pd, 0, 0), p->made);
	if (ret) {
		pack_log_err("postmark: pm_location %s: cannot write %s: %s\n", p->path, PMM_NAME,
			     strerror(-ret));
		return 1;
	}
	p->marked = 1;
	return 0;
fail:
	free(keys);
	if (have)
		pmm_close(&old);
	return 1;
}

static int check_writable(const char *path, int fd)
{
	char err[256];

	if (target_claim(fd, path, ENGINE, TARGET_WRITABLE, err, sizeof(err))) {
		pack_log_err("postmark: pm_location %s %s\n", path, err);
		return 1;
	}
	return 0;
}

/*
 * The pool must fit before the first file is made: the run's model gives
 * each location's fullest moment (pmroom.h); the locations on one file
 * system add up, and so do the numjobs clones' pools. A location that does
 * not exist is pm_open_pools()'s to report. 0, or 1 with one line.
 */
int pm_check_room(struct thread_data *td, struct pm_data *pd)
{
	int nloc = pd->cfg.nloc ? pd->cfg.nloc : 1, i, j;
	const char *tmp = target_tmpdir();
	uint64_t block[PM_MAX_LOCATIONS] = { 0 };
	struct statvfs vfs[PM_MAX_LOCATIONS];
	int ok[PM_MAX_LOCATIONS] = { 0 };
	unsigned jobs = pack_clone_count(td);
	struct pm_room room;
	char err[256];

	for (i = 0; i < nloc; i++) {
		const char *path = pd->cfg.nloc ? pd->cfg.loc[i].path : tmp;

		ok[i] = statvfs(path, &vfs[i]) == 0;
		block[i] = ok[i] ? (vfs[i].f_frsize ? vfs[i].f_frsize : vfs[i].f_bsize) : 4096;
	}
	/* time_based: the number of transactions is the clock's; the initial pool at least */
	if (pm_room(&pd->cfg, pd->have_sizes ? pm_dist_size : NULL, pd, block,
		    pd->time_based_run, &room, err, sizeof(err))) {
		pack_log_err("postmark: %s\n", err);
		return 1;
	}
	for (i = 0; i < nloc; i++) {
		uint64_t bytes = 0, files = 0, markers = 0, have, inodes;
		const char *path = pd->cfg.nloc ? pd->cfg.loc[i].path : tmp;

		if (!ok[i] || !vfs[i].f_blocks)
			continue;	/* no fixed size (ramfs), or pm_open_pools() will say */
		for (j = 0; j < nloc; j++) {
			if (!ok[j] || vfs[j].f_fsid != vfs[i].f_fsid)
				continue;
			if (j < i)
				break;	/* counted with the first location of this file system */
			/* and the marker, which lists them */
			bytes += room.bytes[j] + PMM_HEAD_LEN +
				 PMM_REC_LEN * marker_lines(pd, room.files[j],
							    pd->o->io_api == API_IO_URING
								    ? td->o.iodepth
								    : 0);
			files += room.files[j];
			markers++;
		}
		if (j < i)
			continue;
		bytes *= jobs;
		files = (files + (pd->cfg.subdirs > 1 ? (uint64_t)pd->cfg.subdirs : 0)) * jobs;
		markers *= jobs;
		have = (uint64_t)vfs[i].f_bavail * block[i];	/* df's Avail */
		inodes = vfs[i].f_favail;
		if (bytes > have) {
			pack_log_err(
				"postmark: pm_location %s: the pool needs %.1f MB (%llu bytes) at its fullest for %llu files, the file system has %.1f MB (%llu bytes) free; use fewer or smaller files (pm_number, pm_size_high, pm_transactions) or a larger file system\n",
				path, (double)bytes / 1e6, (unsigned long long)bytes,
				(unsigned long long)files, (double)have / 1e6,
				(unsigned long long)have);
			return 1;
		}
		if (vfs[i].f_files && files + markers > inodes) {
			pack_log_err(
				"postmark: pm_location %s: the pool needs %llu inodes at its fullest, the file system has %llu free; use fewer files (pm_number, pm_transactions) or a file system with more inodes\n",
				path, (unsigned long long)(files + markers),
				(unsigned long long)inodes);
			return 1;
		}
	}
	return 0;
}

int pm_open_pools(struct thread_data *td, struct pm_data *pd)
{
	unsigned jobs = pack_clone_count(td);
	struct stat st[PM_MAX_LOCATIONS];
	int lfd[PM_MAX_LOCATIONS];
	int i, j, ret;

	if (pd->cfg.nloc == 0) {
		/* no location: a private directory, removed at the end */
		char job[64], err[PATH_MAX + 128];

		pack_job_dir_name(td, job, sizeof(job));
		if (target_mkdtemp(ENGINE, job, pd->pool[0].path, sizeof(pd->pool[0].path),
				   err, sizeof(err))) {
			pack_log_err("postmark: %s\n", err);
			return 1;
		}
		pd->pool[0].made = 1;
		pd->tmpdir = 1;
		pd->npools = 1;
		pd->pool[0].fd = open(pd->pool[0].path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (pd->pool[0].fd < 0) {
			pack_log_err("postmark: %s: %s\n", pd->pool[0].path, strerror(errno));
			return 1;
		}
		return claim_pool(pd, &pd->pool[0]);
	}

	/* every location is checked before any is written to */
	pd->npools = pd->cfg.nloc;
	for (i = 0; i < pd->npools; i++) {
		const char *loc = pd->cfg.loc[i].path;

		lfd[i] = open(loc, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (lfd[i] < 0) {
			if (errno == ENOTDIR)
				pack_log_err("postmark: pm_location %s is not a directory\n", loc);
			else
				pack_log_err("postmark: pm_location %s: %s\n", loc,
					     strerror(errno));
			goto fail;
		}
		if (check_writable(loc, lfd[i])) {
			close(lfd[i]);
			goto fail;
		}
	}
	for (i = 0; i < pd->npools; i++) {
		struct pool *p = &pd->pool[i];
		char loc[PM_LOCATION_LEN];

		/* a copy: gcc -O1 -fsanitize=address sees p->path and the location overlap */
		memcpy(loc, pd->cfg.loc[i].path, sizeof(loc));
		if (jobs <= 1) {
			snprintf(p->path, sizeof(p->path), "%s", loc);
			p->fd = lfd[i];
		} else {
			/* numjobs: each job has its own pool in the location */
			char job[64];

			pack_job_dir_name(td, job, sizeof(job));
			snprintf(p->path, sizeof(p->path), "%s/%s", loc, job);
			ret = target_mkdir(lfd[i], job, &p->made);
			if (ret) {
				pack_log_err("postmark: %s: %s\n", p->path, strerror(-ret));
				goto fail_from;
			}
			p->fd = NOINTR(openat(lfd[i], job, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
			close(lfd[i]);
			if (p->fd < 0) {
				pack_log_err("postmark: %s: %s\n", p->path, strerror(errno));
				i++;
				goto fail_from;
			}
		}
		lfd[i] = -1;
		if (fstat(p->fd, &st[i])) {
			pack_log_err("postmark: %s: %s\n", p->path, strerror(errno));
			i++;
			goto fail_from;
		}
		/* one directory named twice: one pool, as in PostMark */
		for (j = 0; j < i; j++) {
			if (st[j].st_dev == st[i].st_dev && st[j].st_ino == st[i].st_ino) {
				close(p->fd);
				p->fd = pd->pool[pd->pool[j].alias ? pd->pool[j].alias - 1 : j].fd;
				p->alias = j + 1;
				break;
			}
		}
		if (!p->alias && claim_pool(pd, p)) {
			i++;
			goto fail_from;
		}
	}
	return 0;
fail_from:
	/* locations not yet turned into pools */
	for (; i < pd->npools; i++)
		if (lfd[i] >= 0)
			close(lfd[i]);
	return 1;
fail:
	while (i-- > 0)
		close(lfd[i]);
	pd->npools = 0;
	return 1;
}

/*
 * s0 .. s<K-1> in each pool, as PostMark makes them (mode 0700) before its
 * timers; each listed in the marker before it is made. One that is there
 * is a user's (the claim removed the engine's): used, and left.
 */
int pm_make_subdirs(struct pm_data *pd)
{
	int k = pd->cfg.subdirs, i, s, rec;
	struct stat st;
	char name[32];

	if (k <= 1)
		return 0;
	if (pd->npools * k <= MAX_DIRFDS) {
		pd->subfd = malloc(sizeof(int) * pd->npools * k);
		if (!pd->subfd)
			return 1;
		for (i = 0; i < pd->npools * k; i++)
			pd->subfd[i] = -1;
	}
	for (i = 0; i < pd->npools; i++) {
		struct pool *p = &pd->pool[i];

		if (p->alias)
			continue;
		for (s = 0; s < k; s++) {
			struct pmm_rec r = { 'd', s, 0, 0, pmm_now() };

			snprintf(name, sizeof(name), "s%d", s);
			rec = pmm_add(&p->marker, &r);
			if (rec < 0) {
				pack_log_err("postmark: %s/%s: cannot list it in %s: %s\n", p->path,
					     name, PMM_NAME, strerror(-rec));
				return 1;
			}
			if (NOINTR(mkdirat(p->fd, name, 0700)) == 0) {
				if (fstatat(p->fd, name, &st, AT_SYMLINK_NOFOLLOW) == 0)
					pmm_set_ino(&p->marker, rec, st.st_ino);
				continue;
			}
			pmm_drop(&p->marker, rec);
			if (errno != EEXIST) {
				pack_log_err("postmark: %s/%s: %s\n", p->path, name,
					     strerror(errno));
				return 1;
			}
		}
	}
	if (!pd->subfd)
		return 0;
	for (i = 0; i < pd->npools; i++) {
		struct pool *p = &pd->pool[i];
		int src = p->alias ? p->alias - 1 : i;

		for (s = 0; s < k; s++) {
			int fd;

			if (p->alias) {
				pd->subfd[i * k + s] = pd->subfd[src * k + s];
				continue;
			}
			snprintf(name, sizeof(name), "s%d", s);
			fd = NOINTR(openat(p->fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
			if (fd < 0) {
				pack_log_err("postmark: %s/%s: %s\n", p->path, name,
					     strerror(errno));
				return 1;
			}
			pd->subfd[i * k + s] = fd;
		}
	}
	return 0;
}

/* 1 if @m lists a file in s<@subdir>. */
static int lists_files_in(const struct pmm *m, int subdir)
{
	struct pmm_rec r;
	uint32_t i;

	for (i = 0; i < m->cap; i++)
		if (pmm_get(m, i, &r) && r.kind == 'f' && r.subdir == subdir)
			return 1;
	return 0;
}

/*
 * Removes the entries of @kind ('f', then 'd') the marker of pool @i lists
 * that are still what the engine made, and unlists them and those that are
 * gone. What a user replaced or linked to in the meantime stays, listed. A
 * subdirectory the run made that holds only a user's files stays, the
 * user's. The entries removed.
 */
static long remove_own(struct pm_data *pd, int i, char kind)
{
	struct pool *p = &pd->pool[i];
	struct pmm_rec r;
	char base[16], why[128];
	long n = 0;
	uint32_t idx;
	int dfd, tmp = 0;

	for (idx = 0; idx < p->marker.cap; idx++) {
		struct pm_op op = { .loc = i };

		if (!pmm_get(&p->marker, idx, &r) || r.kind != kind)
			continue;
		op.subdir = r.subdir;
		snprintf(base, sizeof(base), kind == 'd' ? "s%d" : "%d",
			 kind == 'd' ? r.subdir : r.name);
		dfd = kind == 'd' || r.subdir < 0 ? p->fd : pm_dir_of(pd, &op, &tmp);
		if (dfd < 0) {
			if (errno == ENOENT) /* its directory is gone, and it with it */
				pmm_drop(&p->marker, idx);
			continue;
		}
		switch (pmm_identify(dfd, base, &r, &p->marker, why, sizeof(why))) {
		case 1:
			if (NOINTR(unlinkat(dfd, base, kind == 'd' ? AT_REMOVEDIR : 0))) {
				if (errno != ENOTEMPTY || lists_files_in(&p->marker, r.subdir))
					break;
				pack_log_err(
					"postmark: pm_location %s: %s, which the run made, holds files it did not make; it stays\n",
					p->path, base);
			} else {
				n++;
			}
			/* fallthrough */
		case 0:
			pmm_drop(&p->marker, idx);
			break;
		}
		if (tmp)
			close(dfd);
		tmp = 0;
	}
	return n;
}

/* The files @m lists. */
static uint32_t files_listed(const struct pmm *m)
{
	struct pmm_rec r;
	uint32_t i, n = 0;

	for (i = 0; i < m->cap; i++)
		n += pmm_get(m, i, &r) && r.kind == 'f';
	return n;
}

/* Deletes the files of an interrupted run (fio stopped early or an error): those the marker lists. */
void pm_delete_live(struct pm_data *pd)
{
	long n = 0;
	int i;

	for (i = 0; i < pd->npools; i++)
		if (!pd->pool[i].alias && pd->pool[i].marked)
			n += remove_own(pd, i, 'f');
	if (n)
		pack_log_err("postmark: the run did not finish; removed its %ld remaining files\n",
			     n);
}

/* Leaves every location as the job found it. */
void pm_release_pools(struct pm_data *pd)
{
	uint32_t left, files;
	int i;

	for (i = 0; i < pd->npools; i++) {
		struct pool *p = &pd->pool[i];

		/* the subdirectories it made, while their descriptors are still open */
		if (!p->alias && p->marked)
			remove_own(pd, i, 'd');
	}
	if (pd->subfd) {
		for (i = 0; i < pd->npools * pd->cfg.subdirs; i++)
			if (pd->subfd[i] >= 0 && !pd->pool[i / pd->cfg.subdirs].alias)
				close(pd->subfd[i]);
		free(pd->subfd);
		pd->subfd = NULL;
	}
	for (i = 0; i < pd->npools; i++) {
		struct pool *p = &pd->pool[i];

		if (p->alias || p->fd < 0)
			continue;
		if (p->marked) {
			/*
			 * What could not be removed (an error with continue_on_error,
			 * or replaced by a user) keeps the marker: the next run
			 * removes what is still the engine's, and refuses the rest
			 */
			left = pmm_count(&p->marker);
			files = files_listed(&p->marker);
			pmm_close(&p->marker);
			if (!left)
				NOINTR(unlinkat(p->fd, PMM_NAME, 0));
			else /* the directories left are those that hold the files */
				pack_log_err(
					"postmark: pm_location %s: %u %s could not be removed; %s stays so that the next run removes them\n",
					p->path, files ? files : left,
					files ? "files" : "directories", PMM_NAME);
			p->marked = 0;
		}
		close(p->fd);
		p->fd = -1;
		if (p->made && rmdir(p->path) && errno != ENOTEMPTY)
			pack_log_err("postmark: cannot remove %s: %s\n", p->path, strerror(errno));
	}
}
