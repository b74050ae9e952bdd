/*
 * moddev: a block device with the service times of a model, built in user
 * space. The daemon serves a FUSE file system holding one file, "disk",
 * backed by a regular file; `losetup --direct-io=on` over that file makes
 * it a real block device (/dev/loopN) whose every request reaches this
 * daemon, which answers it when the model says the device would have.
 * `fio-pack device up|down|list|stats|models` (scripts/fiopack/device/)
 * drives it; docs/devices.md is its manual and design.
 *
 * The pipeline, per request:
 *   fio -> block layer -> loop (direct I/O, up to 128 requests at once)
 *   -> FUSE (async direct I/O, max_background 128) -> a worker thread of
 *   libfuse's multi-threaded loop, here: it does the backing pread/pwrite
 *   at once (the data is in the backing file before the request is
 *   acknowledged, so a SIGKILL of the daemon loses nothing it answered),
 *   then hands the request to the model (devsched.h, under one lock) and
 *   returns to read the next one. No thread sleeps per request: one
 *   completion thread sleeps until the model's next event
 *   (dev_sched_next), advances the model to the time it wakes, and replies
 *   to every request that has completed by then. A worker whose request
 *   arrives after others completed replies to those itself.
 *
 * The model (devmodel.h) is a discrete-event simulation the daemon
 * advances in real time: a request enters it at its arrival time, waits
 * inside it until the model decides to serve it (so a model sees its whole
 * queue, as an HDD with NCQ reorders it), and completes at a time the
 * model computes from its own state (channels, head position, caches).
 * Models compose: an array calls its members, a controller cache the
 * model behind it. The model's units are fio- and FUSE-independent and
 * unit-tested (tests/unit/test_moddev*.c) and the spec parser is fuzzed
 * (tests/fuzz/fuzz_modelspec.c).
 *
 * The kernel's part of a round trip (loop, FUSE, the context switches:
 * 25-50 us here) is not part of the model: arrivals may be back-dated by
 * --backdate-us so that a request's latency as fio sees it is the model's
 * at depth 1, never earlier than the model's clock. The daemon's own cost
 * (its CPU per request, how late the completion thread replied) is in its
 * statistics, the "stats" file beside "disk".
 *
 *   moddev --model SPEC --backing FILE [--backdate-us N] [--threads N]
 *          [--ready-fd FD] MOUNTPOINT
 *   moddev --check SPEC      (the spec's one-line error, or nothing)
 *   moddev --models          (the models and their parameters, as JSON)
 */

/* The daemon itself follows this design in the next commits. */
