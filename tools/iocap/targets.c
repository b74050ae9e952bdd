// SPDX-License-Identifier: GPL-2.0
/*
 * iocap: which processes are traced (targets.h): the BPF side's "targets"
 * table filled from the -p processes and their descendants in /proc, the
 * processes of a cgroup named at the start, and which of them still live.
 */
#include <bpf/libbpf.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "names.h"
#include "targets.h"
#include "user.h"

unsigned long long targets_full, children_unknown;

/* A zombie is not alive: its parent may be waiting for the capture to end. */
int alive(unsigned pid)
{
	char path[64], buf[512], *p;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%u/stat", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	p = strrchr(buf, ')');
	return p && p[1] == ' ' && p[2] != 'Z' && p[2] != 'X';
}

/* Puts process @pid in the "targets" table; one that does not fit is counted. */
int add_target(struct bpf_map *targets, unsigned pid)
{
	__u8 one = 1;

	if (bpf_map__update_elem(targets, &pid, sizeof(pid), &one, sizeof(one), BPF_ANY)) {
		targets_full++;
		return -1;
	}
	return 0;
}

/* Whether /proc still has @path: a process or thread gone is no loss. */
static int still_there(const char *path)
{
	return access(path, F_OK) == 0;
}

/*
 * @pid's descendants (processes), from /proc's children lists, read whole
 * (a long list does not fit a fixed buffer). A list that cannot be read
 * (a kernel without CONFIG_PROC_CHILDREN), or descendants deeper than 16
 * levels, leave children uncaptured: counted.
 */
void add_children(struct bpf_map *targets, unsigned pid, int depth)
{
	char path[320], *buf = NULL;
	size_t cap = 0;
	struct dirent *d;
	DIR *dp;

	if (depth > 16) {
		children_unknown++;
		return;
	}
	snprintf(path, sizeof(path), "/proc/%u/task", pid);
	dp = opendir(path);
	if (!dp) {
		if (still_there(path) || errno != ENOENT)
			children_unknown++;
		return;
	}
	while ((d = readdir(dp))) {
		FILE *f;
		char *tok, *save;
		int bad;

		if (d->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/%u/task/%s/children", pid, d->d_name);
		f = test_hook("IOCAP_TEST_NO_CHILDREN_LIST") ? NULL : fopen(path, "r");
		if (!f) {
			snprintf(path, sizeof(path), "/proc/%u/task/%s", pid, d->d_name);
			if (still_there(path))
				children_unknown++;
			continue;
		}
		errno = 0;
		if (getline(&buf, &cap, f) > 0)
			for (tok = strtok_r(buf, " \n", &save); tok;
			     tok = strtok_r(NULL, " \n", &save)) {
				unsigned c = (unsigned)atoi(tok);

				if (add_target(targets, c))
					continue;
				scan_fds(c);
				cwd_of(c);
				add_children(targets, c, depth + 1);
			}
		bad = ferror(f) && errno != ESRCH; /* ESRCH: the thread ended as it was read */
		fclose(f);
		if (bad)
			children_unknown++;
	}
	free(buf);
	closedir(dp);
}

/*
 * The processes of cgroup @dir at the start: their open files and working
 * directories are named before their first events. (Only the cgroup itself:
 * the BPF side matches the cgroup id exactly, not its descendants.)
 */
void scan_cgroup(const char *dir)
{
	char path[PATH_MAX];
	unsigned pid;
	FILE *f;

	snprintf(path, sizeof(path), "%s/cgroup.procs", dir);
	f = fopen(path, "r");
	if (!f)
		die("--cgroup %s: %s: %s", dir, path, strerror(errno));
	while (fscanf(f, "%u", &pid) == 1) {
		scan_fds(pid);
		cwd_of(pid);
	}
	fclose(f);
}

/* The open files of every traced process. */
void scan_targets(struct bpf_map *targets)
{
	unsigned key, next, *prev = NULL;

	while (!bpf_map__get_next_key(targets, prev, &next, sizeof(next))) {
		scan_fds(next);
		key = next;
		prev = &key;
	}
}

/* Whether any traced process lives; the dead ones leave the table. */
int any_target_alive(struct bpf_map *targets)
{
	unsigned key, next, *prev = NULL, dead[256], ndead = 0, i;
	int any = 0;

	while (!bpf_map__get_next_key(targets, prev, &next, sizeof(next))) {
		if (alive(next))
			any = 1;
		else if (ndead < 256)
			dead[ndead++] = next;
		key = next;
		prev = &key;
	}
	for (i = 0; i < ndead; i++)
		bpf_map__delete_elem(targets, &dead[i], sizeof(dead[i]), 0);
	return any;
}
