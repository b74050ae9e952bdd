# The engines (included by the Makefile): what each links, their objects for
# the fio of mk/fio.mk, plain and ASan+UBSan, the dispatcher the job files
# name, and the engines the build tests load.

ENGINES := smallfile postmark dbreplay
# What each engine links: its own logic in engines/lib, the common units and
# the fio glue; nothing else (smallfile carries no trace parser, and only
# dbreplay needs zlib). A new lib unit goes in the list of the engine that
# uses it, or in COMMON_LIB if all do.
COMMON_LIB    := errmsg units lathist jsonl target
smallfile_LIB := tree treemeta treespace sizedist content opmix
postmark_LIB  := postmark pmconfig stdiosim pmroom pmmarker sizedist content
dbreplay_LIB  := dbtrace dbtrace_read dbtrace_fast dbtrace_write dbrecs dbsched dbdepth dbprefetch dbfilter odirect \
		 pathset
GLUE          := fioglue ioq
# An engine's own files (engines/NAME.c, or engines/NAME/ when it is large).
smallfile_SRCS := smallfile/engine smallfile/fileops smallfile/uring smallfile/target smallfile/opstats
postmark_SRCS  := postmark/engine postmark/fileops postmark/uring postmark/locations \
		  postmark/stream
dbreplay_SRCS  := dbreplay/engine dbreplay/replay dbreplay/uring dbreplay/target dbreplay/report \
		  dbreplay/files
LIB_SRCS := $(wildcard engines/lib/*.c)
LIB_UNITS := $(LIB_SRCS:engines/lib/%.c=%)
# fio-dependent code shared by the engines (built with fio's headers); the
# dispatcher is built without them
GLUE_SRCS := $(GLUE:%=engines/glue/%.c)

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
$(BUILD)/%.so: engines/glue/dispatch.c Makefile mk/engines.mk
	@mkdir -p $(BUILD)
	$(CC) $(BASE_CFLAGS) -DPACK_ENGINE_NAME='"$*"' -fvisibility=hidden -o $@.tmp $< \
		-shared -Wl,-z,now -ldl
	mv -f $@.tmp $@

# Sanitizer build of the same engines, loaded into fio with libasan preloaded.
asan: $(ENGINES:%=$(VDIR)/asan/%.so) moddev-asan $(BUILD)/iocap-convert-asan

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
