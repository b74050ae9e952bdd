/*
 * Small system-call helpers every engine uses: retrying an interrupted call
 * and the monotonic clock in nanoseconds. Header-only (static inline), so
 * each engine's copy stays private to it.
 */
#ifndef PACK_SYSUTIL_H
#define PACK_SYSUTIL_H

#include <errno.h>
#include <stdint.h>
#include <time.h>

/*
 * Repeats a system call that a signal interrupted before it did anything
 * (EINTR). fio installs its handlers with SA_RESTART, but a file system
 * that is interrupted itself (NFS, CIFS, FUSE) returns EINTR regardless.
 */
#define NOINTR(call) ({						\
	__typeof__(call) r_;						\
	do								\
		r_ = (call);						\
	while (r_ < 0 && errno == EINTR);				\
	r_;								\
})

static inline uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

#endif
