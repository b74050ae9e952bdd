/* The tree's directory: set-up and validation (see sfengine.h). */
#include "sfengine.h"

/* ------------------------------------------------------------------ */
/* Tree set-up and validation                                          */
/* ------------------------------------------------------------------ */

static int format_marker(struct sf_data *sd, char *buf, size_t len)
{
	char sizes[256], content[64];
	const struct tree_shape *t = &sd->shape;

	size_dist_describe(&sd->sizes, sizes, sizeof(sizes));
	content_describe(&sd->content, content, sizeof(content));
	return snprintf(buf, len,
			TREEMETA_MAGIC "\n"
			"# made by the smallfile fio engine; every file below this directory is its own\n"
			"tree_files=%llu\ntree_fanout=%u\ntree_depth=%u\nfiles_per_leaf=%llu\n"
			"tree_maildir=%d\nfile_size_dist=%s\nfile_content=%s\ntree_seed=%llu\n",
			(unsigned long long)t->nfiles, t->fanout, t->depth,
			(unsigned long long)t->files_per_leaf, t->maildir, sizes, content,
			(unsigned long long)sd->seed);
}

/*
 * How many files this layout writes, over all its numjobs clones: the whole
 * tree, or number_ios= of them a clone (a layout cut short on purpose).
 */
static uint64_t layout_files(struct thread_data *td, struct sf_data *sd)
{
	uint64_t n = sd->shape.nfiles, per = td->o.number_ios, clones = pack_clone_count(td) ?: 1;

	/* per * clones < n, without the product overflowing */
	if (per && per <= (n - 1) / clones)
		return per * clones;
	return n;
}

/* @b bytes as "5.62 GB (5621441331 bytes)": decimal, as df -H and disk labels */
static void room_text(uint64_t b, char *buf, size_t len)
{
	if (b >= 1000000000ULL)
		snprintf(buf, len, "%.2f GB (%llu bytes)", (double)b / 1e9, (unsigned long long)b);
	else
		snprintf(buf, len, "%.1f MB (%llu bytes)", (double)b / 1e6, (unsigned long long)b);
}

/*
 * A new layout: the tree's bytes and inodes must fit in the file system
 * before anything is written (a layout that hits ENOSPC hours in leaves a
 * tree that fits nobody's question). 0, or 1 with one line saying both.
 */
static int check_room(struct thread_data *td, struct sf_data *sd)
{
	struct tree_space need;
	struct statvfs vfs;
	uint64_t have, inodes, bytes;
	char nb[64], hb[64], eb[80] = "";

	if (fstatvfs(sd->rootfd, &vfs))
		return 0;	/* no statistics to check against (some FUSE file systems) */
	tree_space(&sd->shape, &sd->sizes, sd->seed, STREAM_SIZE, vfs.f_frsize ? vfs.f_frsize : vfs.f_bsize,
		   TREE_SPACE_EXACT_MAX, layout_files(td, sd), &need);
	/*
	 * What df calls Avail, for root too: ext4 keeps some of the blocks
	 * root may use for its own metadata, so filling those is no plan
	 */
	have = (uint64_t)vfs.f_bavail * (vfs.f_frsize ? vfs.f_frsize : vfs.f_bsize);
	inodes = vfs.f_favail;
	bytes = need.data_bytes + need.dir_bytes;
	if (bytes < need.data_bytes)
		bytes = UINT64_MAX; /* more than any file system: refused below, not wrapped to "fits" */
	/* f_blocks 0: no fixed size to check against (ramfs) */
	if (vfs.f_blocks && bytes > have) {
		room_text(bytes, nb, sizeof(nb));
		room_text(have, hb, sizeof(hb));
		if (need.data_error)
			snprintf(eb, sizeof(eb), " (+-%.1f MB: sizes sampled)", (double)need.data_error / 1e6);
		pack_log_err(
			"smallfile: tree_dir %s: the tree needs %s%s for %llu files in %llu directories, the file system has %s free; lay out fewer or smaller files (tree_files, tree_file_size_dist) or use a larger file system\n",
			sd->root, nb, eb, (unsigned long long)need.files,
			(unsigned long long)need.dirs, hb);
		return 1;
	}
	/* f_files 0: no fixed inode table (btrfs, tmpfs without nr_inodes) */
	if (vfs.f_files && need.files + need.dirs > inodes) {
		pack_log_err(
			"smallfile: tree_dir %s: the tree needs %llu inodes (%llu files, %llu directories), the file system has %llu free; lay out fewer files or make the file system with more inodes (mkfs.ext4 -N, -i)\n",
			sd->root, (unsigned long long)(need.files + need.dirs),
			(unsigned long long)need.files, (unsigned long long)need.dirs,
			(unsigned long long)inodes);
		return 1;
	}
	return 0;
}

static int writes_tree(struct sf_data *sd)
{
	int op;

	for (op = 0; op < FOP_NR; op++)
		if (sd->mix.weight[op] && op != FOP_READ && op != FOP_STAT)
			return 1;
	return 0;
}

static int creates_tree(struct sf_data *sd)
{
	int op;

	for (op = 0; op < FOP_NR; op++)
		if (sd->mix.weight[op] && sf_op_writes_tree(op))
			return 1;
	return 0;
}

/*
 * The default target when tree_dir is empty: a directory of our own under
 * $TMPDIR, named after the tree parameters so that jobs sharing [global]
 * options share a tree, and trees with other parameters never collide.
 */
static int default_root(struct sf_data *sd, const char *marker, char *out, size_t len)
{
	const char *tmpdir = target_tmpdir();
	char parent[PATH_MAX];
	struct stat st;
	uint64_t h = 0xcbf29ce484222325ULL;
	const char *p;

	for (p = marker; *p; p++)
		h = (h ^ (unsigned char)*p) * 0x100000001b3ULL;
	snprintf(parent, sizeof(parent), "%s/fio-smallfile-%u", tmpdir, (unsigned)getuid());
	if (mkdir(parent, 0700) && errno != EEXIST) {
		pack_log_err("smallfile: tree_dir unset and cannot create %s: %s\n", parent,
			     strerror(errno));
		return 1;
	}
	if (lstat(parent, &st) || !S_ISDIR(st.st_mode) || st.st_uid != getuid()) {
		pack_log_err(
			"smallfile: tree_dir unset and %s is not a directory of ours; set tree_dir\n",
			parent);
		return 1;
	}
	if (snprintf(out, len, "%s/%016llx", parent, (unsigned long long)h) >= (int)len) {
		pack_log_err("smallfile: TMPDIR %s is too long\n", tmpdir);
		return 1;
	}
	if (mkdir(out, 0755) && errno != EEXIST) {
		pack_log_err("smallfile: cannot create %s: %s\n", out, strerror(errno));
		return 1;
	}
	return 0;
}

/*
 * Whether the marker read (@found, with @links names) is this directory's
 * (@dir_ino). One name: yes, wherever it was laid out (a cp -a copy, a moved
 * or rsynced tree). More: another directory may hold it too (cp -al T backup,
 * or ln T/marker U/marker beside a user's files), and it is only the one whose
 * inode it recorded when published. 0, or 1 with one line said.
 */
static int marker_is_ours(struct sf_data *sd, const char *found, nlink_t links, ino_t dir_ino)
{
	unsigned long long ino;
	int has = treemeta_dir_inode(found, &ino);

	if (has < 0) {
		pack_log_err(
			"smallfile: tree_dir %s: %s is not a smallfile tree marker (its " TREEMETA_DIR_INODE
			"= line is not one number); refusing to touch it\n",
			sd->root, MARKER_NAME);
		return 1;
	}
	if (links == 1 || (has && ino == (unsigned long long)dir_ino))
		return 0;
	if (has)
		pack_log_err(
			"smallfile: tree_dir %s: %s is shared with another directory (%lu links; laid out in the directory of inode %llu, this one is %llu): not this directory's tree, refusing to touch it; if this is a copy of that tree (cp -al), give it a marker of its own: cd '%s' && cp -p %s %s.own && mv %s.own %s\n",
			sd->root, MARKER_NAME, (unsigned long)links, ino,
			(unsigned long long)dir_ino, sd->root, MARKER_NAME, MARKER_NAME,
			MARKER_NAME, MARKER_NAME);
	else
		pack_log_err(
			"smallfile: tree_dir %s: %s is shared with another directory (%lu links) and, written before markers recorded their directory, does not say which one is its tree: refusing to touch it; lay the tree out again, or give each copy a marker of its own: cd '%s' && cp -p %s %s.own && mv %s.own %s\n",
			sd->root, MARKER_NAME, (unsigned long)links, sd->root, MARKER_NAME,
			MARKER_NAME, MARKER_NAME, MARKER_NAME);
	return 1;
}

int sf_open_tree(struct thread_data *td, struct sf_data *sd)
{
	char marker[1024], mine[1100], found[4096], why[512];
	struct stat st;
	nlink_t links = 1;
	int ret, empty;

	format_marker(sd, marker, sizeof(marker));
	if (!sd->o->tree_dir || !*sd->o->tree_dir) {
		if (default_root(sd, marker, sd->root, sizeof(sd->root)))
			return 1;
	} else {
		snprintf(sd->root, sizeof(sd->root), "%s", sd->o->tree_dir);
	}
	if (stat(sd->root, &st)) {
		pack_log_err("smallfile: tree_dir %s: %s\n", sd->root, strerror(errno));
		return 1;
	}
	if (!S_ISDIR(st.st_mode)) {
		pack_log_err("smallfile: tree_dir %s is not a directory\n", sd->root);
		return 1;
	}
	sd->rootfd = open(sd->root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (sd->rootfd < 0) {
		pack_log_err("smallfile: tree_dir %s: %s\n", sd->root, strerror(errno));
		return 1;
	}
	/* the directory held, not the name looked at before the open */
	if (fstat(sd->rootfd, &st)) {
		pack_log_err("smallfile: tree_dir %s: %s\n", sd->root, strerror(errno));
		return 1;
	}
	if (writes_tree(sd) &&
	    target_claim(sd->rootfd, sd->root, "smallfile", TARGET_WRITABLE, why, sizeof(why))) {
		pack_log_err("smallfile: tree_dir %s %s\n", sd->root, why);
		return 1;
	}

	ret = target_read_file(sd->rootfd, MARKER_NAME, found, sizeof(found), &links);
	if (ret == -ENOENT) {
		empty = target_dir_is_empty(sd->rootfd, MARKER_NAME);
		if (empty < 0) {
			pack_log_err("smallfile: tree_dir %s: cannot list it: %s\n", sd->root,
				     strerror(errno));
			return 1;
		}
		if (!empty) {
			/* a racing clone may have just published the marker */
			ret = target_read_file(sd->rootfd, MARKER_NAME, found, sizeof(found),
					       &links);
			if (ret == -ENOENT) {
				pack_log_err(
					"smallfile: tree_dir %s is not empty and holds no smallfile tree; refusing to touch it\n",
					sd->root);
				return 1;
			}
		} else if (!creates_tree(sd)) {
			pack_log_err(
				"smallfile: tree_dir %s holds no laid-out tree; run a job with tree_file_op=layout first\n",
				sd->root);
			/* leave no empty default directory behind */
			if (!sd->o->tree_dir || !*sd->o->tree_dir)
				rmdir(sd->root);
			return 1;
		} else {
			if (op_mix_single(&sd->mix) == FOP_LAYOUT && sd->o->tree_space_check &&
			    check_room(td, sd))
				return 1;
			/* where it is laid out: a cp -al copy of the tree shares this file */
			snprintf(mine, sizeof(mine), "%s" TREEMETA_DIR_INODE "=%llu\n", marker,
				 (unsigned long long)st.st_ino);
			ret = target_publish(sd->rootfd, MARKER_NAME, mine);
			if (ret == -EEXIST)
				ret = target_read_file(sd->rootfd, MARKER_NAME, found,
						       sizeof(found), &links);
			else if (!ret)
				return 0;
		}
	}
	if (ret == -EINVAL) {
		/* a FIFO would block the open, a symlink leads elsewhere: a marker is a plain file */
		pack_log_err(
			"smallfile: tree_dir %s: %s is not a regular file; refusing to touch it\n",
			sd->root, MARKER_NAME);
		return 1;
	}
	if (ret == -EFBIG) {
		pack_log_err(
			"smallfile: tree_dir %s: %s holds more than a marker's text (grown or padded); refusing to touch it\n",
			sd->root, MARKER_NAME);
		return 1;
	}
	if (ret) {
		pack_log_err("smallfile: tree_dir %s: cannot read %s: %s\n", sd->root, MARKER_NAME,
			     strerror(-ret));
		return 1;
	}
	ret = treemeta_compare(found, marker, why, sizeof(why));
	if (ret < 0) {
		pack_log_err(
			"smallfile: tree_dir %s: %s is not a smallfile tree marker; refusing to touch it\n",
			sd->root, MARKER_NAME);
		return 1;
	}
	if (marker_is_ours(sd, found, links, st.st_ino))
		return 1;
	if (ret) {
		pack_log_err("smallfile: tree_dir %s was laid out with other parameters: %s\n",
			     sd->root, why);
		return 1;
	}
	return 0;
}
