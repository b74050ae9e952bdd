/*
 * The named models: the devices of the seeds' articles, each a spec of one
 * of the kinds with parameters from public specifications (datasheets,
 * product manuals), never from the articles' results. docs/devices.md has
 * the table: every parameter, its value, its source, and what was assumed
 * (and why) where no datasheet could be found. Derived parameters (an
 * SSD's flash times from its datasheet's rates) are worked out there.
 */
#include "devmodel.h"

/* ---- SSDs ---------------------------------------------------------------- */

/*
 * SLC NAND of the Mtron's generation: 2 KiB pages, 128 KiB blocks, 40 MB/s
 * bus. The interface carries the datasheet's sustained read rate (SATA
 * 1.5 Gb/s is what limits it).
 */
#define MTRON_FLASH                                                                            \
	"read_us=25,program_us=200,erase_us=1500,page_kb=2,write_unit_kb=128,channel_mbps=40," \
	"buffer_kb=4096"
#define NAND_SOURCE                                                                           \
	"Samsung K9F1G08U0A NAND flash datasheet (SLC: 2 KiB page, 128 KiB block, tR 25 us, " \
	"tPROG 200 us, tBERS 1.5 ms, 25 ns read cycle)"
#define MTRON_ASSUMED                                                                       \
	"assumed from the class (docs/devices.md): a block-mapped FTL (write unit = erase " \
	"block), a 4 MiB write buffer; units derived from the sequential write rate"

DEV_MODEL_NAMED(
	mtron_7035, "mtron-7035", "Mtron MSP-SATA7035: 3.5-inch SLC SSD, SATA 1.5 Gb/s",
	"ssd:channels=12,interface_mbps=120," MTRON_FLASH,
	"Mtron MSP-SATA7035 specification: 120 MB/s read, 90 MB/s write, 0.1 ms access (not "
	"found in a datasheet reachable here; Mtron's published figures)",
	NAND_SOURCE, MTRON_ASSUMED);

DEV_MODEL_NAMED(
	mtron_7025, "mtron-7025", "Mtron MSP-SATA7025: the 2.5-inch MSP-SATA7035",
	"ssd:channels=12,interface_mbps=120," MTRON_FLASH,
	"Mtron MSP-SATA7025 specification: as the MSP-SATA7035 (same series and figures; not "
	"found in a datasheet reachable here)",
	NAND_SOURCE, MTRON_ASSUMED);

DEV_MODEL_NAMED(mtron_mobi3000, "mtron-mobi3000",
		"Mtron Mobi 3000: 2.5-inch SLC SSD, SATA 1.5 Gb/s",
		"ssd:channels=11,interface_mbps=100," MTRON_FLASH,
		"Mtron Mobi 3000 specification: 100 MB/s read, 80 MB/s write, 0.1 ms access (not "
		"found in a datasheet reachable here; Mtron's published figures)",
		NAND_SOURCE, MTRON_ASSUMED);

DEV_MODEL_NAMED(
	intel320, "intel320", "Intel SSD 320 Series, 160 GB: MLC SSD, SATA 3 Gb/s",
	"ssd:channels=10,read_us=24.7,program_us=447,page_kb=8,channel_mbps=166,"
	"interface_mbps=300,command_us=12,buffer_kb=1024,write_us=64",
	"Intel SSD 320 Series Product Specification 325152-001US (March 2011): SATA 3 Gb/s, "
	"read/write latency 75/90 us, 4 KiB random reads up to 39,000 IOPS (160 GB), "
	"sequential write 165 MB/s (160 GB)",
	"guru3d.com/review/intel-320-ssd-review/page-2: a 10-channel controller",
	"assumed from the class (docs/devices.md): 8 KiB pages and a 166 MT/s channel bus of "
	"25 nm NAND, a 1 MiB write buffer; flash times derived from the datasheet's figures");

DEV_MODEL_NAMED(
	intel320_raid0x2, "intel320-raid0x2", "2 Intel SSD 320 (160 GB) in RAID-0",
	"raid0:members=2,stripe_kb=64,member=(intel320)",
	"the members: intel320; the stripe unit assumed (64 KiB, Linux md's long-time default)");

/* ---- hard disks --------------------------------------------------------- */

#define RAPTOR                                                                             \
	"hdd:rpm=10000,seek_track_ms=0.6,seek_avg_ms=4.5,seek_avg_write_ms=5.9,"           \
	"seek_full_ms=10.5,outer_mbps=90,inner_mbps=54,interface_mbps=150,queue_depth=32," \
	"cache_segments=8,segment_kb=1024,overhead_us=200"
#define RAPTOR_SOURCES                                                                            \
	"WD Raptor WD740GD specifications, the ADFD's predecessor (techreport.com/review/6390): " \
	"10,000 rpm, 4.5/5.9 ms average read/write seek, 72 MB/s average sustained, 150 MB/s "    \
	"interface (the WD740ADFD datasheet was not found)",                                      \
		"tomshw.it, La Storia del Raptor: the WD740ADFD has 16 MB of cache and NCQ",      \
		"assumed from the class (docs/devices.md): track-to-track 0.6 ms, full stroke "   \
		"10.5 ms (IBM Ultrastar 146Z10, 10,000 rpm), outer/inner 90/54 MB/s around the "  \
		"average, 8 read-ahead segments of 1 MiB, a command overhead of 0.2 ms"

DEV_MODEL_NAMED(wd740adfd, "wd740adfd",
		"WD Raptor WD740ADFD: 74 GB, 10,000 rpm SATA, write cache off", RAPTOR,
		RAPTOR_SOURCES);

DEV_MODEL_NAMED(
	wd740adfd_wce, "wd740adfd-wce", "WD Raptor WD740ADFD with its write cache on (8 MiB)",
	RAPTOR ",write_cache_mb=8", RAPTOR_SOURCES,
	"assumed: half of the 16 MB buffer caches writes (desktop SATA drives ship with it on)");

DEV_MODEL_NAMED(raptor_raid5x8, "raptor-raid5x8", "8 WD Raptor WD740ADFD in RAID-5",
		"raid5:members=8,stripe_kb=64,member=(wd740adfd)",
		"the members: wd740adfd; the stripe unit assumed (64 KiB)");

DEV_MODEL_NAMED(
	mba3147rc, "mba3147rc", "Fujitsu MBA3147RC: 147 GB, 15,000 rpm SAS",
	"hdd:rpm=15000,seek_track_ms=0.2,seek_avg_ms=3.1,seek_avg_write_ms=3.6,seek_full_ms=7,"
	"outer_mbps=171,inner_mbps=112,interface_mbps=300,queue_depth=64,cache_segments=8,"
	"segment_kb=1024,overhead_us=200",
	"Fujitsu MBA3300RC/MBA3147RC/MBA3073RC product manual C141-E252-01EN (June 2007): "
	"15,000 rpm, 16 MB buffer, SAS (its specification table was not readable here)",
	"Seagate Cheetah 15K.6 SAS product manual (the same class, 2008): sustained 112-171 "
	"MB/s, 300 MB/s SAS",
	"Hitachi Ultrastar 15K450 specification (the same class, 300 GB): 3.1/3.6 ms average "
	"read/write seek",
	"assumed from the class (docs/devices.md): track-to-track 0.2 ms, full stroke 7 ms, "
	"TCQ depth 64, 8 read-ahead segments of 1 MiB, a command overhead of 0.2 ms");

DEV_MODEL_NAMED(sas_raid10x8, "sas-raid10x8", "8 Fujitsu MBA3147RC 15k SAS disks in RAID-10",
		"raid10:members=8,stripe_kb=64,member=(mba3147rc)",
		"the members: mba3147rc; the stripe unit assumed (64 KiB)");

/* ---- behind the Areca controllers' caches ----------------------------- */

DEV_MODEL_NAMED(
	mtron_raid5x4_arc1220, "mtron-raid5x4-arc1220",
	"4 Mtron MSP-SATA7035 in RAID-5 behind an Areca ARC-1220's 256 MB cache",
	"wbcache:size_mb=256,member=(raid5:members=4,stripe_kb=64,member=(mtron-7035))",
	"Areca ARC-1220 (tweakers.net product review; xbitlabs.com ARC-1220 review): Intel "
	"IOP333, 256 MB of DDR333 cache on board (xbitlabs' sample: 128 MB)",
	"the members: mtron-7035; the stripe unit assumed (64 KiB, the controller's default)");

DEV_MODEL_NAMED(raptor_arc1280ml, "raptor-arc1280ml",
		"WD Raptor WD740ADFD behind an Areca ARC-1280ML's "
		"256 MB cache",
		"wbcache:size_mb=256,member=(wd740adfd)",
		"Areca ARC-1280ML user manual, ARC-12xx comparison: Intel IOP341, one DDR2 DIMM, "
		"256 MB by default (up to 2 GB)",
		"the member: wd740adfd");

DEV_MODEL_NAMED(mobi3000_arc1280ml, "mobi3000-arc1280ml",
		"Mtron Mobi 3000 behind an Areca ARC-1280ML's 256 MB cache",
		"wbcache:size_mb=256,member=(mtron-mobi3000)",
		"Areca ARC-1280ML user manual, ARC-12xx comparison: Intel IOP341, one DDR2 DIMM, "
		"256 MB by default (up to 2 GB)",
		"the member: mtron-mobi3000");
