# dred -- task-parallel, fault-tolerant reduction service for MPI programs.
#
#   make            build dred-master, libdred (.so/.a), dredrun, dred-demo
#   make run        install what is missing, build, run the demo job
#   make test       install what is missing, build, run every test
#   make check      unit tests + a few fast MPI cases (the edit-compile-test loop, < 1 min)
#   make asan       the same tests under AddressSanitizer/UBSan (build-asan/)
#   make tsan       the threaded MPI cases under ThreadSanitizer (build-tsan/)
#   make install PREFIX=dir
#   make interpose-test   unmodified MPI programs on dred through libdred-mpi.so
#
# The folders are the layers (docs/design.md, "Code layout and layers"; make layers-check).
# Objects are split in two: CORE (common/, storage/, lib/shm/, master/sched/) has no MPI in
# it and links into the CMocka unit tests with plain cc; everything else is built with mpicc.
# libdred is common/ + storage/ (without the master's journal) + lib/: never the master's
# scheduler.  Its objects are compiled with -fvisibility=hidden; the public API is marked
# DRED_EXTERN (include/dred.h) and `make symbols-check` holds libdred.so to it.  dred-master
# is master/ + common/ + storage/: nothing of lib/.

BUILD   ?= build
PREFIX  ?= /usr/local
CC      ?= cc
MPICC   ?= mpicc
OPT     ?= -O2 -g
SAN     ?=
WARN    := -Wall -Wextra -Werror -Wno-unused-parameter
CFLAGS  := -std=gnu11 $(OPT) $(WARN) -fPIC -pthread $(SAN) -Iinclude -iquote common
# Objects (build/obj/) are what the libraries are made of: hidden unless marked DRED_EXTERN.
# Programs built straight from their source keep default visibility, so hooks the
# sanitizer runtime looks up dynamically (__lsan_default_suppressions in test_kernel)
# are still found.
OBJ_CFLAGS := $(CFLAGS) -fvisibility=hidden
LDLIBS  := -luv -lsqlite3 -lm -pthread
MPIRUN  ?= mpiexec
MPIF90  ?= mpif90

# The scheduler (master/sched/: sched.c + its recovery rules, sched_recover.c, its
# node-by-node pairing, sched_nodes.c, and its allreduce/bcast rules, sched_distribute.c): no
# MPI, so it is CORE, linked into dred-master, the unit tests, the fuzzer and sched_bench.
# lib/shm/ (the meeting place, the pool allocator, the segment checks) has no MPI either: CORE
# too, in libdred and the unit tests, never in dred-master.
SCHED_SRC  := $(wildcard master/sched/*.c)
SHM_SRC    := $(wildcard lib/shm/*.c)
CORE_SRC   := $(wildcard common/*.c) $(wildcard storage/*.c) $(SHM_SRC) $(SCHED_SRC)
COMMON_MPI_SRC := $(wildcard common/mpi/*.c)
LIBDRED_SRC := $(filter-out $(SHM_SRC),$(wildcard lib/*/*.c)) $(COMMON_MPI_SRC)
MASTER_SRC := $(wildcard master/*.c) $(COMMON_MPI_SRC)
UNIT_SRC   := $(wildcard tests/unit/test_*.c)
MPI_TEST_SRC := $(filter-out tests/mpi/mpitest.c,$(wildcard tests/mpi/*.c))

CORE_OBJ   := $(patsubst %.c,$(BUILD)/obj/%.o,$(CORE_SRC))
LIB_CORE_OBJ := $(filter-out $(BUILD)/obj/master/% $(BUILD)/obj/storage/journal.o,$(CORE_OBJ))
MASTER_CORE_OBJ := $(filter-out $(BUILD)/obj/lib/%,$(CORE_OBJ))
LIBDRED_OBJ := $(patsubst %.c,$(BUILD)/obj/%.o,$(LIBDRED_SRC))
MASTER_OBJ := $(patsubst %.c,$(BUILD)/obj/%.o,$(MASTER_SRC))

LIB_A   := $(BUILD)/lib/libdred.a
LIB_SO  := $(BUILD)/lib/libdred.so
# libdred-mpi.so (interpose/): MPI's profiling interface in front of libmpi, so unmodified
# MPI programs reduce through dred (`dredrun --mpi`).  Linked against libdred.so, found
# beside it ($ORIGIN) in the build and the installed tree; it carries its own hidden copy
# of dred's datatype/op check (lib/engine/typecheck.c) and settings parser (common/config.c),
# which libdred.so does not export.
LIB_MPI_SO := $(BUILD)/lib/libdred-mpi.so
INTERPOSE_SRC := $(wildcard interpose/*.c)
INTERPOSE_OBJ := $(patsubst %.c,$(BUILD)/obj/%.o,$(INTERPOSE_SRC)) \
  $(addprefix $(BUILD)/obj/,lib/engine/typecheck.o common/config.o common/settings.o common/log.o storage/storedir.o)
MASTER  := $(BUILD)/bin/dred-master
DEMO    := $(BUILD)/bin/dred-demo
DREDRUN := $(BUILD)/bin/dredrun
LAUNCH  := $(BUILD)/bin/dred-launch
DREDSTAT := $(BUILD)/bin/dredstat
# Prints common/settings.h's table as the docs' table and man entries (make settings-check);
# built with everything, never installed.
SETTINGS_DOC := $(BUILD)/bin/dred-settings
MAN1    := man/dred-master.1 man/dredrun.1 man/dredstat.1
MAN3    := man/dred.3
UNIT_BIN := $(patsubst tests/unit/%.c,$(BUILD)/tests/%,$(UNIT_SRC))
MPI_TEST_BIN := $(patsubst tests/mpi/%.c,$(BUILD)/tests/mpi_%,$(MPI_TEST_SRC))
MPITEST_OBJ := $(BUILD)/obj/tests/mpi/mpitest.o

.PHONY: bench-coll interpose-test fuzz fuzz-build all deps run test check readme-check symbols-check layers-check unit-test mpi-test tools-test deploy-test man-check settings-check fault-test faults bench sched-bench kernel-bench asan tsan tsan-run install clean
FAULT_APP := $(BUILD)/tests/fault_app
TRIALS  ?= 100
WORKERS ?= 8
BYTES   ?= 32M
MODE    ?= worker
all: $(LIB_A) $(LIB_SO) $(LIB_MPI_SO) $(MASTER) $(DREDRUN) $(LAUNCH) $(DREDSTAT) $(DEMO) $(SETTINGS_DOC)

deps:
	@bash deploy/install-deps.sh

# CORE objects never see mpi.h: compile them with the plain compiler.
$(CORE_OBJ): CC_USE := $(CC)
$(BUILD)/obj/%.o: %.c $(wildcard */*.h */*/*.h)
	@mkdir -p $(dir $@)
	@echo "  CC      $<"
	@$(if $(CC_USE),$(CC_USE),$(MPICC)) $(OBJ_CFLAGS) -c $< -o $@

# The kernels' target_clones resolvers run while the program is being loaded, before
# ThreadSanitizer's runtime is up: instrumented, they crash it (make tsan).  They are pure
# arithmetic on one thread's buffers, so nothing is lost leaving them uninstrumented.
$(BUILD)/obj/lib/engine/kernel.o: OBJ_CFLAGS := $(filter-out -fsanitize=thread,$(OBJ_CFLAGS))

$(LIB_A): $(LIBDRED_OBJ) $(LIB_CORE_OBJ)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

$(LIB_SO): $(LIBDRED_OBJ) $(LIB_CORE_OBJ)
	@mkdir -p $(dir $@)
	$(MPICC) -shared $(SAN) -o $@ $^ $(LDLIBS)

$(LIB_MPI_SO): $(INTERPOSE_OBJ) $(LIB_SO)
	@mkdir -p $(dir $@)
	$(MPICC) -shared $(SAN) -o $@ $(INTERPOSE_OBJ) -L$(dir $(LIB_SO)) -ldred \
	  -Wl,-rpath,'$$ORIGIN' $(LDLIBS)

$(MASTER): $(MASTER_OBJ) $(MASTER_CORE_OBJ)
	@mkdir -p $(dir $@)
	$(MPICC) $(SAN) -o $@ $^ $(LDLIBS)

$(DEMO): tests/demo/demo.c tests/mpi/sleepy_wait.h $(LIB_A)
	@mkdir -p $(dir $@)
	$(MPICC) $(CFLAGS) -o $@ $< $(LIB_A) $(LDLIBS)

# dred-launch stays small (no libuv, no MPI): its source plus the settings table and the
# logger that reports a bad setting.
LAUNCH_OBJ := $(addprefix $(BUILD)/obj/,common/settings.o common/log.o)
$(LAUNCH): tools/dred-launch.c $(LAUNCH_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $^

$(SETTINGS_DOC): tools/dred-settings.c $(LAUNCH_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $^

# dredstat takes the journal's schema from storage/journal.c and the task outcome names
# from common/proto.c, so it links those (and what they need) rather than copy them.
DREDSTAT_OBJ := $(addprefix $(BUILD)/obj/,common/log.o common/settings.o common/privdir.o common/status.o common/sockpath.o \
  common/proto.o storage/journal.o storage/sqlite_util.o storage/storedir.o)
$(DREDSTAT): tools/dredstat.c $(DREDSTAT_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS)

$(DREDRUN): deploy/dredrun
	@mkdir -p $(dir $@)
	cp $< $@ && chmod +x $@

$(BUILD)/tests/test_%: tests/unit/test_%.c $(CORE_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $< $(CORE_OBJ) -lcmocka $(LDLIBS)

# test_kernel compares lib/engine/kernel.c with MPI_Reduce_local: it needs MPI (mpicc, a
# singleton MPI_Init), lib/engine/typecheck.c, and kernel.c built again without AVX2 clones.
KERNEL_TEST_OBJ := $(BUILD)/obj/lib/engine/kernel.o $(BUILD)/obj/lib/engine/kernel_baseline.o \
  $(BUILD)/obj/lib/engine/typecheck.o
$(BUILD)/obj/lib/engine/kernel_baseline.o: lib/engine/kernel.c lib/engine/kernel.h
	@mkdir -p $(dir $@)
	@echo "  CC      $< (baseline)"
	@$(MPICC) $(OBJ_CFLAGS) -DDRED_KERNEL_BASELINE -c $< -o $@
$(BUILD)/tests/test_kernel: tests/unit/test_kernel.c $(KERNEL_TEST_OBJ) $(CORE_OBJ)
	@mkdir -p $(dir $@)
	$(MPICC) $(CFLAGS) -o $@ $< $(KERNEL_TEST_OBJ) $(CORE_OBJ) -lcmocka $(LDLIBS)

# test_typecheck checks lib/engine/typecheck.c's table against MPICH's MPI_Reduce_local (in
# child processes) and its layouts of derived types: MPI too, like test_kernel.
$(BUILD)/tests/test_typecheck: tests/unit/test_typecheck.c $(BUILD)/obj/lib/engine/typecheck.o $(CORE_OBJ)
	@mkdir -p $(dir $@)
	$(MPICC) $(CFLAGS) -o $@ $< $(BUILD)/obj/lib/engine/typecheck.o $(CORE_OBJ) -lcmocka $(LDLIBS)

# Every MPI test links the shared scaffolding tests/mpi/mpitest.c (see mpitest.h); naming
# its object as a target keeps make from deleting it as an intermediate file.
$(MPITEST_OBJ): tests/mpi/mpitest.c tests/mpi/mpitest.h
$(BUILD)/tests/mpi_%: tests/mpi/%.c tests/mpi/mpitest.h $(MPITEST_OBJ) $(LIB_A)
	@mkdir -p $(dir $@)
	$(MPICC) $(CFLAGS) -o $@ $< $(MPITEST_OBJ) $(LIB_A) $(LDLIBS)

# The same lifetimes test linked with a shared libdred instead of libdred.a: libdred's
# MPI_Op_free/MPI_Type_free wrappers (lib/engine/lifetime.c) must take effect either way.  The
# test also reads libdred's internal counters (dred_lifetime_stats), which the real
# libdred.so does not export; so it links a test copy of libdred.so, made of the same
# objects except lib/engine/lifetime.c compiled with default visibility.  That the real one
# exports the wrappers is symbols-check's part.
LIFETIMES_SO := $(BUILD)/tests/mpi_lifetimes_so
LIB_SO_TEST := $(BUILD)/tests/lib/libdred.so
LIFETIME_EXPORTED_OBJ := $(BUILD)/obj/tests/lifetime_exported.o
$(LIFETIME_EXPORTED_OBJ): lib/engine/lifetime.c $(wildcard */*.h */*/*.h)
	@mkdir -p $(dir $@)
	@echo "  CC      $< (default visibility)"
	@$(MPICC) $(CFLAGS) -fvisibility=default -c $< -o $@
$(LIB_SO_TEST): $(filter-out $(BUILD)/obj/lib/engine/lifetime.o,$(LIBDRED_OBJ)) $(LIB_CORE_OBJ) \
  $(LIFETIME_EXPORTED_OBJ)
	@mkdir -p $(dir $@)
	$(MPICC) -shared $(SAN) -o $@ $^ $(LDLIBS)
$(LIFETIMES_SO): tests/mpi/lifetimes.c tests/mpi/mpitest.h $(MPITEST_OBJ) $(LIB_SO_TEST)
	@mkdir -p $(dir $@)
	$(MPICC) $(CFLAGS) -o $@ $< $(MPITEST_OBJ) -L$(dir $(LIB_SO_TEST)) \
	  -Wl,-rpath,$(abspath $(dir $(LIB_SO_TEST))) -ldred $(LDLIBS)

# libdred.so's dynamic symbols must be exactly the functions declared DRED_EXTERN in
# include/dred.h plus the MPI_Op_free/MPI_Type_free wrappers (tests/check-symbols.sh).
symbols-check: $(LIB_SO)
	@bash tests/check-symbols.sh $(LIB_SO)

# The folders are the layers (tests/check-layers.sh, on the built objects): common/ and
# storage/ use nothing above them, lib/shm/ and master/sched/ no MPI, lib/ (libdred) and
# master/ (dred-master) share only the floor, and libdred's engine (lib/engine, lib/paths,
# lib/mpi) reaches the robust layer (lib/robust) only through rt->robust.
layers-check: all
	@bash tests/check-layers.sh $(BUILD)

run: deps all
	$(DREDRUN) -n 8 $(DEMO)

unit-test: $(UNIT_BIN)
	@bash tests/run-unit.sh $(UNIT_BIN)

mpi-test: all $(MPI_TEST_BIN) $(LIFETIMES_SO)
	@BUILD=$(BUILD) bash tests/run-mpi.sh

# make check: the edit-compile-test loop, under a minute on 2 cores -- the unit tests and a
# handful of fast MPI cases (=NAME: that case exactly, see tests/run-mpi.sh): reductions of
# every kind on sub-groups, start-up and shutdown, simulated nodes, hostile messages, and
# dred-master beside the job.
CHECK_CASES := =groups-p4 =lifecycle-self =inplace-p4@abc =hostile-offset =ext-world-p4
CHECK_BIN := $(addprefix $(BUILD)/tests/mpi_,groups lifecycle inplace hostile)
check: all $(UNIT_BIN) $(CHECK_BIN)
	@bash tests/run-unit.sh $(UNIT_BIN)
	@BUILD=$(BUILD) bash tests/run-mpi.sh $(CHECK_CASES)

# README.md's C programs, compiled against a staged `make install` with pkg-config and run
# under its dredrun (tests/check-readme.sh).
readme-check: all
	@BUILD=$(BUILD) bash tests/check-readme.sh

# The node-loss hang without dred (tests/faults/fifo-block.sh runs it): not part of `all`.
$(BUILD)/tests/fifo_block: tests/faults/fifo_block.c $(BUILD)/obj/common/settings.o $(BUILD)/obj/common/log.o
	@mkdir -p $(dir $@)
	$(MPICC) $(CFLAGS) -o $@ $< $(BUILD)/obj/common/settings.o $(BUILD)/obj/common/log.o

# An MPI_Rget that never completes, for tests/faults/stall-read.sh (fault-test).
$(BUILD)/tests/libstall_rget.so: tests/faults/stall_rget.c
	@mkdir -p $(dir $@)
	$(MPICC) $(CFLAGS) -shared -o $@ $<

# One reduce whose disagreeing member dies before its READY (tests/faults/unseen-mismatch.sh).
$(BUILD)/tests/mismatch_app: tests/faults/mismatch_app.c $(LIB_A)
	@mkdir -p $(dir $@)
	$(MPICC) $(CFLAGS) -o $@ $< $(LIB_A) $(LDLIBS)

$(FAULT_APP): tests/faults/fault_app.c tests/mpi/sleepy_wait.h lib/engine/kernel.h $(LIB_A)
	@mkdir -p $(dir $@)
	$(MPICC) $(CFLAGS) -o $@ $< $(LIB_A) $(LDLIBS)

# dred-bench: bench.c (main), its harness and command line, and one file per scenario family
# (tests/bench/bench.h lists them).  Named one by one, not tests/bench/bench_*.c: a file there
# that is a program of its own must not be linked in.  Hidden visibility: the program's short
# global names (rank, P, check, ...) must never interpose on a shared library's.
BENCH := $(BUILD)/bin/dred-bench
BENCH_SRC := $(addprefix tests/bench/,bench.c bench_harness.c bench_args.c bench_single.c \
  bench_concurrent.c bench_small.c bench_loop.c bench_overlap.c bench_bound.c)
$(BENCH): $(BENCH_SRC) tests/bench/bench.h tests/mpi/sleepy_wait.h $(LIB_A)
	@mkdir -p $(dir $@)
	$(MPICC) $(CFLAGS) -fvisibility=hidden -o $@ $(BENCH_SRC) $(LIB_A) $(LDLIBS)

# allreduce and bcast, dred against MPI in the same job (tests/bench/bench_collectives.c)
BENCH_COLL := $(BUILD)/bin/dred-bench-coll
$(BENCH_COLL): tests/bench/bench_collectives.c tests/mpi/sleepy_wait.h $(LIB_A)
	@mkdir -p $(dir $@)
	$(MPICC) $(CFLAGS) -o $@ $< $(LIB_A) $(LDLIBS)
bench-coll: $(BENCH_COLL)

# The scheduler alone (no MPI): events/s through master/sched/; SCHED_BENCH_ARGS=--quick etc.
SCHED_BENCH := $(BUILD)/bin/dred-sched-bench
$(SCHED_BENCH): tests/bench/sched_bench.c $(CORE_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $< $(CORE_OBJ) $(LDLIBS)

sched-bench: $(SCHED_BENCH)
	$(SCHED_BENCH) $(SCHED_BENCH_ARGS)

# make kernel-bench: GB/s of lib/engine/kernel.c's SUM/double kernel against MPI_Reduce_local.
KERNEL_BENCH := $(BUILD)/bin/kernel-bench
$(KERNEL_BENCH): tests/bench/kernel_bench.c $(BUILD)/obj/lib/engine/kernel.o \
  $(BUILD)/obj/lib/engine/kernel_baseline.o $(BUILD)/obj/common/settings.o $(BUILD)/obj/common/log.o
	@mkdir -p $(dir $@)
	$(MPICC) $(CFLAGS) -o $@ $^ $(LDLIBS)
kernel-bench: $(KERNEL_BENCH)
	$(KERNEL_BENCH)

# make bench: quick mode (p = 8); BENCH_ARGS=--full for docs/performance.md's tables and plots.
# run-bench.sh runs dred-bench and dred-bench-coll (allreduce and bcast).
bench: deps all $(BENCH) $(BENCH_COLL) $(SCHED_BENCH)
	@BUILD=$(BUILD) bash tests/bench/run-bench.sh $(BENCH_ARGS)
	@mkdir -p $(BUILD)/bench && bash -o pipefail -c '$(SCHED_BENCH) | tee $(BUILD)/bench/sched-bench.txt'

# The short fault run of `make test` (tests/faults/short.sh says what each part checks):
# worker kills on one node and on 3 simulated nodes, root and master kills, kills right after
# the call, node losses, the master's node lost, stalls, deaths inside an absorption, and
# the randomized mix with a member or a node killed in it.
fault-test: all $(FAULT_APP) $(BUILD)/tests/mpi_mix $(BUILD)/tests/libstall_rget.so \
  $(BUILD)/tests/mismatch_app
	@BUILD=$(BUILD) bash tests/faults/short.sh

# make faults TRIALS=100 WORKERS=8 BYTES=32M MODE=worker|root|master|two|concurrent|node|masternode|all
# (node, masternode: 3 simulated nodes; `make faults MODE=node WORKERS=8 BYTES=8M`)
faults: all $(FAULT_APP)
	@BUILD=$(BUILD) bash tests/faults/run-faults.sh --trials $(TRIALS) --workers $(WORKERS) \
	  --bytes $(BYTES) --mode $(MODE)

# libFuzzer targets (tests/fuzz/): the control-message decoder and the scheduler, built
# with clang -fsanitize=fuzzer,address,undefined and each run for FUZZ_SECONDS (make test:
# 10 s each).  The corpora grow in $(BUILD)/fuzz/corpus-*/ between runs.  Without a clang
# that has libFuzzer, say so and skip (the CMocka round trip in test_proto still runs).
FUZZ_CC      ?= clang
FUZZ_SECONDS ?= 60
FUZZ_FLAGS   := -std=gnu11 -O1 -g -Wall -Wextra -Werror -Wno-unused-parameter \
  -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -Iinclude -iquote common
FUZZ_BIN     := $(BUILD)/fuzz/fuzz_proto $(BUILD)/fuzz/fuzz_sched
$(BUILD)/fuzz/fuzz_proto: tests/fuzz/fuzz_proto.c tests/fuzz/proto_roundtrip.h common/proto.c common/proto.h
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_FLAGS) -o $@ tests/fuzz/fuzz_proto.c common/proto.c
FUZZ_SCHED_SRC := tests/fuzz/fuzz_sched.c $(SCHED_SRC) common/placement.c common/proto.c \
  common/keymap.c
$(BUILD)/fuzz/fuzz_sched: $(FUZZ_SCHED_SRC) master/sched/sched.h master/sched/sched_internal.h \
  common/placement.h common/proto.h common/keymap.h
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_FLAGS) -Icommon -o $@ $(FUZZ_SCHED_SRC)
fuzz-build: $(FUZZ_BIN)
fuzz:
	@if ! printf 'int LLVMFuzzerTestOneInput(const char *d, long n){return 0;}' | \
	    $(FUZZ_CC) -x c -fsanitize=fuzzer -o /dev/null - 2>/dev/null; then \
	  echo "fuzz: skipped: $(FUZZ_CC) with libFuzzer not available (apt-get install clang)"; \
	  exit 0; fi; \
	$(MAKE) --no-print-directory fuzz-build || exit 1; \
	for f in $(FUZZ_BIN); do \
	  c=$(BUILD)/fuzz/corpus-$$(basename $$f); mkdir -p $$c; \
	  echo "fuzz: $$f for $(FUZZ_SECONDS) s"; \
	  $$f -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 -artifact_prefix=$(BUILD)/fuzz/ \
	    $$c >$(BUILD)/fuzz/$$(basename $$f).log 2>&1 \
	    || { tail -40 $(BUILD)/fuzz/$$(basename $$f).log; echo "fuzz: $$f FAILED"; exit 1; }; \
	  grep -E '^stat::number_of_executed_units' $(BUILD)/fuzz/$$(basename $$f).log | sed 's/^/  /'; \
	done; echo "fuzz: ok"

# Unmodified MPI programs (plain mpicc/mpif90, no dred header) on dred through
# libdred-mpi.so: tests/interpose/run.sh says what each case checks.
INTERPOSE_TEST_BIN := $(addprefix $(BUILD)/tests/interpose/,reduce_app coll_app bottom_app mix_app fault_app reduce_f bench py_app)
$(BUILD)/tests/interpose/%: tests/interpose/%.c tests/interpose/app.h
	@mkdir -p $(dir $@)
	$(MPICC) -std=gnu11 $(OPT) $(WARN) -o $@ $<
# A Python program through ctypes; the MPI handles it needs, from this build's mpi.h.
$(BUILD)/tests/interpose/py_app: tests/interpose/py_app.py $(BUILD)/tests/interpose/mpi_consts.py
	cp $< $@ && chmod +x $@
$(BUILD)/tests/interpose/mpi_consts.py: $(BUILD)/tests/interpose/py_consts
	$< >$@
$(BUILD)/tests/interpose/reduce_f: tests/interpose/reduce_f.f90
	@mkdir -p $(dir $@)
	$(MPIF90) -O2 -o $@ $<
interpose-test: all $(INTERPOSE_TEST_BIN)
	@BUILD=$(BUILD) bash tests/interpose/run.sh

tools-test: all
	@BUILD=$(BUILD) bash tests/tools/test-dredstat.sh
	@BUILD=$(BUILD) bash tests/tools/test-settings.sh
	@BUILD=$(BUILD) bash tests/tools/test-launch.sh
	@BUILD=$(BUILD) bash tests/tools/test-beside.sh

deploy-test: all $(FAULT_APP)
	@bash tests/deploy/check-deploy.sh

# Every DRED_* setting is one row of common/settings.h: docs/configuration.md's table and the
# man pages' ENVIRONMENT entries follow it, and no code reads a DRED_* variable around it
# (tests/check-settings.sh; `bash tests/check-settings.sh build --update` regenerates).
settings-check: $(SETTINGS_DOC)
	@bash tests/check-settings.sh $(BUILD)

man-check:
	@for f in $(MAN1) $(MAN3); do groff -man -Tutf8 -ww -z $$f || exit 1; done; echo "man pages: ok"

test: deps
	@$(MAKE) --no-print-directory all
	@$(MAKE) --no-print-directory symbols-check
	@$(MAKE) --no-print-directory layers-check
	@$(MAKE) --no-print-directory unit-test
	@$(MAKE) --no-print-directory fuzz FUZZ_SECONDS=10
	@$(MAKE) --no-print-directory mpi-test
	@$(MAKE) --no-print-directory interpose-test
	@$(MAKE) --no-print-directory fault-test
	@$(MAKE) --no-print-directory tools-test
	@$(MAKE) --no-print-directory deploy-test
	@$(MAKE) --no-print-directory man-check
	@$(MAKE) --no-print-directory settings-check
	@$(MAKE) --no-print-directory readme-check

# Unit tests run with leak checking; the MPI tests without it: MPICH/UCX leave allocations
# of modules they unload at MPI_Finalize ("<unknown module>" frames), which LSan reports.
asan: deps
	@$(MAKE) --no-print-directory BUILD=build-asan OPT="-O1 -g" \
	  SAN="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined" \
	  unit-test
	@ASAN_OPTIONS=detect_leaks=0 $(MAKE) --no-print-directory BUILD=build-asan OPT="-O1 -g" \
	  SAN="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined" \
	  mpi-test

# ThreadSanitizer over the cases where threads meet: application threads calling at once,
# the runtime thread, the meeting place and the relays, on one node and on simulated
# nodes.  UCX's memory hooks patch mmap/munmap, which ThreadSanitizer intercepts too: with
# both, even a plain MPI program crashes in MPI_Finalize, so the hooks are off here.  Any
# report makes its process exit 66 and the case fail.  Not part of `make test` (about 5
# minutes on 2 cores); docs/testing.md says when to run it.
TSAN_CASES := =threads-p3 =threads-p5@abc =concurrent-p3 =concurrent@abcd =mix-p5 =mix-p8@abc \
  =meet-p5 =nblane-p2 =progress-p4 =allreduce-p5 =bcast-relay@abc =allreduce-relay@abc \
  =partial-p8@abc =limits-wait-meet =allocmem-p4 =lifecycle-self =allreduce-p3
tsan: deps
	@$(MAKE) --no-print-directory BUILD=build-tsan OPT="-O1 -g -Wno-tsan" SAN="-fsanitize=thread" \
	  tsan-run
tsan-run: all $(MPI_TEST_BIN) $(LIFETIMES_SO)
	@UCX_MEM_EVENTS=no UCX_MEM_MALLOC_HOOKS=no UCX_MEM_MMAP_HOOK_MODE=none \
	  TSAN_OPTIONS="halt_on_error=0 $(TSAN_OPTIONS)" DRED_TEST_TIMEOUT_SCALE=4 \
	  BUILD=$(BUILD) bash tests/run-mpi.sh $(TSAN_CASES)

install: all
	install -d $(PREFIX)/include $(PREFIX)/lib/pkgconfig $(PREFIX)/bin
	install -m 644 include/dred.h include/dred_status.h $(PREFIX)/include/
	install -m 644 $(LIB_A) $(LIB_SO) $(PREFIX)/lib/
	install -m 755 $(MASTER) $(PREFIX)/bin/
	install -m 755 deploy/dredrun $(PREFIX)/bin/dredrun
	install -m 755 $(LAUNCH) $(PREFIX)/bin/dred-launch
	install -m 755 $(DREDSTAT) $(PREFIX)/bin/
	install -d $(PREFIX)/share/man/man1 $(PREFIX)/share/man/man3
	install -m 644 $(MAN1) $(PREFIX)/share/man/man1/
	install -m 644 $(MAN3) $(PREFIX)/share/man/man3/
	sed -e 's|@PREFIX@|$(PREFIX)|g' deploy/dred.pc.in > $(PREFIX)/lib/pkgconfig/dred.pc
	install -m 755 $(LIB_MPI_SO) $(PREFIX)/lib/
	sed -e 's|@PREFIX@|$(PREFIX)|g' deploy/dred-mpi.pc.in > $(PREFIX)/lib/pkgconfig/dred-mpi.pc

clean:
	rm -rf build build-asan build-tsan
