/*
 * The machine's floor for a daemon that sleeps between requests: the CPU
 * time one thread spends to be woken by a timer and go back to sleep, and
 * nothing else (fio-pack bench device prints it beside moddev's CPU per
 * request). On a VM a wake-up of an idle vCPU costs far more than on bare
 * metal, and a modeled device at a low request rate pays at least two a
 * request (its arrival, its reply), so this is what its CPU per request is
 * to be compared with.
 *
 *   wakeup PERIOD_US COUNT   one JSON line: the CPU per wake-up in us
 */
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

static long arg(const char *what, const char *s, long lo, long hi)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < lo || v > hi) {
		fprintf(stderr, "wakeup: %s must be a whole number from %ld to %ld: %s\n", what, lo,
			hi, s);
		exit(2);
	}
	return v;
}

static uint64_t cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

int main(int argc, char **argv)
{
	struct itimerspec its = { { 0, 0 }, { 0, 0 } };
	struct rusage r0, r1;
	uint64_t c0, c1, ticks, seen = 0;
	long period, count;
	int t;

	if (argc != 3) {
		fprintf(stderr, "usage: wakeup PERIOD_US COUNT\n");
		return 2;
	}
	period = arg("PERIOD_US", argv[1], 1, 1000000);
	count = arg("COUNT", argv[2], 1, 1000000);
	t = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
	if (t < 0) {
		fprintf(stderr, "wakeup: timerfd_create: %s\n", strerror(errno));
		return 1;
	}
	its.it_interval.tv_sec = its.it_value.tv_sec = period / 1000000;
	its.it_interval.tv_nsec = its.it_value.tv_nsec = period % 1000000 * 1000;
	getrusage(RUSAGE_SELF, &r0);
	c0 = cpu_ns();
	if (timerfd_settime(t, 0, &its, NULL)) {
		fprintf(stderr, "wakeup: timerfd_settime: %s\n", strerror(errno));
		return 1;
	}
	while (seen < (uint64_t)count) {
		if (read(t, &ticks, sizeof(ticks)) != sizeof(ticks)) {
			fprintf(stderr, "wakeup: read: %s\n", strerror(errno));
			return 1;
		}
		seen += ticks;
	}
	c1 = cpu_ns();
	getrusage(RUSAGE_SELF, &r1);
	printf("{\"period_us\": %ld, \"wakeups\": %" PRIu64 ", \"cpu_ns\": %" PRIu64
	       ", \"switches\": %ld}\n",
	       period, seen, c1 - c0, (r1.ru_nvcsw - r0.ru_nvcsw) + (r1.ru_nivcsw - r0.ru_nivcsw));
	return 0;
}
