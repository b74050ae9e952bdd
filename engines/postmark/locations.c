/* The locations a job's files go to (see pmengine.h). */
#include "pmengine.h"

/* ------------------------------------------------------------------ */
/* Locations: parsing, claiming, cleaning                              */
/* ------------------------------------------------------------------ */


static int all_digits(const char *s)
{
	return *s && strspn(s, "0123456789") == strlen(s);
}

static int subdir_name(const char *s)
{
	return s[0] == 's' && all_digits(s + 1);
}

/*
 * Removes what an interrupted run of this engine left in @dirfd: regular
 * files named by numbers, and (@depth 0) s<N> directories of them. Entries
 * named like those but of another kind (a symlink "17", a file "s3"), or
 * anything else inside an s<N> directory, are not ours: -1 with the name in
 * @bad. Other names are ignored. Returns the files removed (or, @dry, found).
 */
static long clean_leftovers(int dirfd, int depth, char *bad, size_t badlen, int dry)
{
	DIR *d;
	struct dirent *de;
	long removed = 0;
	int fd = dup(dirfd);

	if (fd < 0)
		return -1;
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return -1;
	}
	/* a dup shares the file offset: an earlier scan left it at the end */
	rewinddir(d);
	while ((de = readdir(d))) {
		struct stat st;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (depth == 0 && !strcmp(de->d_name, MARKER_NAME))
			continue;
		/*
		 * Other files of a location (not named like PostMark's) can
		 * never collide with the engine's and are left alone.
		 */
		if (depth == 0 && !all_digits(de->d_name) && !subdir_name(de->d_name))
			continue;
		if (fstatat(dirfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW))
			goto foreign;
		if (all_digits(de->d_name) && S_ISREG(st.st_mode)) {
			if (!dry && NOINTR(unlinkat(dirfd, de->d_name, 0)))
				goto foreign;
			removed++;
			continue;
		}
		if (depth == 0 && subdir_name(de->d_name) && S_ISDIR(st.st_mode)) {
			int sfd = NOINTR(openat(dirfd, de->d_name,
						O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
			long r;

			if (sfd < 0)
				goto foreign;
			r = clean_leftovers(sfd, 1, bad, badlen, dry);
			close(sfd);
			if (r < 0) {
				closedir(d);
				return -1;
			}
			removed += r;
			if (!dry && NOINTR(unlinkat(dirfd, de->d_name, AT_REMOVEDIR)))
				goto foreign;
			continue;
		}
foreign:
		snprintf(bad, badlen, "%s", de->d_name);
		closedir(d);
		return -1;
	}
	closedir(d);
	return removed;
}

/*
 * Takes @p->fd for this job: an exclusive lock (two jobs in one directory
 * would trip over each other's file names); entries named like PostMark's
 * files (numbers, s<N>) must be what an interrupted run of the engine left
 * (its marker is there), and are removed. Other files may be there and are
 * never touched. PostMark itself writes into any directory and truncates
 * what it finds; the engine never touches a file it did not create.
 */
static int claim_pool(struct pool *p)
{
	char bad[NAME_MAX + 1] = "", err[256];
	long n;
	int ret, marked;

	if (target_claim(p->fd, p->path, ENGINE, TARGET_LOCK, err, sizeof(err))) {
		log_err("postmark: pm_location %s %s\n", p->path, err);
		return 1;
	}
	marked = faccessat(p->fd, MARKER_NAME, F_OK, AT_SYMLINK_NOFOLLOW) == 0;
	/* look first, so that a foreign directory is not half cleaned */
	n = clean_leftovers(p->fd, 0, bad, sizeof(bad), 1);
	if (n < 0) {
		if (*bad)
			log_err("postmark: pm_location %s holds '%s', named like PostMark's files but not the engine's; refusing to touch it\n",
				p->path, bad);
		else
			log_err("postmark: pm_location %s: %s\n", p->path, strerror(errno));
		return 1;
	}
	if (n > 0 && !marked) {
		log_err("postmark: pm_location %s holds numbered files but no %s marker: not the engine's; give it an empty directory\n",
			p->path, MARKER_NAME);
		return 1;
	}
	if (n > 0) {
		n = clean_leftovers(p->fd, 0, bad, sizeof(bad), 0);
		if (n < 0) {
			log_err("postmark: pm_location %s: cannot remove an interrupted run's files: %s\n",
				p->path, strerror(errno));
			return 1;
		}
		log_err("postmark: pm_location %s: removed %ld files an interrupted run left\n",
			 p->path, n);
	}
	/*
	 * Whole or not at all: a marker cut short by a full file system
	 * would stay behind a refused run, and be taken for the engine's
	 */
	if (!marked && (ret = target_publish(p->fd, MARKER_NAME, MARKER_TEXT))) {
		log_err("postmark: pm_location %s: cannot write %s: %s\n", p->path, MARKER_NAME,
			strerror(-ret));
		return 1;
	}
	p->marked = 1;
	return 0;
}

static int check_writable(const char *path, int fd)
{
	char err[256];

	if (target_claim(fd, path, ENGINE, TARGET_WRITABLE, err, sizeof(err))) {
		log_err("postmark: pm_location %s %s\n", path, err);
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
		log_err("postmark: %s\n", err);
		return 1;
	}
	for (i = 0; i < nloc; i++) {
		uint64_t bytes = 0, files = 0, have, inodes;
		const char *path = pd->cfg.nloc ? pd->cfg.loc[i].path : tmp;

		if (!ok[i] || !vfs[i].f_blocks)
			continue;	/* no fixed size (ramfs), or pm_open_pools() will say */
		for (j = 0; j < nloc; j++) {
			if (!ok[j] || vfs[j].f_fsid != vfs[i].f_fsid)
				continue;
			if (j < i)
				break;	/* counted with the first location of this file system */
			bytes += room.bytes[j];
			files += room.files[j];
		}
		if (j < i)
			continue;
		bytes *= jobs;
		files = (files + (pd->cfg.subdirs > 1 ? (uint64_t)pd->cfg.subdirs : 0)) * jobs;
		have = (uint64_t)vfs[i].f_bavail * block[i];	/* df's Avail */
		inodes = vfs[i].f_favail;
		if (bytes > have) {
			log_err("postmark: pm_location %s: the pool needs %.1f MB (%llu bytes) at its fullest for %llu files, the file system has %.1f MB (%llu bytes) free; use fewer or smaller files (pm_number, pm_size_high, pm_transactions) or a larger file system\n",
				path, (double)bytes / 1e6, (unsigned long long)bytes,
				(unsigned long long)files, (double)have / 1e6, (unsigned long long)have);
			return 1;
		}
		if (vfs[i].f_files && files > inodes) {
			log_err("postmark: pm_location %s: the pool needs %llu inodes at its fullest, the file system has %llu free; use fewer files (pm_number, pm_transactions) or a file system with more inodes\n",
				path, (unsigned long long)files, (unsigned long long)inodes);
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
			log_err("postmark: %s\n", err);
			return 1;
		}
		pd->pool[0].made = 1;
		pd->tmpdir = 1;
		pd->npools = 1;
		pd->pool[0].fd = open(pd->pool[0].path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (pd->pool[0].fd < 0) {
			log_err("postmark: %s: %s\n", pd->pool[0].path, strerror(errno));
			return 1;
		}
		return claim_pool(&pd->pool[0]);
	}

	/* every location is checked before any is written to */
	pd->npools = pd->cfg.nloc;
	for (i = 0; i < pd->npools; i++) {
		const char *loc = pd->cfg.loc[i].path;

		lfd[i] = open(loc, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (lfd[i] < 0) {
			if (errno == ENOTDIR)
				log_err("postmark: pm_location %s is not a directory\n", loc);
			else
				log_err("postmark: pm_location %s: %s\n", loc, strerror(errno));
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
				log_err("postmark: %s: %s\n", p->path, strerror(-ret));
				goto fail_from;
			}
			p->fd = NOINTR(openat(lfd[i], job, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
			close(lfd[i]);
			if (p->fd < 0) {
				log_err("postmark: %s: %s\n", p->path, strerror(errno));
				i++;
				goto fail_from;
			}
		}
		lfd[i] = -1;
		if (fstat(p->fd, &st[i])) {
			log_err("postmark: %s: %s\n", p->path, strerror(errno));
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
		if (!p->alias && claim_pool(p)) {
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

/* s0 .. s<K-1> in each pool, as PostMark makes them (mode 0700) before its timers. */
int pm_make_subdirs(struct pm_data *pd)
{
	int k = pd->cfg.subdirs, i, s;
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
		p->sub_made = calloc(k, 1);
		if (!p->sub_made) {
			log_err("postmark: out of memory for pm_subdirectories=%d\n", k);
			return 1;
		}
		for (s = 0; s < k; s++) {
			snprintf(name, sizeof(name), "s%d", s);
			if (NOINTR(mkdirat(p->fd, name, 0700)) == 0)
				p->sub_made[s] = 1;
			else if (errno != EEXIST) {
				log_err("postmark: %s/%s: %s\n", p->path, name, strerror(errno));
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
				log_err("postmark: %s/%s: %s\n", p->path, name, strerror(errno));
				return 1;
			}
			pd->subfd[i * k + s] = fd;
		}
	}
	return 0;
}

/* Deletes the files of an interrupted run (fio stopped early or an error). */
void pm_delete_live(struct pm_data *pd)
{
	struct pm_op op;
	int s, tmp, dfd;
	long n = 0;
	char name[16];

	for (s = 0; s < pm_sim_nslots(pd->sim); s++) {
		if (!pm_sim_slot(pd->sim, s, &op))
			continue;
		dfd = pm_dir_of(pd, &op, &tmp);
		if (dfd < 0)
			continue;
		snprintf(name, sizeof(name), "%d", op.name);
		if (NOINTR(unlinkat(dfd, name, 0)) == 0)
			n++;
		if (tmp)
			close(dfd);
	}
	/* a delete handed out by the model (no longer live there) and not made */
	if (pd->have_next && pd->next.kind == PM_OP_DELETE) {
		dfd = pm_dir_of(pd, &pd->next, &tmp);
		snprintf(name, sizeof(name), "%d", pd->next.name);
		if (dfd >= 0 && NOINTR(unlinkat(dfd, name, 0)) == 0)
			n++;
		if (dfd >= 0 && tmp)
			close(dfd);
	}
	if (n)
		log_err("postmark: the run did not finish; removed its %ld remaining files\n", n);
}

/* Leaves every location as the job found it. */
void pm_release_pools(struct pm_data *pd)
{
	int i, s;
	char name[32];

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
		/* only those it made: a user's s<K> (empty again) stays */
		for (s = 0; p->sub_made && s < pd->cfg.subdirs; s++) {
			if (!p->sub_made[s])
				continue;
			snprintf(name, sizeof(name), "s%d", s);
			NOINTR(unlinkat(p->fd, name, AT_REMOVEDIR));
		}
		free(p->sub_made);
		p->sub_made = NULL;
		if (p->marked) {
			char bad[NAME_MAX + 1] = "";
			long left = clean_leftovers(p->fd, 0, bad, sizeof(bad), 1);

			/*
			 * Files of ours that could not be deleted (an error with
			 * continue_on_error) keep the marker: the next run
			 * recognises them by it and removes them, where without it
			 * it would refuse them as a user's.
			 */
			if (left == 0)
				NOINTR(unlinkat(p->fd, MARKER_NAME, 0));
			else if (left > 0)
				log_err("postmark: pm_location %s: %ld files could not be removed; %s stays so that the next run removes them\n",
					p->path, left, MARKER_NAME);
		}
		close(p->fd);
		p->fd = -1;
		if (p->made && rmdir(p->path) && errno != ENOTEMPTY)
			log_err("postmark: cannot remove %s: %s\n", p->path, strerror(errno));
	}
}

