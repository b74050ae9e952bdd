/*
 * iocap: the captured events written as strace's lines (events.c), for
 * iocap.c.
 */
#ifndef IOCAP_EVENTS_H
#define IOCAP_EVENTS_H

#include <stddef.h>

struct iocap_counts;

/* Ready for events: the table of the libaio iocbs waiting for their io_event. */
void events_start(void);
/* The ring buffer's callback: one record of iocap.bpf.c, @len bytes at @data. */
int on_event(void *ctx, void *data, size_t len);
/* What the events could not see, into its fields of @c (stats.h). */
void events_counted(struct iocap_counts *c);

#endif
