# fio workload pack: external fio engines for small-file and database workloads.
#
#   make            install missing packages, fetch and build the matching fio
#                   under build/, build the engines into build/
#   make demo       build, then run jobs/smallfile-mail.fio on a temporary
#                   directory and print a short summary
#   make check      build, then run the C unit tests, the fio tests, and the
#                   same fio tests with the engines built under ASan+UBSan
#   make install    install engines and job files (PREFIX, DESTDIR)

PREFIX  ?= /usr/local
LIBDIR  ?= $(PREFIX)/lib/fio-pack
DATADIR ?= $(PREFIX)/share/fio-pack
BUILD   := build
CC      ?= gcc
PYTHON  ?= /usr/bin/python3

DEPS_STAMP := $(BUILD)/.deps

ENGINES := smallfile postmark dbreplay
LIB_SRCS := $(wildcard engines/lib/*.c)
LIB_HDRS := $(wildcard engines/lib/*.h)
# fio-dependent code shared by the engines (built with fio's headers); the
# dispatcher is built without them
GLUE_SRCS := $(filter-out engines/glue/dispatch.c,$(wildcard engines/glue/*.c))
GLUE_HDRS := $(wildcard engines/glue/*.h)

WARN    := -Wall -Wextra -Werror -Wno-unused-parameter -Wno-sign-compare \
           -Wno-missing-field-initializers -Wno-pointer-arith
BASE_CFLAGS := -std=gnu11 -O2 -g -fPIC -D_GNU_SOURCE -D_LARGEFILE_SOURCE \
           -D_FILE_OFFSET_BITS=64 $(WARN)
SAN_FLAGS := -fsanitize=address,undefined -fno-sanitize-recover=undefined \
           -fno-omit-frame-pointer

.PHONY: all deps fio engines asan unit check check-engines test demo install clean distclean print-engine-cflags print-lib-srcs print-fio-dir print-fio-source fuzz bench pm-sim

all: engines $(BUILD)/pmrc2fio iocap

help:
	@echo 'make                 fio (FIO_SRC=DIR: that fio source), the engines, pmrc2fio, iocap'
	@echo 'make engines         the engines, in build/fio-VERSION/ (FIO_SRC=DIR for another fio)'
	@echo 'make asan            the engines with ASan and UBSan, in build/fio-VERSION/asan/'
	@echo 'make iocap           the BPF capture tool (needs the kernel'"'"'s BTF)'
	@echo 'make unit            the C unit tests, plain and ASan (build/unit-tests NAME: some)'
	@echo 'make fuzz            the libFuzzer targets, FUZZ_SECONDS each (default 20)'
	@echo 'make lint            pyflakes on every Python file'
	@echo 'make check           all of the above, then pytest with both engine builds'
	@echo 'make check-engines   the engine tests alone (FIO_SRC=DIR: against that fio)'
	@echo 'make check-second-fio  build for fio 3.41 from upstream, run the engine tests on it'
	@echo 'make demo            run jobs/smallfile-mail.fio on a temporary directory'
	@echo 'make bench           the small-file benchmark (scripts/bench-*.py: the others)'
	@echo 'make install         the engines, pmrc2fio and the job files (LIBDIR, DATADIR)'
	@echo 'make clean           remove the engines and unit tests (distclean: all of build/)'
.PHONY: help

# --- The fio the engines are for ----------------------------------------
# FIO=path (default: fio on PATH, else Debian's fio, installed) is the fio
# the user runs; FIO_SRC=DIR a source tree of the same version (default: the
# Debian package's, from apt-get source). scripts/fio-source.sh finds both,
# checks that the versions agree, and stops with one line if anything is
# wrong, before anything is built. Goals that need no fio skip it.
NOFIO_GOALS := help lint clean distclean unit fuzz pm-sim tools print-lib-srcs check-second-fio iocap
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

$(VDIR)/%.so: engines/%.c $(LIB_SRCS) $(LIB_HDRS) $(GLUE_SRCS) $(GLUE_HDRS) $(FIO_BIN) $(FEATURES)
	$(CC) $(ENGINE_CFLAGS) $(ENGINE_LINK_CFLAGS) -o $@.tmp $< $(LIB_SRCS) $(GLUE_SRCS) \
		-shared -Wl,-z,now -Wl,--gc-sections -luring -lm -lz -pthread
	LD_BIND_NOW=1 $(FIO_BIN) --enghelp=$(abspath $@.tmp) >/dev/null
	mv -f $@.tmp $@  # rename: a running fio keeps its mapping of the old file

# The engines the job files name: each loads the build for the fio running
# it (engines/glue/dispatch.c), whatever the version.
$(BUILD)/%.so: engines/glue/dispatch.c Makefile
	@mkdir -p $(BUILD)
	$(CC) $(BASE_CFLAGS) -DPACK_ENGINE_NAME='"$*"' -fvisibility=hidden -o $@.tmp $< \
		-shared -Wl,-z,now -ldl
	mv -f $@.tmp $@

# Sanitizer build of the same engines, loaded into fio with libasan preloaded.
asan: $(ENGINES:%=$(VDIR)/asan/%.so)
$(VDIR)/asan/%.so: engines/%.c $(LIB_SRCS) $(LIB_HDRS) $(GLUE_SRCS) $(GLUE_HDRS) $(FIO_BIN) $(FEATURES)
	@mkdir -p $(VDIR)/asan
	$(CC) $(ENGINE_CFLAGS) $(ENGINE_LINK_CFLAGS) $(SAN_FLAGS) -O1 -o $@.tmp $< $(LIB_SRCS) $(GLUE_SRCS) \
		-shared -Wl,-z,now -Wl,--gc-sections -luring -lm -lz -pthread
	mv -f $@.tmp $@

# C unit tests of the fio-independent logic, normal and sanitized.
UNIT_SRCS := $(wildcard tests/unit/*.c)
$(BUILD)/unit-tests: $(UNIT_SRCS) $(LIB_SRCS) $(LIB_HDRS) $(TEST_DEPS_STAMP)
	$(CC) $(BASE_CFLAGS) -Iengines/lib -o $@ $(UNIT_SRCS) $(LIB_SRCS) -lm -lz -pthread
$(BUILD)/unit-tests-asan: $(UNIT_SRCS) $(LIB_SRCS) $(LIB_HDRS) $(TEST_DEPS_STAMP)
	$(CC) $(BASE_CFLAGS) $(SAN_FLAGS) -O1 -Iengines/lib -o $@ $(UNIT_SRCS) $(LIB_SRCS) -lm -lz -pthread

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
PY_FILES = $(shell find scripts tests jobs -name '*.py')
lint: $(TEST_DEPS_STAMP)
	$(PYTHON) -m pyflakes $(PY_FILES)
.PHONY: lint

check: $(TEST_DEPS_STAMP) lint engines asan unit fuzz pm-sim $(BUILD)/pmrc2fio $(BUILD)/faultinject.so iocap
	$(TEST_ENV) $(PYTHON) -m pytest -q tests
	$(ASAN_ENV) $(PYTHON) -m pytest -q tests -m 'not nosan'
test: check

# The engine tests alone, for one more fio version (.ci/run's second fio):
# make check-engines FIO_SRC=DIR
ENGINE_TESTS := tests/test_build.py tests/test_smallfile.py tests/test_postmark.py \
	tests/test_postmark_uring.py tests/test_dbreplay.py tests/test_jobs.py
check-engines: $(TEST_DEPS_STAMP) engines pm-sim $(BUILD)/pmrc2fio
	$(TEST_ENV) $(PYTHON) -m pytest -q $(ENGINE_TESTS)

# The second fio `./pack check` tests: a release built from its upstream
# tarball, as the Debian archive carries it (scripts/fio-upstream-source.sh).
SECOND_FIO ?= 3.41
check-second-fio:
	src=$$(sh scripts/fio-upstream-source.sh $(SECOND_FIO) $(BUILD)) && \
		$(MAKE) --no-print-directory check-engines FIO_SRC=$$src FIO=
.PHONY: check-second-fio

# The BPF capture tool (tools/iocap; scripts/dbcapture.py --tracer bpf), in
# the shape of the kernel's libbpf-tools: vmlinux.h from the running
# kernel's BTF and the skeleton are generated here, never committed. A
# kernel without BTF gets no iocap (dbcapture.py falls back to strace).
BTF_VMLINUX ?= /sys/kernel/btf/vmlinux
BPF_ARCH := $(shell uname -m | sed -e 's/x86_64/x86/' -e 's/aarch64/arm64/' -e 's/ppc64le/powerpc/')
IOCAP_GEN := $(BUILD)/iocap-gen
iocap: | $(DEPS_STAMP)
	@if [ -r $(BTF_VMLINUX) ]; then $(MAKE) --no-print-directory $(BUILD)/iocap; \
	else echo "iocap: not built: this kernel has no BTF ($(BTF_VMLINUX)); dbcapture.py uses strace" >&2; fi
$(IOCAP_GEN)/vmlinux.h: | $(DEPS_STAMP)
	@mkdir -p $(IOCAP_GEN)
	bpftool btf dump file $(BTF_VMLINUX) format c > $@.tmp && mv -f $@.tmp $@
$(IOCAP_GEN)/iocap.bpf.o: tools/iocap/iocap.bpf.c tools/iocap/iocap.h $(IOCAP_GEN)/vmlinux.h
	clang -g -O2 -target bpf -D__TARGET_ARCH_$(BPF_ARCH) -I$(IOCAP_GEN) -Itools/iocap \
		-Wall -Werror -c $< -o $@.tmp && mv -f $@.tmp $@
$(IOCAP_GEN)/iocap.skel.h: $(IOCAP_GEN)/iocap.bpf.o
	bpftool gen skeleton $< > $@.tmp && mv -f $@.tmp $@
$(BUILD)/iocap: tools/iocap/iocap.c tools/iocap/iocap.h $(IOCAP_GEN)/iocap.skel.h
	$(CC) $(BASE_CFLAGS) -I$(IOCAP_GEN) -Itools/iocap -o $@.tmp $< -lbpf && mv -f $@.tmp $@
.PHONY: iocap

# LD_PRELOAD library that injects EIO/EINTR/ENOSPC and short transfers into
# chosen libc calls on paths under one directory (tests/test_reliability.py).
# Not built with BASE_CFLAGS: _FILE_OFFSET_BITS=64 would rename the
# functions it defines (open -> open64).
$(BUILD)/faultinject.so: tests/faultinject/faultinject.c
	@mkdir -p $(BUILD)
	$(CC) -std=gnu11 -O2 -g -fPIC -shared -Wall -Wextra -Werror -o $@.tmp $< -ldl
	mv -f $@.tmp $@

demo: engines
	sh scripts/demo.sh

install: engines $(BUILD)/pmrc2fio
	install -d $(DESTDIR)$(LIBDIR)/$(FIO_VERSION) $(DESTDIR)$(DATADIR)/jobs
	install -m 0755 $(ENGINES:%=$(BUILD)/%.so) $(DESTDIR)$(LIBDIR)/
	install -m 0755 $(ENGINES:%=$(VDIR)/%.so) $(DESTDIR)$(LIBDIR)/$(FIO_VERSION)/
	install -m 0755 $(BUILD)/pmrc2fio $(DESTDIR)$(LIBDIR)/
	cd jobs && find . -type d -not -name __pycache__ -exec install -d $(DESTDIR)$(DATADIR)/jobs/{} \;
	for f in $$(find jobs -type f -not -path '*/__pycache__/*'); do \
		case $$f in \
		*.fio) sed -e 's|external:build/|external:$(LIBDIR)/|' \
			   -e 's|read_iolog=jobs/|read_iolog=$(DATADIR)/jobs/|' \
			   -e 's|dbr_trace=jobs/|dbr_trace=$(DATADIR)/jobs/|' $$f > $(DESTDIR)$(DATADIR)/$$f ;; \
		*) install -m 0644 $$f $(DESTDIR)$(DATADIR)/$$f ;; \
		esac; \
	done

clean:
	rm -f $(BUILD)/*.so $(BUILD)/fio-*/*.so $(BUILD)/fio-*/asan/*.so $(BUILD)/unit-tests*

distclean:
	rm -rf $(BUILD)

# For tests that build engine variants (e.g. for the wrong fio version).
print-engine-cflags: $(FIO_BIN) $(FEATURES)
	@echo $(ENGINE_CFLAGS)
print-fio-dir:
	@echo $(VDIR)
print-fio-source:
	@echo $(abspath $(FIOSRC))
print-lib-srcs:
	@echo $(LIB_SRCS) $(GLUE_SRCS)

# Coverage-guided fuzzing of the user-facing parsers (clang's libFuzzer), bounded in time.
FUZZ_SECONDS ?= 20
$(BUILD)/fuzz-specs: tests/fuzz/fuzz_specs.c $(LIB_SRCS) $(LIB_HDRS) $(TEST_DEPS_STAMP)
	clang -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
		-D_GNU_SOURCE -Iengines/lib -o $@ $< $(LIB_SRCS) -lm -lz -pthread
$(BUILD)/fuzz-dbtrace: tests/fuzz/fuzz_dbtrace.c $(LIB_SRCS) $(LIB_HDRS) $(TEST_DEPS_STAMP)
	clang -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
		-D_GNU_SOURCE -Iengines/lib -o $@ $< $(LIB_SRCS) -lm -lz -pthread
# pmrc2fio's conversion read back as fio reads a job file, and the canonical
# texts of the specs parsed again (tests/fuzz/fuzz_roundtrip.c includes tools/pmrc2fio.c)
$(BUILD)/fuzz-roundtrip: tests/fuzz/fuzz_roundtrip.c tools/pmrc2fio.c $(LIB_SRCS) $(LIB_HDRS) $(TEST_DEPS_STAMP)
	clang -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
		-D_GNU_SOURCE -Iengines/lib -o $@ $< $(LIB_SRCS) -lm -lz -pthread
$(BUILD)/fuzz-dbfilter: tests/fuzz/fuzz_dbfilter.c $(LIB_SRCS) $(LIB_HDRS) $(TEST_DEPS_STAMP)
	clang -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
		-D_GNU_SOURCE -Iengines/lib -o $@ $< $(LIB_SRCS) -lm -lz -pthread
fuzz: $(BUILD)/fuzz-specs $(BUILD)/fuzz-dbtrace $(BUILD)/fuzz-roundtrip $(BUILD)/fuzz-dbfilter
	@mkdir -p $(BUILD)/fuzz-corpus $(BUILD)/fuzz-corpus-dbtrace
	cp -n tests/fuzz/corpus/* $(BUILD)/fuzz-corpus/ 2>/dev/null || true
	$(BUILD)/fuzz-specs -max_total_time=$(FUZZ_SECONDS) -max_len=512 $(BUILD)/fuzz-corpus
	cp -n tests/fuzz/corpus-dbtrace/* $(BUILD)/fuzz-corpus-dbtrace/ 2>/dev/null || true
	$(BUILD)/fuzz-dbtrace -max_total_time=$(FUZZ_SECONDS) -max_len=4096 $(BUILD)/fuzz-corpus-dbtrace
	@mkdir -p $(BUILD)/fuzz-corpus-roundtrip
	cp -n tests/fuzz/corpus-roundtrip/* $(BUILD)/fuzz-corpus-roundtrip/ 2>/dev/null || true
	$(BUILD)/fuzz-roundtrip -max_total_time=$(FUZZ_SECONDS) -max_len=2048 $(BUILD)/fuzz-corpus-roundtrip
	@mkdir -p $(BUILD)/fuzz-corpus-dbfilter
	cp -n tests/fuzz/corpus-dbfilter/* $(BUILD)/fuzz-corpus-dbfilter/ 2>/dev/null || true
	$(BUILD)/fuzz-dbfilter -max_total_time=$(FUZZ_SECONDS) -max_len=1024 $(BUILD)/fuzz-corpus-dbfilter

# The PostMark model's command-line front end (no filesystem access); the
# tests compare its counters with the real postmark's.
pm-sim: $(BUILD)/pm-sim
$(BUILD)/pm-sim: tools/pm-sim.c engines/lib/postmark.c engines/lib/postmark.h engines/lib/errmsg.c
	@mkdir -p $(BUILD)
	$(CC) $(BASE_CFLAGS) -Iengines/lib -o $@ tools/pm-sim.c engines/lib/postmark.c engines/lib/errmsg.c -lm

# PostMark configuration (.pmrc) to fio job file converter.
.PHONY: tools
tools: $(BUILD)/pm-sim $(BUILD)/pmrc2fio
$(BUILD)/pmrc2fio: tools/pmrc2fio.c engines/lib/postmark.c engines/lib/postmark.h engines/lib/errmsg.c engines/lib/errmsg.h
	@mkdir -p $(BUILD)
	$(CC) $(BASE_CFLAGS) -Iengines/lib -o $@ tools/pmrc2fio.c engines/lib/postmark.c engines/lib/errmsg.c -lm

# Benchmarks (not tests): engine vs a minimal C loop and fio's own file engines.
# Needs root (mounts tmpfs). See docs/benchmarks.md.
bench: engines
	$(PYTHON) scripts/bench-smallfile.py $(BENCH_ARGS)
