# splat build: C11 library + CLI + tests; CUDA backend when nvcc is found.
# Every src/**/*.c goes into libsplat.a, every tests/test_*.c becomes one test binary.
BUILD   ?= build
CC      ?= cc
OPT     ?= -O3 -g
CFLAGS  += $(OPT) -std=c11 -Wall -Wextra -Wshadow -Wno-unused-parameter -Wno-sign-compare \
           -fopenmp -D_GNU_SOURCE -Iinclude -Isrc -MMD -MP
LDLIBS  += -lpng -ljpeg -lcjson -lz -lm -fopenmp -lpthread

NVCC    ?= $(shell command -v nvcc 2>/dev/null || ls /usr/local/cuda/bin/nvcc 2>/dev/null)
CUDA    ?= $(if $(and $(NVCC),$(wildcard src/backend/cuda/*.cu)),1,0)
CUDA_HOME ?= $(patsubst %/bin/nvcc,%,$(NVCC))
NVFLAGS ?= -O3 -std=c++17 -gencode arch=compute_90,code=sm_90 -gencode arch=compute_90,code=compute_90 \
           -Xcompiler -Wall -Iinclude -Isrc -MMD -MP -lineinfo

LIB_SRC := $(shell find src -name '*.c' ! -path 'src/cli/*' | sort)
CLI_SRC := $(wildcard src/cli/*.c)
CU_SRC  := $(if $(filter 1,$(CUDA)),$(shell find src -name '*.cu' | sort))
LIB_OBJ := $(LIB_SRC:%.c=$(BUILD)/obj/%.o) $(CU_SRC:%.cu=$(BUILD)/obj/%.cu.o)
CLI_OBJ := $(CLI_SRC:%.c=$(BUILD)/obj/%.o)
TEST_SRC := $(wildcard tests/test_*.c)
TEST_BIN := $(TEST_SRC:tests/%.c=$(BUILD)/tests/%)
GPU_TEST_SRC := $(wildcard tests/gpu/gpu_test_*.c)
GPU_TEST_BIN := $(GPU_TEST_SRC:tests/gpu/%.c=$(BUILD)/tests/%)

# PORTABLE=1: link libpng, libjpeg and zlib statically and find the other shared libraries
# (cJSON, cmocka) beside the binaries, for running a build on another machine (the GPU host).
ifeq ($(PORTABLE),1)
LDLIBS  := -Wl,-Bstatic -lpng16 -ljpeg -lz -Wl,-Bdynamic -lcjson -lm -fopenmp -lpthread \
           -Wl,-rpath,'$$ORIGIN:$$ORIGIN/..'
PORTABLE_LIBS := $(BUILD)/libcjson.so.1 $(BUILD)/libcmocka.so.0
$(BUILD)/libcjson.so.1:
	@mkdir -p $(@D)
	cp -L /usr/lib/x86_64-linux-gnu/$(@F) $@
$(BUILD)/libcmocka.so.0:
	@mkdir -p $(@D)
	cp -L /usr/lib/x86_64-linux-gnu/$(@F) $@
endif

ifeq ($(CUDA),1)
CFLAGS  += -DSPLAT_HAVE_CUDA=1
LDLIBS  += -L$(CUDA_HOME)/lib64 -lcudart_static -ldl -lrt -lstdc++
endif

GIT_COMMIT := $(shell git rev-parse --short HEAD 2>/dev/null || echo unknown)
# Only version.o carries the commit; it is rebuilt whenever the commit changes.
$(BUILD)/obj/src/core/version.o: CFLAGS += -DSPLAT_COMMIT=\"$(GIT_COMMIT)\"
$(BUILD)/obj/src/core/version.o: $(BUILD)/commit.stamp
$(BUILD)/commit.stamp: FORCE
	@mkdir -p $(@D)
	@echo '$(GIT_COMMIT)' | cmp -s - $@ || echo '$(GIT_COMMIT)' > $@
FORCE:

.PHONY: FORCE all splat lib tests gpu-tests test demo gpu-test clean setup bench
all: splat tests

splat: $(BUILD)/splat
lib: $(BUILD)/libsplat.a
tests: $(TEST_BIN)
gpu-tests: $(GPU_TEST_BIN)

$(BUILD)/libsplat.a: $(LIB_OBJ)
	@mkdir -p $(@D)
	rm -f $@ && ar rcs $@ $^

$(BUILD)/splat: $(CLI_OBJ) $(BUILD)/libsplat.a $(PORTABLE_LIBS)
	$(CC) $(CFLAGS) -o $@ $(CLI_OBJ) $(BUILD)/libsplat.a $(LDLIBS)

$(BUILD)/obj/%.o: %.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -c -o $@ $<

$(BUILD)/obj/%.cu.o: %.cu
	@mkdir -p $(@D)
	$(NVCC) $(NVFLAGS) -c -o $@ $<

$(BUILD)/tests/%: tests/%.c tests/testutil.h $(BUILD)/libsplat.a $(PORTABLE_LIBS)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -Itests -o $@ $< $(BUILD)/libsplat.a $(LDLIBS) -lcmocka

# The parity harness's helpers (tests/parity.h, tests/backend_ops_*.h).
$(BUILD)/tests/test_backend_ops: $(wildcard tests/parity.h tests/backend_ops_*.h)

$(BUILD)/tests/gpu_test_%: tests/gpu/gpu_test_%.c tests/testutil.h $(BUILD)/libsplat.a $(PORTABLE_LIBS)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -Itests -o $@ $< $(BUILD)/libsplat.a $(LDLIBS) -lcmocka

setup:
	@bash scripts/setup.sh

# The README's test command.
test: setup
	@$(MAKE) --no-print-directory all
	@bash tests/run.sh $(BUILD)/tests

gpu-test: setup
	@$(MAKE) --no-print-directory all $(GPU_TEST_BIN)
	@bash tests/run.sh $(BUILD)/tests gpu_test_

demo: setup
	@$(MAKE) --no-print-directory splat
	@bash scripts/demo.sh

clean:
	rm -rf $(BUILD)

-include $(shell find $(BUILD)/obj -name '*.d' 2>/dev/null)
