# fio workload pack: external fio engines for small-file and database workloads.
#
#   make            install missing packages, find fio and fetch its source
#                   (make configure, when build/config.mk needs it), build
#                   that fio under build/, build the engines into build/
#   make demo       build, then run jobs/smallfile-mail.fio on a temporary
#                   directory and print a short summary
#   make check      build, then lint, run the C unit tests and the fuzzers,
#                   the fio tests, and the same fio tests with the engines
#                   built under ASan+UBSan
#   make install    install engines, job files and fio-pack (PREFIX, DESTDIR)
#
# The rules are in mk/, one file per concern, included below: fio.mk (the
# fio the engines are for: make configure, build/config.mk), engines.mk,
# tools.mk (pmrc2fio, pm-sim, dbtrace-check, moddev, the benchmarks' C
# helpers), iocap.mk, tests.mk (unit, lint, fuzz, check), install.mk.

PREFIX  ?= /usr/local
LIBDIR  ?= $(PREFIX)/lib/fio-pack
DATADIR ?= $(PREFIX)/share/fio-pack
BINDIR  ?= $(PREFIX)/bin
BUILD   := build
CC      ?= gcc
PYTHON  ?= /usr/bin/python3

DEPS_STAMP := $(BUILD)/.deps

WARN    := -Wall -Wextra -Werror -Wno-unused-parameter -Wno-sign-compare \
           -Wno-missing-field-initializers -Wno-pointer-arith
BASE_CFLAGS := -std=gnu11 -O2 -g -fPIC -D_GNU_SOURCE -D_LARGEFILE_SOURCE \
           -D_FILE_OFFSET_BITS=64 $(WARN)
SAN_FLAGS := -fsanitize=address,undefined -fno-sanitize-recover=undefined \
           -fno-omit-frame-pointer
# Every object has a dependency file: a header change rebuilds what includes it.
DEPFLAGS = -MMD -MP -MF $(@:.o=.d)
LINK_LIBS := -Wl,--as-needed -luring -lm -lz -pthread

# Objects, compiled once per flavour: the fio-independent units under
# build/obj/ (plain) and build/obj-asan/ (ASan+UBSan), shared by the engines,
# the unit tests and the tools; the engines' own files and the glue, which
# see fio's headers, under build/fio-VERSION/obj/ and .../asan/obj/.
OBJ      := $(BUILD)/obj
OBJ_ASAN := $(BUILD)/obj-asan
OBJ_FUZZ := $(BUILD)/obj-fuzz

.PHONY: all deps fio engines asan unit check check-engines test demo install clean distclean print-fio-dir print-fio-source fuzz bench pm-sim quick pg18 configure

all: engines $(BUILD)/pmrc2fio iocap $(BUILD)/iocap-convert moddev

help:
	@echo 'make                 fio (FIO_SRC=DIR: that fio source), the engines, pmrc2fio, iocap'
	@echo 'make configure       find fio and its source again (FIO=, FIO_SRC=): build/config.mk'
	@echo 'make engines         the engines, in build/fio-VERSION/ (FIO_SRC=DIR for another fio)'
	@echo 'make asan            the engines (build/fio-VERSION/asan/) and moddev with ASan and UBSan'
	@echo 'make iocap           the BPF capture tool (needs the kernel'"'"'s BTF)'
	@echo 'make moddev          the modeled-device daemon of fio-pack device (needs libfuse3-dev)'
	@echo 'make unit            the C unit tests, plain and ASan (build/unit-tests NAME: some)'
	@echo 'make fuzz            the libFuzzer targets, FUZZ_SECONDS each (default 20)'
	@echo 'make lint            pyflakes on every Python file, git clang-format on the C lines changed'
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

include mk/fio.mk
include mk/engines.mk
include mk/tools.mk
include mk/iocap.mk
include mk/tests.mk
include mk/install.mk

demo: engines
	sh scripts/demo.sh

clean:
	rm -rf $(BUILD)/*.so $(BUILD)/fio-*/*.so $(BUILD)/fio-*/asan/*.so $(BUILD)/unit-tests* \
		$(BUILD)/moddev $(BUILD)/moddev-asan \
		$(OBJ) $(OBJ_ASAN) $(OBJ_FUZZ) $(BUILD)/fio-*/obj $(BUILD)/fio-*/asan/obj

distclean:
	rm -rf $(BUILD)

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
