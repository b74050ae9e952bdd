/* The mechanics of a hard disk from its datasheet: see hddgeom.h. */
#include <math.h>

#include "errmsg.h"
#include "hddgeom.h"

/* Seek lengths the average is taken over: exact up to this many tracks, binned above. */
#define MEAN_BINS 1024
/* A device of fewer tracks keeps the curve of a drive of this many. */
#define MIN_STROKE_TRACKS 16

static unsigned zone_of_byte(const struct hdd_geom *g, uint64_t x)
{
	unsigned lo = 0, hi = g->nzones - 1, mid;

	while (lo < hi) {
		mid = (lo + hi + 1) / 2;
		if (g->zone[mid].start <= x)
			lo = mid;
		else
			hi = mid - 1;
	}
	return lo;
}

static unsigned zone_of_tp(const struct hdd_geom *g, double tp)
{
	unsigned lo = 0, hi = g->nzones - 1, mid;

	while (lo < hi) {
		mid = (lo + hi + 1) / 2;
		if (g->zone[mid].tp0 <= tp)
			lo = mid;
		else
			hi = mid - 1;
	}
	return lo;
}

double hdd_tp(const struct hdd_geom *g, uint64_t x)
{
	const struct hdd_zone *z = &g->zone[zone_of_byte(g, x)];

	return z->tp0 + (double)(x - z->start) / z->track_bytes;
}

uint64_t hdd_byte_at(const struct hdd_geom *g, double tp)
{
	const struct hdd_zone *z = &g->zone[zone_of_tp(g, tp)];
	double x = (double)z->start + (tp - z->tp0) * z->track_bytes;

	if (x <= 0)
		return 0;
	if (x >= (double)g->size)
		return g->size;
	return (uint64_t)x;
}

double hdd_rate_at(const struct hdd_geom *g, uint64_t x)
{
	return g->zone[zone_of_byte(g, x)].track_bytes * 1e9 / g->rev_ns;
}

static double seek_d(const struct hdd_geom *g, double d)
{
	if (d <= 0)
		return 0;
	if (d < g->dmin)
		d = g->dmin;
	if (d < g->d0)
		return g->a + g->b * sqrt(d);
	return g->c + g->e * d;
}

double hdd_seek_ns(const struct hdd_geom *g, double tracks)
{
	double stroke = g->tracks - 1 < MIN_STROKE_TRACKS ? MIN_STROKE_TRACKS : g->tracks - 1;

	return seek_d(g, tracks / stroke);
}

/* Every seek length n = 1..max weighted by (max + 1 - n), as datasheets define the average. */
double hdd_seek_mean_ns(const struct hdd_geom *g)
{
	double stroke = 1 / g->dmin, sum = 0, wsum = 0, w;
	unsigned k, bins = stroke < MEAN_BINS ? (unsigned)(stroke + 0.5) : MEAN_BINS;

	for (k = 1; k <= bins; k++) {
		w = bins + 1 - k;
		sum += w * seek_d(g, (double)k / bins);
		wsum += w;
	}
	return sum / wsum;
}

/* The curve through (dmin, @track) and (1, @full), square root below @d0, its tangent above. */
static void shape(struct hdd_geom *g, double d0, double track, double full)
{
	double sd0 = sqrt(d0), smin = sqrt(g->dmin);

	g->d0 = d0;
	g->b = (full - track) / (sd0 / 2 + 1 / (2 * sd0) - smin);
	g->a = track - g->b * smin;
	g->e = g->b / (2 * sd0);
	g->c = g->a + g->b * sd0 / 2;
}

static int fit_seek(struct hdd_geom *g, double track, double avg, double full, char *err,
		    size_t errlen)
{
	double lo = g->dmin, hi = 1, low, high, mid;
	int i;

	if (!(track < avg && avg < full)) {
		pack_errf(err, errlen,
			  "hdd: seek_track_ms=%g, seek_avg_ms=%g, seek_full_ms=%g: must increase "
			  "in that order",
			  track / 1e6, avg / 1e6, full / 1e6);
		return -1;
	}
	/* a straight line gives the lowest average through the two ends, a square root the highest */
	shape(g, lo, track, full);
	low = hdd_seek_mean_ns(g);
	shape(g, hi, track, full);
	high = hdd_seek_mean_ns(g);
	if (avg < low || avg > high) {
		pack_errf(
			err, errlen,
			"hdd: seek_avg_ms=%g: must be from %.3g to %.3g with seek_track_ms=%g and "
			"seek_full_ms=%g",
			avg / 1e6, low / 1e6, high / 1e6, track / 1e6, full / 1e6);
		return -1;
	}
	for (i = 0; i < 100; i++) {
		mid = (lo + hi) / 2;
		shape(g, mid, track, full);
		if (hdd_seek_mean_ns(g) < avg)
			lo = mid;
		else
			hi = mid;
	}
	shape(g, (lo + hi) / 2, track, full);
	return 0;
}

int hdd_geom_init(struct hdd_geom *g, double rpm, double outer_bps, double inner_bps,
		  unsigned zones, uint64_t size, double track_ns, double avg_ns, double full_ns,
		  char *err, size_t errlen)
{
	double rev_s = 60.0 / rpm, rate, sum = 0, per_zone, stroke;
	uint64_t start = 0;
	unsigned z;

	if (zones < 1 || zones > HDD_MAX_ZONES)
		zones = zones < 1 ? 1 : HDD_MAX_ZONES;
	g->rev_ns = rev_s * 1e9;
	g->size = size;
	g->nzones = zones;
	for (z = 0; z < zones; z++)
		sum += zones == 1 ? outer_bps
				  : outer_bps - (outer_bps - inner_bps) * z / (zones - 1);
	/* every zone has as many tracks: the size fixes how many */
	g->tracks = zones * (double)size / (rev_s * sum);
	per_zone = g->tracks / zones;
	for (z = 0; z < zones; z++) {
		rate = zones == 1 ? outer_bps
				  : outer_bps - (outer_bps - inner_bps) * z / (zones - 1);
		g->zone[z].start = start;
		/* from the whole byte the zone starts at: the position is continuous */
		g->zone[z].tp0 = z ? g->zone[z - 1].tp0 + (double)(start - g->zone[z - 1].start) /
								  g->zone[z - 1].track_bytes
				   : 0;
		g->zone[z].track_bytes = rate * rev_s;
		start += (uint64_t)(per_zone * g->zone[z].track_bytes);
	}
	stroke = g->tracks - 1 < MIN_STROKE_TRACKS ? MIN_STROKE_TRACKS : g->tracks - 1;
	g->dmin = 1 / stroke;
	return fit_seek(g, track_ns, avg_ns, full_ns, err, errlen);
}
