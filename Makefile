# sprig — plain Makefile.
#   make            build ./sprig, libsprig.a and libsprig.so (checks the libraries first)
#   make test       build and run every test (tests/run.sh)
#   make bench      run the benchmarks (bench/run.sh)
#   make asan       build with AddressSanitizer + UBSan into build-asan/ and run the tests
#   make install    [PREFIX=/usr/local] [DESTDIR=]: sprig, libsprig.a, libsprig.so, sprig.h,
#                   sprig.pc, the default model; make uninstall removes them
#   make clean
# Kernel files named *-avx2.c / *-avx512.c get their ISA flags; everything
# else is built for baseline x86-64 and the kernels are chosen at run time.
# ./setup installs what is missing (Debian/Ubuntu), builds and runs the default model.

CC      ?= cc
BUILD   ?= build
OPT     ?= -O2
WERROR  ?= -Werror
PKG_CONFIG ?= pkg-config
PREFIX  ?= /usr/local
DESTDIR ?=
LIBDIR  ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
BINDIR  ?= $(PREFIX)/bin
DATADIR ?= $(PREFIX)/share/sprig
CSTD     = -std=c11 -D_GNU_SOURCE
WARN     = -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wno-unused-parameter $(WERROR)
# No FMA contraction: kernels say fmaf() where they mean it, so the plain-C
# reference and the SIMD kernels compute the same roundings.
FPFLAGS  = -ffp-contract=off -fno-math-errno
CFLAGS  ?= $(OPT) -g

# The version is include/sprig.h's SPRIG_VERSION. While the major is 0 the
# minor is the ABI (parameter structs grow between minors): soname
# libsprig.so.0.MINOR.
VERSION  := $(shell sed -n 's/^\#define SPRIG_VERSION "\([0-9.]*\)".*/\1/p' include/sprig.h)
SOVER    := $(word 1,$(subst ., ,$(VERSION))).$(word 2,$(subst ., ,$(VERSION)))
SONAME   := libsprig.so.$(SOVER)

# ---------------------------------------------------------------- dependencies
# pkg-config name : Debian/Ubuntu package : Fedora package : Arch package.
# PCRE2 runs the pre-tokenizers' published regular expressions; Jansson reads
# JSON (tokenizer.json, request bodies); libmicrohttpd serves HTTP for
# `sprig serve` (the tool only; the library never links it). See the README.
DEPS_LIB  = libpcre2-8:libpcre2-dev:pcre2-devel:pcre2 jansson:libjansson-dev:jansson-devel:jansson
DEPS_TOOL = libmicrohttpd:libmicrohttpd-dev:libmicrohttpd-devel:libmicrohttpd
# Goals that compile nothing skip the check.
NODEP_GOALS = clean uninstall help deps-missing
ifneq ($(filter-out $(NODEP_GOALS),$(or $(MAKECMDGOALS),all)),)
DEPS_MISSING := $(shell \
    if ! command -v $(firstword $(CC)) >/dev/null 2>&1; then echo "$(firstword $(CC)):gcc:gcc:gcc"; fi; \
    if ! command -v $(PKG_CONFIG) >/dev/null 2>&1 || ! $(PKG_CONFIG) --version >/dev/null 2>&1; then \
        echo "pkg-config:pkg-config:pkgconf:pkgconf"; for d in $(DEPS_LIB) $(DEPS_TOOL); do echo "$$d"; done; \
    else for d in $(DEPS_LIB) $(DEPS_TOOL); do $(PKG_CONFIG) --exists "$${d%%:*}" || echo "$$d"; done; fi)
ifneq ($(strip $(DEPS_MISSING)),)
$(info sprig: cannot build: missing (checked with $(PKG_CONFIG) before compiling anything):)
$(foreach d,$(DEPS_MISSING),$(info $(shell d='$(d)'; IFS=:; set -- $$d; printf '  %-16s Debian/Ubuntu: %-18s Fedora: %-20s Arch: %s' "$$1" "$$2" "$$3" "$$4")))
$(info Debian/Ubuntu: sudo apt-get install $(sort $(foreach d,$(DEPS_MISSING),$(word 2,$(subst :, ,$(d))))))
$(info or run ./setup, which installs them (root or sudo) and builds.)
$(error missing libraries)
endif
endif
PC_CFLAGS     := $(shell $(PKG_CONFIG) --cflags $(foreach d,$(DEPS_LIB),$(firstword $(subst :, ,$(d)))) 2>/dev/null)
PC_LIBS       := $(shell $(PKG_CONFIG) --libs $(foreach d,$(DEPS_LIB),$(firstword $(subst :, ,$(d)))) 2>/dev/null)
PC_TOOL_FLAGS := $(shell $(PKG_CONFIG) --cflags $(foreach d,$(DEPS_TOOL),$(firstword $(subst :, ,$(d)))) 2>/dev/null)
PC_TOOL_LIBS  := $(shell $(PKG_CONFIG) --libs $(foreach d,$(DEPS_TOOL),$(firstword $(subst :, ,$(d)))) 2>/dev/null)

ALL_CFLAGS = $(CSTD) $(WARN) $(FPFLAGS) $(CFLAGS) $(EXTRA_CFLAGS) -Iinclude -Isrc -pthread $(PC_CFLAGS)
# The library's objects serve both libsprig.a and libsprig.so: position-
# independent, and hidden unless include/sprig.h declares them (its
# declarations are default-visible), so the shared library exports exactly
# the public API and calls inside it bind directly.
LIB_CFLAGS = -fPIC -fvisibility=hidden
LDLIBS   = $(PC_LIBS) -lm -pthread
TOOL_LDLIBS = $(PC_TOOL_LIBS)

ISA_AVX2   = -mavx2 -mfma -mf16c -mbmi2
ISA_AVX512 = -mavx2 -mfma -mf16c -mbmi2 -mavx512f -mavx512bw -mavx512vl -mavx512dq -mavx512vnni -mavx512bf16

# V=1 shows full command lines
ifeq ($(V),1)
Q =
else
Q = @
endif

LIB_SRC   := $(sort $(wildcard src/*/*.c src/*/*/*.c))
TOOL_SRC  := $(sort $(wildcard tools/*.c))
TEST_SRC  := $(sort $(wildcard tests/test-*.c))
TEST_HELP := $(sort $(filter-out $(TEST_SRC),$(wildcard tests/*.c)))

LIB_OBJ   := $(LIB_SRC:%.c=$(BUILD)/%.o)
TOOL_OBJ  := $(TOOL_SRC:%.c=$(BUILD)/%.o)
HELP_OBJ  := $(TEST_HELP:%.c=$(BUILD)/%.o)
TEST_BIN  := $(TEST_SRC:tests/%.c=$(BUILD)/tests/%)
DEPS      := $(LIB_OBJ:.o=.d) $(TOOL_OBJ:.o=.d) $(HELP_OBJ:.o=.d) $(TEST_BIN:=.d)

.PHONY: all test bench asan clean tests install uninstall deps-missing
.SECONDARY:
all: sprig libsprig.so

$(BUILD)/libsprig.a: $(LIB_OBJ)
	@rm -f $@
	@echo "  AR      $@"
	$(Q)ar rcs $@ $^

libsprig.a: $(BUILD)/libsprig.a
	cp $< $@

# The export list: every function include/sprig.h declares, under one version
# node per ABI; everything else is local (the ifunc clones of target_clones
# ignore -fvisibility, so visibility alone does not do it).
$(BUILD)/sprig.map: include/sprig.h
	@mkdir -p $(dir $@)
	$(Q){ echo "SPRIG_$(SOVER) {"; echo "  global:"; grep -o 'sprig_[a-z0-9_]*(' $< | tr -d '(' | sort -u | sed 's/.*/    &;/'; \
	    echo "  local: *;"; echo "};"; } >$@

$(BUILD)/$(SONAME): $(LIB_OBJ) $(BUILD)/sprig.map
	@echo "  LD      $@"
	$(Q)$(CC) $(ALL_CFLAGS) -shared -Wl,-soname,$(SONAME) -Wl,--version-script=$(BUILD)/sprig.map -Wl,-z,defs \
	    -o $@ $(LIB_OBJ) $(LDLIBS)

libsprig.so: $(BUILD)/$(SONAME)
	$(Q)cp $< $(SONAME)
	$(Q)ln -sf $(SONAME) $@

sprig: $(TOOL_OBJ) $(BUILD)/libsprig.a libsprig.a
	@echo "  LD      $@"
	$(Q)$(CC) $(ALL_CFLAGS) -o $@ $(TOOL_OBJ) $(BUILD)/libsprig.a $(LDLIBS) $(TOOL_LDLIBS)

$(BUILD)/src/%-avx2.o: src/%-avx2.c
	@mkdir -p $(dir $@)
	@echo "  CC      $<"
	$(Q)$(CC) $(ALL_CFLAGS) $(LIB_CFLAGS) $(ISA_AVX2) -MMD -MP -c -o $@ $<

$(BUILD)/src/%-avx512.o: src/%-avx512.c
	@mkdir -p $(dir $@)
	@echo "  CC      $<"
	$(Q)$(CC) $(ALL_CFLAGS) $(LIB_CFLAGS) $(ISA_AVX512) -MMD -MP -c -o $@ $<

$(BUILD)/src/%.o: src/%.c
	@mkdir -p $(dir $@)
	@echo "  CC      $<"
	$(Q)$(CC) $(ALL_CFLAGS) $(LIB_CFLAGS) -MMD -MP -c -o $@ $<

$(BUILD)/tools/%.o: tools/%.c
	@mkdir -p $(dir $@)
	@echo "  CC      $<"
	$(Q)$(CC) $(ALL_CFLAGS) $(PC_TOOL_FLAGS) -MMD -MP -c -o $@ $<

$(BUILD)/tests/%.o: tests/%.c
	@mkdir -p $(dir $@)
	@echo "  CC      $<"
	$(Q)$(CC) $(ALL_CFLAGS) -MMD -MP -c -o $@ $<

$(BUILD)/tests/%: tests/%.c $(HELP_OBJ) $(BUILD)/libsprig.a
	@mkdir -p $(dir $@)
	@echo "  TEST    $@"
	$(Q)$(CC) $(ALL_CFLAGS) -Itests -MMD -MP -o $@ $< $(HELP_OBJ) $(BUILD)/libsprig.a $(LDLIBS)

tests: $(TEST_BIN) sprig libsprig.so

test: tests
	@BUILD=$(BUILD) SPRIG_BIN=./sprig sh tests/run.sh

bench: sprig
	@sh bench/run.sh

asan:
	$(MAKE) BUILD=build-asan OPT=-O1 EXTRA_CFLAGS="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all" \
	    build-asan/sprig-asan-tests
	@BUILD=build-asan SPRIG_BIN=build-asan/sprig ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
	    UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 SPRIG_TEST_QUICK=1 sh tests/run.sh

build-asan/sprig-asan-tests: $(TEST_BIN) $(TOOL_OBJ) $(BUILD)/libsprig.a
	$(CC) $(ALL_CFLAGS) -o $(BUILD)/sprig $(TOOL_OBJ) $(BUILD)/libsprig.a $(LDLIBS) $(TOOL_LDLIBS)
	@touch $@

# ---------------------------------------------------------------- install
# sprig.pc (written for this PREFIX): the shared library by default;
# `pkg-config --static --libs sprig` adds what libsprig.a needs
# (Requires.private: PCRE2, Jansson).
install: sprig libsprig.a libsprig.so
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(LIBDIR)/pkgconfig $(DESTDIR)$(INCLUDEDIR) $(DESTDIR)$(DATADIR)
	install -m 755 sprig $(DESTDIR)$(BINDIR)/sprig
	install -m 644 libsprig.a $(DESTDIR)$(LIBDIR)/libsprig.a
	install -m 755 $(BUILD)/$(SONAME) $(DESTDIR)$(LIBDIR)/$(SONAME)
	ln -sf $(SONAME) $(DESTDIR)$(LIBDIR)/libsprig.so
	install -m 644 include/sprig.h $(DESTDIR)$(INCLUDEDIR)/sprig.h
	@printf '%s\n' 'prefix=$(PREFIX)' 'libdir=$(LIBDIR)' 'includedir=$(INCLUDEDIR)' '' \
	    'Name: sprig' 'Description: LLM inference on the CPU with draft-tree speculative decoding' \
	    'Version: $(VERSION)' 'Requires.private: $(foreach d,$(DEPS_LIB),$(firstword $(subst :, ,$(d))))' \
	    'Cflags: -I$${includedir}' 'Libs: -L$${libdir} -lsprig' 'Libs.private: -lm -pthread' \
	    >$(DESTDIR)$(LIBDIR)/pkgconfig/sprig.pc
	install -m 644 models/stories260K.gguf $(DESTDIR)$(DATADIR)/stories260K.gguf
	@if [ -z "$(DESTDIR)" ] && [ "$$(id -u)" = 0 ] && command -v ldconfig >/dev/null 2>&1; then ldconfig; fi

uninstall:
	rm -f $(DESTDIR)$(BINDIR)/sprig $(DESTDIR)$(LIBDIR)/libsprig.a $(DESTDIR)$(LIBDIR)/libsprig.so \
	    $(DESTDIR)$(LIBDIR)/$(SONAME) $(DESTDIR)$(INCLUDEDIR)/sprig.h $(DESTDIR)$(LIBDIR)/pkgconfig/sprig.pc \
	    $(DESTDIR)$(DATADIR)/stories260K.gguf
	-rmdir $(DESTDIR)$(DATADIR) 2>/dev/null

# the Debian/Ubuntu packages of the missing libraries, one line (./setup reads it)
deps-missing:
	@for d in $(DEPS_LIB) $(DEPS_TOOL); do $(PKG_CONFIG) --exists "$${d%%:*}" 2>/dev/null || echo "$$d"; done | cut -d: -f2 | tr '\n' ' '

clean:
	rm -rf build build-asan sprig libsprig.a libsprig.so libsprig.so.*

-include $(DEPS)
