/*
 * Whether the files of a directory take O_DIRECT, and the transfer size
 * alignment they need there: probed on an unnamed file (O_TMPFILE), so the
 * directory gains no name and nothing stays behind.
 */
#ifndef PACK_ODIRECT_H
#define PACK_ODIRECT_H

#define ODIRECT_MIN_ALIGN	512
#define ODIRECT_MAX_ALIGN	4096

/*
 * 1: files in @dirfd take O_DIRECT, and *@align is the smallest power of
 * two from ODIRECT_MIN_ALIGN to ODIRECT_MAX_ALIGN that an O_DIRECT write of
 * that size at offset 0 from page-aligned memory accepted (ODIRECT_MAX_ALIGN
 * if none did); 0: O_DIRECT is refused (EINVAL: ramfs, tmpfs before Linux
 * 6.6); -1: cannot tell (no O_TMPFILE, or another error). *@align is set
 * only when 1 is returned.
 */
int odirect_probe(int dirfd, unsigned *align);

#endif
