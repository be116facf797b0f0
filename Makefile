# sprig — plain Makefile.
#   make            build ./sprig and libsprig.a
#   make test       build and run every test (tests/run.sh)
#   make bench      run the benchmarks (bench/run.sh)
#   make asan       build with AddressSanitizer + UBSan into build-asan/ and run the tests
#   make clean
# Kernel files named *-avx2.c / *-avx512.c get their ISA flags; everything
# else is built for baseline x86-64 and the kernels are chosen at run time.

CC      ?= cc
BUILD   ?= build
OPT     ?= -O2
WERROR  ?= -Werror
CSTD     = -std=c11 -D_GNU_SOURCE
WARN     = -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wno-unused-parameter $(WERROR)
# No FMA contraction: kernels say fmaf() where they mean it, so the plain-C
# reference and the SIMD kernels compute the same roundings.
FPFLAGS  = -ffp-contract=off -fno-math-errno
CFLAGS  ?= $(OPT) -g
ALL_CFLAGS = $(CSTD) $(WARN) $(FPFLAGS) $(CFLAGS) $(EXTRA_CFLAGS) -Iinclude -Isrc -pthread
# PCRE2 runs the pre-tokenizers' published regular expressions; Jansson reads
# tokenizer.json files (and, later, HTTP request bodies). See the README.
LDLIBS   = -lpcre2-8 -ljansson -lm -pthread
# libmicrohttpd serves HTTP for `sprig serve` (the tool only; the library never links it)
TOOL_LDLIBS = -lmicrohttpd

ISA_AVX2   = -mavx2 -mfma -mf16c -mbmi2
ISA_AVX512 = -mavx2 -mfma -mf16c -mbmi2 -mavx512f -mavx512bw -mavx512vl -mavx512dq -mavx512vnni -mavx512bf16

# V=1 shows full command lines
ifeq ($(V),1)
Q =
else
Q = @
endif

LIB_SRC   := $(sort $(wildcard src/*.c src/*/*.c))
TOOL_SRC  := $(sort $(wildcard tools/*.c))
TEST_SRC  := $(sort $(wildcard tests/test-*.c))
TEST_HELP := $(sort $(filter-out $(TEST_SRC),$(wildcard tests/*.c)))

LIB_OBJ   := $(LIB_SRC:%.c=$(BUILD)/%.o)
TOOL_OBJ  := $(TOOL_SRC:%.c=$(BUILD)/%.o)
HELP_OBJ  := $(TEST_HELP:%.c=$(BUILD)/%.o)
TEST_BIN  := $(TEST_SRC:tests/%.c=$(BUILD)/tests/%)
DEPS      := $(LIB_OBJ:.o=.d) $(TOOL_OBJ:.o=.d) $(HELP_OBJ:.o=.d) $(TEST_BIN:=.d)

.PHONY: all test bench asan clean tests
.SECONDARY:
all: sprig

$(BUILD)/libsprig.a: $(LIB_OBJ)
	@rm -f $@
	@echo "  AR      $@"
	$(Q)ar rcs $@ $^

libsprig.a: $(BUILD)/libsprig.a
	cp $< $@

sprig: $(TOOL_OBJ) $(BUILD)/libsprig.a libsprig.a
	@echo "  LD      $@"
	$(Q)$(CC) $(ALL_CFLAGS) -o $@ $(TOOL_OBJ) $(BUILD)/libsprig.a $(LDLIBS) $(TOOL_LDLIBS)

$(BUILD)/%-avx2.o: %-avx2.c
	@mkdir -p $(dir $@)
	@echo "  CC      $<"
	$(Q)$(CC) $(ALL_CFLAGS) $(ISA_AVX2) -MMD -MP -c -o $@ $<

$(BUILD)/%-avx512.o: %-avx512.c
	@mkdir -p $(dir $@)
	@echo "  CC      $<"
	$(Q)$(CC) $(ALL_CFLAGS) $(ISA_AVX512) -MMD -MP -c -o $@ $<

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	@echo "  CC      $<"
	$(Q)$(CC) $(ALL_CFLAGS) -MMD -MP -c -o $@ $<

$(BUILD)/tests/%: tests/%.c $(HELP_OBJ) $(BUILD)/libsprig.a
	@mkdir -p $(dir $@)
	@echo "  TEST    $@"
	$(Q)$(CC) $(ALL_CFLAGS) -Itests -MMD -MP -o $@ $< $(HELP_OBJ) $(BUILD)/libsprig.a $(LDLIBS)

tests: $(TEST_BIN) sprig

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

clean:
	rm -rf build build-asan sprig libsprig.a

-include $(DEPS)
