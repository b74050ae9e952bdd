# The tests (included by the Makefile): the C unit tests, lint, the
# fuzzers, the LD_PRELOAD libraries the tests load, and the pytest runs.

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

# pyflakes on every Python file (the package, its launcher and the tests):
# unused imports, names never defined, f-strings without fields fail the check.
PY_FILES = scripts/fio-pack $(shell find scripts tests -name '*.py')
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
	tests/engines/test_postmark_uring.py tests/engines/test_dbreplay.py \
	tests/engines/test_dbreplay_refusals.py tests/engines/test_dbreplay_v2.py tests/engines/test_jobs.py
check-engines: $(TEST_DEPS_STAMP) engines pm-sim $(BUILD)/pmrc2fio
	$(TEST_ENV) $(PYTHON) -m pytest -q $(ENGINE_TESTS)

# The second fio `./pack check` tests: a release built from its upstream
# tarball, as the Debian archive carries it (scripts/fio-upstream-source.sh).
# (make -n fetches nothing: the directory the fetch makes stands for it)
SECOND_FIO ?= 3.41
ifeq ($(DRY_RUN),)
SECOND_FIO_SRC = $$(sh scripts/fio-upstream-source.sh $(SECOND_FIO) $(BUILD))
else
SECOND_FIO_SRC = $(BUILD)/src/fio-$(SECOND_FIO)-orig
endif
check-second-fio:
	src=$(SECOND_FIO_SRC) && \
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

# A check in under a minute: the C unit tests, then each engine run through
# fio: the mail job's tree, PostMark's reference counts, the documented trace
# replayed, and every shipped job file parsed with its engine loaded.
quick: $(TEST_DEPS_STAMP) engines $(BUILD)/unit-tests
	$(BUILD)/unit-tests
	$(TEST_ENV) $(PYTHON) -m pytest -q tests/engines/test_jobs.py tests/engines/test_postmark.py \
		tests/engines/test_dbreplay.py -k '$(QUICK_TESTS)'
QUICK_TESTS := mail_job or parses_and_is_accepted or test_reference_run_counts \
	or test_doc_trace_counts_report_and_disk
