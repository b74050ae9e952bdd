# The fio the engines are for (included by the Makefile).
#
# FIO=path (default: fio on PATH, else Debian's fio, installed) is the fio
# the user runs; FIO_SRC=DIR a source tree of the same version (default: the
# Debian package's, from apt-get source). scripts/fio-source.sh finds both,
# checks that the versions agree, and stops with one line if anything is
# wrong, before anything is built.
#
# It runs in one step of its own, make configure, which writes what it
# found to build/config.mk for the goals that need a fio to read. A goal
# that needs one runs that step first when build/config.mk is missing,
# when FIO or FIO_SRC is given (or was, for the build/config.mk there), when
# scripts/fio-source.sh or the fio it found changed, and when the source is
# gone; otherwise it reads build/config.mk as it is. Goals that need no fio
# skip it, and so does make -n: it installs and fetches nothing, and
# without a build/config.mk for the same FIO and FIO_SRC it names the fio
# fio-VERSION.
NOFIO_GOALS := help lint clean distclean unit fuzz pm-sim tools check-second-fio iocap pg18 moddev \
	moddev-asan configure $(BUILD)/moddev $(BUILD)/moddev-asan \
	$(BUILD)/dbtrace-check $(BUILD)/iocap-convert $(BUILD)/iocap-convert-asan $(BUILD)/bench/minloop \
	$(BUILD)/bench/dbtrace-bench $(BUILD)/bench/wakeup $(BUILD)/unit-tests $(BUILD)/unit-tests-asan $(BUILD)/pmrc2fio $(BUILD)/pm-sim
CONFIG_MK := $(BUILD)/config.mk
# make -n (--dry-run, --just-print): its letter is in MAKEFLAGS' first word
DRY_RUN := $(findstring n,$(filter-out -%,$(firstword $(MAKEFLAGS))))

# build/config.mk: the fio found and its source, written whole or not at all
# (unchanged: not written, so make does not read the Makefile again).
# (FIO and FIO_SRC as make has them: from its command line or the environment)
define write_config
	@mkdir -p $(BUILD)
	@found=$$(FIO='$(FIO)' FIO_SRC='$(FIO_SRC)' sh scripts/fio-source.sh $(BUILD)) || \
		{ echo "make: fio not found or not usable: see the fio-source line above" >&2; exit 1; }; \
	set -- $$found; tmp=$(CONFIG_MK).tmp.$$$$; \
	{ echo "# written by make configure (mk/fio.mk): the fio the engines are for"; \
	  echo "CONFIG_FIO := $(FIO)"; \
	  echo "CONFIG_FIO_SRC := $(FIO_SRC)"; \
	  echo "CONFIG_FIO_BIN := $$(command -v fio)"; \
	  echo "FIO_VERSION := $$1"; \
	  echo "FIOSRC := $$2"; } > $$tmp && \
	if cmp -s $$tmp $(CONFIG_MK); then rm -f $$tmp; else mv -f $$tmp $(CONFIG_MK); fi
endef

configure:
	$(write_config)

ifneq ($(filter-out $(NOFIO_GOALS),$(or $(MAKECMDGOALS),all)),)
ifeq ($(DRY_RUN),)
include $(CONFIG_MK)
# Run again on make's first reading only: once written, it is read as it is.
ifeq ($(MAKE_RESTARTS),)
$(CONFIG_MK): scripts/fio-source.sh $(wildcard $(CONFIG_FIO_BIN)) \
		$(if $(FIO)$(FIO_SRC)$(CONFIG_FIO)$(CONFIG_FIO_SRC),FORCE) \
		$(if $(wildcard $(FIOSRC)/ioengines.h),,FORCE)
	$(write_config)
endif
else
-include $(CONFIG_MK)
ifneq ($(FIO)/$(FIO_SRC),$(CONFIG_FIO)/$(CONFIG_FIO_SRC))
FIO_VERSION :=
endif
ifeq ($(FIO_VERSION),)
$(info make -n: no build/config.mk for this FIO and FIO_SRC, and a dry run does not \
	make it (make configure): fio-VERSION stands for the fio)
FIO_VERSION := fio-VERSION
FIOSRC := $(BUILD)/src/fio-VERSION
endif
endif
endif

# fio's own make, named so that make -n prints its line and runs nothing: a
# line that says $(MAKE) itself is run even then, as a make of ours is.
FIO_MAKE = $(MAKE)

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
		&& $(FIO_MAKE) -s -j2 fio >/dev/null
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
