# The tools (included by the Makefile): pmrc2fio, pm-sim, dbtrace-check, the
# modeled-device daemon, and the benchmarks' C helpers. iocap is in iocap.mk.

# The modeled-device daemon's model units (tools/moddev, see moddev below)
# and the engines/lib units it links.
MODDEV_UNITS := devmodel devspec devsched reqheap model_fixed
# the drive models beyond the fixed one (HDD, SSD, RAID, write-back cache)
# and the named drives, each with its helpers
MODDEV_UNITS += hddgeom model_hdd freelist model_ssd members model_raid model_wbcache \
	models_named
MODDEV_LIB := errmsg jsonl lathist

# The modeled-device daemon (tools/moddev; scripts/fio-pack device): a FUSE
# file over which a loop device is a block device with a model's service
# times (docs/devices.md). Its model units (MODDEV_UNITS) are fio- and
# FUSE-independent, built once per flavour like engines/lib's and linked
# into the unit tests and the fuzzers; only moddev.c sees libfuse3. Without
# libfuse3-dev there is no moddev, and fio-pack device says what to install.
$(OBJ)/moddev/%.o: tools/moddev/%.c | $(DEPS_STAMP)
	@mkdir -p $(@D)
	$(CC) $(BASE_CFLAGS) $(DEPFLAGS) -Iengines/lib -Itools/moddev -c -o $@ $<
$(OBJ_ASAN)/moddev/%.o: tools/moddev/%.c | $(DEPS_STAMP)
	@mkdir -p $(@D)
	$(CC) $(BASE_CFLAGS) $(SAN_FLAGS) -O1 $(DEPFLAGS) -Iengines/lib -Itools/moddev -c -o $@ $<
$(OBJ)/moddev-fuse/moddev.o: tools/moddev/moddev.c | $(DEPS_STAMP)
	@mkdir -p $(@D)
	$(CC) $(BASE_CFLAGS) $(DEPFLAGS) $$(pkg-config --cflags fuse3) -Iengines/lib -Itools/moddev \
		-c -o $@ $<
$(OBJ_ASAN)/moddev-fuse/moddev.o: tools/moddev/moddev.c | $(DEPS_STAMP)
	@mkdir -p $(@D)
	$(CC) $(BASE_CFLAGS) $(SAN_FLAGS) -O1 $(DEPFLAGS) $$(pkg-config --cflags fuse3) \
		-Iengines/lib -Itools/moddev -c -o $@ $<
$(BUILD)/moddev: $(OBJ)/moddev-fuse/moddev.o $(MODDEV_UNITS:%=$(OBJ)/moddev/%.o) \
		$(MODDEV_LIB:%=$(OBJ)/lib/%.o)
	$(CC) -o $@.tmp $^ $$(pkg-config --libs fuse3) -lm -pthread && mv -f $@.tmp $@
# (the ASan+UBSan daemon: the device tests run it under make check's sanitizer pass)
$(BUILD)/moddev-asan: $(OBJ_ASAN)/moddev-fuse/moddev.o $(MODDEV_UNITS:%=$(OBJ_ASAN)/moddev/%.o) \
		$(MODDEV_LIB:%=$(OBJ_ASAN)/lib/%.o)
	$(CC) $(SAN_FLAGS) -o $@.tmp $^ $$(pkg-config --libs fuse3) -lm -pthread && mv -f $@.tmp $@
moddev moddev-asan: | $(DEPS_STAMP)
	@if pkg-config --exists fuse3; then $(MAKE) --no-print-directory $(BUILD)/$@; \
	else echo "$@: not built: libfuse3-dev is not installed (fio-pack device needs it)" >&2; fi
.PHONY: moddev moddev-asan

# The PostMark model's command-line front end (no filesystem access); the
# tests compare its counters with the real postmark's.
pm-sim: $(BUILD)/pm-sim
$(BUILD)/pm-sim: $(OBJ)/tools/pm-sim.o $(OBJ)/lib/postmark.o $(OBJ)/lib/pmconfig.o $(OBJ)/lib/errmsg.o
	$(CC) -o $@ $^ $(LINK_LIBS)
$(OBJ)/tools/%.o: tools/%.c | $(DEPS_STAMP)
	@mkdir -p $(@D)
	$(CC) $(BASE_CFLAGS) $(DEPFLAGS) -Iengines/lib -c -o $@ $<

# The C parser's view of a trace (tests/capture/test_dbtrace_tools.py, test_dbcapture*.py).
$(BUILD)/dbtrace-check: $(OBJ)/tools/dbtrace-check.o $(OBJ)/lib/dbtrace.o $(OBJ)/lib/dbtrace_fast.o \
		$(OBJ)/lib/dbtrace_read.o $(OBJ)/lib/errmsg.o
	$(CC) -o $@ $^ $(LINK_LIBS)

# The benchmarks' minimal C loop (scripts/fio-pack bench smallfile): the engine's
# system calls for a file operation, with the engine's own lib objects.
$(BUILD)/bench/minloop: $(OBJ)/bench/minloop.o \
		$(addprefix $(OBJ)/lib/,tree.o sizedist.o content.o units.o errmsg.o)
	@mkdir -p $(@D)
	$(CC) -o $@ $^ $(LINK_LIBS)
# The trace parser's own speed (scripts/fio-pack bench dbreplay).
$(BUILD)/bench/dbtrace-bench: $(OBJ)/bench/dbtrace-bench.o $(OBJ)/lib/dbtrace.o $(OBJ)/lib/dbtrace_fast.o \
		$(OBJ)/lib/dbtrace_read.o $(OBJ)/lib/dbtrace_write.o $(OBJ)/lib/errmsg.o
	@mkdir -p $(@D)
	$(CC) -o $@ $^ $(LINK_LIBS)
# One thread woken by a timer, nothing else: the machine's floor for the
# modeled device's CPU per request at low rates (scripts/fio-pack bench device).
$(BUILD)/bench/wakeup: $(OBJ)/bench/wakeup.o
	@mkdir -p $(@D)
	$(CC) -o $@ $^
$(OBJ)/bench/%.o: bench/%.c | $(DEPS_STAMP)
	@mkdir -p $(@D)
	$(CC) $(BASE_CFLAGS) $(DEPFLAGS) -Iengines/lib -c -o $@ $<

# PostMark configuration (.pmrc) to fio job file converter.
.PHONY: tools
tools: $(BUILD)/pm-sim $(BUILD)/pmrc2fio $(BUILD)/dbtrace-check
$(BUILD)/pmrc2fio: $(OBJ)/tools/pmrc2fio.o $(OBJ)/lib/postmark.o $(OBJ)/lib/pmconfig.o $(OBJ)/lib/errmsg.o \
		$(OBJ)/lib/outfile.o $(OBJ)/lib/target.o
	$(CC) -o $@ $^ $(LINK_LIBS)

# Benchmarks (not tests): engine vs a minimal C loop and fio's own file engines.
# Needs root (mounts tmpfs). See docs/benchmarks.md.
bench: engines
	$(PYTHON) scripts/fio-pack bench smallfile $(BENCH_ARGS)
