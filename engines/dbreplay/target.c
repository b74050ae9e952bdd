/* The target: one-to-one files in a directory, or regions of a device (see dbrengine.h). */
#include "dbrengine.h"

static int fill_range(struct dbr_job *dj, int fd, uint64_t from, uint64_t to)
{
	uint64_t start = from;

	while (from < to) {
		/* after a short write, on from where it stopped in the buffer too */
		size_t at = (size_t)((from - start) % dj->buf_len);
		size_t n = to - from > dj->buf_len - at ? dj->buf_len - at : (size_t)(to - from);
		ssize_t w;

		w = pwrite(fd, dj->wbuf + at, n, (off_t)from);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (w == 0)
			return -EIO;
		from += (uint64_t)w;
	}
	return 0;
}

/* The registered file @st is, or NULL. */
const struct dbr_ident *dbr_same_as(const struct dbr_job *dj, const struct stat *st)
{
	unsigned i;

	for (i = 0; i < dj->nident; i++)
		if (dj->ident[i].dev == st->st_dev && dj->ident[i].ino == st->st_ino)
			return &dj->ident[i];
	return NULL;
}

/*
 * Registers @st as @what (@path), after checking it is none of the files
 * registered before: a record log named after the trace would truncate it,
 * a report file that is the manifest would fill it with JSON, a sidecar
 * that is the trace would be deleted with the device. By identity
 * (st_dev, st_ino), so links and other names of one file count. 0, or 1
 * with the error said.
 */
int dbr_distinct(struct dbr_job *dj, const struct stat *st, const char *what, const char *path)
{
	const struct dbr_ident *same = dbr_same_as(dj, st);
	struct dbr_ident *id;

	if (same && !strcmp(same->what, what))
		return 0; /* the same role again: the manifest read, then opened to append */
	if (same) {
		pack_log_err(
			"dbreplay: %s %s is the same file as %s %s; refusing to use one file for both\n",
			what, path, same->what, same->path);
		return 1;
	}
	if (dj->nident == DBR_IDENTS)
		return 0;
	id = &dj->ident[dj->nident++];
	id->dev = st->st_dev;
	id->ino = st->st_ino;
	id->what = what;
	snprintf(id->path, sizeof(id->path), "%s", path);
	return 0;
}

int dbr_distinct_fd(struct dbr_job *dj, int fd, const char *what, const char *path)
{
	struct stat st;

	if (fstat(fd, &st)) {
		pack_log_err("dbreplay: %s %s: %s\n", what, path, strerror(errno));
		return 1;
	}
	return dbr_distinct(dj, &st, what, path);
}

/* A file of the trace as it is before the first record: present at its size, or absent. */
static int lay_file(struct dbr_job *dj, struct rfile *f)
{
	const struct dbtrace_file *d = f->decl;
	const char *base;
	struct stat st;
	int dfd, fd, ret = 0;

	dbr_set_fd(dj, f, -1);
	f->present = 0;
	dfd = dbr_open_parent(dj, d->path, d->exists, &base);
	if (dfd == -ENOENT && !d->exists)
		return 0;
	if (dfd < 0)
		return dfd;
	if (fstatat(dfd, base, &st, AT_SYMLINK_NOFOLLOW) == 0) {
		/* checked at init; between loops it may have been made by someone else meanwhile */
		if (!pathset_has(&dj->owned, d->path)) {
			ret = -EEXIST;
			goto out;
		}
		/* the engine's: back to the state before the trace */
		if (!d->exists) {
			if (NOINTR(unlinkat(dfd, base, S_ISDIR(st.st_mode) ? AT_REMOVEDIR : 0)))
				ret = -errno;
			goto out;
		}
	} else if (errno != ENOENT) {
		ret = -errno;
		goto out;
	} else if (!d->exists) {
		goto out;
	} else if ((ret = dbr_own(dj, d->path))) {
		goto out;
	} else if (d->role == DBTRACE_ROLE_DIRECTORY) {
		if (NOINTR(mkdirat(dfd, base, 0755))) {
			ret = -errno;
			goto out;
		}
	} else {
		fd = NOINTR(openat(dfd, base, dbr_open_flags(dj) | O_CREAT | O_EXCL, 0644));
		if (fd < 0) {
			ret = -errno;
			goto out;
		}
		close(fd);
		st.st_size = 0;
	}
	if (d->role == DBTRACE_ROLE_DIRECTORY) {
		fd = NOINTR(openat(dfd, base, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
	} else {
		fd = NOINTR(openat(dfd, base, dbr_open_flags(dj)));
		if (fd >= 0 && fstat(fd, &st) == 0) {
			if ((uint64_t)st.st_size > d->size)
				ret = NOINTR(ftruncate(fd, (off_t)d->size)) ? -errno : 0;
			else if (dj->o->fill == FILL_DATA)
				ret = fill_range(dj, fd, (uint64_t)st.st_size, d->size);
			if (!ret && (uint64_t)st.st_size != d->size && NOINTR(ftruncate(fd, (off_t)d->size)))
				ret = -errno;
		}
	}
	if (fd < 0) {
		ret = -errno;
		goto out;
	}
	if (!ret)
		ret = dbr_set_fd(dj, f, fd);
	else
		close(fd);
	if (!ret)
		f->present = 1;
out:
	close(dfd);
	return ret;
}

/* Drops the files from the page cache, so reads go to the device as in production. */
void dbr_invalidate(struct dbr_job *dj)
{
	unsigned i;

	if (dj->packed) {
		NOINTR(fsync(dj->devfd));
		posix_fadvise(dj->devfd, 0, 0, POSIX_FADV_DONTNEED);
		return;
	}
	for (i = 0; i < dj->h->nfiles; i++) {
		struct rfile *f = &dj->files[dj->h->files[i].id];

		if (f->fd >= 0 && f->decl->role != DBTRACE_ROLE_DIRECTORY) {
			NOINTR(fdatasync(f->fd));
			posix_fadvise(f->fd, 0, 0, POSIX_FADV_DONTNEED);
		}
	}
}

/*
 * Files and directories as they were before the first record; @first: the
 * first time (else between loops, when every path is the engine's).
 * Directories that exist are made first, then files, then what must be
 * absent is removed deepest first.
 */
int dbr_layout(struct dbr_job *dj, int first)
{
	const struct dbtrace_header *h = dj->h;
	unsigned i, pass;
	int ret;

	for (i = 0; i < h->nfiles; i++)
		dj->files[h->files[i].id].decl = &h->files[i];
	if (dj->packed) {
		if (!first)
			return 0;
		for (i = 0; i < h->nfiles; i++) {
			const struct dbtrace_file *d = &h->files[i];

			if (d->role != DBTRACE_ROLE_DIRECTORY && d->exists && dj->o->fill == FILL_DATA &&
			    (ret = fill_range(dj, dj->devfd, dj->files[d->id].region,
					      dj->files[d->id].region + d->size))) {
				pack_log_err(
					"dbreplay: dbr_device %s: writing the region of %s: %s\n",
					dj->device, d->path, strerror(-ret));
				return 1;
			}
		}
		dbr_invalidate(dj);
		return 0;
	}
	/* pass 0: directories that exist; 1: files; 2: directories that must not, in reverse */
	for (pass = 0; pass < 3; pass++) {
		for (i = 0; i < h->nfiles; i++) {
			const struct dbtrace_file *d = &h->files[pass == 2 ? h->nfiles - 1 - i : i];
			struct rfile *f = &dj->files[d->id];
			int isdir = d->role == DBTRACE_ROLE_DIRECTORY;

			if (!strcmp(d->path, ".")) {
				if (pass == 0) {
					dbr_set_fd(dj, f, dup(dj->rootfd));
					f->present = 1;
				}
				continue;
			}
			if ((pass == 0 && !(isdir && d->exists)) || (pass == 1 && isdir) ||
			    (pass == 2 && !(isdir && !d->exists)))
				continue;
			ret = lay_file(dj, f);
			if (ret == -EEXIST) {
				pack_log_err(
					"dbreplay: dbr_target %s: %s exists and was not created by dbreplay; refusing to touch it\n",
					dj->root, d->path);
				return 1;
			}
			if (ret) {
				pack_log_err("dbreplay: dbr_target %s: %s %s: %s\n", dj->root,
					     d->exists ? "creating" : "removing", d->path,
					     strerror(-ret));
				return 1;
			}
		}
	}
	if (dj->tdo_invalidate)
		dbr_invalidate(dj);
	return 0;
}

/* Deepest first, then by name (backwards): a file before its directory. */
static int depth_cmp(const void *a, const void *b)
{
	const char *x = *(const char *const *)a, *y = *(const char *const *)b;
	int dx = 0, dy = 0;

	for (const char *p = x; *p; p++)
		dx += *p == '/';
	for (const char *p = y; *p; p++)
		dy += *p == '/';
	return dx != dy ? dy - dx : strcmp(y, x);
}

/*
 * The paths the engine owns, deepest first (depth_cmp), in an array of
 * *@n to free (the paths stay the set's): an order that does not depend on
 * the set's hash. NULL if out of memory.
 */
static char **owned_deepest_first(const struct dbr_job *dj, size_t *n)
{
	char **list = calloc(dj->owned.n + 1, sizeof(*list));
	size_t i;

	*n = 0;
	if (!list)
		return NULL;
	for (i = 0; i < dj->owned.cap; i++)
		if (dj->owned.slot[i])
			list[(*n)++] = dj->owned.slot[i];
	qsort(list, *n, sizeof(*list), depth_cmp);
	return list;
}

/*
 * Whether every path the manifest lists that exists now was made after the
 * manifest: the engine writes a path's line before it makes the path, so
 * a file born before the manifest is someone else's, listed by a manifest
 * that was forged or copied in; the run would write over it and remove it.
 * Birth times from statx; where a file system has none, not checked. 0, or
 * 1 with the path said.
 */
static int listed_paths_are_younger(struct dbr_job *dj)
{
	struct statx mx, fx;
	char **list;
	size_t i, n;
	int refused = 0;

	if (!dj->owned.n || statx(dj->rootfd, MANIFEST, AT_SYMLINK_NOFOLLOW, STATX_BTIME, &mx) ||
	    !(mx.stx_mask & STATX_BTIME))
		return 0;
	/* of several older paths, the deepest is named */
	list = owned_deepest_first(dj, &n);
	if (!list) {
		pack_log_err("dbreplay: dbr_target %s: out of memory\n", dj->root);
		return 1;
	}
	for (i = 0; i < n && !refused; i++) {
		const char *path = list[i], *base;
		int dfd, older;

		dfd = dbr_open_parent(dj, path, 0, &base);
		if (dfd < 0)
			continue; /* not there: nothing to tell */
		older = !statx(dfd, base, AT_SYMLINK_NOFOLLOW, STATX_BTIME, &fx) &&
			(fx.stx_mask & STATX_BTIME) &&
			(fx.stx_btime.tv_sec < mx.stx_btime.tv_sec ||
			 (fx.stx_btime.tv_sec == mx.stx_btime.tv_sec &&
			  fx.stx_btime.tv_nsec < mx.stx_btime.tv_nsec));
		close(dfd);
		if (older) {
			pack_log_err(
				"dbreplay: dbr_target %s: %s lists %s, which is older than it: not made by dbreplay; refusing to use this directory\n",
				dj->root, MANIFEST, path);
			refused = 1;
		}
	}
	free(list);
	return refused;
}

/*
 * Reads the manifest of a target the engine used before; 0 or 1 (error
 * said). It must be a regular file (a FIFO would block the job, a
 * directory is no manifest), read to its end without error, each line a
 * path the engine could have made. A last line without its newline is a
 * write the engine did not finish (it writes a path whole before creating
 * it): that path was never created and is ignored.
 */
static int read_manifest(struct dbr_job *dj)
{
	char line[DBTRACE_MAX_PATH + 2], why[256];
	unsigned long n = 0;
	struct stat st;
	FILE *fp;
	int fd;

	fd = NOINTR(openat(dj->rootfd, MANIFEST, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
	if (fd < 0) {
		if (errno == ENOENT)
			return 0;
		pack_log_err("dbreplay: dbr_target %s: %s: %s; refusing to use this directory\n",
			     dj->root, MANIFEST, errno == ELOOP ? "a symlink" : strerror(errno));
		return 1;
	}
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		pack_log_err(
			"dbreplay: dbr_target %s: %s is not a regular file; refusing to use this directory\n",
			dj->root, MANIFEST);
		close(fd);
		return 1;
	}
	/* the engine's manifest has one name and is the engine user's (a hard link is a copy's) */
	if (st.st_nlink != 1 || st.st_uid != geteuid()) {
		pack_log_err(
			"dbreplay: dbr_target %s: %s %s, not dbreplay's manifest; refusing to use this directory\n",
			dj->root, MANIFEST,
			st.st_nlink != 1 ? "has more than one link" : "belongs to another user");
		close(fd);
		return 1;
	}
	if (dbr_distinct_fd(dj, fd, "dbr_target's manifest", dj->manifest_path)) {
		close(fd);
		return 1;
	}
	fp = fdopen(fd, "r");
	if (!fp) {
		close(fd);
		return 1;
	}
	while (fgets(line, sizeof(line), fp)) {
		size_t len = strlen(line);

		n++;
		if (!len || line[len - 1] != '\n') {
			if (len < sizeof(line) - 1 && feof(fp)) {
				dj->manifest_torn = 1; /* the unfinished last line: cut below */
				break;
			}
			pack_log_err(
				"dbreplay: dbr_target %s: %s line %lu is longer than a path (%d bytes); refusing to use this directory\n",
				dj->root, MANIFEST, n, DBTRACE_MAX_PATH);
			fclose(fp);
			return 1;
		}
		/* the engine writes its head first, whole: any other text is not its manifest */
		if (n == 1 && strcmp(line, MANIFEST_HEAD)) {
			pack_log_err(
				"dbreplay: dbr_target %s: %s does not begin with dbreplay's head line, not its manifest; refusing to use this directory\n",
				dj->root, MANIFEST);
			fclose(fp);
			return 1;
		}
		line[--len] = '\0';
		dj->manifest_len = (uint64_t)ftello(fp);
		if (dj->jobdir && !strncmp(line, MANIFEST_JOBDIR, len) && MANIFEST_JOBDIR[len] == '\n')
			dj->jobdir_made = 1;	/* by an earlier run (dbr_keep=1, or killed) */
		if (!strncmp(line, MANIFEST_DISOWNED, strlen(MANIFEST_DISOWNED)))
			dbr_disown(dj, line + strlen(MANIFEST_DISOWNED), 0);
		if (!len || line[0] == '#')
			continue;
		/* a path the engine could have made: nothing else is ever removed */
		if (dbtrace_path_check(line, DBTRACE_ROLE_DATA, why, sizeof(why)) || dbr_own_path(dj, line, 0)) {
			pack_log_err(
				"dbreplay: dbr_target %s: %s line %lu is not a path the engine makes (%s); refusing to use this directory\n",
				dj->root, MANIFEST, n, why);
			fclose(fp);
			return 1;
		}
	}
	if (ferror(fp)) {
		pack_log_err(
			"dbreplay: dbr_target %s: cannot read %s: %s; refusing to use this directory\n",
			dj->root, MANIFEST, strerror(errno));
		fclose(fp);
		return 1;
	}
	fclose(fp);
	return listed_paths_are_younger(dj);
}

/*
 * Opens and claims the target directory, and checks before anything is
 * written that no declared path is someone else's and that the space is
 * there. 0, or 1 with the error said.
 */
int dbr_open_target_dir(struct thread_data *td, struct dbr_job *dj)
{
	const struct dbtrace_header *h = dj->h;
	const struct dbr_ident *same;
	uint64_t need = 0, avail;
	struct statvfs vfs;
	unsigned i;
	const char *head;
	char job[80], why[256];
	int nofollow = 0;	/* the job's own directory DIR/JOBNAME.K: never a symlink */

	if (!dj->o->target || !*dj->o->target) {
		char err[PATH_MAX + 128];

		pack_job_dir_name(td, job, sizeof(job));
		if (target_mkdtemp(ENGINE, job, dj->root, sizeof(dj->root), err, sizeof(err))) {
			pack_log_err("dbreplay: %s\n", err);
			return 1;
		}
		dj->tmproot = 1;
	} else if (pack_clone_count(td) > 1) {
		int lfd, ret;

		/* numjobs: each job replays into its own directory of the target */
		pack_job_dir_name(td, job, sizeof(job));
		snprintf(dj->root, sizeof(dj->root), "%s/%s", dj->o->target, job);
		lfd = NOINTR(open(dj->o->target, O_RDONLY | O_DIRECTORY | O_CLOEXEC));
		if (lfd < 0) {
			pack_log_err("dbreplay: dbr_target %s: %s\n", dj->o->target,
				     strerror(errno));
			return 1;
		}
		dj->jobdir = 1;
		ret = target_mkdir(lfd, job, &dj->jobdir_made);
		if (ret) {
			pack_log_err("dbreplay: dbr_target %s: %s\n", dj->root, strerror(-ret));
			close(lfd);
			return 1;
		}
		close(lfd);
		nofollow = O_NOFOLLOW;
	} else {
		snprintf(dj->root, sizeof(dj->root), "%s", dj->o->target);
	}
	dj->rootfd = NOINTR(open(dj->root, O_RDONLY | O_DIRECTORY | O_CLOEXEC | nofollow));
	if (dj->rootfd < 0) {
		pack_log_err("dbreplay: dbr_target %s: %s\n", dj->root,
			     nofollow && (errno == ENOTDIR || errno == ELOOP)
				     ? "a symlink or not a directory; refusing to follow it"
			     : errno == ENOTDIR ? "not a directory"
						: strerror(errno));
		return 1;
	}
	snprintf(dj->manifest_path, sizeof(dj->manifest_path), "%s/%s", dj->root, MANIFEST);
	if (target_claim(dj->rootfd, dj->root, ENGINE, TARGET_WRITABLE | TARGET_LOCK,
			 why, sizeof(why))) {
		pack_log_err("dbreplay: dbr_target %s %s\n", dj->root, why);
		return 1;
	}
	if (read_manifest(dj))
		return 1;

	for (i = 0; i < h->nfiles; i++) {
		const struct dbtrace_file *d = &h->files[i];
		const char *base;
		struct stat st;
		int dfd;

		if (!strcmp(d->path, "."))
			continue;
		dfd = dbr_open_parent(dj, d->path, 0, &base);
		if (dfd == -ENOENT) {
			if (d->role != DBTRACE_ROLE_DIRECTORY)
				need += d->max_size;
			continue;
		}
		if (dfd < 0) {
			pack_log_err(
				"dbreplay: dbr_target %s: %s: a parent is a symlink or not a directory (%s); refusing to follow it\n",
				dj->root, d->path, strerror(-dfd));
			return 1;
		}
		if (fstatat(dfd, base, &st, AT_SYMLINK_NOFOLLOW)) {
			close(dfd);
			if (d->role != DBTRACE_ROLE_DIRECTORY)
				need += d->max_size;
			continue;
		}
		close(dfd);
		if ((same = dbr_same_as(dj, &st))) {
			pack_log_err(
				"dbreplay: dbr_target %s: %s is the same file as %s %s; refusing to replay over it\n",
				dj->root, d->path, same->what, same->path);
			return 1;
		}
		if (!pathset_has(&dj->owned, d->path)) {
			pack_log_err(
				"dbreplay: dbr_target %s: %s exists and was not created by dbreplay; refusing to touch it (use an empty directory)\n",
				dj->root, d->path);
			return 1;
		}
		if (d->role == DBTRACE_ROLE_DIRECTORY ? !S_ISDIR(st.st_mode) : !S_ISREG(st.st_mode)) {
			pack_log_err("dbreplay: dbr_target %s: %s is not a %s\n", dj->root, d->path,
				     d->role == DBTRACE_ROLE_DIRECTORY ? "directory"
								       : "regular file");
			return 1;
		}
		if (d->role != DBTRACE_ROLE_DIRECTORY && d->max_size > (uint64_t)st.st_blocks * 512)
			need += d->max_size - (uint64_t)st.st_blocks * 512;
	}
	avail = fstatvfs(dj->rootfd, &vfs) == 0 ? (uint64_t)vfs.f_bavail * vfs.f_frsize : UINT64_MAX;
	if (dj->o->fill == FILL_DATA && need > avail) {
		pack_log_err(
			"dbreplay: dbr_target %s has %llu bytes free; the trace's files need %llu more (their max sizes; dbr_fill=sparse to skip writing them out)\n",
			dj->root, (unsigned long long)avail, (unsigned long long)need);
		return 1;
	}
	dj->manifest_fd = NOINTR(openat(dj->rootfd, MANIFEST,
				 O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644));
	if (dj->manifest_fd < 0) {
		pack_log_err("dbreplay: dbr_target %s: cannot write %s: %s\n", dj->root, MANIFEST,
			     strerror(errno));
		return 1;
	}
	if (dbr_distinct_fd(dj, dj->manifest_fd, "dbr_target's manifest", dj->manifest_path))
		return 1;
	/*
	 * An unfinished last line goes: completed by the next path it would
	 * become a path the engine never made (a user's file of that name
	 * removed by the next run).
	 */
	if (dj->manifest_torn && NOINTR(ftruncate(dj->manifest_fd, (off_t)dj->manifest_len))) {
		pack_log_err("dbreplay: dbr_target %s: cannot write %s: %s\n", dj->root, MANIFEST,
			     strerror(errno));
		return 1;
	}
	/* whole: a head cut short would take the first path into its comment line */
	head = dj->jobdir_made ? MANIFEST_HEAD MANIFEST_JOBDIR : MANIFEST_HEAD;
	if (!dj->owned.n && target_write_all(dj->manifest_fd, head, strlen(head))) {
		pack_log_err("dbreplay: dbr_target %s: cannot write %s: %s\n", dj->root, MANIFEST,
			     strerror(errno));
		return 1;
	}
	dj->claimed = 1;
	return 0;
}

static int open_dev_direct(struct dbr_job *dj)
{
	char self[64];

	if (!dj->direct && !dj->trace_direct)
		return 0;
	/* the device already open, not whatever its name points to now */
	snprintf(self, sizeof(self), "/proc/self/fd/%d", dj->devfd);
	dj->dev_dfd = NOINTR(open(self, O_RDWR | O_CLOEXEC | O_DIRECT));
	if (dj->dev_dfd < 0 && errno == EINVAL && !dj->direct)
		return dbr_direct_refused(dj, dj->device);
	if (dj->dev_dfd < 0) {
		pack_log_err("dbreplay: dbr_device %s: direct=1: %s\n", dj->device,
			     strerror(errno));
		return 1;
	}
	return 0;
}

/*
 * The block device @st could not be opened O_EXCL: the kernel holds it for
 * a mounted file system, a swap area, a RAID or LVM member, or another
 * program opened it O_EXCL. Says which when /proc/self/mountinfo has it.
 */
static void device_busy(const struct dbr_job *dj, const struct stat *st)
{
	char line[4096], want[32], where[PATH_MAX] = "";
	FILE *fp = fopen("/proc/self/mountinfo", "re");

	snprintf(want, sizeof(want), "%u:%u", major(st->st_rdev), minor(st->st_rdev));
	/* "ID PARENT MAJ:MIN ROOT MOUNTPOINT ...": the third field is the device */
	while (fp && !*where && fgets(line, sizeof(line), fp)) {
		char dev[32], mnt[PATH_MAX];

		if (sscanf(line, "%*s %*s %31s %*s %4095s", dev, mnt) == 2 && !strcmp(dev, want))
			snprintf(where, sizeof(where), "%s", mnt);
	}
	if (fp)
		fclose(fp);
	if (*where)
		pack_log_err(
			"dbreplay: dbr_device %s is mounted on %s: the replay would overwrite its file system; refusing it whatever dbr_overwrite_device and allow_mounted_write say\n",
			dj->device, where);
	else
		pack_log_err(
			"dbreplay: dbr_device %s is in use (held exclusively by a mounted file system, swap, RAID or LVM, or another program); refusing to overwrite it\n",
			dj->device);
}

/*
 * The sidecar DEVICE.fio-dbreplay says the regular file DEVICE is the
 * engine's: its head, then the file's identity, "device ST_DEV ST_INO",
 * written once the file is made. Only a sidecar that is a regular file
 * holding exactly that, for the file now at DEVICE, lets a run overwrite
 * and remove DEVICE (and itself): a user's DEVICE.fio-dbreplay beside a
 * user's DEVICE (a trace of that name, a note) proves nothing.
 */
static void sidecar_text(char *buf, size_t len, const struct stat *dev)
{
	snprintf(buf, len, "%sdevice %llu %llu\n", SIDECAR_HEAD, (unsigned long long)dev->st_dev,
		 (unsigned long long)dev->st_ino);
}

/* 0 if @sidecar is the engine's for @dev, else 1 with the error said. */
static int sidecar_check(struct dbr_job *dj, const char *sidecar, const struct stat *dev)
{
	char want[sizeof(SIDECAR_HEAD) + 64], got[sizeof(want) + 1] = "";
	const char *why = NULL;
	struct stat st;
	ssize_t n = 0;
	int fd;

	/* O_NONBLOCK: a FIFO there must not block the job */
	fd = NOINTR(open(sidecar, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
	if (fd < 0 && errno == ENOENT) {
		pack_log_err(
			"dbreplay: dbr_device %s exists and was not created by dbreplay (no %s beside it); refusing to overwrite it\n",
			dj->device, sidecar);
		return 1;
	}
	if (fd < 0)
		why = errno == ELOOP ? "a symlink" : strerror(errno);
	else if (fstat(fd, &st) || !S_ISREG(st.st_mode))
		why = "not a regular file";
	else if (dbr_distinct(dj, &st, "dbr_device's sidecar", sidecar))
		goto refused;
	else if ((n = pread(fd, got, sizeof(got) - 1, 0)) < 0)
		why = strerror(errno);
	if (!why) {
		sidecar_text(want, sizeof(want), dev);
		if (strncmp(got, SIDECAR_HEAD, strlen(SIDECAR_HEAD)))
			why = "not a sidecar this dbreplay writes";
		else if (strcmp(got, want))
			why = "its file identity is not the one of the file there now";
	}
	if (!why) {
		close(fd);
		return 0;
	}
	pack_log_err(
		"dbreplay: dbr_device %s: %s is not dbreplay's sidecar for it (%s); refusing to overwrite or remove either\n",
		dj->device, sidecar, why);
refused:
	if (fd >= 0)
		close(fd);
	return 1;
}

/* Packed mode: one file or block device holding every file as a region. */
int dbr_open_device(struct thread_data *td, struct dbr_job *dj)
{
	const struct dbtrace_header *h = dj->h;
	char sidecar[PATH_MAX + 32];
	uint64_t align = 1 << 20, off = 0, size;
	char err[ERRLEN];
	struct stat st;
	unsigned i;

	if (parse_uint_option("dbr_align", dj->o->align, align, 1, 1ULL << 30, &align, err,
			      sizeof(err)) ||
	    (align & (align - 1))) {
		if (align & (align - 1))
			pack_errf(err, sizeof(err), "dbr_align=%s is not a power of two (1..1g)",
				  dj->o->align);
		pack_log_err("dbreplay: %s\n", err);
		return 1;
	}
	if (pack_clone_count(td) > 1) {
		pack_log_err(
			"dbreplay: numjobs must be 1 with dbr_device (the jobs would share its regions); use one job per device\n");
		return 1;
	}
	if (dbtrace_span(h, align, &dj->span)) {
		pack_log_err("dbreplay: the trace's files do not fit in 2^63 bytes\n");
		return 1;
	}
	for (i = 0; i < h->nfiles; i++) {
		const struct dbtrace_file *d = &h->files[i];

		if (d->role == DBTRACE_ROLE_DIRECTORY)
			continue;
		dj->files[d->id].region = off;
		off += (d->max_size + align - 1) / align * align;
	}
	snprintf(dj->device, sizeof(dj->device), "%s", dj->o->device);
	snprintf(sidecar, sizeof(sidecar), "%s%s", dj->device, SIDECAR_SUFFIX);
	if (stat(dj->device, &st) == 0 && S_ISBLK(st.st_mode)) {
		if (!dj->overwrite_device) {
			pack_log_err(
				"dbreplay: dbr_device %s is a block device: the replay overwrites %llu bytes of it; set dbr_overwrite_device=1 to confirm\n",
				dj->device, (unsigned long long)dj->span);
			return 1;
		}
		dj->dev_is_blk = 1;
		/*
		 * O_EXCL on a block device: EBUSY if it is mounted or claimed,
		 * and while the replay holds it nobody can mount it.
		 */
		dj->devfd = NOINTR(open(dj->device, O_RDWR | O_EXCL | O_CLOEXEC));
		if (dj->devfd < 0 && errno == EBUSY) {
			device_busy(dj, &st);
			return 1;
		}
		if (dj->devfd < 0) {
			pack_log_err("dbreplay: dbr_device %s: %s\n", dj->device, strerror(errno));
			return 1;
		}
		if (dbr_distinct_fd(dj, dj->devfd, "dbr_device", dj->device))
			return 1;
		if (ioctl(dj->devfd, BLKGETSIZE64, &size)) {
			pack_log_err("dbreplay: dbr_device %s: cannot read its size: %s\n",
				     dj->device, strerror(errno));
			return 1;
		}
		if (size < dj->span) {
			pack_log_err(
				"dbreplay: dbr_device %s has %llu bytes; the trace needs %llu (its files' max sizes, each aligned to %llu)\n",
				dj->device, (unsigned long long)size, (unsigned long long)dj->span,
				(unsigned long long)align);
			return 1;
		}
		return open_dev_direct(dj);
	}
	if (lstat(dj->device, &st) == 0) {
		if (!S_ISREG(st.st_mode)) {
			pack_log_err(
				"dbreplay: dbr_device %s is neither a regular file nor a block device\n",
				dj->device);
			return 1;
		}
		if (dbr_distinct(dj, &st, "dbr_device", dj->device) ||
		    sidecar_check(dj, sidecar, &st))
			return 1;
		dj->dev_made = 1;	/* an earlier run's (dbr_keep=1) */
		dj->devfd = NOINTR(open(dj->device, O_RDWR | O_NOFOLLOW | O_CLOEXEC));
	} else {
		char text[sizeof(SIDECAR_HEAD) + 64];
		int fd;
		struct statvfs vfs;
		char dir[PATH_MAX];
		char *slash;

		snprintf(dir, sizeof(dir), "%s", dj->device);
		slash = strrchr(dir, '/');
		if (slash)
			*(slash == dir ? slash + 1 : slash) = '\0';
		else
			snprintf(dir, sizeof(dir), ".");
		if (statvfs(dir, &vfs) == 0 && dj->o->fill == FILL_DATA &&
		    (uint64_t)vfs.f_bavail * vfs.f_frsize < dj->span) {
			pack_log_err(
				"dbreplay: dbr_device %s: %s has %llu bytes free; the trace needs %llu\n",
				dj->device, dir, (unsigned long long)vfs.f_bavail * vfs.f_frsize,
				(unsigned long long)dj->span);
			return 1;
		}
		/* the sidecar first: a run killed after it is refused, never one that overwrites */
		fd = NOINTR(open(sidecar, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644));
		if (fd < 0) {
			pack_log_err("dbreplay: dbr_device %s: cannot create %s: %s\n", dj->device,
				     sidecar, strerror(errno));
			return 1;
		}
		dj->sidecar_made = 1;
		dj->devfd = NOINTR(
			open(dj->device, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644));
		if (dj->devfd >= 0) {
			dj->dev_made = 1;
			if (fstat(dj->devfd, &st) == 0)
				sidecar_text(text, sizeof(text), &st);
			if (target_write_all(fd, text, strlen(text))) {
				pack_log_err("dbreplay: dbr_device %s: cannot write %s: %s\n",
					     dj->device, sidecar, strerror(errno));
				close(fd);
				return 1;
			}
		}
		close(fd);
	}
	if (dj->devfd < 0) {
		pack_log_err("dbreplay: dbr_device %s: %s\n", dj->device, strerror(errno));
		return 1;
	}
	/* the file checked above, or the one just made: no report under another name */
	if (dbr_distinct_fd(dj, dj->devfd, "dbr_device", dj->device))
		return 1;
	if (fstat(dj->devfd, &st) == 0 && (uint64_t)st.st_size < dj->span &&
	    NOINTR(ftruncate(dj->devfd, (off_t)dj->span))) {
		pack_log_err("dbreplay: dbr_device %s: cannot size it to %llu bytes: %s\n",
			     dj->device, (unsigned long long)dj->span, strerror(errno));
		return 1;
	}
	return open_dev_direct(dj);
}

/*
 * Packed mode, dbr_keep=0: removes the file the engine made, if the name
 * is still that file, then its sidecar.
 */
void dbr_remove_device(struct dbr_job *dj)
{
	char sidecar[PATH_MAX + 32];
	struct stat fst, st;

	snprintf(sidecar, sizeof(sidecar), "%s%s", dj->device, SIDECAR_SUFFIX);
	if (dj->dev_made && dj->devfd >= 0 && fstat(dj->devfd, &fst) == 0 &&
	    lstat(dj->device, &st) == 0 && st.st_dev == fst.st_dev && st.st_ino == fst.st_ino &&
	    unlink(dj->device) == 0)
		unlink(sidecar);
	else if (dj->sidecar_made && !dj->dev_made)
		unlink(sidecar); /* the file could not be made */
}

/* Removes what the engine created in the target (dbr_keep=0), deepest first. */
void dbr_remove_owned(struct dbr_job *dj)
{
	char **list;
	size_t i, n, left = 0;

	list = owned_deepest_first(dj, &n);
	if (!list)
		return;
	for (i = 0; i < n; i++) {
		const char *base;
		struct stat st;
		int dfd = dbr_open_parent(dj, list[i], 0, &base);

		if (dfd < 0)
			continue;
		if (fstatat(dfd, base, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		    NOINTR(unlinkat(dfd, base, S_ISDIR(st.st_mode) ? AT_REMOVEDIR : 0)))
			left++;	/* a directory that holds someone else's files stays */
		close(dfd);
	}
	free(list);
	if (!left)
		NOINTR(unlinkat(dj->rootfd, MANIFEST, 0));
	/* the private directory, or this run's DIR/JOBNAME.K: only if empty */
	if ((dj->tmproot || dj->jobdir_made) && !left)
		rmdir(dj->root);
}
