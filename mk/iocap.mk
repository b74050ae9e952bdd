# iocap (included by the Makefile): the BPF capture tool and the converter
# of its output.

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
IOCAP_SRCS := $(addprefix tools/iocap/,iocap.c events.c lines.c names.c stats.c syscalls.c targets.c \
	user.c)
$(BUILD)/iocap $(BUILD)/iocap-test: $(IOCAP_SRCS) $(IOCAP_SRCS:.c=.h) \
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
