/*
 * settings.h -- the one table of dred's DRED_* environment settings.
 *
 * Every setting any part of dred reads (libdred, dred-master, libdred-mpi, dred-launch,
 * dredstat, and the shell launchers dredrun and dred.sbatch) is one row of
 * DRED_SETTINGS below: its name, its type, its default, its range, which process reads it
 * and one line of meaning.  Everything else is made from this list:
 *   - common/settings.c turns it into the array dred_settings[] and the accessors below,
 *     the only place that calls getenv() on a DRED_* name;
 *   - common/config.c loads the numeric rows marked C into dred_config_t;
 *   - build/bin/dred-settings (tools/dred-settings.c) prints it as docs/configuration.md's
 *     table and as man-page ENVIRONMENT entries, and dred-master --help lists the master's
 *     rows;
 *   - tests/check-settings.sh (make settings-check) fails when the docs, the man pages or
 *     a getenv/shell expansion anywhere disagree with it.
 * So a new setting is one row here (and its use); nothing else can forget it silently.
 *
 * An X-macro: DRED_SETTINGS(C, N, T) expands one of three macros per row, in the order
 * the docs show them:
 *   C(NAME, field, def, lo, hi, by, meaning)  unsigned number in [lo, hi], loaded by
 *                                             dred_config_load into dred_config_t.field;
 *   N(NAME, def, lo, hi, by, meaning)         unsigned number in [lo, hi], read where it is
 *                                             used (dred_setting_u64) or by a shell script;
 *   T(NAME, def, form, by, meaning)           text, parsed by its reader; `def` and `form`
 *                                             are words for the docs, not parsed.
 * NAME is the variable without its DRED_ prefix; `by` is a mask of DRED_BY_*; `meaning`
 * is markdown (backquotes for code), one line.  Out-of-range numbers are logged and
 * replaced by the default (DRED_MPI_* are strict instead: dred_config_load_mpi).
 *
 * Header-only apart from the accessors, no dependencies: tools that are not part of
 * dred's libraries can include it.
 */
#ifndef DRED_SETTINGS_H
#define DRED_SETTINGS_H

#include <stddef.h>
#include <stdint.h>

/* Who reads a setting.  Worker is libdred in each application process, master is
 * dred-master; the rest are named after the program (or script) that reads them. */
#define DRED_BY_WORKER 0x01u
#define DRED_BY_MASTER 0x02u
#define DRED_BY_ALL (DRED_BY_WORKER | DRED_BY_MASTER)
#define DRED_BY_MPI 0x04u    /* libdred-mpi.so (interpose/) */
#define DRED_BY_LAUNCH 0x08u /* dred-launch */
#define DRED_BY_STAT 0x10u   /* dredstat */
#define DRED_BY_RUN 0x20u    /* dredrun (shell) */
#define DRED_BY_SBATCH 0x40u /* deploy/slurm/dred.sbatch (shell) */

/* Longest accepted storage directory, in bytes (DRED_STORAGE_DIR's range).  Leaves room,
 * within the 512-byte paths of common/config.h, for
 * "/job-<id>/dred-replica-4294967295.db-journal".  storage/storedir.c enforces it. */
#define DRED_STOREDIR_MAX 400

/* The defaults of libdred-mpi's thresholds, from tests/interpose/bench.c (docs/performance.md,
 * 2026-11-29: interposed calls against MPICH's own in the same job).  A communicator whose
 * processes span nodes pairs through dred-master: there dred's reduce measured faster from
 * 512 KiB, its allreduce and bcast slower at every size up to 8 MiB -- so DRED_MPI_MIN_BYTES
 * is 1 MiB and DRED_MPI_COLL_MIN_BYTES 2^40 (above any real message: all to MPI unless
 * asked).  On one node the members meet in shared memory: there reduce, allreduce and
 * bcast measured faster than MPI's from 32 KiB, at p = 2 and at p = 8, so such a
 * communicator's calls go to dred from DRED_MPI_NODE_MIN_BYTES. */
#define DRED_MPI_MIN_BYTES_DEFAULT 1048576
#define DRED_MPI_COLL_MIN_BYTES_DEFAULT ((uint64_t)1 << 40)
#define DRED_MPI_NODE_MIN_BYTES_DEFAULT 32768

#define DRED_SETTINGS_STR_(x) #x
#define DRED_SETTINGS_STR(x) DRED_SETTINGS_STR_(x)

/* clang-format off */
#define DRED_SETTINGS(C, N, T) \
  T(STORAGE_DIR, "`$XDG_RUNTIME_DIR/dred` if private, else `/tmp/dred-<uid>`, or a fresh `/tmp/dred-<uid>-XXXXXX` when that one is another user's (dredrun picks it once for the job: `dred-master --print-storage`)", \
    "path up to " DRED_SETTINGS_STR(DRED_STOREDIR_MAX) " bytes", \
    DRED_BY_ALL | DRED_BY_STAT | DRED_BY_RUN | DRED_BY_SBATCH, \
    "base of the per-job directories `job-<id>` (replica stores, journal, status socket); must be node-local, a real directory of the user with mode 0700 (created so; refused otherwise with `DRED_ERR_STORAGE`). Flag: `--storage DIR`, dredrun `-s DIR`") \
  C(KEEP_STORAGE, keep_storage, 0, 0, 1, DRED_BY_ALL | DRED_BY_SBATCH, \
    "1: keep the replica stores and the job directory after a clean end (0: stores deleted, the job directory removed once empty; a journal in it keeps it)") \
  T(JOURNAL, "`<job dir>/journal.db`", "path", DRED_BY_MASTER, \
    "the master's SQLite journal. Flags: `--journal PATH`, `--no-journal`") \
  T(POLICY, "`predict`", "`predict`, `last`, `first`", DRED_BY_MASTER, \
    "executor choice: `predict` (queued bytes / measured speed), `last` (the paper's rule: last task time), `first`. Flag: `--policy P`") \
  C(HEARTBEAT_MS, heartbeat_ms, 500, 10, 3600000, DRED_BY_ALL, \
    "the master's ping interval; at most half of `DRED_FAIL_TIMEOUT_MS` and of every worker's `DRED_MASTER_TIMEOUT_MS` (checked at start). Workers pace their own stall watch by it. Flag: `--heartbeat-ms N`") \
  C(FAIL_TIMEOUT_MS, fail_timeout_ms, 5000, 50, 86400000, DRED_BY_ALL, \
    "silence before the master declares a worker failed; also bounds how long a worker waits for an off-node copy to be held (`DRED_HANDOVER_NODE`). Flag: `--fail-timeout-ms N`") \
  C(MASTER_TIMEOUT_MS, master_timeout_ms, 10000, 50, 86400000, DRED_BY_WORKER, \
    "silence before a worker declares the master lost and ends its pending futures with `DRED_ERR_MASTER_LOST`; at least twice the master's heartbeat") \
  C(REPLICAS, replicas, 2, 0, 5, DRED_BY_WORKER, \
    "copies of each operand: 0 none (no fault tolerance for lost operands, no storage needed), 1 on the member's own node, 2 also on the next live member (off-node first)") \
  T(REPLICA_NICE, "10", "0..19 or `idle`", DRED_BY_WORKER, \
    "priority of the pool threads writing copies: a nice value (0 = normal) or `idle` (SCHED_IDLE)") \
  C(HANDOVER_NODE, handover_node, 1, 0, 1, DRED_BY_WORKER, \
    "1: in a group spanning nodes, a non-root member's `dred_ireduce` returns once its operand's off-node copy is whole in the holder's memory, so a node lost after the call loses nothing (bounded by `DRED_FAIL_TIMEOUT_MS`; needs `DRED_REPLICAS` >= 2). 0: returns once the operand is in the node's shared memory (a shorter call; a node loss before the copy lands ends `DRED_ERR_PROC_FAILED`)") \
  C(REPLICA_DELAY_MS, replica_delay_ms, 1000, 0, 86400000, DRED_BY_WORKER, \
    "start the local and same-node copies (SQLite) this long after the call, and skip them if the reduction ended first; meanwhile the snapshot in shared memory is the recovery source. Copies sent over a link leave at once, and their receiver holds them in memory this long before writing them to its store (or once the held copies pass the pool's size). 0: at once") \
  C(POOL_MB, pool_mb, 256, 0, 1 << 20, DRED_BY_WORKER, \
    "shared-memory pool per worker, MiB (mapped at start): operands, partial results, snapshots and `dred_alloc_mem` blocks. A reduction that does not fit waits for room; a buffer that still does not fit goes to private memory and the slower RMA path (counted in `dredstat status`). 0: no pool, RMA only") \
  C(PREFAULT_PEERS, prefault_peers, 0, 0, 1, DRED_BY_WORKER, \
    "1: `dred_init` also maps every node peer's pool (one `madvise`; a read per page before Linux 5.14), so no reduction takes those page faults; start-up then costs time in proportion to `DRED_POOL_MB` x node peers. 0: a peer's pages are mapped when a task first reads them") \
  C(CHUNK_KB, chunk_kb, 1024, 4, 1 << 20, DRED_BY_WORKER, \
    "combine chunk on a node, KiB") \
  C(RMA_DEPTH, rma_depth, 64, 1, 64, DRED_BY_WORKER, \
    "`MPI_Rget`s in flight per task reading from another node") \
  C(RMA_CHUNK_KB, rma_chunk_kb, 128, 4, 1 << 20, DRED_BY_WORKER, \
    "size of one such `MPI_Rget`, KiB") \
  N(KERNELS, 1, 0, 1, DRED_BY_WORKER, \
    "0: combine predefined ops with `MPI_Reduce_local` instead of the vectorised kernels of `lib/engine/kernel.c`") \
  C(SHM, shm, 1, 0, 1, DRED_BY_WORKER, \
    "0: force the RMA path even between processes of one node (and no meeting place)") \
  C(DEATH_WATCH, death_watch, 1, 0, 1, DRED_BY_ALL, \
    "dred-master sees a worker on its node die within milliseconds (robust mutexes, `common/deathwatch.c`); 0: only when its sockets close. Set it in every process") \
  C(INLINE_MAX, inline_max, 1024, 0, 65536, DRED_BY_WORKER, \
    "operands of at most this many bytes (and at most 256 KiB for the whole group) travel inside the control messages: no pool block, snapshot, replica or task. 0: off. Every member must use the same value (else `DRED_ERR_MISMATCH`)") \
  C(MEET, meet, 1, 0, 1, DRED_BY_WORKER, \
    "collectives of one-node groups (reduce, allreduce, bcast) meet in the node's shared memory, without dred-master. Used only if every process says 1 (agreed at `dred_init`); 0: every collective through dred-master") \
  C(MEET_SHARE, meet_share, 2, 0, 2, DRED_BY_WORKER, \
    "a reduce met in shared memory with 3 or more members of 256 KiB or more is folded in chunks by every member that waits, not by its root alone: 2 when every application process of the node has a CPU of its own, 1 always, 0 never. Give every process of a node the same value (else only speed differs)") \
  C(MEET_PIECES, meet_pieces, 2, 0, 2, DRED_BY_WORKER, \
    "an allreduce met in shared memory whose operand is 512 KiB or more arrives first and then copies its operand into the node's shared memory a chunk at a time, so that the members already waiting fold each chunk as it comes: 2 when every application process of the node has a CPU of its own, 1 always, 0 never (copied before arriving). A member killed during that copy ends the allreduce with `DRED_ERR_PROC_FAILED`, as one killed before arriving does. Likewise a bcast root's data from 16 KiB arrives first and is then copied in pieces of an eighth of it (16 to 64 KiB) that the members copy out as they come (from 128 KiB it always is, in 64 KiB pieces); a blocking bcast of a one-node group over 32 KiB and up to 256 KiB, in the fast lane, posts first and then copies its data in 16 KiB pieces likewise") \
  C(SHM_STREAM, shm_stream, 2, 0, 2, DRED_BY_WORKER, \
    "an operand, a bcast root's data or a folded chunk copied into the node's shared memory for peers to read next is written past the cache (non-temporal stores; a reduce's or a bcast's from 16 KiB, an allreduce's from 1 MiB), so that its lines are not first taken back from the peer that read them last: 2: through the cache up to a quarter of the last-level cache per application process of the node where every process of the node may run only on CPUs under one such cache (sysfs and each process's affinity mask), streamed elsewhere; and, from 4 KiB, any such copy otherwise through the cache (a bcast's pieces included) is streamed while this process's copies of its size through the cache measure over three times as slow per byte as streamed ones (each process times every fourth copy until its stores are visible, and tries the other way now and then: a virtual machine's CPUs that sysfs puts under one cache may run on dies apart); 1: always streamed from those sizes, never measured; 0: never. Likewise a large allreduce's or bcast's result written into the caller's buffer, where the call moves more than the cache holds: an allreduce's from that quarter of the last-level cache per process (2 under one cache), a bcast's from twice it, and never under 4 MiB / 8 MiB (1, or 2 elsewhere: from those sizes); 0: never") \
  C(MEET_FAST_NB, meet_fast_nb, 1, 0, 1, DRED_BY_WORKER, \
    "a small nonblocking reduce or allreduce (`dred_ireduce`, `dred_iallreduce`) of a one-node group, auto-tagged, whose operand fits 88 bytes posts its parameters and operand in the meeting place's fast lane and returns: its wait then takes the outcome from its peers' posts, with no lock. 0: it arrives in the meeting slot during the call. Give every process of a node the same value (else only speed differs)") \
  C(MEET_SPIN_US, meet_spin_us, 10000, 0, 1000000, DRED_BY_WORKER, \
    "microseconds a thread waiting in the meeting place polls before it sleeps on a futex, where every application process of the node has a CPU of its own (else it sleeps at once): a member that comes within it is seen at once, one that comes later waits for the sleeper to be woken (tens of microseconds, more in a virtual machine). MPI's blocking calls poll for ever; 0: sleep at once") \
  C(MAX_INFLIGHT, max_inflight, 65536, 1, 1u << 24, DRED_BY_WORKER, \
    "reductions in flight per process; beyond it `dred_ireduce` returns `DRED_ERR_NOMEM`, and the reduction ends so on every member (the refused call takes its turn)") \
  C(NODE_MEM_MB, node_mem_mb, 0, 0, (uint64_t)1 << 30, DRED_BY_WORKER, \
    "operand bytes the reductions in flight on one node may hold, all its processes together (0: the node's physical memory); a call over it is refused `DRED_ERR_NOMEM` on every member") \
  C(FINALIZE_WAIT_S, finalize_wait_s, 60, 0, 86400 * 365, DRED_BY_WORKER, \
    "how long `dred_finalize` waits for pending reductions before ending them with `DRED_ERR_SHUTDOWN` (finalize then returns `DRED_ERR_TIMEOUT`); 0: no bound") \
  C(FINALIZE_TIMEOUT_S, finalize_timeout_s, 60, 1, 86400, DRED_BY_ALL, \
    "bound on the collective MPI part of shutdown, after SHUTDOWN (window frees, `MPI_Finalize`): a process still in it then logs why and exits with status 70") \
  C(START_TIMEOUT_S, start_timeout_s, 300, 1, 86400 * 365, DRED_BY_MASTER, \
    "every application process must have called `dred_init` (and set up its pool) within this of dred-master's start; otherwise the master logs which step it waited for and ends the job with `MPI_Abort`. Flag: `--start-timeout-s N`") \
  T(LOG_LEVEL, "`warn`", "`error`, `warn`, `info`, `debug`", DRED_BY_ALL, \
    "log verbosity; lines go to standard error, prefixed `[dred master 0]`, `[dred worker N]`") \
  N(LOG_TIME, 0, 0, 1, DRED_BY_ALL, \
    "1: every log line starts with the wall-clock time it was made (`seconds.microseconds`)") \
  N(LAUNCH_LINGER_S, 3600, 0, 86400 * 365, DRED_BY_LAUNCH, \
    "how long `dred-launch` keeps a dead process's slot open, seconds") \
  N(LAUNCH_TERM_LINGER_S, 10, 0, 86400 * 365, DRED_BY_LAUNCH, \
    "a cancelled job (SIGTERM/SIGINT/SIGHUP to the launcher): how long `dred-launch` waits for its node's other programs to end, so that Hydra does not kill a process before its signal handler removed its files, seconds") \
  N(UCX_NO_CMA, 0, 0, 1, DRED_BY_RUN, \
    "1: `UCX_TLS=^cma` on one node too") \
  N(UCX_CMA, 0, 0, 1, DRED_BY_RUN | DRED_BY_SBATCH, \
    "1: keep UCX's CMA transport in multi-node jobs (by default left out: CMA aborts a process reading from a dead peer)") \
  T(MASTER, "beside dredrun, else `PATH`", "path", DRED_BY_RUN | DRED_BY_SBATCH, \
    "the dred-master to run") \
  T(LAUNCH, "beside dredrun, else `PATH`", "path", DRED_BY_RUN, \
    "the dred-launch to run") \
  T(MPI_LIB, "`../lib` or `../build/lib` beside dredrun", "path", DRED_BY_RUN, \
    "the `libdred-mpi.so` that `dredrun --mpi` preloads") \
  T(MASTER_FLAGS, "empty", "flags", DRED_BY_SBATCH, \
    "extra dred-master flags, e.g. `--heartbeat-ms 200`") \
  N(EXTERNAL_MASTER, 0, 0, 1, DRED_BY_SBATCH, \
    "1: dred-master on the batch host beside a plain `srun` step") \
  T(SRUN_MPI, "`pmi2`", "srun `--mpi` value", DRED_BY_SBATCH, \
    "the PMI Slurm offers MPICH") \
  T(SRUN_FLAGS, "empty", "flags", DRED_BY_SBATCH, \
    "extra `srun` flags (word-split)") \
  N(DRY_RUN, 0, 0, 1, DRED_BY_SBATCH, \
    "1: print the multi-prog file and the `srun` line, run nothing") \
  T(MASTER_ADDR, "unset", "`unix:PATH`", DRED_BY_WORKER, \
    "set by the launcher from dred-master's `--addr-file` when the master runs beside the job: its Unix socket. Set means \"master beside the job\"") \
  T(MASTER_TCP, "unset", "`tcp:IP:PORT`", DRED_BY_WORKER, \
    "set by the launcher with `DRED_MASTER_ADDR`: the master's TCP address (jobs spanning nodes)") \
  T(MASTER_HOST, "unset", "host name", DRED_BY_WORKER | DRED_BY_RUN | DRED_BY_SBATCH, \
    "set by the launcher with `DRED_MASTER_ADDR`: the master's host; processes on it use the Unix socket") \
  T(JOB_TOKEN, "unset", "32 hex digits", DRED_BY_WORKER, \
    "set by the launcher with `DRED_MASTER_ADDR`: the job's token, presented on every control link") \
  T(RUN_DIR, "unset", "absolute path", DRED_BY_ALL, \
    "set by dredrun, not for users: its private directory for the job, where each process that made a control directory names it (`ctl.<rank>`) so that dredrun removes it after the job, whatever ended it") \
  T(LAUNCH_FD, "unset", "descriptor (a pipe)", DRED_BY_ALL, \
    "set by dred-launch for its program, not for users: the pipe on which the process says its start-up is over") \
  N(HELLO_TIMEOUT_MS, 5000, 100, 600000, DRED_BY_ALL, \
    "a control connection that has not sent a valid HELLO within this is closed") \
  N(MAX_PENDING_LINKS, 64, 1, 1000000, DRED_BY_ALL, \
    "connections that may wait for their HELLO at once (never fewer than twice the job's processes); beyond it the oldest is closed") \
  N(MPI_MIN_BYTES, DRED_MPI_MIN_BYTES_DEFAULT, 0, (uint64_t)1 << 40, DRED_BY_MPI, \
    "intercepted reductions smaller than this go to MPI (where MPI measured faster across nodes here); a communicator on one node uses `DRED_MPI_NODE_MIN_BYTES` when that is lower") \
  N(MPI_COLL_MIN_BYTES, DRED_MPI_COLL_MIN_BYTES_DEFAULT, 0, (uint64_t)1 << 40, DRED_BY_MPI, \
    "intercepted allreduces and broadcasts smaller than this go to MPI; the default, 2^40, sends them all there when the communicator spans nodes (dred's measured slower than MPI's at every size there); 0 sends them all through dred, for its fault tolerance") \
  N(MPI_NODE_MIN_BYTES, DRED_MPI_NODE_MIN_BYTES_DEFAULT, 0, (uint64_t)1 << 40, DRED_BY_MPI, \
    "on a communicator whose processes share one node, intercepted reduces, allreduces and broadcasts of at least this many bytes go through dred even below the two thresholds above (dred's measured faster than MPI's there from 32 KiB); 2^40 turns this off") \
  N(MPI_REPORT, 0, 0, 2, DRED_BY_MPI, \
    "1: every process prints at `MPI_Finalize` one line per intercepted call kind, `dred-mpi: <call> dred=<n> mpi=<m>`; 2: also why calls went to MPI") \
  T(TEST_ABSORB_KILL, "unset", "`TAG:PIECE`", DRED_BY_WORKER, \
    "test hook, never for production: the executor of an absorption for the reduction of explicit tag TAG SIGKILLs itself halfway through piece PIECE (past the last: after every piece); `tests/faults/rollforward.sh`") \
  T(TEST_READY_KILL, "unset", "`TAG:RANK`", DRED_BY_WORKER, \
    "test hook, never for production: the worker of world rank RANK, announcing the reduction of explicit tag TAG, sends no READY for it and SIGKILLs itself half a second later, its copies held by then; `tests/faults/unseen-mismatch.sh`") \
  N(TEST_START_PAUSE_MS, 0, 0, 600000, DRED_BY_WORKER, \
    "test hook, never for production: `dred_init` sleeps this long once the job's start-up exchange has begun (its control directory exists), before its pool, so that a test stops or kills a process surely inside start-up, however fast the machine; `tests/tools/test-launch.sh`")
/* clang-format on */

/* DRED_S_<NAME>: a row's index in dred_settings[]. */
#define DRED_SETTING_ID_C_(NAME, field, def, lo, hi, by, meaning) DRED_S_##NAME,
#define DRED_SETTING_ID_N_(NAME, def, lo, hi, by, meaning) DRED_S_##NAME,
#define DRED_SETTING_ID_T_(NAME, def, form, by, meaning) DRED_S_##NAME,
typedef enum {
  DRED_SETTINGS(DRED_SETTING_ID_C_, DRED_SETTING_ID_N_, DRED_SETTING_ID_T_)
  DRED_SETTINGS_COUNT
} dred_setting_id;
#undef DRED_SETTING_ID_C_
#undef DRED_SETTING_ID_N_
#undef DRED_SETTING_ID_T_

typedef enum { DRED_SETTING_U64, DRED_SETTING_TEXT } dred_setting_type;

/* One row, as data (for the generators and --help). */
typedef struct {
  const char *name;     /* "DRED_CHUNK_KB" */
  dred_setting_type type;
  uint64_t def, lo, hi; /* DRED_SETTING_U64 only */
  const char *def_text; /* DRED_SETTING_TEXT only: the default, in words */
  const char *form;     /* DRED_SETTING_TEXT only: the values it takes, in words */
  unsigned by;          /* DRED_BY_* */
  int in_config;        /* loaded into dred_config_t by dred_config_load */
  const char *meaning;  /* markdown, one line */
} dred_setting_t;

extern const dred_setting_t dred_settings[DRED_SETTINGS_COUNT];

/* The variable's value as the environment has it: NULL when unset.  For text settings,
 * whose reader parses them, and for "is it set" questions. */
const char *dred_setting_raw(dred_setting_id id);

/* A numeric setting: its default when unset or empty, else its value.  A value that is not
 * a decimal number in the row's range leaves *out = default, says why in `why`
 * ("DRED_X=v is not a number in [lo, hi]") and returns -1; 0 otherwise.  Logs nothing:
 * callers decide whether that is fatal (dred_config_load_mpi) or a warning. */
int dred_setting_parse_u64(dred_setting_id id, uint64_t *out, char *why, size_t cap);

/* The same, logging a bad value ("...; using DEFAULT") and returning the default. */
uint64_t dred_setting_u64(dred_setting_id id);

/* A row's default and range in words, for the docs and --help ("0, 1", "4..1048576",
 * "0..2^30"; a text row's own words).  Returns `buf`. */
const char *dred_setting_default_str(const dred_setting_t *s, char *buf, size_t cap);
const char *dred_setting_range_str(const dred_setting_t *s, char *buf, size_t cap);
/* The readers, comma-separated ("all, dredstat"). */
const char *dred_setting_by_str(unsigned by, char *buf, size_t cap);

#endif /* DRED_SETTINGS_H */
