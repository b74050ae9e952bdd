/*
 * The target's files as the engine has them: the paths it made (the
 * manifest's set, each path written to the manifest before it is made),
 * the directories a path is opened through, a file's descriptors (with
 * O_DIRECT or not), and what a target that refuses O_DIRECT means for the
 * replay. The lowest of the engine's files: the others call into it, it
 * calls none of them.
 */
#include "dbrengine.h"

/* Adds @path to the set; with @log, appends it to the manifest first (before it is created). */
int dbr_own_path(struct dbr_job *dj, const char *path, int log)
{
	size_t n = strlen(path);

	if (pathset_has(&dj->owned, path))
		return 0;
	if (log && dj->manifest_fd >= 0) {
		struct iovec iov[2] = { { (void *)path, n }, { (void *)"\n", 1 } };

		errno = 0;
		if (NOINTR(writev(dj->manifest_fd, iov, 2)) != (ssize_t)n + 1)
			return errno ? -errno : -EIO;
	}
	return pathset_add(&dj->owned, path);
}

int dbr_own(struct dbr_job *dj, const char *path)
{
	return dbr_own_path(dj, path, 1);
}

/*
 * @path was in the set, but the engine did not create it: its create
 * found it there (EEXIST), made meanwhile by someone else. It leaves the
 * set, so cleanup never removes it, and with @log the manifest says so,
 * so that the next run does not take it for the engine's either.
 */
void dbr_disown(struct dbr_job *dj, const char *path, int log)
{
	if (!pathset_remove(&dj->owned, path))
		return;
	if (log && dj->manifest_fd >= 0) {
		struct iovec iov[3] = { { (void *)MANIFEST_DISOWNED, strlen(MANIFEST_DISOWNED) },
					{ (void *)path, strlen(path) },
					{ (void *)"\n", 1 } };

		/* if this fails the next run refuses the path as the engine's: no worse than before */
		if (NOINTR(writev(dj->manifest_fd, iov, 3)) < 0)
			pack_log_err("dbreplay: dbr_target %s: %s: %s\n", dj->root, MANIFEST,
				     strerror(errno));
	}
}

/*
 * The directory holding @path (relative to the target), opened one component
 * at a time without following symlinks; missing directories are created
 * (and recorded as the engine's) when @create. *@base: the last component.
 * A descriptor to close, or -errno.
 */
int dbr_open_parent(struct dbr_job *dj, const char *path, int create, const char **base)
{
	char comp[DBTRACE_MAX_PATH + 1];
	const char *p = path, *slash;
	int fd = dup(dj->rootfd);

	if (fd < 0)
		return -errno;
	while ((slash = strchr(p, '/'))) {
		int next;

		memcpy(comp, path, (size_t)(slash - path));
		comp[slash - path] = '\0';
		next = NOINTR(openat(fd, comp + (p - path),
				     O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
		if (next < 0 && errno == ENOENT && create) {
			int ret = dbr_own(dj, comp);

			if (ret) {
				close(fd);
				return ret;
			}
			if (NOINTR(mkdirat(fd, comp + (p - path), 0755))) {
				ret = -errno;
				if (ret != -EEXIST) {
					close(fd);
					return ret;
				}
				dbr_disown(dj, comp, 1); /* made meanwhile, not by the engine */
			}
			next = NOINTR(openat(fd, comp + (p - path),
					     O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
		}
		if (next < 0) {
			int ret = -errno;

			close(fd);
			/* a symlink in the path: ELOOP or ENOTDIR with O_NOFOLLOW */
			return ret;
		}
		close(fd);
		fd = next;
		p = slash + 1;
	}
	*base = p;
	return fd;
}

/* A line the replay cannot honour: said now, repeated in the summary and the report. */
void __attribute__((format(printf, 2, 3))) dbr_fidelity(struct dbr_job *dj, const char *fmt, ...)
{
	va_list ap;
	char *line;

	if (dj->nfidelity == sizeof(dj->fidelity) / sizeof(dj->fidelity[0]))
		return;
	line = dj->fidelity[dj->nfidelity++];
	va_start(ap, fmt);
	vsnprintf(line, sizeof(dj->fidelity[0]), fmt, ap);
	va_end(ap);
	pack_log_err("dbreplay: %s\n", line);
}

/*
 * The target refuses O_DIRECT, which the trace's "direct" files were
 * captured with: dbr_direct=trace refuses the replay (1), dbr_direct=try
 * says so and goes on through the page cache (0).
 */
int dbr_direct_refused(struct dbr_job *dj, const char *where)
{
	if (!dj->trace_direct)
		return 0;
	dj->trace_direct = 0;
	if (dj->o->direct_mode == DIRECT_TRY) {
		dbr_fidelity(
			dj,
			"%u file(s) the database opened with O_DIRECT are replayed through the page cache: %s refuses O_DIRECT (dbr_direct=try)",
			dj->direct_files, where);
		return 0;
	}
	pack_log_err(
		"dbreplay: %s refuses O_DIRECT, which %u file(s) of %s were captured with; replay on a file system that has it, or set dbr_direct=try (page cache, said in the report) or dbr_direct=off\n",
		where, dj->direct_files, dj->trace_path);
	return 1;
}

int dbr_open_flags(const struct dbr_job *dj)
{
	return O_RDWR | O_NOFOLLOW | O_CLOEXEC;
}

/*
 * Makes @fd (opened buffered) the file's descriptor. With direct=1 the file
 * gets an O_DIRECT descriptor for its aligned reads and writes and keeps the
 * buffered one for the rest, as databases do: InnoDB opens its tablespaces
 * with O_DIRECT but reads a 24-byte header through the page cache elsewhere.
 */
int dbr_set_fd(struct dbr_job *dj, struct rfile *f, int fd)
{
	if (f->fd >= 0)
		close(f->fd);
	if (f->bfd >= 0)
		close(f->bfd);
	f->fd = fd;
	f->bfd = -1;
	if (fd >= 0 && dbr_file_direct(dj, f->decl)) {
		char self[64];
		int dfd;

		snprintf(self, sizeof(self), "/proc/self/fd/%d", fd);
		dfd = NOINTR(open(self, O_RDWR | O_CLOEXEC | O_DIRECT));
		if (dfd < 0 && errno == EINVAL) {
			/* tmpfs before Linux 6.6, ramfs: say so once, replay through the page cache */
			if (dj->direct)
				pack_log_err(
					"dbreplay: direct=1: %s does not support O_DIRECT; the replay goes through the page cache\n",
					dj->root);
			dj->direct = 0;
			return dbr_direct_refused(dj, dj->root) ? -EINVAL : 0;
		}
		if (dfd < 0)
			return -errno;
		f->bfd = fd;
		f->fd = dfd;
	}
	return 0;
}
