# assay: plain Makefile in the QBE/musl manner.
#   make          builds ./assay and build/libassay.a
#   make check    runs the Check suites (tests/test_*.c), then tests/slurm.sh (a one-node Slurm)
#   make san      the same suites under AddressSanitizer + UndefinedBehaviorSanitizer
#   make bench    runs the benchmarks (bench/*.c), each figure beside its anchor
#   make gate     checks every example on every available backend, reports, gates it
#   make faults   runs a short fuzz campaign against each seeded compiler fault, then
#                 make patch-faults: the source-patch faults of faults/ (scripts/patch-faults.sh)
# WERROR=1 (set by .ci/run) turns warnings into errors.

CC      ?= cc
OPT     ?= -O2
CFLAGS  := -std=c11 -D_GNU_SOURCE -Wall -Wextra -Wpedantic -Wno-unused-parameter $(OPT) -g -pthread
ifeq ($(WERROR),1)
CFLAGS  += -Werror
endif
LDLIBS  := -lmpfr -lgmp -lm -ldl -pthread
CHECK_LIBS := $(shell pkg-config --libs check 2>/dev/null || echo -lcheck -lsubunit -lrt -lm)

B       ?= build
LIBDIRS := compiler compiler/format compiler/sched compiler/kir compiler/map compiler/emit compiler/c compiler/opencl compiler/cuda compiler/vulkan compiler/wgsl interp oracles verify fuzz reports
LIBSRC  := $(foreach d,$(LIBDIRS),$(wildcard $(d:/=)/*.c))
LIBOBJ  := $(LIBSRC:%.c=$(B)/%.o)
CLISRC  := $(wildcard cli/*.c)
CLIOBJ  := $(CLISRC:%.c=$(B)/%.o)
TESTSRC := $(wildcard tests/test_*.c)
TESTBIN := $(TESTSRC:tests/%.c=$(B)/tests/%)
BENCHSRC:= $(wildcard bench/*.c)
BENCHBIN:= $(BENCHSRC:bench/%.c=$(B)/bench/%)
HDRS    := $(wildcard */*.h */*/*.h compiler/*.def)

ASSAY   ?= ./assay

all: layers assay

assay: $(B)/assay
	cp $(B)/assay $@

$(B)/assay: $(CLIOBJ) $(B)/libassay.a
	$(CC) $(CFLAGS) -o $@ $(CLIOBJ) $(B)/libassay.a $(LDLIBS)

$(B)/libassay.a: $(LIBOBJ)
	@rm -f $@
	ar rcs $@ $(LIBOBJ)

$(B)/%.o: %.c $(HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c -o $@ $<

# The commit id compiled into assay (vf_commit, `assay --version`, provenance.json): `git
# rev-parse --short HEAD`, with -dirty when tracked files differ from it, "unknown" outside
# a git checkout of this tree. $(B)/commit.txt is rewritten only when the id changes, so
# only verify/provenance.o is rebuilt then.
$(B)/commit.txt: FORCE
	@mkdir -p $(B)
	@id=unknown; \
	if [ "$$(git rev-parse --show-toplevel 2>/dev/null)" = "$(CURDIR)" ]; then \
		id=$$(git rev-parse --short HEAD 2>/dev/null || echo unknown); \
		[ "$$id" = unknown ] || [ -z "$$(git status --porcelain --untracked-files=no 2>/dev/null)" ] || \
			id=$$id-dirty; \
	fi; \
	[ "$$(cat $@ 2>/dev/null)" = "$$id" ] || echo "$$id" >$@

$(B)/verify/provenance.o: verify/provenance.c $(HDRS) $(B)/commit.txt
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -DASSAY_COMMIT="\"$$(cat $(B)/commit.txt)\"" -c -o $@ $<

$(B)/tests/%: tests/%.c $(wildcard tests/*.h) $(B)/libassay.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -Wno-pedantic -o $@ $< $(B)/libassay.a $(CHECK_LIBS) $(LDLIBS)

$(B)/bench/%: bench/%.c $(B)/libassay.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -O3 -o $@ $< $(B)/libassay.a $(LDLIBS)

# Folders may include only the public headers the architecture allows.
layers:
	@sh scripts/check-layers.sh

check: all $(TESTBIN)
	@ASSAY=$(ASSAY) sh scripts/run-tests.sh $(B) $(TESTBIN)
	@ASSAY=$(ASSAY) bash tests/slurm.sh

san:
	$(MAKE) B=build-san OPT="-O1 -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined" \
		LDLIBS="-fsanitize=address,undefined $(LDLIBS)" build-san/assay check B=build-san ASSAY=build-san/assay

# The parser's suite (its mutation test over the examples included) under the sanitizers:
# the part of `make san` the test command runs every time.
SANFLAGS := OPT="-O1 -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined" \
	LDLIBS="-fsanitize=address,undefined $(LDLIBS)"
san-parser:
	$(MAKE) B=build-san $(SANFLAGS) build-san/tests/test_compiler
	@sh scripts/run-tests.sh build-san build-san/tests/test_compiler

build-san/assay: build-san/libassay.a $(CLISRC:%.c=build-san/%.o)
	$(CC) $(CFLAGS) -o $@ $(CLISRC:%.c=build-san/%.o) build-san/libassay.a $(LDLIBS)

# The measure of the fuzzer: a short campaign against each seeded compiler fault, and a
# control campaign with none (scripts/faults.sh prints the figures and the targets); then
# the hidden-style measure, the source-patch faults of faults/ (patch-faults: a patched,
# built scratch copy of the tree per fault, a campaign against a control campaign's
# baseline; scripts/patch-faults.sh, CASES=600 by default: an hour or more).
faults: all
	@sh scripts/faults.sh $(ASSAY)
	@sh scripts/patch-faults.sh

patch-faults:
	@sh scripts/patch-faults.sh

bench: all $(BENCHBIN)
	@for b in $(BENCHBIN); do echo "== $$b"; $$b || exit 1; done

gate: all
	@ASSAY=$(ASSAY) OUT=$(B)/gate sh scripts/gate.sh

clean:
	rm -rf build build-san assay

.PHONY: all check san san-parser bench gate clean layers faults patch-faults FORCE
