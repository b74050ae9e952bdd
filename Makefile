# fio workload pack: external fio engines for small-file and database workloads.
#
#   make            install missing packages, fetch and build the matching fio
#                   under build/, build the engines into build/
#   make demo       build, then run jobs/smallfile-mail.fio on a temporary
#                   directory and print a short summary
#   make check      build, then run the C unit tests, the fio tests, and the
#                   same fio tests with the engines built under ASan+UBSan
#   make install    install engines, job files and fio-pack (PREFIX, DESTDIR)

PREFIX  ?= /usr/local
LIBDIR  ?= $(PREFIX)/lib/fio-pack
DATADIR ?= $(PREFIX)/share/fio-pack
BINDIR  ?= $(PREFIX)/bin
BUILD   := build
CC      ?= gcc
PYTHON  ?= /usr/bin/python3

DEPS_STAMP := $(BUILD)/.deps

ENGINES := smallfile postmark dbreplay
# What each engine links: its own logic in engines/lib, the common units and
# the fio glue; nothing else (smallfile carries no trace parser, and only
# dbreplay needs zlib). A new lib unit goes in the list of the engine that
# uses it, or in COMMON_LIB if all do.
COMMON_LIB    := errmsg units lathist jsonl target
smallfile_LIB := tree treemeta treespace sizedist content opmix
postmark_LIB  := postmark stdiosim pmroom pmmarker sizedist content
dbreplay_LIB  := dbtrace dbtrace_fast dbtrace_write dbrecs dbsched dbdepth dbprefetch dbfilter odirect
GLUE          := fioglue ioq
# An engine's own files (engines/NAME.c, or engines/NAME/ when it is large).
smallfile_SRCS := smallfile/engine smallfile/fileops smallfile/uring smallfile/target smallfile/opstats
postmark_SRCS  := postmark/engine postmark/fileops postmark/uring postmark/locations
dbreplay_SRCS  := dbreplay/engine dbreplay/replay dbreplay/uring dbreplay/target dbreplay/report
LIB_SRCS := $(wildcard engines/lib/*.c)
LIB_UNITS := $(LIB_SRCS:engines/lib/%.c=%)
# The modeled-device daemon's model units (tools/moddev, see moddev below)
# and the engines/lib units it links.
MODDEV_UNITS := devmodel devspec devsched reqheap model_fixed
# the models of issue 24's phase 2, each with its helpers
MODDEV_UNITS += hddgeom model_hdd freelist model_ssd members model_raid model_wbcache \
	models_named
MODDEV_LIB := errmsg jsonl lathist
# fio-dependent code shared by the engines (built with fio's headers); the
# dispatcher is built without them
GLUE_SRCS := $(GLUE:%=engines/glue/%.c)

WARN    := -Wall -Wextra -Werror -Wno-unused-parameter -Wno-sign-compare \
           -Wno-missing-field-initializers -Wno-pointer-arith
BASE_CFLAGS := -std=gnu11 -O2 -g -fPIC -D_GNU_SOURCE -D_LARGEFILE_SOURCE \
           -D_FILE_OFFSET_BITS=64 $(WARN)
SAN_FLAGS := -fsanitize=address,undefined -fno-sanitize-recover=undefined \
           -fno-omit-frame-pointer
# Every object has a dependency file: a header change rebuilds what includes it.
DEPFLAGS = -MMD -MP -MF $(@:.o=.d)
LINK_LIBS := -Wl,--as-needed -luring -lm -lz -pthread

.PHONY: all deps fio engines asan unit check check-engines test demo install clean distclean print-fio-dir print-fio-source fuzz bench pm-sim quick pg18

all: engines $(BUILD)/pmrc2fio iocap $(BUILD)/iocap-convert moddev

help:
	@echo 'make                 fio (FIO_SRC=DIR: that fio source), the engines, pmrc2fio, iocap'
	@echo 'make engines         the engines, in build/fio-VERSION/ (FIO_SRC=DIR for another fio)'
	@echo 'make asan            the engines (build/fio-VERSION/asan/) and moddev with ASan and UBSan'
	@echo 'make iocap           the BPF capture tool (needs the kernel'"'"'s BTF)'
	@echo 'make moddev          the modeled-device daemon of fio-pack device (needs libfuse3-dev)'
	@echo 'make unit            the C unit tests, plain and ASan (build/unit-tests NAME: some)'
	@echo 'make fuzz            the libFuzzer targets, FUZZ_SECONDS each (default 20)'
	@echo 'make lint            pyflakes on every Python file'
	@echo 'make check           all of the above, then pytest with both engine builds'
	@echo 'make quick           the unit tests and each engine through fio, in under a minute'
	@echo 'make check-engines   the engine tests alone (FIO_SRC=DIR: against that fio)'
	@echo 'make check-second-fio  build for fio 3.41 from upstream, run the engine tests on it'
	@echo 'make pg18            PostgreSQL 18 from its upstream tarball, in build/ (the capture tests)'
	@echo 'make demo            run jobs/smallfile-mail.fio on a temporary directory'
	@echo 'make bench           the small-file benchmark (scripts/fio-pack bench --help: the others)'
	@echo 'make install         the engines, pmrc2fio, the job files and fio-pack (LIBDIR, DATADIR, BINDIR)'
	@echo 'make compile_commands.json  the compile commands, for clangd and clang-tidy (bear)'
	@echo 'make clean           remove the engines, objects and unit tests (distclean: all of build/)'
.PHONY: help

# --- The fio the engines are for ----------------------------------------
# FIO=path (default: fio on PATH, else Debian's fio, installed) is the fio
# the user runs; FIO_SRC=DIR a source tree of the same version (default: the
# Debian package's, from apt-get source). scripts/fio-source.sh finds both,
# checks that the versions agree, and stops with one line if anything is
# wrong, before anything is built. Goals that need no fio skip it.
NOFIO_GOALS := help lint clean distclean unit fuzz pm-sim tools check-second-fio iocap pg18 moddev \
	moddev-asan $(BUILD)/moddev $(BUILD)/moddev-asan \
	$(BUILD)/dbtrace-check $(BUILD)/iocap-convert $(BUILD)/iocap-convert-asan $(BUILD)/bench/minloop \
	$(BUILD)/bench/dbtrace-bench $(BUILD)/unit-tests $(BUILD)/unit-tests-asan $(BUILD)/pmrc2fio $(BUILD)/pm-sim
ifneq ($(filter-out $(NOFIO_GOALS),$(or $(MAKECMDGOALS),all)),)
# (make before 4.4 gives $(shell) no command-line variables: passed here)
FIO_FOUND := $(shell FIO='$(FIO)' FIO_SRC='$(FIO_SRC)' sh scripts/fio-source.sh $(BUILD))
ifneq ($(.SHELLSTATUS),0)
$(error fio not found or not usable: see the fio-source line above)
endif
FIO_VERSION := $(word 1,$(FIO_FOUND))
FIOSRC := $(word 2,$(FIO_FOUND))
endif

# Everything built for one fio version lives in its own directory, so builds
# for several versions coexist: build/fio-3.33/{fio,smallfile.so,...}.
VDIR := $(BUILD)/$(FIO_VERSION)
FIO_BIN := $(VDIR)/fio
FEATURES := $(VDIR)/pack-fio-features.h

deps: $(DEPS_STAMP)
$(DEPS_STAMP): scripts/install-deps.sh
	@mkdir -p $(BUILD)
	sh scripts/install-deps.sh
	@touch $@
TEST_DEPS_STAMP := $(BUILD)/.test-deps
$(TEST_DEPS_STAMP): scripts/install-deps.sh
	@mkdir -p $(BUILD)
	sh scripts/install-deps.sh --test
	@touch $@

# fio itself, built from that source, for the tests (layouts match by
# construction) and for checking each engine loads; build/fio is the last
# one built.
# (.pack-stamp: a FIO_SRC copy was refreshed)
$(FIO_BIN): $(wildcard $(FIOSRC)/.pack-stamp) | $(DEPS_STAMP)
	@mkdir -p $(VDIR)
	cd $(FIOSRC) && { [ -f config-host.h ] || ./configure --disable-native >/dev/null; } \
		&& $(MAKE) -s -j2 fio >/dev/null
	@v=$$($(FIOSRC)/fio --version); [ "$$v" = "$(FIO_VERSION)" ] || \
		{ echo "fio built from $(FIOSRC) says $$v, not $(FIO_VERSION)" >&2; exit 1; }
	cp $(FIOSRC)/fio $@.tmp && mv -f $@.tmp $@  # a running fio keeps the old file
	echo $(abspath $(FIOSRC)) > $(VDIR)/fio-source  # FIO=$@ builds against it again
	ln -sfn $(FIO_VERSION)/fio $(BUILD)/fio

fio: $(FIO_BIN)

# What this fio has that not all do (engines/glue/fioglue.h uses it).
$(FEATURES): scripts/fio-features.sh $(FIO_BIN)
	sh scripts/fio-features.sh $(FIOSRC) $(CC) > $@.tmp && mv -f $@.tmp $@

ENGINE_CFLAGS = $(BASE_CFLAGS) -include $(FIOSRC)/config-host.h -I$(FIOSRC) \
	-DFIO_INC_DEBUG -DPACK_FIO_VERSION='"$(FIO_VERSION)"' \
	-Iengines/lib -Iengines/glue -I$(VDIR) -Wno-shadow

# Only get_ioengine is exported: fio is linked -rdynamic, so an exported
# helper of ours with the name of one of fio's functions would be bound to
# fio's, and two engines' copies of engines/lib would bind to each other.
# Unused lib code is dropped.
ENGINE_LINK_CFLAGS = -fvisibility=hidden -ffunction-sections -fdata-sections

# build/fio follows the fio of the last make: demo and the scripts run it
engines: $(ENGINES:%=$(VDIR)/%.so) $(ENGINES:%=$(BUILD)/%.so)
	@ln -sfn $(FIO_VERSION)/fio $(BUILD)/fio

# Objects, compiled once per flavour: the fio-independent units under
# build/obj/ (plain) and build/obj-asan/ (ASan+UBSan), shared by the engines,
# the unit tests and the tools; the engines' own files and the glue, which
# see fio's headers, under build/fio-VERSION/obj/ and .../asan/obj/.
OBJ      := $(BUILD)/obj
OBJ_ASAN := $(BUILD)/obj-asan
$(OBJ)/lib/%.o: engines/lib/%.c | $(DEPS_STAMP)
	@mkdir -p $(@D)
	$(CC) $(BASE_CFLAGS) $(ENGINE_LINK_CFLAGS) $(DEPFLAGS) -Iengines/lib -c -o $@ $<
$(OBJ_ASAN)/lib/%.o: engines/lib/%.c | $(DEPS_STAMP)
	@mkdir -p $(@D)
	$(CC) $(BASE_CFLAGS) $(ENGINE_LINK_CFLAGS) $(SAN_FLAGS) -O1 $(DEPFLAGS) -Iengines/lib -c -o $@ $<
$(VDIR)/obj/%.o: engines/%.c $(FEATURES)
	@mkdir -p $(@D)
	$(CC) $(ENGINE_CFLAGS) $(ENGINE_LINK_CFLAGS) $(DEPFLAGS) -c -o $@ $<
$(VDIR)/asan/obj/%.o: engines/%.c $(FEATURES)
	@mkdir -p $(@D)
	$(CC) $(ENGINE_CFLAGS) $(ENGINE_LINK_CFLAGS) $(SAN_FLAGS) -O1 $(DEPFLAGS) -c -o $@ $<

# The objects of engine $(1) in flavour directory $(2) (fio's) and $(3) (lib's).
engine_objs = $($(1)_SRCS:%=$(2)/%.o) $(GLUE:%=$(2)/glue/%.o) \
	$(addprefix $(3)/lib/,$(addsuffix .o,$(sort $($(1)_LIB) $(COMMON_LIB))))

# Each engine, plain and sanitized (explicit rules, one pair per engine).
define engine_rules
$(VDIR)/$(1).so: $(call engine_objs,$(1),$(VDIR)/obj,$(OBJ)) $(FIO_BIN)
	$$(CC) $$(ENGINE_LINK_CFLAGS) -o $$@.tmp $$(filter %.o,$$^) \
		-shared -Wl,-z,now -Wl,--gc-sections $$(LINK_LIBS)
	LD_BIND_NOW=1 $$(FIO_BIN) --enghelp=$$(abspath $$@.tmp) >/dev/null
	mv -f $$@.tmp $$@  # rename: a running fio keeps its mapping of the old file
$(VDIR)/asan/$(1).so: $(call engine_objs,$(1),$(VDIR)/asan/obj,$(OBJ_ASAN)) $(FIO_BIN)
	$$(CC) $$(ENGINE_LINK_CFLAGS) $$(SAN_FLAGS) -o $$@.tmp $$(filter %.o,$$^) \
		-shared -Wl,-z,now -Wl,--gc-sections $$(LINK_LIBS)
	mv -f $$@.tmp $$@
endef
$(foreach e,$(ENGINES),$(eval $(call engine_rules,$(e))))

# The engines the job files name: each loads the build for the fio running
# it (engines/glue/dispatch.c), whatever the version.
$(BUILD)/%.so: engines/glue/dispatch.c Makefile
	@mkdir -p $(BUILD)
	$(CC) $(BASE_CFLAGS) -DPACK_ENGINE_NAME='"$*"' -fvisibility=hidden -o $@.tmp $< \
		-shared -Wl,-z,now -ldl
	mv -f $@.tmp $@

# Sanitizer build of the same engines, loaded into fio with libasan preloaded.
asan: $(ENGINES:%=$(VDIR)/asan/%.so) moddev-asan $(BUILD)/iocap-convert-asan
# C unit tests of the fio-independent logic, normal and sanitized.
UNIT_SRCS := $(wildcard tests/unit/*.c)
UNIT_OBJS := $(UNIT_SRCS:tests/unit/%.c=$(OBJ)/unit/%.o) $(LIB_UNITS:%=$(OBJ)/lib/%.o) \
	$(MODDEV_UNITS:%=$(OBJ)/moddev/%.o)
UNIT_OBJS_ASAN := $(UNIT_SRCS:tests/unit/%.c=$(OBJ_ASAN)/unit/%.o) $(LIB_UNITS:%=$(OBJ_ASAN)/lib/%.o) \
	$(MODDEV_UNITS:%=$(OBJ_ASAN)/moddev/%.o)
$(OBJ)/unit/%.o: tests/unit/%.c | $(TEST_DEPS_STAMP)
	@mkdir -p $(@D)
	$(CC) $(BASE_CFLAGS) $(DEPFLAGS) -Iengines/lib -Itools/moddev -c -o $@ $<
$(OBJ_ASAN)/unit/%.o: tests/unit/%.c | $(TEST_DEPS_STAMP)
	@mkdir -p $(@D)
	$(CC) $(BASE_CFLAGS) $(SAN_FLAGS) -O1 $(DEPFLAGS) -Iengines/lib -Itools/moddev -c -o $@ $<
$(BUILD)/unit-tests: $(UNIT_OBJS)
	$(CC) -o $@ $^ $(LINK_LIBS)
$(BUILD)/unit-tests-asan: $(UNIT_OBJS_ASAN)
	$(CC) $(SAN_FLAGS) -o $@ $^ $(LINK_LIBS)

unit: $(BUILD)/unit-tests $(BUILD)/unit-tests-asan
	$(BUILD)/unit-tests
	$(BUILD)/unit-tests-asan

# The tests run the fio built from the source the engines were built with.
TEST_ENV = FIO=$(abspath $(FIO_BIN)) PACK_ENGINE_DIR=$(abspath $(VDIR))
ASAN_ENV = LD_PRELOAD=$$($(CC) -print-file-name=libasan.so) \
	ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
	FIO=$(abspath $(FIO_BIN)) PACK_ENGINE_DIR=$(abspath $(VDIR)/asan)

# pyflakes on every Python file: unused imports, names never defined,
# f-strings without fields fail the check.
PY_FILES = scripts/fio-pack $(shell find scripts tests jobs -name '*.py')
# C style: the lines changed since .clang-format last changed must follow
# it (git clang-format's diff is empty); the code before keeps its layout.
# Outside a git checkout there is no such diff: the check says so and passes.
CLANG_FORMAT_SINCE = $(shell git log -1 --format=%H -- .clang-format 2>/dev/null)
lint: $(TEST_DEPS_STAMP)
	$(PYTHON) -m pyflakes $(PY_FILES)
	@if [ -z "$(CLANG_FORMAT_SINCE)" ]; then \
		echo "lint: not a git checkout: the C style is not checked" >&2; exit 0; fi; \
	out=$$(git clang-format --diff --extensions c,h $(CLANG_FORMAT_SINCE) -- engines tools tests) \
		|| { echo "$$out" >&2; exit 1; }; \
	case "$$out" in \
	"clang-format did not modify any files"|"no modified files to format"|"") ;; \
	*) echo "$$out"; echo "lint: C lines changed since $(CLANG_FORMAT_SINCE) do not follow" \
		".clang-format; git clang-format $(CLANG_FORMAT_SINCE) formats them" >&2; exit 1;; \
	esac
.PHONY: lint

check: $(TEST_DEPS_STAMP) lint engines asan unit fuzz pm-sim $(BUILD)/pmrc2fio $(BUILD)/dbtrace-check $(BUILD)/faultinject.so $(BUILD)/alloccount.so iocap $(BUILD)/iocap-convert moddev pg18
	$(TEST_ENV) $(PYTHON) -m pytest -q tests
	$(ASAN_ENV) $(PYTHON) -m pytest -q tests -m 'not nosan'
test: check

# The engine tests alone, for one more fio version (.ci/run's second fio):
# make check-engines FIO_SRC=DIR
ENGINE_TESTS := tests/engines/test_build.py tests/engines/test_smallfile.py tests/engines/test_smallfile_safety.py tests/engines/test_postmark.py \
	tests/engines/test_postmark_uring.py tests/engines/test_dbreplay.py tests/engines/test_jobs.py
check-engines: $(TEST_DEPS_STAMP) engines pm-sim $(BUILD)/pmrc2fio
	$(TEST_ENV) $(PYTHON) -m pytest -q $(ENGINE_TESTS)

# The second fio `./pack check` tests: a release built from its upstream
# tarball, as the Debian archive carries it (scripts/fio-upstream-source.sh).
SECOND_FIO ?= 3.41
check-second-fio:
	src=$$(sh scripts/fio-upstream-source.sh $(SECOND_FIO) $(BUILD)) && \
		$(MAKE) --no-print-directory check-engines FIO_SRC=$$src FIO=
.PHONY: check-second-fio

# PostgreSQL 18, the server the capture tests hold against its own pg_stat_io
# in each I/O method (tests/capture/test_dbcapture_pg18.py): its upstream
# tarball from the Debian archive (scripts/upstream-source.sh), built once per
# checkout into build/postgresql-VERSION/ with io_uring (Debian 12's liburing
# 2.3 is enough); distclean removes it. No rpath: the tests run it as user
# postgres from a copy that user can reach, with LD_LIBRARY_PATH. The tarball
# carries no generated parsers, hence bison and flex (install-deps.sh --test);
# its generated headers are made first, as its own top level would (it makes
# them only when it is make's first level).
PG18_VERSION ?= 18.6
PG18 := $(BUILD)/postgresql-$(PG18_VERSION)
pg18: $(PG18)/.pack-built
$(PG18)/.pack-built: | $(TEST_DEPS_STAMP)
	rm -f $@
	src=$$(sh scripts/upstream-source.sh --expect src/include/pg_config.h.in \
		postgresql-18 $(PG18_VERSION) $(BUILD)) && cd $$src && \
	{ [ -f config.status ] || ./configure -q --prefix=$(abspath $(PG18)) --with-liburing \
		--without-icu --disable-rpath >/dev/null; } && \
	$(MAKE) -s -C src/backend generated-headers >/dev/null && \
	$(MAKE) -s -j2 >/dev/null && $(MAKE) -s install >/dev/null
	@LD_LIBRARY_PATH=$(PG18)/lib $(PG18)/bin/postgres --version | grep -q ' $(PG18_VERSION)$$' || \
		{ echo "pg18: $(PG18)/bin/postgres is not PostgreSQL $(PG18_VERSION)" >&2; exit 1; }
	touch $@

# The BPF capture tool (tools/iocap; scripts/fio-pack capture --tracer bpf), in
# the shape of the kernel's libbpf-tools: vmlinux.h from the running
# kernel's BTF and the skeleton are generated here, never committed. A
# kernel without BTF gets no iocap (fio-pack capture falls back to strace).
BTF_VMLINUX ?= /sys/kernel/btf/vmlinux
BPF_ARCH := $(shell uname -m | sed -e 's/x86_64/x86/' -e 's/aarch64/arm64/' -e 's/ppc64le/powerpc/')
IOCAP_GEN := $(BUILD)/iocap-gen
iocap: | $(DEPS_STAMP)
	@if [ -r $(BTF_VMLINUX) ]; then $(MAKE) --no-print-directory $(BUILD)/iocap $(BUILD)/iocap-test; \
	else echo "iocap: not built: this kernel has no BTF ($(BTF_VMLINUX)); fio-pack capture uses strace" >&2; fi
$(IOCAP_GEN)/vmlinux.h: | $(DEPS_STAMP)
	@mkdir -p $(IOCAP_GEN)
	bpftool btf dump file $(BTF_VMLINUX) format c > $@.tmp && mv -f $@.tmp $@
$(IOCAP_GEN)/iocap.bpf.o: tools/iocap/iocap.bpf.c tools/iocap/iocap.h $(IOCAP_GEN)/vmlinux.h
	clang -g -O2 -target bpf -D__TARGET_ARCH_$(BPF_ARCH) -I$(IOCAP_GEN) -Itools/iocap \
		-Wall -Werror -c $< -o $@.tmp && mv -f $@.tmp $@
$(IOCAP_GEN)/iocap.skel.h: $(IOCAP_GEN)/iocap.bpf.o
	bpftool gen skeleton $< > $@.tmp && mv -f $@.tmp $@
IOCAP_LIB := engines/lib/outfile.c engines/lib/target.c engines/lib/errmsg.c
# build/iocap-test: the same, with the failures the tests inject on demand
# (IOCAP_TEST_HOOKS in iocap.c: environment variables no normal build reads).
IOCAP_SRCS := $(addprefix tools/iocap/,iocap.c names.c stats.c syscalls.c targets.c)
$(BUILD)/iocap $(BUILD)/iocap-test: $(IOCAP_SRCS) $(IOCAP_SRCS:.c=.h) tools/iocap/user.h \
		$(IOCAP_GEN)/iocap.skel.h $(IOCAP_LIB) engines/lib/outfile.h
	$(CC) $(BASE_CFLAGS) $(if $(filter %-test,$@),-DIOCAP_TEST_HOOKS) -I$(IOCAP_GEN) -Itools/iocap \
		-Iengines/lib -o $@.tmp $(filter %.c,$^) -lbpf -pthread && mv -f $@.tmp $@
.PHONY: iocap

# iocap's output into a trace's records: fio-pack capture's converter for
# BPF captures (capture/native.py), the Python one's rules at C's speed. No
# libbpf: a capture kept with --keep converts anywhere.
CAPCONV_SRCS := $(addprefix tools/iocap/,convert.c convert_calls.c convert_io.c capmap.c)
$(BUILD)/iocap-convert: $(CAPCONV_SRCS) tools/iocap/convert.h tools/iocap/capmap.h | $(DEPS_STAMP)
	$(CC) $(BASE_CFLAGS) -Itools/iocap -o $@.tmp $(CAPCONV_SRCS) && mv -f $@.tmp $@
$(BUILD)/iocap-convert-asan: $(CAPCONV_SRCS) tools/iocap/convert.h tools/iocap/capmap.h | $(DEPS_STAMP)
	$(CC) $(BASE_CFLAGS) $(SAN_FLAGS) -Itools/iocap -o $@.tmp $(CAPCONV_SRCS) && mv -f $@.tmp $@

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

# LD_PRELOAD library that injects EIO/EINTR/ENOSPC and short transfers into
# chosen libc calls on paths under one directory (tests/engines/test_reliability.py).
# Not built with BASE_CFLAGS: _FILE_OFFSET_BITS=64 would rename the
# functions it defines (open -> open64).
$(BUILD)/faultinject.so: tests/faultinject/faultinject.c
	@mkdir -p $(BUILD)
	$(CC) -std=gnu11 -O2 -g -fPIC -shared -Wall -Wextra -Werror -o $@.tmp $< -ldl
	mv -f $@.tmp $@

# LD_PRELOAD library that counts a process's calls to the allocator
# (tests/devices/test_device.py: the daemon allocates nothing per request).
$(BUILD)/alloccount.so: tests/faultinject/alloccount.c
	@mkdir -p $(BUILD)
	$(CC) -std=gnu11 -O2 -g -fPIC -shared -Wall -Wextra -Werror -o $@.tmp $<
	mv -f $@.tmp $@

demo: engines
	sh scripts/demo.sh

# fio-pack goes to DATADIR/scripts beside the jobs/ and reference/ it reads
# (the package finds them as it does in a checkout); BINDIR/fio-pack is a
# symbolic link to its launcher, which Python follows to find the package.
# The launcher runs with $(PYTHON), the Python the Makefile and the tests
# use (the one Debian's matplotlib is installed for). installed.json tells
# the package where the engines are (fiopack/engines.py), and pmrc2fio in
# BINDIR writes job files naming them: an installed pack needs no checkout.
install: engines $(OBJ)/lib/postmark.o $(OBJ)/lib/errmsg.o $(OBJ)/lib/outfile.o \
		$(OBJ)/lib/target.o
	install -d $(DESTDIR)$(LIBDIR)/$(FIO_VERSION) $(DESTDIR)$(DATADIR)/jobs $(DESTDIR)$(BINDIR)
	install -m 0755 $(ENGINES:%=$(BUILD)/%.so) $(DESTDIR)$(LIBDIR)/
	install -m 0755 $(ENGINES:%=$(VDIR)/%.so) $(DESTDIR)$(LIBDIR)/$(FIO_VERSION)/
	$(CC) $(BASE_CFLAGS) -Iengines/lib '-DPMRC2FIO_ENGINE="external:$(LIBDIR)/postmark.so"' \
		-o $(BUILD)/pmrc2fio-installed tools/pmrc2fio.c $(OBJ)/lib/postmark.o \
		$(OBJ)/lib/errmsg.o $(OBJ)/lib/outfile.o $(OBJ)/lib/target.o $(LINK_LIBS)
	install -m 0755 $(BUILD)/pmrc2fio-installed $(DESTDIR)$(BINDIR)/pmrc2fio
	cd jobs && find . -type d -not -name __pycache__ -exec install -d $(DESTDIR)$(DATADIR)/jobs/{} \;
	for f in $$(find jobs -type f -not -path '*/__pycache__/*'); do \
		case $$f in \
		*.fio) sed -e 's|external:$${FIO_PACK_ENGINES}/|external:$(LIBDIR)/|' \
			   -e 's|read_iolog=jobs/|read_iolog=$(DATADIR)/jobs/|' \
			   -e 's|dbr_trace=jobs/|dbr_trace=$(DATADIR)/jobs/|' $$f > $(DESTDIR)$(DATADIR)/$$f ;; \
		*) install -m 0644 $$f $(DESTDIR)$(DATADIR)/$$f ;; \
		esac; \
	done
	for d in $$(find scripts/fiopack reference -type d -not -name __pycache__); do \
		install -d $(DESTDIR)$(DATADIR)/$$d; done
	for f in $$(find scripts/fiopack -name '*.py') $$(find reference -type f); do \
		install -m 0644 $$f $(DESTDIR)$(DATADIR)/$$f; done
	sed -e '1s|.*|#!$(PYTHON)|' scripts/fio-pack > $(DESTDIR)$(DATADIR)/scripts/fio-pack
	chmod 0755 $(DESTDIR)$(DATADIR)/scripts/fio-pack
	$(PYTHON) -c 'import json, sys; print(json.dumps({"engines": sys.argv[1]}))' \
		'$(LIBDIR)' > $(DESTDIR)$(DATADIR)/scripts/fiopack/installed.json
	ln -sf $(DATADIR)/scripts/fio-pack $(DESTDIR)$(BINDIR)/fio-pack

clean:
	rm -rf $(BUILD)/*.so $(BUILD)/fio-*/*.so $(BUILD)/fio-*/asan/*.so $(BUILD)/unit-tests* \
		$(BUILD)/moddev $(BUILD)/moddev-asan \
		$(OBJ) $(OBJ_ASAN) $(OBJ_FUZZ) $(BUILD)/fio-*/obj $(BUILD)/fio-*/asan/obj

distclean:
	rm -rf $(BUILD)

# An engine that says it was built for another fio (9.99): tests/engines/test_build.py
# checks that it refuses to run rather than misread fio's structures.
$(VDIR)/test/smallfile-fio-9.99.so: engines/glue/fioglue.c $(FEATURES) \
		$(filter-out %/fioglue.o,$(call engine_objs,smallfile,$(VDIR)/obj,$(OBJ)))
	@mkdir -p $(@D)
	$(CC) $(filter-out -DPACK_FIO_VERSION=%,$(ENGINE_CFLAGS)) -DPACK_FIO_VERSION='"fio-9.99"' \
		$(ENGINE_LINK_CFLAGS) -o $@ $< $(filter %.o,$^) \
		-shared -Wl,-z,now $(LINK_LIBS)

# The engines as built for a fio of the same version and ioops ABI whose
# struct thread_data has one field more before td->eo: what a fio built from
# other source (3.41 and 3.42 both say ABI 39; td->eo moved) is to an engine.
# tests/engines/test_build.py checks that each refuses to run in one line.
LAYOUT_TEST := $(VDIR)/test/layout
$(LAYOUT_TEST)/include/fio.h: $(FIO_BIN)
	@mkdir -p $(@D)
	sed 's/^\tvoid \*eo;$$/\tvoid *pack_test_field;\n\tvoid *eo;/' $(FIOSRC)/fio.h > $@.tmp
	grep -q pack_test_field $@.tmp && mv -f $@.tmp $@
$(LAYOUT_TEST)/obj/%.o: engines/%.c $(FEATURES) $(LAYOUT_TEST)/include/fio.h
	@mkdir -p $(@D)
	$(CC) -I$(LAYOUT_TEST)/include $(ENGINE_CFLAGS) $(ENGINE_LINK_CFLAGS) $(DEPFLAGS) -c -o $@ $<
define layout_test_rules
$(LAYOUT_TEST)/$(1).so: $(call engine_objs,$(1),$(LAYOUT_TEST)/obj,$(OBJ))
	$$(CC) $$(ENGINE_LINK_CFLAGS) -o $$@ $$^ -shared -Wl,-z,now -Wl,--gc-sections $$(LINK_LIBS)
endef
$(foreach e,$(ENGINES),$(eval $(call layout_test_rules,$(e))))
layout-test-engines: $(ENGINES:%=$(LAYOUT_TEST)/%.so)
.PHONY: layout-test-engines

print-fio-dir:
	@echo $(VDIR)
print-fio-source:
	@echo $(abspath $(FIOSRC))

# Coverage-guided fuzzing of the user-facing parsers (clang's libFuzzer),
# bounded in time. Each target tests/fuzz/fuzz_NAME.c is linked with the
# lib units built once for fuzzing; its corpus is tests/fuzz/corpus-NAME
# (corpus for specs), copied under build/ so the run may add to it, and
# FUZZ_MAXLEN_NAME bounds its inputs.
FUZZ_SECONDS ?= 20
FUZZERS := specs dbtrace roundtrip dbfilter modelspec pmmarker
FUZZ_MAXLEN_specs := 512
FUZZ_MAXLEN_dbtrace := 4096
FUZZ_MAXLEN_roundtrip := 2048
FUZZ_MAXLEN_dbfilter := 1024
FUZZ_MAXLEN_modelspec := 512
FUZZ_MAXLEN_pmmarker := 1024
FUZZ_CORPUS_specs := corpus
OBJ_FUZZ := $(BUILD)/obj-fuzz
FUZZ_OBJS := $(LIB_UNITS:%=$(OBJ_FUZZ)/lib/%.o) $(MODDEV_UNITS:%=$(OBJ_FUZZ)/moddev/%.o)
FUZZ_CFLAGS := -g -O1 -fsanitize=address,undefined -fno-sanitize-recover=undefined \
	-D_GNU_SOURCE -Iengines/lib
$(OBJ_FUZZ)/lib/%.o: engines/lib/%.c | $(TEST_DEPS_STAMP)
	@mkdir -p $(@D)
	clang $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link $(DEPFLAGS) -c -o $@ $<
$(OBJ_FUZZ)/moddev/%.o: tools/moddev/%.c | $(TEST_DEPS_STAMP)
	@mkdir -p $(@D)
	clang $(FUZZ_CFLAGS) -Itools/moddev -fsanitize=fuzzer-no-link $(DEPFLAGS) -c -o $@ $<
# (fuzz_roundtrip.c includes tools/pmrc2fio.c: its dependency file says so)
$(BUILD)/fuzz-%: tests/fuzz/fuzz_%.c $(FUZZ_OBJS) | $(TEST_DEPS_STAMP)
	clang $(FUZZ_CFLAGS) -Itools/moddev -fsanitize=fuzzer -MMD -MP -MF $@.d -o $@ $< \
		$(FUZZ_OBJS) -lm -lz -pthread
fuzz: $(FUZZERS:%=fuzz-run-%)
# (built through pattern rules only, so make would delete them as intermediates)
.SECONDARY: $(FUZZERS:%=$(BUILD)/fuzz-%) $(FUZZ_OBJS)
fuzz-run-%: $(BUILD)/fuzz-%
	@mkdir -p $(BUILD)/fuzz-corpus-$*
	cp -n tests/fuzz/$(or $(FUZZ_CORPUS_$*),corpus-$*)/* $(BUILD)/fuzz-corpus-$*/ 2>/dev/null || true
	$< -max_total_time=$(FUZZ_SECONDS) -max_len=$(FUZZ_MAXLEN_$*) $(BUILD)/fuzz-corpus-$*

# The PostMark model's command-line front end (no filesystem access); the
# tests compare its counters with the real postmark's.
pm-sim: $(BUILD)/pm-sim
$(BUILD)/pm-sim: $(OBJ)/tools/pm-sim.o $(OBJ)/lib/postmark.o $(OBJ)/lib/errmsg.o
	$(CC) -o $@ $^ $(LINK_LIBS)
$(OBJ)/tools/%.o: tools/%.c | $(DEPS_STAMP)
	@mkdir -p $(@D)
	$(CC) $(BASE_CFLAGS) $(DEPFLAGS) -Iengines/lib -c -o $@ $<

# The C parser's view of a trace (tests/capture/test_dbtrace_tools.py, test_dbcapture*.py).
$(BUILD)/dbtrace-check: $(OBJ)/tools/dbtrace-check.o $(OBJ)/lib/dbtrace.o $(OBJ)/lib/dbtrace_fast.o \
		$(OBJ)/lib/errmsg.o
	$(CC) -o $@ $^ $(LINK_LIBS)

# The benchmarks' minimal C loop (scripts/fio-pack bench smallfile): the engine's
# system calls for a file operation, with the engine's own lib objects.
$(BUILD)/bench/minloop: $(OBJ)/bench/minloop.o \
		$(addprefix $(OBJ)/lib/,tree.o sizedist.o content.o units.o errmsg.o)
	@mkdir -p $(@D)
	$(CC) -o $@ $^ $(LINK_LIBS)
# The trace parser's own speed (scripts/fio-pack bench dbreplay).
$(BUILD)/bench/dbtrace-bench: $(OBJ)/bench/dbtrace-bench.o $(OBJ)/lib/dbtrace.o $(OBJ)/lib/dbtrace_fast.o \
		$(OBJ)/lib/dbtrace_write.o $(OBJ)/lib/errmsg.o
	@mkdir -p $(@D)
	$(CC) -o $@ $^ $(LINK_LIBS)
$(OBJ)/bench/%.o: bench/%.c | $(DEPS_STAMP)
	@mkdir -p $(@D)
	$(CC) $(BASE_CFLAGS) $(DEPFLAGS) -Iengines/lib -c -o $@ $<

# PostMark configuration (.pmrc) to fio job file converter.
.PHONY: tools
tools: $(BUILD)/pm-sim $(BUILD)/pmrc2fio $(BUILD)/dbtrace-check
$(BUILD)/pmrc2fio: $(OBJ)/tools/pmrc2fio.o $(OBJ)/lib/postmark.o $(OBJ)/lib/errmsg.o \
		$(OBJ)/lib/outfile.o $(OBJ)/lib/target.o
	$(CC) -o $@ $^ $(LINK_LIBS)

# Benchmarks (not tests): engine vs a minimal C loop and fio's own file engines.
# Needs root (mounts tmpfs). See docs/benchmarks.md.
bench: engines
	$(PYTHON) scripts/fio-pack bench smallfile $(BENCH_ARGS)

# A check in under a minute: the C unit tests, then each engine run through
# fio: the mail job's tree, PostMark's reference counts, the documented trace
# replayed, and every shipped job file parsed with its engine loaded.
quick: $(TEST_DEPS_STAMP) engines $(BUILD)/unit-tests
	$(BUILD)/unit-tests
	$(TEST_ENV) $(PYTHON) -m pytest -q tests/engines/test_jobs.py tests/engines/test_postmark.py \
		tests/engines/test_dbreplay.py -k '$(QUICK_TESTS)'
QUICK_TESTS := mail_job or parses_and_is_accepted or test_reference_run_counts \
	or test_doc_trace_counts_report_and_disk

# For editors and clang tools: every compile command of a full build.
# (the objects are removed first, so that every one is compiled under bear)
compile_commands.json: FORCE | $(TEST_DEPS_STAMP)
	rm -rf $(OBJ) $(OBJ_ASAN) $(VDIR)/obj $(VDIR)/asan/obj
	bear --output $@ -- $(MAKE) --no-print-directory engines asan $(BUILD)/unit-tests \
		$(BUILD)/unit-tests-asan pm-sim $(BUILD)/pmrc2fio
FORCE:
.PHONY: FORCE

-include $(wildcard $(BUILD)/obj*/*/*.d $(BUILD)/fio-*/obj/*.d $(BUILD)/fio-*/obj/*/*.d \
	$(BUILD)/fio-*/asan/obj/*.d $(BUILD)/fio-*/asan/obj/*/*.d $(BUILD)/fuzz-*.d \
	$(BUILD)/fio-*/test/layout/obj/*/*.d)
