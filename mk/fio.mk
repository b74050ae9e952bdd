# The fio the engines are for (included by the Makefile).
#
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

print-fio-dir:
	@echo $(VDIR)
print-fio-source:
	@echo $(abspath $(FIOSRC))
