/*
 * The mechanics of a hard disk as the hdd model (model_hdd.c) needs them,
 * from datasheet figures: where a byte is (its track and its angle on the
 * platter), how long a revolution, a seek and a transfer take.
 *
 * Zones: the platter is cut into @zones bands of as many tracks each, from
 * the outer edge (byte 0) to the inner one. Linear density is constant, so
 * a zone's media rate falls linearly with its radius, from the datasheet's
 * outer (maximum) sustained rate to its inner (minimum) one, and a track
 * holds rate x revolution bytes. The sustained rates already include the
 * head and cylinder switches, so reading on across a track boundary costs
 * nothing more.
 *
 * Position: a byte's track position tp(x) is a real number whose integer
 * part is its track and whose fraction is its angle (in revolutions). The
 * platter's angle at time t is t / revolution (mod 1): the angle is kept in
 * time, never drawn. Reading advances tp by exactly one per revolution, so
 * a transfer of [x, y) takes (tp(y) - tp(x)) revolutions and the head ends
 * exactly where the platter is.
 *
 * Seeks: seek(d) for a distance d in fractions of the full stroke is
 * a + b*sqrt(d) for short seeks (the arm accelerates and decelerates) and
 * c + e*d for long ones (it coasts), joined smoothly at d0 (same value and
 * slope). It goes through the datasheet's three figures: track-to-track at
 * one track, full stroke at d = 1, and the average seek, which datasheets
 * define as the weighted average over all seek lengths n with weight
 * (max + 1 - n) (every start track to every end track), matched exactly by
 * choosing d0.
 */
#ifndef MODDEV_HDDGEOM_H
#define MODDEV_HDDGEOM_H

#include <stddef.h>
#include <stdint.h>

#define HDD_MAX_ZONES 64

struct hdd_zone {
	uint64_t start;	    /* first byte */
	double tp0;	    /* its track position */
	double track_bytes; /* bytes a track of the zone holds */
};

struct hdd_geom {
	double rev_ns;
	uint64_t size; /* bytes the platters hold (the whole drive, or the device) */
	double tracks;
	unsigned nzones;
	struct hdd_zone zone[HDD_MAX_ZONES];
	/* the seek curve, in ns, of d in fractions of the stroke */
	double a, b, c, e, d0, dmin;
};

/*
 * The geometry of a drive of @size bytes, rates in bytes per second, seek
 * times in ns. 0, or -1 with a one-line reason in @err naming the key
 * ("hdd: seek_avg_ms=..."): the three seek figures must be in order and
 * the average between what a straight line and a square root through the
 * other two give.
 */
int hdd_geom_init(struct hdd_geom *g, double rpm, double outer_bps, double inner_bps,
		  unsigned zones, uint64_t size, double track_ns, double avg_ns, double full_ns,
		  char *err, size_t errlen);

/* Where byte @x is: track + angle in revolutions. */
double hdd_tp(const struct hdd_geom *g, uint64_t x);
/* The byte at track position @tp (the inverse of hdd_tp, rounded down). */
uint64_t hdd_byte_at(const struct hdd_geom *g, double tp);
/* A seek over @tracks tracks, in ns (0 for none). */
double hdd_seek_ns(const struct hdd_geom *g, double tracks);
/* The datasheet's average: the weighted mean of seek over every length. */
double hdd_seek_mean_ns(const struct hdd_geom *g);
/* The zone rate at byte @x, in bytes per second. */
double hdd_rate_at(const struct hdd_geom *g, uint64_t x);

#endif
