/*
 * iocap: its output lines, written in issue order (lines.c), for events.c
 * and iocap.c.
 */
#ifndef IOCAP_LINES_H
#define IOCAP_LINES_H

#include <stdio.h>

/* The lines are written to @f. */
void lines_open(FILE *f);
/* Line @text (allocated, taken) of a call issued at @ts. */
void hpush(unsigned long long ts, char *text);
/* A call completed at @te: what was issued a second before may be written. */
void lines_completed(unsigned long long te);
/* Writes what was issued more than a second before the latest completion (@all: every line). */
void flush_lines(int all);

#endif
